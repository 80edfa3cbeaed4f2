"""Fixtures of test/adapters/onnxruntime-check.test.mjs, in one process: real models exported with
torch.onnx.export (TorchScript exporter: dynamo=False; dynamo exporter: dynamo=True), each module's
PyTorch output recorded with forward hooks as docs/onnxruntime.md says, onnxruntime-python's output
for the same input, and broken copies (one initializer perturbed with the onnx package).

Also torchvision's resnet18 exported by Debian's /usr/bin/python3 (torch 1.13), where that is installed.

usage: python3 ort_check_fixtures.py OUT_DIR  -> OUT_DIR/cases.json lists the cases (the exporters print to stdout)."""
import json, os, subprocess, sys, warnings, logging
from collections import OrderedDict
import numpy as np, torch, onnx, onnxruntime as rt
from onnx import numpy_helper

warnings.filterwarnings('ignore')
logging.disable(logging.WARNING)
out_dir = sys.argv[1]
nn = torch.nn


class Block(nn.Module):
    """torchvision's BasicBlock, built here (pip's torch has no torchvision)."""
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False); self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False); self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
    def forward(self, x):
        idt = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(y)) + idt)


class ResNet18(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False); self.bn1 = nn.BatchNorm2d(64); self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        chans = [64, 64, 128, 256, 512]
        for i in range(1, 5):
            setattr(self, f'layer{i}', nn.Sequential(Block(chans[i - 1], chans[i], 1 if i == 1 else 2), Block(chans[i], chans[i], 1)))
        self.avgpool = nn.AdaptiveAvgPool2d(1); self.fc = nn.Linear(512, 10)
    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def randomise_bn(model):
    # Fresh BatchNorms are identities; trained ones are not.
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.1)


def build(kind):
    torch.manual_seed(57)
    if kind == 'mlp':
        m = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.GELU(), nn.Linear(32, 4))
        return m, torch.randn(3, 16), '2.weight', '2'
    if kind == 'cnn':
        m = nn.Sequential(OrderedDict(conv1=nn.Conv2d(3, 8, 3, padding=1), bn1=nn.BatchNorm2d(8), relu1=nn.ReLU(),
                                      conv2=nn.Conv2d(8, 8, 3, padding=1), bn2=nn.BatchNorm2d(8), relu2=nn.ReLU(),
                                      pool=nn.AdaptiveAvgPool2d(2), flat=nn.Flatten(), fc=nn.Linear(32, 5)))
        randomise_bn(m)
        return m, torch.randn(2, 3, 8, 8), 'conv2.weight', 'conv2'
    if kind == 'transformer':
        m = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True)
        return m, torch.randn(2, 5, 32), 'linear1.weight', 'linear1'
    if kind == 'resnet18':
        m = ResNet18(); randomise_bn(m)
        return m, torch.randn(1, 3, 64, 64), 'layer3.1.conv2.weight', 'layer3.1.conv2'


def record(model, x):
    outputs = {}
    def hook(name):
        def f(module, inputs, output):
            outputs[name] = (output[0] if isinstance(output, tuple) else output).detach().clone()
        return f
    hooks = [m.register_forward_hook(hook(n)) for n, m in model.named_modules() if n]
    y = model(x)  # grad enabled: TransformerEncoderLayer's fused fast path would skip its modules' hooks
    for h in hooks: h.remove()
    return y.detach(), outputs


def torchscript_module(node_name):
    """The module path in a TorchScript exporter's node name: '/layer3/layer3.1/conv2/Conv' -> 'layer3.1.conv2'."""
    full = ''
    for part in node_name.split('/')[1:-1]:
        full = part if not full or part.startswith(full + '.') else f'{full}.{part}'
    return full


def consumer_initializer(m, module, param):
    """The initializer holding `param` of `module`: by its name, else a weight input of the node the
    exporter named or scoped after the module (a folded or transposed copy under a generated name)."""
    names = {t.name for t in m.graph.initializer}
    if param in names: return param
    for n in m.graph.node:
        scopes = [p.value for p in n.metadata_props if p.key == 'pkg.torch.onnx.name_scopes']
        if (scopes and f"'{module}'" in scopes[0]) or torchscript_module(n.name) == module:
            for i in n.input[1:]:
                if i in names: return i
    raise SystemExit(f'no initializer for {param}')


TORCHVISION = """
import sys, warnings
warnings.filterwarnings('ignore')
import numpy as np, torch, torchvision
out = sys.argv[1]
torch.manual_seed(57)
m = torchvision.models.resnet18(weights=None, num_classes=10)
g = torch.Generator().manual_seed(1)
for b in m.modules():
    if isinstance(b, torch.nn.BatchNorm2d):
        b.running_mean.copy_(torch.randn(b.num_features, generator=g) * 0.1)
        b.running_var.copy_(torch.rand(b.num_features, generator=g) + 0.5)
m.eval()
x = torch.randn(1, 3, 64, 64)
outputs = {}
def record(name):
    def hook(module, inputs, output): outputs[name] = (output[0] if isinstance(output, tuple) else output).detach().clone()
    return hook
hooks = [sub.register_forward_hook(record(n)) for n, sub in m.named_modules() if n]
y = m(x).detach()
for h in hooks: h.remove()
np.savez(f'{out}/resnet18-torchvision.npz', **{'check/input': x.numpy(), 'check/output': y.numpy()},
         **{f'check/module/{k}': v.numpy() for k, v in outputs.items()})
torch.onnx.export(m, (x,), f'{out}/resnet18-torchvision.onnx', input_names=['x'], output_names=['y'])
"""


def reference_and_broken(name, param, module):
    """onnxruntime-python's difference from PyTorch, and a copy with `param`'s initializer perturbed."""
    path = f'{out_dir}/{name}.onnx'
    ref = np.load(f'{out_dir}/{name}.npz')
    x, y = ref['check/input'], ref['check/output']
    sess = rt.InferenceSession(path, providers=['CPUExecutionProvider'])
    got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    scale = float(np.abs(y).max())
    drift = float(np.abs(got - y).max())
    m = onnx.load(path)
    target = consumer_initializer(m, module, param)
    for t in m.graph.initializer:
        if t.name == target:
            a = numpy_helper.to_array(t).copy(); a[0] += 0.5 * float(np.abs(a).max()) + 0.1  # one output channel, or row
            t.CopyFrom(numpy_helper.from_array(a, t.name))
    node = next(n.name for n in m.graph.node if target in n.input)
    onnx.save(m, f'{out_dir}/{name}-broken.onnx')
    bs = rt.InferenceSession(f'{out_dir}/{name}-broken.onnx', providers=['CPUExecutionProvider'])
    broken = bs.run(None, {bs.get_inputs()[0].name: x})[0]
    return {'name': name, 'exported': True, 'drift': drift, 'scale': scale, 'relDrift': drift / scale,
            'brokenDrift': float(np.abs(broken - y).max()) / scale, 'perturbed': target, 'node': node, 'module': module}


cases = []
plan = [('mlp', 'torchscript'), ('mlp', 'dynamo'), ('cnn', 'torchscript'), ('cnn', 'dynamo'),
        ('transformer', 'torchscript'), ('transformer', 'dynamo'), ('resnet18', 'torchscript'), ('resnet18', 'dynamo')]
for kind, exporter in plan:
    model, x, param, module = build(kind)
    model.eval()
    y, outputs = record(model, x)
    name = f'{kind}-{exporter}'
    try:
        torch.onnx.export(model, (x,), f'{out_dir}/{name}.onnx', input_names=['x'], output_names=['y'], dynamo=exporter == 'dynamo')
    except Exception as e:  # an exporter that cannot export this model: said, not hidden
        cases.append({'name': name, 'exported': False, 'why': str(e).splitlines()[0][:200]}); continue
    np.savez(f'{out_dir}/{name}.npz', **{'check/input': x.numpy(), 'check/output': y.numpy()},
             **{f'check/module/{k}': v.numpy() for k, v in outputs.items()})
    cases.append(reference_and_broken(name, param, module))
# torchvision's resnet18 by Debian's torch 1.13 (its TorchScript exporter names nodes by module path too).
if os.path.exists('/usr/bin/python3'):
    r = subprocess.run(['/usr/bin/python3', '-W', 'ignore', '-c', TORCHVISION, out_dir], capture_output=True, text=True)
    if r.returncode == 0:
        cases.append(reference_and_broken('resnet18-torchvision', 'layer3.1.conv2.weight', 'layer3.1.conv2'))
    else:
        cases.append({'name': 'resnet18-torchvision', 'exported': False, 'why': r.stderr.strip().splitlines()[-1][:200]})
with open(f'{out_dir}/cases.json', 'w') as f: json.dump(cases, f)

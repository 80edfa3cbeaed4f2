"""Inputs of bench/onnxruntime-weights.mjs: `python3 onnxruntime_side.py DIR MB` writes DIR/big.onnx, an
MLP of large Linear layers exported by torch.onnx.export (TorchScript exporter, no folding) whose
initializers are kept beside it in big.onnx.data (a small model file, as the dynamo exporter writes for
large models), its state_dict perturbed as DIR/big.safetensors (about MB megabytes), x.npy and
PyTorch's output for x with the perturbed weights (want.npy). Prints what it made as JSON."""
import contextlib, json, logging, os, sys
import numpy as np, onnx, onnxruntime as rt, torch, safetensors.torch

d, mb = sys.argv[1], int(sys.argv[2])
os.makedirs(d, exist_ok=True)
width = 2048 if mb < 200 else 4096
layers = max(1, round(mb * 1e6 / (width * width * 4)))
torch.manual_seed(57)
model = torch.nn.Sequential(*[m for _ in range(layers) for m in (torch.nn.Linear(width, width), torch.nn.ReLU())]).eval()
x = torch.randn(2, width)
logging.disable(logging.WARNING)
with open(os.devnull, 'w') as null, contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
    torch.onnx.export(model, (x,), f'{d}/inline.onnx', input_names=['x'], output_names=['y'], dynamo=False, do_constant_folding=False)
m = onnx.load(f'{d}/inline.onnx')
onnx.save(m, f'{d}/big.onnx', save_as_external_data=True, location='big.onnx.data', size_threshold=0)
os.remove(f'{d}/inline.onnx')
with torch.no_grad():
    for p in model.parameters():
        p.mul_(0.5)
safetensors.torch.save_file({k: v.contiguous() for k, v in model.state_dict().items()}, f'{d}/big.safetensors')
np.save(f'{d}/x.npy', x.numpy())
np.save(f'{d}/want.npy', model(x).detach().numpy())
print(json.dumps({'layers': layers, 'width': width, 'bytes': os.path.getsize(f'{d}/big.safetensors')}))

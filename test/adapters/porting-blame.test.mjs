// Where a port goes wrong (issue 54): one PyTorch model (conv → BatchNorm → ReLU → MaxPool →
// permute/reshape → bidirectional GRU → MultiheadAttention → linear), each module's output recorded
// with forward hooks, and its tfjs port with one mistake at a time. The layer-by-layer check compares
// the GRU's sequence output, and where modules it could not compare lie between the last module that
// agrees and the first that differs, it blames the whole span and names each layer in it. A wrong
// numHeads or causal in the attention is named as such, found by trying the options on the layer's
// own inputs. A mismatch header counts what it lists.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import * as tfl from '@tensorflow/tfjs-layers';
import { NpyError } from '@npyts/core';
import { assignWeights } from '@npyts/tfjs';
import { torchGRU, torchMultiheadAttention } from '@npyts/tfjs/torch-layers';
import { python, scratch } from '../helpers/numpy.mjs';
import { useCpuBackend } from '../helpers/tfjs.mjs';

await useCpuBackend();
const dir = scratch('npyts-porting-blame-');
const weights = join(dir, 'net.npz');
python(`import torch
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.relu = torch.nn.ReLU()
        self.pool = torch.nn.MaxPool2d(2)
        self.gru = torch.nn.GRU(8, 5, batch_first=True, bidirectional=True)
        self.attn = torch.nn.MultiheadAttention(10, 2, batch_first=True)
        self.fc = torch.nn.Linear(10, 3)
    def forward(self, x):
        h = self.pool(self.relu(self.bn(self.conv(x))))    # (N, C, H, W)
        n, c, hh, w = h.shape
        seq = h.permute(0, 3, 1, 2).reshape(n, w, c * hh)  # a step per column, features (C, H)
        s, _ = self.gru(seq)
        a, _ = self.attn(s, s, s)
        return self.fc(a)
torch.manual_seed(11)
net = Net()
with torch.no_grad():
    net.bn.running_mean.uniform_(-0.5, 0.5); net.bn.running_var.uniform_(0.5, 2)
    net.bn.weight.uniform_(0.5, 1.5); net.bn.bias.uniform_(-0.3, 0.3)
net.eval()
x = torch.randn(2, 3, 4, 12)
outputs = {}
def record(name):
    def hook(module, inputs, output):
        outputs[name] = (output[0] if isinstance(output, tuple) else output).detach().clone()
    return hook
hooks = [m.register_forward_hook(record(name)) for name, m in net.named_modules() if name]
with torch.no_grad():
    y = net(x)
for h in hooks:
    h.remove()
np.savez(${JSON.stringify(weights)}, **{k: v.numpy() for k, v in net.state_dict().items()},
         **{'check/input': x.numpy(), 'check/output': y.numpy()},
         **{f'check/module/{k}': v.numpy() for k, v in outputs.items()})`);

/** The tfjs port, right unless told otherwise. */
const port = ({ shifted = false, relu = true, pool = 'max', dims = [2, 3, 1], goBackwards = false, numHeads = 2, causal = false, fc = true } = {}) =>
  tfl.sequential({
    layers: [
      // PyTorch pads one row and column on each side; `shifted` pads two before and none after.
      ...(shifted
        ? [
            tfl.layers.zeroPadding2d({
              padding: [
                [2, 0],
                [2, 0],
              ],
              inputShape: [4, 12, 3],
            }),
          ]
        : []),
      tfl.layers.conv2d({ ...(shifted ? {} : { inputShape: [4, 12, 3] }), filters: 4, kernelSize: 3, padding: shifted ? 'valid' : 'same', name: 'conv' }),
      tfl.layers.batchNormalization({ epsilon: 1e-5, name: 'bn' }),
      ...(relu ? [tfl.layers.reLU()] : []),
      pool === 'max' ? tfl.layers.maxPooling2d({ poolSize: 2 }) : tfl.layers.averagePooling2d({ poolSize: 2 }),
      tfl.layers.permute({ dims }), // (H, W, C) → (W, C, H): PyTorch's (C, H) features per column
      tfl.layers.reshape({ targetShape: [6, 8] }),
      tfl.layers.bidirectional({ layer: torchGRU({ units: 5, returnSequences: true, goBackwards }), mergeMode: 'concat', name: 'gru' }),
      torchMultiheadAttention({ numHeads, causal, name: 'attn' }),
      ...(fc ? [tfl.layers.dense({ units: 3, name: 'fc' })] : []),
    ],
  });

/** The message of the check's refusal. */
async function refusal(model) {
  try {
    await assignWeights(model, weights, { layout: 'pytorch' });
  } catch (e) {
    assert.instance(e, NpyError);
    return e;
  }
  assert.unreachable('the port was accepted');
}

test('the right port passes its check', async () => {
  await assignWeights(port(), weights, { layout: 'pytorch' });
});

test("a missing ReLU: the span from the BatchNorm to the GRU is blamed, naming PyTorch's ReLU, which no tfjs layer gives", async () => {
  const e = await refusal(port({ relu: false }));
  assert.is(e.code, 'CHECK_FAILED');
  assert.match(
    e.message,
    /the first PyTorch module whose output differs is 'gru', computed by tfjs layer 'gru' \(Bidirectional\(TorchGRU\)\) \(the modules before it, up to 'bn', agree/,
  );
  assert.match(e.message, /PyTorch's 'relu'( and 'pool')? between them (was|were) recorded but not compared/);
  assert.match(
    e.message,
    /the mistake lies in the span after 'bn' up to 'gru', which tfjs computes with layers '[^']+' \(MaxPooling2D\), '[^']+' \(Permute\), '[^']+' \(Reshape\) and 'gru' \(Bidirectional\(TorchGRU\)\) and PyTorch with 'relu'/,
  );
  assert.not.match(e.message, /differs is 'attn'/);
});

test('average instead of max pooling: the ReLU agrees by value, the span from it to the GRU is blamed, naming the average pooling', async () => {
  const e = await refusal(port({ pool: 'average' }));
  assert.match(e.message, /differs is 'gru'.*\(the modules before it, up to 'relu', agree; PyTorch's 'pool' between them was recorded but not compared/);
  assert.match(
    e.message,
    /the span after 'relu' up to 'gru', which tfjs computes with layers '[^']+' \(AveragePooling2D\), '[^']+' \(Permute\), '[^']+' \(Reshape\) and 'gru' \(Bidirectional\(TorchGRU\)\) and PyTorch with 'pool' and 'gru'/,
  );
});

test('channels in the wrong order before the reshape: the pooling agrees, the span from it (permute, reshape, GRU) is blamed', async () => {
  const e = await refusal(port({ dims: [2, 1, 3] }));
  assert.match(
    e.message,
    /differs is 'gru'.*\(the modules before it, up to 'pool', agree: the mistake lies in the span after 'pool' up to 'gru', which tfjs computes with layers '[^']+' \(Permute\), '[^']+' \(Reshape\) and 'gru' \(Bidirectional\(TorchGRU\)\)\)/,
  );
});

test('goBackwards inside the bidirectional wrapper: the GRU is compared and blamed, with goBackwards named', async () => {
  const e = await refusal(port({ goBackwards: true }));
  assert.match(e.message, /differs is 'gru'.*up to 'pool', agree/);
  assert.match(e.message, /the likely cause, if it is this layer, for a Bidirectional\(TorchGRU\): goBackwards set on the wrapped layer/);
});

test('padding before the first module on the wrong sides: the span from the input is blamed', async () => {
  const e = await refusal(port({ shifted: true }));
  assert.match(
    e.message,
    /differs is 'conv', computed by tfjs layer 'conv' \(Conv2D\) \(no module before it was seen to agree: the mistake lies in the span from the input up to 'conv', which tfjs computes with layers '[^']+' \(ZeroPadding2D\) and 'conv' \(Conv2D\)\)/,
  );
});

test('a wrong numHeads or causal in the attention is named, with the value the module was built with', async () => {
  const heads = await refusal(port({ numHeads: 5 }));
  assert.match(heads.message, /differs is 'attn'.*up to 'gru', agree\)/);
  assert.match(heads.message, /the module's output is what this layer gives with numHeads: 2 \(it has numHeads: 5\): build it with numHeads: 2/);
  const causal = await refusal(port({ causal: true }));
  assert.match(causal.message, /what this layer gives with causal: false \(it has causal: true\): build it with causal: false/);
  const both = await refusal(port({ numHeads: 10, causal: true }));
  assert.match(both.message, /build it with numHeads: 2 and causal: false/);
});

test('a mismatch header counts what it lists: a module left without a layer is one mismatch', async () => {
  const e = await refusal(port({ fc: false }));
  assert.is(e.code, 'WEIGHT_MISMATCH');
  const count = Number(/^(\d+) weight mismatch/.exec(e.message)?.[1]);
  const listed = e.message.split('\n').filter((line) => /^ {2}\S/.test(line));
  assert.is(count, listed.length, e.message);
  assert.is(count, 1);
  assert.match(e.message, /PyTorch: fc \(weight, bias\)/);
});

test.run();

"""Real PyTorch models for the PyTorch-layout tests: built with fixed seeds, BatchNorm statistics made
non-trivial by a few training steps, exported as users are told to (np.savez of the state_dict, with
check/input and check/output), and archives written by npyts loaded back with load_state_dict.

  build DIR               write DIR/<name>.npz for every model; print {name: {"keys": [...]}}
  load NAME FILE          load_state_dict(strict=True) from FILE; print the largest difference between
                          the model's output on check/input and check/output of DIR/NAME.npz (FILE's dir)
"""
import json
import os
import sys

import numpy as np
import torch
from torch import nn


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.fc = nn.Linear(4 * 3 * 2, 5)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


class TextConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(40, 8)
        self.conv = nn.Conv1d(8, 6, 3)
        self.out = nn.Linear(6, 2)

    def forward(self, tokens):
        x = self.embed(tokens).transpose(1, 2)          # (N, E, L): PyTorch's Conv1d is channels-first
        x = torch.relu(self.conv(x)).amax(dim=2)        # global max pooling over time
        return self.out(x)


class StackedLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(30, 6)
        self.lstm = nn.LSTM(6, 5, num_layers=2, batch_first=True)
        self.head = nn.Linear(5, 3)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out[:, -1, :])


class BiLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(30, 6)
        self.lstm = nn.LSTM(6, 4, batch_first=True, bidirectional=True)
        self.head = nn.Linear(8, 2)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out.mean(dim=1))


class PreLNBlock(nn.Module):
    """One pre-LayerNorm transformer block, single head, written from Linear and LayerNorm."""

    def __init__(self, d=8):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 16)
        self.fc2 = nn.Linear(16, d)
        self.scale = d ** -0.5

    def forward(self, x):
        h = self.ln1(x)
        att = torch.softmax(self.q(h) @ self.k(h).transpose(1, 2) * self.scale, dim=-1)
        x = x + self.proj(att @ self.v(h))
        return x + self.fc2(torch.relu(self.fc1(self.ln2(x))))


class UpSampler(nn.Module):
    """Depthwise Conv2d (groups = in_channels, multiplier 2), PReLU per channel, ConvTranspose2d."""

    def __init__(self):
        super().__init__()
        self.depthwise = nn.Conv2d(3, 6, 3, groups=3)
        self.act = nn.PReLU(6)
        self.up = nn.ConvTranspose2d(6, 2, 2, stride=2)

    def forward(self, x):
        return self.up(self.act(self.depthwise(x)))


def mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))


def inputs(name, g):
    if name in ('cnn',):
        return torch.randn(4, 3, 12, 8, generator=g)
    if name == 'upsampler':
        return torch.randn(2, 3, 7, 6, generator=g)
    if name == 'text':
        return torch.randint(0, 40, (4, 12), generator=g)
    if name in ('lstm', 'bilstm'):
        return torch.randint(0, 30, (4, 7), generator=g)
    if name == 'attention':
        return torch.randn(3, 5, 8, generator=g)
    return torch.randn(4, 8, generator=g)


MODELS = {'mlp': mlp, 'cnn': CNN, 'text': TextConv, 'lstm': StackedLSTM, 'bilstm': BiLSTM, 'attention': PreLNBlock, 'upsampler': UpSampler}


def built(name):
    torch.manual_seed(sum(map(ord, name)))
    model = MODELS[name]()
    g = torch.Generator().manual_seed(7)
    if any(isinstance(m, nn.BatchNorm2d) for m in model.modules()):
        model.train()
        with torch.no_grad():
            for _ in range(3):
                model(inputs(name, g) * 2 + 0.5)      # running statistics away from 0 and 1
    with torch.no_grad():
        for m in model.modules():                    # LayerNorm and PReLU parameters away from 1 and 0.25
            if isinstance(m, (nn.LayerNorm, nn.PReLU, nn.BatchNorm2d)):
                m.weight.uniform_(0.5, 1.5, generator=g)
            if isinstance(m, (nn.LayerNorm, nn.BatchNorm2d)):
                m.bias.uniform_(-0.5, 0.5, generator=g)
    model.eval()
    return model, inputs(name, torch.Generator().manual_seed(11))


def export(model, x, path):
    # The guide's export: the state_dict, a sample input and PyTorch's output for it, and each
    # module's output (forward hooks) for the layer-by-layer check.
    outputs = {}
    hooks = [m.register_forward_hook(lambda mod, inp, out, name=name: outputs.__setitem__(name, out))
             for name, m in model.named_modules() if name]
    with torch.no_grad():
        y = model(x)
    for h in hooks:
        h.remove()
    np.savez(path, **{k: v.detach().cpu().numpy() for k, v in model.state_dict().items()},
             **{'check/input': x.numpy(), 'check/output': y.numpy()},
             **{f'check/module/{k}': v.numpy() for k, v in outputs.items() if isinstance(v, torch.Tensor)})
    # The file PyTorch users hold: torch.save of the state_dict (the check members stay in the .npz).
    torch.save(model.state_dict(), path[:-4] + '.pt')


def main():
    if sys.argv[1] == 'build':
        out = {}
        for name in MODELS:
            model, x = built(name)
            export(model, x, os.path.join(sys.argv[2], name + '.npz'))
            out[name] = {'keys': list(model.state_dict().keys())}
        print(json.dumps(out))
    elif sys.argv[1] == 'load':
        name, path = sys.argv[2], sys.argv[3]
        model, _ = built(name)
        for p in model.parameters():
            p.data.zero_()                           # nothing of the original survives but what is loaded
        ref = np.load(os.path.join(os.path.dirname(path), name + '.npz'))
        saved = np.load(path)
        missing = model.load_state_dict({k: torch.from_numpy(saved[k]) for k in saved.files}, strict=True)
        with torch.no_grad():
            y = model(torch.from_numpy(ref['check/input'])).numpy()
        want = ref['check/output']
        print(json.dumps({'maxAbsDiff': float(np.abs(y - want).max()), 'scale': float(np.abs(want).max()),
                          'missing': list(missing.missing_keys), 'unexpected': list(missing.unexpected_keys)}))


if __name__ == '__main__':
    main()

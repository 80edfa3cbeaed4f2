"""Train the demo's PyTorch CNN and write demo/digits-cnn.npz, the way the README tells PyTorch users to.

A small convolutional network (Conv2d, BatchNorm2d, ReLU, MaxPool2d, flatten, Linear) on the UCI
digits (8×8, one channel), trained with PyTorch. The archive is the README's export: the state_dict
with np.savez, the 360 held-out digits as check/input (NCHW, as PyTorch takes them) and PyTorch's
logits for them as check/output, plus their labels as check/labels. `npm start` and the viewer build
the same network in tfjs and load it with assignWeights(model, ..., { layout: 'pytorch' }).

Run: /usr/bin/python3 demo/train_cnn.py   (Debian's python3-torch; deterministic: the committed
archive is its output)
"""
import os

import numpy as np
import torch
from torch import nn

torch.manual_seed(20261124)
torch.set_num_threads(1)
here = os.path.dirname(os.path.abspath(__file__))
data = np.loadtxt(os.path.join(here, "data", "digits.csv.gz"), delimiter=",")
pixels = torch.from_numpy((data[:, :64] / 16.0).astype(np.float32)).reshape(-1, 1, 8, 8)
labels = torch.from_numpy(data[:, 64].astype(np.int64))
order = torch.randperm(len(pixels))
test, train = order[:360], order[360:]

model = nn.Sequential(
    nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(8 * 4 * 4, 10),
)
optimiser = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(15):
    model.train()
    for batch in torch.randperm(len(train)).split(32):
        optimiser.zero_grad()
        loss = nn.functional.cross_entropy(model(pixels[train[batch]]), labels[train[batch]])
        loss.backward()
        optimiser.step()

model.eval()
x = pixels[test]
with torch.no_grad():
    y = model(x)
accuracy = (y.argmax(1) == labels[test]).float().mean().item()
np.savez(os.path.join(here, "digits-cnn.npz"),
         **{k: v.detach().cpu().numpy() for k, v in model.state_dict().items()},
         **{"check/input": x.numpy(), "check/output": y.numpy(), "check/labels": labels[test].numpy()})
print(f"PyTorch's accuracy on the 360 held-out digits: {accuracy:.4f}")

"""Train the demo classifier with numpy alone and write demo/digits-mlp.npz.

A two-layer perceptron (64 → 32 ReLU → 10 softmax) on the UCI digits, trained with Adam. The archive
holds the weights under Keras-style names, the held-out test samples and numpy's own predictions,
so that the JavaScript side can check it computes exactly the same answers. The weights are stored
the way real-world files often are: one kernel in Fortran order, one as big-endian float64.

It also holds the model's topology as a `model.json` member, in the JSON Keras' `model.to_json()`
writes, so that tfjs loads the model itself with `tf.loadLayersModel(npzHandler(...))`; np.load lists
that member and returns its raw bytes.

Run: python3 demo/train.py   (deterministic: the committed archive is its output)
"""
import json
import os
import zipfile
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
data = np.loadtxt(os.path.join(here, "data", "digits.csv.gz"), delimiter=",")
pixels = data[:, :64].astype(np.uint8)
labels = data[:, 64].astype(np.int64)

rng = np.random.default_rng(20261121)
order = rng.permutation(len(pixels))
test, train = order[:360], order[360:]
X = pixels[train].astype(np.float64) / 16.0
Y = np.eye(10)[labels[train]]

W1 = rng.standard_normal((64, 32)) * np.sqrt(2 / 64)
b1 = np.zeros(32)
W2 = rng.standard_normal((32, 10)) * np.sqrt(2 / 32)
b2 = np.zeros(10)
params = [W1, b1, W2, b2]
m = [np.zeros_like(p) for p in params]
v = [np.zeros_like(p) for p in params]
lr, beta1, beta2, step = 0.005, 0.9, 0.999, 0

for epoch in range(60):
    for batch in np.array_split(rng.permutation(len(X)), len(X) // 32):
        x, y = X[batch], Y[batch]
        h_pre = x @ W1 + b1
        h = np.maximum(h_pre, 0)
        logits = h @ W2 + b2
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        d_logits = (p - y) / len(batch)
        d_h = (d_logits @ W2.T) * (h_pre > 0)
        grads = [x.T @ d_h, d_h.sum(0), h.T @ d_logits, d_logits.sum(0)]
        step += 1
        for i, (param, g) in enumerate(zip(params, grads)):
            m[i] = beta1 * m[i] + (1 - beta1) * g
            v[i] = beta2 * v[i] + (1 - beta2) * g * g
            param -= lr * (m[i] / (1 - beta1**step)) / (np.sqrt(v[i] / (1 - beta2**step)) + 1e-8)

# numpy's answers in float32, the precision tfjs computes in.
w1, c1, w2, c2 = (p.astype(np.float32) for p in params)
x_test = pixels[test].astype(np.float32) / np.float32(16)
hidden = np.maximum(x_test @ w1 + c1, 0)
logits = hidden @ w2 + c2
predictions = logits.argmax(axis=1)
top2 = np.sort(logits, axis=1)[:, -2:]
accuracy = float((predictions == labels[test]).mean())

np.savez_compressed(
    os.path.join(here, "digits-mlp.npz"),
    **{
        "dense/kernel": np.asfortranarray(w1),                   # float32, Fortran order
        "dense/bias": c1,                                         # float32
        "dense_1/kernel": params[2].astype(">f8"),                # float64, big-endian
        "dense_1/bias": params[3].astype("<f8"),                  # float64
        "x_test": pixels[test],                                   # uint8 pixels 0..16
        "y_test": labels[test],                                   # int64 labels
        "numpy_predictions": predictions.astype(np.int64),
        "numpy_accuracy": np.float64(accuracy),
    },
)


def dense(name, units, activation):
    return {"class_name": "Dense", "config": {
        "name": name, "trainable": True, "dtype": "float32", "units": units, "activation": activation, "use_bias": True,
        "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": None}},
        "bias_initializer": {"class_name": "Zeros", "config": {}},
        "kernel_regularizer": None, "bias_regularizer": None, "activity_regularizer": None,
        "kernel_constraint": None, "bias_constraint": None}}


topology = {"class_name": "Sequential", "keras_version": "2.15.0", "backend": "tensorflow", "config": {"name": "digits_mlp", "layers": [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [None, 64], "dtype": "float32", "sparse": False, "ragged": False, "name": "pixels"}},
    dense("dense", 32, "relu"),
    dense("dense_1", 10, "linear"),
]}}
with zipfile.ZipFile(os.path.join(here, "digits-mlp.npz"), "a") as z:
    z.writestr("model.json", json.dumps({"modelTopology": topology, "format": "layers-model", "generatedBy": "demo/train.py (numpy)"}))
print(f"test accuracy {accuracy:.4f} on {len(test)} samples; smallest top-2 logit margin {(top2[:, 1] - top2[:, 0]).min():.4f}")

"""Models built with numpy alone, the way Keras lays them out, for the tfjs model tests.

  python3 models.py build OUTDIR      writes the archives below and prints what numpy predicts
  python3 models.py weights NPZ       prints every array of an archive by name (for comparisons)

Archives written to OUTDIR:
  keras.npz         Embedding → Reshape → Conv2D (channels-last kernel) → BatchNormalization → Flatten → Dense,
                    weights under Keras' names plus a model.json member with Keras' to_json topology
  weights-only.npz  the same weights, no model.json (np.savez alone); topology.json beside it
  torch.npz         the dense layer's weights as PyTorch names them: fc.weight (out, in), fc.bias
  half.npz          keras.npz with every float weight as float16
  graph.npz         a graph model (MatMul, BiasAdd, Relu) with its GraphDef JSON as model.json
"""
import json
import os
import sys
import zipfile
import numpy as np


def layer(cls, name, **config):
    return {"class_name": cls, "config": {"name": name, "trainable": True, "dtype": "float32", **config}}


def init(cls):
    return {"class_name": cls, "config": {}}


def keras_topology():
    none = dict(kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None)
    layers = [
        {"class_name": "InputLayer", "config": {"batch_input_shape": [None, 6], "dtype": "float32", "sparse": False, "ragged": False, "name": "tokens"}},
        layer("Embedding", "embedding", input_dim=20, output_dim=4, embeddings_initializer=init("RandomUniform"),
              embeddings_regularizer=None, activity_regularizer=None, embeddings_constraint=None, mask_zero=False, input_length=6),
        layer("Reshape", "reshape", target_shape=[6, 4, 1]),
        layer("Conv2D", "conv2d", filters=5, kernel_size=[3, 3], strides=[1, 1], padding="valid", data_format="channels_last",
              dilation_rate=[1, 1], groups=1, activation="relu", use_bias=True, kernel_initializer=init("GlorotUniform"),
              bias_initializer=init("Zeros"), **none),
        layer("BatchNormalization", "batch_normalization", axis=-1, momentum=0.99, epsilon=0.001, center=True, scale=True,
              beta_initializer=init("Zeros"), gamma_initializer=init("Ones"), moving_mean_initializer=init("Zeros"),
              moving_variance_initializer=init("Ones"), beta_regularizer=None, gamma_regularizer=None, beta_constraint=None, gamma_constraint=None),
        layer("Flatten", "flatten", data_format="channels_last"),
        layer("Dense", "dense", units=3, activation="linear", use_bias=True, kernel_initializer=init("GlorotUniform"), bias_initializer=init("Zeros"), **none),
    ]
    return {"class_name": "Sequential", "config": {"name": "numpy_built", "layers": layers}, "keras_version": "2.15.0", "backend": "tensorflow"}


def keras_weights(rng):
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    return {
        "embedding/embeddings": f(20, 4),
        "conv2d/kernel": f(3, 3, 1, 5),           # (kh, kw, in, out): Keras' channels-last kernel
        "conv2d/bias": f(5),
        "batch_normalization/gamma": f(5),
        "batch_normalization/beta": f(5),
        "batch_normalization/moving_mean": f(5),
        "batch_normalization/moving_variance": (rng.random(5) + 0.5).astype(np.float32),
        "dense/kernel": f(40, 3),
        "dense/bias": f(3),
    }


def keras_predict(w, tokens):
    """The model's forward pass in numpy (float64), exactly as Keras defines each layer."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    x = w["embedding/embeddings"][tokens].reshape(len(tokens), 6, 4, 1)
    k = w["conv2d/kernel"]
    out = np.zeros((len(tokens), 4, 2, 5))
    for di in range(3):
        for dj in range(3):
            out += np.einsum("nijc,cf->nijf", x[:, di:di + 4, dj:dj + 2, :], k[di, dj])
    x = np.maximum(out + w["conv2d/bias"], 0)
    x = (x - w["batch_normalization/moving_mean"]) / np.sqrt(w["batch_normalization/moving_variance"] + 0.001)
    x = x * w["batch_normalization/gamma"] + w["batch_normalization/beta"]
    return x.reshape(len(tokens), -1) @ w["dense/kernel"] + w["dense/bias"]


def with_json(path, document):
    with zipfile.ZipFile(path, "a") as z:
        z.writestr("model.json", json.dumps(document))


def graph_model(rng):
    def dims(*shape):
        return {"dim": [{"size": str(s)} for s in shape]}
    f32 = {"type": "DT_FLOAT"}
    nodes = [
        {"name": "x", "op": "Placeholder", "attr": {"dtype": f32, "shape": {"shape": dims(-1, 4)}}},
        {"name": "dense/kernel", "op": "Const", "attr": {"dtype": f32, "value": {"tensor": {"dtype": "DT_FLOAT", "tensorShape": dims(4, 3)}}}},
        {"name": "dense/bias", "op": "Const", "attr": {"dtype": f32, "value": {"tensor": {"dtype": "DT_FLOAT", "tensorShape": dims(3)}}}},
        {"name": "dense/MatMul", "op": "MatMul", "input": ["x", "dense/kernel"], "attr": {"T": f32, "transpose_a": {"b": False}, "transpose_b": {"b": False}}},
        {"name": "dense/BiasAdd", "op": "BiasAdd", "input": ["dense/MatMul", "dense/bias"], "attr": {"T": f32}},
        {"name": "out", "op": "Relu", "input": ["dense/BiasAdd"], "attr": {"T": f32}},
    ]
    weights = {"dense/kernel": rng.standard_normal((4, 3)).astype(np.float32), "dense/bias": rng.standard_normal(3).astype(np.float32)}
    return {"node": nodes, "library": {}, "versions": {"producer": 1482}}, weights


def cmd_build(out):
    rng = np.random.default_rng(25374)
    topology = keras_topology()
    w = keras_weights(rng)
    tokens = rng.integers(0, 20, size=(8, 6))
    np.savez(os.path.join(out, "keras.npz"), **w)
    with_json(os.path.join(out, "keras.npz"), {"modelTopology": topology, "format": "layers-model", "generatedBy": "numpy"})
    np.savez(os.path.join(out, "weights-only.npz"), **w)
    with open(os.path.join(out, "topology.json"), "w") as fh:
        json.dump(topology, fh)
    np.savez(os.path.join(out, "torch.npz"), **{k: v for k, v in w.items() if not k.startswith("dense/")},
             **{"fc.weight": np.ascontiguousarray(w["dense/kernel"].T), "fc.bias": w["dense/bias"]})
    half = {k: np.asfortranarray(v.astype(np.float16)) for k, v in w.items()}   # Fortran order, as some writers leave it
    np.savez(os.path.join(out, "half.npz"), **half)
    with_json(os.path.join(out, "half.npz"), {"modelTopology": topology})
    graph, gw = graph_model(rng)
    np.savez(os.path.join(out, "graph.npz"), **gw)
    with_json(os.path.join(out, "graph.npz"), {"modelTopology": graph, "format": "graph-model", "generatedBy": "numpy"})
    gx = rng.standard_normal((5, 4)).astype(np.float32)
    gy = np.maximum(gx.astype(np.float64) @ gw["dense/kernel"] + gw["dense/bias"], 0)
    print(json.dumps({
        "tokens": tokens.tolist(),
        "predictions": keras_predict(w, tokens).tolist(),
        "half_predictions": keras_predict({k: v.astype(np.float32) for k, v in half.items()}, tokens).tolist(),
        "graph_x": gx.tolist(), "graph_y": gy.tolist(),
    }))


def cmd_weights(path):
    z = np.load(path)
    print(json.dumps({k: {"dtype": z[k].dtype.str, "shape": list(z[k].shape), "values": z[k].astype(np.float64).ravel().tolist()} for k in z.files if k != "model.json"}))


if __name__ == "__main__":
    {"build": cmd_build, "weights": cmd_weights}[sys.argv[1]](*sys.argv[2:])

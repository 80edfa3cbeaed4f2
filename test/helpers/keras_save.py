"""Keras 3's side of test/adapters/keras-save.test.mjs (KERAS_BACKEND=torch).

python3 keras_save.py make DIR   writes DIR/keras_cnn.keras (a Keras model with random weights and
                                 BatchNormalization statistics) and DIR/keras_transformer.keras (causal
                                 MultiHeadAttention), and prints {"input", "output", "transformer_input"}.
python3 keras_save.py load SPEC  loads each .keras of SPEC ({name: {"file", "inputs"}}) with
                                 keras.saving.load_model, predicts, and prints {name: {"outputs"} or {"error"}}.
"""
import json
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "torch")
import numpy as np  # noqa: E402
import keras  # noqa: E402
from keras import layers  # noqa: E402

if sys.argv[1] == "make":
    rng = np.random.default_rng(3)
    model = keras.Sequential([keras.Input((6, 6, 2)), layers.Conv2D(3, 3), layers.BatchNormalization(), layers.Activation("relu"), layers.Flatten(), layers.Dense(4), layers.Dense(2)])
    for w in model.weights:
        v = rng.uniform(0.5, 2.0, tuple(w.shape)) if "variance" in w.path else rng.normal(0, 0.5, tuple(w.shape))
        w.assign(v.astype("float32"))
    x = rng.normal(0, 1, (2, 6, 6, 2)).astype("float32")
    model.save(os.path.join(sys.argv[2], "keras_cnn.keras"))
    # A transformer block: causal MultiHeadAttention (npyts's own tfjs layer), LayerNormalization, gelu.
    t_in = keras.Input((5, 8))
    h = layers.MultiHeadAttention(num_heads=2, key_dim=4)(t_in, t_in, use_causal_mask=True)
    t = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([t_in, h]))
    t = layers.Dense(6, activation="gelu")(t)
    transformer = keras.Model(t_in, layers.Dense(3)(layers.GlobalAveragePooling1D()(t)))
    for w in transformer.weights:
        w.assign(rng.normal(0, 0.5, tuple(w.shape)).astype("float32"))
    transformer.save(os.path.join(sys.argv[2], "keras_transformer.keras"))
    tx = rng.normal(0, 1, (2, 5, 8)).astype("float32")
    print(json.dumps({"input": x.tolist(), "output": np.asarray(model.predict(x, verbose=0)).tolist(), "transformer_input": tx.tolist()}))
else:
    spec = json.load(open(sys.argv[2]))
    out = {}
    for name, s in spec.items():
        try:
            model = keras.saving.load_model(s["file"])
            xs = [np.asarray(x, dtype=np.float32) for x in s["inputs"]]
            ys = model.predict(xs if len(xs) > 1 else xs[0], verbose=0)
            ys = ys if isinstance(ys, (list, tuple)) else [ys]
            out[name] = {"outputs": [np.asarray(y).tolist() for y in ys]}
        except Exception as e:  # reported per model, so one failure does not hide the others
            out[name] = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(out))

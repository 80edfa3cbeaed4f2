"""Keras 3's side of test/adapters/keras-save.test.mjs (KERAS_BACKEND=torch).

python3 keras_save.py make DIR   writes DIR/keras_cnn.keras (a Keras model with random weights and
                                 BatchNormalization statistics) and prints {"input": [...], "output": [...]}.
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
    print(json.dumps({"input": x.tolist(), "output": np.asarray(model.predict(x, verbose=0)).tolist()}))
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

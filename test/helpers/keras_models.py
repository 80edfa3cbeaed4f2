"""Keras 3 models for test/adapters/keras.test.mjs, built, saved and run by Keras itself (KERAS_BACKEND=torch).

python3 keras_models.py DIR  writes DIR/<name>.keras (and .h5, .weights.h5 where asked) and prints JSON:
{name: {"inputs": [...], "outputs": [...]}} -- Keras's predictions on the inputs it was given.
"""
import json
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "torch")
import numpy as np  # noqa: E402
import keras  # noqa: E402
from keras import layers  # noqa: E402

out = sys.argv[1]
rng = np.random.default_rng(7)
keras.utils.set_random_seed(7)
results = {}


def at(name):
    return os.path.join(out, name)


def randomize(model):
    """Every weight random, BatchNormalization's statistics included (so a wrong pairing cannot pass)."""
    for w in model.weights:
        shape = tuple(w.shape)
        if "variance" in w.path:
            value = rng.uniform(0.5, 2.0, shape)
        else:
            value = rng.normal(0, 0.5, shape)
        w.assign(value.astype(keras.backend.standardize_dtype(w.dtype)) if w.dtype != "bfloat16" else value.astype("float32"))


def record(name, model, inputs):
    ys = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
    ys = ys if isinstance(ys, (list, tuple)) else [ys]
    results[name] = {
        "inputs": [np.asarray(x).tolist() for x in inputs],
        "outputs": [np.asarray(y, dtype="float32").tolist() for y in ys],
    }


# A Sequential CNN with BatchNormalization (non-trivial moving statistics).
cnn = keras.Sequential(
    [
        keras.Input((8, 8, 3)),
        layers.Conv2D(4, 3, activation="relu", padding="same"),
        layers.BatchNormalization(),
        layers.MaxPooling2D(),
        layers.Conv2D(6, 3, activation="silu"),
        layers.Flatten(),
        layers.Dropout(0.5),
        layers.Dense(5, activation="softmax"),
    ],
    name="cnn",
)
randomize(cnn)
cnn.save(at("cnn.keras"))
cnn.save(at("cnn.h5"))
cnn.save_weights(at("cnn.weights.h5"))
record("cnn", cnn, [rng.normal(size=(2, 8, 8, 3)).astype("float32")])

# A Functional model: two inputs, two outputs, a shared layer, Add and Concatenate, a nested Sequential.
a = keras.Input((4,), name="a")
b = keras.Input((4,), name="b")
shared = layers.Dense(4, activation="tanh", name="shared")
inner = keras.Sequential([keras.Input((8,)), layers.Dense(3, activation="relu"), layers.Dense(3)], name="inner")
x = layers.Add()([shared(a), shared(b)])
y = layers.Concatenate()([a, x])
fn = keras.Model([a, b], [layers.Dense(1, name="o1")(x), inner(y)], name="two_in_two_out")
randomize(fn)
fn.save(at("fn.keras"))
record("fn", fn, [rng.normal(size=(3, 4)).astype("float32"), rng.normal(size=(3, 4)).astype("float32")])

# A text model: Embedding, Bidirectional(LSTM), pooling, Dense.
text = keras.Sequential(
    [
        keras.Input((6,), dtype="int32"),
        layers.Embedding(20, 8),
        layers.Bidirectional(layers.LSTM(5, return_sequences=True)),
        layers.LSTM(4),
        layers.Dense(2),
    ],
    name="text",
)
randomize(text)
text.save(at("text.keras"))
record("text", text, [rng.integers(0, 20, size=(3, 6)).astype("int32")])

# A bfloat16 model: its weights are stored as bfloat16.
bf = keras.Sequential(
    [keras.Input((6,)), layers.Dense(5, activation="relu", dtype="bfloat16"), layers.Dense(3, dtype="bfloat16")], name="bf16"
)
randomize(bf)
bf.save(at("bf16.keras"))
bf32 = keras.Sequential([keras.Input((6,)), layers.Dense(5, activation="relu"), layers.Dense(3)], name="bf16_as_f32")
for w32, w16 in zip(bf32.weights, bf.weights):
    w32.assign(keras.ops.convert_to_numpy(keras.ops.cast(w16.value, "float32")))
record("bf16", bf32, [rng.normal(size=(2, 6)).astype("float32")])

# Layers and options tfjs cannot build, in one model (the refusal lists every one).
u = keras.Input((5, 3))
h = layers.GRU(4, return_sequences=True)(u)
h = layers.UnitNormalization()(h)
h = layers.Dense(3, activation="hard_silu")(h)
h = layers.Conv1D(4, 1, groups=1)(h)
bad = keras.Model(u, h, name="unsupported")
bad.save(at("unsupported.keras"))

print(json.dumps(results))

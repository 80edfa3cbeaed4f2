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
# Compiled and trained a step: the file then holds the optimizer's variables beside the model's.
fn.compile("adam", "mse")
fn.fit([rng.normal(size=(8, 4)), rng.normal(size=(8, 4))], [rng.normal(size=(8, 1)), rng.normal(size=(8, 3))], epochs=1, verbose=0)
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
# The same model as a legacy .h5: h5py stores its bfloat16 weights as opaque 2-byte values (|V2),
# and only the layers' dtype policies in model_config say what they are.
bf.save(at("bf16.h5"))

# keras.applications' MobileNetV2 (ZeroPadding2D, DepthwiseConv2D, ReLU(max_value=6), BatchNormalization, Add,
# global pooling), untrained at a small input size, with non-trivial BatchNormalization statistics.
mobilenet = keras.applications.MobileNetV2(weights=None, input_shape=(32, 32, 3), classes=10)
randomize(mobilenet)
mobilenet.save(at("mobilenetv2.keras"))
record("mobilenetv2", mobilenet, [rng.uniform(-1, 1, size=(1, 32, 32, 3)).astype("float32")])

# Activations by name and as layers, with Keras 3's option names (LeakyReLU's negative_slope).
acts = keras.Sequential(
    [
        keras.Input((6,)),
        layers.Dense(8, activation="gelu"),
        layers.LeakyReLU(negative_slope=0.1),
        layers.Dense(8, activation="silu"),
        layers.ReLU(max_value=0.8),
        layers.Dense(8, activation="selu"),
        layers.ELU(),
        layers.Dense(8, activation="softplus"),
        layers.Dense(8, activation="elu"),
        layers.Dense(4, activation="log_softmax"),
    ],
    name="acts",
)
randomize(acts)
acts.save(at("acts.keras"))
record("acts", acts, [rng.normal(size=(3, 6)).astype("float32")])

# Keras 3's own activations (hard_sigmoid is relu6(x + 3) / 6 here, not Keras 2's 0.2x + 0.5): tfjs has them
# once @npyts/tfjs/keras-layers is imported.
hard = keras.Sequential(
    [keras.Input((6,)), layers.Dense(5, activation="hard_sigmoid"), layers.Dense(4, activation="hard_silu")],
    name="hard",
)
randomize(hard)
hard.save(at("hard.keras"))
record("hard", hard, [(3 * rng.normal(size=(4, 6))).astype("float32")])

# Keras pairs a .weights.h5 with a model by each layer's group path (layers/<snake_case class>[_<n>]), not by
# the name attribute of its vars group: two Dense layers of one shape whose groups' name attributes are
# swapped (in a .keras and a .weights.h5) load as before in Keras, and a freshly built model whose layers
# have other auto-generated names loads the file too. The truths are what Keras predicts after loading them.
import io  # noqa: E402
import zipfile  # noqa: E402

import h5py  # noqa: E402


def twin_model(names):
    return keras.Sequential(
        [keras.Input((4,)), layers.Dense(4, activation="tanh", **names[0]), layers.Dense(4, **names[1])], name="twin"
    )


def swap_names(h5):
    a, b = h5["layers/dense/vars"], h5["layers/dense_1/vars"]
    na, nb = a.attrs["name"], b.attrs["name"]
    a.attrs["name"], b.attrs["name"] = nb, na


twin = twin_model([{"name": "first"}, {"name": "second"}])
randomize(twin)
twin.save(at("twin.keras"))
twin.save_weights(at("twin.weights.h5"))
twin_x = [rng.normal(size=(3, 4)).astype("float32")]
with zipfile.ZipFile(at("twin.keras")) as src, zipfile.ZipFile(at("swapped.keras"), "w") as dst:
    for item in src.infolist():
        data = src.read(item.filename)
        if item.filename == "model.weights.h5":
            buffer = io.BytesIO(data)
            with h5py.File(buffer, "r+") as h:
                swap_names(h)
            data = buffer.getvalue()
        dst.writestr(item, data)
record("swapped", keras.saving.load_model(at("swapped.keras")), twin_x)
with open(at("twin.weights.h5"), "rb") as src, open(at("swapped.weights.h5"), "wb") as dst:
    dst.write(src.read())
with h5py.File(at("swapped.weights.h5"), "r+") as h:
    swap_names(h)
loaded = twin_model([{"name": "first"}, {"name": "second"}])
loaded.load_weights(at("swapped.weights.h5"))
record("swapped_weights", loaded, twin_x)
fresh = twin_model([{}, {}])
assert [l.name for l in fresh.layers] != ["first", "second"]
fresh.load_weights(at("twin.weights.h5"))
record("fresh", fresh, twin_x)
# With no name attribute at all Keras loads the file as before; with the second layer's variables numbered 1 and 2
# (not 0 and 1) it refuses it (it reads '0', '1', ... of as many as the group holds).
with open(at("twin.weights.h5"), "rb") as src, open(at("nameless.weights.h5"), "wb") as dst:
    dst.write(src.read())
with h5py.File(at("nameless.weights.h5"), "r+") as h:
    h.visititems(lambda name, o: o.attrs.__delitem__("name") if "name" in o.attrs else None)
    h.move("layers/dense_1/vars/1", "layers/dense_1/vars/2")
    h.move("layers/dense_1/vars/0", "layers/dense_1/vars/1")
with h5py.File(at("nameless.weights.h5"), "r") as h:
    assert not any("name" in h[g].attrs for g in ["vars", "layers/dense/vars", "layers/dense_1/vars"])
try:
    twin_model([{}, {}]).load_weights(at("nameless.weights.h5"))
    results["gap"] = None
except Exception as e:
    results["gap"] = str(e)
with h5py.File(at("nameless.weights.h5"), "r+") as h:
    h.move("layers/dense_1/vars/1", "layers/dense_1/vars/0")
    h.move("layers/dense_1/vars/2", "layers/dense_1/vars/1")
nameless = twin_model([{}, {}])
nameless.load_weights(at("nameless.weights.h5"))
record("nameless", nameless, twin_x)
# A legacy .h5 is paired by order (legacy_h5_format's "topological" loading: the layers with weights in the model's
# order against layer_names'), never by name: a fresh twin loads it, and one whose layer_names are reversed
# loads crossed.
twin.save(at("twin.h5"))
fresh_h5 = twin_model([{}, {}])
fresh_h5.load_weights(at("twin.h5"))
record("fresh_h5", fresh_h5, twin_x)
with open(at("twin.h5"), "rb") as src, open(at("reversed.h5"), "wb") as dst:
    dst.write(src.read())
with h5py.File(at("reversed.h5"), "r+") as h:
    g = h["model_weights"]
    g.attrs["layer_names"] = g.attrs["layer_names"][::-1]
record("reversed_h5", keras.saving.load_model(at("reversed.h5")), twin_x)
with open(at("nameless.weights.h5"), "rb") as src, open(at("gap.weights.h5"), "wb") as dst:
    dst.write(src.read())
with h5py.File(at("gap.weights.h5"), "r+") as h:
    h.move("layers/dense_1/vars/1", "layers/dense_1/vars/2")
    h.move("layers/dense_1/vars/0", "layers/dense_1/vars/1")

# Layers and options tfjs cannot build, in one model (the refusal lists every one).
u = keras.Input((5, 3))
h = layers.GRU(4, return_sequences=True)(u)
h = layers.UnitNormalization()(h)
h = layers.Dense(3, activation="hard_silu")(h)
h = layers.Conv1D(4, 1, groups=1)(h)
h = layers.Dense(4, activation="hard_sigmoid")(h)
h = layers.ReLU(negative_slope=0.1)(h)
h = layers.ELU(alpha=0.5)(h)
h = layers.GlobalAveragePooling1D(keepdims=True)(h)
bad = keras.Model(u, h, name="unsupported")
bad.save(at("unsupported.keras"))

# Keras's own test_nested_functional_model_saving: two nested Functional models, two inputs, two outputs
# (Keras 3 writes output_layers' references to a nested Functional counting its own first node).
def two_dense(out_size, name):
    i = keras.Input((4,))
    return keras.Model(i, layers.Dense(out_size)(i), name=name)


na, nb = keras.Input((4,)), keras.Input((4,))
nested_fn = keras.Model([na, nb], [two_dense(2, "func_a")(na), two_dense(3, "func_b")(nb)], name="nested_fn")
randomize(nested_fn)
nested_fn.save(at("nested_fn.keras"))
record("nested_fn", nested_fn, [rng.normal(size=(2, 4)).astype("float32"), rng.normal(size=(2, 4)).astype("float32")])

# Initializers tfjs spells otherwise (LeCun...), and an activity regularizer (a training loss only).
lecun = keras.Sequential(
    [
        keras.Input((4,)),
        layers.Dense(3, kernel_initializer="lecun_normal", activation="tanh"),
        layers.Dense(2, kernel_initializer=keras.initializers.LecunUniform(), activity_regularizer="l2"),
    ],
    name="lecun",
)
randomize(lecun)
lecun.save(at("lecun.keras"))
record("lecun", lecun, [rng.normal(size=(3, 4)).astype("float32")])

# A Sequential in a Sequential (Keras writes [InputLayer, inner]).
nested_seq = keras.Sequential([keras.Input((4,)), keras.Sequential([layers.Dense(3), layers.Dense(2)], name="inner")], name="outer")
randomize(nested_seq)
nested_seq.save(at("nested_seq.keras"))
record("nested_seq", nested_seq, [rng.normal(size=(2, 4)).astype("float32")])

# A .keras whose config.json is a layer, not a model: refused as a model document.
import copy  # noqa: E402


def with_config(name, config, base="cnn.keras"):
    with zipfile.ZipFile(at(base)) as src, zipfile.ZipFile(at(name), "w") as dst:
        for item in src.infolist():
            dst.writestr(item, deep_json(config).encode() if item.filename == "config.json" else src.read(item.filename))


def config_of(base):
    with zipfile.ZipFile(at(base)) as src:
        return json.loads(src.read("config.json"))


DEEP = "__nested_100000_deep__"


def deep_json(config, depth=100_000):
    """The config as JSON, with DEEP replaced by lists nested `depth` deep (Python's json cannot write them)."""
    return json.dumps(config).replace(json.dumps(DEEP), "[" * depth + "]" * depth)


# Hostile configs (each one claim changed in a real model's config.json): nesting 100 000 deep in a
# layer's option and in a call's kwargs, sizes no file holds, negative units, names of Object's own members.
deep_value = config_of("cnn.keras")
deep_value["config"]["layers"][-1]["config"]["x"] = DEEP
with_config("deep_value.keras", deep_value)
deep_kwargs = config_of("fn.keras")
next(l for l in deep_kwargs["config"]["layers"] if l["inbound_nodes"])["inbound_nodes"][0]["kwargs"]["x"] = DEEP
with_config("deep_kwargs.keras", deep_kwargs, "fn.keras")
# A legacy .h5 whose model_config nests 30 000 deep.
with open(at("cnn.h5"), "rb") as f:
    legacy = f.read()
with open(at("deep_config.h5"), "wb") as f:
    f.write(legacy)
with h5py.File(at("deep_config.h5"), "r+") as f:
    f.attrs["model_config"] = deep_json({"class_name": "Sequential", "config": {"name": "m", "layers": [DEEP]}}, 30_000)


def acts_with(change):
    c = copy.deepcopy(config_of("acts.keras"))
    change(c["config"]["layers"])
    return c


def set_units(units):
    return lambda ls: ls[1]["config"].update(units=units)


with_config("huge_units.keras", acts_with(set_units(2**53)), "acts.keras")
with_config("huge_input.keras", acts_with(lambda ls: ls[0]["config"].update(batch_shape=[None, 2**40])), "acts.keras")
with_config("negative_units.keras", acts_with(set_units(-3)), "acts.keras")


def own_member_names(ls):
    ls[2]["class_name"] = "constructor"
    ls[3]["class_name"] = "__proto__"
    ls[1]["config"]["kernel_initializer"]["class_name"] = "constructor"
    ls[5]["config"]["bias_regularizer"] = {"class_name": "hasOwnProperty", "config": {}}


with_config("own_members.keras", acts_with(own_member_names), "acts.keras")


with_config("not_a_model.keras", {"module": "keras.layers", "class_name": "Dense", "config": {"units": 1}})
# Sequential models nested 200 deep: refused before any walk could overflow the stack.
deep = {"class_name": "Sequential", "config": {"name": "m", "layers": []}}
for _ in range(200):
    deep = {"class_name": "Sequential", "config": {"name": "m", "layers": [deep]}}
with_config("deep.keras", deep)

print(json.dumps(results))

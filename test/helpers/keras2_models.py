"""Keras 2 models for test/keras/keras2-h5.test.mjs, built, saved and run by Keras 2 itself.

PYTHONPATH=<tf2 install> python3 keras2_models.py DIR  writes DIR/<name>.h5 with Keras 2's own legacy writer
(model.save('m.h5'): tensorflow/python/keras/saving/hdf5_format.py) and prints JSON:
{name: {"inputs": [...], "outputs": [...]}} -- Keras 2's predictions on the inputs it was given.

Keras 2 here is the copy TensorFlow still ships as tensorflow.python.keras (pip offers no tf-keras or Keras 2
on these machines; test/helpers/tf2.mjs installs tensorflow-cpu apart from the main Python). Two things of
that leftover copy do not work under TensorFlow 2.21, and are worked around:
- its saver imports `tensorflow.python.keras.__version__`, which the copy no longer has: set below to
  2.6.0, the release it was split off at (its own comments say "Since TF 2.6, ..."). This is the only shim,
  and it is only the string written as the file's keras_version attribute.
- model.predict's data adapter needs a class TensorFlow 2.21 removed (input_lib.DistributedDatasetInterface):
  predictions come from model.predict_on_batch, the same model in inference mode, one batch.
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
from tensorflow.python import keras  # noqa: E402
from tensorflow.python.keras import layers  # noqa: E402
from tensorflow.python.keras.layers import recurrent  # noqa: E402  (Keras 2's LSTM and GRU, not exported)

# The one shim (see above): the version the saver writes as keras_version.
keras.__version__ = "2.6.0"

out = sys.argv[1]
rng = np.random.default_rng(11)
results = {}


def at(name):
    return os.path.join(out, name)


def randomize(model):
    """Every weight random and non-trivial (so that a wrong pairing or layout cannot pass)."""
    for w in model.weights:
        shape = tuple(w.shape)
        w.assign(rng.normal(0, 0.5, shape).astype(w.dtype.as_numpy_dtype))


def record(name, model, inputs):
    ys = model.predict_on_batch(inputs if len(inputs) > 1 else inputs[0])
    ys = ys if isinstance(ys, (list, tuple)) else [ys]
    results[name] = {
        "inputs": [np.asarray(x).tolist() for x in inputs],
        "outputs": [np.asarray(y, dtype="float32").tolist() for y in ys],
        # tfjs lists a Sequential's InputLayer among its layers, Keras 2 does not: compared without them.
        "layers": [layer.name for layer in model.layers if not isinstance(layer, layers.InputLayer)],
    }


# A Functional model: two inputs, two outputs, Conv2D, DepthwiseConv2D, SeparableConv2D, pooling, a shared
# Dense called twice, Add, Concatenate, Dense, LeakyReLU (Keras 2's alpha).
img = keras.Input((8, 8, 3), name="image")
vec = keras.Input((5,), name="vector")
x = layers.Conv2D(4, 3, strides=2, padding="same", activation="relu", name="conv")(img)
x = layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same", name="depthwise")(x)
x = layers.SeparableConv2D(6, 3, depth_multiplier=2, padding="same", activation="elu", name="separable")(x)
x = layers.AveragePooling2D(3, strides=1, padding="same", name="avg_pool")(x)
x = layers.MaxPooling2D(name="max_pool")(x)
x = layers.GlobalAveragePooling2D(name="gap")(x)
shared = layers.Dense(5, activation="tanh", name="shared")
v = shared(vec)
v2 = shared(layers.Dense(5, name="pre")(vec))
s = layers.Add(name="add")([x, layers.Dense(6, name="widen")(layers.Add(name="add_v")([v, v2]))])
c = layers.Concatenate(name="concat")([s, vec, v2])
probs = layers.Dense(3, activation="softmax", name="probs")(c)
score = layers.Dense(2, name="score")(layers.LeakyReLU(alpha=0.3, name="leaky")(layers.Dense(4, name="hidden")(c)))
fn = keras.Model([img, vec], [probs, score], name="two_in_two_out")
randomize(fn)
fn.save(at("fn.h5"))
record("fn", fn, [rng.normal(size=(2, 8, 8, 3)).astype("float32"), rng.normal(size=(2, 5)).astype("float32")])

# A Sequential 2D model whose first layer carries batch_input_shape (no Input), with padding, cropping,
# upsampling, a transposed convolution, the advanced activations, Reshape/Permute, Keras 2's hard_sigmoid.
seq = keras.Sequential(
    [
        layers.ZeroPadding2D(((1, 2), (2, 1)), input_shape=(6, 6, 2)),
        layers.Conv2D(3, 3, strides=2, activation="hard_sigmoid"),
        layers.UpSampling2D(2),
        layers.Conv2DTranspose(4, 3, strides=2, padding="same"),
        layers.Cropping2D(((1, 0), (0, 2))),
        layers.PReLU(shared_axes=[1, 2]),
        layers.MaxPooling2D(3, strides=2, padding="same"),
        layers.Permute((3, 1, 2)),
        layers.Reshape((-1,)),
        layers.Dropout(0.5),
        layers.Dense(6, activation="swish"),
        layers.ReLU(max_value=0.8),
        layers.Dense(6, activation="selu"),
        layers.ELU(),
        layers.Dense(6, activation="softplus"),
        layers.Activation("softsign"),
        layers.Dense(4),
        layers.Softmax(),
    ],
    name="seq",
)
randomize(seq)
seq.save(at("seq.h5"))
record("seq", seq, [rng.normal(size=(3, 6, 6, 2)).astype("float32")])

# A Sequential 1D model (an Input first) with layer names of its own; its weights also saved alone
# (save_weights), for assignWeights into the same model built by hand in tfjs.
conv1d = keras.Sequential(
    [
        keras.Input((10, 3)),
        layers.Conv1D(4, 3, activation="relu", name="c1"),
        layers.AveragePooling1D(name="p1"),
        layers.Conv1D(5, 2, dilation_rate=2, padding="same", name="c2"),
        layers.GlobalMaxPooling1D(name="g"),
        layers.Dense(3, name="d"),
    ],
    name="conv1d",
)
randomize(conv1d)
conv1d.save(at("conv1d.h5"))
conv1d.save_weights(at("conv1d.weights.h5"))
record("conv1d", conv1d, [rng.normal(size=(2, 10, 3)).astype("float32")])

# A text model: Embedding, Keras 2's LSTM and GRU (recurrent_activation='hard_sigmoid', GRU reset_after=False
# by default), a SimpleRNN going backwards, Dense.
words = keras.Input((7,), dtype="int32", name="words")
t = layers.Embedding(20, 8, name="embed")(words)
t = recurrent.LSTM(5, return_sequences=True, name="lstm")(t)
t = recurrent.GRU(4, return_sequences=True, name="gru")(t)
t = layers.SimpleRNN(3, go_backwards=True, name="rnn")(t)
text = keras.Model(words, layers.Dense(2, name="out")(t), name="text")
randomize(text)
text.save(at("text.h5"))
record("text", text, [rng.integers(0, 20, size=(3, 7)).astype("int32")])

# A nested model: a Sequential called as a layer of a Functional model, its first layer frozen. Keras 2 lists
# a nested model's weights trainable first (here: the second Dense's, then the frozen first's), and both
# Dense layers have the same shapes, so only the names can pair them.
inner = keras.Sequential(
    [layers.Dense(4, activation="relu", input_shape=(4,), name="frozen"), layers.Dense(4, name="free")], name="inner"
)
inner.get_layer("frozen").trainable = False
a = keras.Input((4,), name="a")
h = layers.Dense(4, name="before")(a)
y = layers.Add(name="residual")([inner(h), h])
nested = keras.Model(a, layers.Dense(2, name="after")(y), name="outer")
randomize(nested)
nested.save(at("nested.h5"))
record("nested", nested, [rng.normal(size=(3, 4)).astype("float32")])

# Reshape with a -1, whose size tfjs's own Reshape leaves unknown to the layers after it.
reshape = keras.Sequential(
    [
        layers.Reshape((-1, 2), input_shape=(3, 4), name="to_pairs"),
        layers.Dense(3, name="on_pairs"),
        layers.Reshape((-1,), name="to_flat"),
        layers.Dense(2, name="on_flat"),
    ],
    name="reshape",
)
randomize(reshape)
reshape.save(at("reshape.h5"))
record("reshape", reshape, [rng.normal(size=(2, 3, 4)).astype("float32")])

# A GRU with reset_after=True: tfjs's own GRU throws on it; @npyts/tfjs/keras-layers registers one that builds it.
g = keras.Input((6, 3), name="seq_in")
gru2 = keras.Model(g, layers.Dense(2, name="out")(recurrent.GRU(4, reset_after=True, name="gru_ra")(g)), name="gru_reset_after")
randomize(gru2)
gru2.save(at("gru_reset_after.h5"))
record("gru_reset_after", gru2, [rng.normal(size=(2, 6, 3)).astype("float32")])

# Bilinear upsampling: Keras 2 resizes with half-pixel centers, tfjs's UpSampling2D without.
bil = keras.Sequential([layers.UpSampling2D(2, interpolation="bilinear", input_shape=(3, 3, 2), name="upsample_bilinear")], name="bilinear")
bil.save(at("bilinear.h5"))
record("bilinear", bil, [rng.normal(size=(1, 3, 3, 2)).astype("float32")])

# Layers and options of Keras 2 that tfjs cannot build or would compute otherwise, in one model.
q = keras.Input((5, 4), name="q")
u = layers.Attention(name="attention")([q, q])
u = layers.Conv1D(4, 1, groups=2, name="grouped")(u)
u = layers.ELU(alpha=0.5, name="elu_half")(u)
u = layers.ReLU(negative_slope=0.1, name="leaky_relu6")(u)
u = layers.Conv1D(4, 2, padding="causal", name="causal")(u)
u = layers.GlobalAveragePooling1D(keepdims=True, name="gap_keep")(u)
bad = keras.Model(q, u, name="unsupported")
bad.save(at("unsupported.h5"))

print(json.dumps(results))

# Keras 3's models for test/adapters/keras-apps.test.mjs, all in one process (KERAS_BACKEND=torch):
# keras.applications MobileNetV2, EfficientNetB0 and DenseNet121 (weights=None, 32x32 inputs, logits),
# a transformer block (LayerNormalization, causal MultiHeadAttention, gelu) and a text model
# (Embedding, Bidirectional(GRU), GRU with Keras 3's reset_after=True), each with random weights
# and non-trivial BatchNormalization / Normalization statistics (calibrated on a batch, then perturbed), saved as OUT/<name>.keras, with an
# input and Keras's inference output in OUT/<name>.npz (x, y).
# Usage: python3 keras_apps.py OUT [name ...]
import os
import sys

os.environ.setdefault('KERAS_BACKEND', 'torch')
import numpy as np  # noqa: E402
import keras  # noqa: E402

L = keras.layers
out_dir = sys.argv[1]
wanted = set(sys.argv[2:])
rng = np.random.default_rng(11)


def calibrate(model, x):
    """Non-trivial statistics that keep the signal alive through the depth: random gamma and beta, then
    every BatchNormalization's moving statistics set to its batch's (one training-mode pass with momentum
    0) and perturbed, and Normalization's to the input's, perturbed."""
    bns = [layer for layer in model.layers if isinstance(layer, L.BatchNormalization)]
    for layer in bns:
        gamma, beta, mean, var = layer.get_weights()
        layer.set_weights([rng.uniform(0.6, 1.4, gamma.shape).astype('float32'), (rng.standard_normal(beta.shape) * 0.1).astype('float32'), mean, var])
    for layer in model.layers:
        if isinstance(layer, L.Normalization) and layer.get_weights():
            _, _, count = layer.get_weights()
            # After Rescaling(1/255): uniform 0..1 has mean 0.5, variance 1/12.
            layer.set_weights([(0.5 + rng.standard_normal(3) * 0.05).astype('float32'), (rng.uniform(0.8, 1.25, 3) / 12).astype('float32'), count])
    momenta = [layer.momentum for layer in bns]
    for layer in bns:
        layer.momentum = 0.0
    model(x, training=True)
    for layer, momentum in zip(bns, momenta):
        layer.momentum = momentum
        gamma, beta, mean, var = layer.get_weights()
        mean = mean + rng.standard_normal(mean.shape).astype('float32') * 0.1 * np.sqrt(var)
        layer.set_weights([gamma, beta, mean.astype('float32'), (var * rng.uniform(0.8, 1.25, var.shape)).astype('float32')])


def transformer():
    x_in = keras.Input((8, 16))
    h = L.MultiHeadAttention(num_heads=4, key_dim=4, dropout=0.1)(x_in, x_in, use_causal_mask=True)
    h = L.Dropout(0.1)(h)
    x = L.LayerNormalization(epsilon=1e-6)(L.Add()([x_in, h]))
    f = L.Dense(32, activation='gelu')(x)
    f = L.Dense(16)(f)
    x = L.LayerNormalization(epsilon=1e-6)(L.Add()([x, f]))
    y = L.Dense(3)(L.GlobalAveragePooling1D()(x))
    model = keras.Model(x_in, y)
    for layer in model.layers:
        if isinstance(layer, L.LayerNormalization):
            g, b = layer.get_weights()
            layer.set_weights([rng.uniform(0.5, 1.5, g.shape).astype('float32'), (rng.standard_normal(b.shape) * 0.2).astype('float32')])
    return model


def text_gru():
    x_in = keras.Input((12,), dtype='int32')
    h = L.Embedding(50, 8)(x_in)
    h = L.Bidirectional(L.GRU(6, return_sequences=True))(h)
    h = L.GRU(5)(h)  # Keras 3's reset_after=True
    model = keras.Model(x_in, L.Dense(3)(h))
    # Weights of unit scale (Keras's initial embeddings are within ±0.05), so the outputs are too.
    for layer in model.layers:
        if isinstance(layer, (L.Embedding, L.Dense)):
            layer.set_weights([rng.standard_normal(w.shape).astype('float32') for w in layer.get_weights()])
    return model


MODELS = {
    'mobilenetv2': lambda: keras.applications.MobileNetV2(input_shape=(32, 32, 3), weights=None, classes=10, classifier_activation=None),
    'efficientnetb0': lambda: keras.applications.EfficientNetB0(input_shape=(32, 32, 3), weights=None, classes=10, classifier_activation=None),
    'densenet121': lambda: keras.applications.DenseNet121(input_shape=(32, 32, 3), weights=None, classes=10, classifier_activation=None),
    'transformer': transformer,
    'textgru': text_gru,
}

for name, make in MODELS.items():
    if wanted and name not in wanted:
        continue
    keras.utils.set_random_seed(3)
    model = make()
    shape = (2, *model.input_shape[1:])
    low, high = (-1, 1) if name == 'mobilenetv2' else (0, 255)  # MobileNetV2 takes [-1, 1], its ReLU6 saturates on 0..255
    if name == 'textgru':
        x = rng.integers(0, 50, shape).astype('int32')
    else:
        draw = (lambda n: rng.standard_normal((n, *shape[1:]))) if name == 'transformer' else (lambda n: rng.uniform(low, high, (n, *shape[1:])))
        calibrate(model, draw(16).astype('float32'))
        x = draw(2).astype('float32')
    y = keras.ops.convert_to_numpy(model(x, training=False))
    model.save(os.path.join(out_dir, f'{name}.keras'))
    np.savez(os.path.join(out_dir, f'{name}.npz'), x=x, y=y.astype('float32'))

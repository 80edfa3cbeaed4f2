# Keras 3's models for test/adapters/keras-apps.test.mjs, all in one process (KERAS_BACKEND=torch):
# keras.applications MobileNetV2, EfficientNetB0 and DenseNet121 (weights=None, 32x32 inputs, logits),
# and a transformer block (LayerNormalization, causal MultiHeadAttention, gelu), each with random weights
# and non-trivial BatchNormalization / Normalization statistics, saved as OUT/<name>.keras, with an
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


def perturb(model):
    """Random statistics for every BatchNormalization and Normalization, so a wrong layout cannot pass."""
    for layer in model.layers:
        if isinstance(layer, L.BatchNormalization):
            gamma, beta, mean, var = layer.get_weights()
            layer.set_weights([
                rng.uniform(0.6, 1.4, gamma.shape).astype('float32'),
                (rng.standard_normal(beta.shape) * 0.1).astype('float32'),
                (rng.standard_normal(mean.shape) * 0.1).astype('float32'),
                rng.uniform(0.6, 1.6, var.shape).astype('float32'),
            ])
        elif isinstance(layer, L.Normalization) and layer.get_weights():
            mean, var, count = layer.get_weights()
            layer.set_weights([(rng.standard_normal(mean.shape) * 0.2).astype('float32'), rng.uniform(0.5, 2, var.shape).astype('float32'), count])


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


MODELS = {
    'mobilenetv2': lambda: keras.applications.MobileNetV2(input_shape=(32, 32, 3), weights=None, classes=10, classifier_activation=None),
    'efficientnetb0': lambda: keras.applications.EfficientNetB0(input_shape=(32, 32, 3), weights=None, classes=10, classifier_activation=None),
    'densenet121': lambda: keras.applications.DenseNet121(input_shape=(32, 32, 3), weights=None, classes=10, classifier_activation=None),
    'transformer': transformer,
}

for name, make in MODELS.items():
    if wanted and name not in wanted:
        continue
    keras.utils.set_random_seed(3)
    model = make()
    perturb(model)
    shape = (2, *model.input_shape[1:])
    x = (rng.uniform(0, 255, shape) if name != 'transformer' else rng.standard_normal(shape)).astype('float32')
    y = keras.ops.convert_to_numpy(model(x, training=False))
    model.save(os.path.join(out_dir, f'{name}.keras'))
    np.savez(os.path.join(out_dir, f'{name}.npz'), x=x, y=y.astype('float32'))

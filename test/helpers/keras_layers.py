# Keras 3's answers for test/adapters/keras-layers.test.mjs, all in one process (KERAS_BACKEND=torch):
# for each case, the Keras layer built with a non-trivial config and random weights, its inputs,
# layer.get_weights() and its inference output, into OUT/cases.npz, with the configs in OUT/cases.json.
# Usage: python3 keras_layers.py OUT
import os
import sys
import json

os.environ.setdefault('KERAS_BACKEND', 'torch')
import numpy as np  # noqa: E402
import keras  # noqa: E402

L = keras.layers
out_dir = sys.argv[1]
rng = np.random.default_rng(7)
arrays = {}
cases = []


def rand(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype('float32')


def case(name, layer, inputs, kwargs=None, weights=None):
    """Build `layer` on `inputs`, give it random weights (or `weights`), save inputs, weights, output."""
    kwargs = kwargs or {}
    call_inputs = inputs if len(inputs) > 1 else inputs[0]
    if isinstance(layer, (L.MultiHeadAttention,)):
        layer(*inputs, **kwargs)
    else:
        layer(call_inputs, **kwargs)
    if weights is None:
        weights = []
        for w in layer.get_weights():
            weights.append(w if w.dtype.kind in 'iu' else (rng.standard_normal(w.shape) * 0.5).astype(w.dtype))
    layer.set_weights(weights)
    if isinstance(layer, (L.MultiHeadAttention,)):
        y = layer(*inputs, training=False, **kwargs)
    else:
        y = layer(call_inputs, training=False, **kwargs)
    y = keras.ops.convert_to_numpy(y)
    for i, x in enumerate(inputs):
        arrays[f'{name}__in{i}'] = x
    for i, w in enumerate(layer.get_weights()):
        arrays[f'{name}__w{i}'] = w
    arrays[f'{name}__out'] = y.astype('float32')
    cases.append({
        'name': name,
        'class_name': type(layer).__name__,
        'config': layer.get_config(),
        'kwargs': kwargs,
        'inputs': len(inputs),
        'weights': [[list(w.shape), str(w.dtype)] for w in layer.get_weights()],
        'identity': bool(np.array_equal(y, inputs[0])),
    })


# Activations, on a dense grid and random values, through keras.activations.get(name).
x = np.concatenate([np.linspace(-7, 7, 2800), rng.standard_normal(2000) * 3]).astype('float32').reshape(4, -1)
arrays['act__x'] = x
ACTIVATIONS = ['hard_sigmoid', 'hard_silu', 'hard_swish', 'silu', 'swish', 'leaky_relu', 'exponential', 'hard_tanh',
               'log_sigmoid', 'celu', 'tanh_shrink', 'soft_shrink', 'hard_shrink', 'squareplus', 'sparse_plus',
               'sparse_sigmoid', 'gelu', 'mish', 'relu6', 'log_softmax', 'selu', 'elu', 'softplus', 'softsign',
               'relu', 'sigmoid', 'tanh', 'softmax', 'linear']
for a in ACTIVATIONS:
    arrays[f'act__{a}'] = keras.ops.convert_to_numpy(keras.activations.get(a)(x)).astype('float32')

# GRU: Keras 3's reset_after=True (the default), and False; sequences, backwards, no bias.
seq = rand(3, 7, 5)
case('gru_after', L.GRU(4), [seq])
case('gru_after_seq_back', L.GRU(6, return_sequences=True, go_backwards=True), [seq])
case('gru_before', L.GRU(4, reset_after=False, return_sequences=True), [seq])
case('gru_after_nobias', L.GRU(3, use_bias=False, activation='hard_silu'), [seq])

# MultiHeadAttention: self-attention, cross-attention with a key, other value and output sizes, a causal mask.
q = rand(2, 5, 8)
kv = rand(2, 7, 6)
k = rand(2, 7, 4)
case('mha_self', L.MultiHeadAttention(num_heads=2, key_dim=3), [q, q])
case('mha_cross', L.MultiHeadAttention(num_heads=3, key_dim=4, value_dim=2, output_shape=5), [q, kv, k])
case('mha_causal', L.MultiHeadAttention(num_heads=4, key_dim=2, use_bias=False), [q, q], {'use_causal_mask': True})

img = rand(2, 4, 5, 6, scale=2.0) + 1.5
# Normalization: adapted state as weights (mean, variance, count), given values, several axes, inverted.
norm = L.Normalization(axis=-1)
case('norm_weights', norm, [img], weights=[rand(6), np.abs(rand(6)) + 0.1, np.array(10, dtype='int32')])
norm2 = L.Normalization(axis=(1, 3))
case('norm_axes', norm2, [img], weights=[rand(4, 6), np.abs(rand(4, 6)) + 0.1, np.array(3, dtype='int32')])
case('norm_given', L.Normalization(axis=-1, mean=[0.5, -1, 2, 0, 1, 3], variance=[1, 4, 0.25, 2, 9, 1]), [img])
case('norm_invert', L.Normalization(axis=-1, mean=1.5, variance=4.0, invert=True), [img])

# GroupNormalization, UnitNormalization.
case('group_norm', L.GroupNormalization(groups=3, epsilon=1e-4), [img])
case('group_norm_nocenter', L.GroupNormalization(groups=2, center=False), [rand(3, 7, 4) * 3 + 2])
case('unit_norm', L.UnitNormalization(), [img])
case('unit_norm_axes', L.UnitNormalization(axis=[1, 2]), [img])

# EinsumDense: MultiHeadAttention's projections, a Dense-like one with an activation, no bias.
case('einsum_heads', L.EinsumDense('abc,cde->abde', output_shape=(None, 2, 3), bias_axes='de'), [rand(2, 4, 5)])
case('einsum_dense', L.EinsumDense('ab,bc->ac', output_shape=7, bias_axes='c', activation='hard_silu'), [rand(3, 5)])
case('einsum_nobias', L.EinsumDense('abc,cd->abd', output_shape=(None, 4)), [rand(2, 3, 5)])
case('einsum_inner_bias', L.EinsumDense('abc,cde->abde', output_shape=(None, 2, 3), bias_axes='d'), [rand(2, 4, 5)])

# Merges and 1D shape layers.
case('subtract', L.Subtract(), [rand(2, 3, 4), rand(2, 3, 4)])
case('cropping1d', L.Cropping1D(cropping=(1, 2)), [seq])
case('zeropadding1d', L.ZeroPadding1D(padding=(2, 1)), [seq])
case('upsampling1d', L.UpSampling1D(size=3), [seq])

# Conv1DTranspose.
case('conv1dt_same', L.Conv1DTranspose(4, 3, strides=2, padding='same'), [seq])
case('conv1dt_valid', L.Conv1DTranspose(3, 4, strides=3, padding='valid', activation='relu'), [seq])
case('conv1dt_wide', L.Conv1DTranspose(2, 2, strides=3, padding='valid', use_bias=False), [seq])

# Layers that are the identity at inference.
image = rng.uniform(0, 1, (2, 8, 8, 3)).astype('float32')
for layer in [L.RandomFlip(), L.RandomRotation(0.2), L.RandomZoom(0.2), L.RandomTranslation(0.1, 0.1),
              L.RandomContrast(0.5), L.RandomBrightness(0.2, value_range=(0, 1)), L.RandomGrayscale(0.5),
              L.RandomHue(0.2, value_range=(0, 1)), L.RandomSaturation(0.2, value_range=(0, 1)),
              L.RandomSharpness(0.2, value_range=(0, 1)), L.RandomShear(0.2, 0.2),
              L.RandomPosterization(factor=(1, 4), value_range=(0, 1)), L.RandomInvert(value_range=(0, 1)),
              L.RandomColorDegeneration(0.2, value_range=(0, 1)), L.RandomColorJitter(value_range=(0, 1), brightness_factor=0.2),
              L.RandomErasing(value_range=(0, 1)), L.RandomGaussianBlur(value_range=(0, 1)), L.RandomPerspective(),
              L.RandomElasticTransform(value_range=(0, 1)), L.SpatialDropout2D(0.5), L.ActivityRegularization(0.1, 0.1)]:
    case(f'identity_{type(layer).__name__}', layer, [image])
case('identity_SpatialDropout3D', L.SpatialDropout3D(0.5), [rand(2, 3, 4, 5, 2)])

np.savez(os.path.join(out_dir, 'cases.npz'), **arrays)
with open(os.path.join(out_dir, 'cases.json'), 'w') as f:
    json.dump({'cases': cases, 'activations': ACTIVATIONS}, f)

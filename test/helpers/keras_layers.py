# Keras 3's answers for test/adapters/keras-layers.test.mjs, all in one process (KERAS_BACKEND=torch):
# for each case, the Keras layer built with a non-trivial config and random weights, its inputs,
# layer.get_weights() and its inference output, into OUT/cases.npz, with the configs in OUT/cases.json.
# Also Keras models as .keras files for kerasHandler (see below).
# Usage: python3 keras_layers.py OUT [blocks]   (blocks: only the transformer blocks)
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


# Models whose layers are given one tensor more than once in a call (kerasHandler's, keras-repeats.ts):
# transformer blocks with the residual from an inner layer, post- and pre-norm, a tensor given to
# MultiHeadAttention three times, and plain merges (Multiply([d, d]) then Add([d, m])). Saved as .keras;
# Keras's predictions of OUT/<name>.keras on <name>__x in cases.npz as <name>__y.
def randomize(model):
    for w in model.weights:
        if w.dtype.startswith('float'):
            v = rng.standard_normal(tuple(w.shape)) * 0.5
            w.assign((np.abs(v) + 0.1 if 'variance' in w.path else v).astype('float32'))


def block(name, shape, build):
    inp = keras.Input(shape)
    model = keras.Model(inp, build(inp), name=name)
    randomize(model)
    x = rand(2, *shape)
    model.save(os.path.join(out_dir, f'{name}.keras'))
    arrays[f'{name}__x'] = x
    arrays[f'{name}__y'] = np.asarray(model.predict(x, verbose=0), dtype='float32')
    blocks.append(name)


def post_norm(x):
    d = L.Dense(8)(x)
    h = L.LayerNormalization()(L.Add()([d, L.MultiHeadAttention(num_heads=2, key_dim=4)(d, d)]))
    return L.LayerNormalization()(L.Add()([h, L.Dense(8)(L.Dense(16, activation='relu')(h))]))


def pre_norm(x):
    d = L.Dense(8)(x)
    n = L.LayerNormalization()(d)
    r = L.Add()([d, L.MultiHeadAttention(num_heads=2, key_dim=4)(n, n, use_causal_mask=True)])
    return L.Add()([r, L.Dense(8, activation='gelu')(L.LayerNormalization()(r))])


def three_times(x):
    d = L.Dense(8)(x)
    return L.Add()([d, L.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=2)(d, d, d)])


def merges(x):
    d = L.Dense(6)(x)
    m = L.Multiply()([d, d])
    return L.Concatenate()([L.Add()([d, m]), L.Add()([d, d, d])])


blocks = []
block('block_post_norm', (5, 6), post_norm)
block('block_pre_norm', (5, 6), pre_norm)
block('block_three_times', (4, 8), three_times)
block('block_merges', (6,), merges)


def save():
    np.savez(os.path.join(out_dir, 'cases.npz'), **arrays)
    with open(os.path.join(out_dir, 'cases.json'), 'w') as f:
        json.dump({'cases': cases, 'activations': ACTIVATIONS, 'blocks': blocks, 'train': train}, f)


cases, train, ACTIVATIONS = [], [], []
if sys.argv[2:] == ['blocks']:  # the blocks only (test/apps/tfjs-browser.test.mjs)
    save()
    sys.exit(0)


# Activations, on a dense grid and random values, through keras.activations.get(name).
x = np.concatenate([np.linspace(-7, 7, 2800), rng.standard_normal(2000) * 3]).astype('float32').reshape(4, -1)
arrays['act__x'] = x
ACTIVATIONS += ['hard_sigmoid', 'hard_silu', 'hard_swish', 'silu', 'swish', 'leaky_relu', 'exponential', 'hard_tanh',
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
# An axis in the input, the kernel and the output (b), and an input axis summed out (d in abcd,ce->abe).
case('einsum_shared_axis', L.EinsumDense('abc,bcd->abd', output_shape=(4, 6), bias_axes='d'), [rand(2, 4, 5)])
case('einsum_summed_axis', L.EinsumDense('abcd,ce->abe', output_shape=(3, 6)), [rand(2, 3, 4, 5)])

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


# One step of training: for each layer, a model of a Dense per input (so that what flows back through
# the layer reaches trainable weights) and the layer, saved as .keras, then trained one step of SGD
# (learning rate 0.1) on mean squared error by Keras: the batch and target in cases.npz
# (train_<name>__x<i>, train_<name>__t), each layer's weights after the step as
# train_<name>__<layer>__w<i>.
def trained(name, shapes, make, kwargs=None):
    ins = [keras.Input(s) for s in shapes]
    pre = [L.Dense(shape[-1], name=f'pre{i}')(x) for i, (x, shape) in enumerate(zip(ins, shapes))]
    layer = make()
    if isinstance(layer, L.MultiHeadAttention):  # self-attention: the one tensor as query and value
        y = layer(*(pre if len(pre) > 1 else pre * 2), **(kwargs or {}))
    else:
        y = layer(pre if len(pre) > 1 else pre[0])
    model = keras.Model(ins, y, name=f'train_{name}')
    randomize(model)
    xs = [rand(3, *s) for s in shapes]
    target = rand(*((3,) + tuple(y.shape[1:])))
    model.save(os.path.join(out_dir, f'train_{name}.keras'))
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss='mse')
    model.train_on_batch(xs if len(xs) > 1 else xs[0], target)
    for i, x in enumerate(xs):
        arrays[f'train_{name}__x{i}'] = x
    arrays[f'train_{name}__t'] = target
    layers = {}
    for lyr in model.layers:
        ws = lyr.get_weights()
        for i, w in enumerate(ws):
            arrays[f'train_{name}__{lyr.name}__w{i}'] = w
        if ws:
            layers[lyr.name] = len(ws)
    train.append({'name': name, 'class_name': type(layer).__name__ if isinstance(layer, L.Layer) else 'activations', 'inputs': len(xs), 'layers': layers})


trained('gru_after', [(7, 5)], lambda: L.GRU(4))
trained('gru_before', [(7, 5)], lambda: L.GRU(3, reset_after=False, return_sequences=True))
trained('mha_self', [(5, 8)], lambda: L.MultiHeadAttention(num_heads=2, key_dim=3))
trained('mha_cross', [(5, 8), (7, 6), (7, 4)], lambda: L.MultiHeadAttention(num_heads=3, key_dim=4, value_dim=2, output_shape=5))
trained('mha_causal', [(5, 8)], lambda: L.MultiHeadAttention(num_heads=2, key_dim=2), {'use_causal_mask': True})
trained('normalization', [(4, 6)], lambda: L.Normalization(axis=-1))
trained('group_norm', [(4, 6)], lambda: L.GroupNormalization(groups=3))
trained('unit_norm', [(4, 6)], lambda: L.UnitNormalization())
trained('einsum_heads', [(4, 5)], lambda: L.EinsumDense('abc,cde->abde', output_shape=(4, 2, 3), bias_axes='de'))
trained('einsum_shared_axis', [(4, 5)], lambda: L.EinsumDense('abc,bcd->abd', output_shape=(4, 6), bias_axes='d'))
trained('einsum_summed_axis', [(3, 4, 5)], lambda: L.EinsumDense('abcd,ce->abe', output_shape=(3, 6)))
trained('einsum_dense', [(5,)], lambda: L.EinsumDense('ab,bc->ac', output_shape=7, bias_axes='c', activation='hard_silu'))
trained('subtract', [(3, 4), (3, 4)], lambda: L.Subtract())
trained('cropping1d', [(7, 5)], lambda: L.Cropping1D(cropping=(1, 2)))
trained('zeropadding1d', [(7, 5)], lambda: L.ZeroPadding1D(padding=(2, 1)))
trained('upsampling1d', [(7, 5)], lambda: L.UpSampling1D(size=3))
trained('conv1dt', [(7, 5)], lambda: L.Conv1DTranspose(4, 3, strides=2, padding='same', activation='relu'))
TRAIN_ACTIVATIONS = ['hard_sigmoid', 'hard_silu', 'leaky_relu', 'exponential', 'hard_tanh', 'log_sigmoid', 'celu',
                     'tanh_shrink', 'soft_shrink', 'hard_shrink', 'squareplus', 'sparse_plus', 'sparse_sigmoid']
trained('activations', [(6,)], lambda: (lambda x: L.Concatenate()([L.Dense(3, activation=a)(x) for a in TRAIN_ACTIVATIONS])))

save()

# Keras fixtures (KERAS_BACKEND=torch): one process builds a model, saves it in every format Keras
# 3 writes into argv[1], and prints a JSON report of what Keras itself reads back from each: for a
# .weights.h5 (alone or in a .keras), every variable by its path through H5IOStore (which reads
# bfloat16 as bfloat16), for a legacy .h5 every weight named by layer_names/weight_names as h5py
# reads it (its opaque bfloat16 weights as the bfloat16 Keras loads from them); values go to argv[1]/expect/<file>/<n>.bin, in the machine's byte order.
import json
import os
import sys
import zipfile

os.environ.setdefault('KERAS_BACKEND', 'torch')
import h5py  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras.src.saving import saving_lib  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
keras.utils.set_random_seed(3)

inp = keras.Input((6, 6, 2))
x = keras.layers.Conv2D(3, 3, name='conv')(inp)
x = keras.layers.BatchNormalization(name='bn')(x)
x = keras.layers.Flatten()(x)
x = keras.layers.Dense(256, activation='relu')(x)
x = keras.layers.Dense(1024, activation='relu', name='wide')(x)
y = keras.layers.Dense(2, dtype='bfloat16', name='head')(x)
model = keras.Model(inp, y, name='net')
bn = model.get_layer('bn')
rng = np.random.default_rng(5)
# Statistics that are not 0 and 1, so that a wrong pairing cannot pass.
bn.moving_mean.assign(rng.standard_normal(3).astype('float32'))
bn.moving_variance.assign(rng.uniform(0.5, 2, 3).astype('float32'))

model.save_weights(os.path.join(out, 'model.weights.h5'))
model.save(os.path.join(out, 'model.keras'))
model.save(os.path.join(out, 'legacy.h5'))
saving_lib.save_model(model, os.path.join(out, 'npz.keras'), weights_format='npz')
# A zip of other things: neither a .npz nor a torch.save file nor a .keras.
with zipfile.ZipFile(os.path.join(out, 'other.zip'), 'w') as z:
    z.writestr('config.json', '{}')
    z.writestr('notes.txt', 'hello')

report = {'files': {}}


def save(fname, n, value):
    d = os.path.join(out, 'expect', fname)
    os.makedirs(d, exist_ok=True)
    value = np.ascontiguousarray(value)
    with open(os.path.join(d, f'{n}.bin'), 'wb') as f:
        f.write(value.tobytes())
    return {'shape': list(value.shape), 'dtype': 'bfloat16' if value.dtype.name == 'bfloat16' else value.dtype.str, 'bin': f'{n}.bin'}


def weights_h5(fname, h5file):
    # Every dataset as Keras's own store reads it, in h5py's order.
    store = saving_lib.H5IOStore(h5file, mode='r')
    paths, layers = [], {}
    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            paths.append(name)
        elif name.split('/')[-1] == 'vars' and 'name' in obj.attrs:
            layers[name] = obj.attrs['name']
    store.h5_file.visititems(visit)
    tensors = []
    for i, p in enumerate(paths):
        group, key = p.rsplit('/vars/', 1) if '/vars/' in p else ('', p.split('/')[-1])
        value = store.get(group)[key]
        tensors.append({'name': p, **save(fname, i, value)})
    store.close()
    return {'tensors': tensors, 'layers': layers}


report['files']['model.weights.h5'] = weights_h5('model.weights.h5', os.path.join(out, 'model.weights.h5'))
with zipfile.ZipFile(os.path.join(out, 'model.keras')) as z:
    z.extract('model.weights.h5', os.path.join(out, 'inner'))
    entry = weights_h5('model.keras', os.path.join(out, 'inner', 'model.weights.h5'))
    entry['config'] = json.loads(z.read('config.json'))
    entry['metadata'] = json.loads(z.read('metadata.json'))
    entry['stored'] = z.getinfo('model.weights.h5').compress_type == zipfile.ZIP_STORED
    report['files']['model.keras'] = entry

# h5py reads a legacy file's bfloat16 weights as opaque 2-byte values (|V2). Keras 3 writes them so
# and then cannot load its own file (its bug: "Invalid dtype: void16", checked here so that a Keras
# that mends it is noticed); npyts reads them as the bfloat16 the layer's dtype policy names. The
# truth is the saved model's own bfloat16 variables, compared here byte for byte.
try:
    keras.saving.load_model(os.path.join(out, 'legacy.h5'))
    keras_reads_legacy_bfloat16 = True
except ValueError as e:
    assert 'void16' in str(e), e
    keras_reads_legacy_bfloat16 = False
with h5py.File(os.path.join(out, 'legacy.h5'), 'r') as f:
    g = f['model_weights']
    tensors, layers = [], {}
    for layer in g.attrs['layer_names']:
        layer = layer.decode() if isinstance(layer, bytes) else layer
        layers['model_weights/' + layer] = layer
        for i, w in enumerate(g[layer].attrs['weight_names']):
            w = w.decode() if isinstance(w, bytes) else w
            value = g[layer][w][()]
            if value.dtype.kind == 'V':
                kept = keras.ops.convert_to_numpy(model.get_layer(layer).weights[i].value)
                assert kept.dtype.name == 'bfloat16', kept.dtype
                value = value.view(kept.dtype)
                assert value.tobytes() == kept.tobytes(), (layer, w)
            tensors.append({'name': f'model_weights/{layer}/{w}', **save('legacy.h5', len(tensors), value)})
    report['files']['legacy.h5'] = {
        'kerasReadsBfloat16': keras_reads_legacy_bfloat16,
        'tensors': tensors,
        'layers': layers,
        'config': json.loads(f.attrs['model_config']),
        'keras_version': f.attrs['keras_version'],
        'backend': f.attrs['backend'],
    }

# What Keras makes of its own npz weights.
try:
    keras.saving.load_model(os.path.join(out, 'npz.keras'))
    report['npz_loads'] = True
except ValueError as e:
    report['npz_loads'] = str(e)

json.dump(report, sys.stdout)

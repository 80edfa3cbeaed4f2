"""Inputs of bench/tfjs-large.mjs: `KERAS_BACKEND=torch python3 tfjs_large_side.py DIR MB` writes a Keras 3
Sequential of Dense(WIDTH, relu) layers named d0, d1, … (about MB megabytes of float32 weights) as
DIR/big.keras (keras's own writer), its weights under tfjs's names (`d0/kernel`, `d0/bias`) as
DIR/big.safetensors (safetensors) and DIR/big.npz (np.savez, stored), an input x.npy and Keras's output
for it (want.npy). Prints what it made as JSON."""
import json, os, sys
import numpy as np, keras, safetensors.numpy

d, mb = sys.argv[1], int(sys.argv[2])
os.makedirs(d, exist_ok=True)
width = 2048 if mb < 200 else 4096
layers = max(1, round(mb * 1e6 / (width * width * 4)))
keras.utils.set_random_seed(57)
model = keras.Sequential([keras.Input((width,))] + [keras.layers.Dense(width, activation='relu', name=f'd{i}') for i in range(layers)])
rng = np.random.default_rng(57)
weights = {}
for layer in model.layers:
    kernel, bias = layer.get_weights()
    bias = rng.uniform(-0.1, 0.1, bias.shape).astype('float32')
    layer.set_weights([kernel, bias])
    weights[f'{layer.name}/kernel'], weights[f'{layer.name}/bias'] = kernel, bias
model.save(f'{d}/big.keras')
safetensors.numpy.save_file(weights, f'{d}/big.safetensors')
np.savez(f'{d}/big.npz', **weights)
x = rng.standard_normal((2, width)).astype('float32')
np.save(f'{d}/x.npy', x)
np.save(f'{d}/want.npy', np.asarray(model.predict(x, verbose=0)))
print(json.dumps({'layers': layers, 'width': width, 'bytes': os.path.getsize(f'{d}/big.safetensors')}))

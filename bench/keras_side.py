# Keras's side of bench/keras-models.mjs (KERAS_BACKEND=torch):
#   make DIR    writes DIR/resnet50.keras (keras.applications.ResNet50(weights=None), BatchNorm statistics not 0 and 1)
#   load FILE   keras.saving.load_model(FILE) once; prints {"seconds": …}, the clock around the load alone
import json, os, sys, time

os.environ.setdefault('KERAS_BACKEND', 'torch')
import keras  # noqa: E402
import numpy as np  # noqa: E402

if sys.argv[1] == 'make':
    out = sys.argv[2]
    model = keras.applications.ResNet50(weights=None)
    rng = np.random.default_rng(0)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            layer.moving_mean.assign(rng.standard_normal(layer.moving_mean.shape).astype('float32') * 0.1)
            layer.moving_variance.assign(rng.uniform(0.5, 1.5, layer.moving_variance.shape).astype('float32'))
    keras.saving.save_model(model, os.path.join(out, 'resnet50.keras'))
    print(json.dumps({'parameters': int(model.count_params())}))
elif sys.argv[1] == 'load':
    t = time.perf_counter()
    model = keras.saving.load_model(sys.argv[2])
    seconds = time.perf_counter() - t
    print(json.dumps({'seconds': seconds, 'parameters': int(model.count_params())}))

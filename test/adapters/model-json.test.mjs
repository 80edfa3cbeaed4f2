// model.json members that are not what tfjs reads (issue 26): not UTF-8, weightSpecs of the wrong type,
// null entries, entries without names, a shape that is not a list, a topology nested 100 000 deep.
// Each is one NpyError (BAD_MODEL) naming the member and the field, before tfjs sees anything.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import * as tfl from '@tensorflow/tfjs-layers';
import { npzHandler } from '@npyts/tfjs';
import { NpyError } from '@npyts/core';
import { python, scratch } from '../helpers/numpy.mjs';
import { useCpuBackend } from '../helpers/tfjs.mjs';

await useCpuBackend();
const dir = scratch('npyts-model-json-');

/** An archive with a weight `dense/kernel` and `member` as its model.json (Python bytes literal). */
function archiveWith(name, member) {
  const file = join(dir, `${name}.npz`);
  python(`import zipfile
buf = io.BytesIO(); np.save(buf, np.ones((2, 3), dtype='<f4'))
with zipfile.ZipFile(${JSON.stringify(file)}, 'w') as z:
    z.writestr('dense/kernel.npy', buf.getvalue())
    z.writestr('model.json', ${member})`);
  return file;
}

const topology =
  "{'class_name': 'Sequential', 'config': {'name': 's', 'layers': [{'class_name': 'Dense', 'config': {'name': 'dense', 'units': 3, 'use_bias': False, 'batch_input_shape': [None, 2]}}]}}";
const cases = {
  'not UTF-8': ["b'\\xff\\xfe{}'", /not UTF-8/],
  'weightSpecs not a list': [`json.dumps({'modelTopology': ${topology}, 'weightSpecs': 7}).encode()`, /weightSpecs is not a list/],
  'a null entry': [`json.dumps({'modelTopology': ${topology}, 'weightSpecs': [None]}).encode()`, /weightSpecs\[0\] is not an object/],
  'an entry without a name': [
    `json.dumps({'modelTopology': ${topology}, 'weightSpecs': [{'shape': [2, 3], 'dtype': 'float32'}]}).encode()`,
    /weightSpecs\[0\] has no name/,
  ],
  'a shape that is not a list': [
    `json.dumps({'modelTopology': ${topology}, 'weightSpecs': [{'name': 'dense/kernel', 'shape': '2,3', 'dtype': 'float32'}]}).encode()`,
    /shape is not a list/,
  ],
  'an unknown dtype': [
    `json.dumps({'modelTopology': ${topology}, 'weightSpecs': [{'name': 'dense/kernel', 'shape': [2, 3], 'dtype': 'float64'}]}).encode()`,
    /dtype "float64"/,
  ],
  'a topology that is a list': ["json.dumps({'modelTopology': [1, 2]}).encode()", /modelTopology is not an object/],
  'nested 100 000 deep': ["(b'{\"modelTopology\": {\"a\": ' + b'[' * 100000 + b']' * 100000 + b'}}')", /nests deeper than/],
};

test('a malformed model.json is one NpyError (BAD_MODEL) naming the member and the field', async () => {
  for (const [name, [member, pattern]] of Object.entries(cases)) {
    const file = archiveWith(name.replace(/\W+/g, '-'), member);
    let error = null;
    try {
      await tfl.loadLayersModel(npzHandler(file));
    } catch (e) {
      error = e;
    }
    assert.instance(error, NpyError, `${name}: ${error?.stack ?? error}`);
    assert.is(error.code, 'BAD_MODEL', `${name}: ${error.message}`);
    assert.match(error.message, /model\.json/, name);
    assert.match(error.message, pattern, `${name}: ${error.message}`);
  }
  // The same archive with a good document loads.
  const good = archiveWith(
    'good',
    `json.dumps({'modelTopology': ${topology}, 'weightSpecs': [{'name': 'dense/kernel', 'shape': [2, 3], 'dtype': 'float32'}]}).encode()`,
  );
  const model = await tfl.loadLayersModel(npzHandler(good));
  assert.is(model.layers[0].getWeights()[0].shape.join(), '2,3');
});

test.run();

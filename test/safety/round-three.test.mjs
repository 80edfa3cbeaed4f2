// The third adversarial trial's findings (issue 39), each as the case that was wrong: a write option
// refused before any file is touched, values that wrapped, plumbing that looped, a zip count that wrapped.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { startViewer } from '../../viewer/serve.mjs';
import { join } from 'node:path';
import { NpyError, arrayFromValues, encodeNpz } from '@npyts/core';
import * as tfl from '@tensorflow/tfjs-layers';
import { assignWeights, checkModel, npzHandler } from '@npyts/tfjs';
import { useCpuBackend } from '../helpers/tfjs.mjs';
import { createNpy, createNpySync, loadNpySync, loadNpzSync, openNpz, saveNpy, saveNpySync, saveNpz, saveNpzSync } from '@npyts/core/node';
import { decodeNpz } from '@npyts/core';
import { boundedChild, cliBin, python, runCli, scratch } from '../helpers/numpy.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';
import { spawn, spawnSync } from 'node:child_process';

await useCpuBackend();
const dir = scratch('npyts-round-three-');
const at = (name) => join(dir, name);

const array = { data: new Float32Array([1, 2, 3]) };
/** Every writer, given options: each must refuse a bad one and leave the good file there as it was. */
const writers = {
  saveNpySync: (path, o) => saveNpySync(path, array, o),
  saveNpy: (path, o) => saveNpy(path, array, o),
  saveNpzSync: (path, o) => saveNpzSync(path, { a: array }, o),
  saveNpz: (path, o) => saveNpz(path, { a: array }, o),
  createNpySync: (path, o) => createNpySync(path, { dtype: '<f4', shape: [3], ...o }).close(),
  createNpy: async (path, o) => (await createNpy(path, { dtype: '<f4', shape: [3], ...o })).close(),
};
const badOptions = [{ version: 4 }, { version: 7 }, { version: 255 }, { version: -1 }, { version: 0 }, { version: '1' }];
const badNpzOptions = [{ level: 10 }, { level: -2 }, { level: 1.5 }, { date: new Date(Number.NaN) }, { compress: 'yes' }];

test('every writer refuses a bad option (version 4, 7, 255, -1; a zlib level or date that is not one) before it touches the file: the good file stays, numpy still reads it, no temporary file is left', async () => {
  for (const [name, write] of Object.entries(writers)) {
    const npz = name.includes('Npz');
    const path = at(`good-${name}.${npz ? 'npz' : 'npy'}`);
    python(npz ? `np.savez(${JSON.stringify(path)}, a=np.arange(4.0))` : `np.save(${JSON.stringify(path)}, np.arange(4.0))`);
    const before = readFileSync(path);
    for (const options of npz ? [...badOptions, ...badNpzOptions] : badOptions) {
      const e = await npyErrorOf(() => write(path, options));
      assert.is(e.code, 'BAD_OPTION', `${name} ${JSON.stringify(options)}: ${e.message}`);
      assert.ok(readFileSync(path).equals(before), `${name} ${JSON.stringify(options)} changed the file`);
    }
    const loaded = python(`print(np.load(${JSON.stringify(path)})${npz ? "['a']" : ''}.tolist())`).trim();
    assert.is(loaded, '[0.0, 1.0, 2.0, 3.0]');
  }
  assert.equal(
    readdirSync(dir).filter((f) => !f.startsWith('good-')),
    [],
  );
});

test('NdArray.set on datetime64/timedelta64 refuses a count past int64 (2**63 was stored as NaT, 1e300 as the epoch); -2**63 is NaT as numpy writes it', async () => {
  for (const descr of ['<M8[s]', '>m8[ns]']) {
    const a = arrayFromValues([0n, 1n], descr);
    for (const v of [2n ** 63n, -(2n ** 63n) - 1n, 1e300, -1e300]) {
      const e = await npyErrorOf(() => a.set([0], v));
      assert.is(e.code, 'BAD_VALUE', `${descr} ${v}: ${e.message}`);
      assert.is(a.get(0), 0n, `${descr} ${v} changed the element`);
    }
    a.set([1], 2n ** 63n - 1n);
    a.set([0], -(2n ** 63n));
    const path = at(`t-${descr.replace(/\W/g, '')}.npy`);
    saveNpySync(path, a);
    assert.is(python(`a = np.load(${JSON.stringify(path)}); print(bool(np.isnat(a[0])), int(a[1].astype('i8')))`).trim(), `True ${2n ** 63n - 1n}`);
  }
});

test("a record's field is looked up among the value's own properties: a bool field named toString, hasOwnProperty, __proto__ or constructor is refused when the value lacks it, not set from Object.prototype", async () => {
  for (const name of ['toString', 'hasOwnProperty', '__proto__', 'constructor', 'valueOf']) {
    const dtype = [
      [name, '|b1'],
      ['x', '<i4'],
    ];
    const a = arrayFromValues([JSON.parse(`{"${name}": false, "x": 1}`)], dtype);
    const e = await npyErrorOf(() => a.set([0], { x: 2 }));
    assert.is(e.code, 'BAD_VALUE', `${name}: ${e.message}`);
    assert.is(e.field, name);
    const read = a.get(0);
    assert.is(Object.getOwnPropertyDescriptor(read, name)?.value, false, name);
    assert.is(read.x, 1);
    // An own property of that name is used (JSON.parse makes __proto__ an own property).
    a.set([0], JSON.parse(`{"${name}": true, "x": 3}`));
    const path = at(`rec-${name}.npy`);
    saveNpySync(path, a);
    assert.is(python(`a = np.load(${JSON.stringify(path)}); print(bool(a[0][${JSON.stringify(name)}]), int(a[0]['x']))`).trim(), 'True 3', name);
  }
});

test("an archive of 70 000 members whose end record's 16-bit count wrapped to 4 464 (no zip64 record) lists all 70 000, as numpy does", async () => {
  const path = at('wrapped.npz');
  const listed = JSON.parse(
    python(`
import zipfile, struct
np.savez(${JSON.stringify(path)}, **{f'm{i}': np.array([i], '<i4') for i in range(70000)})
b = open(${JSON.stringify(path)}, 'rb').read()
# Drop the zip64 end record and its locator; write a plain end record whose count wrapped.
eocd = b.rfind(b'PK\x05\x06'); z64 = b.rfind(b'PK\x06\x06', 0, eocd)
cd_size, cd_offset = struct.unpack('<QQ', b[z64 + 40:z64 + 56])
end = struct.pack('<IHHHHIIH', 0x06054b50, 0, 0, 70000 & 0xffff, 70000 & 0xffff, cd_size, cd_offset, 0)
open(${JSON.stringify(path)}, 'wb').write(b[:z64] + end)
z = np.load(${JSON.stringify(path)})
print(json.dumps([len(z.files), int(z['m69999'][0]), int(z['m4464'][0])]))`),
  );
  assert.equal(listed, [70000, 69999, 4464]);
  const archive = await openNpz(path);
  try {
    assert.is(archive.names.length, 70000);
    assert.is((await archive.get('m69999')).get(0), 69999);
  } finally {
    await archive.close();
  }
  const bytes = readFileSync(path);
  assert.is(decodeNpz(bytes).names.length, 70000);
  assert.is(loadNpzSync(path).size, 70000);
});

test('npyts info/show/convert - read standard input only as far as what it is: /dev/zero is refused at once, a .npy stops at its declared data, a header claiming 4 GiB is refused', () => {
  for (const command of [
    ['info', '-'],
    ['show', '-'],
    ['convert', '-', at('out.npy')],
  ]) {
    const r = spawnSync('sh', ['-c', `head -c 400000000 /dev/zero | timeout 20 ${process.execPath} ${cliBin} ${command.join(' ')}`], { encoding: 'utf8' });
    assert.is(r.status, 1, `${command.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /^npyts: error: <stdin>: .*neither a \.npy/);
    assert.is(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
  // A .npy followed by an endless stream: numpy reads exactly the data its header declares, and so does npyts.
  const small = at('small.npy');
  python(`np.save(${JSON.stringify(small)}, np.arange(6, dtype='>i2').reshape(2, 3))`);
  const r = spawnSync('sh', ['-c', `cat ${small} /dev/zero | timeout 20 ${process.execPath} ${cliBin} show -`], { encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  const repr = python(`print(repr(np.load(${JSON.stringify(small)})))`).trim();
  assert.ok(r.stdout.trim().endsWith(repr), `${r.stdout} is not numpy's ${repr}`);
  // A version 2.0 header that claims 4 GiB of header text, followed by zeros, is refused.
  const claim = spawnSync(
    'sh',
    ['-c', `(printf '\\223NUMPY\\002\\000\\377\\377\\377\\377'; head -c 400000000 /dev/zero) | timeout 20 ${process.execPath} ${cliBin} info -`],
    { encoding: 'utf8' },
  );
  assert.is(claim.status, 1, claim.stderr);
  assert.match(claim.stderr, /^npyts: error: <stdin>: /);
});

/** A dense layer's PyTorch parameters, each element distinct so that a swap shows. */
const linear = (seed) => ({
  weight: { data: Float32Array.from({ length: 9 }, (_, i) => seed + i / 10), shape: [3, 3] },
  bias: { data: Float32Array.from({ length: 3 }, (_, i) => -seed - i / 10), shape: [3] },
});
const stateDict = (...modules) =>
  Object.fromEntries(
    modules.flatMap(([name, m]) => [
      [`${name}.weight`, m.weight],
      [`${name}.bias`, m.bias],
    ]),
  );
const twoDense = (first, second) => {
  const input = tfl.input({ shape: [3] });
  const out = tfl.layers.dense({ units: 3, name: second }).apply(tfl.layers.dense({ units: 3, name: first }).apply(input));
  return tfl.model({ inputs: input, outputs: out });
};
const kernelOf = (model, layer) => Array.from(model.getLayer(layer).getWeights()[0].dataSync());
/** PyTorch's weight (out, in) as tfjs's kernel (in, out), flat. */
const asKernel = (w) => Array.from({ length: 9 }, (_, k) => w.data[(k % 3) * 3 + Math.floor(k / 3)]);

test("a tfjs layer named exactly after a module takes that module, not another whose dots read as '_' (modules fc.1 and fc_1, layers a and fc_1); a name two modules normalise to is refused naming both", async () => {
  const fc1dot = linear(1);
  const fc1 = linear(5);
  const archive = encodeNpz(stateDict(['fc.1', fc1dot], ['fc_1', fc1]));
  const model = twoDense('a', 'fc_1');
  await assignWeights(model, archive, { layout: 'pytorch' });
  assert.equal(kernelOf(model, 'fc_1'), asKernel(fc1.weight));
  assert.equal(kernelOf(model, 'a'), asKernel(fc1dot.weight));
  // npzHandler pairs the same way.
  const loaded = await tfl.loadLayersModel(npzHandler(archive, { layout: 'pytorch', modelTopology: twoDense('a', 'fc_1') }));
  assert.equal(kernelOf(loaded, 'fc_1'), asKernel(fc1.weight));
  // 'a.b_c' and 'a_b.c' both read as 'a_b_c': neither is the layer's module by name.
  const e = await npyErrorOf(() =>
    assignWeights(twoDense('a_b_c', 'z'), encodeNpz(stateDict(['a.b_c', linear(1)], ['a_b.c', linear(2)])), { layout: 'pytorch' }),
  );
  assert.is(e.code, 'NAME_CLASH');
  assert.match(e.message, /'a\.b_c' or 'a_b\.c'/);
});

test("an archive holding both 'fc2.weight' and 'fc2.weight.npy' is refused (one key, two members), and the model is left as it was", async () => {
  const arrays = stateDict(['fc1', linear(1)], ['fc2', linear(2)]);
  const other = linear(9).weight;
  const withBoth = encodeNpz(arrays, { files: { 'fc2.weight': encodeNpz({ x: other }) } });
  const model = twoDense('fc1', 'fc2');
  const before = kernelOf(model, 'fc1');
  for (const run of [
    () => assignWeights(model, withBoth, { layout: 'pytorch' }),
    () => tfl.loadLayersModel(npzHandler(withBoth, { layout: 'pytorch', modelTopology: twoDense('fc1', 'fc2') })),
  ]) {
    const e = await npyErrorOf(run);
    assert.is(e.code, 'NAME_CLASH', e.message);
    assert.match(e.message, /'fc2\.weight' and 'fc2\.weight\.npy'/);
  }
  assert.equal(kernelOf(model, 'fc1'), before);
});

/** A model that gives its input back (a linear activation): its output is exactly its input. */
const identity = () => tfl.sequential({ layers: [tfl.layers.activation({ activation: 'linear', inputShape: [3] })] });
const checkArchive = (input, output) =>
  encodeNpz({
    'check/input': { data: Float32Array.from(input.flat()), shape: [input.length, 3] },
    'check/output': { data: Float32Array.from(output.flat()), shape: [output.length, 3] },
  });

test('the check compares finite values on a finite scale: one inf no longer accepts anything, all-NaN proves nothing, a NaN matched where the reference has NaN is accepted', async () => {
  // One inf in the reference made atol infinite: a wrong output passed.
  let e = await npyErrorOf(() => checkModel(identity(), checkArchive([[Infinity, 1, 2]], [[Infinity, 1.5, 2]])));
  assert.is(e.code, 'CHECK_FAILED');
  assert.match(e.message, /at \[0,1\]/);
  // An infinity of the other sign, or a number where the reference has inf or NaN, is a difference.
  for (const [x, ref] of [
    [
      [-Infinity, 1, 2],
      [Infinity, 1, 2],
    ],
    [
      [5, 1, 2],
      [Number.NaN, 1, 2],
    ],
    [
      [Number.NaN, 1, 2],
      [5, 1, 2],
    ],
  ]) {
    e = await npyErrorOf(() => checkModel(identity(), checkArchive([x], [ref])));
    assert.is(e.code, 'CHECK_FAILED', `${x} vs ${ref}`);
  }
  // All NaN in and out: nothing finite was compared, so nothing is proved.
  e = await npyErrorOf(() => checkModel(identity(), checkArchive([[Number.NaN, Number.NaN, Number.NaN]], [[Number.NaN, Number.NaN, Number.NaN]])));
  assert.is(e.code, 'CHECK_FAILED');
  assert.match(e.message, /no finite value/);
  // A NaN column made atol NaN and refused a correct model.
  const r = await checkModel(
    identity(),
    checkArchive(
      [
        [Number.NaN, 1, 2],
        [Number.NaN, 3, -Infinity],
      ],
      [
        [Number.NaN, 1, 2],
        [Number.NaN, 3, -Infinity],
      ],
    ),
  );
  assert.is(r.compared, 3);
  assert.is(r.maxAbsDiff, 0);
});

test('check/input with an empty batch or of text or complex dtype is refused with an NpyError, not tfjs own error', async () => {
  const output = { data: new Float32Array(3), shape: [1, 3] };
  for (const [input, code] of [
    [{ data: new Float32Array(0), shape: [0, 3] }, 'NPZ_KEY'],
    [arrayFromValues([['a', 'b', 'c']], '<U1'), 'DTYPE_MISMATCH'],
    [
      arrayFromValues(
        [
          [
            { re: 1, im: 0 },
            { re: 1, im: 0 },
            { re: 1, im: 0 },
          ],
        ],
        '<c8',
      ),
      'DTYPE_MISMATCH',
    ],
  ]) {
    const e = await npyErrorOf(() => checkModel(identity(), encodeNpz({ 'check/input': input, 'check/output': output })));
    assert.is(e.code, code, e.message);
    assert.match(e.message, /check\/input/);
  }
});

test('the viewer never serves a file outside its folder while a link inside is swapped to an outside folder in a loop (it checks what it opened)', async () => {
  const data = at('served');
  const outside = at('outside');
  mkdirSync(join(data, 'd'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(data, 'd', 'secret.txt'), 'inside');
  writeFileSync(join(outside, 'secret.txt'), 'OUTSIDE');
  symlinkSync(outside, join(data, 'link'));
  // Swap the folder data/d for a link to the outside folder and back, as fast as renames go: a server
  // that resolves the path, checks it, then opens it by name again can open through the link.
  const swapper = spawn('python3', [
    '-c',
    `import os, time
d, stash, link = ${JSON.stringify(join(data, 'd'))}, ${JSON.stringify(join(data, 'stash'))}, ${JSON.stringify(join(data, 'link'))}
end = time.time() + 60
while time.time() < end:
    os.rename(d, stash); os.rename(link, d)
    os.rename(d, link); os.rename(stash, d)`,
  ]);
  const server = await startViewer({ port: 0, dataDir: data });
  const url = `http://127.0.0.1:${server.address().port}/data/d/secret.txt`;
  const answers = { inside: 0, refused: 0, OUTSIDE: 0 };
  try {
    for (let i = 0; i < 1500; i++) {
      const r = await fetch(url);
      const body = await r.text();
      if (r.status === 200) answers[body] = (answers[body] ?? 0) + 1;
      else answers.refused++;
    }
  } finally {
    swapper.kill();
    server.close();
  }
  assert.is(answers.OUTSIDE, 0, JSON.stringify(answers));
  assert.ok(answers.inside > 0 && answers.refused > 0, `the swap was not exercised: ${JSON.stringify(answers)}`);
});

test('the viewer closes the file of every client that goes away mid-download (300 of them), and keeps serving', async () => {
  const data = at('served-big');
  mkdirSync(data);
  writeFileSync(join(data, 'big.bin'), new Uint8Array(16 << 20));
  const server = await startViewer({ port: 0, dataDir: data });
  const { port } = server.address();
  const open = () => readdirSync('/proc/self/fd').length;
  try {
    const before = open();
    for (let i = 0; i < 300; i++) {
      await new Promise((resolve) => {
        const req = get({ host: '127.0.0.1', port, path: '/data/big.bin' }, (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        });
        req.on('error', resolve);
      });
    }
    // Give the server a moment to see the closed connections.
    let after = open();
    for (let wait = 0; wait < 50 && after > before + 5; wait++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      after = open();
    }
    assert.ok(after <= before + 5, `${after - before} descriptors more than before 300 aborted downloads`);
    assert.is((await fetch(`http://127.0.0.1:${port}/data/big.bin`, { headers: { range: 'bytes=0-9' } })).status, 206);
  } finally {
    server.close();
  }
});

test("object arrays written back: holes are None, a lone surrogate is kept (surrogatepass, as Python's pickle), dicts keyed by tuples and sets of tuples load in numpy as they were written", () => {
  const from = at('objects-in.npy');
  python(`a = np.empty(4, object); a[0] = {(1, 2): 'a', ((3, 4), 5): 'b'}; a[1] = {(1, 2), (3, (4, 5))}; a[2] = '\\ud800x\\udfff'; a[3] = [1, None, 3]
np.save(${JSON.stringify(from)}, a, allow_pickle=True)`);
  const a = loadNpySync(from, { allowPickle: true });
  const back = at('objects-back.npy');
  saveNpySync(back, a);
  assert.is(
    python(
      `a = np.load(${JSON.stringify(from)}, allow_pickle=True); b = np.load(${JSON.stringify(back)}, allow_pickle=True); print(all(x == y for x, y in zip(a, b)), type(b[1]).__name__)`,
    ).trim(),
    'True set',
  );
  const holes = at('holes.npy');
  // biome-ignore lint/suspicious/noSparseArray: the hole is the case
  saveNpySync(holes, { data: [[1, , 3], '\ud800'], dtype: '|O' });
  assert.is(python(`b = np.load(${JSON.stringify(holes)}, allow_pickle=True); print(b[0] == [1, None, 3], b[1] == '\\ud800')`).trim(), 'True True');
});

test('a list nested 20 000 deep is refused with an NpyError, not a stack overflow; diff --allow-pickle of two equal cyclic object arrays says they are equal', async () => {
  let deep = [];
  for (let i = 0; i < 20000; i++) deep = [deep];
  const e = await npyErrorOf(() => saveNpySync(at('deep.npy'), { data: [deep], dtype: '|O' }));
  assert.match(e.message, /nested deeper than 1000/);
  const [x, y] = [at('cyclic-a.npy'), at('cyclic-b.npy')];
  python(`
for path in (${JSON.stringify(x)}, ${JSON.stringify(y)}):
    l = [1]; l.append(l); d = {'k': 2}; d['self'] = d
    a = np.empty(2, object); a[0] = l; a[1] = d
    np.save(path, a, allow_pickle=True)`);
  const r = await runCli(['diff', '--allow-pickle', x, y]);
  assert.is(r.code, 0, r.stdout + r.stderr);
});

test("pickled integers of eight million digits (INT, LONG) are refused as Python refuses them, without making their text: the peak stays near an idle process's; a V0 inner array claiming 2**80 elements is refused, as numpy does", () => {
  const digits = '7'.repeat(8_000_000);
  // PROTO 2, then INT or LONG with the digits and a newline, then STOP.
  for (const [name, op, tail] of [
    ['int', 'I', ''],
    ['long', 'L', 'L'],
  ]) {
    writeFileSync(at(`${name}.pkl`), Buffer.concat([Buffer.from([0x80, 2]), Buffer.from(`${op}${digits}${tail}\n.`, 'latin1')]));
  }
  const r = boundedChild(
    dir,
    `import { unpickle } from '@npyts/core/pickle';
import { readFileSync } from 'node:fs';
const codes = [];
for (const name of ['int', 'long']) { try { unpickle(readFileSync(name + '.pkl')); codes.push('none'); } catch (e) { codes.push(e.code); } }
globalThis.result = { codes };`,
  );
  assert.equal(r.codes, ['TOO_LARGE', 'TOO_LARGE']);
  assert.ok(r.rssMiB < 150, `peak ${r.rssMiB.toFixed(0)} MiB to refuse 8 MB of digits`);
  // numpy and npyts both refuse an inner V0 array of (2**40, 2**40).
  const big = at('v0-big.npy');
  python(`import pickle, struct
a = np.zeros((3, 5), 'V0'); o = np.empty(1, object); o[0] = a
np.save(${JSON.stringify(big)}, o, allow_pickle=True)
raw = open(${JSON.stringify(big)}, 'rb').read(); n = b'\\x8a\\x08' + struct.pack('<q', 2**40)
open(${JSON.stringify(big)}, 'wb').write(raw.replace(b'K\\x03K\\x05\\x86', n + n + b'\\x86'))`);
  assert.is(python(`try:\n    np.load(${JSON.stringify(big)}, allow_pickle=True); print('read')\nexcept Exception as e: print('refused')`).trim(), 'refused');
  assert.throws(
    () => loadNpySync(big, { allowPickle: true }),
    (e) => e instanceof NpyError,
  );
});

test("ignoreUnused allows a state_dict's extra module (aux.fc) when every layer paired by name; float64: 'refuse' refuses an LSTM's float64 biases, which are summed into one", async () => {
  const withAux = encodeNpz(stateDict(['fc1', linear(1)], ['fc2', linear(2)], ['aux.fc', linear(3)]));
  const e = await npyErrorOf(() => assignWeights(twoDense('fc1', 'fc2'), withAux, { layout: 'pytorch' }));
  assert.is(e.code, 'WEIGHT_MISMATCH');
  const model = twoDense('fc1', 'fc2');
  await assignWeights(model, withAux, { layout: 'pytorch', ignoreUnused: true });
  assert.equal(kernelOf(model, 'fc2'), asKernel(linear(2).weight));

  const floats = (n, seed, Ctor = Float32Array) => Ctor.from({ length: n }, (_, i) => Math.fround((seed + i) / 16));
  const lstm = () => {
    const input = tfl.input({ shape: [4, 3] });
    const out = tfl.layers.lstm({ units: 2, name: 'rnn', recurrentInitializer: 'zeros', recurrentActivation: 'sigmoid' }).apply(input);
    return tfl.model({ inputs: input, outputs: out });
  };
  const archive = encodeNpz({
    'rnn.weight_ih_l0': { data: floats(24, 1), shape: [8, 3] },
    'rnn.weight_hh_l0': { data: floats(16, 2), shape: [8, 2] },
    'rnn.bias_ih_l0': { data: floats(8, 3, Float64Array), shape: [8] },
    'rnn.bias_hh_l0': { data: floats(8, 4, Float64Array), shape: [8] },
  });
  const m = lstm();
  const before = m.getWeights().map((w) => Array.from(w.dataSync()));
  const refusal = await npyErrorOf(() => assignWeights(m, archive, { layout: 'pytorch', float64: 'refuse' }));
  assert.match(refusal.message, /float64 would be rounded to float32 for tfjs; refused by \{ float64: 'refuse' \}/);
  assert.equal(
    m.getWeights().map((w) => Array.from(w.dataSync())),
    before,
  );
  await assignWeights(lstm(), archive, { layout: 'pytorch' }); // converted by default
});

test('loadNpz (async) of 20 000 one-byte members holds a few read windows at a time: its peak is near the blocking load, and both equal numpy', () => {
  const path = at('many.npz');
  python(`np.savez(${JSON.stringify(path)}, **{f'm{i}': np.array([i % 256], '|u1') for i in range(20000)})`);
  const peaks = {};
  for (const call of ['loadNpz', 'loadNpzSync']) {
    const r = boundedChild(
      dir,
      `import { ${call} } from '@npyts/core/node';
const m = await ${call}(${JSON.stringify(path)});
let sum = 0; for (const a of m.values()) sum += a.data[0];
globalThis.result = { size: m.size, sum };`,
    );
    assert.equal([r.size, r.sum], [20000, Array.from({ length: 20000 }, (_, i) => i % 256).reduce((x, y) => x + y)]);
    peaks[call] = r.rssMiB;
  }
  assert.ok(peaks.loadNpz < peaks.loadNpzSync * 1.5 + 64, `async ${peaks.loadNpz.toFixed(0)} MiB, blocking ${peaks.loadNpzSync.toFixed(0)} MiB`);
});

test('a 2 MB member that declares 1 GiB but whose header says (10,) float64 gives numpy its 10 values and costs what they cost, by every reader (openNpz, openNpzSync, loadNpzSync, decodeNpz with node:zlib and fflate)', () => {
  const path = at('padded.npz');
  // The member's .npy holds 10 float64s, then a GiB of zeros that numpy never reads.
  python(`import zipfile, io
b = io.BytesIO(); np.save(b, np.arange(10.0))
with zipfile.ZipFile(${JSON.stringify(path)}, 'w', zipfile.ZIP_DEFLATED) as z:
    with z.open('a.npy', 'w', force_zip64=True) as f:
        f.write(b.getvalue())
        zero = bytes(1 << 24)
        for _ in range(64): f.write(zero)
print(np.load(${JSON.stringify(path)})['a'].tolist())`);
  const want = Array.from({ length: 10 }, (_, i) => i);
  for (const how of [
    `const z = await nd.openNpz(path); const a = await z.get('a'); await z.close();`,
    `const a = nd.openNpzSync(path).getSync('a');`,
    `const a = nd.loadNpzSync(path).get('a');`,
    `const a = await core.decodeNpz(fs.readFileSync(path), { codec: nd.zlibCodec }).get('a');`,
    `const a = await core.decodeNpz(fs.readFileSync(path), { codec: core.fflateCodec }).get('a');`,
    `const a = await core.decodeNpz(fs.readFileSync(path)).get('a');`,
  ]) {
    const r = boundedChild(
      dir,
      `import * as nd from '@npyts/core/node';
import * as core from '@npyts/core';
import * as fs from 'node:fs';
const path = ${JSON.stringify(path)};
${how}
globalThis.result = { values: Array.from(a.data) };`,
      { maxOldSpaceMiB: 512 },
    );
    assert.equal(r.values, want, how);
    // The file itself is ~1 MB and is read whole by the decodeNpz cases; a GiB was allocated before.
    assert.ok(r.rssMiB < 250, `${how}: peak ${r.rssMiB.toFixed(0)} MiB`);
  }
});

test.run();

// Header reading: as lenient as numpy where numpy is, and a coded, located error for everything
// numpy refuses, from the API and from the CLI as one line.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeNpy, readHeader, NpyError, arrayToJSON } from '@npyts/core';
import { headerBytesNeeded, parsePyLiteral, reprFloat, reprBytes, reprPy, PyFloat } from '@npyts/core/plumbing';
import { numpy, python, runCli, scratch, spawnCli } from '../helpers/numpy.mjs';
import { cpuMs } from '../helpers/work.mjs';

const dir = scratch();
const { ok, bad } = numpy('headers', dir);

for (const { name, file, doc } of ok) {
  test(`accepts ${name} like numpy`, () => {
    const a = decodeNpy(readFileSync(file));
    assert.equal({ descr: a.dtype.descr, fortran_order: a.order === 'F', shape: a.shape, data: arrayToJSON(a) }, doc);
  });
}

test('numpy accepts every lenient case except the subarray fold it fails on itself', () => {
  assert.equal(
    ok.filter((c) => !c.numpy_loads).map((c) => c.name),
    ['subarray_descr_folded'],
  );
});

const expectedCodes = {
  bad_magic: 'BAD_MAGIC',
  not_npy_at_all: 'BAD_MAGIC',
  truncated_magic: 'TRUNCATED',
  empty: 'TRUNCATED',
  version_4: 'UNSUPPORTED_VERSION',
  version_1_1: 'UNSUPPORTED_VERSION',
  header_past_end: 'TRUNCATED',
  not_a_literal: 'HEADER_SYNTAX',
  not_a_dict: 'HEADER_NOT_DICT',
  missing_key: 'HEADER_KEYS',
  extra_key: 'HEADER_KEYS',
  shape_list: 'BAD_SHAPE',
  shape_negative: 'BAD_SHAPE',
  shape_float: 'BAD_SHAPE',
  fortran_not_bool: 'BAD_FORTRAN_ORDER',
  unknown_descr: 'BAD_DESCR',
  bad_field_entry: 'BAD_DESCR',
  bad_nested_field: 'BAD_DESCR',
  duplicate_field: 'BAD_DESCR',
  data_short: 'DATA_TRUNCATED',
  size_overflow: 'SIZE_OVERFLOW',
  deep_nesting: 'HEADER_SYNTAX',
  long_suffix_v3: 'HEADER_SYNTAX',
  invalid_utf8_v3: 'HEADER_SYNTAX',
  unterminated_string: 'HEADER_SYNTAX',
  object_array: 'PICKLE_UNSUPPORTED',
};

test('every malformed case is covered and numpy refuses each of them too', () => {
  assert.equal(bad.map((c) => c.name).sort(), Object.keys(expectedCodes).sort());
  assert.equal(
    bad.filter((c) => c.numpy_loads).map((c) => c.name),
    [],
  );
});

for (const { name, file } of bad) {
  test(`refuses ${name} with ${expectedCodes[name]}`, () => {
    const bytes = readFileSync(file);
    const t0 = cpuMs();
    let err;
    try {
      decodeNpy(bytes);
    } catch (e) {
      err = e;
    }
    assert.instance(err, NpyError, `${name}: ${err}`);
    assert.is(err.code, expectedCodes[name], err.message);
    assert.ok(err.offset === undefined || (err.offset >= 0 && err.offset <= bytes.length), `${name}: offset ${err.offset}`);
    assert.ok(cpuMs() - t0 < 2000, 'refusal must be fast');
  });
}

test('errors say where: byte offsets and field paths', () => {
  const at = (name) => {
    try {
      decodeNpy(readFileSync(bad.find((c) => c.name === name).file));
    } catch (e) {
      return e;
    }
    return null;
  };
  assert.match(at('bad_magic').message, /at byte 5/);
  assert.match(at('header_past_end').message, /claims 5000 bytes/);
  assert.match(at('data_short').message, /needs 24 bytes .* only 23/);
  assert.match(at('bad_nested_field').message, /in field 'a\.b'/);
  assert.match(at('unknown_descr').message, /'<x4' is not a numpy type string/);
  assert.match(at('missing_key').message, /missing 'fortran_order'/);
  assert.match(at('extra_key').message, /unexpected "x"/);
  assert.match(at('object_array').message, /pickle/);
});

test('readHeader needs only the header bytes', () => {
  const bytes = readFileSync(ok.find((c) => c.name === 'keys_reordered').file);
  const need = headerBytesNeeded(bytes.subarray(0, 12));
  assert.is(need, 128);
  assert.throws(
    () => readHeader(bytes.subarray(0, need - 1)),
    (e) => e.code === 'TRUNCATED',
  );
  const h = readHeader(bytes.subarray(0, need));
  assert.equal(h.shape, [2, 3]);
  assert.is(h.dataOffset, 128);
  assert.is(h.dataBytes, 24);
  assert.is(h.dtype.str, '<f4');
});

test('the literal parser is linear on long flat input and bounded on deep input', () => {
  const flat = `[${'1, '.repeat(200000)}1]`;
  let t0 = cpuMs();
  assert.is(parsePyLiteral(flat).length, 200001);
  assert.ok(cpuMs() - t0 < 1500);
  t0 = cpuMs();
  assert.throws(
    () => parsePyLiteral('('.repeat(1e6)),
    (e) => e.code === 'HEADER_SYNTAX' && /nesting/.test(e.message),
  );
  assert.ok(cpuMs() - t0 < 1500);
});

test('CLI: one line on stderr naming the file, exit 1, for every malformed file', async () => {
  for (const { name, file } of bad) {
    const r = await runCli(['show', file]);
    assert.is(r.code, 1, name);
    const lines = r.stderr.trimEnd().split('\n');
    assert.is(lines.length, 1, `${name}: ${r.stderr}`);
    assert.ok(lines[0].startsWith(`npyts: error: ${file}: `), lines[0]);
    assert.is(r.stdout, '');
  }
});

test('the executable: no stack trace, exit codes 1 and 2, NPYTS_DEBUG shows the trace', () => {
  const file = bad.find((c) => c.name === 'bad_magic').file;
  const r = spawnCli(['info', file]);
  assert.is(r.code, 1);
  assert.is(r.stderr.trim().split('\n').length, 1);
  assert.not.match(r.stderr, /\n\s+at /);
  const usage = spawnCli(['convert', file]);
  assert.is(usage.code, 2);
  assert.match(usage.stderr, /usage error/);
  assert.is(spawnCli(['frobnicate']).code, 2);
  assert.is(spawnCli(['show', '--bogus', file]).code, 2);
  const missing = spawnCli(['show', `${dir}/does-not-exist.npy`]);
  assert.is(missing.code, 1);
  assert.match(missing.stderr, /does-not-exist\.npy: no such file/);
  assert.is(spawnCli(['--help']).code, 0);
});

test("reprFloat and reprBytes are Python's repr of floats and bytes (asked of Python itself)", () => {
  // Floats at every notation boundary and random doubles of every exponent, as their bit patterns.
  const view = new DataView(new ArrayBuffer(8));
  let seed = 7;
  const floats = [
    0,
    -0,
    1,
    -1.5,
    0.1,
    1e-4,
    9.999e-5,
    1e-5,
    1e15,
    9999999999999998,
    1e16,
    1.5e16,
    1e21,
    1e22,
    5e-324,
    1.7976931348623157e308,
    Infinity,
    -Infinity,
    NaN,
    123456.75,
    2 ** 53,
    2 ** 70,
  ];
  for (let i = 0; i < 300; i++) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    view.setUint32(0, seed ^ 0x5bd1e995);
    view.setUint32(4, (seed * 2654435761) >>> 0);
    const x = view.getFloat64(0);
    if (Number.isFinite(x)) floats.push(x);
  }
  const byteCases = [[], [0x61, 0x27], [0x22, 0x27], [0x22], [0x5c, 0x09, 0x0a, 0x0d, 0x00, 0x7f, 0x80, 0xff], [0x20, 0x7e]];
  const want = JSON.parse(
    python(`import struct
floats = [struct.unpack('>d', bytes.fromhex(h))[0] for h in ${JSON.stringify(
      floats.map((x) => {
        view.setFloat64(0, x);
        return view.getBigUint64(0).toString(16).padStart(16, '0');
      }),
    )}]
print(json.dumps({'floats': [repr(x) for x in floats], 'bytes': [repr(bytes(b)) for b in ${JSON.stringify(byteCases)}]}))`),
  );
  assert.equal(floats.map(reprFloat), want.floats);
  assert.equal(
    byteCases.map((b) => reprBytes(new Uint8Array(b))),
    want.bytes,
  );
  assert.is(reprPy([new PyFloat(1e-7), new PyFloat(2)]), '[1e-07, 2.0]');
});

test("headerBytesNeeded gives where numpy's reader finds the data, for versions 1.0, 2.0 and 3.0 (and asks for 12 bytes while fewer are there)", () => {
  const files = Object.fromEntries(['1', '2', '3'].map((v) => [v, join(dir, `version-${v}.npy`)]));
  // Version 2.0 holds a header longer than 65535 bytes (its length needs a third byte); 3.0 a UTF-8 field name.
  const want = JSON.parse(
    python(`
out = {}
for v, a in (('1', np.zeros(3, '<f4')), ('2', np.zeros(2, [('f%d_%s' % (i, 'x' * 40), '<f4') for i in range(2000)])), ('3', np.zeros(2, [('é', '<i2')]))):
    path = ${JSON.stringify(dir)} + '/version-%s.npy' % v
    with open(path, 'wb') as fh:
        np.lib.format.write_array(fh, a, version=(int(v), 0))
    with open(path, 'rb') as fh:
        version = np.lib.format.read_magic(fh)
        # The public readers; 2_0's reads 3.0's length field too (only the text's encoding differs).
        (np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0)(fh, max_header_size=1 << 24)
        out[v] = fh.tell()
print(json.dumps(out))
`),
  );
  assert.ok(want['2'] > 65536, `version 2.0 header: ${want['2']} bytes`);
  for (const [v, file] of Object.entries(files)) {
    const bytes = readFileSync(file);
    assert.is(bytes[6], Number(v));
    assert.is(headerBytesNeeded(bytes.subarray(0, 12)), want[v], `version ${v}.0`);
    assert.is(readHeader(bytes, { maxHeaderBytes: 1 << 24 }).dataOffset, want[v]);
    for (const short of [0, 6, 9]) assert.is(headerBytesNeeded(bytes.subarray(0, short)), 12);
  }
  // Version 1.0 needs only its 10 preamble bytes; later versions need 12.
  assert.is(headerBytesNeeded(readFileSync(files['1']).subarray(0, 10)), want['1']);
  assert.is(headerBytesNeeded(readFileSync(files['2']).subarray(0, 11)), 12);
});

test.run();

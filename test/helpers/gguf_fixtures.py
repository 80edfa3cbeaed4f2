# GGUF fixtures for test/gguf: files written by gguf-py's GGUFWriter, read back by its GGUFReader,
# and each quantized tensor dequantized by gguf.quants.dequantize: the expected values are the
# reference's own, written as raw little-endian bytes beside the files.
#   python3 gguf_fixtures.py DIR   ->  DIR/*.gguf, DIR/expect/<file>/<tensor>.bin, and JSON on stdout
import json, os, sys
import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q, GGUFValueType as V
from gguf.constants import GGML_QUANT_SIZES

out = sys.argv[1]
rng = np.random.default_rng(7)

# Where each block type keeps its float16 scales (byte offsets in a block): random blocks get sane
# scales there (normal and subnormal float16, never NaN or Inf), random bytes everywhere else.
F16_AT = {
    'Q4_0': [0], 'Q4_1': [0, 2], 'Q5_0': [0], 'Q5_1': [0, 2], 'Q8_0': [0],
    'Q2_K': [80, 82], 'Q3_K': [108], 'Q4_K': [0, 2], 'Q5_K': [0, 2], 'Q6_K': [208],
    'IQ2_XXS': [0], 'IQ2_XS': [0], 'IQ2_S': [0], 'IQ3_XXS': [0], 'IQ3_S': [0], 'IQ1_S': [0],
    'IQ4_NL': [0], 'IQ4_XS': [0], 'IQ1_M': [], 'TQ1_0': [52], 'TQ2_0': [64], 'MXFP4': [], 'NVFP4': [],
}
QUANTIZABLE = ['Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'TQ1_0', 'TQ2_0', 'MXFP4']

def sane_f16(n):
    v = rng.standard_normal(n).astype(np.float32) * np.float32(2.0)
    v[rng.random(n) < 0.1] *= np.float32(1e-6)   # some subnormal float16
    return v.astype(np.float16).view(np.uint16)

def random_blocks(name, n_blocks):
    _, size = GGML_QUANT_SIZES[Q[name]]
    b = rng.integers(0, 256, (n_blocks, size), dtype=np.uint8)
    for at in F16_AT[name]:
        b[:, at:at + 2] = sane_f16(n_blocks).reshape(-1, 1).view(np.uint8)
    if name == 'IQ1_M':
        # Its float16 is split across the top nibbles of the last 4 uint16.
        h = sane_f16(n_blocks).astype(np.int32)
        for k in range(4):
            b[:, 49 + 2 * k] = (b[:, 49 + 2 * k] & 0x0F) | (((h >> (4 * k)) & 0xF) << 4).astype(np.uint8)
    return b

report = {'files': {}}

def expect_dir(fname):
    d = os.path.join(out, 'expect', fname)
    os.makedirs(d, exist_ok=True)
    return d

# 1. Every quantized type gguf-py dequantizes: random valid blocks, and values gguf-py quantized.
fname = 'quants.gguf'
w = gguf.GGUFWriter(os.path.join(out, fname), 'test')
expected = {}
for name in F16_AT:
    block, size = GGML_QUANT_SIZES[Q[name]]
    rows, per_row = 3, 2
    raw = random_blocks(name, rows * per_row).reshape(rows, per_row * size)
    w.add_tensor(f'random.{name}', raw, raw_dtype=Q[name])
    expected[f'random.{name}'] = gguf.quants.dequantize(raw, Q[name])
    if name in QUANTIZABLE:
        x = (rng.standard_normal((4, 2, 2 * block)) * 3).astype(np.float32)
        q = gguf.quants.quantize(x, Q[name])
        w.add_tensor(f'quantized.{name}', q, raw_dtype=Q[name])
        expected[f'quantized.{name}'] = gguf.quants.dequantize(q, Q[name])
# A type gguf-py names but does not dequantize: listed, refused when read.
w.add_tensor('unread.Q8_1', rng.integers(0, 256, (1, 40), dtype=np.uint8), raw_dtype=Q.Q8_1)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
d = expect_dir(fname)
for k, v in expected.items():
    assert v.dtype == np.float32
    v.tofile(os.path.join(d, k + '.bin'))

# 2. Unquantized tensors of every type, and metadata of every value type; and the same file
# big-endian (gguf-py's writer swaps every number of it, its reader swaps them back), where a BF16
# and a Q8_0 tensor hold the bytes the writer was given.
plain = {
    'F32': rng.standard_normal((3, 5)).astype(np.float32),
    'F16': rng.standard_normal((2, 3, 4)).astype(np.float16),
    'F64': rng.standard_normal((7,)),
    'I8': rng.integers(-128, 128, (4, 4), dtype=np.int8),
    'I16': rng.integers(-2**15, 2**15, (5,), dtype=np.int16),
    'I32': rng.integers(-2**31, 2**31, (2, 2), dtype=np.int32),
    'I64': np.array([-2**63, 2**63 - 1, 0, 5], dtype=np.int64),
    'empty': np.zeros((0, 4), dtype=np.float32),
}
bf = rng.standard_normal((3, 8)).astype(np.float32)
q8 = rng.standard_normal((2, 64)).astype(np.float32)

def write_plain(fname, endianess):
    w = gguf.GGUFWriter(os.path.join(out, fname), 'test', endianess=endianess)
    w.add_uint8('m.u8', 200); w.add_int8('m.i8', -100); w.add_uint16('m.u16', 60000); w.add_int16('m.i16', -30000)
    w.add_uint32('m.u32', 4000000000); w.add_int32('m.i32', -2000000000); w.add_float32('m.f32', 0.1)
    w.add_uint64('m.u64', 2**63 + 5); w.add_uint64('m.u64small', 2**53 - 1); w.add_int64('m.i64', -2**63); w.add_int64('m.i64small', -7)
    w.add_float64('m.f64', 1 / 3); w.add_bool('m.true', True); w.add_bool('m.false', False)
    w.add_string('m.str', 'héllo, wörld ✓ 𝄞'); w.add_string('m.empty', '')
    w.add_array('m.strs', ['a', '', 'ü', 'x' * 100])
    for vt in ['UINT8', 'INT8', 'UINT16', 'INT16', 'UINT32', 'INT32', 'FLOAT32', 'UINT64', 'INT64', 'FLOAT64', 'BOOL']:
        vals = {'UINT8': [0, 255], 'INT8': [-128, 127], 'UINT16': [0, 65535], 'INT16': [-32768, 32767], 'UINT32': [0, 2**32 - 1],
                'INT32': [-2**31, 2**31 - 1], 'FLOAT32': [0.1, -2.5e-40], 'UINT64': [0, 2**64 - 1, 5], 'INT64': [-2**63, 2**63 - 1, -5],
                'FLOAT64': [0.1, -1e300], 'BOOL': [True, False, True]}[vt]
        w.add_key_value(f'a.{vt}', vals, V.ARRAY, sub_type=V[vt])
    w.add_array('m.nested', [[1, 2, 3], [4], [[5, 6], [7]]])
    w.add_array('m.nested_strs', [['a', 'b'], ['c']])
    for k, v in plain.items():
        w.add_tensor(f'plain.{k}', v.copy())
    w.add_tensor('plain.BF16', gguf.quants.quantize(bf, Q.BF16), raw_dtype=Q.BF16)
    if endianess == gguf.GGUFEndian.BIG:
        w.add_tensor('plain.Q8_0', gguf.quants.quantize(q8, Q.Q8_0), raw_dtype=Q.Q8_0)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()

write_plain('plain.gguf', gguf.GGUFEndian.LITTLE)
write_plain('plain-be.gguf', gguf.GGUFEndian.BIG)

# 3. A tokenizer of 150 000 tokens (its own file: gguf-py's reader takes half a minute over it; the
# tokens and scores written are the truth here).
vocab = [''.join(chr(c) for c in rng.integers(0x61, 0x7b, rng.integers(1, 12))) for _ in range(150000)]
vocab[7] = 'Ġthe'; vocab[8] = '<|endoftext|>'; vocab[9] = '日本語のトークン'
scores = rng.standard_normal(150000).astype(np.float32)
w = gguf.GGUFWriter(os.path.join(out, 'vocab.gguf'), 'test')
w.add_token_list(vocab)
w.add_token_scores(scores.tolist())
w.add_tensor('x', np.arange(1000, dtype=np.float32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
report['vocab'] = {'tokens': vocab, 'scores': [float(x) for x in scores]}

# 4. A big-endian file and a custom alignment, written by gguf-py.
w = gguf.GGUFWriter(os.path.join(out, 'big-endian.gguf'), 'test', endianess=gguf.GGUFEndian.BIG)
w.add_tensor('x', np.arange(4, dtype=np.float32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
w = gguf.GGUFWriter(os.path.join(out, 'aligned.gguf'), 'test')
w.add_custom_alignment(256)
w.add_tensor('a', np.arange(3, dtype=np.float32)); w.add_tensor('b', np.arange(5, dtype=np.int16))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()

# What gguf-py's reader says of each file: tensors (name, shape as numpy's C order, type), the
# data offset, and every key/value with its types.
def norm(v, t):
    if t in ('UINT64', 'INT64') and not (-2**53 < int(v) < 2**53):
        return {'big': str(int(v))}
    if t in ('UINT64', 'INT64'):
        return int(v)
    return v

for fname in ['quants.gguf', 'plain.gguf', 'plain-be.gguf', 'aligned.gguf']:
    r = gguf.GGUFReader(os.path.join(out, fname))
    d = expect_dir(fname)
    tensors = []
    for t in r.tensors:
        tensors.append({'name': t.name, 'shape': [int(x) for x in reversed(t.shape.tolist())], 'type': t.tensor_type.name})
        if fname != 'quants.gguf':
            # In native byte order, as npyts holds the values of a big-endian dtype.
            np.ascontiguousarray(t.data).astype(t.data.dtype.newbyteorder('=')).tofile(os.path.join(d, t.name + '.bin'))
    meta = {}
    for key, f in r.fields.items():
        if key.startswith('GGUF.'):
            continue
        types = [x.name for x in f.types]
        c = f.contents()
        if types[0] == 'ARRAY' and len(types) == 2:
            meta[key] = {'types': types, 'value': [{'big': str(int(x))} if types[1] in ('UINT64', 'INT64') else x for x in c]}
        else:
            meta[key] = {'types': types, 'value': c if types[0] == 'ARRAY' else norm(c, types[0])}
    report['files'][fname] = {'tensors': tensors, 'metadata': meta, 'dataOffset': int(r.data_offset), 'alignment': int(r.alignment)}

# 4. Two tensors of types gguf-py does not dequantize beside one it reads: a whole read names both.
fname = 'unread.gguf'
w = gguf.GGUFWriter(os.path.join(out, fname), 'test')
w.add_tensor('ok', np.arange(4, dtype=np.float32))
refused = []
for name in ['Q8_1', 'Q8_K']:
    block, size = GGML_QUANT_SIZES[Q[name]]
    raw = rng.integers(0, 256, (1, size), dtype=np.uint8)
    w.add_tensor(f'unread.{name}', raw, raw_dtype=Q[name])
    try:
        gguf.quants.dequantize(raw, Q[name])
    except NotImplementedError:
        refused.append(f'unread.{name}')
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
report['files'][fname] = {'refused': refused}

# 5. Tensors of more than one read (npyts reads 4 MiB of blocks at a time, into buffers it uses
# again): a few blocks past one read of each, random blocks with sane scales as in 1.
fname = 'chunks.gguf'
w = gguf.GGUFWriter(os.path.join(out, fname), 'test')
chunk_expected = {}
for name in ['Q4_K', 'Q6_K']:
    block, size = GGML_QUANT_SIZES[Q[name]]
    n_blocks = (4 << 20) // size + 5
    raw = random_blocks(name, n_blocks).reshape(n_blocks, size)
    w.add_tensor(f'big.{name}', raw, raw_dtype=Q[name])
    chunk_expected[f'big.{name}'] = gguf.quants.dequantize(raw, Q[name])
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
d = expect_dir(fname)
for k, v in chunk_expected.items():
    v.tofile(os.path.join(d, k + '.bin'))
r = gguf.GGUFReader(os.path.join(out, fname))
report['files'][fname] = {'tensors': [{'name': t.name, 'shape': [int(x) for x in reversed(t.shape.tolist())], 'type': t.tensor_type.name} for t in r.tensors]}

print(json.dumps(report))

# GGUF writing fixtures for test/gguf/gguf-write.test.mjs: the reference's own files and bytes.
#   python3 gguf_write.py make DIR  ->  DIR/input/<tensor>.bin (raw float32/int32, little-endian),
#       DIR/ref/<type>.gguf written by gguf-py's GGUFWriter from gguf.quants.quantize, and JSON on
#       stdout: the metadata (key, type, value, item type), the tensors (name, dtype, shape) and the
#       type each tensor is written as (llama.cpp's convert rule: 1-D F32, rows not whole blocks F16).
#   python3 gguf_write.py read FILE DIR  ->  GGUFReader's view of FILE: metadata as JSON on stdout,
#       each tensor dequantized by gguf.quants.dequantize into DIR/<tensor>.bin (float32 or its own dtype).
import json, os, sys
import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q, GGUFValueType as V
from gguf.constants import GGML_QUANT_SIZES

def js(v):
    """A value for JSON.parse: ints past 2^53 as {'big': text}."""
    return [js(x) for x in v] if isinstance(v, list) else {'big': str(v)} if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53 else v

def make(out):
    rng = np.random.default_rng(70)
    os.makedirs(os.path.join(out, 'input'), exist_ok=True)
    os.makedirs(os.path.join(out, 'ref'), exist_ok=True)
    # Blocks of 256 (the largest block) with the edges the arithmetic meets: zeros, a constant,
    # signed zeros, values whose scaled form is a tie (x.5), tiny and huge magnitudes.
    w = (rng.standard_normal((6, 512)) * 3).astype(np.float32)
    w[0, :256] = 0
    w[0, 256:512] = 1.25
    w[1, :32] = -0.0
    w[1, 32:64] = np.arange(32, dtype=np.float32) - 15.5   # halves, with a scale of 1: ties for Q8_0's roundf
    w[1, 63] = 127
    w[1, 64:96] = np.linspace(-8, 7, 32, dtype=np.float32)
    w[2, :256] *= np.float32(1e-30)
    w[3, :256] *= np.float32(1e30)
    w[4, :32] = np.float32(-1.0)
    w[4, 3] = 1.0                                          # |max| tie: the first wins
    w[5, :256] *= np.float32(1e-5)                          # float16 subnormals (F16, and scales)
    k = np.arange(128, dtype=np.float32)
    w[5, 256:384] = 1 + (2 * k + 1) * np.float32(2.0 ** -11)  # float16 ties, normal and subnormal
    w[5, 384:512] = (k + np.float32(0.5)) * np.float32(2.0 ** -24)
    tensors = {
        'blk.0.weight': w,
        'blk.0.bias': (rng.standard_normal(512)).astype(np.float32),          # 1-D: F32
        'blk.1.odd': (rng.standard_normal((3, 48))).astype(np.float32),       # rows of 48: F16 for blocks of 32 or 256
        'blk.1.ids': rng.integers(-5, 5, (4, 8), dtype=np.int32),            # integers: themselves
        'blk.2.weight': (rng.standard_normal((2, 3, 256)) * 0.02).astype(np.float32),
    }
    for name, a in tensors.items():
        a.astype(a.dtype.newbyteorder('<')).tofile(os.path.join(out, 'input', f'{name}.bin'))
    metadata = [
        ('general.name', 'STRING', 'tiny ✓ é', None),
        ('test.uint8', 'UINT8', 200, None),
        ('test.int8', 'INT8', -100, None),
        ('test.uint16', 'UINT16', 60000, None),
        ('test.int16', 'INT16', -30000, None),
        ('test.uint32', 'UINT32', 4000000000, None),
        ('test.int32', 'INT32', -2000000000, None),
        ('test.int', 'INT32', 7, None),
        ('test.uint64', 'UINT64', 2**64 - 1, None),
        ('test.int64', 'INT64', -2**63, None),
        ('test.float32', 'FLOAT32', 0.1, None),
        ('test.float64', 'FLOAT64', 0.1, None),
        ('test.bool', 'BOOL', True, None),
        ('test.arr.uint8', 'ARRAY', [1, 255], 'UINT8'),
        ('test.arr.int8', 'ARRAY', [-1, 127], 'INT8'),
        ('test.arr.uint16', 'ARRAY', [1, 65535], 'UINT16'),
        ('test.arr.int16', 'ARRAY', [-1, 32767], 'INT16'),
        ('test.arr.uint32', 'ARRAY', [1, 2**32 - 1], 'UINT32'),
        ('test.arr.int32', 'ARRAY', [-1, 2**31 - 1], 'INT32'),
        ('test.arr.uint64', 'ARRAY', [1, 2**64 - 1], 'UINT64'),
        ('test.arr.int64', 'ARRAY', [-2**63, 5], 'INT64'),
        ('test.arr.float32', 'ARRAY', [1.5, -0.1], 'FLOAT32'),
        ('test.arr.float64', 'ARRAY', [1.5, -0.1], 'FLOAT64'),
        ('test.arr.bool', 'ARRAY', [True, False, True], 'BOOL'),
        ('test.arr.string', 'ARRAY', ['a', 'bc', '', 'ü'], 'STRING'),
        ('test.arr.nested', 'ARRAY', [[1, 2], [3]], None),
        ('test.arr.nested_strings', 'ARRAY', [['x'], ['y', 'z']], None),
    ]
    files = {}
    for tname in ['f32', 'f16', 'bf16', 'q8_0', 'q4_0', 'q4_1', 'q5_0', 'q5_1', 'tq1_0', 'tq2_0']:
        T = Q[tname.upper()]
        block = GGML_QUANT_SIZES[T][0]
        alignment = 64 if tname == 'q8_0' else None
        path = os.path.join(out, 'ref', f'{tname}.gguf')
        wr = gguf.GGUFWriter(path, 'test')
        for key, vt, value, sub in metadata:
            wr.add_key_value(key, value, V[vt], sub_type=V[sub] if sub else None)
        if alignment:
            wr.add_custom_alignment(alignment)
        types = {}
        for name, a in tensors.items():
            if a.dtype.kind == 'i':
                wr.add_tensor(name, a)
                types[name] = 'I32'
                continue
            t = T
            if tname != 'f32' and a.ndim <= 1:
                t = Q.F32
            elif a.shape[-1] % block:
                t = Q.F16
            data = gguf.quants.quantize(a, t)
            wr.add_tensor(name, data, raw_dtype=t if t not in (Q.F32, Q.F16) else None)
            types[name] = t.name
        wr.write_header_to_file()
        wr.write_kv_data_to_file()
        wr.write_tensors_to_file()
        wr.close()
        files[tname] = {'alignment': alignment, 'types': types}
    print(json.dumps({
        'metadata': [[k, vt, js(v), sub] for k, vt, v, sub in metadata],
        'tensors': [{'name': n, 'dtype': a.dtype.str, 'shape': list(a.shape)} for n, a in tensors.items()],
        'files': files,
    }))

def read(path, out):
    os.makedirs(out, exist_ok=True)
    r = gguf.GGUFReader(path)
    meta = {}
    for f in r.fields.values():
        if f.name.startswith('GGUF.'):
            continue
        v = f.contents()
        meta[f.name] = {'type': f.types[0].name, 'items': f.types[-1].name if len(f.types) > 1 else None, 'value': js(v)}
    tensors = []
    for t in r.tensors:
        a = t.data if t.tensor_type.name.startswith('I') else gguf.quants.dequantize(t.data, t.tensor_type)
        a.tofile(os.path.join(out, f'{t.name}.bin'))
        tensors.append({'name': t.name, 'type': t.tensor_type.name, 'shape': [int(n) for n in reversed(t.shape)]})
    print(json.dumps({'metadata': meta, 'tensors': tensors}, default=str))

if sys.argv[1] == 'make':
    make(sys.argv[2])
else:
    read(sys.argv[2], sys.argv[3])

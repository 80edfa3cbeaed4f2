# Fixtures of test/node/mmap-weights.test.mjs, each written by its reference writer (one process):
# safetensors (single, sharded, a tensor at an unaligned offset written by hand), torch.save (zip and
# legacy, with views, slices, strides and flags), numpy (.npz stored, compressed, big-endian), gguf-py.
import json, os, struct, sys
import numpy as np, torch, gguf
from safetensors.torch import save_file
from safetensors.numpy import load_file

out = sys.argv[1]
p = lambda name: os.path.join(out, name)
g = torch.Generator().manual_seed(7)
w = torch.randn(64, 48, generator=g)
tensors = {
    'w': w,
    'b': torch.arange(-5, 45, dtype=torch.int64),
    'h': torch.randn(33, generator=g).half(),
    'bf': torch.randn(7, 5, generator=g).bfloat16(),
    'u': torch.arange(0, 250, dtype=torch.uint8),
    'd': torch.randn(3, 3, generator=g, dtype=torch.float64),
    'z': torch.zeros(0, 4),
}
save_file(tensors, p('model.safetensors'))
# A sharded set: two shards beside their index.
save_file({k: tensors[k] for k in ('w', 'b', 'h')}, p('model-00001-of-00002.safetensors'))
save_file({k: tensors[k] for k in ('bf', 'u', 'd')}, p('model-00002-of-00002.safetensors'))
weight_map = {k: 'model-00001-of-00002.safetensors' for k in ('w', 'b', 'h')}
weight_map.update({k: 'model-00002-of-00002.safetensors' for k in ('bf', 'u', 'd')})
json.dump({'metadata': {}, 'weight_map': weight_map}, open(p('model.safetensors.index.json'), 'w'))

# By hand: a u8 tensor of 3 bytes, an f32 tensor at data offset 3 (unaligned), a byte, an f32 at 28.
a = np.arange(6, dtype=np.float32) * 1.5
c = np.arange(4, dtype=np.float32) - 2
header = {'pad': {'dtype': 'U8', 'shape': [3], 'data_offsets': [0, 3]},
          'odd': {'dtype': 'F32', 'shape': [2, 3], 'data_offsets': [3, 27]},
          'pad2': {'dtype': 'U8', 'shape': [1], 'data_offsets': [27, 28]},
          'even': {'dtype': 'F32', 'shape': [4], 'data_offsets': [28, 44]}}
text = json.dumps(header).encode()
text += b' ' * (-len(text) % 8)
with open(p('unaligned.safetensors'), 'wb') as f:
    f.write(struct.pack('<Q', len(text)) + text + bytes([1, 2, 3]) + a.tobytes() + b'\0' + c.tobytes())
ref = load_file(p('unaligned.safetensors'))  # the reference reads it
assert (ref['odd'] == a.reshape(2, 3)).all() and (ref['even'] == c).all()

# By hand, sparse: a U8 tensor of 5 GiB (a hole on disk), then a small F32 tensor past 4 GiB.
S = 5 << 30
tail = np.array([0.5, -1.25, 3.0, 7.75], dtype=np.float32)
text = json.dumps({'big': {'dtype': 'U8', 'shape': [S], 'data_offsets': [0, S]},
                   'tail': {'dtype': 'F32', 'shape': [4], 'data_offsets': [S, S + 16]}}).encode()
text += b' ' * (-len(text) % 8)
with open(p('huge.safetensors'), 'wb') as f:
    f.write(struct.pack('<Q', len(text)) + text)
    f.seek(8 + len(text) + S)
    f.write(tail.tobytes())

# torch.save: dense tensors, a transposed view (Fortran order), a slice at an offset, a strided
# view, a negated view and a conjugated complex view, all over shared storages.
base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
cx = torch.randn(5, generator=g, dtype=torch.complex64)
state = {'w': w, 'b': tensors['b'], 'h': tensors['h'], 'bf': tensors['bf'],
         't': base.t(), 'rows': base[1:3], 'cols': base[:, ::2], 'neg': torch._neg_view(w[:3]),
         'conj': cx.conj(), 'z': tensors['z']}
torch.save(state, p('model.pt'))
torch.save(state, p('legacy.pt'), _use_new_zipfile_serialization=False)

# numpy: stored and deflated archives, a big-endian member.
arrays = {'w': w.numpy(), 'b': tensors['b'].numpy(), 'big': np.arange(10, dtype='>f4'), 'u': tensors['u'].numpy(), 'obj_free': np.ones((2, 3), dtype='<i2')}
np.savez(p('stored.npz'), **arrays)
np.savez_compressed(p('deflated.npz'), **arrays)

# gguf-py: unquantized tensors and a Q8_0 one.
gw = gguf.GGUFWriter(p('model.gguf'), 'llama')
gw.add_tensor('f32', w.numpy())
gw.add_tensor('f16', tensors['h'].numpy().astype(np.float16))
gw.add_tensor('i32', np.arange(100, dtype=np.int32))
qin = np.linspace(-1, 1, 64 * 32, dtype=np.float32).reshape(64, 32)
q = gguf.quants.quantize(qin, gguf.GGMLQuantizationType.Q8_0)
gw.add_tensor('q8', q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
gw.write_header_to_file(); gw.write_kv_data_to_file(); gw.write_tensors_to_file(); gw.close()
print(json.dumps(sorted(os.listdir(out))))

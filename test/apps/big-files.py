# Fixtures of test/apps/big-browser.test.mjs: one weight file of each format past 4 GiB, each holding a
# float32 tensor of 2**30 + 8 elements (4 GiB + 32 bytes, a hole on disk: sparse files) and after it
# a small tensor of real values, the one a page reads past 4 GiB. Each is written by its reference
# writer where that writer can skip the hole (torch.save, h5py, zipfile through a file that seeks over
# the zeros), by hand where the format is a header and raw bytes (safetensors, GGUF), and each is read
# back by its reference reader before the test uses it. Prints where each tail tensor starts.
import io, json, os, struct, sys, zipfile, zlib
import numpy as np

out = sys.argv[1]
p = lambda name: os.path.join(out, name)
N = 2**30 + 8
BIG = 4 * N
TAIL = np.array([0.5, -1.25, 3.0, 7.75], dtype=np.float32)
ZEROS = bytes(64 << 20)


class Holes(io.RawIOBase):
    """A file that leaves every write of zeros it is told about (`zeros`) as a hole: a seek past it."""

    def __init__(self, path):
        self.f = open(path, 'wb')
        self.zeros = set()

    def writable(self):
        return True

    def seekable(self):
        return True

    def write(self, b):
        if id(b) in self.zeros or (isinstance(b, memoryview) and b.nbytes >= 1 << 30):
            n = b.nbytes if isinstance(b, memoryview) else len(b)
            self.f.seek(n, 1)
            return n
        return self.f.write(b)

    def seek(self, pos, whence=0):
        return self.f.seek(pos, whence)

    def tell(self):
        return self.f.tell()

    def flush(self):
        if not self.f.closed:
            self.f.flush()

    def close(self):
        if not self.f.closed:
            end = self.f.tell()
            self.f.truncate(max(end, self.f.seek(0, 2)))
            self.f.close()
        super().close()


def _times(m, v):
    r, i = 0, 0
    while v:
        if v & 1:
            r ^= m[i]
        v >>= 1
        i += 1
    return r


def _square(m):
    return [_times(m, x) for x in m]


def _zeros_operator(n):
    """The 32x32 GF(2) matrix that runs the CRC-32 register over n zero bytes (zlib's crc32_combine)."""
    one_bit = [0xEDB88320] + [1 << i for i in range(31)]
    op = [1 << i for i in range(32)]
    m = _square(_square(_square(one_bit)))  # one zero byte
    while n:
        if n & 1:
            op = [_times(m, x) for x in op]
        m = _square(m)
        n >>= 1
    return op


ZEROS_OP = _zeros_operator(len(ZEROS))


def crc32(data, crc=0):
    """zlib's CRC-32, with a run of ZEROS taken in one step (zipfile takes each chunk's CRC with it)."""
    if data is ZEROS:
        return _times(ZEROS_OP, crc ^ 0xFFFFFFFF) ^ 0xFFFFFFFF
    return zlib.crc32(data, crc)


assert crc32(ZEROS, 12345) == zlib.crc32(ZEROS, 12345)
zipfile.crc32 = crc32


def zeros_into(w, n):
    """n zero bytes written through zipfile's writer `w` (it takes each chunk's CRC) as holes."""
    while n:
        chunk = ZEROS if n >= len(ZEROS) else bytes(n)
        w.write(chunk)
        n -= len(chunk)


def stored_zip(path, members):
    """A stored zip (zip64 where needed) of `members`: (name, [bytes | int]) with ints as zero runs."""
    holes = Holes(path)
    holes.zeros.add(id(ZEROS))
    with zipfile.ZipFile(holes, 'w', zipfile.ZIP_STORED) as z:
        for name, pieces in members:
            size = sum(x if isinstance(x, int) else len(x) for x in pieces)
            info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
            info.file_size = size
            with z.open(info, 'w', force_zip64=size >= 0xFFFFFFFF) as w:
                for x in pieces:
                    if isinstance(x, int):
                        zeros_into(w, x)
                    else:
                        w.write(x)
    holes.close()


where = {}

# A stored .npz, as np.savez stores it (members 'big.npy' then 'tail.npy'); numpy reads the tail.
def npy_bytes(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()

big_header = io.BytesIO()
np.lib.format.write_array_header_1_0(big_header, {'descr': '<f4', 'fortran_order': False, 'shape': (N,)})
stored_zip(p('big.npz'), [('big.npy', [big_header.getvalue(), BIG]), ('tail.npy', [npy_bytes(TAIL)])])
with np.load(p('big.npz')) as z:
    assert (z['tail'] == TAIL).all()
    assert z.zip.getinfo('tail.npy').header_offset > 2**32

# torch.save, through a file that leaves the big storage's bytes a hole (torch.empty's memory is
# never touched, and with its CRC off torch does not read it); torch.load(mmap=True) reads it back.
import torch
import torch.utils.serialization.config as torch_config

torch_config.save.compute_crc32 = False
holes = Holes(p('big.pt'))
torch.save({'big': torch.empty(N, dtype=torch.float32), 'tail': torch.from_numpy(TAIL)}, holes)
holes.close()
back = torch.load(p('big.pt'), mmap=True, weights_only=True)
assert (back['tail'].numpy() == TAIL).all() and back['big'].shape == (N,)
del back

# GGUF v3 by hand (gguf-py's writer takes whole arrays): two F32 tensors, 'big' then 'tail', aligned
# to 32; gguf-py's GGUFReader reads it back.
def gguf_string(s):
    b = s.encode()
    return struct.pack('<Q', len(b)) + b

head = b'GGUF' + struct.pack('<IQQ', 3, 2, 1)
head += gguf_string('general.name') + struct.pack('<I', 8) + gguf_string('big')
tail_offset = (BIG + 31) // 32 * 32
head += gguf_string('big') + struct.pack('<IQIQ', 1, N, 0, 0)
head += gguf_string('tail') + struct.pack('<IQIQ', 1, len(TAIL), 0, tail_offset)
head += bytes(-len(head) % 32)
with open(p('big.gguf'), 'wb') as f:
    f.write(head)
    f.seek(len(head) + tail_offset)
    f.write(TAIL.tobytes())
import gguf

reader = gguf.GGUFReader(p('big.gguf'))
assert [t.name for t in reader.tensors] == ['big', 'tail']
assert (np.asarray(reader.tensors[1].data) == TAIL).all()
assert reader.tensors[1].data_offset > 2**32
del reader

# A sharded .safetensors set by hand (as test/node/mmap-weights.py writes one past 4 GiB): the second
# shard holds the big tensor and the tail after it; safetensors' own reader reads the tail.
from safetensors import safe_open

def safetensors_file(path, tensors):
    header, offset = {}, 0
    for name, (n, data) in tensors.items():
        header[name] = {'dtype': 'F32', 'shape': [n // 4], 'data_offsets': [offset, offset + n]}
        offset += n
    text = json.dumps(header).encode()
    text += b' ' * (-len(text) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(text)) + text)
        for n, data in tensors.values():
            if data is None:
                f.seek(n, 1)
            else:
                f.write(data)

first = np.arange(6, dtype=np.float32)
safetensors_file(p('big-00001-of-00002.safetensors'), {'first': (24, first.tobytes())})
safetensors_file(p('big-00002-of-00002.safetensors'), {'big': (BIG, None), 'tail': (16, TAIL.tobytes())})
json.dump({'metadata': {}, 'weight_map': {'first': 'big-00001-of-00002.safetensors', 'big': 'big-00002-of-00002.safetensors',
           'tail': 'big-00002-of-00002.safetensors'}}, open(p('big.safetensors.index.json'), 'w'))
with safe_open(p('big-00002-of-00002.safetensors'), framework='np') as f:
    assert (f.get_tensor('tail') == TAIL).all()

# A .keras: a Dense layer (2**16 inputs, 2**14 + 1 units: a 4 GiB + 256 KiB kernel) and its bias.
# Keras writes the config of a small model, patched to those sizes; h5py writes model.weights.h5 with
# Keras's groups, the kernel allocated but never written (a hole) and the bias after it; the .keras
# stores it (zipfile, the hole seeked over). h5py reads the bias back.
os.environ['KERAS_BACKEND'] = 'torch'
import h5py, keras

IN, UNITS = 2**16, 2**14 + 1
small = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name='dense')])
small.save(p('small.keras'))
with zipfile.ZipFile(p('small.keras')) as z:
    config = json.loads(z.read('config.json'))
    metadata = z.read('metadata.json')
config['config']['layers'][0]['config']['batch_shape'] = [None, IN]
config['config']['layers'][1]['config']['units'] = UNITS
config['config']['layers'][1]['build_config'] = {'input_shape': [None, IN]}
config['config']['build_input_shape'] = [None, IN]
config['build_config'] = {'input_shape': [None, IN]}
bias = (np.arange(UNITS, dtype=np.float32) % 7) - 3
with h5py.File(p('model.weights.h5'), 'w') as f:
    v = f.create_group('layers/dense/vars')
    v.attrs['name'] = 'dense'
    kernel = v.create_dataset('0', shape=(IN, UNITS), dtype='<f4')
    kernel[IN - 1, UNITS - 4:] = TAIL  # allocates the kernel: the rest of it is never written
    v.create_dataset('1', data=bias)
    f.create_group('vars').attrs['name'] = 'sequential'
    kernel_at, bias_at = kernel.id.get_offset(), v['1'].id.get_offset()
assert bias_at > 2**32 and bias_at > kernel_at
with h5py.File(p('model.weights.h5'), 'r') as f:
    assert (f['layers/dense/vars/1'][:] == bias).all() and (f['layers/dense/vars/0'][IN - 1, UNITS - 4:] == TAIL).all()
# The h5 file's bytes: what h5py wrote before the kernel, the kernel (a hole, then the tail), the rest.
kernel_end = kernel_at + 4 * IN * UNITS
with open(p('model.weights.h5'), 'rb') as f:
    before = f.read(kernel_at)
    f.seek(kernel_end - 16)
    kernel_tail = f.read(16)
    after = f.read()
assert kernel_tail == TAIL.tobytes()
stored_zip(p('big.keras'), [('metadata.json', [metadata]), ('config.json', [json.dumps(config).encode()]),
                            ('model.weights.h5', [before, 4 * IN * UNITS - 16, kernel_tail, after])])
# Seeking in a zip member reads up to the place in this Python: the bias is checked at its byte.
with zipfile.ZipFile(p('big.keras')) as z:
    info = z.getinfo('model.weights.h5')
with open(p('big.keras'), 'rb') as f:
    f.seek(info.header_offset + 26)
    name_len, extra_len = struct.unpack('<HH', f.read(4))
    f.seek(info.header_offset + 30 + name_len + extra_len + bias_at)
    assert f.read(4 * UNITS) == bias.tobytes()
os.remove(p('model.weights.h5'))
os.remove(p('small.keras'))

# An ONNX model whose one initializer is 'big' (its data external, not written): withWeights with
# big.npz's tensors is past what onnxruntime-web's wasm32 memory holds.
import onnx
from onnx import TensorProto, helper

init = TensorProto(name='big', data_type=TensorProto.FLOAT, dims=[N], data_location=TensorProto.EXTERNAL)
init.external_data.add(key='location', value='big.bin')
graph = helper.make_graph([helper.make_node('Identity', ['big'], ['y'])], 'g', [], [helper.make_tensor_value_info('y', TensorProto.FLOAT, [N])], [init])
onnx.save(helper.make_model(graph), p('big.onnx'))

print(json.dumps({'tail': TAIL.tolist(), 'bias': bias.tolist()[:8], 'units': UNITS}))

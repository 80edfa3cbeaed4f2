# gguf-py's side of bench/gguf.mjs. `make DIR MIB [TENSORS [NAME]]`: a GGUF file NAME (q4k.gguf) of
# MIB MiB of Q4_K blocks in TENSORS tensors (8; random blocks with sane float16 scales: gguf-py does
# not quantize to Q4_K), and NAME's float32 .npy (same-f32.npy for q4k.gguf) of as many bytes as
# those tensors dequantize to, or with `--per-tensor` as one tensor does (read once per tensor); a
# file already made with the same arguments is kept. `make_q8 DIR MIB`: q8-input.npy, MIB MiB of
# normal float32 values in rows of 4096, the tensor quantized to Q8_0 on both sides. `serve DIR`: times a case when asked
# (paired.mjs). `once DIR CASE`: one run of a case, its seconds on stdout (for the cases of minutes).
import json, os, sys, time
import side_serve  # bench/side_serve.py, beside this file
import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q


def make(d, mib, tensors='8', name='q4k.gguf', *flags):
    os.makedirs(d, exist_ok=True)
    per_tensor = '--per-tensor' in flags
    tensors = int(tensors)
    stem = name[:-len('.gguf')]
    f32 = 'same-f32.npy' if name == 'q4k.gguf' else f'{stem}-f32.npy'
    done = os.path.join(d, f'{stem}.json')
    args = [int(mib), tensors, per_tensor]
    if os.path.exists(done):
        with open(done) as f:
            made = json.load(f)
        if made.get('args') == args and os.path.exists(os.path.join(d, name)) and os.path.exists(os.path.join(d, f32)):
            print(json.dumps(made))
            return
    rng = np.random.default_rng(0)
    blocks_per_tensor = int(mib) * (1 << 20) // 144 // tensors
    rows = max(1, blocks_per_tensor // 16)
    # Written a tensor at a time (write_tensor_data), so that making 1 GiB holds one tensor.
    w = gguf.GGUFWriter(os.path.join(d, name), 'bench')
    for i in range(tensors):
        w.add_tensor_info(f'blk.{i}.weight', (rows, 16 * 144), np.dtype(np.uint8), rows * 16 * 144, raw_dtype=Q.Q4_K)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_ti_data_to_file()
    for i in range(tensors):
        b = rng.integers(0, 256, (rows * 16, 144), dtype=np.uint8)
        b[:, 0:4] = (rng.standard_normal((rows * 16, 2)).astype(np.float32) * 0.01).astype(np.float16).view(np.uint8)
        w.write_tensor_data(b.reshape(rows, 16 * 144))
    w.close()
    tensor_values = rows * 16 * 256
    values = tensor_values * tensors
    np.save(os.path.join(d, f32), np.zeros(tensor_values if per_tensor else values, dtype=np.float32))
    made = {'q4k_bytes': os.path.getsize(os.path.join(d, name)), 'values': values, 'tensors': tensors, 'tensor_values': tensor_values, 'f32': f32, 'args': args}
    with open(done, 'w') as f:
        json.dump(made, f)
    print(json.dumps(made))


def make_q8(d, mib):
    os.makedirs(d, exist_ok=True)
    n = int(mib) * (1 << 20) // 4
    path = os.path.join(d, 'q8-input.npy')
    a = np.random.default_rng(1).standard_normal((n // 4096, 4096), dtype=np.float32)
    np.save(path, a)
    print(json.dumps({'file': 'q8-input.npy', 'values': int(a.size), 'shape': list(a.shape)}))


def cases(d):
    q8_input = []

    def quantize_q8_0():
        # The input loaded once (not timed: the first, untimed run loads it), as the JavaScript side's is.
        if not q8_input:
            q8_input.append(np.load(os.path.join(d, 'q8-input.npy')))
        return gguf.quants.quantize(q8_input[0], Q.Q8_0)

    def dequantize_all():
        r = gguf.GGUFReader(os.path.join(d, 'q4k.gguf'))
        return [gguf.quants.dequantize(t.data, t.tensor_type) for t in r.tensors]

    def dequantize_each():
        # Tensor by tensor, each dropped before the next (memory: one tensor and numpy's temporaries).
        r = gguf.GGUFReader(os.path.join(d, 'q4k-full.gguf'))
        for t in r.tensors:
            gguf.quants.dequantize(t.data, t.tensor_type)

    return {'gguf_q4k': dequantize_all, 'gguf_q4k_each': dequantize_each, 'gguf_quantize_q8_0': quantize_q8_0}


def serve(d):
    side_serve.serve(cases(d))


def once(d, name):
    fn = cases(d)[name]
    t = time.perf_counter()
    fn()
    print(json.dumps(time.perf_counter() - t))


if __name__ == '__main__':
    cmd, *args = sys.argv[1:]
    {'make': make, 'make_q8': make_q8, 'serve': serve, 'once': once}[cmd](*args)

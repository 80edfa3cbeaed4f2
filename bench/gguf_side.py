# gguf-py's side of bench/gguf.mjs. `make DIR MIB`: a GGUF file of MIB MiB of Q4_K blocks (8 tensors;
# random blocks with sane float16 scales: gguf-py does not quantize to Q4_K), and a float32 .npy of
# as many bytes as those tensors dequantize to. `serve DIR`: times a case when asked (paired.mjs).
import json, os, sys, time
import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q


def make(d, mib):
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    blocks_per_tensor = int(mib) * (1 << 20) // 144 // 8
    rows = max(1, blocks_per_tensor // 16)
    w = gguf.GGUFWriter(os.path.join(d, 'q4k.gguf'), 'bench')
    values = 0
    for i in range(8):
        b = rng.integers(0, 256, (rows * 16, 144), dtype=np.uint8)
        b[:, 0:4] = (rng.standard_normal((rows * 16, 2)).astype(np.float32) * 0.01).astype(np.float16).view(np.uint8)
        w.add_tensor(f'blk.{i}.weight', b.reshape(rows, 16 * 144), raw_dtype=Q.Q4_K)
        values += rows * 16 * 256
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    np.save(os.path.join(d, 'same-f32.npy'), np.zeros(values, dtype=np.float32))
    print(json.dumps({'q4k_bytes': os.path.getsize(os.path.join(d, 'q4k.gguf')), 'values': values}))


def cases(d):
    path = os.path.join(d, 'q4k.gguf')

    def dequantize_all():
        r = gguf.GGUFReader(path)
        return [gguf.quants.dequantize(t.data, t.tensor_type) for t in r.tensors]

    return {'gguf_q4k': dequantize_all}


def serve(d):
    known = cases(d)
    for line in sys.stdin:
        name, repeats = line.split()
        fn = known[name]
        fn()
        times = []
        for _ in range(int(repeats)):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        times.sort()
        print(json.dumps(times[len(times) // 2]), flush=True)


if __name__ == '__main__':
    cmd, *args = sys.argv[1:]
    {'make': make, 'serve': serve}[cmd](*args)

"""Python's side of the weight-file bench: makes a state_dict as .safetensors and as torch.save's .pt,
and times safetensors.numpy.load_file and torch.load(weights_only=True) on them.

python3 weights_side.py make DIR MB   -> writes DIR/state.safetensors, DIR/state.pt and DIR/many.safetensors
python3 weights_side.py big DIR MB    -> writes DIR/big.safetensors and DIR/big.pt: MB of 4 MiB tensors (for mapped loads)
python3 weights_side.py serve DIR     -> reads 'CASE REPEATS' lines, answers the median seconds
"""
import json, os, statistics, sys, time
import side_serve  # bench/side_serve.py, beside this file


def make(d, mb):
    import torch
    from safetensors.torch import save_file
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(0)
    total = int(mb) * 1_000_000
    sd, made, i = {}, 0, 0
    # Layers of a convolutional net and a transformer: a few large matrices, many small vectors.
    shapes = [(1024, 1024), (4096, 1024), (256, 256, 3, 3), (1024,), (64, 3, 7, 7), (4096,)]
    while made < total:
        shape = shapes[i % len(shapes)]
        t = torch.randn(shape)
        sd[f"layer{i // len(shapes)}.p{i % len(shapes)}"] = t
        made += t.numel() * 4
        i += 1
    save_file(sd, os.path.join(d, "state.safetensors"))
    torch.save(sd, os.path.join(d, "state.pt"))
    # Many small tensors (issue 53: 100 000 read in 8.5 s where Python took 1.4 s): the per-tensor cost.
    many = 100_000 if total >= 100_000_000 else 10_000
    save_file({f"layer.{i}.w": torch.full((2,), float(i)) for i in range(many)}, os.path.join(d, "many.safetensors"))
    print(json.dumps({"tensors": len(sd), "bytes": made, "many": many}))


def big(d, mb):
    """Files for the mapped rows: `mb` MB of (1024, 1024) float32 tensors (4 MiB each), cheap to make."""
    import torch
    from safetensors.torch import save_file
    os.makedirs(d, exist_ok=True)
    n = max(2, int(mb) * 1_000_000 // (4 << 20))
    sd = {f"block{i}.w": torch.full((1024, 1024), float(i)) for i in range(n)}
    save_file(sd, os.path.join(d, "big.safetensors"))
    torch.save(sd, os.path.join(d, "big.pt"))
    print(json.dumps({"tensors": n, "bytes": n * (4 << 20), "one": f"block{n // 2}.w"}))


def cases(d):
    st = os.path.join(d, "state.safetensors")
    pt = os.path.join(d, "state.pt")

    def safetensors_load():
        from safetensors.numpy import load_file
        return load_file(st)

    def many_load():
        from safetensors.numpy import load_file
        return load_file(os.path.join(d, "many.safetensors"))

    def torch_load():
        import torch
        return torch.load(pt, weights_only=True)

    def torch_mmap():
        import torch
        return torch.load(pt, mmap=True, weights_only=True)

    # One 4 MiB tensor of a big file, opened with a map each time: its first and last value read.
    bst = os.path.join(d, "big.safetensors")
    bpt = os.path.join(d, "big.pt")
    one = lambda: json.load(open(os.path.join(d, "big.json")))["one"]

    def safetensors_one():
        from safetensors import safe_open
        with safe_open(bst, framework="np") as f:
            t = f.get_tensor(one())
            return float(t[0, 0]) + float(t[-1, -1])

    def torch_one():
        import torch
        t = torch.load(bpt, mmap=True, weights_only=True)[one()]
        return float(t[0, 0]) + float(t[-1, -1])

    return {"safetensors": safetensors_load, "torch": torch_load, "many": many_load, "torch_mmap": torch_mmap,
            "safetensors_one": safetensors_one, "torch_one": torch_one}


def serve(d):
    side_serve.serve(cases(d))


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    {"make": make, "big": big, "serve": serve}[cmd](*args)

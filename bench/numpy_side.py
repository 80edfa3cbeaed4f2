"""numpy's side of `npm run bench`: makes the inputs and times numpy on them.

python3 numpy_side.py make DIR MIB       -> writes the input files
python3 numpy_side.py time DIR REPEATS   -> JSON {case: median seconds}
"""
import json, os, statistics, sys, time
import numpy as np


def make(d, mib):
    os.makedirs(d, exist_ok=True)
    n = int(mib) * (1 << 20)
    rng = np.random.default_rng(0)
    np.save(os.path.join(d, "f4.npy"), rng.standard_normal(n // 4, dtype=np.float32))
    np.save(os.path.join(d, "f8_be.npy"), rng.standard_normal(n // 8).astype(">f8"))
    side = int((n // 4) ** 0.5)
    np.save(os.path.join(d, "f4_F.npy"), np.asfortranarray(rng.standard_normal((side, side), dtype=np.float32)))
    np.save(os.path.join(d, "rec3000.npy"), np.zeros(1, [(f"field_{i}", "<f8") for i in range(3000)]))
    # Half the size, deflated: smooth data that compresses about 3:1, like many real weights.
    half = n // 2 // 4
    smooth = (np.sin(np.arange(half, dtype=np.float64) / 1000.0) * 100).round(1).astype(np.float32)
    np.savez_compressed(os.path.join(d, "deflated.npz"), member=smooth)
    # 100 000 mixed Python values in an object array (ints, floats, text, None, small lists).
    mixed = np.empty(100_000, dtype=object)
    for i in range(100_000):
        mixed[i] = (i, i * 0.5, f"s{i}", None, [i, "x"])[i % 5]
    np.save(os.path.join(d, "objects.npy"), mixed, allow_pickle=True)
    # 1 000 000 short strings (a third ASCII only), as numpy pickles them in an object array.
    strings = np.empty(1_000_000, dtype=object)
    strings[:] = [f"w{i:x}" + "é" * (i % 3) for i in range(1_000_000)]
    np.save(os.path.join(d, "strings1m.npy"), strings, allow_pickle=True)
    # A table of doubles as .npy and as np.savetxt's CSV (about 120 MB at 256 MiB), and two arrays of
    # doubles that differ in a few places, for npyts diff against assert_allclose.
    rows = max(1000, int(mib) * 1_000_000 // 256)
    table = rng.standard_normal((rows, 6))
    np.save(os.path.join(d, "table.npy"), table)
    np.savetxt(os.path.join(d, "table.csv"), table, delimiter=",", fmt="%.17g")
    first = rng.standard_normal(n // 16)
    second = first.copy()
    second[:: max(1, len(second) // 5)] += 1.0
    np.save(os.path.join(d, "diff_a.npy"), first)
    np.save(os.path.join(d, "diff_b.npy"), second)
    # Many small arrays: a ResNet-like state dict (stored and deflated) and 10 000 files of 4 KiB.
    if not os.path.exists(os.path.join(d, "resnet_deflated.npz")):
        make_resnet(d, "1.44" if int(mib) >= 256 else "0.5", quiet=True)
    many = os.path.join(d, "many")
    if not os.path.exists(os.path.join(many, "09999.npy")):
        os.makedirs(many, exist_ok=True)
        for i in range(10_000):
            np.save(os.path.join(many, f"{i:05d}.npy"), rng.standard_normal(1024, dtype=np.float32))


def make_big(path, gib):
    """A mostly sparse float32 C-order file of about `gib` GiB, with one row and one column stripe written."""
    cols = 32768
    rows = int(float(gib) * 2**30 / 4 / cols)
    a = np.lib.format.open_memmap(path, mode="w+", dtype="<f4", shape=(rows, cols))
    a[rows // 2, :] = np.arange(cols, dtype=np.float32)
    a[:, 100:108] = 1.0
    a.flush()
    json.dump({"shape": [rows, cols]}, sys.stdout)


def column(path, gib, repeats):
    """The column case: a C-order float32 file of `gib` GiB with 1024 columns (rows 4 KiB apart),
    written whole; the time of numpy's mmap slice of one column, np.array(a[:, 7])."""
    rows = int(float(gib) * 2**30 / 4 / 1024)
    a = np.lib.format.open_memmap(path, mode="w+", dtype="<f4", shape=(rows, 1024))
    for r in range(0, rows, 65536):
        a[r:r + 65536] = np.arange(r * 1024, min(rows, r + 65536) * 1024, dtype=np.float32).reshape(-1, 1024)
    a.flush()
    del a
    t = median_time(lambda: np.array(np.load(path, mmap_mode="r")[:, 7]), int(repeats))
    json.dump({"shape": [rows, 1024], "numpy_mmap": t}, sys.stdout)


def time_regions(path, repeats):
    a = np.load(path, mmap_mode="r")
    rows = a.shape[0]
    res = {
        "row": median_time(lambda: np.array(np.load(path, mmap_mode="r")[rows // 2, :]), int(repeats)),
        "column_block": median_time(lambda: np.array(np.load(path, mmap_mode="r")[:, 100:108]), int(repeats)),
    }
    json.dump(res, sys.stdout)


def ragged_objects(d, quick):
    """numpy's way today: object arrays of 1M short strings and 10k float32 sequences, pickled (median of 3)."""
    import time as _t
    rng = np.random.default_rng(2)
    n_str = 100_000 if quick == "1" else 1_000_000
    strings = np.empty(n_str, dtype=object)
    strings[:] = [f"w{i:x}" + "é" * (i % 3) for i in range(n_str)]
    seqs = np.empty(10_000, dtype=object)
    seqs[:] = [rng.standard_normal(int(k)).astype(np.float32) for k in rng.integers(1, 200, 10_000)]
    out = {}
    pick = np.random.default_rng(3)
    for name, a in (("strings", strings), ("sequences", seqs)):
        path = os.path.join(d, f"np_{name}.npy")
        writes, reads = [], []
        for _ in range(3):
            t = _t.perf_counter(); np.save(path, a, allow_pickle=True); writes.append(_t.perf_counter() - t)
            idx = pick.integers(0, len(a), 100)
            t = _t.perf_counter(); loaded = np.load(path, allow_pickle=True); got = [loaded[i] for i in idx]; reads.append(_t.perf_counter() - t)
            del loaded, got
        write, read = sorted(writes)[1], sorted(reads)[1]
        out[name] = {"bytes": os.path.getsize(path), "write": write, "read100": read}
        # The same elements for npyts, as plain arrays it can write.
        if name == "strings":
            with open(os.path.join(d, "strings.txt"), "w", encoding="utf-8") as fh:
                fh.write("\n".join(a))
        else:
            np.save(os.path.join(d, "seq_lengths.npy"), np.array([len(x) for x in a], dtype="<i8"))
            np.save(os.path.join(d, "seq_values.npy"), np.concatenate(list(a)))
    json.dump(out, sys.stdout)


def resnet_shapes(scale):
    """The members of a ResNet-50-like state dict (PyTorch names and layouts), channel widths times
    `scale`: 53 convolutions and a linear layer, each convolution with a batch norm's four arrays
    and its int64 counter; 320 members."""
    w = lambda c: max(1, int(round(c * scale)))
    shapes = {}
    def conv_bn(name, cin, cout, k):
        shapes[f"{name}.weight"] = ((cout, cin, k, k), "<f4")
        bn = name.replace("conv", "bn") if "conv" in name else name[:-1] + "1"
        for part in ("weight", "bias", "running_mean", "running_var"):
            shapes[f"{bn}.{part}"] = ((cout,), "<f4")
        shapes[f"{bn}.num_batches_tracked"] = ((), "<i8")
    conv_bn("conv1", 3, w(64), 7)
    cin = w(64)
    for stage, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512)), start=1):
        for b in range(blocks):
            p = f"layer{stage}.{b}"
            conv_bn(f"{p}.conv1", cin, w(width), 1)
            conv_bn(f"{p}.conv2", w(width), w(width), 3)
            conv_bn(f"{p}.conv3", w(width), w(width * 4), 1)
            if b == 0:
                conv_bn(f"{p}.downsample.0", cin, w(width * 4), 1)
            cin = w(width * 4)
    shapes["fc.weight"] = ((1000, cin), "<f4")
    shapes["fc.bias"] = ((1000,), "<f4")
    return shapes


def make_resnet(d, scale="1.44", quiet=False):
    """Stored and deflated archives of random ResNet-like weights (deflate keeps ~92% of such bytes)."""
    rng = np.random.default_rng(5)
    arrays = {}
    for name, (shape, dt) in resnet_shapes(float(scale)).items():
        arrays[name] = np.array(1, dtype=dt) if shape == () else (rng.standard_normal(shape, dtype=np.float32) * 0.05).astype(dt)
    np.savez(os.path.join(d, "resnet_stored.npz"), **arrays)
    np.savez_compressed(os.path.join(d, "resnet_deflated.npz"), **arrays)
    if not quiet:
        json.dump({"members": len(arrays), "parameters": int(sum(a.size for a in arrays.values()))}, sys.stdout)


def median_time(fn, repeats):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def cases(d):
    """numpy's side of each paired case, by the name the Node side uses: one definition for the
    one-shot timing and the interleaved rounds of `serve`."""
    f4 = os.path.join(d, "f4.npy")
    be = os.path.join(d, "f8_be.npy")
    fo = os.path.join(d, "f4_F.npy")
    rec = os.path.join(d, "rec3000.npy")
    out = os.path.join(d, "np_save_out.npy")
    from numpy.lib import format as fmt
    def header_parse():
        with open(rec, "rb") as fh:
            fmt.read_magic(fh)
            fmt.read_array_header_2_0(fh, max_header_size=10**9)
    lazy = {}
    def arr():
        if "f4" not in lazy:
            lazy["f4"] = np.load(f4)
        return lazy["f4"]
    def fortran():
        if "F" not in lazy:
            lazy["F"] = np.load(fo)
        return lazy["F"]
    def allclose():
        try:
            np.testing.assert_allclose(np.load(os.path.join(d, "diff_a.npy")), np.load(os.path.join(d, "diff_b.npy")))
        except AssertionError:
            pass
    def big_endian():
        if "be" not in lazy:
            lazy["be"] = np.load(be)
        return lazy["be"]
    def member():
        if "member" not in lazy:
            lazy["member"] = np.load(os.path.join(d, "deflated.npz"))["member"]
        return lazy["member"]
    return {
        "loadNpy": lambda: np.load(f4),
        "byteswap": lambda: np.load(be).astype("<f8"),
        "toC": lambda: np.ascontiguousarray(np.load(fo)),
        "toC_inmemory": lambda: np.ascontiguousarray(fortran()),
        "saveNpy": lambda: np.save(out, arr()),
        # The same save to a path that is not there (the last run's file removed first, in the timing).
        "saveNpy_new": lambda: (os.remove(out + ".new.npy") if os.path.exists(out + ".new.npy") else None, np.save(out + ".new.npy", arr())),
        "header3000": header_parse,
        "loadNpz": lambda: np.load(os.path.join(d, "deflated.npz"))["member"],
        "objects": lambda: np.load(os.path.join(d, "objects.npy"), allow_pickle=True),
        "saveNpz": lambda: np.savez_compressed(out + ".npz", member=member()),
        "csv_export": lambda: np.savetxt(out + ".csv", np.load(os.path.join(d, "table.npy")), delimiter=",", fmt="%.17g"),
        "csv_import": lambda: np.save(out, np.loadtxt(os.path.join(d, "table.csv"), delimiter=",")),
        "diff": allclose,
        "resnet_stored": lambda: {k: v for k, v in np.load(os.path.join(d, "resnet_stored.npz")).items()},
        "resnet_deflated": lambda: {k: v for k, v in np.load(os.path.join(d, "resnet_deflated.npz")).items()},
        "many_files": lambda: [np.load(os.path.join(d, "many", f"{i:05d}.npy")) for i in range(10_000)],
        "strings1m": lambda: np.load(os.path.join(d, "strings1m.npy"), allow_pickle=True),
        "byteswap_inmemory": lambda: big_endian().astype("<f8"),
    }


def region_cases(d):
    """Region reads through numpy's memory map, for the interleaved rounds only (the files are made
    later in the run than the other cases')."""
    def big():
        name = next(f for f in sorted(os.listdir(d)) if f.startswith("big-") and f.endswith("g.npy"))
        return np.load(os.path.join(d, name), mmap_mode="r")
    return {
        "region_row": lambda: np.array((lambda a: a[a.shape[0] // 2, :])(big())),
        "region_block": lambda: np.array(big()[:, 100:108]),
        "column": lambda: np.array(np.load(os.path.join(d, "column.npy"), mmap_mode="r")[:, 7]),
    }


def serve(d):
    """Interleaved rounds: each line `NAME REPEATS` on stdin is answered with numpy's median time of
    that case (after one warm-up run) as a line of JSON, so the Node side can alternate with it."""
    table = {**cases(d), **region_cases(d)}
    for line in sys.stdin:
        name, repeats = line.split()
        print(json.dumps(median_time(table[name], int(repeats))), flush=True)
    for leftover in ("np_save_out.npy", "np_save_out.npy.npz", "np_save_out.npy.csv", "np_save_out.npy.new.npy"):
        if os.path.exists(os.path.join(d, leftover)):
            os.remove(os.path.join(d, leftover))


def timing(d, repeats):
    repeats = int(repeats)
    table = cases(d)
    res = {name: median_time(fn, max(repeats, 20) if name == "header3000" else max(3, repeats // 2) if name == "saveNpz" else repeats) for name, fn in table.items()}
    out = os.path.join(d, "np_save_out.npy")
    be_array = np.load(os.path.join(d, "f8_be.npy"))
    # byteswap_inmemory (in cases) again with every result kept, so that each astype writes to fresh
    # memory, as a new JavaScript buffer always is (there, numpy's allocator hands back the pages
    # just freed).
    kept = []
    res["byteswap_inmemory_fresh"] = median_time(lambda: kept.append(be_array.astype("<f8")), repeats)
    del kept
    os.remove(out + ".npz")
    os.remove(out)
    res["version"] = np.__version__
    json.dump(res, sys.stdout)


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    {"make": make, "time": timing, "make-big": make_big, "time-regions": time_regions, "column": column, "ragged": ragged_objects, "make-resnet": make_resnet, "serve": serve}[cmd](*args)

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
    """The issue-16 case: a C-order float32 file of `gib` GiB with 1024 columns (rows 4 KiB apart),
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
    """numpy's way today: object arrays of 1M short strings and 10k float32 sequences, pickled."""
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
        t = _t.perf_counter(); np.save(path, a, allow_pickle=True); write = _t.perf_counter() - t
        idx = pick.integers(0, len(a), 100)
        t = _t.perf_counter(); loaded = np.load(path, allow_pickle=True); got = [loaded[i] for i in idx]; read = _t.perf_counter() - t
        out[name] = {"bytes": os.path.getsize(path), "write": write, "read100": read}
        # The same elements for npyts, as plain arrays it can write.
        if name == "strings":
            with open(os.path.join(d, "strings.txt"), "w", encoding="utf-8") as fh:
                fh.write("\n".join(a))
        else:
            np.save(os.path.join(d, "seq_lengths.npy"), np.array([len(x) for x in a], dtype="<i8"))
            np.save(os.path.join(d, "seq_values.npy"), np.concatenate(list(a)))
    json.dump(out, sys.stdout)


def median_time(fn, repeats):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def timing(d, repeats):
    repeats = int(repeats)
    f4 = os.path.join(d, "f4.npy")
    be = os.path.join(d, "f8_be.npy")
    fo = os.path.join(d, "f4_F.npy")
    rec = os.path.join(d, "rec3000.npy")
    arr = np.load(f4)
    out = os.path.join(d, "np_save_out.npy")
    from numpy.lib import format as fmt
    def header_parse():
        with open(rec, "rb") as fh:
            fmt.read_magic(fh)
            fmt.read_array_header_2_0(fh, max_header_size=10**9)
    res = {
        "loadNpy": median_time(lambda: np.load(f4), repeats),
        "byteswap": median_time(lambda: np.load(be).astype("<f8"), repeats),
        "toC": median_time(lambda: np.ascontiguousarray(np.load(fo)), repeats),
        "toC_inmemory": median_time((lambda a: (lambda: np.ascontiguousarray(a)))(np.load(fo)), repeats),
        "saveNpy": median_time(lambda: np.save(out, arr), repeats),
        "header3000": median_time(header_parse, max(repeats, 20)),
        "loadNpz": median_time(lambda: np.load(os.path.join(d, "deflated.npz"))["member"], repeats),
        "objects": median_time(lambda: np.load(os.path.join(d, "objects.npy"), allow_pickle=True), repeats),
        "saveNpz": median_time((lambda m: lambda: np.savez_compressed(out + ".npz", member=m))(np.load(os.path.join(d, "deflated.npz"))["member"]), max(3, repeats // 2)),
    }
    os.remove(out + ".npz")
    os.remove(out)
    res["version"] = np.__version__
    json.dump(res, sys.stdout)


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    {"make": make, "time": timing, "make-big": make_big, "time-regions": time_regions, "column": column, "ragged": ragged_objects}[cmd](*args)

# The Python side of bench/refs.mjs. `make DIR N`: N .npy files of 64 rows × 16 float32 (4 KiB of
# data each, as many workers would write them); a set already made is kept. `serve DIR`: times a case
# when asked (paired.mjs): `headers`, numpy reading every file's header (read_magic, then
# read_array_header_1_0 or _2_0). `dask DIR REFS ROUNDS`: run by Debian's /usr/bin/python3 (zarr,
# dask): dask's sum over the reference set against dask's sum over the same files np.load'ed,
# interleaved, the threaded scheduler on both sides; prints the medians and the per-round ratios.
import glob, json, os, sys, time
import side_serve  # bench/side_serve.py, beside this file
import numpy as np


def files(d):
    return sorted(glob.glob(os.path.join(d, 'part-*.npy')))


def make(d, n):
    os.makedirs(d, exist_ok=True)
    n = int(n)
    if len(files(d)) != n:
        for f in files(d):
            os.remove(f)
        for i in range(n):
            np.save(os.path.join(d, f'part-{i:05d}.npy'), np.full((64, 16), i, np.float32))
    print(json.dumps({'files': n, 'bytes': sum(os.path.getsize(f) for f in files(d))}))


def headers(d):
    fmt = np.lib.format
    for path in files(d):
        with open(path, 'rb') as f:
            major, _ = fmt.read_magic(f)
            (fmt.read_array_header_1_0 if major == 1 else fmt.read_array_header_2_0)(f)


def serve(d):
    side_serve.serve({'headers': lambda: headers(d)})


def dask_side(d, refs, rounds):
    import dask, dask.array as da, fsspec
    dask.config.set(scheduler='threads')
    paths = files(d)

    def by_refs():
        x = da.from_zarr(fsspec.filesystem('reference', fo=refs).get_mapper(''), component='part-00000')
        return float(x.sum().compute())

    def by_load():
        x = da.concatenate([da.from_array(np.load(p), chunks=-1) for p in paths])
        return float(x.sum().compute())

    assert by_refs() == by_load()
    ours, theirs, ratios = [], [], []
    for r in range(int(rounds)):
        pair = [by_refs, by_load] if r % 2 == 0 else [by_load, by_refs]
        t = {}
        for fn in pair:
            s = time.perf_counter()
            fn()
            t[fn] = time.perf_counter() - s
        ours.append(t[by_refs])
        theirs.append(t[by_load])
        ratios.append(t[by_refs] / t[by_load])
    mid = lambda xs: sorted(xs)[len(xs) // 2]
    print(json.dumps({'seconds': mid(ours), 'baseline': mid(theirs), 'ratio': mid(ratios), 'spread': [min(ratios), max(ratios)], 'rounds': int(rounds)}))


if __name__ == '__main__':
    cmd, *args = sys.argv[1:]
    {'make': make, 'serve': serve, 'dask': dask_side}[cmd](*args)

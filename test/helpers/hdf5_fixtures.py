# HDF5 fixtures written by h5py, and what h5py reads back from each: one process writes every file
# of test/hdf5/hdf5.test.mjs into argv[1], the values of every dataset into argv[1]/expect/<file>/,
# and prints a JSON report (each file's tree: groups' members in h5py's order, attributes, datasets'
# shapes and dtypes, or the reason h5py's own reading would be refused by npyts).
import json
import os
import sys

import h5py
import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
NUMERIC = ['|i1', '|u1', '<i2', '>i2', '<u2', '>u2', '<i4', '>i4', '<u4', '>u4', '<i8', '>i8', '<u8', '>u8', '<f2', '>f2', '<f4', '>f4', '<f8', '>f8']
rng = np.random.default_rng(7)


def values(dt, shape):
    dt = np.dtype(dt)
    if dt.kind == 'f':
        return (rng.standard_normal(shape) * 100).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, dtype=dt.newbyteorder('=')).astype(dt)


def attr_json(v):
    if isinstance(v, bytes):
        return {'str': v.decode('utf-8')}
    if isinstance(v, str):
        return {'str': v}
    if isinstance(v, np.ndarray):
        if v.dtype.kind in 'SO' or v.dtype.kind == 'U':
            return {'strs': [x.decode('utf-8') if isinstance(x, bytes) else str(x) for x in v.ravel().tolist()]}
        return {'array': v.ravel().tolist(), 'shape': list(v.shape), 'dtype': v.dtype.str}
    if isinstance(v, (np.bool_, bool)):
        return {'bool': bool(v)}
    if isinstance(v, (np.integer, int)):
        return {'int': str(int(v))}
    if isinstance(v, (np.floating, float)):
        return {'float': float(v)}
    if isinstance(v, h5py.Empty):
        return {'empty': True}
    if isinstance(v, np.void):
        return {'array': list(v.tobytes()), 'shape': [], 'dtype': v.dtype.str}
    raise TypeError(type(v))


def tree(fname):
    expect = os.path.join(out, 'expect', fname)
    os.makedirs(expect, exist_ok=True)
    objects = {}
    with h5py.File(os.path.join(out, fname), 'r') as f:
        def visit(path, obj):
            entry = {'attrs': {k: attr_json(obj.attrs[k]) for k in obj.attrs.keys()}}
            if isinstance(obj, h5py.Group):
                links = {k: obj.get(k, getlink=True) for k in obj.keys()}
                entry['kind'] = 'group'
                entry['children'] = list(obj.keys())
                for k, link in links.items():
                    child = path.rstrip('/') + '/' + k
                    if isinstance(link, h5py.HardLink):
                        visit(child, obj[k])
                    else:
                        objects[child] = {'kind': 'link', 'link': type(link).__name__}
            else:
                entry['kind'] = 'dataset'
                # h5py.Empty (a null dataspace): no shape, no values.
                entry['shape'] = None if obj.shape is None else list(obj.shape)
                entry['dtype'] = obj.dtype.str
                entry['chunks'] = obj.chunks is not None
                # Where h5py says the bytes are in the file (past a user block too), None for compact or chunked.
                entry['offset'] = obj.id.get_offset()
                if obj.chunks is None and obj.shape is not None and obj.dtype.kind in 'iufSV':
                    # npyts arrays hold values in the machine's order, whatever the file's.
                    data = np.ascontiguousarray(obj[()])
                    data = data.astype(data.dtype.newbyteorder('='))
                    name = str(len(objects)) + '.bin'
                    with open(os.path.join(expect, name), 'wb') as b:
                        b.write(data.tobytes())
                    entry['bin'] = name
            objects[path] = entry
        visit('/', f)
    return objects


def compact(group, name, data):
    space = h5py.h5s.create_simple(data.shape)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    tid = h5py.h5t.py_create(data.dtype)
    ds = h5py.h5d.create(group.id, name.encode(), tid, space, dcpl=dcpl)
    ds.write(h5py.h5s.ALL, h5py.h5s.ALL, data)


def common(f, small):
    # small: few attributes, kept in the object header by libver='latest' (more go to dense storage)
    # (with libver='latest', a group of more than 8 members goes to dense storage: small ones split them)
    for dt in NUMERIC:
        f[f'num{"_" + dt[1] if small else ""}/{dt[1:]}{"_be" if dt[0] == ">" else ""}'] = values(dt, (3, 4) if not small else (5,))
    f['scalar'] = np.float64(3.25)
    f['empty'] = np.zeros((0, 3), dtype='<f4')
    f['strings'] = np.array([b'a', b'bcd', b'xyz12'])
    if not small:
        f['opaque'] = np.frombuffer(bytes(range(12)), dtype='V4')
    compact(f, 'compact', values('<i4', (2, 3)))
    g = f.create_group('meta')
    g.attrs['name'] = 'dense'
    g.attrs['layer_names'] = np.array([b'dense', b'dense_1', b'batch_normalization'])
    g.attrs['vlen_list'] = np.array(['x', 'yy', 'zzz'], dtype=h5py.string_dtype())
    g.attrs['big'] = np.int64(2**62 + 3)
    g.attrs['vec'] = np.arange(6, dtype='>i2').reshape(2, 3)
    g.attrs['nothing'] = h5py.Empty('f4')
    f['num_f/f4' if small else 'num/f4'].attrs['dtype'] = 'bfloat16'
    if small:
        return
    g.attrs['unicode'] = 'héllo wörld ✓'
    g.attrs['count'] = np.int64(42)
    g.attrs['neg'] = np.int8(-5)
    g.attrs['ratio'] = np.float32(0.5)
    g.attrs['floats'] = np.array([1.5, -2.25], dtype='<f8')
    g.attrs['empty_str'] = ''
    g.attrs['bytes_scalar'] = np.bytes_(b'keras')
    # float16 scalars (either byte order) and an opaque one, decoded as a dataset's values are.
    g.attrs['half'] = np.float16(42.3125)
    g.attrs['half_be'] = np.array(-0.333, dtype='>f2')
    g.attrs['void'] = np.void(b'\x01\x02\x03\x04')
    # Names an object's prototype has: attributes like any other.
    g.attrs['__proto__'] = 'p'
    g.attrs['constructor'] = np.int32(7)
    # h5py.Empty as a dataset (a null dataspace): its shape is None, its value Empty.
    f.create_dataset('nothing', data=h5py.Empty('<f4')).attrs['nothing'] = h5py.Empty('i8')
    # track_order=True: attributes and members in creation order (a version 2 object header keeps each attribute's).
    t = f.create_group('tracked', track_order=True)
    for k in ['zeta', 'alpha', 'mid']:
        t.attrs[k] = k
        t[k] = np.array([1.0], dtype='<f4')
    d = f['num/f4']
    for i in range(30):
        d.attrs[f'extra_{i}'] = i  # forces continuation blocks after the dataset's first header block


files = {}

# h5py's default: superblock 0, object headers 1, symbol-table groups, one with a deep B-tree.
with h5py.File(os.path.join(out, 'default.h5'), 'w') as f:
    common(f, small=False)
    many = f.create_group('many')
    for i in range(300):
        many[f'w{i}'] = np.array([i], dtype='<i4')
    f.create_group('a/b/c/d').attrs['deep'] = 'yes'
files['default.h5'] = tree('default.h5')

# libver='latest': superblock 3, object headers 2, compact link-message groups, track_order.
with h5py.File(os.path.join(out, 'latest.h5'), 'w', libver='latest') as f:
    common(f.create_group('x'), small=True)
    f.create_group('y')
    t = f.create_group('ordered', track_order=True)
    for k in ['zeta', 'alpha', 'mid']:
        t[k] = np.array([1.0], dtype='<f4')
        t.attrs[k] = np.int16(len(k))
files['latest.h5'] = tree('latest.h5')

# User blocks: the superblock at 512 (zeros before it, as h5py leaves them) and at 2048 (text
# written into the block), with libver='latest' for the second: addresses count from the superblock.
for fname, size, libver, text in [('userblock.h5', 512, 'earliest', b''), ('userblock_latest.h5', 2048, 'latest', b'npyts user block: any bytes')]:
    with h5py.File(os.path.join(out, fname), 'w', userblock_size=size, libver=libver) as f:
        f['w'] = values('<f4', (3, 4))
        f['g/b'] = values('>i2', (5,))
        f['g'].attrs['name'] = 'dense'
        compact(f, 'compact', values('<i4', (2, 3)))
    with open(os.path.join(out, fname), 'r+b') as b:
        b.write(text)
    files[fname] = tree(fname)

# What npyts refuses by name: chunks, filters, soft and external links, dense groups, enums.
with h5py.File(os.path.join(out, 'refused.h5'), 'w') as f:
    f.create_dataset('chunked', data=np.arange(100, dtype='<f4'), chunks=(10,))
    f.create_dataset('gzip', data=np.arange(100, dtype='<f4'), compression='gzip')
    f['plain'] = np.arange(4, dtype='<f4')
    f['soft'] = h5py.SoftLink('/plain')
    f['external'] = h5py.ExternalLink('other.h5', '/x')
    f['bools'] = np.array([True, False])
    # Values in external files (h5py reads them from there): refused, naming them.
    for i in (1, 2):
        with open(os.path.join(out, f'ext{i}.bin'), 'wb') as b:
            b.write(np.arange(2, dtype='<f4').tobytes())
    f.create_dataset('external_storage', shape=(4,), dtype='<f4', external=[(os.path.join(out, f'ext{i}.bin'), 0, 8) for i in (1, 2)])
    f['vlen'] = np.array(['a', 'bb'], dtype=h5py.string_dtype())
    f.attrs['bool_attr'] = np.bool_(True)
with h5py.File(os.path.join(out, 'dense.h5'), 'w', libver='latest') as f:
    for i in range(20):
        f[f'd{i}'] = np.array([i])
        f.attrs[f'a{i}'] = i
files['refused.h5'] = tree('refused.h5')

# A hard link to an ancestor: a cycle that h5py writes and reads (visiting each object once).
with h5py.File(os.path.join(out, 'cycle.h5'), 'w') as f:
    f['a/b/w'] = np.arange(3, dtype='<f4')
    f['a/b/loop'] = f['a']

json.dump({'files': files}, sys.stdout)

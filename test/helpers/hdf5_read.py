# Reads HDF5 files with h5py and prints every object as JSON: groups' members in h5py's order,
# attributes, datasets' dtype, shape and bytes (hex). Used to check npyts's HDF5 writer.
import json, sys
import h5py

def walk(f):
    out = {}
    def visit(name, obj):
        attrs = {}
        for k, v in obj.attrs.items():
            attrs[k] = v.decode() if isinstance(v, bytes) else (v if isinstance(v, str) else float(v))
        if isinstance(obj, h5py.Group):
            out[name] = {'kind': 'group', 'members': list(obj.keys()), 'attrs': attrs}
        else:
            out[name] = {'kind': 'dataset', 'dtype': obj.dtype.str, 'shape': list(obj.shape), 'hex': obj[()].tobytes().hex(), 'attrs': attrs}
    visit('/', f)
    f.visititems(visit)
    return out

print(json.dumps({p: walk(h5py.File(p, 'r')) for p in sys.argv[1:]}))

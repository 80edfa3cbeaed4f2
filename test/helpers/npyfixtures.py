"""numpy's side of the npyts tests: writes fixtures, computes what numpy says about them, and checks our files.

Usage: python3 npyfixtures.py COMMAND ARGS...   (see the functions named cmd_*)
"""
import io, json, sys, os
import numpy as np

INT_LIMIT = 2**53 - 1
BIG_HEADER = 10**9


# ---------------------------------------------------------------- expected JSON (the CLI's document rules)
def jfloat(x):
    # A long double no float64 holds is numpy's str() of it (a string, as integers past 2**53 are).
    if isinstance(x, np.longdouble) and np.isfinite(x) and np.longdouble(float(x)) != x:
        return str(x)
    x = float(x)
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def jint(x):
    x = int(x)
    return x if abs(x) <= INT_LIMIT else str(x)


def nest(a, fn):
    """Apply fn to every element of a (in C order) and return nested lists like tolist()."""
    if not isinstance(a, np.ndarray):
        return fn(a)
    if a.ndim == 0:
        return fn(a[()])
    return [nest(a[i], fn) for i in range(a.shape[0])]


def to_json(a):
    dt = a.dtype
    if dt.names is not None:
        per_field = {n: to_json(a[n]) for n in dt.names}
        def zipper(fields, depth):
            if depth == a.ndim:
                return dict(fields)
            length = a.shape[depth]
            return [zipper({n: f[i] for n, f in fields.items()}, depth + 1) for i in range(length)]
        return zipper(per_field, 0)
    k = dt.kind
    if k == "M" and np.datetime_data(dt)[0] != "generic":
        # Datetimes as numpy's ISO 8601 text in their own unit ("NaT" for NaT). numpy's own bug:
        # datetime_as_string reads big-endian values unswapped (1970-01-02 prints as year 197286991625146),
        # so they are made native first; test/format/datetime-text.test.mjs shows it.
        return nest(np.datetime_as_string(a.astype(dt.newbyteorder("="))), lambda v: str(v))
    if k in "Mm":
        # A same-size view keeps the stored byte order (astype of generic units would not swap).
        counts = a.view((dt.byteorder if dt.byteorder in "<>" else "=") + "i8")
        nat = np.iinfo(np.int64).min
        return nest(counts, lambda v: "NaT" if int(v) == nat else jint(v))
    if k == "b":
        return nest(a, lambda v: bool(v))
    if k in "iu":
        return nest(a, jint)
    if k == "f":
        return nest(a, jfloat)
    if k == "c":
        return nest(a, lambda v: [jfloat(v.real), jfloat(v.imag)])
    if k == "S":
        return nest(a, lambda v: bytes(v).decode("latin-1"))
    if k == "U":
        return nest(a, lambda v: str(v))
    if k == "V":
        return nest(a, lambda v: bytes(v).hex())
    if k == "O":
        return nest(a, py_json)
    if k == "T":  # numpy 2's StringDType
        return nest(a, lambda v: str(v))
    raise ValueError(dt)


def py_json(v):
    """A Python value as npyts' JSON document shows it (see the README's object-array rules)."""
    import datetime, decimal, fractions
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, np.ndarray):
        return to_json(v)
    if isinstance(v, np.datetime64):
        # A numpy datetime64 scalar inside an object array is unpickled as its bare count (no dtype kept).
        return jint(np.array(v).view("i8")) if not np.isnat(v) else "NaT"
    if isinstance(v, np.generic):
        return to_json(np.array(v))
    if isinstance(v, int):
        return jint(v)
    if isinstance(v, float):
        return jfloat(v)
    if isinstance(v, complex):
        return [jfloat(v.real), jfloat(v.imag)]
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("latin-1")
    if isinstance(v, (list, tuple, set, frozenset)):
        return [py_json(x) for x in v]
    if isinstance(v, dict):
        return {(k if isinstance(k, str) else str(py_json(k))): py_json(x) for k, x in v.items()}
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, datetime.timedelta):
        return {"days": v.days, "seconds": v.seconds, "microseconds": v.microseconds}
    if isinstance(v, (decimal.Decimal, fractions.Fraction)):
        return str(v)
    if isinstance(v, (slice, range)):
        return {type(v).__name__: [py_json(v.start), py_json(v.stop), py_json(v.step)]}
    raise ValueError(type(v))


def descr_json(d):
    if isinstance(d, str):
        return d
    out = []
    for f in d:
        name = list(f[0]) if isinstance(f[0], tuple) else f[0]
        entry = [name, descr_json(f[1])]
        if len(f) == 3:
            entry.append(list(f[2]))
        out.append(entry)
    return out


def document(path):
    try:
        from numpy.lib import _format_impl as fmt
    except ImportError:  # numpy 1.x
        from numpy.lib import format as fmt
    with open(path, "rb") as fh:
        version = fmt.read_magic(fh)
        shape, fortran, dtype = fmt._read_array_header(fh, version, max_header_size=BIG_HEADER)
    a = np.load(path, max_header_size=BIG_HEADER)
    return {
        "version": list(version),
        "descr": descr_json(np.lib.format.dtype_to_descr(a.dtype)),
        "fortran_order": bool(fortran),
        "shape": list(a.shape),
        "data": to_json(a),
    }


# ---------------------------------------------------------------- deterministic fill of any dtype
def fill(view, seed):
    dt = view.dtype
    n = view.size
    if dt.names is not None:
        for i, name in enumerate(dt.names):
            fill(view[name], seed + 3 * i + 1)
        return
    k = dt.kind
    idx = (np.arange(n) + seed).reshape(view.shape) if n else np.zeros(view.shape, int)
    if k == "b":
        view[...] = idx % 3 == 1
    elif k in "iu":
        info = np.iinfo(dt)
        vals = [info.min, info.max, 0, 1, -1 if k == "i" else 2, 17 + seed]
        view[...] = np.array([vals[i % len(vals)] for i in range(n)], dtype=dt.newbyteorder("=")).reshape(view.shape) if n else 0
    elif k == "f":
        specials = [0.0, -0.0, 1.5, -2.25, np.nan, np.inf, -np.inf, 1e-40, 3.0e38, 0.1, 1 / 3, 65504.0]
        if dt.itemsize == 2:
            specials = [0.0, -0.0, 1.5, -2.25, np.nan, np.inf, -np.inf, 6e-8, 65504.0, 0.1, 1 / 3, 2049.0]
        if dt.itemsize >= 8:
            specials += [5e-324, 1.7e308, 2.0**-1030]
        vals = np.array([specials[(i + seed) % len(specials)] for i in range(n)], dtype=dt.newbyteorder("="))
        if dt.itemsize == 16 and n:
            vals = vals + np.longdouble(1) / 3  # values a float64 cannot hold exactly
            vals[0] = np.nan
        view[...] = vals.reshape(view.shape) if n else 0
    elif k == "c":
        half = np.dtype("f%d" % (dt.itemsize // 2))
        re = np.array([[0.5, -1.25, np.nan, np.inf, 1e-30][(i + seed) % 5] for i in range(n)], dtype=half)
        im = np.array([[2.0, -0.0, 3.5, -np.inf, 7.0][(i + seed) % 5] for i in range(n)], dtype=half)
        vals = np.empty(n, dt.newbyteorder("="))
        vals.real = re
        vals.imag = im
        view[...] = vals.reshape(view.shape)
    elif k == "S":
        words = [b"", b"a", b"ab\x00c", b"\xff\xe9", b"npyts!!"]
        view[...] = np.array([words[(i + seed) % 5][: dt.itemsize] for i in range(n)], dtype=dt).reshape(view.shape) if n else b""
    elif k == "U":
        words = ["", "é", "整形", "a\U0001F600b", "tab\tx"]
        cap = dt.itemsize // 4
        view[...] = np.array([words[(i + seed) % 5][:cap] for i in range(n)], dtype=dt).reshape(view.shape) if n else ""
    elif k == "V":
        raw = np.frombuffer(bytes((7 * i + seed) % 256 for i in range(n * dt.itemsize)), dtype=dt) if n else np.zeros(0, dt)
        view[...] = raw.reshape(view.shape)
    elif k in "Mm":
        vals = np.array([[0, 1, -1, 10**15, np.iinfo(np.int64).min, 2**62][(i + seed) % 6] for i in range(n)], dtype="i8")
        view[...] = vals.view(dt.newbyteorder("=")).reshape(view.shape) if n else 0
    else:
        raise ValueError(dt)


def make(dtype, shape, order="C", seed=0):
    dt = np.dtype(dtype)
    a = np.zeros(shape, dtype=dt)
    fill(a, seed)
    return np.asfortranarray(a) if order == "F" else a


# ---------------------------------------------------------------- the catalogue
SCALARS = ["b1", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8", "f16", "c8", "c16", "c32",
           "M8[ns]", "M8[D]", "m8[2s]", "M8", "m8[us]"]


def catalogue():
    cases = {}
    for s in SCALARS:
        for order_char in "<>":
            dt = np.dtype(order_char + s) if s not in ("b1", "i1", "u1") else np.dtype(s)
            tag = s.replace("[", "_").replace("]", "")
            cases[f"{tag}{'_be' if order_char == '>' else ''}_C"] = make(dt, (2, 3))
            cases[f"{tag}{'_be' if order_char == '>' else ''}_F"] = make(dt, (2, 3), "F", seed=1)
            if s in ("b1", "i1", "u1"):
                break
    cases["f4_0d"] = make("<f4", ())
    cases["i8_0d"] = make(">i8", (), seed=1)
    cases["f8_empty"] = make("<f8", (0,))
    cases["i2_empty_3d"] = make("<i2", (3, 0, 2))
    cases["f4_4d_C"] = make("<f4", (2, 3, 4, 5))
    cases["f8_4d_F"] = make("<f8", (2, 3, 4, 5), "F")
    cases["u2_4d_F_be"] = make(">u2", (3, 1, 4, 2), "F")
    cases["f4_F_1d"] = np.asfortranarray(make("<f4", (7,)))
    cases["S5"] = make("S5", (2, 3))
    cases["S5_F"] = make("S5", (2, 3), "F")
    cases["S0"] = np.zeros((3,), "S0") if hasattr(np, "zeros") else None
    cases["U3"] = make("<U3", (5,))
    cases["U3_be_F"] = make(">U3", (2, 3), "F")
    cases["V7"] = make("V7", (4,))
    cases["rec_nested"] = make([("a", "<i4"), ("b", [("c", "<f8"), ("d", "S3")]), ("e", "<u2", (2, 3))], (3,))
    cases["rec_aligned"] = make(np.dtype("i1,i4,i1", align=True), (4,))
    cases["rec_titles"] = make(np.dtype({"names": ["a", "b"], "formats": ["<i4", ">f4"], "titles": ["my title", None]}), (2,))
    cases["rec_offsets"] = make(np.dtype({"names": ["x", "y"], "formats": ["<f8", "<i2"], "offsets": [4, 16], "itemsize": 24}), (2,))
    cases["rec_sub_of_rec"] = make([("p", [("x", "<f4"), ("y", ">i2")], (2,)), ("q", "M8[s]")], (2, 2))
    cases["rec_F"] = make([("a", ">i8"), ("b", "<U2"), ("c", "?")], (3, 2), "F")
    cases["rec_F_sub"] = make([("a", "<i2", (2,)), ("b", "f2")], (2, 3), "F")
    cases["rec_mixed_be"] = make([("t", ">M8[ms]"), ("d", ">m8[s]"), ("z", ">c16"), ("s", ">U4"), ("h", ">f2"), ("g", ">f16")], (3,))
    cases["rec_empty"] = np.zeros((2,), np.dtype({"names": [], "formats": [], "itemsize": 8}))
    cases["rec_latin1_name"] = make([("é", "<i4"), ("b", "<f4")], (2,))
    cases["rec_utf8_name_v3"] = make([("整形", "<i4"), ("b", "<f4")], (2,))
    cases["rec_deep"] = make([("l1", [("l2", [("l3", [("l4", [("v", "<i4", (2,))])])])])], (2,))
    cases["rec_0d"] = make([("a", "<i4"), ("b", "<f8")], ())
    many = np.dtype([(f"field_{i}", "<i4") for i in range(4000)])
    cases["rec_4000_fields_v2"] = make(many, (2,))
    return {k: v for k, v in cases.items() if v is not None}


def cmd_catalogue(outdir):
    os.makedirs(outdir, exist_ok=True)
    manifest = []
    for name, arr in catalogue().items():
        path = os.path.join(outdir, name + ".npy")
        np.save(path, arr)
        manifest.append({"name": name, "file": path, "doc": document(path)})
    json.dump(manifest, sys.stdout)


def cmd_documents(*paths):
    json.dump([document(p) for p in paths], sys.stdout)


def spec_value(v, dt):
    """JSON spec values → what np.array takes (records as tuples, complex from {re, im})."""
    if dt.names is not None:
        return tuple(spec_value(v[n], dt.fields[n][0]) for n in dt.names)
    if dt.subdtype is not None:
        base = dt.subdtype[0]
        def walk(x):
            return [walk(y) for y in x] if isinstance(x, list) else spec_value(x, base)
        return walk(v)
    if isinstance(v, dict) and "re" in v:
        return complex(float(v["re"]), float(v["im"]))
    if dt.kind == "S" and isinstance(v, str):
        return v.encode("latin-1")
    if dt.kind in "iu" and isinstance(v, str):
        return int(v)
    if dt.kind in "Mm" and isinstance(v, str):
        return np.array(np.iinfo(np.int64).min if v == "NaT" else int(v)).astype(dt)
    return v


def cmd_check_writes(spec_path):
    """Each spec: {file, descr, values (flat, C order), shape, order, version?}: our file must equal np.save's bytes."""
    specs = json.load(open(spec_path))
    results = []
    for s in specs:
        dt = np.lib.format.descr_to_dtype(eval_descr(s["descr"]))
        # Assigning into zeros of the target order leaves record padding zero (np.array and
        # numpy's order-changing copies leave padding bytes uninitialised; we write zeros).
        expected = np.zeros(s["shape"], dtype=dt, order=s.get("order", "C"))
        expected[...] = np.array([spec_value(v, dt) for v in s["values"]], dtype=dt).reshape(s["shape"])
        if dt.names is None and (dt.kind, dt.itemsize) in (("f", 16), ("c", 32)):
            # x86 long double: 10 value bytes + 6 padding bytes that numpy's casts leave as they find them.
            u = np.ndarray((expected.nbytes // 16, 16), np.uint8, buffer=expected)
            if dt.byteorder == ">":
                u[:, :6] = 0
            else:
                u[:, 10:] = 0
        buf = io.BytesIO()
        if s.get("version"):
            np.lib.format.write_array(buf, expected, version=(s["version"], 0))
        else:
            np.save(buf, expected)
        ours = open(s["file"], "rb").read()
        loaded = np.load(s["file"], max_header_size=BIG_HEADER)
        same_values = loaded.dtype == expected.dtype and loaded.shape == expected.shape and loaded.tobytes(order="A") == expected.tobytes(order="A")
        results.append({"file": s["file"], "identical": ours == buf.getvalue(), "values": bool(same_values),
                        "numpy_bytes": buf.getvalue()[:400].hex(), "our_bytes": ours[:400].hex()})
    json.dump(results, sys.stdout)


def eval_descr(d):
    """Our JSON descr back into numpy's descr form (lists of tuples)."""
    if isinstance(d, str):
        return d
    out = []
    for f in d:
        name = tuple(f[0]) if isinstance(f[0], list) else f[0]
        out.append((name, eval_descr(f[1])) if len(f) == 2 else (name, eval_descr(f[1]), tuple(f[2])))
    return out


def cmd_check_transform(pairs_path):
    """[{source, ours, order?, byteorder?, version?}]: ours must be what numpy writes for the transformed source."""
    out = []
    for p in json.load(open(pairs_path)):
        a = np.load(p["source"], max_header_size=BIG_HEADER)
        if p.get("byteorder"):
            a = a.astype(a.dtype.newbyteorder({"little": "<", "big": ">", "native": "="}[p["byteorder"]]))
        if p.get("order"):
            a = np.asarray(a, order=p["order"])  # (asfortranarray would turn 0-d into 1-d)
        buf = io.BytesIO()
        np.lib.format.write_array(buf, a, version=(p["version"], 0) if p.get("version") else None)
        out.append(open(p["ours"], "rb").read() == buf.getvalue())
    json.dump(out, sys.stdout)


def cmd_dtypes(spec_path):
    """For each spelling: numpy's dtype str, name, itemsize and descr, or the error."""
    out = []
    for s in json.load(open(spec_path)):
        try:
            dt = np.dtype(s) if isinstance(s, str) else np.lib.format.descr_to_dtype(eval_descr(s))
            out.append({"str": dt.str, "name": dt.name, "itemsize": dt.itemsize,
                        "descr": descr_json(np.lib.format.dtype_to_descr(dt)) if dt.subdtype is None else None})
        except Exception as e:
            out.append({"error": type(e).__name__})
    json.dump(out, sys.stdout)


def cmd_loads(*paths):
    """Whether np.load accepts each file (allow_pickle=False)."""
    out = []
    for p in paths:
        try:
            np.load(p, max_header_size=BIG_HEADER)
            out.append(True)
        except Exception:
            out.append(False)
    json.dump(out, sys.stdout)



# ---------------------------------------------------------------- hand-made headers (other writers, old numpy, hostile input)
def raw_npy(text, data, version=(1, 0), align=64, encoding="latin1", length=None, magic=b"\x93NUMPY"):
    body = text.encode(encoding) if isinstance(text, str) else text
    prefix_len = 8 + (2 if version[0] == 1 else 4)
    if align:
        pad = (-(prefix_len + len(body) + 1)) % align
        body = body + b" " * pad + b"\n"
    hlen = len(body) if length is None else length
    fmt = "<H" if version[0] == 1 else "<I"
    import struct
    return magic + bytes(version) + struct.pack(fmt, hlen) + body + data


def header_cases():
    f4 = np.arange(6, dtype="<f4").tobytes()
    std = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
    ok = {
        "keys_reordered": raw_npy("{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}", f4),
        "double_quotes": raw_npy('{"descr": "<f4", "fortran_order": False, "shape": (2, 3)}', f4),
        "multi_line": raw_npy("{'descr': '<f4',\n 'fortran_order': False,\n 'shape': (2, 3)}", f4),
        "comment_and_tabs": raw_npy("{'descr':\t'<f4', # a comment\n 'fortran_order': False, 'shape': (2,3)}", f4),
        "u_prefix": raw_npy("{u'descr': u'<f4', u'fortran_order': False, u'shape': (2, 3)}", f4),
        "align_16": raw_npy(std, f4, align=16),
        "unaligned": raw_npy(std + "\n", f4, align=None),
        "long_suffix_v1": raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", f4),
        "long_suffix_v2": raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", f4, version=(2, 0)),
        "trailing_bytes": raw_npy(std, f4 + b"trailing junk"),
        "fortran_true": raw_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", f4),
        "shape_space_comma": raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6, ), }", f4),
        "latin1_field_v1": raw_npy("{'descr': [('\xe9', '<i4')], 'fortran_order': False, 'shape': (2,), }", np.arange(2, dtype="<i4").tobytes()),
        "utf8_field_v3": raw_npy("{'descr': [('整形', '<i4')], 'fortran_order': False, 'shape': (2,), }", np.arange(2, dtype="<i4").tobytes(), version=(3, 0), encoding="utf8"),
        "subarray_descr_folded": raw_npy("{'descr': ('<i4', (2,)), 'fortran_order': False, 'shape': (3,), }", np.arange(6, dtype="<i4").tobytes()),
        "subarray_int_shape": raw_npy("{'descr': [('a', '<i2', 3)], 'fortran_order': False, 'shape': (1,), }", np.arange(3, dtype="<i2").tobytes()),
        "explicit_padding_fields": raw_npy("{'descr': [('a', '|u1'), ('', '|V3'), ('b', '<i4')], 'fortran_order': False, 'shape': (1,), }", bytes([9, 0, 0, 0, 7, 0, 0, 0])),
    }
    for i, spelling in enumerate(["=i4", "i4", "f", "<d", "float64", "<M8[2ns]", "|S0", "b1", "?", ">u8", "c", "S3", "U2", "int16", "<m8[25us]", "e", "D", "V3"]):
        dt = np.dtype(spelling)
        data = np.zeros(2, dt)
        fill(data, 3)
        ok[f"spelling_{i}"] = raw_npy("{'descr': %r, 'fortran_order': False, 'shape': (2,), }" % spelling, data.tobytes())
    bad = {
        "bad_magic": raw_npy(std, f4, magic=b"\x93NUMPX"),
        "not_npy_at_all": b"PK\x03\x04 this is a zip file",
        "truncated_magic": b"\x93NUM",
        "empty": b"",
        "version_4": raw_npy(std, f4, version=(4, 0)),
        "version_1_1": raw_npy(std, f4, version=(1, 1)),
        "header_past_end": raw_npy(std, b"", length=5000),
        "not_a_literal": raw_npy("{'descr': np.float32, 'fortran_order': False, 'shape': (2, 3), }", f4),
        "not_a_dict": raw_npy("['<f4', False, (2, 3)]", f4),
        "missing_key": raw_npy("{'descr': '<f4', 'shape': (2, 3), }", f4),
        "extra_key": raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", f4),
        "shape_list": raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }", f4),
        "shape_negative": raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }", f4),
        "shape_float": raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2.0, 3), }", f4),
        "fortran_not_bool": raw_npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3), }", f4),
        "unknown_descr": raw_npy("{'descr': '<x4', 'fortran_order': False, 'shape': (2, 3), }", f4),
        "bad_field_entry": raw_npy("{'descr': [('a',)], 'fortran_order': False, 'shape': (2, 3), }", f4),
        "bad_nested_field": raw_npy("{'descr': [('a', [('b', '<q9')])], 'fortran_order': False, 'shape': (1,), }", f4),
        "duplicate_field": raw_npy("{'descr': [('a', '<i2'), ('a', '<i2')], 'fortran_order': False, 'shape': (1,), }", f4),
        "data_short": raw_npy(std, f4[:-1]),
        "size_overflow": raw_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }", f4),
        "deep_nesting": raw_npy("{'descr': " + "[" * 100000 + "]" * 100000 + ", 'fortran_order': False, 'shape': (2, 3), }", f4, version=(2, 0)),
        "long_suffix_v3": raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", f4, version=(3, 0), encoding="utf8"),
        "invalid_utf8_v3": raw_npy(b"{'descr': [('\xff\xfe', '<i4')], 'fortran_order': False, 'shape': (2,), }", f4, version=(3, 0)),
        "unterminated_string": raw_npy("{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3), }", f4),
        "object_array": raw_npy("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", b"\x80\x04N."),
    }
    return ok, bad


def cmd_headers(outdir):
    os.makedirs(outdir, exist_ok=True)
    ok, bad = header_cases()
    out = {"ok": [], "bad": []}
    for group, cases in (("ok", ok), ("bad", bad)):
        for name, content in cases.items():
            path = os.path.join(outdir, name + ".npy")
            with open(path, "wb") as fh:
                fh.write(content)
            entry = {"name": name, "file": path}
            try:
                a = np.load(path, max_header_size=BIG_HEADER)
                entry["numpy_loads"] = True
                entry["doc"] = {"descr": descr_json(np.lib.format.dtype_to_descr(a.dtype)),
                                "fortran_order": bool(a.flags.f_contiguous and not a.flags.c_contiguous),
                                "shape": list(a.shape), "data": to_json(a)}
            except Exception as e:
                entry["numpy_loads"] = False
                entry["numpy_error"] = type(e).__name__
                if name == "subarray_descr_folded":
                    # numpy 2.4's reader folds the subarray into the shape, then fails its own
                    # element-count check; build what the folding means from numpy's pieces.
                    dt = np.lib.format.descr_to_dtype(('<i4', (2,)))
                    a = np.frombuffer(content[-24:], dt.base).reshape((3,) + dt.shape)
                    entry["doc"] = {"descr": a.dtype.str, "fortran_order": False, "shape": list(a.shape), "data": to_json(a)}
            out[group].append(entry)
    json.dump(out, sys.stdout)



# ---------------------------------------------------------------- conversions, order and fields
def cmd_floats(outdir):
    """float16 and x86 long double test vectors, with numpy's conversions of them."""
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(7)
    halves = np.arange(65536, dtype="<u2").view("<f2")
    np.save(os.path.join(outdir, "f16_bits.npy"), halves)
    np.save(os.path.join(outdir, "f16_as_f8.npy"), halves.astype("<f8"))
    doubles = np.concatenate([
        rng.standard_normal(20000) * 10.0 ** rng.integers(-9, 6, 20000),
        (np.arange(-70000, 70000, 0.5)),            # exact halves: the ties of the rounding
        np.array([2.0**-24 * k for k in np.arange(0, 2048, 0.5)]),  # subnormal half grid and its ties
        np.array([65504.0, 65519.99, 65520.0, 1e10, -1e-10, 0.0, -0.0, np.inf, -np.inf, 5e-324]),
    ])
    np.save(os.path.join(outdir, "doubles.npy"), doubles)
    np.save(os.path.join(outdir, "doubles_as_f16.npy"), doubles.astype("<f2"))
    # Long doubles: random valid 80-bit encodings (explicit integer bit set for normals), around the
    # float64 normal/subnormal/overflow boundaries and in general.
    n = 20000
    mant = rng.integers(0, 2**63, n, dtype=np.uint64) | np.uint64(2**63)
    exps = np.concatenate([rng.integers(16383 - 1100, 16383 + 1100, n - 2000), rng.integers(16383 - 1080, 16383 - 1015, 1000), rng.integers(16383 + 1015, 16383 + 1030, 1000)])
    sign = rng.integers(0, 2, n) << 15
    raw = np.zeros((n, 16), np.uint8)
    raw[:, :8] = mant.view(np.uint8).reshape(n, 8)
    se = (exps | sign).astype("<u2")
    raw[:, 8:10] = se.view(np.uint8).reshape(n, 2)
    ld = raw.reshape(-1).view("<f16")
    np.save(os.path.join(outdir, "ld.npy"), ld)
    with np.errstate(all="ignore"):
        np.save(os.path.join(outdir, "ld_as_f8.npy"), ld.astype("<f8"))
    d2 = np.concatenate([doubles, rng.standard_normal(1000) * 1e-310, [1.7976931348623157e308]])
    np.save(os.path.join(outdir, "d2.npy"), d2)
    out = np.zeros(d2.size, "<f16")
    out[...] = d2
    u = out.view(np.uint8).reshape(-1, 16)
    u[:, 10:] = 0
    np.save(os.path.join(outdir, "d2_as_ld.npy"), out)
    json.dump({"ok": True}, sys.stdout)


def cmd_orders(outdir):
    """The same arrays in C and F order, for dtypes of every storage width."""
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(11)
    cases = []
    shapes = [(37, 61), (5, 1, 7), (2, 3, 4, 5), (1, 9), (65, 130), (3, 4, 2, 1, 5)]
    dtypes = ["<f4", "<f8", "|u1", "<i2", "<c16", "<c8", "|S3", "<U2", np.dtype("i1,i4,i1", align=True).descr, [("a", "<i2"), ("b", "|u1")]]
    for si, shape in enumerate(shapes):
        for di, d in enumerate(dtypes):
            dt = np.lib.format.descr_to_dtype(d) if isinstance(d, list) else np.dtype(d)
            n = int(np.prod(shape)) * dt.itemsize
            a = np.frombuffer(rng.integers(0, 256, n, dtype=np.uint8).tobytes(), dtype=dt).reshape(shape) if dt.kind != "U" else np.array(rng.choice(["a", "bc", "é"], size=shape), dtype=dt)
            if dt.kind == "f" and dt.itemsize == 8:
                a = a.copy()
                a.view("<u8").reshape(-1)[:4] = [0x7FF0000000000001, 0xFFF4000000000000, 0x7FF8000000000123, 0xFFFFFFFFFFFFFFFF]  # NaN payloads, signalling too
            c = os.path.join(outdir, f"o{si}_{di}_C.npy")
            f = os.path.join(outdir, f"o{si}_{di}_F.npy")
            # Reorder records as plain void items: numpy's field-wise copies leave padding uninitialised.
            raw = a.view(np.dtype((np.void, dt.itemsize))) if dt.names else a
            np.save(c, np.ascontiguousarray(raw).view(dt))
            np.save(f, np.asfortranarray(raw).view(dt))
            cases.append({"c": c, "f": f, "shape": list(shape), "descr": descr_json(np.lib.format.dtype_to_descr(dt))})
    json.dump(cases, sys.stdout)


def cmd_fields(outdir):
    """Record arrays and numpy's view of each (nested) field."""
    os.makedirs(outdir, exist_ok=True)
    arrays = {
        "nested": make([("a", "<i4"), ("b", [("c", ">f8"), ("d", "S3")]), ("e", "<u2", (2, 3))], (3, 2)),
        "nested_F": make([("a", "<i4"), ("b", [("c", ">f8"), ("d", "S3")]), ("e", "<u2", (2, 3))], (3, 2), "F"),
        "aligned": make(np.dtype("i1,i4,f8", align=True), (5,)),
        "titles": make(np.dtype({"names": ["a", "b"], "formats": ["<i4", "<f4"], "titles": ["my title", None]}), (2,)),
        "sub_of_rec": make([("p", [("x", "<f4"), ("y", ">i2")], (2,)), ("q", "M8[s]"), ("z", "<c16")], (2, 2)),
        "packed_odd": make([("a", "|u1"), ("b", "<f8"), ("c", "<U2")], (4,)),
        # Field names with dots: a path takes the longest name that matches at each level.
        "dotted": make([("x.y", "<i4"), ("p", [("q.r", "<f8"), ("s", "<i2")])], (3,)),
    }
    out = []
    for name, a in arrays.items():
        path = os.path.join(outdir, name + ".npy")
        np.save(path, a)
        def walk(view, prefix):
            for fname in view.dtype.names:
                sub = view[fname]
                p = prefix + fname
                out.append({"file": path, "path": p, "shape": list(sub.shape), "descr": sub.dtype.str if sub.dtype.names is None else None, "data": to_json(sub)})
                if sub.dtype.names is not None:
                    walk(sub, p + ".")
        walk(a, "")
    json.dump(out, sys.stdout)



# ---------------------------------------------------------------- .npz archives
class Unseekable(io.RawIOBase):
    """A write-only stream without seek or tell: zipfile then writes data descriptors."""
    def __init__(self):
        self.buf = io.BytesIO()
    def writable(self):
        return True
    def seekable(self):
        return False
    def write(self, b):
        return self.buf.write(b)
    def tell(self):
        raise OSError("unseekable")


def npz_documents(path):
    """numpy's view of every member: {key: document} (non-.npy members as their raw bytes in hex)."""
    import zipfile
    out = {}
    with np.load(path, max_header_size=BIG_HEADER) as z, zipfile.ZipFile(path) as zf:
        for key in z.files:
            member = key + ".npy" if key + ".npy" in zf.namelist() else key
            raw = zf.read(member)
            if not raw.startswith(b"\x93NUMPY"):
                out[key] = {"raw": raw.hex()}
                continue
            a = z[key]
            out[key] = {"version": [raw[6], raw[7]], "descr": descr_json(np.lib.format.dtype_to_descr(a.dtype)),
                        "fortran_order": bool(a.flags.f_contiguous and not a.flags.c_contiguous), "shape": list(a.shape), "data": to_json(a)}
    return out


def npz_arrays():
    return {
        "f4": make("<f4", (2, 3)), "i8_be": make(">i8", (4,)), "text": make("<U3", (3,)), "bytes": make("S4", (2,)),
        "rec": make([("a", "<i4"), ("b", [("c", ">f8")]), ("e", "<u2", (2,))], (2,)), "fortran": make("<f8", (3, 4), "F"),
        "when": make("<M8[ns]", (3,)), "scalar": make("<c16", ()), "empty": make("<i2", (0, 3)), "half": make("<f2", (5,)),
        # The data-descriptor signature inside a stored member's payload (fflate cuts such members short).
        "descriptor_sig": np.frombuffer(b"PK\x07\x08" * 64 + b"PK\x01\x02PK\x05\x06" * 8, np.uint8),
    }


def cmd_npz(outdir):
    import zipfile
    os.makedirs(outdir, exist_ok=True)
    arrays = npz_arrays()
    cases = {}
    def add(name, writer):
        path = os.path.join(outdir, name + ".npz")
        writer(path)
        cases[name] = path
    add("savez", lambda p: np.savez(p, np.arange(3), *[], **arrays))
    add("savez_compressed", lambda p: np.savez_compressed(p, np.arange(3), **arrays))
    add("positional", lambda p: np.savez(p, np.arange(4), np.ones(2)))
    add("odd_names", lambda p: np.savez(p, **{"a/b": np.arange(2), "é整": np.ones(3), "f.npy": np.zeros(1)}))
    add("empty", lambda p: np.savez(p))
    for comp in (False, True):
        def stream(p, comp=comp):
            s = Unseekable()
            (np.savez_compressed if comp else np.savez)(s, **arrays)
            open(p, "wb").write(s.buf.getvalue())
        add("stream_compressed" if comp else "stream_stored", stream)
    def with_extras(p):
        np.savez(p, x=np.arange(3))
        with zipfile.ZipFile(p, "a") as zf:
            zf.writestr("notes.txt", b"not an array")
            zf.comment = b"an archive comment"
    add("extras", with_extras)
    def cp437(p):
        np.savez(p, **{"xAy": np.arange(2)})
        b = bytearray(open(p, "rb").read())
        i = 0
        while True:  # the name in the local header and in the central directory
            i = b.find(b"xAy.npy", i)
            if i < 0:
                break
            b[i + 1] = 0x82
            i += 1
        open(p, "wb").write(bytes(b))
    add("cp437", cp437)
    docs = {name: npz_documents(path) for name, path in cases.items()}
    json.dump({"cases": cases, "docs": docs}, sys.stdout)


def cmd_npz_many(path, count):
    """An archive with more members than a plain zip end record can count (zip64 end record)."""
    count = int(count)
    np.savez(path, **{f"m{i}": np.int32(i) for i in range(count)})
    with open(path, "rb") as fh:
        has_zip64_end = b"PK\x06\x06" in fh.read()
    json.dump({"count": count, "zip64_end": has_zip64_end}, sys.stdout)


def cmd_npz_corrupt(outdir):
    """Archives broken in one way each; numpy/zipfile refuses each of them too."""
    import zipfile, zlib, struct
    os.makedirs(outdir, exist_ok=True)
    base = os.path.join(outdir, "base_stored.npz")
    np.savez(base, a=np.arange(100, dtype="<i4"))
    basec = os.path.join(outdir, "base_deflated.npz")
    np.savez_compressed(basec, a=np.arange(1000, dtype="<i4"))
    stored = open(base, "rb").read()
    deflated = open(basec, "rb").read()
    def central(b):
        return b.rfind(b"PK\x01\x02")
    cases = {}
    cases["truncated"] = stored[: len(stored) // 2]
    cases["truncated_tail"] = stored[:-10]
    b = bytearray(stored); b[200] ^= 0xFF; cases["crc_mismatch"] = bytes(b)
    b = bytearray(deflated); b[120] ^= 0x55; b[121] ^= 0xAA; cases["corrupt_deflate"] = bytes(b)
    c = central(stored)
    b = bytearray(stored); struct.pack_into("<I", b, c + 24, struct.unpack_from("<I", b, c + 24)[0] + 8); cases["size_lie_stored"] = bytes(b)
    c = central(deflated)
    b = bytearray(deflated); struct.pack_into("<I", b, c + 24, struct.unpack_from("<I", b, c + 24)[0] - 8); cases["size_lie_smaller"] = bytes(b)
    b = bytearray(deflated); struct.pack_into("<I", b, c + 24, struct.unpack_from("<I", b, c + 24)[0] + 8); cases["size_lie_larger"] = bytes(b)
    b = bytearray(stored); c = central(stored); struct.pack_into("<H", b, c + 10, 12); struct.pack_into("<H", b, 8, 12); cases["method_bzip2"] = bytes(b)
    b = bytearray(stored); c = central(stored); b[c + 8] |= 1; b[6] |= 1; cases["encrypted"] = bytes(b)
    cases["not_zip"] = b"this is not an archive at all, just some text" * 3
    b = bytearray(stored); c = central(stored); struct.pack_into("<I", b, c + 42, 5); cases["bad_local_offset"] = bytes(b)
    out = {}
    for name, content in cases.items():
        path = os.path.join(outdir, name + ".npz")
        open(path, "wb").write(content)
        try:
            with np.load(path) as z:
                for k in z.files:
                    z[k]
            refused = False
        except Exception:
            refused = True
        out[name] = {"file": path, "numpy_refuses": refused}
    json.dump(out, sys.stdout)


def raw_bytes(a):
    """The array's memory as stored (tobytes would copy records field by field, leaving padding undefined)."""
    a = np.asarray(a)
    if a.size == 0:
        return b""
    flat = (a if a.flags.c_contiguous else a.T).reshape(-1)  # a view: the memory is contiguous
    return flat.view(np.uint8).tobytes()


def same_values(a, b):
    """Bit-exact equality, field by field for records (numpy's npz reader leaves their padding undefined)."""
    if a.dtype.names is not None:
        return all(same_values(a[n], b[n]) for n in a.dtype.names)
    return raw_bytes(np.ascontiguousarray(a)) == raw_bytes(np.ascontiguousarray(b))


def cmd_check_npz(spec_path):
    """[{file, expect: {key: source .npy path}}]: numpy loads our archive with the same keys, dtypes, orders and values."""
    out = []
    for s in json.load(open(spec_path)):
        problems = []
        with np.load(s["file"], max_header_size=BIG_HEADER) as z:
            if sorted(z.files) != sorted(s["expect"]):
                problems.append(f"keys {z.files} != {list(s['expect'])}")
            for key, src in s["expect"].items():
                if key not in z.files:
                    continue
                a = z[key]
                b = np.load(src, max_header_size=BIG_HEADER) if isinstance(src, str) else np.array(src)
                if a.dtype != b.dtype or a.shape != b.shape or not same_values(a, b) or a.flags.f_contiguous != b.flags.f_contiguous:
                    problems.append(f"{key}: {a.dtype} {a.shape} vs {b.dtype} {b.shape}")
        out.append(problems)
    json.dump(out, sys.stdout)



# ---------------------------------------------------------------- adapters
def tf_expected(a):
    """What a tfjs tensor of this array holds, by numpy's own conversions: (dtype, flat C-order values)."""
    k, size = a.dtype.kind, a.dtype.itemsize
    flat = np.ascontiguousarray(a).reshape(-1)
    if k == "b":
        return "bool", [bool(x) for x in flat]
    if k in "iu":
        return "int32", [int(x) for x in flat.astype(np.int64 if k == "i" or size < 8 else np.uint64)]
    if k == "f":
        with np.errstate(all="ignore"):
            return "float32", [jfloat(x) for x in flat.astype(np.float32)]
    if k == "c":
        with np.errstate(all="ignore"):
            c = flat.astype(np.complex64)
        return "complex64", [[jfloat(x.real), jfloat(x.imag)] for x in c]
    if k == "U":
        return "string", [str(x) for x in flat]
    if k == "S":
        return "string", [bytes(x).hex() for x in flat]
    raise ValueError(a.dtype)


def cmd_tfjs_fixtures(outdir):
    os.makedirs(outdir, exist_ok=True)
    out = []
    specs = ["|b1", "|i1", "|u1", "<i2", ">u2", "<i4", ">i4", "<f2", "<f4", ">f4", "<f8", ">f8", "<f16", "<c8", ">c16", "<U3", "|S4"]
    for d in specs:
        for order in "CF":
            for shape in [(2, 3), (), (0, 2), (2, 1, 3)]:
                a = make(d, shape, order, seed=len(out))
                if a.dtype.kind in "iu" and a.dtype.itemsize == 8:
                    continue
                name = f"{d[1:]}_{'be' if d[0] == '>' else 'le'}_{order}_{'x'.join(map(str, shape)) or '0d'}"
                path = os.path.join(outdir, name + ".npy")
                np.save(path, a)
                dtype, values = tf_expected(a)
                out.append({"file": path, "name": name, "shape": list(a.shape), "dtype": dtype, "values": values})
    # 32/64-bit integers that fit int32, and ones that do not (refused, or wrapped/clamped on request).
    for d, vals in [("<u4", [1, 2, 3]), ("<i8", [-5, 0, 2**31 - 1]), (">u8", [7, 8, 9]), ("<u4", [1, 2**31, 5]), ("<i8", [3, -2**40 - 7, 2**33 + 1]), (">u8", [2**64 - 1, 4])]:
        a = np.array(vals, dtype=d)
        name = f"int_{d[1:]}_{len(out)}"
        path = os.path.join(outdir, name + ".npy")
        np.save(path, a)
        fits = bool(((a.astype(object) >= -2**31) & (a.astype(object) <= 2**31 - 1)).all())
        wrapped = [int(x) for x in a.astype(np.int64 if d[1] == "i" else np.uint64).astype(np.int32)] if True else None
        clamped = [int(max(-2**31, min(2**31 - 1, int(x)))) for x in a]
        first_bad = next((i for i, x in enumerate(a.tolist()) if not (-2**31 <= x <= 2**31 - 1)), None)
        out.append({"file": path, "name": name, "shape": list(a.shape), "dtype": "int32", "fits": fits,
                    "values": [int(x) for x in a] if fits else None, "wrapped": wrapped, "clamped": clamped,
                    "first_bad": first_bad, "first_bad_value": None if first_bad is None else str(a.tolist()[first_bad])})
    json.dump(out, sys.stdout)


def cmd_check_arrays(spec_path):
    """[{file, key?, descr, shape, values}]: the array numpy loads equals np.array(values, descr) (NaN-aware)."""
    out = []
    for s in json.load(open(spec_path)):
        if s["file"].endswith(".npz"):
            with np.load(s["file"]) as z:
                a = z[s["key"]]
        else:
            a = np.load(s["file"])
        dt = np.dtype(s["descr"])
        vals = [spec_value(v, dt) if not (dt.kind == "f" and isinstance(v, str)) else float(v.replace("Infinity", "inf")) for v in s["values"]]
        if dt.kind == "S":
            vals = [bytes.fromhex(v) for v in s["values"]]
        b = np.array(vals, dtype=dt).reshape(s["shape"])
        ok = a.dtype == b.dtype and a.shape == b.shape and (np.array_equal(a, b, equal_nan=True) if dt.kind in "fc" else np.array_equal(a, b))
        out.append({"ok": bool(ok), "got": f"{a.dtype} {a.shape}", "want": f"{b.dtype} {b.shape}"})
    json.dump(out, sys.stdout)


def cmd_strided(outdir):
    """A base array and numpy's views of it (slices, negative strides, offsets) as (offset, strides) in elements."""
    os.makedirs(outdir, exist_ok=True)
    base = np.arange(4 * 6, dtype="<f8").reshape(4, 6) * 1.5
    views = {"rev_rows": base[::-1], "odd_cols": base[:, 1::2], "rev_both_step": base[::-2, ::-3], "col": base[:, 4], "transposed": base.T, "block": base[1:3, 2:5]}
    out = []
    for name, v in views.items():
        offset = (v.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // 8
        path = os.path.join(outdir, name + ".npy")
        np.save(path, v)  # numpy writes views in C order (or F when F-contiguous)
        out.append({"name": name, "shape": list(v.shape), "strides": [x // 8 for x in v.strides], "offset": int(offset), "expected": path})
    json.dump({"base": base.reshape(-1).tolist(), "views": out}, sys.stdout)



# ---------------------------------------------------------------- object arrays (pickles)
def object_arrays():
    import datetime, decimal, fractions, collections
    mixed = np.array([1, -2**70, 2**64 + 5, 1.5, float("nan"), "é整😀", b"\x00\xff", None, True, 1 + 2j,
                      [1, (2, "x")], {"k": 1, 2: [None]}, {1, 2}, frozenset([3]), bytearray(b"ab"),
                      collections.OrderedDict(b=1, a=2), np.float32(1.5), np.int64(-5), np.datetime64("2020-01-02", "D"),
                      datetime.datetime(2020, 1, 2, 3, 4, 5, 6), datetime.datetime(2021, 5, 6, tzinfo=datetime.timezone.utc),
                      datetime.date(1999, 12, 31), datetime.time(23, 59, 1, 5), datetime.timedelta(days=-1, seconds=5),
                      decimal.Decimal("1.10"), fractions.Fraction(-1, 3), slice(1, None, 2), range(2, 9, 3)], dtype=object)
    ragged = np.empty(6, dtype=object)
    ragged[:] = [np.arange(3), np.arange(5.0, dtype=">f8"), np.array(["ab", "c"]), np.asfortranarray(np.arange(6, dtype="<i2").reshape(2, 3)),
                 np.zeros(2, [("a", "<i4"), ("b", "S2")]), np.array(3.5)]
    two_d = np.empty((2, 3), dtype=object)
    two_d[...] = [[1, "a", None], [2.5, "b", [1]]]
    records = np.array([(1, "x", 2.5), (2, [1, 2], -1.0)], dtype=[("n", "<i4"), ("o", "O"), ("f", ">f8")])
    nested = np.empty(2, dtype=object)
    nested[:] = [np.array([np.arange(2), None], dtype=object), {"deep": [[[[1]]]]}]
    # Lists and dicts longer than one APPENDS/SETITEMS batch (pickle writes 1000 items per batch),
    # holding containers, and one list twice (the memo gives both places the same list).
    shared = [1, [2]]
    batches = np.empty(6, dtype=object)
    for i, v in enumerate([[[i, str(i)] if i % 3 else {"i": i} for i in range(2500)], {f"k{i}": [i] for i in range(2100)},
                           {i: i * 0.5 for i in range(1500)}, shared, shared, collections.OrderedDict((f"o{i}", i) for i in range(1200))]):
        batches[i] = v
    out = {"mixed": mixed, "ragged": ragged, "two_d": two_d, "fortran": np.asfortranarray(two_d), "records": records, "nested": nested, "batches": batches,
           "empty": np.empty((0, 2), dtype=object), "scalar": np.array({"a": 1}, dtype=object)}
    try:
        out["stringdtype"] = np.array(["ab", "", "cé整"], dtype=np.dtypes.StringDType())
    except AttributeError:
        pass
    return out


def cmd_objects(outdir):
    """Object arrays saved by np.save, raw pickles of them in every protocol, and their documents."""
    import pickle, warnings
    os.makedirs(outdir, exist_ok=True)
    out = []
    for name, a in object_arrays().items():
        path = os.path.join(outdir, name + ".npy")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.save(path, a, allow_pickle=True)
        loaded = np.load(path, allow_pickle=True)
        doc = {"version": [1, 0], "descr": np.lib.format.dtype_to_descr(loaded.dtype) if loaded.dtype.names is None else descr_json(loaded.dtype.descr),
               "fortran_order": bool(loaded.flags.f_contiguous and not loaded.flags.c_contiguous), "shape": list(loaded.shape), "data": to_json(loaded)}
        if name == "stringdtype":
            doc["descr"] = "|O"
        pickles = {}
        for protocol in range(0, 6):
            if name == "stringdtype" and protocol < 2:
                continue
            p = os.path.join(outdir, f"{name}.p{protocol}.pickle")
            with open(p, "wb") as fh:
                fh.write(pickle.dumps(a, protocol=protocol))
            pickles[protocol] = p
        out.append({"name": name, "file": path, "doc": doc, "pickles": pickles})
    json.dump(out, sys.stdout)


def cmd_hostile(outdir):
    """Pickles that try to run code; loading each with pickle would create its marker file."""
    import pickle, pickletools
    os.makedirs(outdir, exist_ok=True)
    out = []
    def marker(name):
        return os.path.join(outdir, name + ".ran")
    class Call:
        def __init__(self, fn, args):
            self.fn, self.args = fn, args
        def __reduce__(self):
            return (self.fn, self.args)
    import subprocess, builtins
    cases = {
        "os_system": Call(os.system, (f"touch {marker('os_system')}",)),
        "builtins_eval": Call(builtins.eval, (f"open({marker('builtins_eval')!r}, 'w')",)),
        "builtins_exec": Call(builtins.exec, (f"open({marker('builtins_exec')!r}, 'w')",)),
        "subprocess_popen": Call(subprocess.Popen, (["touch", marker("subprocess_popen")],)),
        "builtins_getattr": Call(builtins.getattr, (0, "real")),
        "numpy_load": Call(np.load, (marker("numpy_load"),)),
    }
    for name, obj in cases.items():
        for protocol in (0, 2, 4):
            data = pickle.dumps(np.array([obj], dtype=object), protocol=protocol)
            p = os.path.join(outdir, f"{name}.p{protocol}.pickle")
            open(p, "wb").write(data)
            out.append({"name": name, "protocol": protocol, "file": p, "marker": marker(name)})
    # Hand-written opcodes: INST and OBJ with a forbidden callable, and a forbidden name inside an allowed module.
    raw = {
        "inst": b"(S'touch " + marker("inst").encode() + b"'\nios\nsystem\n.",
        "obj": b"(cos\nsystem\nS'touch " + marker("obj").encode() + b"'\no.",
        "numpy_other": b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00\x8c\x15numpy.core.multiarray\x94\x8c\x07fromstr\x94\x93\x94.",
        "codecs_other": b"\x80\x02c_codecs\nencode\nX\x01\x00\x00\x00aX\x05\x00\x00\x00rot13\x86R.",
    }
    for name, data in raw.items():
        p = os.path.join(outdir, f"{name}.pickle")
        open(p, "wb").write(data)
        out.append({"name": name, "protocol": -1, "file": p, "marker": marker(name)})
    json.dump(out, sys.stdout)


def cmd_check_objects(spec_path):
    """[{file, expect}] where expect is a py_json document: numpy loads our object array to exactly that."""
    import warnings
    out = []
    for s in json.load(open(spec_path)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = np.load(s["file"], allow_pickle=True)
        got = {"dtype": a.dtype.str, "shape": list(a.shape), "data": to_json(a)}
        out.append({"ok": got == s["expect"], "got": got})
    json.dump(out, sys.stdout)



# ---------------------------------------------------------------- regions
def region_cases(shape, rng, n=12):
    """Hyperslabs along every axis: single rows and columns, blocks, whole axes, empty, the corners."""
    cases = [([0] * len(shape), list(shape)), ([0] * len(shape), [min(1, d) for d in shape]), ([d - 1 for d in shape], [1] * len(shape))]
    for axis in range(len(shape)):
        start = [0] * len(shape); count = list(shape)
        start[axis] = shape[axis] // 2; count[axis] = 1
        cases.append((start, count))
    cases.append(([0] * len(shape), [0] + list(shape[1:])))
    for _ in range(n):
        start = [int(rng.integers(0, d)) for d in shape]
        count = [int(rng.integers(1, d - s + 1)) for d, s in zip(shape, start)]
        cases.append((start, count))
    return cases


def cmd_regions(outdir):
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(3)
    out = []
    specs = [("<f4", (7, 9)), (">i8", (5, 4, 6)), ("<c16", (3, 5)), ("|S3", (4, 6)), ("<U2", (2, 3, 4)),
             ([("a", "<i2"), ("b", ">f8", (2,))], (6, 5)), ("<f8", (11,)), ("|u1", (2, 3, 2, 5)), ("<f8", ())]
    for i, (d, shape) in enumerate(specs):
        for order in "CF":
            a = make(d, shape, order, seed=i)
            shape = a.shape  # (asfortranarray makes a 0-d array 1-d)
            path = os.path.join(outdir, f"r{i}{order}.npy")
            np.save(path, a)
            regions = []
            for start, count in region_cases(shape, rng) if shape else [([], [])]:
                sl = tuple(slice(s, s + c) for s, c in zip(start, count))
                regions.append({"start": start, "count": count, "data": to_json(a[sl])})
            out.append({"file": path, "order": order, "regions": regions})
    json.dump(out, sys.stdout)


def cmd_big(path, order):
    """A .npy larger than 4 GiB, mostly sparse, with marked blocks at the start, across 4 GiB and at the end."""
    shape = (36000, 30000)  # float32: 4.32e9 bytes
    a = np.lib.format.open_memmap(path, mode="w+", dtype="<f4", shape=shape, fortran_order=(order == "F"))
    rng = np.random.default_rng(5)
    flat_boundary = (2**32 - 128) // 4  # the element whose bytes straddle 4 GiB (the header is 128 bytes)
    r, c = (flat_boundary // shape[1], flat_boundary % shape[1]) if order == "C" else (flat_boundary % shape[0], flat_boundary // shape[0])
    blocks = [(0, 0), (max(0, r - 3), max(0, c - 3)), (shape[0] - 8, shape[1] - 8)]
    for (i, j) in blocks:
        a[i:i + 8, j:j + 8] = rng.standard_normal((8, 8)).astype(np.float32)
    a.flush()
    regions = []
    for (i, j) in blocks:
        for start, count in [((i, j), (8, 8)), ((i, 0), (1, shape[1])), ((0, j), (shape[0], 1)), ((i + 1, j + 2), (3, 5))]:
            sl = tuple(slice(s, s + k) for s, k in zip(start, count))
            v = np.asarray(a[sl])
            regions.append({"start": list(start), "count": list(count), "sum": float(v.astype(np.float64).sum()), "first": float(v.reshape(-1)[0]), "last": float(v.reshape(-1)[-1]),
                            "data": to_json(v) if v.size <= 64 else None})
    del a
    json.dump({"shape": list(shape), "regions": regions}, sys.stdout)


def cmd_check_filled(path, kind):
    """Every element of a file filled by workers: value = row * 100000 + column."""
    a = np.load(path)
    i, j = np.indices(a.shape)
    ok = bool((a == i * 100000 + j).all())
    json.dump({"ok": ok, "shape": list(a.shape), "fortran": bool(a.flags.f_contiguous and not a.flags.c_contiguous), "kind": kind}, sys.stdout)


def cmd_swapped(outdir):
    """Large big-endian arrays (past every small-size shortcut) of each swap width, each with numpy's
    native-order copy of the same values and that copy's raw bytes in a file of their own."""
    out = []
    rng = np.random.default_rng(11)
    for i, (d, shape, order) in enumerate([(">i2", (700, 1000), "C"), (">u4", (300, 1001), "C"), (">f4", (512, 700), "F"),
                                           (">f8", (256, 1000), "C"), (">c8", (1000, 99), "F"), (">c16", (400, 100), "C"),
                                           (">U3", (50000,), "C"), (">M8[ns]", (70000,), "C"), (">m8[s]", (123, 601), "F"),
                                           (">f16", (9000,), "C"), (">c32", (3000,), "C"), (">i2", (300, 400), "F"),
                                           (">c16", (300, 250), "F"), (">U3", (200, 400), "F"), (">f8", (64, 30, 1100), "F")]):
        a = make(d, shape, order, seed=i)
        if a.dtype.kind == "f" and a.dtype.itemsize > 2:
            a = rng.standard_normal(shape).astype(d)  # the full bit range of each byte, not small integers
            a = np.asfortranarray(a) if order == "F" else a
        path = os.path.join(outdir, f"swapped{i}.npy")
        np.save(path, a)
        native = a.astype(a.dtype.newbyteorder("="))
        raw = os.path.join(outdir, f"swapped{i}.native")
        with open(raw, "wb") as fh:
            fh.write(raw_bytes(np.asfortranarray(native) if order == "F" else native))
        raw_c = os.path.join(outdir, f"swapped{i}.native-C")
        with open(raw_c, "wb") as fh:
            fh.write(raw_bytes(np.ascontiguousarray(native)))
        out.append({"file": path, "raw": raw, "raw_c": raw_c, "descr": d, "order": order, "bytes": native.nbytes})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    if sys.argv[1] == "--version-probe":
        print(np.__version__)
        sys.exit(0)
    globals()["cmd_" + sys.argv[1].replace("-", "_")](*sys.argv[2:])

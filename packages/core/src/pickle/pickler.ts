/** The pickler: JS values (and NdArrays) as protocol-3 pickles numpy 1.17+ and 2.x load. */
import type { DType } from '../format/dtype.js';
import { NdArray, isOrderFree } from '../array/ndarray.js';
import { PyComplex, PyDate, PyDatetime, PyDecimal, PyFraction, PySlice, PyTime, PyTimedelta, isPyFrozenset, isPyTuple } from './python-values.js';
import { OP } from './opcodes.js';
import { dataToBytes } from '../array/layout.js';
import type { TypedArray } from '../format/js-types.js';
import { hasObject } from '../npy.js';
import { bad } from './vm-values.js';
import { checkOptions, knownKeys } from '../options.js';

const PICKLE_KEYS = knownKeys<{ stringDType?: boolean }>({ stringDType: true });
import { hasLoneSurrogate } from '../format/literal.js';

class Writer {
  private chunks: Uint8Array[] = [];
  private cur = new Uint8Array(1 << 16);
  private n = 0;
  byte(b: number): void {
    if (this.n === this.cur.length) this.flush();
    this.cur[this.n++] = b;
  }
  bytes(b: Uint8Array): void {
    if (b.length > this.cur.length - this.n) {
      this.flush();
      if (b.length > this.cur.length / 2) {
        this.chunks.push(new Uint8Array(b));
        return;
      }
    }
    this.cur.set(b, this.n);
    this.n += b.length;
  }
  u32(v: number): void {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setUint32(0, v, true);
    this.bytes(b);
  }
  i32(v: number): void {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setInt32(0, v, true);
    this.bytes(b);
  }
  f64(v: number): void {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, v, false);
    this.bytes(b);
  }
  private flush(): void {
    if (this.n) this.chunks.push(this.cur.slice(0, this.n));
    this.n = 0;
  }
  result(): Uint8Array {
    this.flush();
    const total = this.chunks.reduce((s, c) => s + c.length, 0);
    const out = new Uint8Array(total);
    let o = 0;
    for (const c of this.chunks) {
      out.set(c, o);
      o += c.length;
    }
    return out;
  }
}

const enc = new TextEncoder();

/** Containers nested at most this deep: Python's recursion limit, and the unpickler's default maxDepth. */
const MAX_DEPTH = 1000;

/**
 * UTF-8 of a string as Python's pickle writes str (`surrogatepass`): a lone surrogate is written as
 * its own three bytes, not replaced by U+FFFD, so Python reads back the same string.
 */
function utf8SurrogatePass(s: string): Uint8Array {
  if (!hasLoneSurrogate(s)) return enc.encode(s);
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.codePointAt(i)!;
    if (c > 0xffff) i++;
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 0x3f));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 0x3f), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
  }
  return Uint8Array.from(out);
}

/** numpy's `is_fortran`: Fortran-contiguous and not also C-contiguous. */
export function isFortran(a: NdArray): boolean {
  return a.order === 'F' && !isOrderFree(a.shape);
}

/**
 * Pickle JS values (protocol 3, loadable by numpy 1.17+ and 2.x): null, boolean, number (an integer
 * when it is a safe integer, else a float), bigint, string, Uint8Array (bytes), Array (list), plain
 * object and Map (dict), Set (set), PyComplex and the other Py* values, and NdArray.
 * @example
 * const bytes = pickle({ a: [1, 2.5, null] });   // numpy 1.17+ and 2.x load it
 */
export function pickle(value: unknown, options: { stringDType?: boolean } = {}): Uint8Array {
  checkOptions('pickle', options, PICKLE_KEYS);
  const w = new Writer();
  w.byte(OP.PROTO);
  w.byte(3);
  const active = new Set<object>();
  const global = (module: string, name: string): void => {
    w.byte(OP.GLOBAL);
    w.bytes(enc.encode(`${module}\n${name}\n`));
  };
  const str = (s: string): void => {
    const b = utf8SurrogatePass(s);
    w.byte(OP.BINUNICODE);
    w.u32(b.length);
    w.bytes(b);
  };
  const bytes = (b: Uint8Array): void => {
    w.byte(OP.BINBYTES);
    w.u32(b.length);
    w.bytes(b);
  };
  const tuple = (items: (() => void)[]): void => {
    if (items.length <= 3 && items.length > 0) {
      items.forEach((f) => f());
      w.byte([OP.TUPLE1, OP.TUPLE2, OP.TUPLE3][items.length - 1]!);
      return;
    }
    w.byte(OP.MARK);
    items.forEach((f) => f());
    w.byte(OP.TUPLE);
  };
  const int = (v: number | bigint): void => {
    if (typeof v === 'number' && v >= -(2 ** 31) && v < 2 ** 31) {
      w.byte(OP.BININT);
      w.i32(v);
      return;
    }
    let x = BigInt(v);
    const out: number[] = [];
    // Two's complement little-endian, as LONG1.
    for (;;) {
      out.push(Number(x & 0xffn));
      x >>= 8n;
      const sign = out[out.length - 1]! & 0x80;
      if ((x === 0n && !sign) || (x === -1n && sign)) break;
    }
    if (out.length > 255) bad('integer too large to pickle');
    w.byte(OP.LONG1);
    w.byte(out.length);
    w.bytes(new Uint8Array(out));
  };
  /** numpy's dtype pickle: dtype(code, False, True), then BUILD with (version, byteorder, subarray, names, fields, elsize, alignment, flags[, metadata]). */
  const dtype = (dt: DType): void => {
    global('numpy', 'dtype');
    const record = dt.fields !== null || dt.subarray !== null;
    // numpy pickles the type code without a datetime unit (the unit goes into the BUILD state), and objects as 'O8'.
    const code = dt.kind === 'O' && !record ? 'O8' : dt.typeCode.replace(/\[.*\]$/, '');
    tuple([() => str(code), () => w.byte(OP.NEWFALSE), () => w.byte(OP.NEWTRUE)]);
    w.byte(OP.REDUCE);
    const none = (): void => w.byte(OP.NONE);
    const datetime = dt.kind === 'M' || dt.kind === 'm';
    const flexible = 'SUV'.includes(dt.kind) || record;
    const flags = dt.kind === 'O' ? 63 : dt.fields ? (hasObject(dt) ? 27 : 16) : 0;
    // numpy pickles a subarray of a subarray with its nesting as written.
    const subarray = dt.form === 'subarray' ? (dt.subarrayAsWritten ?? dt.subarray) : null;
    const fields = dt.fields;
    const items: (() => void)[] = [
      () => int(datetime ? 4 : 3),
      () => str(dt.byteOrder),
      subarray
        ? () =>
            tuple([
              () => dtype(subarray.base),
              () => {
                if (subarray.shape.length) tuple(subarray.shape.map((d) => () => int(d)));
                else w.byte(OP.EMPTY_TUPLE);
              },
            ])
        : none,
      fields ? () => tuple(fields.map((f) => () => str(f.name))) : none,
      fields
        ? () => {
            w.byte(OP.EMPTY_DICT);
            w.byte(OP.MARK);
            for (const f of fields) {
              const entry = (): void => tuple([() => dtype(f.dtype), () => int(f.offset), ...(f.title !== null ? [() => str(f.title!)] : [])]);
              str(f.name);
              entry();
              if (f.title !== null) {
                str(f.title);
                entry();
              }
            }
            w.byte(OP.SETITEMS);
          }
        : none,
      () => int(flexible ? dt.itemsize : -1),
      () => int(dt.subarray ? dt.subarray.base.itemsize : record ? 1 : flexible ? (dt.kind === 'U' ? 4 : 1) : -1),
      () => int(flags),
    ];
    if (datetime) {
      items.push(() => tuple([none, () => tuple([() => bytes(enc.encode(dt.unit || 'generic')), () => int(dt.multiplier), () => int(1), () => int(1)])]));
    }
    tuple(items);
    w.byte(OP.BUILD);
  };
  const array = (a: NdArray): void => {
    // _reconstruct(ndarray, (0,), b'b'), then BUILD with the state, as numpy pickles arrays.
    global('numpy.core.multiarray', '_reconstruct');
    global('numpy', 'ndarray');
    int(0);
    w.byte(OP.TUPLE1);
    bytes(new Uint8Array([0x62])); // b'b', numpy's placeholder dtype code
    w.byte(OP.TUPLE3);
    w.byte(OP.REDUCE);
    const isObject = hasObject(a.dtype);
    const fields = a.dtype.fields;
    tuple([
      () => int(1),
      () => {
        if (a.shape.length === 0) w.byte(OP.EMPTY_TUPLE);
        else tuple(a.shape.map((d) => () => int(d)));
      },
      () => {
        if (!options.stringDType) {
          dtype(a.dtype);
          return;
        }
        // numpy 2's StringDType pickles as _convert_to_stringdtype_kwargs(coerce=1), its text as a list of str.
        global('numpy._core._internal', '_convert_to_stringdtype_kwargs');
        int(1);
        w.byte(OP.TUPLE1);
        w.byte(OP.REDUCE);
      },
      () => w.byte(isFortran(a) ? OP.NEWTRUE : OP.NEWFALSE),
      () => {
        if (isObject) {
          w.byte(OP.EMPTY_LIST);
          const list = a.toList();
          const flat: unknown[] = [];
          const walkFlat = (x: unknown, d: number): void => {
            if (d === a.ndim) flat.push(x);
            else for (const y of x as unknown[]) walkFlat(y, d + 1);
          };
          walkFlat(list, 0);
          // numpy's __setstate__ takes each record of an object record array as a tuple, never a dict.
          const item = fields ? (x: unknown): void => tuple(fields.map((f) => () => val((x as Record<string, unknown>)[f.name]))) : val;
          if (flat.length) {
            w.byte(OP.MARK);
            flat.forEach((x) => item(x));
            w.byte(OP.APPENDS);
          }
        } else {
          bytes(dataToBytes(a.dtype, a.data as TypedArray));
        }
      },
    ]);
    w.byte(OP.BUILD);
  };
  const val = (v: unknown): void => {
    if (v === null || v === undefined) {
      w.byte(OP.NONE);
      return;
    }
    if (v === true) {
      w.byte(OP.NEWTRUE);
      return;
    }
    if (v === false) {
      w.byte(OP.NEWFALSE);
      return;
    }
    if (typeof v === 'number') {
      if (Number.isSafeInteger(v) && !Object.is(v, -0)) int(v);
      else {
        w.byte(OP.BINFLOAT);
        w.f64(v);
      }
      return;
    }
    if (typeof v === 'bigint') {
      int(v);
      return;
    }
    if (typeof v === 'string') {
      str(v);
      return;
    }
    if (v instanceof Uint8Array) {
      bytes(v);
      return;
    }
    if (typeof v !== 'object') bad(`cannot pickle a ${typeof v}`);
    if (active.has(v)) bad('cannot pickle a structure that contains itself');
    // Python's pickle stops at its recursion limit, and the unpickler's default maxDepth is the same.
    if (active.size >= MAX_DEPTH) bad(`cannot pickle containers nested deeper than ${MAX_DEPTH} (Python's pickle and numpy stop there)`);
    active.add(v);
    try {
      if (v instanceof NdArray) array(v);
      else if (v instanceof PyComplex) {
        global('builtins', 'complex');
        tuple([() => val(v.re), () => val(v.im)]);
        w.byte(OP.REDUCE);
      } else if (v instanceof PyDecimal) {
        global('decimal', 'Decimal');
        tuple([() => str(v.value)]);
        w.byte(OP.REDUCE);
      } else if (v instanceof PyFraction) {
        global('fractions', 'Fraction');
        tuple([() => int(v.numerator), () => int(v.denominator)]);
        w.byte(OP.REDUCE);
      } else if (v instanceof PyDate) {
        global('datetime', 'date');
        tuple([() => bytes(new Uint8Array([v.year >> 8, v.year & 255, v.month, v.day]))]);
        w.byte(OP.REDUCE);
      } else if (v instanceof PyDatetime || v instanceof PyTime) {
        // Python's state bytes; fold rides in the high bit of the hour (time) or the month (datetime).
        const us = [(v.microsecond >> 16) & 255, (v.microsecond >> 8) & 255, v.microsecond & 255];
        const fold = v.fold ? 128 : 0;
        const state =
          v instanceof PyTime
            ? [v.hour | fold, v.minute, v.second, ...us]
            : [v.year >> 8, v.year & 255, v.month | fold, v.day, v.hour, v.minute, v.second, ...us];
        const offset = v.utcOffsetSeconds;
        global('datetime', v instanceof PyTime ? 'time' : 'datetime');
        const items = [() => bytes(new Uint8Array(state))];
        if (offset !== null) {
          // tzinfo: timezone(timedelta(days, seconds)), a fixed offset as Python pickles it.
          const days = Math.floor(offset / 86400);
          items.push(() => {
            global('datetime', 'timezone');
            global('datetime', 'timedelta');
            tuple([() => int(days), () => int(offset - days * 86400), () => int(0)]);
            w.byte(OP.REDUCE);
            w.byte(OP.TUPLE1);
            w.byte(OP.REDUCE);
          });
        }
        tuple(items);
        w.byte(OP.REDUCE);
      } else if (v instanceof PyTimedelta) {
        global('datetime', 'timedelta');
        tuple([() => int(v.days), () => int(v.seconds), () => int(v.microseconds)]);
        w.byte(OP.REDUCE);
      } else if (v instanceof PySlice) {
        global('builtins', v.kind);
        tuple([() => val(v.start), () => val(v.stop), () => val(v.step)]);
        w.byte(OP.REDUCE);
      } else if (isPyTuple(v)) {
        if (v.length === 0) w.byte(OP.EMPTY_TUPLE);
        else tuple(Array.from({ length: v.length }, (_, i) => () => val(v[i])));
      } else if (Array.isArray(v)) {
        w.byte(OP.EMPTY_LIST);
        if (v.length) {
          w.byte(OP.MARK);
          // Every index, holes included (a hole is undefined, written as None as undefined is).
          for (let i = 0; i < v.length; i++) val(v[i]);
          w.byte(OP.APPENDS);
        }
      } else if (v instanceof Set) {
        setOf(v, isPyFrozenset(v) ? 'frozenset' : 'set');
      } else if (v instanceof Map || Object.getPrototypeOf(v) === Object.prototype) {
        const entries = v instanceof Map ? [...v] : Object.entries(v);
        w.byte(OP.EMPTY_DICT);
        if (entries.length) {
          w.byte(OP.MARK);
          for (const [k, x] of entries) {
            key(k);
            val(x);
          }
          w.byte(OP.SETITEMS);
        }
      } else bad(`cannot pickle ${(v as object).constructor?.name ?? 'this object'}`);
    } finally {
      active.delete(v);
    }
  };
  /**
   * A dict key or set member: Python's must be hashable, so an array there is a tuple (the unpickler
   * gives tuples as arrays), and so is every array inside it.
   */
  /** A set as `builtins.set` or `builtins.frozenset` called with the list of its items (hashable: keys). */
  const setOf = (v: Set<unknown>, kind: 'set' | 'frozenset'): void => {
    global('builtins', kind);
    tuple([
      () => {
        w.byte(OP.EMPTY_LIST);
        if (v.size) {
          w.byte(OP.MARK);
          v.forEach((x) => key(x));
          w.byte(OP.APPENDS);
        }
      },
    ]);
    w.byte(OP.REDUCE);
  };
  // A dict key or a set's item must be hashable: a list is written as a tuple, a set as a frozenset
  // (a frozenset read from a pickle comes back as a Set; written as a set, Python could not hash it).
  const key = (k: unknown): void => {
    if (k instanceof Set) {
      if (active.has(k)) bad('cannot pickle a structure that contains itself');
      if (active.size >= MAX_DEPTH) bad(`cannot pickle containers nested deeper than ${MAX_DEPTH} (Python's pickle and numpy stop there)`);
      active.add(k);
      try {
        setOf(k, 'frozenset');
      } finally {
        active.delete(k);
      }
      return;
    }
    if (!Array.isArray(k)) {
      val(k);
      return;
    }
    if (active.has(k)) bad('cannot pickle a structure that contains itself');
    if (active.size >= MAX_DEPTH) bad(`cannot pickle containers nested deeper than ${MAX_DEPTH} (Python's pickle and numpy stop there)`);
    active.add(k);
    try {
      if (k.length === 0) w.byte(OP.EMPTY_TUPLE);
      else tuple(Array.from({ length: k.length }, (_, i) => () => key(k[i])));
    } finally {
      active.delete(k);
    }
  };
  val(value);
  w.byte(OP.STOP);
  return w.result();
}

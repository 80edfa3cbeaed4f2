/** Writing JS values into stored bytes: the one writer behind arrays built from plain values and NdArray.set. */
import type { DType } from '../format/dtype.js';
import { matchDType, perDType } from '../format/dtype-cases.js';
import { NOT_A_TIME } from './read-value.js';
import type { Complex } from '../format/js-types.js';
import { NpyError } from '../errors.js';
import { numberToFloat16, numberToLongDouble } from '../format/float-bits.js';
import { numberToMlFloat } from '../format/ml-floats.js';
import { writeLongDoubleExact, type ExactFloat } from '../format/float-text.js';

export function fail(message: string, field?: string): never {
  throw new NpyError('BAD_VALUE', message, field === undefined ? {} : { field });
}

function toBigInt(v: unknown, dtype: DType, field?: string): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  if (typeof v === 'boolean') return v ? 1n : 0n;
  if (typeof v === 'string' && /^[+-]?\d+$/.test(v.trim())) return BigInt(v.trim());
  return fail(`${JSON.stringify(String(v))} is not an integer for ${dtype.str}`, field);
}

function toNumber(v: unknown, dtype: DType, field?: string): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  return fail(`${JSON.stringify(String(v))} is not a number for ${dtype.str}`, field);
}

const isExactFloat = (v: unknown): v is ExactFloat => v !== null && typeof v === 'object' && typeof (v as ExactFloat).mant === 'bigint';

function toComplex(v: unknown, dtype: DType, field?: string): Complex {
  if (v !== null && typeof v === 'object' && 're' in v && 'im' in v) {
    const c = v as Complex;
    return { re: toNumber(c.re, dtype, field), im: toNumber(c.im, dtype, field) };
  }
  return { re: toNumber(v, dtype, field), im: 0 };
}

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

function checkIntRange(x: bigint, dtype: DType, field?: string): void {
  const bits = BigInt(dtype.itemsize * 8);
  const lo = dtype.kind === 'i' ? -(1n << (bits - 1n)) : 0n;
  const hi = dtype.kind === 'i' ? (1n << (bits - 1n)) - 1n : (1n << bits) - 1n;
  if (x < lo || x > hi) fail(`${x} is out of range for ${dtype.name}`, field);
}

/**
 * Write one value of `dtype` at `at`, in the dtype's byte order. Integers out of range are refused.
 * @example
 * const bytes = new Uint8Array(4);
 * writeValue(parseDescr('>i4'), new DataView(bytes.buffer), bytes, 0, 7);   // [0, 0, 0, 7]
 */
export function writeValue(dtype: DType, view: DataView, bytes: Uint8Array, at: number, v: unknown, field?: string): void {
  writerOf(dtype)(view, bytes, at, v, field);
}

/** Writes one value of a dtype into raw bytes (`field` names it in errors). */
type Writer = (view: DataView, bytes: Uint8Array, at: number, v: unknown, field: string | undefined) => void;

const writerOf = perDType((dtype) => makeWriter(dtype));

function makeWriter(dtype: DType): Writer {
  const le = dtype.byteOrder !== '>';
  const size = dtype.itemsize;
  const integer = (): Writer => (view, bytes, at, v, field) => {
    const x = toBigInt(v, dtype, field);
    checkIntRange(x, dtype, field);
    const n = Number(x);
    if (size === 1) bytes[at] = n & 0xff;
    else if (size === 2) view.setUint16(at, n & 0xffff, le);
    else if (size === 4) view.setUint32(at, n >>> 0, le);
    else view.setBigUint64(at, BigInt.asUintN(64, x), le);
  };
  // A count past int64 is refused (BigInt.asIntN would wrap it: 2**63 to NaT, 1e300 to the epoch);
  // -2**63 is numpy's NaT, written as numpy writes it.
  const time = (): Writer => (view, _, at, v, field) => {
    const x = v === 'NaT' ? NOT_A_TIME : toBigInt(v, dtype, field);
    if (x < INT64_MIN || x > INT64_MAX) fail(`${x} is out of range for ${dtype.str} (a count of int64)`, field);
    view.setBigInt64(at, x, le);
  };
  const raw = (): Writer => (_, bytes, at, v, field) => {
    let b: Uint8Array;
    if (v instanceof Uint8Array) b = v;
    else if (typeof v === 'string') {
      b = new Uint8Array(v.length);
      for (let i = 0; i < v.length; i++) {
        const c = v.charCodeAt(i);
        if (c > 0xff) fail(`'${v}' has characters beyond latin-1 for ${dtype.str}`, field);
        b[i] = c;
      }
    } else return fail(`a ${dtype.str} value must be a string or bytes`, field);
    if (b.length > size) fail(`value of ${b.length} bytes does not fit ${dtype.str}`, field);
    bytes.fill(0, at, at + size);
    bytes.set(b, at);
  };
  return matchDType<Writer>(dtype, {
    record: (_, fields) => (view, bytes, at, v, field) => {
      if (v === null || typeof v !== 'object') fail(`a record value must be an object of fields`, field);
      const rec = v as Record<string, unknown>;
      for (const f of fields) {
        const path = field ? `${field}.${f.name}` : f.name;
        // Own properties only: a field named toString or __proto__ is not found on Object.prototype.
        if (!Object.hasOwn(rec, f.name)) fail(`record value has no field '${f.name}'`, path);
        writeValue(f.dtype, view, bytes, at + f.offset, rec[f.name], path);
      }
    },
    subarray: (_, base, shape) => (view, bytes, at, v, field) => {
      const flat: unknown[] = [];
      const walk = (x: unknown, axis: number): void => {
        if (axis === shape.length) {
          flat.push(x);
          return;
        }
        if (!Array.isArray(x) || x.length !== shape[axis]) fail(`subarray value must have shape (${shape.join(', ')})`, field);
        for (const y of x) walk(y, axis + 1);
      };
      walk(v, 0);
      flat.forEach((x, k) => writeValue(base, view, bytes, at + k * base.itemsize, x, field));
    },
    bool: () => (_, bytes, at, v) => {
      bytes[at] = v ? 1 : 0;
    },
    int: integer,
    uint: integer,
    datetime: time,
    timedelta: time,
    float: () => (view, bytes, at, v, field) => {
      // A long double also takes its exact value (text read as numpy reads it, wider than a number).
      if (size === 16 && isExactFloat(v)) {
        writeLongDoubleExact(v, bytes, at);
        if (!le) bytes.subarray(at, at + 16).reverse();
      } else writeFloat(size, view, bytes, at, toNumber(v, dtype, field), le);
    },
    mlfloat: (dt) => (view, bytes, at, v, field) => {
      const bits = numberToMlFloat(dt.mlFloat!, toNumber(v, dtype, field));
      if (size === 2) view.setUint16(at, bits, le);
      else bytes[at] = bits;
    },
    complex: () => (view, bytes, at, v, field) => {
      const c = toComplex(v, dtype, field);
      writeFloat(size / 2, view, bytes, at, c.re, le);
      writeFloat(size / 2, view, bytes, at + size / 2, c.im, le);
    },
    bytes: raw,
    void: raw,
    str: () => (view, _, at, v, field) => {
      if (typeof v !== 'string') fail(`a ${dtype.str} value must be a string`, field);
      const cps = Array.from(v as string, (ch) => ch.codePointAt(0)!);
      const n = size / 4;
      if (cps.length > n) fail(`'${v}' has ${cps.length} characters, ${dtype.str} holds ${n}`, field);
      for (let k = 0; k < n; k++) view.setUint32(at + 4 * k, cps[k] ?? 0, le);
    },
    object: () => (_, __, ___, ____, field) => fail('object arrays need the pickle codec', field),
  });
}

function writeFloat(size: number, view: DataView, bytes: Uint8Array, at: number, x: number, le: boolean): void {
  if (size === 2) view.setUint16(at, numberToFloat16(x), le);
  else if (size === 4) view.setFloat32(at, x, le);
  else if (size === 8) view.setFloat64(at, x, le);
  else {
    numberToLongDouble(x, bytes, at);
    if (!le) bytes.subarray(at, at + 16).reverse();
  }
}

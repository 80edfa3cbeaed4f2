/** A numpy-like text rendering of an array, summarising large ones with `...` as numpy does. */
import { NdArray, type Complex, type DType } from '@npyts/core';

const THRESHOLD = 1000;
const EDGE = 3;

/** Shortest decimal that reads back to the same float32. */
function shortestFloat32(x: number): string {
  for (let p = 1; p <= 9; p++) {
    const s = x.toPrecision(p);
    if (Math.fround(Number(s)) === x) return String(Number(s));
  }
  return String(x);
}

function formatFloat(x: number, itemsize: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  let s = itemsize <= 4 ? shortestFloat32(x) : String(x);
  if (/^-?\d+$/.test(s)) s += '.';
  return s.replace(/e\+?/, 'e+').replace('e+-', 'e-');
}

function pyBytes(b: Uint8Array): string {
  let s = '';
  for (const c of b) s += c >= 0x20 && c < 0x7f && c !== 0x27 && c !== 0x5c ? String.fromCharCode(c) : `\\x${c.toString(16).padStart(2, '0')}`;
  return `b'${s}'`;
}

export function formatScalar(dtype: DType, v: unknown): string {
  if (dtype.fields) {
    const rec = v as Record<string, unknown>;
    return `(${dtype.fields.map((f) => formatScalar(f.dtype, rec[f.name])).join(', ')}${dtype.fields.length === 1 ? ',' : ''})`;
  }
  if (dtype.subarray) {
    const base = dtype.subarray.base;
    const nest = (x: unknown): string => (Array.isArray(x) ? `[${x.map(nest).join(', ')}]` : formatScalar(base, x));
    return nest(v);
  }
  switch (dtype.kind) {
    case 'b': return v ? 'True' : 'False';
    case 'f': return formatFloat(v as number, dtype.itemsize);
    case 'c': {
      const { re, im } = v as Complex;
      const half = dtype.itemsize / 2;
      const imS = formatFloat(Math.abs(im), half);
      return `${formatFloat(re, half)}${im < 0 || Object.is(im, -0) ? '-' : '+'}${imS}j`;
    }
    case 'S': return pyBytes(v as Uint8Array);
    case 'V': return pyBytes(v as Uint8Array);
    case 'U': return `'${(v as string).replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
    case 'M':
    case 'm': return v === -(2n ** 63n) ? 'NaT' : String(v);
    default: return String(v);
  }
}

/** `array([...], dtype=…)` with rows broken like numpy's repr and large arrays summarised. */
export function formatArray(array: NdArray): string {
  const summarise = array.size > THRESHOLD;
  const strides = array.strides;
  const prefix = 'array(';
  const render = (axis: number, pos: number, indent: string): string => {
    if (axis === array.ndim) return formatScalar(array.dtype, array.get(...offsetToIndex(pos)));
    const n = array.shape[axis]!;
    const picks: (number | null)[] = summarise && n > 2 * EDGE
      ? [...Array.from({ length: EDGE }, (_, i) => i), null, ...Array.from({ length: EDGE }, (_, i) => n - EDGE + i)]
      : Array.from({ length: n }, (_, i) => i);
    const parts = picks.map((i) => (i === null ? '...' : render(axis + 1, pos + i * strides[axis]!, indent + ' ')));
    const sep = axis === array.ndim - 1 ? ', ' : ',' + '\n'.repeat(array.ndim - 1 - axis) + indent + ' ';
    return `[${parts.join(sep)}]`;
  };
  // Positions are memory offsets; map them back to indices for `get`.
  const offsetToIndex = (pos: number): number[] => {
    const idx = new Array<number>(array.ndim).fill(0);
    const order = array.shape.map((_, a) => a).sort((a, b) => strides[b]! - strides[a]!);
    for (const a of order) {
      idx[a] = Math.floor(pos / strides[a]!);
      pos -= idx[a]! * strides[a]!;
    }
    return idx;
  };
  const body = render(0, 0, ' '.repeat(prefix.length));
  const dt = array.dtype;
  const dtypeName = dt.fields ? dt.descrLiteral : 'SUV'.includes(dt.kind) || !dt.isNative ? `'${dt.str}'` : dt.name;
  const showDtype = !['float64', 'int64', 'bool'].includes(dtypeName) || array.size === 0;
  return `${prefix}${body}${showDtype ? `, dtype=${dtypeName}` : ''}${array.size === 0 && array.ndim > 1 ? `, shape=(${array.shape.join(', ')})` : ''})`;
}

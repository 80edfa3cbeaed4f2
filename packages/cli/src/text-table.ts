/**
 * Arrays as CSV/TSV text and back, as numpy's `np.savetxt` / `np.loadtxt` see them: floats written
 * with `%.17g` (every double reads back exactly), integers as exact decimals, one row per line, record
 * fields as columns under a header line of their names. What text cannot hold without loss or
 * ambiguity (3-d arrays, complex numbers, datetimes, a delimiter inside a string) is refused.
 */
import {
  NpyError, arrayFromValues, familyOf, parseDescr, parsePyLiteral, readItem, toOrder,
  type DescrInput, type DType, type InputOf, type NdArray, type Nested,
} from '@npyts/core';
import { exactExponent, scaledRound } from './numpy-floats.js';

/** The delimiter of a file name's kind: `,` for .csv, a tab for .tsv; null for any other name. */
export function delimiterOf(name: string): ',' | '\t' | null {
  if (/\.csv$/i.test(name)) return ',';
  if (/\.tsv$/i.test(name)) return '\t';
  return null;
}

/**
 * The 17 significant digits of a > 0 rounded half to even, and the exponent of the first.
 * JavaScript's toExponential rounds exactly but half up; the two differ only on an exact tie, whose
 * 18th to 20th digits read 500. Only then is the exact (BigInt) rounding needed.
 */
function digits17(a: number): [string, number] {
  const [wide] = a.toExponential(19).split('e') as [string];
  if (wide.slice(18, 21) !== '500') {
    const [m, exp] = a.toExponential(16).split('e') as [string, string];
    return [m.replace('.', ''), Number(exp)];
  }
  // The exact value's exponent, then 17 significant digits (a carry, 9.99…95 → 10.0…, moves it up).
  let e = exactExponent(a, Math.floor(Math.log10(a)));
  let digits = scaledRound(a, 16 - e).toString();
  if (digits.length > 17) { e += 1; digits = digits.slice(0, 17); }
  return [digits, e];
}

/**
 * C's `printf('%.17g', x)` (glibc: exact rounding, half to even): 17 significant digits, trailing
 * zeros dropped, exponent notation below 1e-4 and from 1e17.
 */
export function formatG17(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x < 0 ? '-inf' : 'inf';
  const sign = x < 0 || Object.is(x, -0) ? '-' : '';
  if (x === 0) return `${sign}0`;
  const [digits, e] = digits17(Math.abs(x));
  if (e < -4 || e >= 17) {
    const frac = digits.slice(1).replace(/0+$/, '');
    return `${sign}${digits[0]}${frac ? `.${frac}` : ''}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  }
  let text: string;
  if (e >= 0) text = `${digits.slice(0, e + 1)}.${digits.slice(e + 1)}`;
  else text = `0.${'0'.repeat(-e - 1)}${digits}`;
  text = text.replace(/0+$/, '').replace(/\.$/, '');
  return `${sign}${text}`;
}

function cellOf(dt: DType, v: unknown, delimiter: string, where: () => string): string {
  const family = familyOf(dt);
  switch (family) {
    case 'float': return formatG17(v as number);
    case 'int': case 'uint': return String(v);
    case 'bool': return v ? '1' : '0';
    case 'str': case 'bytes': {
      const text = typeof v === 'string' ? v : new TextDecoder('latin1').decode(v as Uint8Array);
      if (text.includes(delimiter) || /[\r\n"]/.test(text)) {
        throw new NpyError('BAD_ARRAY', `${where()}: the string ${JSON.stringify(text)} holds a delimiter, quote or line break; this text format has no quoting`);
      }
      return text;
    }
    default: throw new NpyError('BAD_ARRAY', `${dt.name} values have no lossless ${delimiter === ',' ? 'CSV' : 'TSV'} form here; write .npy or .npz`);
  }
}

/** The array as delimited text: 1-d as one column, 2-d as rows, a 1-d record array as columns under a header. */
export function arrayToTable(array: NdArray, delimiter: ',' | '\t'): string {
  const a = toOrder(array, 'C');
  const dt = a.dtype;
  const lines: string[] = [];
  if (dt.fields) {
    if (a.shape.length !== 1) throw new NpyError('BAD_ARRAY', `a record array of shape (${a.shape.join(', ')}) has no table form; only 1-d record arrays become columns`);
    const fields = dt.fields;
    if (fields.some((f) => f.dtype.fields || f.dtype.subarray)) throw new NpyError('BAD_ARRAY', 'nested records and subarray fields have no table form');
    lines.push(fields.map((f) => f.name).join(delimiter));
    for (let i = 0; i < a.size; i++) {
      const rec = readItem(dt, a.data, i) as Record<string, unknown>;
      lines.push(fields.map((f) => cellOf(f.dtype, rec[f.name], delimiter, () => `row ${i}, field '${f.name}'`)).join(delimiter));
    }
  } else {
    if (a.shape.length === 0 || a.shape.length > 2) throw new NpyError('BAD_ARRAY', `an array of ${a.shape.length} dimensions has no table form; only 1-d and 2-d arrays (np.savetxt's rule)`);
    const cols = a.shape.length === 2 ? a.shape[1]! : 1;
    for (let r = 0; r < a.size / Math.max(cols, 1); r++) {
      const cells: string[] = [];
      for (let c = 0; c < cols; c++) cells.push(cellOf(dt, readItem(dt, a.data, r * cols + c), delimiter, () => `row ${r}, column ${c}`));
      lines.push(cells.join(delimiter));
    }
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}

/**
 * Delimited text as an array of `descr`: one column gives a 1-d array, several a 2-d one; a record
 * descr takes one column per field and skips a header line of the field names. Blank lines are skipped.
 */
export function tableToArray(text: string, delimiter: ',' | '\t', descr: string, source: string): NdArray {
  const rows = text.split(/\r?\n/).map((line, i) => ({ line, number: i + 1 })).filter((r) => r.line.trim() !== '');
  // A type string ('<f8'), or a record descr as numpy writes it ("[('a', '<i8'), ('b', '<f8')]").
  const dtype: DType = parseDescr(descr.trim().startsWith('[') ? (parsePyLiteral(descr) as DescrInput) : descr);
  const fields = dtype.fields;
  if (fields && rows.length && rows[0]!.line.split(delimiter).map((c) => c.trim()).join('\u0000') === fields.map((f) => f.name).join('\u0000')) rows.shift();
  const width = rows.length ? rows[0]!.line.split(delimiter).length : 0;
  const parse = (dt: DType, cell: string, where: string): unknown => {
    const t = cell.trim();
    const bad = (): never => { throw new NpyError('BAD_ARRAY', `${source}:${where}: '${t}' is not a ${dt.name}`); };
    switch (familyOf(dt)) {
      case 'float': {
        const v = /^[+-]?(inf(inity)?)$/i.test(t) ? (t.startsWith('-') ? -Infinity : Infinity) : /^[+-]?nan$/i.test(t) ? NaN : t === '' ? bad() : Number(t);
        return Number.isNaN(v) && !/nan/i.test(t) ? bad() : v;
      }
      case 'int': case 'uint': return /^[+-]?\d+$/.test(t) ? BigInt(t) : bad();
      case 'bool': return /^(1|true)$/i.test(t) ? true : /^(0|false)$/i.test(t) ? false : bad();
      case 'str': return cell;
      case 'bytes': return new TextEncoder().encode(cell);
      default: throw new NpyError('BAD_ARRAY', `${dt.name} cannot be read from text here`);
    }
  };
  const values = rows.map(({ line, number }) => {
    const cells = line.split(delimiter);
    if (cells.length !== width) throw new NpyError('BAD_ARRAY', `${source}:${number}: ${cells.length} columns, the first row has ${width}`);
    if (fields) {
      if (cells.length !== fields.length) throw new NpyError('BAD_ARRAY', `${source}:${number}: ${cells.length} columns for ${fields.length} fields`);
      return Object.fromEntries(fields.map((f, k) => [f.name, parse(f.dtype, cells[k]!, `${number}`)]));
    }
    return width === 1 ? [parse(dtype, cells[0]!, `${number}`)] : cells.map((c, k) => parse(dtype, c, `${number}:${k + 1}`));
  });
  const shape = fields || width === 1 ? [values.length] : [values.length, width];
  return arrayFromValues(values.flat(fields ? 0 : 1) as Nested<InputOf<DescrInput>>, dtype, { shape });
}

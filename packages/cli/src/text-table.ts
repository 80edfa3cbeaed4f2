/**
 * Arrays as CSV/TSV text and back, as numpy's `np.savetxt` / `np.loadtxt` see them: floats written
 * with `%.17g` (every double reads back exactly), long doubles as numpy's str() of them (their
 * shortest digits at 64 bits, which `np.loadtxt(dtype=np.longdouble)` reads back exactly, as import
 * does; np.savetxt would write them as doubles), integers as exact decimals, one row per line, record
 * fields as columns under a header line of their names. What text cannot hold without loss or
 * ambiguity (3-d arrays, complex numbers, datetimes, a delimiter inside a string) is refused.
 */
import {
  NdArray,
  NpyError,
  arrayFromValues,
  datetimeText,
  familyOf,
  parseDatetimeText,
  parseDescr,
  toOrder,
  type DescrInput,
  type DType,
  type InputOf,
  type Nested,
  type TypedArray,
} from '@npyts/core';
import { hasLoneSurrogate, parsePyLiteral } from '@npyts/core/plumbing';
import { exactExponent, longDoubleOfDecimal, numpyScalarText, readExactItem, scaledRound, type ExactFloat } from '@npyts/core/plumbing';
import { isLongDouble } from './format.js';

/** The delimiter of a file name's kind: `,` for .csv, a tab for .tsv; null for any other name. */
export function delimiterOf(name: string): ',' | '\t' | null {
  if (/\.csv$/i.test(name)) return ',';
  if (/\.tsv$/i.test(name)) return '\t';
  return null;
}

const bits = new Float64Array(1);
const words = new Uint32Array(bits.buffer);

/**
 * Whether a > 0 can lie exactly halfway between two 17-digit decimals whose first digit is at 10^e
 * (or 10^(e−1), should rounding have carried). With a = m·2^k (m odd), a·10^n (n = 16 − e) is
 * m·2^(k+n)·5^n, a half-integer only if k + n = −1. Everything else skips the slow tie check.
 */
function mayTie(a: number, e: number): boolean {
  bits[0] = a;
  const lo = words[0]!;
  const hi = words[1]!;
  const biased = (hi >>> 20) & 0x7ff;
  let k = biased === 0 ? -1074 : biased - 1075;
  // Trailing zero bits of the 53-bit significand (the implicit bit keeps it nonzero for normal numbers).
  const high = (hi & 0xfffff) | (biased === 0 ? 0 : 0x100000);
  k += lo !== 0 ? 31 - Math.clz32(lo & -lo) : 32 + 31 - Math.clz32(high & -high);
  const n = 16 - e;
  return k + n === -1 || k + n === -2;
}

/**
 * The 17 significant digits of a > 0 rounded half to even, and the exponent of the first.
 * JavaScript's toExponential rounds exactly but half up; the two differ only on an exact tie. Only a
 * value that may be one (mayTie, then its 18th to 20th digits reading 500) takes the exact (BigInt)
 * rounding; the 20-digit conversion that tells is eight times slower than the 17-digit one.
 */
function digits17(a: number): [string, number] {
  const [m, exp] = a.toExponential(16).split('e') as [string, string];
  if (!mayTie(a, Number(exp))) return [m.replace('.', ''), Number(exp)];
  const [wide] = a.toExponential(19).split('e') as [string];
  if (wide.slice(18, 21) !== '500') return [m.replace('.', ''), Number(exp)];
  // The exact value's exponent, then 17 significant digits (a carry, 9.99…95 → 10.0…, moves it up).
  let e = exactExponent(a, Math.floor(Math.log10(a)));
  let digits = scaledRound(a, 16 - e).toString();
  if (digits.length > 17) {
    e += 1;
    digits = digits.slice(0, 17);
  }
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
  const a = Math.abs(x);
  // The common case: printf's positional range, where toPrecision(17) writes the same digits (no tie
  // possible: log10 puts the first digit within one place of its exact one) with the zeros to trim.
  if (a >= 1e-4 && a < 1e17) {
    const e0 = Math.floor(Math.log10(a));
    if (!mayTie(a, e0 - 1) && !mayTie(a, e0 + 1)) {
      const t = a.toPrecision(17);
      let end = t.length;
      if (t.includes('.')) {
        while (t.charCodeAt(end - 1) === 48) end--;
        if (t.charCodeAt(end - 1) === 46) end--;
      }
      return sign + (end === t.length ? t : t.slice(0, end));
    }
  }
  const [digits, e] = digits17(a);
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

/**
 * Why `text` would not read back as itself from a cell (import has np.loadtxt's rules: no quoting,
 * `#` starts a comment, lines end at CR or LF), or null when it would. A lone surrogate has no UTF-8
 * form (it would come back as U+FFFD).
 */
function unreadableText(text: string, delimiter: string): string | null {
  if (text.includes(delimiter)) return `the delimiter ${JSON.stringify(delimiter)}`;
  if (text.includes('#')) return "a '#' (import reads it as the start of a comment)";
  if (/[\r\n]/.test(text)) return 'a line break';
  if (text.includes('"')) return 'a quote';
  if (hasLoneSurrogate(text)) return 'a lone surrogate, which UTF-8 cannot hold';
  return null;
}

function cellOf(dt: DType, v: unknown, delimiter: string, where: () => string): string {
  const family = familyOf(dt);
  switch (family) {
    case 'float':
      // A long double as numpy's str() of it: its shortest digits at its own 64 bits, which np.loadtxt
      // (dtype=np.longdouble) and import read back exactly.
      return isLongDouble(dt) ? numpyScalarText(v as number | ExactFloat, 16) : formatG17(v as number);
    case 'int':
    case 'uint':
      return String(v);
    case 'bool':
      return v ? '1' : '0';
    case 'str':
    case 'bytes': {
      const text = typeof v === 'string' ? v : new TextDecoder('latin1').decode(v as Uint8Array);
      const why = unreadableText(text, delimiter);
      if (why)
        throw new NpyError(
          'NOT_REPRESENTABLE',
          `${where()}: the string ${JSON.stringify(text)} holds ${why}; this text format has no quoting: write .npy or .npz`,
        );
      return text;
    }
    case 'datetime':
      // ISO 8601 in the dtype's own unit, as np.datetime_as_string writes it: import reads it back exactly.
      return datetimeText(v as bigint, dt.unit, dt.multiplier);
    default:
      throw new NpyError('NO_COUNTERPART', `${dt.name} values have no lossless ${delimiter === ',' ? 'CSV' : 'TSV'} form here; write .npy or .npz`);
  }
}

/** Rows written to text per step: the memory of an export is one step's rows, whatever the array's size. */
const ROWS_PER_STEP = 4096;
/** Cells a batch of floats reserves at most (a wide table takes fewer rows per batch). */
const BATCH_CELLS = 1 << 16;

/**
 * The array as delimited text, a step of rows at a time: 1-d as one column, 2-d as rows, a 1-d record
 * array as columns under a header. `rowsOf(from, count)` gives rows (a region read of a file, or a
 * view of an array in memory), so memory is one step's rows and its text.
 */
export function* tablePieces(
  dtype: DType,
  shape: readonly number[],
  rowsOf: (from: number, count: number) => NdArray,
  delimiter: ',' | '\t',
): Generator<string> {
  const fields = dtype.fields;
  if (fields) {
    if (shape.length !== 1)
      throw new NpyError('NO_COUNTERPART', `a record array of shape (${shape.join(', ')}) has no table form; only 1-d record arrays become columns`);
    if (fields.some((f) => f.dtype.fields || f.dtype.subarray)) throw new NpyError('NO_COUNTERPART', 'nested records and subarray fields have no table form');
    for (const f of fields) {
      const why = f.name === '' ? 'no name' : unreadableText(f.name, delimiter);
      if (why)
        throw new NpyError('NOT_REPRESENTABLE', `field name ${JSON.stringify(f.name)} holds ${why}: the header line would not read back as the field names`);
    }
  } else if (shape.length === 0 || shape.length > 2) {
    throw new NpyError('NO_COUNTERPART', `an array of ${shape.length} dimensions has no table form; only 1-d and 2-d arrays (np.savetxt's rule)`);
  } else if (shape.length === 2 && (shape[1] === 0 || (shape[0] === 0 && shape[1] !== 1))) {
    // No line says how many columns an empty table has, nor that it has rows of none.
    throw new NpyError(
      'NO_COUNTERPART',
      `an array of shape (${shape.join(', ')}) has no table form: text cannot hold an empty row or the width of no rows; write .npy`,
    );
  } else if (shape.length === 2 && shape[1] === 1) {
    throw new NpyError(
      'NO_COUNTERPART',
      `an array of shape (${shape.join(', ')}) would read back as 1-d (${shape[0]},): one column is a 1-d array in text (np.loadtxt's rule); reshape it to (${shape[0]},) or write .npy`,
    );
  }
  // A line that would be empty is skipped by import: a one-column table has no empty cell.
  const oneColumn = fields ? fields.length === 1 : shape.length === 1;
  if (fields) yield `${fields.map((f) => f.name).join(delimiter)}\n`;
  const rows = shape[0]!;
  const cols = shape.length === 2 ? shape[1]! : 1;
  // float32 and float64 cells are their data's numbers: no element decoding (the same text as cellOf's).
  const plainFloats = !fields && familyOf(dtype) === 'float' && (dtype.realBytes === 4 || dtype.realBytes === 8);
  for (let from = 0; from < rows; from += ROWS_PER_STEP) {
    const count = Math.min(ROWS_PER_STEP, rows - from);
    const a = toOrder(rowsOf(from, count), 'C');
    const lines: string[] = [];
    for (let r = 0; r < count; r++) {
      const row = from + r;
      if (plainFloats) {
        const data = a.data as Float64Array | Float32Array;
        let line = cols > 0 ? formatG17(data[r * cols]!) : '';
        for (let c = 1; c < cols; c++) line += delimiter + formatG17(data[r * cols + c]!);
        if (cols > 0) lines.push(line);
      } else if (fields) {
        const rec = readExactItem(dtype, a.data, r) as Record<string, unknown>;
        lines.push(fields.map((f) => cellOf(f.dtype, rec[f.name], delimiter, () => `row ${row}, field '${f.name}'`)).join(delimiter));
      } else if (cols > 0) {
        const cells: string[] = [];
        for (let c = 0; c < cols; c++) cells.push(cellOf(dtype, readExactItem(dtype, a.data, r * cols + c), delimiter, () => `row ${row}, column ${c}`));
        lines.push(cells.join(delimiter));
      }
      if (oneColumn && lines.at(-1) === '')
        throw new NpyError('NOT_REPRESENTABLE', `row ${row}: an empty string alone on its line is a blank line, which import skips; write .npy or .npz`);
    }
    if (lines.length) yield `${lines.join('\n')}\n`;
  }
}

/** Rows [from, from + count) of a C-order array, as a view. */
export function rowsOfArray(a: NdArray, from: number, count: number): NdArray {
  const per = a.shape.slice(1).reduce((p, x) => p * x, 1);
  const units = a.data.length / Math.max(1, a.size);
  const data = a.data as unknown as { subarray?: (s: number, e: number) => unknown; slice: (s: number, e: number) => unknown };
  const at = from * per * units;
  const end = (from + count) * per * units;
  const part = data.subarray ? data.subarray(at, end) : data.slice(at, end);
  return new NdArray(a.dtype, [count, ...a.shape.slice(1)], part as NdArray['data']);
}

/** Python's float() grammar as numpy's loadtxt reads it: no hex, binary, octal or underscores. */
const FLOAT_TEXT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/**
 * Lines of text given in pieces, each with its number. Lines end at LF, CRLF or a lone CR (Python's
 * universal newlines, as np.loadtxt reads a file), a CRLF split between two pieces once. Only each
 * new piece is searched for line ends, and a long line's pieces are joined once, at its end: time is
 * linear in the text, and memory is one piece and the line being cut.
 */
function* linesOf(pieces: Iterable<string>): Generator<{ line: string; number: number }> {
  let parts: string[] = [];
  let number = 0;
  // The last piece ended in a CR: a LF starting the next one ends that same line.
  let afterCR = false;
  const ends = /\r\n?|\n/g;
  for (const piece of pieces) {
    let at: number = afterCR && piece.startsWith('\n') ? 1 : 0;
    afterCR = false;
    ends.lastIndex = at;
    for (let m = ends.exec(piece); m; m = ends.exec(piece)) {
      const tail = piece.slice(at, m.index);
      const line = parts.length ? parts.join('') + tail : tail;
      parts = [];
      at = m.index + m[0].length;
      afterCR = m[0] === '\r' && at === piece.length;
      yield { line, number: ++number };
    }
    if (at < piece.length) parts.push(piece.slice(at));
  }
  if (parts.length) yield { line: parts.join(''), number: ++number };
}

/**
 * Delimited text, given in pieces, as arrays of `descr` of up to `rowsPerBatch` rows each, as
 * np.loadtxt reads it: `#` starts a comment (to the end of its line), lines left blank are skipped,
 * one column gives a 1-d array, several a 2-d one; a record descr takes one column per field and
 * skips a header line of the field names. Memory is one batch, whatever the text's length.
 */
export function* tableBatches(
  pieces: Iterable<string>,
  delimiter: ',' | '\t',
  descr: string,
  source: string,
  rowsPerBatch = ROWS_PER_STEP,
): Generator<NdArray> {
  // A type string ('<f8'), or a record descr as numpy writes it ("[('a', '<i8'), ('b', '<f8')]").
  const dtype: DType = parseDescr(descr.trim().startsWith('[') ? (parsePyLiteral(descr) as DescrInput) : descr);
  const fields = dtype.fields;
  // Where a cell is (line, and column when there are several) is text only when it is reported.
  const parse = (dt: DType, cell: string, line: number, column: number): unknown => {
    const t = cell.trim();
    const bad = (): never => {
      throw new NpyError('BAD_TABLE', `${source}:${line}${column > 0 ? `:${column}` : ''}: '${t}' is not a ${dt.name}`);
    };
    switch (familyOf(dt)) {
      case 'float': {
        if (FLOAT_TEXT.test(t)) return isLongDouble(dt) ? longDoubleOfDecimal(t) : Number(t);
        if (/^[+-]?inf(inity)?$/i.test(t)) return t.startsWith('-') ? -Infinity : Infinity;
        if (/^[+-]?nan$/i.test(t)) return NaN;
        return bad();
      }
      case 'int':
      case 'uint':
        return /^[+-]?\d+$/.test(t) ? BigInt(t) : bad();
      case 'bool':
        return /^(1|true)$/i.test(t) ? true : /^(0|false)$/i.test(t) ? false : bad();
      case 'str':
        return cell;
      case 'bytes': {
        // Bytes are written as latin-1 text (one character a byte), and read back the same way.
        const out = new Uint8Array(cell.length);
        for (let i = 0; i < cell.length; i++) {
          const c = cell.charCodeAt(i);
          if (c > 0xff) return bad();
          out[i] = c;
        }
        return out;
      }
      case 'datetime':
        try {
          return parseDatetimeText(t, dt.unit, dt.multiplier);
        } catch {
          return bad();
        }
      default:
        throw new NpyError('NO_COUNTERPART', `${dt.name} cannot be read from text here`);
    }
  };
  let width = -1;
  let first = true;
  let batch: unknown[] = [];
  // float32/float64 in this machine's byte order: numbers straight into the batch's typed array.
  const plain = !fields && familyOf(dtype) === 'float' && (dtype.realBytes === 4 || dtype.realBytes === 8) && dtype.isNative;
  const Floats = dtype.realBytes === 8 ? Float64Array : Float32Array;
  let numbers: Float64Array | Float32Array = new Floats(0);
  let filled = 0;
  let plainRows = 0;
  // Rows in a plain batch: rowsPerBatch, or fewer for a wide table, so that the batch reserved ahead
  // holds at most BATCH_CELLS cells (or one row): a wide first line must not reserve rows that may never come.
  let batchRows = rowsPerBatch;
  const reserve = (): void => {
    if (numbers.length === 0) numbers = new Floats(batchRows * width);
  };
  /** The cells of `line`, when there are `width` of them, into the batch (true); false, with nothing kept, otherwise. */
  const plainRow = (line: string, number: number): boolean => {
    reserve();
    // Each cell cut out and, when it is a plain decimal, converted at once (anything else, blanks
    // and spaces included, takes parse()): no array of cells.
    let from = 0;
    for (let k = 0; k < width; k++) {
      const next = line.indexOf(delimiter, from);
      const last = k === width - 1;
      if (last ? next >= 0 : next < 0) return false;
      const cell = line.slice(from, last ? line.length : next);
      numbers[filled + k] = FLOAT_TEXT.test(cell) ? +cell : (parse(dtype, cell, number, width === 1 ? 0 : k + 1) as number);
      from = next + 1;
    }
    filled += width;
    return true;
  };
  const flush = (): NdArray => {
    if (plain) {
      const shape = width === 1 ? [plainRows] : [plainRows, width];
      // A full batch hands its buffer over whole; the last one is cut to its rows.
      const out = new NdArray(dtype, shape, filled === numbers.length ? numbers : numbers.slice(0, filled), 'C');
      numbers = new Floats(0);
      filled = 0;
      plainRows = 0;
      return out;
    }
    const rows = batch.length;
    const shape = fields || width === 1 ? [rows] : [rows, width];
    const out = arrayFromValues((fields ? batch : batch.flat(1)) as Nested<InputOf<DescrInput>>, dtype, { shape });
    batch = [];
    return out;
  };
  for (const { line: raw, number } of linesOf(pieces)) {
    const hash = raw.indexOf('#');
    const line = hash >= 0 ? raw.slice(0, hash) : raw;
    // Rows after the first, in the common case; another count of cells goes on to say so below.
    if (plain && width > 0 && line !== '' && plainRow(line, number)) {
      if (++plainRows === batchRows) yield flush();
      continue;
    }
    // Only an empty line is skipped: numpy refuses one of spaces (a row of one blank cell).
    if (line === '') continue;
    const cells = line.split(delimiter);
    if (first) {
      first = false;
      if (fields && cells.map((c) => c.trim()).join('\u0000') === fields.map((f) => f.name).join('\u0000')) continue;
    }
    if (width < 0) {
      width = cells.length;
      batchRows = Math.max(1, Math.min(rowsPerBatch, Math.floor(BATCH_CELLS / width)));
    }
    if (cells.length !== width) throw new NpyError('BAD_TABLE', `${source}:${number}: ${cells.length} columns, the first row has ${width}`);
    if (plain) {
      reserve();
      for (let k = 0; k < width; k++) numbers[filled + k] = parse(dtype, cells[k]!, number, width === 1 ? 0 : k + 1) as number;
      filled += width;
      if (++plainRows === batchRows) yield flush();
      continue;
    }
    if (fields) {
      if (cells.length !== fields.length) throw new NpyError('BAD_TABLE', `${source}:${number}: ${cells.length} columns for ${fields.length} fields`);
      batch.push(Object.fromEntries(fields.map((f, k) => [f.name, parse(f.dtype, cells[k]!, number, 0)])));
    } else {
      batch.push(width === 1 ? [parse(dtype, cells[0]!, number, 0)] : cells.map((c, k) => parse(dtype, c, number, k + 1)));
    }
    if (batch.length === rowsPerBatch) yield flush();
  }
  if (batch.length || plainRows || width < 0) {
    if (width < 0) width = 1;
    yield flush();
  }
}

/** Delimited text, given in pieces, as one array (see {@link tableBatches}): the batches joined once. */
export function tableToArray(pieces: Iterable<string>, delimiter: ',' | '\t', descr: string, source: string): NdArray {
  const batches = [...tableBatches(pieces, delimiter, descr, source)];
  if (batches.length === 1) return batches[0]!;
  const first = batches[0]!;
  const rows = batches.reduce((n, b) => n + b.shape[0]!, 0);
  // Every batch holds the same typed array kind: one of the total length, filled batch by batch.
  const Ctor = first.data.constructor as new (n: number) => TypedArray;
  const out = new Ctor(batches.reduce((n, b) => n + b.data.length, 0));
  let at = 0;
  for (const b of batches) {
    out.set(b.data as TypedArray as never, at);
    at += b.data.length;
  }
  return new NdArray(first.dtype, [rows, ...first.shape.slice(1)], out as NdArray['data']);
}

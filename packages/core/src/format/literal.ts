/**
 * A hand-written parser and printer for the Python literals that appear in .npy headers.
 *
 * numpy reads headers with `ast.literal_eval`; we accept the same literal grammar (strings with
 * either quote and escapes, ints, floats, True/False/None, tuples, lists, dicts, comments,
 * Python 2 `L` suffixes on request) without evaluating anything. Parsing is one left-to-right
 * pass and nesting is bounded, so hostile headers cost linear time and bounded stack.
 */
import { NpyError } from '../errors.js';

/**
 * A Python tuple; lists are plain JS arrays.
 * @example
 * reprPy(new PyTuple([1, 'a']));   // "(1, 'a')"
 */
export class PyTuple {
  constructor(readonly items: PyValue[]) {}
}

/**
 * A Python float; kept apart from ints so that `(2.0, 3)` is not mistaken for a shape.
 * @example
 * reprPy(new PyFloat(2));   // '2.0'
 */
export class PyFloat {
  constructor(readonly value: number) {}
}

/** A Python literal value as parsed from a header: str, int, float, bool, None, tuple, list or dict. */
export type PyValue = string | number | bigint | boolean | null | PyFloat | PyTuple | PyValue[] | PyDict;
export type PyDict = Map<string | number | bigint | boolean | null, PyValue>;

export interface ParseOptions {
  /** Accept Python 2 long-integer suffixes (`10L`), as numpy does for format 1.0 and 2.0. */
  allowLongSuffix?: boolean;
  /** Maximum nesting of tuples, lists and dicts. */
  maxDepth?: number;
  /** Added to character positions in error messages (the header's byte offset in the file). */
  baseOffset?: number;
}

export const DEFAULT_MAX_DEPTH = 256;

const SIMPLE_ESCAPES: Record<string, string> = {
  '\\': '\\',
  "'": "'",
  '"': '"',
  a: '\x07',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
};

class Parser {
  pos = 0;
  depth = 0;
  constructor(
    readonly text: string,
    readonly opts: Required<ParseOptions>,
  ) {}

  fail(message: string, at = this.pos): never {
    throw new NpyError('HEADER_SYNTAX', `invalid header literal: ${message}`, {
      offset: this.opts.baseOffset + at,
    });
  }

  skipSpace(): void {
    const t = this.text;
    while (this.pos < t.length) {
      const c = t.charCodeAt(this.pos);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x0c || c === 0x0b) this.pos++;
      else if (c === 0x5c && (t[this.pos + 1] === '\n' || t[this.pos + 1] === '\r'))
        this.pos += 2; // line continuation
      else if (c === 0x23) {
        while (this.pos < t.length && t[this.pos] !== '\n') this.pos++;
      } else break;
    }
  }

  value(): PyValue {
    this.skipSpace();
    const t = this.text;
    if (this.pos >= t.length) this.fail('unexpected end of header');
    const c = t[this.pos]!;
    if (c === '{') return this.container('}', 'dict') as PyDict;
    if (c === '[') return this.container(']', 'list') as PyValue[];
    if (c === '(') return this.container(')', 'tuple') as PyValue;
    if (c === "'" || c === '"') return this.string();
    if (/[uUrRbB]/.test(c) && (t[this.pos + 1] === "'" || t[this.pos + 1] === '"')) {
      if (c === 'b' || c === 'B') this.fail('bytes literals are not valid in a header');
      const raw = c === 'r' || c === 'R';
      this.pos++;
      return this.string(raw);
    }
    if (c === '-' || c === '+' || c === '.' || (c >= '0' && c <= '9')) return this.number();
    const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(t.slice(this.pos, this.pos + 16));
    if (word) {
      const w = word[0];
      if (w === 'True' || w === 'False' || w === 'None') {
        this.pos += w.length;
        return w === 'None' ? null : w === 'True';
      }
      this.fail(`name '${w}' is not a literal`);
    }
    this.fail(`unexpected character ${JSON.stringify(c)}`);
  }

  container(close: string, kind: 'dict' | 'list' | 'tuple'): PyValue {
    const start = this.pos;
    if (++this.depth > this.opts.maxDepth) this.fail(`nesting deeper than ${this.opts.maxDepth}`);
    this.pos++; // opening bracket
    const items: PyValue[] = [];
    const dict: PyDict = new Map();
    let sawComma = false;
    for (;;) {
      this.skipSpace();
      if (this.pos >= this.text.length) this.fail(`unclosed '${this.text[start]}'`, start);
      if (this.text[this.pos] === close) {
        this.pos++;
        break;
      }
      if (items.length > 0 || dict.size > 0) {
        if (this.text[this.pos] !== ',') this.fail(`expected ',' or '${close}'`);
        this.pos++;
        sawComma = true;
        this.skipSpace();
        if (this.text[this.pos] === close) {
          this.pos++;
          break;
        }
      }
      if (kind === 'dict') {
        const keyAt = this.pos;
        const key = this.value();
        if (key !== null && typeof key === 'object' && !(key instanceof PyFloat)) this.fail('dict keys must be plain literals', keyAt);
        this.skipSpace();
        if (this.text[this.pos] !== ':') this.fail("expected ':' after dict key");
        this.pos++;
        dict.set(key instanceof PyFloat ? key.value : key, this.value());
        items.push(null); // counts entries, including duplicate keys, for comma handling
      } else {
        items.push(this.value());
      }
    }
    this.depth--;
    if (kind === 'dict') return dict;
    if (kind === 'list') return items;
    // `(x)` is just x in Python; a one-element tuple needs a comma.
    if (items.length === 1 && !sawComma) return items[0]!;
    return new PyTuple(items);
  }

  string(raw = false): string {
    const t = this.text;
    const q = t[this.pos]!;
    const triple = t.startsWith(q.repeat(3), this.pos);
    const quote = triple ? q.repeat(3) : q;
    const start = this.pos;
    this.pos += quote.length;
    let out = '';
    let runStart = this.pos;
    for (;;) {
      if (this.pos >= t.length) this.fail('unterminated string', start);
      const c = t[this.pos]!;
      if (t.startsWith(quote, this.pos)) {
        out += t.slice(runStart, this.pos);
        this.pos += quote.length;
        return out;
      }
      if (!triple && (c === '\n' || c === '\r')) this.fail('newline in string', this.pos);
      if (c !== '\\') {
        this.pos++;
        continue;
      }
      out += t.slice(runStart, this.pos);
      const e = t[this.pos + 1];
      if (e === undefined) this.fail('unterminated string', start);
      if (raw) {
        out += '\\' + e;
        this.pos += 2;
      } else if (e in SIMPLE_ESCAPES) {
        out += SIMPLE_ESCAPES[e];
        this.pos += 2;
      } else if (e === '\n') {
        this.pos += 2;
      } else if (e === 'x' || e === 'u' || e === 'U') {
        const n = e === 'x' ? 2 : e === 'u' ? 4 : 8;
        const hex = t.slice(this.pos + 2, this.pos + 2 + n);
        if (hex.length !== n || !/^[0-9a-fA-F]+$/.test(hex)) this.fail(`bad \\${e} escape`);
        const cp = parseInt(hex, 16);
        if (cp > 0x10ffff) this.fail('escape beyond U+10FFFF');
        out += String.fromCodePoint(cp);
        this.pos += 2 + n;
      } else if (e >= '0' && e <= '7') {
        const m = /^[0-7]{1,3}/.exec(t.slice(this.pos + 1, this.pos + 4))![0];
        out += String.fromCodePoint(parseInt(m, 8));
        this.pos += 1 + m.length;
      } else {
        out += '\\' + e; // Python keeps unknown escapes verbatim
        this.pos += 2;
      }
      runStart = this.pos;
    }
  }

  number(): number | bigint | PyFloat {
    const t = this.text;
    const start = this.pos;
    let sign = 1;
    while (t[this.pos] === '-' || t[this.pos] === '+') {
      if (t[this.pos] === '-') sign = -sign;
      this.pos++;
      this.skipSpace();
    }
    const rest = t.slice(this.pos, this.pos + 400);
    const int = /^(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|[1-9][0-9_]*|0+)(?![.eEjJ0-9])/.exec(rest);
    if (int) {
      this.pos += int[0].length;
      if (t[this.pos] === 'L' || t[this.pos] === 'l') {
        if (!this.opts.allowLongSuffix) this.fail('Python 2 long suffix is only valid in format 1.0 and 2.0');
        this.pos++;
      }
      const digits = int[0].replace(/_/g, '');
      let big: bigint;
      try {
        big = BigInt(/^0+$/.test(digits) ? '0' : /^0[oO]/.test(digits) ? '0o' + digits.slice(2) : digits);
      } catch {
        return this.fail('malformed integer', start);
      }
      if (sign < 0) big = -big;
      const asNum = Number(big);
      return Number.isSafeInteger(asNum) ? asNum : big;
    }
    const flt = /^(?:[0-9_]*\.[0-9_]*(?:[eE][+-]?[0-9_]+)?|[0-9_]+[eE][+-]?[0-9_]+)/.exec(rest);
    if (flt && /[0-9]/.test(flt[0])) {
      this.pos += flt[0].length;
      if (t[this.pos] === 'j' || t[this.pos] === 'J') this.fail('complex literals are not valid in a header');
      return new PyFloat(sign * Number(flt[0].replace(/_/g, '')));
    }
    return this.fail('malformed number', start);
  }
}

/**
 * Parse one Python literal; trailing whitespace and comments are allowed, anything else is an error.
 * @example
 * parsePyLiteral("{'descr': '<f4', 'shape': (3,)}");   // a PyDict
 */
export function parsePyLiteral(text: string, options: ParseOptions = {}): PyValue {
  const p = new Parser(text, {
    allowLongSuffix: options.allowLongSuffix ?? false,
    maxDepth: options.maxDepth ?? DEFAULT_MAX_DEPTH,
    baseOffset: options.baseOffset ?? 0,
  });
  const v = p.value();
  p.skipSpace();
  if (p.pos < text.length) {
    // A NUL padded header (some writers) ends in NULs: Python's ast would refuse them too.
    p.fail('unexpected text after the literal');
  }
  return v;
}

const NON_PRINTABLE = /[\p{C}\p{Z}]/u;

/**
 * Python's `repr()` of a str.
 * @example
 * reprString("it's");   // "it's" (double quotes, as Python chooses)
 */
export function reprString(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === quote || ch === '\\') out += '\\' + ch;
    else if (ch === '\t') out += '\\t';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (cp < 0x20 || cp === 0x7f) out += '\\x' + cp.toString(16).padStart(2, '0');
    else if (cp < 0x7f) out += ch;
    else if (!NON_PRINTABLE.test(ch)) out += ch;
    else if (cp <= 0xff) out += '\\x' + cp.toString(16).padStart(2, '0');
    else if (cp <= 0xffff) out += '\\u' + cp.toString(16).padStart(4, '0');
    else out += '\\U' + cp.toString(16).padStart(8, '0');
  }
  return out + quote;
}

/**
 * Python's `repr()` of a float: the shortest digits that read back, scientific below 1e-4 and from
 * 1e16 (`1e-05`, `1e+16`), `inf`, `nan`, and `.0` on integral values.
 * @example
 * reprFloat(1e16);   // '1e+16'
 */
export function reprFloat(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mantissa, e] = x.toExponential().split('e') as [string, string];
  const exp = Number(e);
  if (exp < -4 || exp >= 16) return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  const text = String(x);
  return text.includes('.') ? text : `${text}.0`;
}

/**
 * Python's `repr()` of bytes: printable ASCII as is, `\t \n \r` and `\xNN` escapes, quotes as Python picks.
 * @example
 * reprBytes(new Uint8Array([0x61, 0x27, 0]));   // b"a'\x00"
 */
export function reprBytes(b: Uint8Array): string {
  const quote = b.includes(0x27) && !b.includes(0x22) ? '"' : "'";
  let out = '';
  for (const c of b) {
    const ch = String.fromCharCode(c);
    if (ch === quote || c === 0x5c) out += `\\${ch}`;
    else if (c === 0x09) out += '\\t';
    else if (c === 0x0a) out += '\\n';
    else if (c === 0x0d) out += '\\r';
    else if (c >= 0x20 && c < 0x7f) out += ch;
    else out += `\\x${c.toString(16).padStart(2, '0')}`;
  }
  return `b${quote}${out}${quote}`;
}

/**
 * Python's `repr()` of a literal value (tuples print as `(x,)` for one item).
 * @example
 * reprPy([new PyTuple(['x', '<f8'])]);   // "[('x', '<f8')]"
 */
export function reprPy(v: PyValue): string {
  if (v === null) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'string') return reprString(v);
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  if (v instanceof PyFloat) return reprFloat(v.value);
  if (v instanceof PyTuple) {
    const parts = v.items.map(reprPy);
    return parts.length === 1 ? `(${parts[0]},)` : `(${parts.join(', ')})`;
  }
  if (Array.isArray(v)) return `[${v.map(reprPy).join(', ')}]`;
  return `{${[...v].map(([k, x]) => `${reprPy(k)}: ${reprPy(x)}`).join(', ')}}`;
}

/**
 * Whether `s` holds a lone surrogate (a UTF-16 half without its pair): text that UTF-8 cannot hold
 * (TextEncoder writes U+FFFD), which Python's pickle writes with 'surrogatepass'.
 * @example
 * hasLoneSurrogate('a\ud800');   // true
 */
export function hasLoneSurrogate(s: string): boolean {
  return /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);
}

/**
 * The pickle machine: protocols 0–5, opcode by opcode (named in opcodes.ts), with memo size, MARK
 * depth, container nesting and allocated bytes bounded; globals only from the allowlist.
 *
 * Long on purpose: one class, because every opcode family shares the stack, the memo and the limits,
 * and the hot loop needs them as fields of one object (a split across modules would pass them around
 * per opcode). Text decoding, values and the allowlist are in their own modules.
 */
import { DType } from '../format/dtype.js';
import { NdArray } from '../array/ndarray.js';
import { PyMaskedArray, PySlice, isPyFrozenset, pyFrozenset, pyTuple } from './python-values.js';
import { putOwn } from '../array/safe-object.js';
import { OP } from './opcodes.js';
import { MAX_INT_DIGITS, integerOfText } from '../array/json.js';
import { NpyError } from '../errors.js';
import { PICKLE_RULES, checkNumbers, checkOptions, knownKeys, type KnownKeys } from '../options.js';
import type { UnpickleLimits } from '../npy.js';
import { Dict, List, Pending, Tuple, bad, settle } from './vm-values.js';
import { Global, resolveGlobal, type Constructor } from './allowlist.js';

/** Limits of the unpickler (container depth, items, memo size). */
export type UnpickleOptions = UnpickleLimits;

/** The options {@link UnpickleOptions} names (see `knownKeys`, options.ts). */
export const UNPICKLE_KEYS = { maxDepth: true, maxMemo: true, maxMarks: true, maxBytes: true } as const satisfies KnownKeys<UnpickleOptions>;
const UNPICKLE_KEY_SET = knownKeys<UnpickleOptions>(UNPICKLE_KEYS);

/**
 * How a machine reads another library's pickles (PyTorch's checkpoints): its own allowlist of
 * globals, its persistent ids (storages kept beside the pickle), and dicts kept as Maps.
 * @internal
 */
export interface PickleDialect {
  /** A global by module and name, refused (PICKLE_FORBIDDEN) unless allowed. */
  resolveGlobal(module: string, name: string, offset: number): Global;
  /** The value a persistent id stands for; without it, persistent ids are refused. */
  persistentLoad?(pid: unknown, offset: number): unknown;
  /** BUILD of a dict with a dict state sets the dict's attributes (a state_dict's `_metadata`): ignored, not items. */
  dictStateIsAttributes?: boolean;
  /** Every dict as a Map, in the order its keys were set (an object would put integer-like keys first). */
  dictsAsMaps?: boolean;
}

const NOTHING: readonly unknown[] = [];
/** Memo entries per chunk. */
const MEMO_CHUNK = 4096;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * UTF-8 `bytes[p, end)` as UTF-16 code units into `units` from `k`, as Python decodes pickled str
 * ('surrogatepass': a surrogate's three bytes stand for it); the count of units, or -1 for malformed
 * UTF-8 (overlong forms, past U+10FFFF, cut sequences). A high and a low surrogate written as two
 * three-byte sequences are refused: JavaScript cannot tell them from the character they pair into.
 */
function decodeUtf8(bytes: Uint8Array, p: number, end: number, units: Uint16Array, k: number): number {
  let lone = false; // whether units[k - 1] is a surrogate from a three-byte sequence
  while (p < end) {
    const c = bytes[p]!;
    if (c < 0x80) {
      units[k++] = c;
      p++;
      lone = false;
      continue;
    }
    if (c >= 0xc2 && c <= 0xdf && p + 1 < end) {
      const c1 = bytes[p + 1]!;
      if ((c1 & 0xc0) !== 0x80) return -1;
      units[k++] = ((c & 0x1f) << 6) | (c1 & 0x3f);
      p += 2;
      lone = false;
    } else if (c >= 0xe0 && c <= 0xef && p + 2 < end) {
      const c1 = bytes[p + 1]!;
      const c2 = bytes[p + 2]!;
      if (c1 < (c === 0xe0 ? 0xa0 : 0x80) || c1 > 0xbf || (c2 & 0xc0) !== 0x80) return -1;
      const cp = ((c & 0x0f) << 12) | ((c1 & 0x3f) << 6) | (c2 & 0x3f);
      const surrogate = cp >= 0xd800 && cp <= 0xdfff;
      if (surrogate && cp >= 0xdc00 && lone && units[k - 1]! <= 0xdbff) return -1;
      units[k++] = cp;
      p += 3;
      lone = surrogate;
    } else if (c >= 0xf0 && c <= 0xf4 && p + 3 < end) {
      const c1 = bytes[p + 1]!;
      const c2 = bytes[p + 2]!;
      const c3 = bytes[p + 3]!;
      const lo = c === 0xf0 ? 0x90 : 0x80;
      const hi = c === 0xf4 ? 0x8f : 0xbf;
      if (c1 < lo || c1 > hi || (c2 & 0xc0) !== 0x80 || (c3 & 0xc0) !== 0x80) return -1;
      const cp = ((c & 0x07) << 18) | ((c1 & 0x3f) << 12) | ((c2 & 0x3f) << 6) | (c3 & 0x3f);
      units[k++] = 0xd800 + ((cp - 0x10000) >> 10);
      units[k++] = 0xdc00 + ((cp - 0x10000) & 0x3ff);
      p += 4;
      lone = false;
    } else return -1;
  }
  return k;
}

class Reader {
  pos = 0;
  private readonly view: DataView;
  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  need(n: number): void {
    if (this.pos + n > this.bytes.length) bad(`truncated: ${n} more bytes needed at byte ${this.pos}`, this.pos);
  }
  u8(): number {
    this.need(1);
    return this.bytes[this.pos++]!;
  }
  u16(): number {
    this.need(2);
    const v = this.view.getUint16(this.pos, true);
    this.pos += 2;
    return v;
  }
  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.pos, true);
    this.pos += 4;
    return v;
  }
  i32(): number {
    this.need(4);
    const v = this.view.getInt32(this.pos, true);
    this.pos += 4;
    return v;
  }
  u64(): number {
    this.need(8);
    const v = this.view.getBigUint64(this.pos, true);
    this.pos += 8;
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) bad(`length ${v} is too large`, this.pos - 8);
    return Number(v);
  }
  f64be(): number {
    this.need(8);
    const v = this.view.getFloat64(this.pos, false);
    this.pos += 8;
    return v;
  }
  take(n: number): Uint8Array {
    this.need(n);
    const b = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
  /**
   * A text argument up to its end of line, as latin-1; an integer's text longer than `max` characters
   * is refused before any text is made (eight million digits cost no memory to refuse).
   */
  line(max = Number.POSITIVE_INFINITY): string {
    const end = this.bytes.indexOf(0x0a, this.pos);
    if (end < 0) bad('truncated: a text argument has no end of line', this.pos);
    if (end - this.pos > max)
      throw new NpyError(
        'TOO_LARGE',
        `an integer written with ${end - this.pos} characters: like Python, npyts converts at most ${MAX_INT_DIGITS} digits from text`,
        { offset: this.pos },
      );
    // Made in slices (flat strings), not a character at a time (a rope of as many pieces).
    let s = '';
    for (let i = this.pos; i < end; i += 8192) s += String.fromCharCode.apply(null, this.bytes.subarray(i, Math.min(end, i + 8192)) as unknown as number[]);
    this.pos = end + 1;
    return s;
  }
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** Two's complement little-endian bytes (LONG1, LONG4) as an integer, in time linear in the length. */
function decodeLong(b: Uint8Array): bigint {
  if (b.length === 0) return 0n;
  // Through hex text: BigInt parses hex in linear time, where shifting in one byte at a time is quadratic.
  const parts = new Array<string>(b.length);
  for (let i = 0; i < b.length; i++) parts[i] = HEX[b[b.length - 1 - i]!]!;
  let v = BigInt(`0x${parts.join('')}`);
  if (b[b.length - 1]! & 0x80) v -= 1n << BigInt(8 * b.length);
  return v;
}

function pyInt(v: bigint): number | bigint {
  return v >= -(2n ** 53n) + 1n && v <= 2n ** 53n - 1n ? Number(v) : v;
}

/** Python's text escapes in protocol-0 strings (`'...'` with backslash escapes). */
function unescapePy2(text: string, offset: number): string {
  const q = text[0];
  if ((q !== "'" && q !== '"') || text[text.length - 1] !== q) bad('protocol-0 string is not quoted', offset);
  return text.slice(1, -1).replace(/\\(x[0-9a-fA-F]{2}|[0-7]{1,3}|.)/g, (_, e: string) => {
    if (e[0] === 'x') return String.fromCharCode(parseInt(e.slice(1), 16));
    if (/^[0-7]/.test(e)) return String.fromCharCode(parseInt(e, 8));
    return ({ n: '\n', r: '\r', t: '\t', '\\': '\\', "'": "'", '"': '"', a: '\x07', b: '\b', f: '\f', v: '\v' } as Record<string, string>)[e] ?? `\\${e}`;
  });
}

function rawUnicodeEscape(text: string): string {
  return text.replace(/\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})/g, (_, a: string, b: string) => {
    const cp = parseInt(a ?? b, 16);
    return cp <= 0x10ffff ? String.fromCodePoint(cp) : bad(`\\U escape beyond U+10FFFF`);
  });
}

/**
 * Run a pickle and return the value it builds, with Python containers as JS data (see README).
 * @example
 * const value = unpickle(bytes);   // plain data; never runs code
 */
/**
 * Run a pickle: the value it builds (with numpy arrays and dtypes reconstructed), never running code.
 * @example
 * unpickle(pickleBytes);   // e.g. [1, 'two', null] for pickle.dumps([1, 'two', None])
 */
export function unpickle(input: Uint8Array, options: UnpickleOptions = {}): unknown {
  checkOptions('unpickle', options, UNPICKLE_KEY_SET);
  return unpickleWith(input, options, NUMPY_DIALECT);
}

/** numpy's pickles: the allowlist of allowlist.ts, no persistent ids. */
const NUMPY_DIALECT: PickleDialect = { resolveGlobal };

/**
 * {@link unpickle} in a dialect: another allowlist, persistent ids.
 * @internal
 */
export function unpickleWith(input: Uint8Array, options: UnpickleOptions, dialect: PickleDialect): unknown {
  return unpickleFirst(input, options, dialect).value;
}

/**
 * {@link unpickleWith} of the first pickle in `input`, and where it ends (the byte after its STOP):
 * for files that hold pickles one after another (PyTorch's legacy format).
 * @internal
 */
export function unpickleFirst(input: Uint8Array, options: UnpickleOptions, dialect: PickleDialect): { value: unknown; end: number } {
  // A plain view: Node's Buffer#slice would return views where copies are meant.
  const machine = new PickleMachine(new Uint8Array(input.buffer, input.byteOffset, input.byteLength), options, dialect);
  const value = machine.run();
  return { value, end: machine.end };
}

/** The families of opcodes, each run by one method of the machine. */
type Family = 'controlOps' | 'constantOps' | 'numberOps' | 'textOps' | 'containerOps' | 'objectOps' | 'memoOps' | 'unsupportedOps';

const FAMILIES: Record<Family, number[]> = {
  controlOps: [OP.PROTO, OP.FRAME, OP.STOP, OP.MARK, OP.POP, OP.POP_MARK, OP.DUP],
  constantOps: [OP.NONE, OP.NEWTRUE, OP.NEWFALSE],
  numberOps: [OP.BININT1, OP.BININT2, OP.BININT, OP.INT, OP.LONG, OP.LONG1, OP.LONG4, OP.FLOAT, OP.BINFLOAT],
  textOps: [
    OP.STRING,
    OP.BINSTRING,
    OP.SHORT_BINSTRING,
    OP.UNICODE,
    OP.BINUNICODE,
    OP.SHORT_BINUNICODE,
    OP.BINUNICODE8,
    OP.BINBYTES,
    OP.SHORT_BINBYTES,
    OP.BINBYTES8,
    OP.BYTEARRAY8,
  ],
  containerOps: [
    OP.EMPTY_LIST,
    OP.EMPTY_TUPLE,
    OP.EMPTY_DICT,
    OP.EMPTY_SET,
    OP.LIST,
    OP.TUPLE,
    OP.TUPLE1,
    OP.TUPLE2,
    OP.TUPLE3,
    OP.DICT,
    OP.APPEND,
    OP.APPENDS,
    OP.SETITEM,
    OP.SETITEMS,
    OP.ADDITEMS,
    OP.FROZENSET,
  ],
  objectOps: [OP.GLOBAL, OP.STACK_GLOBAL, OP.REDUCE, OP.NEWOBJ, OP.NEWOBJ_EX, OP.INST, OP.OBJ, OP.BUILD, OP.PERSID, OP.BINPERSID],
  memoOps: [OP.PUT, OP.BINPUT, OP.LONG_BINPUT, OP.MEMOIZE, OP.GET, OP.BINGET, OP.LONG_BINGET],
  unsupportedOps: [OP.EXT1, OP.EXT2, OP.EXT4, OP.NEXT_BUFFER, OP.READONLY_BUFFER],
};

/** The families in the order of `run`'s switch. */
const FAMILY_ORDER = Object.keys(FAMILIES) as Family[];

/** Opcode byte → its family's place in FAMILY_ORDER (-1: not a pickle opcode). */
const FAMILY_OF: Int8Array = (() => {
  const table = new Int8Array(256).fill(-1);
  FAMILY_ORDER.forEach((family, k) => {
    for (const op of FAMILIES[family]) table[op] = k;
  });
  return table;
})();

/** What a step returns: nothing, or the finished value at STOP. */
type Step = { value: unknown } | undefined;

/**
 * The pickle virtual machine: a stack with MARKs, a memo, and one method per opcode family. Every
 * resource a pickle can make it spend (MARK depth, memo entries, container nesting, bytes) is bounded.
 */
class PickleMachine {
  private readonly r: Reader;
  /**
   * The stack's slots; `sp` is its height. The array never shrinks: shortening a JS array frees its
   * tail, and every batch of a list would grow it again.
   */
  private readonly stack: unknown[] = [];
  private sp = 0;
  /** Stack heights at the open MARKs: a MARK costs no allocation, and items are taken from the one stack. */
  private readonly marks: number[] = [];
  /** Height of the innermost open MARK (0 when none): nothing pops below it. */
  private floor = 0;
  /**
   * Memo entries by index, in chunks of MEMO_CHUNK (indices are small and dense in practice, and one
   * array grown an entry at a time would copy itself over and over); `undefined` is a hole, never a value.
   */
  private readonly memo: unknown[][] = [];
  private memoCount = 0;
  /** Nesting depth of containers deeper than 1 (a container not in here holds no container). */
  private readonly depthOf = new Map<object, number>();
  private allocated = 0;
  private readonly maxDepth: number;
  private readonly maxMemo: number;
  private readonly maxMarks: number;
  private readonly maxBytes: number;

  constructor(
    input: Uint8Array,
    options: UnpickleOptions,
    private readonly dialect: PickleDialect,
  ) {
    checkNumbers(options, PICKLE_RULES);
    this.r = new Reader(input);
    this.maxDepth = options.maxDepth ?? 1000;
    this.maxMemo = options.maxMemo ?? Math.max(1_000_000, input.length);
    this.maxMarks = options.maxMarks ?? 10_000;
    this.maxBytes = options.maxBytes ?? 2 ** 31;
  }

  /** Where the input was read to: after the STOP, once run() returned. */
  get end(): number {
    return this.r.pos;
  }

  run(): unknown {
    const r = this.r;
    if (r.bytes.length === 0) bad('empty pickle');
    const bytes = r.bytes;
    const stack = this.stack;
    for (;;) {
      const at = r.pos;
      const op = r.u8();
      // The opcodes numpy's object arrays are mostly made of, handled here (and only here) without a
      // family call: before the JIT has warmed up, a call per opcode is most of the cost.
      switch (op) {
        case OP.BININT1:
          r.need(1);
          stack[this.sp++] = bytes[r.pos++];
          continue;
        case OP.NONE:
          stack[this.sp++] = null;
          continue;
        case OP.MEMOIZE:
          this.putMemo(this.memoCount, this.top(), at);
          continue;
        case OP.BINPUT:
          r.need(1);
          this.putMemo(bytes[r.pos++]!, this.top(), at);
          continue;
        case OP.BINGET:
          r.need(1);
          stack[this.sp++] = this.getMemo(bytes[r.pos++]!, at);
          continue;
        case OP.SHORT_BINUNICODE:
          r.need(1);
          stack[this.sp++] = this.shortText(bytes[r.pos++]!);
          continue;
        case OP.EMPTY_LIST:
          this.account(16);
          stack[this.sp++] = new List();
          continue;
        case OP.MARK:
          this.openMark(at);
          continue;
        default:
          break;
      }
      // Every opcode: a switch of direct calls (not this[name](…)), so each call site stays monomorphic.
      let done: Step;
      switch (FAMILY_OF[op]) {
        case 0:
          done = this.controlOps(op, at);
          break;
        case 1:
          done = this.constantOps(op);
          break;
        case 2:
          done = this.numberOps(op, at);
          break;
        case 3:
          done = this.textOps(op, at);
          break;
        case 4:
          done = this.containerOps(op, at);
          break;
        case 5:
          done = this.objectOps(op, at);
          break;
        case 6:
          done = this.memoOps(op, at);
          break;
        case 7:
          done = this.unsupportedOps(op, at);
          break;
        default:
          bad(`unknown opcode 0x${op.toString(16).padStart(2, '0')}`, at);
      }
      if (done) return done.value;
    }
  }

  // -- bookkeeping ------------------------------------------------------------------------------

  private readonly account = (n: number): void => {
    this.allocated += n;
    if (this.allocated > this.maxBytes) bad(`more than ${this.maxBytes} bytes allocated (option maxBytes)`, this.r.pos);
  };

  private depth(v: unknown): number {
    return typeof v === 'object' && v !== null ? (this.depthOf.get(v) ?? 1) : 0;
  }

  /** Register a new container holding `children`: its nesting depth is checked and its size counted. */
  private container<T extends object>(c: T, children: readonly unknown[]): T {
    let d = 0;
    for (let i = 0; i < children.length; i++) {
      const x = children[i];
      if (typeof x === 'object' && x !== null) d = Math.max(d, this.depth(x));
    }
    if (d + 1 > this.maxDepth) bad(`containers nested deeper than ${this.maxDepth} (option maxDepth)`, this.r.pos);
    if (d > 0) this.depthOf.set(c, d + 1);
    this.account(16);
    return c;
  }

  /** Items `added[from, to)` were added to container `c`: its depth may grow. */
  private grow(c: object, added: readonly unknown[], from = 0, to = added.length): void {
    this.account(16 * (to - from));
    let deepest = 0;
    for (let i = from; i < to; i++) {
      const x = added[i];
      if (typeof x === 'object' && x !== null) deepest = Math.max(deepest, this.depth(x));
    }
    if (deepest === 0) return; // primitives only: the depth cannot change
    const before = this.depthOf.get(c) ?? 1;
    const d = Math.max(before, deepest + 1);
    if (d > this.maxDepth) bad(`containers nested deeper than ${this.maxDepth} (option maxDepth)`, this.r.pos);
    if (d !== before) this.depthOf.set(c, d);
  }

  private pop(): unknown {
    if (this.sp <= this.floor) bad('stack underflow', this.r.pos);
    return this.stack[--this.sp];
  }

  private top(): unknown {
    return this.sp > this.floor ? this.stack[this.sp - 1] : bad('stack underflow', this.r.pos);
  }

  private openMark(at: number): void {
    if (this.marks.length >= this.maxMarks) bad(`more than ${this.maxMarks} open MARKs (option maxMarks)`, at);
    this.marks.push(this.sp);
    this.floor = this.sp;
  }

  /** Close the innermost MARK: the stack height where its items start (they stay on the stack). */
  private closeMark(): number {
    const start = this.marks.pop();
    if (start === undefined) bad('no MARK to pop to', this.r.pos);
    this.floor = this.marks.length ? this.marks[this.marks.length - 1]! : 0;
    return start;
  }

  /** The items pushed since the last MARK, taken off the stack; the MARK is removed. */
  private popMark(): unknown[] {
    const start = this.closeMark();
    const items = this.stack.slice(start, this.sp);
    this.sp = start;
    return items;
  }

  private push(v: unknown): void {
    this.stack[this.sp++] = v;
  }

  /** Arrays of character codes, one per length, reused: longer short text is made without allocating. */
  private readonly codes: number[][] = [];

  /**
   * The next `n` bytes (at most 255) as UTF-8 text, decoded here, in place: short strings are most
   * of an object array, and a TextDecoder call (with the view it needs) costs several times more.
   * Malformed UTF-8 (overlong forms, past U+10FFFF, cut sequences) is refused; a lone surrogate is
   * read as Python's 'surrogatepass' writes it (see decodeUtf8).
   */
  private shortText(n: number): string {
    const r = this.r;
    r.need(n);
    this.account(n);
    const bytes = r.bytes;
    const start = r.pos;
    const end = start + n;
    // ASCII (most text in practice) needs no decoding: its bytes are its code units.
    let p = start;
    while (p < end && bytes[p]! < 0x80) p++;
    if (p === end && n <= FIXED_ARITY) {
      r.pos = end;
      return fromCodes(bytes, start, n);
    }
    const units = this.units;
    for (let q = start; q < p; q++) units[q - start] = bytes[q]!;
    const k = decodeUtf8(bytes, p, end, units, p - start);
    if (k < 0) bad('text is not valid UTF-8', r.pos);
    r.pos = end;
    if (k <= FIXED_ARITY) return fromCodes(units, 0, k);
    let codes = this.codes[k];
    if (!codes) this.codes[k] = codes = new Array<number>(k).fill(0);
    for (let i = 0; i < k; i++) codes[i] = units[i]!;
    return String.fromCharCode.apply(null, codes);
  }

  /** Scratch space for shortText's UTF-16 code units (at most one per byte). */
  private readonly units = new Uint16Array(256);

  private text(b: Uint8Array): string {
    this.account(b.length);
    try {
      return utf8.decode(b);
    } catch {
      // Python writes str with 'surrogatepass': a lone surrogate is its own three bytes, which
      // TextDecoder refuses. Decoded here, strictly otherwise.
      const units = new Uint16Array(b.length);
      const k = decodeUtf8(b, 0, b.length, units, 0);
      if (k < 0) return bad('text is not valid UTF-8', this.r.pos);
      let out = '';
      for (let i = 0; i < k; i += 8192) out += String.fromCharCode.apply(null, units.subarray(i, Math.min(k, i + 8192)) as unknown as number[]);
      return out;
    }
  }

  private bytesValue(b: Uint8Array): Uint8Array {
    this.account(b.length);
    return b.slice();
  }

  /** Call an allowlisted global (never anything else). */
  private call(fn: unknown, args: unknown[]): unknown {
    if (!(fn instanceof Global) || typeof fn.target !== 'function') bad(`${fn instanceof Global ? fn.qualified : typeof fn} is not callable`, this.r.pos);
    const value = (fn.target as Constructor)(args.map(settle));
    // A dict a constructor made holds the arguments' values: its nesting is theirs.
    if (typeof value === 'object' && value !== null) this.container(value, value instanceof Dict ? value.array() : NOTHING);
    return value;
  }

  /** Set the keys and values `from[start, end)` (alternating) in the dict `target`. */
  private setItems(target: unknown, from: readonly unknown[], start: number, end: number): void {
    if (!(target instanceof Dict)) bad('SETITEM(S) on something that is not a dict', this.r.pos);
    if ((end - start) % 2) bad('SETITEMS with an odd number of items', this.r.pos);
    target.add(from, start, end);
    this.grow(target, from, start, end);
  }

  private putMemo(i: number, v: unknown, at: number): void {
    if (!Number.isInteger(i) || i < 0) bad('bad memo index', at);
    const c = Math.floor(i / MEMO_CHUNK);
    let chunk = this.memo[c];
    // A chunk grows as it fills: made whole, a pickle of scattered indices (LONG_BINPUT 0, 4096,
    // 8192, …: 5 bytes each) would cost a chunk per entry.
    if (chunk === undefined) this.memo[c] = chunk = [];
    const k = i - c * MEMO_CHUNK;
    if (chunk[k] === undefined) {
      if (this.memoCount >= this.maxMemo) bad(`more than ${this.maxMemo} memo entries (option maxMemo)`, at);
      this.memoCount++;
    }
    chunk[k] = v;
  }

  private getMemo(i: number, at: number): unknown {
    const c = Math.floor(i / MEMO_CHUNK);
    const v = this.memo[c]?.[i - c * MEMO_CHUNK];
    if (v === undefined) bad(`memo entry ${i} does not exist`, at);
    return v;
  }

  // -- one method per opcode family (the eight most common opcodes are in run(), and only there) --

  /** Protocol, framing, the end and plain stack moves (MARK is in run()). */
  private controlOps(op: number, at: number): Step {
    const r = this.r;
    switch (op) {
      case OP.PROTO: {
        const p = r.u8();
        if (p > 5) bad(`unsupported protocol ${p}`, at);
        return undefined;
      }
      case OP.FRAME:
        r.u64();
        return undefined; // framing is transparent here
      case OP.STOP:
        return { value: finish(this.pop(), (c) => this.depthOf.has(c), this.dialect.dictsAsMaps ?? false) }; // leftovers on the stack are harmless
      case OP.POP:
        this.pop();
        return undefined;
      case OP.POP_MARK:
        this.popMark();
        return undefined;
      default:
        this.push(this.top());
        return undefined; // DUP
    }
  }

  /** True, False (None is in run()). */
  private constantOps(op: number): Step {
    this.push(op === OP.NEWTRUE);
    return undefined;
  }

  /** Integers (binary, text, two's complement) and floats. */
  private numberOps(op: number, at: number): Step {
    const r = this.r;
    switch (op) {
      case OP.BININT2:
        this.push(r.u16());
        break;
      case OP.BININT:
        this.push(r.i32());
        break;
      case OP.INT: {
        // text; 00/01 are False/True (a sign and an L besides the digits Python converts at most)
        const s = r.line(MAX_INT_DIGITS + 2);
        if (s === '00') this.push(false);
        else if (s === '01') this.push(true);
        else if (/^[+-]?\d+$/.test(s)) this.push(pyInt(integerOfText(s)));
        else bad(`INT argument ${JSON.stringify(s)} is not an integer`, at);
        break;
      }
      case OP.LONG: {
        // text
        const s = r.line(MAX_INT_DIGITS + 2).replace(/L$/, '');
        if (!/^[+-]?\d+$/.test(s)) bad('LONG argument is not an integer', at);
        this.account(s.length);
        this.push(pyInt(integerOfText(s)));
        break;
      }
      case OP.LONG1:
        this.push(pyInt(decodeLong(r.take(r.u8()))));
        break;
      case OP.LONG4: {
        const n = r.i32();
        if (n < 0) bad('negative LONG4 length', at);
        this.account(n);
        this.push(pyInt(decodeLong(r.take(n))));
        break;
      }
      case OP.FLOAT: {
        // text
        const s = r.line();
        const x = Number(s);
        if (Number.isNaN(x) && !/nan/i.test(s)) bad('FLOAT argument is not a number', at);
        this.push(x);
        break;
      }
      default:
        this.push(r.f64be()); // BINFLOAT
    }
    return undefined;
  }

  /** Python 2 str, unicode text and bytes. */
  private textOps(op: number, at: number): Step {
    const r = this.r;
    switch (op) {
      case OP.STRING:
        this.push(unescapePy2(r.line(), at));
        break; // Python 2 str
      case OP.BINSTRING: {
        const n = r.i32();
        if (n < 0) bad('negative length', at);
        this.push(latin1Text(r.take(n), this.account));
        break;
      }
      case OP.SHORT_BINSTRING:
        this.push(latin1Text(r.take(r.u8()), this.account));
        break;
      case OP.UNICODE:
        this.push(rawUnicodeEscape(r.line()));
        break;
      case OP.BINUNICODE:
        this.push(this.text(r.take(r.u32())));
        break;
      case OP.BINUNICODE8:
        this.push(this.text(r.take(r.u64())));
        break;
      case OP.BINBYTES:
        this.push(this.bytesValue(r.take(r.u32())));
        break;
      case OP.SHORT_BINBYTES:
        this.push(this.bytesValue(r.take(r.u8())));
        break;
      default:
        this.push(this.bytesValue(r.take(r.u64()))); // BINBYTES8, BYTEARRAY8
    }
    return undefined;
  }

  /** Lists, tuples, dicts and sets: made, and filled. */
  private containerOps(op: number, at: number): Step {
    switch (op) {
      case OP.EMPTY_TUPLE:
        this.push(this.container(new Tuple([]), NOTHING));
        break;
      case OP.EMPTY_DICT:
        this.push(this.container(new Dict(), NOTHING));
        break;
      case OP.EMPTY_SET:
        this.push(this.container(new Set(), NOTHING));
        break;
      case OP.LIST: {
        const items = this.popMark();
        const list = new List();
        list.addOwned(items);
        this.push(this.container(list, items));
        break;
      }
      case OP.TUPLE: {
        const items = this.popMark();
        this.push(this.container(new Tuple(items), items));
        break;
      }
      case OP.TUPLE1: {
        const items = [this.pop()];
        this.push(this.container(new Tuple(items), items));
        break;
      }
      case OP.TUPLE2: {
        const b = this.pop();
        const items = [this.pop(), b];
        this.push(this.container(new Tuple(items), items));
        break;
      }
      case OP.TUPLE3: {
        const c = this.pop();
        const b = this.pop();
        const items = [this.pop(), b, c];
        this.push(this.container(new Tuple(items), items));
        break;
      }
      case OP.DICT: {
        const items = this.popMark();
        const d = this.container(new Dict(), NOTHING);
        this.setItems(d, items, 0, items.length);
        this.push(d);
        break;
      }
      case OP.APPEND: {
        const { stack, sp } = this;
        const list = sp - 2 >= this.floor ? stack[sp - 2] : bad('stack underflow', at);
        if (!(list instanceof List)) bad('APPEND to something that is not a list', at);
        list.add(stack, sp - 1, sp);
        this.grow(list, stack, sp - 1, sp);
        this.sp--;
        break;
      }
      case OP.APPENDS: {
        // The items go from the stack into the list as one batch.
        const start = this.closeMark();
        const stack = this.stack;
        if (start <= this.floor) bad('stack underflow', at);
        const list = stack[start - 1];
        if (!(list instanceof List)) bad('APPENDS to something that is not a list', at);
        list.add(stack, start, this.sp);
        this.grow(list, stack, start, this.sp);
        this.sp = start;
        break;
      }
      case OP.SETITEM: {
        const { stack, sp } = this;
        if (sp - 3 < this.floor) bad('stack underflow', at);
        this.setItems(stack[sp - 3], stack, sp - 2, sp);
        this.sp -= 2;
        break;
      }
      case OP.SETITEMS: {
        // The keys and values go from the stack into the dict as one batch.
        const start = this.closeMark();
        if (start <= this.floor) bad('stack underflow', at);
        this.setItems(this.stack[start - 1], this.stack, start, this.sp);
        this.sp = start;
        break;
      }
      case OP.ADDITEMS: {
        const items = this.popMark();
        const set = settle(this.top());
        if (!(set instanceof Set)) bad('ADDITEMS to something that is not a set', at);
        for (const v of items) set.add(hashable(v));
        this.grow(set, items);
        break;
      }
      default: {
        const items = this.popMark();
        this.push(this.container(pyFrozenset(new Set(items.map(hashable))), items));
      } // FROZENSET
    }
    return undefined;
  }

  /** Globals (from the allowlist only), calls of them, and BUILD of numpy's arrays and dtypes. */
  private objectOps(op: number, at: number): Step {
    const r = this.r;
    switch (op) {
      case OP.GLOBAL: {
        const module = r.line();
        const name = r.line();
        this.push(this.dialect.resolveGlobal(module, name, at));
        break;
      }
      case OP.STACK_GLOBAL: {
        const name = this.pop();
        const module = this.pop();
        if (typeof module !== 'string' || typeof name !== 'string') bad('STACK_GLOBAL needs two strings', at);
        this.push(this.dialect.resolveGlobal(module, name, at));
        break;
      }
      case OP.REDUCE: {
        const args = this.pop();
        const fn = this.pop();
        if (!(args instanceof Tuple)) bad('REDUCE arguments must be a tuple', at);
        this.push(this.call(fn, args.items));
        break;
      }
      case OP.NEWOBJ: {
        // cls.__new__(cls, *args), only for allowlisted classes
        const args = this.pop();
        const cls = this.pop();
        if (!(args instanceof Tuple)) bad('NEWOBJ arguments must be a tuple', at);
        this.push(this.call(cls, args.items));
        break;
      }
      case OP.NEWOBJ_EX: {
        const kwargs = this.pop();
        const args = this.pop();
        const cls = this.pop();
        if (!(args instanceof Tuple) || !(kwargs instanceof Dict)) bad('NEWOBJ_EX arguments are malformed', at);
        if (!kwargs.isEmpty()) bad('NEWOBJ_EX with keyword arguments is not supported', at);
        this.push(this.call(cls, args.items));
        break;
      }
      case OP.INST: {
        const module = r.line();
        const name = r.line();
        const g = this.dialect.resolveGlobal(module, name, at);
        this.push(this.call(g, this.popMark()));
        break;
      }
      case OP.OBJ: {
        const items = this.popMark();
        const cls = items.shift();
        this.push(this.call(cls, items));
        break;
      }
      case OP.PERSID:
      case OP.BINPERSID: {
        const load = this.dialect.persistentLoad;
        if (!load) bad('persistent ids are not supported', at);
        const pid = op === OP.PERSID ? r.line() : settle(this.pop());
        this.push(load.call(this.dialect, pid, at));
        break;
      }
      default:
        this.build(at); // BUILD
    }
    return undefined;
  }

  private build(at: number): void {
    const state = this.pop();
    const target = this.top();
    if (target instanceof Pending) {
      if (target.resolved !== undefined) bad('BUILD twice on one object', at);
      target.build(settle(state));
      const built: unknown = (target as Pending).resolved;
      if (built instanceof NdArray) this.account(built.data.length * 8);
    } else if (target instanceof Dict && state instanceof Dict && this.dialect.dictStateIsAttributes) {
      // The dict's attributes (a state_dict's `_metadata`: module versions), not its items.
    } else if (target instanceof Dict && state instanceof Dict) {
      const pairs = state.array(); // OrderedDict-style state
      this.setItems(target, pairs, 0, pairs.length);
    } else if (!(state === null || (state instanceof Dict && state.isEmpty()))) {
      bad('BUILD is only supported for numpy arrays and dtypes', at);
    }
  }

  /** The memo: PUT and GET by index. */
  private memoOps(op: number, at: number): Step {
    const r = this.r;
    switch (op) {
      case OP.PUT:
        this.putMemo(Number(r.line()), this.top(), at);
        break;
      case OP.LONG_BINPUT:
        this.putMemo(r.u32(), this.top(), at);
        break;
      case OP.GET:
        this.push(this.getMemo(Number(r.line()), at));
        break;
      default:
        this.push(this.getMemo(r.u32(), at)); // LONG_BINGET
    }
    return undefined;
  }

  /** Opcodes numpy never writes that would reach outside the pickle: refused by name. */
  private unsupportedOps(op: number, at: number): never {
    if (op === OP.NEXT_BUFFER || op === OP.READONLY_BUFFER) bad('out-of-band buffers are not supported', at);
    return bad('the extension registry (EXT opcodes) is not supported', at);
  }
}

/**
 * Fill a dict's result (made by `finish`) from its pairs, each key and value through `shell`: an
 * object's own properties (a key '__proto__' must not change the prototype), or a Map's entries.
 */
function fillDict(d: Dict, pairs: readonly unknown[], shell: (v: unknown) => unknown): void {
  const out = d.result;
  if (out instanceof Map) {
    for (let i = 0; i < pairs.length; i += 2) out.set(shell(hashable(pairs[i])), shell(pairs[i + 1]));
  } else {
    const o = out as Record<string, unknown>;
    for (let i = 0; i < pairs.length; i += 2) putOwn(o, settle(pairs[i]) as string, shell(pairs[i + 1]));
  }
}

/** Dict keys and set members: JS compares objects by identity, so equal tuples stay distinct keys. */
function hashable(k: unknown): unknown {
  return settle(k);
}

/** Text of at most this many UTF-16 code units is made by `fromCodes`. */
const FIXED_ARITY = 12;

/**
 * The text of `codes[at, at + k)` (k ≤ FIXED_ARITY): String.fromCharCode with as many arguments,
 * written out, costs about half of `apply` with an array, which copies its array into arguments.
 */
function fromCodes(codes: Uint8Array | Uint16Array, at: number, k: number): string {
  const c = codes;
  const a = at;
  switch (k) {
    case 0:
      return '';
    case 1:
      return String.fromCharCode(c[a]!);
    case 2:
      return String.fromCharCode(c[a]!, c[a + 1]!);
    case 3:
      return String.fromCharCode(c[a]!, c[a + 1]!, c[a + 2]!);
    case 4:
      return String.fromCharCode(c[a]!, c[a + 1]!, c[a + 2]!, c[a + 3]!);
    case 5:
      return String.fromCharCode(c[a]!, c[a + 1]!, c[a + 2]!, c[a + 3]!, c[a + 4]!);
    case 6:
      return String.fromCharCode(c[a]!, c[a + 1]!, c[a + 2]!, c[a + 3]!, c[a + 4]!, c[a + 5]!);
    case 7:
      return String.fromCharCode(c[a]!, c[a + 1]!, c[a + 2]!, c[a + 3]!, c[a + 4]!, c[a + 5]!, c[a + 6]!);
    case 8:
      return String.fromCharCode(c[a]!, c[a + 1]!, c[a + 2]!, c[a + 3]!, c[a + 4]!, c[a + 5]!, c[a + 6]!, c[a + 7]!);
    case 9:
      return String.fromCharCode(c[a]!, c[a + 1]!, c[a + 2]!, c[a + 3]!, c[a + 4]!, c[a + 5]!, c[a + 6]!, c[a + 7]!, c[a + 8]!);
    case 10:
      return String.fromCharCode(c[a]!, c[a + 1]!, c[a + 2]!, c[a + 3]!, c[a + 4]!, c[a + 5]!, c[a + 6]!, c[a + 7]!, c[a + 8]!, c[a + 9]!);
    case 11:
      return String.fromCharCode(c[a]!, c[a + 1]!, c[a + 2]!, c[a + 3]!, c[a + 4]!, c[a + 5]!, c[a + 6]!, c[a + 7]!, c[a + 8]!, c[a + 9]!, c[a + 10]!);
    default:
      return String.fromCharCode(
        c[a]!,
        c[a + 1]!,
        c[a + 2]!,
        c[a + 3]!,
        c[a + 4]!,
        c[a + 5]!,
        c[a + 6]!,
        c[a + 7]!,
        c[a + 8]!,
        c[a + 9]!,
        c[a + 10]!,
        c[a + 11]!,
      );
  }
}

function latin1Text(b: Uint8Array, account: (n: number) => void): string {
  account(b.length);
  let s = '';
  for (const c of b) s += String.fromCharCode(c);
  return s;
}

/**
 * Replace VM-internal objects (tuples, pending constructions) with their JS values, keeping sharing
 * and cycles (`holdsObjects` tells which containers hold any object). Lists (and tuples' item arrays, and object arrays' data) are finished in place, which
 * allocates nothing per list; dicts, sets and plain objects are rebuilt. Iterative: a pickle can nest
 * values without nesting opcodes (memoised lists appended into each other), so no recursion follows
 * the data's depth. Each rebuilt container's result is made empty first and filled from a work list.
 */
function finish(root: unknown, holdsObjects: (container: object) => boolean, dictsAsMaps: boolean): unknown {
  const done = new Map<object, unknown>();
  /** Arrays whose elements are still to be finished, in place. */
  const lists: unknown[][] = [];
  /** Rebuilt containers still to be filled. */
  const fills: (() => void)[] = [];
  const inPlace = (key: object, items: unknown[]): unknown[] => {
    done.set(key, items);
    if (key !== items) done.set(items, items);
    lists.push(items);
    return items;
  };
  /** Dicts whose results are still to be filled. */
  const dicts: Dict[] = [];
  /** The result for `v`: a primitive as is, a container as its (possibly still unfilled) result. */
  const shell = (v: unknown): unknown => {
    if (typeof v !== 'object' || v === null) return v;
    // Lists and dicts keep their result themselves (no lookup); one of primitives only (the VM
    // knows which) is final at once.
    if (v instanceof List) {
      if (v.result !== undefined) return v.result;
      const items = v.array();
      v.result = items;
      if (holdsObjects(v)) inPlace(items, items);
      return items;
    }
    if (v instanceof Dict) {
      if (v.result !== undefined) return v.result;
      const pairs = v.array();
      let textKeys = !dictsAsMaps;
      for (let i = 0; i < pairs.length && textKeys; i += 2) textKeys = typeof settle(pairs[i]) === 'string';
      v.result = textKeys ? {} : new Map();
      if (holdsObjects(v)) dicts.push(v);
      else fillDict(v, pairs, (x) => x);
      return v.result;
    }
    if (v instanceof Tuple && !holdsObjects(v)) return pyTuple(v.items);
    const known = done.get(v);
    if (known !== undefined) return known;
    if (v instanceof Tuple) return inPlace(v, pyTuple(v.items));
    // A plain array (a constructor's result) may hold anything.
    if (Array.isArray(v)) return inPlace(v, v);
    if (v instanceof Pending) {
      if (v.resolved === undefined) bad('an array or dtype was never completed (no BUILD)');
      const out = shell(v.resolved);
      done.set(v, out);
      return out;
    }
    if (v instanceof Global) return v.value !== undefined ? v.value : bad(`a bare reference to ${v.qualified} is not data`);
    if (v instanceof Set) {
      const out = new Set();
      if (isPyFrozenset(v)) pyFrozenset(out);
      done.set(v, out);
      fills.push(() => {
        for (const x of v) out.add(shell(x));
      });
      return out;
    }
    if (v instanceof NdArray && Array.isArray(v.data)) {
      done.set(v, v);
      inPlace(v.data, v.data);
      return v;
    }
    if (v instanceof PySlice) {
      const out = new PySlice(v.kind, shell(v.start), shell(v.stop), shell(v.step));
      done.set(v, out);
      return out;
    }
    if (v instanceof PyMaskedArray) {
      const out = new PyMaskedArray(shell(v.data) as NdArray, shell(v.mask) as NdArray, shell(v.fillValue));
      done.set(v, out);
      return out;
    }
    if (!(v instanceof NdArray) && !(v instanceof Uint8Array) && !(v instanceof DType) && Object.getPrototypeOf(v) === Object.prototype) {
      const out: Record<string, unknown> = {};
      done.set(v, out);
      fills.push(() => {
        for (const [k, x] of Object.entries(v)) putOwn(out, k, shell(x));
      });
      return out;
    }
    return v;
  };
  const result = shell(root);
  for (;;) {
    const list = lists.pop();
    if (list) {
      for (let i = 0; i < list.length; i++) {
        const x = list[i];
        if (typeof x === 'object' && x !== null) list[i] = shell(x);
      }
    } else if (dicts.length) {
      const d = dicts.pop()!;
      fillDict(d, d.array(), shell);
    } else if (fills.length) {
      fills.pop()!();
    } else {
      return result;
    }
  }
}

/**
 * The pickle machine: protocols 0–5, opcode by opcode (named in opcodes.ts), with memo size, MARK
 * depth, container nesting and allocated bytes bounded; globals only from the allowlist.
 */
import { DType } from '../format/dtype.js';
import { NdArray } from '../array/ndarray.js';
import { PyMaskedArray, PySlice } from './python-values.js';
import { putOwn } from '../array/safe-object.js';
import { OP } from './opcodes.js';
import type { UnpickleLimits } from '../npy.js';
import { Pending, Tuple, bad, settle } from './vm-values.js';
import { Global, resolveGlobal, type Constructor } from './allowlist.js';

/** Limits of the unpickler (container depth, items, memo size). */
export type UnpickleOptions = UnpickleLimits;

const MARK = Symbol('mark');
const utf8 = new TextDecoder('utf-8', { fatal: true });

class Reader {
  pos = 0;
  private readonly view: DataView;
  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  need(n: number): void {
    if (this.pos + n > this.bytes.length) bad(`truncated: ${n} more bytes needed at byte ${this.pos}`, this.pos);
  }
  u8(): number { this.need(1); return this.bytes[this.pos++]!; }
  u16(): number { this.need(2); const v = this.view.getUint16(this.pos, true); this.pos += 2; return v; }
  u32(): number { this.need(4); const v = this.view.getUint32(this.pos, true); this.pos += 4; return v; }
  i32(): number { this.need(4); const v = this.view.getInt32(this.pos, true); this.pos += 4; return v; }
  u64(): number {
    this.need(8);
    const v = this.view.getBigUint64(this.pos, true);
    this.pos += 8;
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) bad(`length ${v} is too large`, this.pos - 8);
    return Number(v);
  }
  f64be(): number { this.need(8); const v = this.view.getFloat64(this.pos, false); this.pos += 8; return v; }
  take(n: number): Uint8Array { this.need(n); const b = this.bytes.subarray(this.pos, this.pos + n); this.pos += n; return b; }
  line(): string {
    const end = this.bytes.indexOf(0x0a, this.pos);
    if (end < 0) bad('truncated: a text argument has no end of line', this.pos);
    let s = '';
    for (let i = this.pos; i < end; i++) s += String.fromCharCode(this.bytes[i]!);
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
export function unpickle(input: Uint8Array, options: UnpickleOptions = {}): unknown {
  // A plain view: Node's Buffer#slice would return views where copies are meant.
  input = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  const maxDepth = options.maxDepth ?? 1000;
  const maxMemo = options.maxMemo ?? 1_000_000;
  const maxMarks = options.maxMarks ?? 10_000;
  const maxBytes = options.maxBytes ?? 2 ** 31;
  const r = new Reader(input);
  let stack: unknown[] = [];
  const marks: unknown[][] = [];
  const memo = new Map<number, unknown>();
  const depthOf = new WeakMap<object, number>();
  let allocated = 0;

  const account = (n: number): void => {
    allocated += n;
    if (allocated > maxBytes) bad(`more than ${maxBytes} bytes allocated (option maxBytes)`, r.pos);
  };
  const depth = (v: unknown): number => (typeof v === 'object' && v !== null ? depthOf.get(v) ?? 1 : 0);
  const container = <T extends object>(c: T, children: Iterable<unknown>): T => {
    let d = 0;
    for (const x of children) d = Math.max(d, depth(x));
    if (d + 1 > maxDepth) bad(`containers nested deeper than ${maxDepth} (option maxDepth)`, r.pos);
    depthOf.set(c, d + 1);
    account(16);
    return c;
  };
  const grow = (c: object, added: unknown[]): void => {
    let d = depthOf.get(c) ?? 1;
    for (const x of added) d = Math.max(d, depth(x) + 1);
    if (d > maxDepth) bad(`containers nested deeper than ${maxDepth} (option maxDepth)`, r.pos);
    depthOf.set(c, d);
    account(16 * added.length);
  };
  const pop = (): unknown => {
    if (stack.length === 0) bad('stack underflow', r.pos);
    return stack.pop();
  };
  const top = (): unknown => (stack.length ? stack[stack.length - 1] : bad('stack underflow', r.pos));
  const popMark = (): unknown[] => {
    const items = stack;
    const prev = marks.pop();
    if (!prev) bad('no MARK to pop to', r.pos);
    stack = prev;
    if (items.includes(MARK)) bad('misplaced MARK', r.pos);
    return items;
  };
  const push = (v: unknown): void => {
    if (v === MARK) bad('misplaced MARK', r.pos);
    stack.push(v);
  };
  const text = (b: Uint8Array): string => {
    account(b.length);
    try {
      return utf8.decode(b);
    } catch {
      return bad('text is not valid UTF-8', r.pos);
    }
  };
  const bytesValue = (b: Uint8Array): Uint8Array => {
    account(b.length);
    return b.slice();
  };
  const call = (fn: unknown, args: unknown[]): unknown => {
    if (!(fn instanceof Global) || typeof fn.target !== 'function') bad(`${fn instanceof Global ? fn.qualified : typeof fn} is not callable`, r.pos);
    const value = (fn.target as Constructor)(args.map(settle));
    if (typeof value === 'object' && value !== null) container(value, []);
    return value;
  };
  const setItems = (target: unknown, kvs: unknown[]): void => {
    const t = settle(target);
    if (!(t instanceof Map)) bad('SETITEM(S) on something that is not a dict', r.pos);
    if (kvs.length % 2) bad('SETITEMS with an odd number of items', r.pos);
    for (let i = 0; i < kvs.length; i += 2) t.set(hashable(kvs[i]), kvs[i + 1]);
    grow(t, kvs);
  };
  // Dict keys and set members: JS compares objects by identity, so equal tuples stay distinct keys.
  const hashable = (k: unknown): unknown => settle(k);

  if (r.bytes.length === 0) bad('empty pickle');
  for (;;) {
    const at = r.pos;
    const op = r.u8();
    switch (op) {
      case OP.PROTO: { // PROTO
        const p = r.u8();
        if (p > 5) bad(`unsupported protocol ${p}`, at);
        break;
      }
      case OP.FRAME: r.u64(); break; // FRAME: framing is transparent here
      case OP.STOP: { // STOP
        const v = pop();
        if (stack.length || marks.length) { /* numpy writes clean pickles; leftovers are harmless */ }
        return finish(v);
      }
      case OP.MARK: // MARK
        if (marks.length >= maxMarks) bad(`more than ${maxMarks} open MARKs (option maxMarks)`, at);
        marks.push(stack);
        stack = [];
        break;
      case OP.POP: pop(); break; // POP
      case OP.POP_MARK: popMark(); break; // POP_MARK
      case OP.DUP: push(top()); break; // DUP
      case OP.NONE: push(null); break; // NONE
      case OP.NEWTRUE: push(true); break; // NEWTRUE
      case OP.NEWFALSE: push(false); break; // NEWFALSE
      case OP.BININT1: push(r.u8()); break; // BININT1
      case OP.BININT2: push(r.u16()); break; // BININT2
      case OP.BININT: push(r.i32()); break; // BININT
      case OP.INT: { // INT (text; 00/01 are False/True)
        const s = r.line();
        if (s === '00') push(false);
        else if (s === '01') push(true);
        else if (/^[+-]?\d+$/.test(s)) push(pyInt(BigInt(s)));
        else bad(`INT argument ${JSON.stringify(s)} is not an integer`, at);
        break;
      }
      case OP.LONG: { // LONG (text)
        const s = r.line().replace(/L$/, '');
        if (!/^[+-]?\d+$/.test(s)) bad('LONG argument is not an integer', at);
        account(s.length);
        push(pyInt(BigInt(s)));
        break;
      }
      case OP.LONG1: push(pyInt(decodeLong(r.take(r.u8())))); break; // LONG1
      case OP.LONG4: { // LONG4
        const n = r.i32();
        if (n < 0) bad('negative LONG4 length', at);
        account(n);
        push(pyInt(decodeLong(r.take(n))));
        break;
      }
      case OP.FLOAT: { // FLOAT (text)
        const s = r.line();
        const x = Number(s);
        if (Number.isNaN(x) && !/nan/i.test(s)) bad('FLOAT argument is not a number', at);
        push(x);
        break;
      }
      case OP.BINFLOAT: push(r.f64be()); break; // BINFLOAT
      case OP.STRING: push(unescapePy2(r.line(), at)); break; // STRING (Python 2 str)
      case OP.BINSTRING: { const n = r.i32(); if (n < 0) bad('negative length', at); push(latin1Text(r.take(n), account)); break; } // BINSTRING
      case OP.SHORT_BINSTRING: push(latin1Text(r.take(r.u8()), account)); break; // SHORT_BINSTRING
      case OP.UNICODE: push(rawUnicodeEscape(r.line())); break; // UNICODE
      case OP.BINUNICODE: push(text(r.take(r.u32()))); break; // BINUNICODE
      case OP.SHORT_BINUNICODE: push(text(r.take(r.u8()))); break; // SHORT_BINUNICODE
      case OP.BINUNICODE8: push(text(r.take(r.u64()))); break; // BINUNICODE8
      case OP.BINBYTES: push(bytesValue(r.take(r.u32()))); break; // BINBYTES
      case OP.SHORT_BINBYTES: push(bytesValue(r.take(r.u8()))); break; // SHORT_BINBYTES
      case OP.BINBYTES8: push(bytesValue(r.take(r.u64()))); break; // BINBYTES8
      case OP.BYTEARRAY8: push(bytesValue(r.take(r.u64()))); break; // BYTEARRAY8
      case OP.NEXT_BUFFER: case OP.READONLY_BUFFER: bad('out-of-band buffers are not supported', at); // NEXT_BUFFER, READONLY_BUFFER
      // eslint-disable-next-line no-fallthrough
      case OP.EMPTY_LIST: push(container([], [])); break; // EMPTY_LIST
      case OP.EMPTY_TUPLE: push(container(new Tuple([]), [])); break; // EMPTY_TUPLE
      case OP.EMPTY_DICT: push(container(new Map(), [])); break; // EMPTY_DICT
      case OP.EMPTY_SET: push(container(new Set(), [])); break; // EMPTY_SET
      case OP.LIST: { const items = popMark(); push(container(items, items)); break; } // LIST
      case OP.TUPLE: { const items = popMark(); push(container(new Tuple(items), items)); break; } // TUPLE
      case OP.TUPLE1: { const a = pop(); push(container(new Tuple([a]), [a])); break; } // TUPLE1
      case OP.TUPLE2: { const b = pop(); const a = pop(); push(container(new Tuple([a, b]), [a, b])); break; } // TUPLE2
      case OP.TUPLE3: { const c = pop(); const b = pop(); const a = pop(); push(container(new Tuple([a, b, c]), [a, b, c])); break; } // TUPLE3
      case OP.DICT: { // DICT
        const items = popMark();
        const m = container(new Map(), []);
        setItems(m, items);
        push(m);
        break;
      }
      case OP.APPEND: { const v = pop(); const list = settle(top()); if (!Array.isArray(list)) bad('APPEND to something that is not a list', at); list.push(v); grow(list, [v]); break; } // APPEND
      case OP.APPENDS: { // APPENDS
        const items = popMark();
        const list = settle(top());
        if (!Array.isArray(list)) bad('APPENDS to something that is not a list', at);
        for (const v of items) list.push(v);
        grow(list, items);
        break;
      }
      case OP.SETITEM: { const v = pop(); const k = pop(); setItems(top(), [k, v]); break; } // SETITEM
      case OP.SETITEMS: { const items = popMark(); setItems(top(), items); break; } // SETITEMS
      case OP.ADDITEMS: { // ADDITEMS
        const items = popMark();
        const set = settle(top());
        if (!(set instanceof Set)) bad('ADDITEMS to something that is not a set', at);
        for (const v of items) set.add(hashable(v));
        grow(set, items);
        break;
      }
      case OP.FROZENSET: { const items = popMark(); push(container(new Set(items.map(hashable)), items)); break; } // FROZENSET
      case OP.GLOBAL: { const module = r.line(); const name = r.line(); push(resolveGlobal(module, name, at)); break; } // GLOBAL
      case OP.STACK_GLOBAL: { // STACK_GLOBAL
        const name = pop();
        const module = pop();
        if (typeof module !== 'string' || typeof name !== 'string') bad('STACK_GLOBAL needs two strings', at);
        push(resolveGlobal(module, name, at));
        break;
      }
      case OP.REDUCE: { // REDUCE
        const args = pop();
        const fn = pop();
        if (!(args instanceof Tuple)) bad('REDUCE arguments must be a tuple', at);
        push(call(fn, args.items));
        break;
      }
      case OP.NEWOBJ: { // NEWOBJ: cls.__new__(cls, *args) — only for allowlisted classes
        const args = pop();
        const cls = pop();
        if (!(args instanceof Tuple)) bad('NEWOBJ arguments must be a tuple', at);
        push(call(cls, args.items));
        break;
      }
      case OP.NEWOBJ_EX: { // NEWOBJ_EX
        const kwargs = pop();
        const args = pop();
        const cls = pop();
        if (!(args instanceof Tuple) || !(kwargs instanceof Map)) bad('NEWOBJ_EX arguments are malformed', at);
        if (kwargs.size) bad('NEWOBJ_EX with keyword arguments is not supported', at);
        push(call(cls, args.items));
        break;
      }
      case OP.INST: { const module = r.line(); const name = r.line(); const g = resolveGlobal(module, name, at); push(call(g, popMark())); break; } // INST
      case OP.OBJ: { const items = popMark(); const cls = items.shift(); push(call(cls, items)); break; } // OBJ
      case OP.BUILD: { // BUILD
        const state = pop();
        const target = top();
        if (target instanceof Pending) {
          if (target.resolved !== undefined) bad('BUILD twice on one object', at);
          target.build(settle(state));
          const built: unknown = (target as Pending).resolved;
          if (built instanceof NdArray) account(built.data.length * 8);
        } else if (target instanceof Map && state instanceof Map) {
          setItems(target, [...state].flat()); // OrderedDict-style state
        } else if (!(state === null || (state instanceof Map && state.size === 0))) {
          bad('BUILD is only supported for numpy arrays and dtypes', at);
        }
        break;
      }
      case OP.PUT: { const i = Number(r.line()); putMemo(i, top()); break; } // PUT
      case OP.BINPUT: putMemo(r.u8(), top()); break; // BINPUT
      case OP.LONG_BINPUT: putMemo(r.u32(), top()); break; // LONG_BINPUT
      case OP.MEMOIZE: putMemo(memo.size, top()); break; // MEMOIZE
      case OP.GET: push(getMemo(Number(r.line()))); break; // GET
      case OP.BINGET: push(getMemo(r.u8())); break; // BINGET
      case OP.LONG_BINGET: push(getMemo(r.u32())); break; // LONG_BINGET
      case OP.PERSID: case OP.BINPERSID: bad('persistent ids are not supported', at); // PERSID, BINPERSID
      // eslint-disable-next-line no-fallthrough
      case OP.EXT1: case OP.EXT2: case OP.EXT4: bad('the extension registry (EXT opcodes) is not supported', at);
      // eslint-disable-next-line no-fallthrough
      default: bad(`unknown opcode 0x${op.toString(16).padStart(2, '0')}`, at);
    }

    function putMemo(i: number, v: unknown): void {
      if (!Number.isInteger(i) || i < 0) bad('bad memo index', at);
      if (!memo.has(i) && memo.size >= maxMemo) bad(`more than ${maxMemo} memo entries (option maxMemo)`, at);
      memo.set(i, v);
    }
    function getMemo(i: number): unknown {
      if (!memo.has(i)) bad(`memo entry ${i} does not exist`, at);
      return memo.get(i);
    }
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
 * and cycles. Iterative: a pickle can nest values without nesting opcodes (memoised lists appended
 * into each other), so no recursion follows the data's depth. Each container's result is made
 * empty first and filled from a work list.
 */
function finish(root: unknown): unknown {
  const done = new Map<object, unknown>();
  const work: (() => void)[] = [];
  /** The result for `v`: a primitive as is, a container as its (possibly still empty) result. */
  const shell = (v: unknown): unknown => {
    if (typeof v !== 'object' || v === null) return v;
    if (done.has(v)) return done.get(v);
    if (v instanceof Pending) {
      if (v.resolved === undefined) bad('an array or dtype was never completed (no BUILD)');
      const out = shell(v.resolved);
      done.set(v, out);
      return out;
    }
    if (v instanceof Global) bad(`a bare reference to ${v.qualified} is not data`);
    if (v instanceof Tuple || Array.isArray(v)) {
      const src = v instanceof Tuple ? v.items : v;
      const out = new Array<unknown>(src.length);
      done.set(v, out);
      work.push(() => { for (let i = 0; i < src.length; i++) out[i] = shell(src[i]); });
      return out;
    }
    if (v instanceof Map) {
      if ([...v.keys()].every((k) => typeof k === 'string')) {
        // Own properties whatever the key: a dict key '__proto__' must not change the prototype.
        const out: Record<string, unknown> = {};
        done.set(v, out);
        work.push(() => { for (const [k, x] of v) putOwn(out, k as string, shell(x)); });
        return out;
      }
      const out = new Map();
      done.set(v, out);
      work.push(() => { for (const [k, x] of v) out.set(shell(k), shell(x)); });
      return out;
    }
    if (v instanceof Set) {
      const out = new Set();
      done.set(v, out);
      work.push(() => { for (const x of v) out.add(shell(x)); });
      return out;
    }
    if (v instanceof NdArray && Array.isArray(v.data)) {
      const src = v.data;
      const data = new Array<unknown>(src.length);
      const out = new NdArray(v.dtype, v.shape, data, v.order);
      done.set(v, out);
      work.push(() => { for (let i = 0; i < src.length; i++) data[i] = shell(src[i]); });
      return out;
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
      work.push(() => { for (const [k, x] of Object.entries(v)) putOwn(out, k, shell(x)); });
      return out;
    }
    return v;
  };
  const result = shell(root);
  while (work.length) work.pop()!();
  return result;
}

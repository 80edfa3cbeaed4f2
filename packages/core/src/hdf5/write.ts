/**
 * An HDF5 writer of the smallest subset h5py (and so Keras's `model.weights.h5`) reads: superblock
 * version 0, old-style groups (a symbol table: one v1 B-tree leaf node over symbol nodes, names in a
 * local heap), version 1 object headers, contiguous little-endian datasets of integers and IEEE floats,
 * and attributes holding a fixed-length UTF-8 string or a number. The file is laid out in one pass into
 * one buffer sized by what is given.
 */
import { NpyError } from '../errors.js';

/** A dataset to write: its little-endian element type, shape, and C-order bytes. */
export interface Hdf5DatasetInput {
  /** `'<f2'`, `'<f4'`, `'<f8'`, `'|i1'`/`'|u1'`, `'<i2'`…`'<u8'`. */
  readonly descr: string;
  readonly shape: readonly number[];
  readonly bytes: Uint8Array;
  readonly attrs?: Readonly<Record<string, Hdf5AttributeInput>>;
}

/** An attribute to write: a string (fixed-length UTF-8) or a number (float64). */
export type Hdf5AttributeInput = string | number;

/** A group to write: its members by name (groups or datasets) and its attributes. */
export interface Hdf5GroupInput {
  readonly members: Readonly<Record<string, Hdf5GroupInput | Hdf5DatasetInput>>;
  readonly attrs?: Readonly<Record<string, Hdf5AttributeInput>>;
}

const UNDEF = 0xffff_ffff_ffff_ffffn;
/** Symbols per symbol node (2 × the group leaf node K written in the superblock). */
const LEAF_K = 4;
const SNOD_ENTRIES = 2 * LEAF_K;
const ENTRY_SIZE = 40;
const SNOD_SIZE = 8 + SNOD_ENTRIES * ENTRY_SIZE;
const SUPERBLOCK_SIZE = 96;

const encoder = new TextEncoder();
const pad8 = (n: number): number => Math.ceil(n / 8) * 8;

/** The datatype message of a descr: [bytes, element size]. */
function datatypeOf(descr: string, where: string): [Uint8Array, number] {
  const m = /^([<|])([iuf])(\d)$/.exec(descr);
  const kind = m?.[2];
  const size = Number(m?.[3]);
  const ok = m && (kind === 'f' ? [2, 4, 8].includes(size) : [1, 2, 4, 8].includes(size)) && (m[1] === '|') === (size === 1);
  if (!ok) throw new NpyError('HDF5_UNSUPPORTED', `${where} has dtype '${descr}'; the HDF5 writer writes little-endian integers and float16/32/64`);
  const out = new Uint8Array(kind === 'f' ? 20 : 12);
  const v = new DataView(out.buffer);
  v.setUint32(4, size, true);
  v.setUint16(10, size * 8, true);
  if (kind === 'f') {
    const [expAt, expBits, mantBits, bias] = size === 2 ? [10, 5, 10, 15] : size === 4 ? [23, 8, 23, 127] : [52, 11, 52, 1023];
    out[0] = 0x11;
    out[1] = 0x20; // mantissa normalization: msb implied
    out[2] = size * 8 - 1; // sign bit
    out[12] = expAt;
    out[13] = expBits;
    out[14] = 0;
    out[15] = mantBits;
    v.setUint32(16, bias, true);
  } else {
    out[0] = 0x10;
    out[1] = kind === 'i' ? 0x08 : 0;
  }
  return [out, size];
}

/** A version-1 dataspace message (rank 0: a scalar). */
function dataspaceOf(shape: readonly number[]): Uint8Array {
  const out = new Uint8Array(8 + 8 * shape.length);
  const v = new DataView(out.buffer);
  out[0] = 1;
  out[1] = shape.length;
  shape.forEach((d, i) => v.setBigUint64(8 + 8 * i, BigInt(d), true));
  return out;
}

/** An attribute message (version 1): name, datatype, dataspace, value, each padded to 8 bytes. */
function attributeOf(name: string, value: Hdf5AttributeInput, where: string): Uint8Array {
  let type: Uint8Array;
  let data: Uint8Array;
  if (typeof value === 'string') {
    data = encoder.encode(value);
    if (data.length === 0) data = new Uint8Array(1);
    type = new Uint8Array(8);
    type[0] = 0x13;
    type[1] = 0x10; // null-terminated, UTF-8
    new DataView(type.buffer).setUint32(4, data.length, true);
  } else if (typeof value === 'number') {
    type = datatypeOf('<f8', where)[0];
    data = new Uint8Array(8);
    new DataView(data.buffer).setFloat64(0, value, true);
  } else {
    throw new NpyError('BAD_OPTION', `attribute '${name}' of ${where} is a ${typeof value}; the HDF5 writer writes strings and numbers`);
  }
  const nameBytes = encoder.encode(`${name}\0`);
  const space = dataspaceOf([]);
  const out = new Uint8Array(8 + pad8(nameBytes.length) + pad8(type.length) + pad8(space.length) + data.length);
  const v = new DataView(out.buffer);
  out[0] = 1;
  v.setUint16(2, nameBytes.length, true);
  v.setUint16(4, type.length, true);
  v.setUint16(6, space.length, true);
  let at = 8;
  for (const part of [nameBytes, type, space]) {
    out.set(part, at);
    at += pad8(part.length);
  }
  out.set(data, at);
  return out;
}

function isDataset(node: Hdf5GroupInput | Hdf5DatasetInput): node is Hdf5DatasetInput {
  return 'bytes' in node;
}

/** Bytes laid out one object after another, addresses known as each is placed. */
class Layout {
  readonly parts: [number, Uint8Array][] = [];
  end = SUPERBLOCK_SIZE;
  place(bytes: Uint8Array): number {
    const at = this.end;
    this.parts.push([at, bytes]);
    this.end += pad8(bytes.length);
    return at;
  }
}

/** A version-1 object header holding `messages` ([type, body]). */
function objectHeader(messages: readonly [number, Uint8Array][]): Uint8Array {
  const size = messages.reduce((n, [, body]) => n + 8 + pad8(body.length), 0);
  const out = new Uint8Array(16 + size);
  const v = new DataView(out.buffer);
  out[0] = 1;
  v.setUint16(2, messages.length, true);
  v.setUint32(4, 1, true);
  v.setUint32(8, size, true);
  let at = 16;
  for (const [type, body] of messages) {
    v.setUint16(at, type, true);
    v.setUint16(at + 2, pad8(body.length), true);
    out.set(body, at + 8);
    at += 8 + pad8(body.length);
  }
  return out;
}

function attributeMessages(attrs: Readonly<Record<string, Hdf5AttributeInput>> | undefined, where: string): [number, Uint8Array][] {
  return Object.entries(attrs ?? {}).map(([k, v]) => [0x0c, attributeOf(k, v, where)]);
}

function writeDataset(layout: Layout, d: Hdf5DatasetInput, where: string): number {
  const [type, size] = datatypeOf(d.descr, where);
  const count = d.shape.reduce((a, b) => a * b, 1);
  if (d.shape.some((n) => !Number.isSafeInteger(n) || n < 0) || count * size !== d.bytes.length) {
    throw new NpyError('BAD_SHAPE', `${where} has shape [${d.shape.join(', ')}] of '${d.descr}' but ${d.bytes.length} bytes`);
  }
  const address = d.bytes.length > 0 ? layout.place(d.bytes) : -1;
  const contiguous = new Uint8Array(18);
  const v = new DataView(contiguous.buffer);
  contiguous[0] = 3;
  contiguous[1] = 1;
  v.setBigUint64(2, address < 0 ? UNDEF : BigInt(address), true);
  v.setBigUint64(10, BigInt(d.bytes.length), true);
  return layout.place(objectHeader([[1, dataspaceOf(d.shape)], [3, type], [8, contiguous], ...attributeMessages(d.attrs, where)]));
}

/** Bytes order of names, as HDF5 compares them (strcmp). */
function byBytes(a: [Uint8Array, ...unknown[]], b: [Uint8Array, ...unknown[]]): number {
  const [x, y] = [a[0], b[0]];
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

/** Write a group's members, then its local heap, symbol nodes, B-tree and header; returns [header, B-tree, heap] addresses. */
function writeGroup(layout: Layout, g: Hdf5GroupInput, where: string, k: number, depth: number): [number, number, number] {
  if (depth > 64) throw new NpyError('BAD_OPTION', `${where} nests groups deeper than 64`);
  const children: [Uint8Array, number, [number, number] | null][] = [];
  for (const [name, node] of Object.entries(g.members)) {
    if (name === '' || name.includes('/') || name === '.')
      throw new NpyError('BAD_OPTION', `${where} has a member named '${name}' (HDF5 names have no '/' and are not empty)`);
    const path = `${where}/${name}`;
    if (isDataset(node)) children.push([encoder.encode(name), writeDataset(layout, node, path), null]);
    else {
      const [header, tree, heap] = writeGroup(layout, node, path, k, depth + 1);
      children.push([encoder.encode(name), header, [tree, heap]]);
    }
  }
  children.sort(byBytes);
  // Local heap: the empty name at 0, then each name null-terminated on 8 bytes.
  const offsets: number[] = [];
  let heapSize = 8;
  for (const [name] of children) {
    offsets.push(heapSize);
    heapSize += pad8(name.length + 1);
  }
  const heapData = new Uint8Array(heapSize);
  children.forEach(([name], i) => heapData.set(name, offsets[i]!));
  const heapDataAt = layout.place(heapData);
  const heap = new Uint8Array(32);
  const hv = new DataView(heap.buffer);
  heap.set(encoder.encode('HEAP'));
  hv.setBigUint64(8, BigInt(heapSize), true);
  hv.setBigUint64(16, 1n, true); // no free block (the library's H5HL_FREE_NULL)
  hv.setBigUint64(24, BigInt(heapDataAt), true);
  const heapAt = layout.place(heap);
  // Symbol nodes of up to 2K entries each, then one B-tree leaf over all of them.
  const snods: [number, number][] = [];
  for (let first = 0; first < children.length || first === 0; first += SNOD_ENTRIES) {
    const slice = children.slice(first, first + SNOD_ENTRIES);
    const node = new Uint8Array(SNOD_SIZE);
    const nv = new DataView(node.buffer);
    node.set(encoder.encode('SNOD'));
    node[4] = 1;
    nv.setUint16(6, slice.length, true);
    slice.forEach(([, header, cache], i) => {
      const at = 8 + i * ENTRY_SIZE;
      nv.setBigUint64(at, BigInt(offsets[first + i]!), true);
      nv.setBigUint64(at + 8, BigInt(header), true);
      if (cache) {
        nv.setUint32(at + 16, 1, true);
        nv.setBigUint64(at + 24, BigInt(cache[0]), true);
        nv.setBigUint64(at + 32, BigInt(cache[1]), true);
      }
    });
    if (slice.length > 0) snods.push([layout.place(node), offsets[first + slice.length - 1]!]);
    if (children.length === 0) break;
  }
  const tree = new Uint8Array(24 + (2 * k + 1) * 8 + 2 * k * 8);
  const tv = new DataView(tree.buffer);
  tree.set(encoder.encode('TREE'));
  tv.setUint16(6, snods.length, true);
  tv.setBigUint64(8, UNDEF, true);
  tv.setBigUint64(16, UNDEF, true);
  snods.forEach(([address, lastName], i) => {
    tv.setBigUint64(24 + 16 * i + 8, BigInt(address), true);
    tv.setBigUint64(24 + 16 * i + 16, BigInt(lastName), true);
  });
  const treeAt = layout.place(tree);
  const table = new Uint8Array(16);
  new DataView(table.buffer).setBigUint64(0, BigInt(treeAt), true);
  new DataView(table.buffer).setBigUint64(8, BigInt(heapAt), true);
  const header = layout.place(objectHeader([[0x11, table], ...attributeMessages(g.attrs, where)]));
  return [header, treeAt, heapAt];
}

/** The most symbol nodes any group of the tree needs. */
function mostSnods(g: Hdf5GroupInput): number {
  let most = Math.max(1, Math.ceil(Object.keys(g.members).length / SNOD_ENTRIES));
  for (const node of Object.values(g.members)) if (!isDataset(node)) most = Math.max(most, mostSnods(node));
  return most;
}

/**
 * Encode a tree of groups, datasets and attributes as an HDF5 file h5py reads (and `openHdf5`).
 * @example
 * const bytes = encodeHdf5({ members: { layers: { members: { dense: { members: { vars: {
 *   attrs: { name: 'dense' },
 *   members: { '0': { descr: '<f4', shape: [2], bytes: new Uint8Array(new Float32Array([1, 2]).buffer) } },
 * } } } } } } });
 */
export function encodeHdf5(root: Hdf5GroupInput): Uint8Array {
  // The group internal node K: each group's B-tree is one leaf node, so 2K covers the most symbol nodes of a group.
  const k = Math.max(16, Math.ceil(mostSnods(root) / 2));
  if (k > 0xffff) throw new NpyError('TOO_LARGE', `a group has more than ${0xffff * 2 * SNOD_ENTRIES} members`);
  const layout = new Layout();
  const [rootHeader, rootTree, rootHeap] = writeGroup(layout, root, '', k, 0);
  const out = new Uint8Array(layout.end);
  for (const [at, bytes] of layout.parts) out.set(bytes, at);
  const v = new DataView(out.buffer);
  out.set([0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a]);
  out[13] = 8; // size of offsets
  out[14] = 8; // size of lengths
  v.setUint16(16, LEAF_K, true);
  v.setUint16(18, k, true);
  v.setBigUint64(24, 0n, true); // base address
  v.setBigUint64(32, UNDEF, true); // free-space info
  v.setBigUint64(40, BigInt(layout.end), true); // end of file
  v.setBigUint64(48, UNDEF, true); // driver info
  // Root symbol table entry, its B-tree and heap cached.
  v.setBigUint64(56, 0n, true);
  v.setBigUint64(64, BigInt(rootHeader), true);
  v.setUint32(72, 1, true);
  v.setBigUint64(80, BigInt(rootTree), true);
  v.setBigUint64(88, BigInt(rootHeap), true);
  return out;
}

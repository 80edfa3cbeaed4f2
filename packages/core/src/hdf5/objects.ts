/**
 * HDF5 objects: the superblock (versions 0 to 3), object headers (versions 1 and 2, their
 * continuation blocks), the messages a group or dataset is made of, old-style groups (a v1 B-tree
 * of symbol-table nodes naming into a local heap) and new-style compact groups (link messages).
 * Every structure is read at an address checked against the file's size, every count bounded by the
 * bytes that hold it, and every walk keeps the addresses it has seen (a cycle is `BAD_HDF5`).
 */
import { Cursor, type MetaReader, type Sizes, UNDEFINED, bad, unsupported } from './bytes.js';
import { checkChecksum } from './checksum.js';
import { isHdf5 } from './signature.js';
import { type Hdf5Type, parseDataspace, parseDatatype } from './types.js';

/** What the superblock says: the sizes of addresses and lengths, and where the root group is. */
export interface Superblock {
  readonly version: number;
  readonly sizes: Sizes;
  /** The root group's object header. */
  readonly root: number;
}

/**
 * Read the superblock at byte 0 of `meta` (the file from where its superblock is: addresses count
 * from there). Its base address field is not used: the HDF5 library sets the base to where it found
 * the superblock, whatever the field says.
 */
export async function readSuperblock(meta: MetaReader, signal?: AbortSignal): Promise<Superblock> {
  const c = await meta.cursorUpTo(0, 256, 12, 'the superblock', signal);
  if (!isHdf5(c.take(8))) throw bad(`${meta.name} does not start with the HDF5 signature (\\x89HDF\\r\\n\\x1a\\n)`);
  const version = c.u8();
  let sizes: Sizes;
  if (version === 0 || version === 1) {
    c.skip(4); // free-space, root symbol table entry and shared header versions, reserved
    sizes = { offsets: c.u8(), lengths: c.u8() };
    checkSizes(sizes);
    c.skip(1 + 4 + 4); // reserved, group K values, flags
    if (version === 1) c.skip(4);
    c.skip(sizes.offsets); // base address
    c.skip(sizes.offsets); // free space
    c.uint(sizes.offsets); // end of file
    c.skip(sizes.offsets); // driver information
    // The root group's symbol table entry: its object header is what counts.
    c.skip(sizes.offsets);
    const root = c.uint(sizes.offsets);
    return { version, sizes, root };
  }
  if (version === 2 || version === 3) {
    sizes = { offsets: c.u8(), lengths: c.u8() };
    checkSizes(sizes);
    c.skip(1); // flags
    c.skip(sizes.offsets); // base address
    // A superblock extension holds file-wide settings (shared messages, file space): none this reader needs.
    c.skip(sizes.offsets);
    c.uint(sizes.offsets); // end of file
    const root = c.uint(sizes.offsets);
    checkChecksum(c.bytes.subarray(0, c.pos + 4), 0, 'the superblock');
    return { version, sizes, root };
  }
  throw unsupported(`${meta.name} has an HDF5 superblock of version ${version}; npyts reads versions 0 to 3`);
}

function checkSizes(s: Sizes): void {
  for (const [what, n] of [
    ['offsets', s.offsets],
    ['lengths', s.lengths],
  ] as const) {
    if (![2, 4, 8].includes(n)) throw bad(`the superblock gives ${what} a size of ${n} bytes (2, 4 or 8)`);
  }
}

/** One message of an object header. */
export interface Message {
  readonly type: number;
  readonly flags: number;
  readonly data: Uint8Array;
  /** The byte of the file where the message's data starts. */
  readonly at: number;
  /** Its creation order, where the header keeps one (version 2 with attribute creation order tracked); else null. */
  readonly order: number | null;
}

/** A link from a group: to an object's header (hard), or a soft or external link (refused when followed). */
export type Link = { readonly kind: 'hard'; readonly address: number } | { readonly kind: 'soft' | 'external' | 'other'; readonly what: string };

/** A dataset's storage: contiguous bytes in the file, or compact ones in its header. */
export type Layout = { readonly kind: 'contiguous'; readonly address: number; readonly size: number } | { readonly kind: 'compact'; readonly data: Uint8Array };

/** The messages of one object header this reader uses, sorted by what they say. */
export interface ObjectHeader {
  readonly address: number;
  readonly messages: readonly Message[];
}

const MSG = {
  NIL: 0,
  DATASPACE: 1,
  LINK_INFO: 2,
  DATATYPE: 3,
  LAYOUT: 8,
  FILTERS: 11,
  ATTRIBUTE: 12,
  CONTINUATION: 16,
  SYMBOL_TABLE: 17,
  LINK: 6,
  EXTERNAL: 7,
  ATTRIBUTE_INFO: 21,
} as const;

/** Most messages one object header may hold, whatever its blocks' sizes say (h5py writes a few dozen). */
const MAX_MESSAGES = 1 << 16;

/** Read an object header (version 1 or 2) and its continuation blocks. */
export async function readObjectHeader(meta: MetaReader, address: number, signal?: AbortSignal): Promise<ObjectHeader> {
  const { sizes } = meta;
  const messages: Message[] = [];
  const first = await meta.cursorUpTo(address, 512, 16, `the object header`, signal);
  const seen = new Set<number>([address]);
  const blocks: { at: number; length: number }[] = [];
  const version2 = first.bytes[0] === 0x4f; // 'O' of OHDR
  let flags = 0;
  if (!version2) {
    const version = first.u8();
    if (version !== 1) throw bad(`the object header at byte ${address} has version ${version} (1, or 2 with 'OHDR')`);
    first.skip(1);
    const count = first.u16();
    first.skip(4);
    const length = first.u32();
    if (count > MAX_MESSAGES) throw bad(`the object header at byte ${address} claims ${count} messages`);
    blocks.push({ at: address + 16, length });
  } else {
    first.signature('OHDR');
    const version = first.u8();
    if (version !== 2) throw bad(`the object header at byte ${address} has version ${version} after 'OHDR' (2)`);
    flags = first.u8();
    if (flags & 0x20) first.skip(16);
    if (flags & 0x10) first.skip(4);
    const length = first.uint(1 << (flags & 3));
    // The first chunk's messages, then its checksum (of everything from 'OHDR' on).
    const whole = await meta.cursor(address, first.pos + length + 4, 'the object header', signal);
    checkChecksum(whole.bytes, address, 'the object header');
    blocks.push({ at: address + first.pos, length });
  }
  let firstBlock = true;
  while (blocks.length) {
    const { at, length } = blocks.shift()!;
    const c = await meta.cursor(at, length, 'an object header block', signal);
    let end = length;
    if (version2 && !firstBlock) {
      // A continuation block of a version 2 header: 'OCHK', messages, a checksum.
      c.signature('OCHK');
      checkChecksum(c.bytes, at, 'an object header continuation block');
      end = length - 4;
    }
    firstBlock = false;
    const headerBytes = version2 ? (flags & 4 ? 6 : 4) : 8;
    while (c.pos + headerBytes <= end) {
      const type = version2 ? c.u8() : c.u16();
      const size = c.u16();
      const mflags = c.u8();
      let order: number | null = null;
      if (version2) {
        if (flags & 4) order = c.u16();
      } else {
        c.skip(3);
      }
      const dataAt = at + c.pos;
      if (c.pos + size > end) throw bad(`a message of the object header at byte ${address} (at byte ${dataAt}) runs past its block`);
      const data = c.take(size);
      if (messages.length >= MAX_MESSAGES) throw bad(`the object header at byte ${address} has more than ${MAX_MESSAGES} messages`);
      if (type === MSG.CONTINUATION) {
        const m = new Cursor(data, dataAt, 'a continuation message');
        const next = m.uint(sizes.offsets);
        const nextLength = m.uint(sizes.lengths);
        if (seen.has(next)) throw bad(`the object header at byte ${address} continues at byte ${next} twice: a cycle`);
        seen.add(next);
        meta.check(next, nextLength, `a continuation of the object header at byte ${address}`);
        blocks.push({ at: next, length: nextLength });
      } else if (type !== MSG.NIL) {
        messages.push({ type, flags: mflags, data, at: dataAt, order });
      }
      if (!version2) c.align(8);
    }
  }
  return { address, messages };
}

/** A message's data as a cursor. */
function cursorOf(m: Message, what: string): Cursor {
  return new Cursor(m.data, m.at, what);
}

/** The first message of a type, if any. */
function messageOf(h: ObjectHeader, type: number): Message | undefined {
  return h.messages.find((m) => m.type === type);
}

/** Whether an object header is a group's (a symbol table, link info or links). */
export function isGroup(h: ObjectHeader): boolean {
  return h.messages.some((m) => m.type === MSG.SYMBOL_TABLE || m.type === MSG.LINK_INFO || m.type === MSG.LINK);
}

/** A dataset's datatype, shape and storage, from its header. */
export interface DatasetHeader {
  readonly type: Hdf5Type;
  /** Null for a null dataspace (h5py's `Empty`: no values). */
  readonly shape: number[] | null;
  readonly layout: Layout;
}

/** Read a dataset's messages; chunked layouts and filters are refused by name. */
export function datasetOf(h: ObjectHeader, sizes: Sizes, where: string): DatasetHeader {
  const t = messageOf(h, MSG.DATATYPE);
  const s = messageOf(h, MSG.DATASPACE);
  const l = messageOf(h, MSG.LAYOUT);
  if (!t || !s || !l) throw unsupported(`${where} (object header at byte ${h.address}) is neither a group nor a dataset (a committed datatype?)`);
  if (t.flags & 2) throw unsupported(`${where} has a shared (committed) datatype, which npyts does not read`);
  if (s.flags & 2) throw unsupported(`${where} has a shared dataspace, which npyts does not read`);
  const type = parseDatatype(cursorOf(t, `the datatype of ${where}`), sizes);
  const shape = parseDataspace(cursorOf(s, `the dataspace of ${where}`), sizes);
  const c = cursorOf(l, `the layout of ${where}`);
  const version = c.u8();
  let layout: Layout;
  if (version === 1 || version === 2) {
    const rank = c.u8();
    const cls = c.u8();
    c.skip(5);
    if (cls === 2)
      throw unsupported(`${where} is stored in chunks (h5py's chunks=, compression= or maxshape=), which npyts does not read: write it contiguous`);
    const address = cls === 1 ? c.uint(sizes.offsets) : UNDEFINED;
    c.skip(rank * 4);
    if (cls === 0) {
      const size = c.u32();
      layout = { kind: 'compact', data: c.take(size) };
    } else if (cls === 1) {
      layout = { kind: 'contiguous', address, size: -1 };
    } else {
      throw bad(`${where} has a layout of class ${cls}`);
    }
  } else if (version >= 3 && version <= 5) {
    const cls = c.u8();
    if (cls === 0) {
      const size = c.u16();
      layout = { kind: 'compact', data: c.take(size) };
    } else if (cls === 1) {
      const address = c.uint(sizes.offsets);
      const size = c.uint(sizes.lengths);
      layout = { kind: 'contiguous', address, size };
    } else if (cls === 2) {
      throw unsupported(`${where} is stored in chunks (h5py's chunks=, compression= or maxshape=), which npyts does not read: write it contiguous`);
    } else if (cls === 3) {
      throw unsupported(`${where} is a virtual dataset, which npyts does not read`);
    } else {
      throw bad(`${where} has a layout of class ${cls}`);
    }
  } else {
    throw bad(`${where} has a layout message of version ${version} (1 to 5)`);
  }
  if (messageOf(h, MSG.FILTERS)) throw unsupported(`${where} has filters (compression), which npyts does not read`);
  return { type, shape, layout };
}

/** External files named in a refusal: the first few (a dataset may list many). */
const EXTERNAL_NAMES_SHOWN = 4;

/**
 * Refuse a dataset stored in external files (h5py's `external=`), naming them: its values are not in
 * this file (h5py reads them from files beside it), and npyts reads one file.
 */
export async function refuseExternal(meta: MetaReader, h: ObjectHeader, where: string, signal?: AbortSignal): Promise<void> {
  const m = messageOf(h, MSG.EXTERNAL);
  if (!m) return;
  const { sizes } = meta;
  const c = cursorOf(m, `the external files message of ${where}`);
  const version = c.u8();
  if (version !== 1) throw bad(`the external files message of ${where} (at byte ${m.at}) has version ${version} (1)`);
  c.skip(3 + 2); // reserved, allocated slots
  const used = c.u16();
  const heap = await localHeap(meta, c.uint(sizes.offsets), where, signal);
  const names: string[] = [];
  for (let i = 0; i < Math.min(used, EXTERNAL_NAMES_SHOWN); i++) {
    names.push(`'${heapName(heap, c.uint(sizes.lengths), where)}'`);
    c.skip(2 * sizes.lengths); // offset in the file, size
  }
  const more = used > names.length ? ` and ${used - names.length} more` : '';
  throw unsupported(
    `${where} keeps its values in external storage (h5py's external=: ${used} external file${used === 1 ? '' : 's'}, ${names.join(', ')}${more}), not in this file, which npyts does not read: write it into the file`,
  );
}

/** A raw attribute: its name, datatype, shape (null for no value) and data bytes. */
export interface RawAttribute {
  readonly name: string;
  readonly type: Hdf5Type;
  readonly shape: number[] | null;
  readonly data: Uint8Array;
  readonly at: number;
}

const utf8 = new TextDecoder('utf-8');

/** The attributes stored in an object's header (dense attribute storage is refused by name). */
export function attributesOf(h: ObjectHeader, sizes: Sizes, where: string): RawAttribute[] {
  const info = messageOf(h, MSG.ATTRIBUTE_INFO);
  // h5py lists attributes by creation order where the object tracks it (track_order=True), else by name.
  let byCreation = false;
  if (info) {
    const c = cursorOf(info, `the attribute info of ${where}`);
    c.u8();
    const flags = c.u8();
    byCreation = (flags & 1) !== 0;
    if (flags & 1) c.skip(2);
    const heap = c.uint(sizes.offsets);
    if (heap !== UNDEFINED)
      throw unsupported(
        `${where} keeps its attributes in dense storage (a fractal heap: more than 8 attributes, or large ones, with libver='latest'), which npyts does not read`,
      );
  }
  const attributes = h.messages
    .filter((m) => m.type === MSG.ATTRIBUTE)
    .map((m, i): [number, RawAttribute] => {
      const c = cursorOf(m, `an attribute of ${where}`);
      const version = c.u8();
      if (version < 1 || version > 3) throw bad(`an attribute of ${where} (at byte ${m.at}) has version ${version} (1 to 3)`);
      const flags = c.u8();
      const nameSize = c.u16();
      const typeSize = c.u16();
      const spaceSize = c.u16();
      if (version === 3) c.u8(); // the name's charset
      if (version >= 2 && flags & 3) throw unsupported(`an attribute of ${where} has a shared datatype or dataspace, which npyts does not read`);
      const pad = (n: number): number => (version === 1 ? Math.ceil(n / 8) * 8 : n);
      const nameBytes = c.take(pad(nameSize));
      const nul = nameBytes.indexOf(0);
      const name = utf8.decode(nameBytes.subarray(0, nul >= 0 && nul < nameSize ? nul : nameSize));
      const typeAt = c.pos;
      const type = parseDatatype(new Cursor(c.take(pad(typeSize)), m.at + typeAt, `the datatype of attribute '${name}' of ${where}`), sizes);
      const spaceAt = c.pos;
      const shape = parseDataspace(new Cursor(c.take(pad(spaceSize)), m.at + spaceAt, `the dataspace of attribute '${name}' of ${where}`), sizes);
      return [m.order ?? i, { name, type, shape, data: c.take(c.left), at: m.at + c.pos }];
    });
  return sortedNames(attributes, byCreation);
}

/** Items by creation order (`byCreation`) or by name, as h5py lists a group's members and an object's attributes. */
function sortedNames<T extends { readonly name: string }>(items: [number, T][], byCreation: boolean): T[] {
  items.sort(byCreation ? (a, b) => a[0] - b[0] : (a, b) => (a[1].name < b[1].name ? -1 : a[1].name > b[1].name ? 1 : 0));
  return items.map(([, item]) => item);
}

/**
 * A group's links by name: from its symbol table (a v1 B-tree of symbol-table nodes naming into a
 * local heap) or its link messages. Dense link storage (a fractal heap) is refused by name.
 */
export async function linksOf(meta: MetaReader, h: ObjectHeader, where: string, signal?: AbortSignal): Promise<Map<string, Link>> {
  const { sizes } = meta;
  const links = new Map<string, Link>();
  const table = messageOf(h, MSG.SYMBOL_TABLE);
  if (table) {
    const c = cursorOf(table, `the symbol table of ${where}`);
    const tree = c.uint(sizes.offsets);
    const heap = c.uint(sizes.offsets);
    const names = await localHeap(meta, heap, where, signal);
    await walkGroupTree(meta, tree, names, links, where, signal);
  }
  const info = messageOf(h, MSG.LINK_INFO);
  if (info) {
    const c = cursorOf(info, `the link info of ${where}`);
    c.u8();
    const flags = c.u8();
    if (flags & 1) c.skip(8);
    const heap = c.uint(sizes.offsets);
    if (heap !== UNDEFINED) {
      throw unsupported(
        `${where} keeps its links in dense storage (a fractal heap: more than 8 members with libver='latest' or track_order=True), which npyts does not read`,
      );
    }
  }
  const order: [number, { name: string }][] = [];
  // h5py lists a group's members by name, or by creation order where the group tracks it (track_order=True).
  const byCreation = info !== undefined && (info.data[1]! & 1) !== 0;
  for (const m of h.messages) {
    if (m.type !== MSG.LINK) continue;
    const c = cursorOf(m, `a link of ${where}`);
    const version = c.u8();
    if (version !== 1) throw bad(`a link of ${where} (at byte ${m.at}) has version ${version} (1)`);
    const flags = c.u8();
    const type = flags & 8 ? c.u8() : 0;
    const created = flags & 4 ? c.uint(8) : order.length;
    if (flags & 0x10) c.u8();
    const nameLength = c.uint(1 << (flags & 3));
    const name = utf8.decode(c.take(nameLength));
    let link: Link;
    if (type === 0) link = { kind: 'hard', address: c.uint(sizes.offsets) };
    else if (type === 1) link = { kind: 'soft', what: `a soft link to '${utf8.decode(c.take(c.u16()))}'` };
    else if (type === 64) link = { kind: 'external', what: 'an external link (to another file)' };
    else link = { kind: 'other', what: `a link of type ${type}` };
    if (links.has(name)) throw bad(`${where} has two links named '${name}'`);
    links.set(name, link);
    order.push([created, { name }]);
  }
  if (!order.length) return links;
  return new Map(sortedNames(order, byCreation).map(({ name }) => [name, links.get(name)!]));
}

/** A local heap's data segment (the names of a symbol table's members). */
async function localHeap(meta: MetaReader, address: number, where: string, signal?: AbortSignal): Promise<Uint8Array> {
  const { sizes } = meta;
  const c = await meta.cursor(address, 8 + 2 * sizes.lengths + sizes.offsets, `the local heap of ${where}`, signal);
  c.signature('HEAP');
  const version = c.u8();
  if (version !== 0) throw bad(`the local heap of ${where} at byte ${address} has version ${version} (0)`);
  c.skip(3);
  const size = c.uint(sizes.lengths);
  c.uint(sizes.lengths); // free list
  const data = c.uint(sizes.offsets);
  return (await meta.cursor(data, size, `the data of the local heap of ${where}`, signal)).bytes;
}

/** A NUL-terminated name at `offset` of a local heap's data. */
function heapName(heap: Uint8Array, offset: number, where: string): string {
  if (offset < 0 || offset >= heap.length) throw bad(`a member of ${where} has its name at offset ${offset} of a local heap of ${heap.length} bytes`);
  const end = heap.indexOf(0, offset);
  if (end < 0) throw bad(`a member of ${where} has a name at offset ${offset} that runs past its local heap`);
  return utf8.decode(heap.subarray(offset, end));
}

/** Walk a group's v1 B-tree (each node once, levels strictly falling) into `links`. */
async function walkGroupTree(meta: MetaReader, root: number, heap: Uint8Array, links: Map<string, Link>, where: string, signal?: AbortSignal): Promise<void> {
  const { sizes } = meta;
  const seen = new Set<number>();
  const visit = async (address: number, level: number | null): Promise<void> => {
    if (seen.has(address)) throw bad(`the B-tree of ${where} reaches its node at byte ${address} twice: a cycle`);
    seen.add(address);
    const head = await meta.cursor(address, 8 + 2 * sizes.offsets, `a B-tree node of ${where}`, signal);
    head.signature('TREE');
    const type = head.u8();
    if (type !== 0) throw bad(`the B-tree node of ${where} at byte ${address} has type ${type}, not a group's (0)`);
    const nodeLevel = head.u8();
    if (level !== null && nodeLevel !== level)
      throw bad(`the B-tree node of ${where} at byte ${address} has level ${nodeLevel}, its parent's child should be ${level}`);
    const entries = head.u16();
    const body = await meta.cursor(
      address + head.pos + 2 * sizes.offsets,
      entries * (sizes.lengths + sizes.offsets) + sizes.lengths,
      `a B-tree node of ${where}`,
      signal,
    );
    const children: number[] = [];
    for (let i = 0; i < entries; i++) {
      body.skip(sizes.lengths);
      children.push(body.uint(sizes.offsets));
    }
    for (const child of children) {
      signal?.throwIfAborted();
      if (nodeLevel > 0) await visit(child, nodeLevel - 1);
      else await symbolNode(child);
    }
  };
  const symbolNode = async (address: number): Promise<void> => {
    if (seen.has(address)) throw bad(`the B-tree of ${where} reaches its symbol node at byte ${address} twice: a cycle`);
    seen.add(address);
    const head = await meta.cursor(address, 8, `a symbol table node of ${where}`, signal);
    head.signature('SNOD');
    const version = head.u8();
    if (version !== 1) throw bad(`the symbol table node of ${where} at byte ${address} has version ${version} (1)`);
    head.skip(1);
    const count = head.u16();
    const entrySize = 2 * sizes.offsets + 24;
    const c = await meta.cursor(address + 8, count * entrySize, `a symbol table node of ${where}`, signal);
    for (let i = 0; i < count; i++) {
      const nameAt = c.uint(sizes.offsets);
      const header = c.uint(sizes.offsets);
      const cache = c.u32();
      c.skip(4 + 16);
      const name = heapName(heap, nameAt, where);
      if (links.has(name)) throw bad(`${where} has two members named '${name}'`);
      links.set(name, cache === 2 ? { kind: 'soft', what: 'a soft link' } : { kind: 'hard', address: header });
    }
  };
  await visit(root, null);
}

/** Where a global heap collection's objects are, by index, read once per collection. */
export class GlobalHeaps {
  private readonly collections = new Map<number, Promise<Map<number, Uint8Array>>>();
  constructor(private readonly meta: MetaReader) {}

  /** Object `index` of the collection at `address`. */
  async object(address: number, index: number, signal?: AbortSignal): Promise<Uint8Array> {
    let c = this.collections.get(address);
    if (!c) {
      c = this.read(address, signal);
      this.collections.set(address, c);
      c.catch(() => this.collections.delete(address));
    }
    const got = (await c).get(index);
    if (!got) throw bad(`the global heap collection at byte ${address} has no object ${index}`);
    return got;
  }

  private async read(address: number, signal?: AbortSignal): Promise<Map<number, Uint8Array>> {
    const { sizes } = this.meta;
    const head = await this.meta.cursor(address, 8 + sizes.lengths, 'a global heap collection', signal);
    head.signature('GCOL');
    const version = head.u8();
    if (version !== 1) throw bad(`the global heap collection at byte ${address} has version ${version} (1)`);
    head.skip(3);
    const size = head.uint(sizes.lengths);
    if (size < head.pos) throw bad(`the global heap collection at byte ${address} claims ${size} bytes, less than its header`);
    const c = await this.meta.cursor(address, size, 'a global heap collection', signal);
    c.skip(head.pos);
    const objects = new Map<number, Uint8Array>();
    while (c.left >= 8 + sizes.lengths) {
      const index = c.u16();
      c.skip(6);
      const length = c.uint(sizes.lengths);
      if (index === 0) break; // free space: the rest of the collection
      if (length > c.left) throw bad(`object ${index} of the global heap collection at byte ${address} claims ${length} bytes, past the collection`);
      objects.set(index, c.take(length));
      c.align(8);
    }
    return objects;
  }
}

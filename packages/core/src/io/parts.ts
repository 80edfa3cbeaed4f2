/**
 * A .npy written as the parts of one multipart upload (S3 and its compatibles), by many workers: a
 * plan says which region of the array each part holds (whole rows in C order, whole columns along
 * the last axis in Fortran order) and which bytes of the object it is, within the limits object
 * stores set; each worker encodes its part from its region alone. The plan is JSON, so that workers
 * in other languages (numpy and boto3) can follow it. An append is planned the same way: the new
 * object as the old one's data copied on the server (UploadPartCopy) between a new header and the
 * new rows, so that the old bytes never leave the store.
 */
import { storageOf } from '../array/layout.js';
import type { NdArray } from '../array/ndarray.js';
import { toOrder } from '../array/order.js';
import { copySwapped } from '../array/memory.js';
import { NpyError } from '../errors.js';
import { PART_LIMIT_RULES, PLAN_RULES, checkNumbers } from '../options.js';
import { type DescrJSON, parseDescr, shapeRepr, shapeSize } from '../format/dtype.js';
import type { DescrInput } from '../format/descr-types.js';
import { encodeHeader, type NpyHeader } from '../format/header.js';
import type { TypedArray } from '../format/js-types.js';
import { hasObject, toNdArray, type ArraySpec } from '../npy.js';

/** The multipart limits of an object store: S3's by default. */
export interface PartLimits {
  /** Smallest part but the last (S3: 5 MiB). */
  minPartBytes?: number;
  /** Largest part (S3: 5 GiB). */
  maxPartBytes?: number;
  /** Most parts (S3: 10 000). */
  maxParts?: number;
  /** Largest object (S3: 5 TiB). */
  maxObjectBytes?: number;
}

/** S3's multipart limits, the default of every plan. */
export const S3: Required<PartLimits> = { minPartBytes: 5 * 2 ** 20, maxPartBytes: 5 * 2 ** 30, maxParts: 10_000, maxObjectBytes: 5 * 2 ** 40 };

/** What to plan: the array's dtype, shape and order, and how many parts or how large. */
export interface PlanPartsOptions extends PartLimits {
  dtype: DescrInput;
  shape: readonly number[];
  /** Memory order of the file (default C). */
  order?: 'C' | 'F';
  /** How many parts (at most; fewer when the rows do not divide that far). */
  parts?: number;
  /** About how many bytes each part holds (rounded to whole rows or columns). Default: the smallest part the limits allow. */
  partSize?: number;
}

/** One part of a plan: its number (from 1), its bytes in the object, and the region of the array it holds. */
export interface PlannedPart {
  number: number;
  /** Byte offset of the part in the object. */
  offset: number;
  /** Bytes of the part (part 1 includes the header). */
  length: number;
  /** The region it holds: `start` and `count` per axis. */
  start: number[];
  count: number[];
}

/** What every multipart plan says of the object it makes: JSON, for workers in any language. */
export interface ObjectPlan {
  descr: DescrJSON;
  /** The array's shape (after the append, for an append). */
  shape: number[];
  fortranOrder: boolean;
  /** The .npy header (part 1 starts with it), base64: numpy's for the shape. */
  header: string;
  headerBytes: number;
  /** Bytes of the whole object. */
  size: number;
}

/** A multipart plan: JSON, for workers in any language. */
export interface PartPlan extends ObjectPlan {
  parts: PlannedPart[];
}

/** A plan the limits or the options do not allow. */
export function refuse(message: string): never {
  throw new NpyError('BAD_OPTION', message);
}

/**
 * Bytes as base64, the way plans carry them in JSON.
 * @example
 * base64(new Uint8Array([0x93, 0x4e]));   // 'k04='
 */
export function base64(bytes: Uint8Array): string {
  let text = '';
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text);
}

/**
 * A plan for writing an array as the parts of one multipart upload: the header, the object's size,
 * and each part's number, bytes and region, so that every part but the last is at least the store's
 * smallest part and there are no more parts than it allows. A layout that cannot meet the limits
 * is refused before anything is uploaded.
 * @example
 * const plan = planParts({ dtype: '<f4', shape: [65536, 1024], parts: 4 });
 * plan.parts[0];   // { number: 1, offset: 0, length: 128 + 16384 rows × 4096 bytes, start: [0, 0], count: [16384, 1024] }
 */
export function planParts(options: PlanPartsOptions): PartPlan {
  checkNumbers(options, PART_LIMIT_RULES, PLAN_RULES);
  const limits = { ...S3, ...options };
  const dtype = parseDescr(options.dtype);
  if (hasObject(dtype)) refuse('object arrays are pickles, not fixed-size rows: they cannot be written in parts');
  const shape = [...options.shape];
  const fortran = (options.order ?? 'C') === 'F';
  const header = encodeHeader(dtype, shape, fortran);
  const dataBytes = shapeSize(shape) * dtype.itemsize;
  const size = header.length + dataBytes;
  if (size > limits.maxObjectBytes) refuse(`the array is ${size} bytes with its header; the store takes objects up to ${limits.maxObjectBytes}`);
  // The axis split into parts: the first in C order, the last in Fortran order (a 0-d array is one part).
  const axis = shape.length === 0 ? -1 : fortran ? shape.length - 1 : 0;
  const lines = axis < 0 ? 1 : shape[axis]!;
  const lineBytes = lines === 0 ? 0 : dataBytes / lines;
  const whole = (): PartPlan => ({
    descr: dtype.descr,
    shape,
    fortranOrder: fortran,
    header: base64(header),
    headerBytes: header.length,
    size,
    parts: [{ number: 1, offset: 0, length: size, start: shape.map(() => 0), count: [...shape] }],
  });
  if (axis < 0 || lineBytes === 0 || size <= limits.minPartBytes) {
    if (size > limits.maxPartBytes) refuse(`the array is one part of ${size} bytes; the store takes parts up to ${limits.maxPartBytes}`);
    return whole();
  }
  // Part 1 holds the header too: every part's lines are counted with room for it.
  const room = limits.maxPartBytes - header.length;
  if (lineBytes > room) {
    refuse(
      `one ${fortran ? 'column' : 'row'} is ${lineBytes} bytes, with the ${header.length}-byte header larger than the store's largest part (${limits.maxPartBytes}); write it in ${fortran ? 'C' : 'Fortran'} order, or as several arrays`,
    );
  }
  let per: number;
  if (options.parts !== undefined) {
    per = Math.ceil(lines / options.parts);
  } else {
    const target = options.partSize ?? limits.minPartBytes;
    per = Math.max(1, Math.ceil(target / lineBytes));
  }
  per = Math.min(per, Math.floor(room / lineBytes));
  const count = Math.ceil(lines / per);
  if (count > limits.maxParts) {
    refuse(
      `${count} parts; the store takes at most ${limits.maxParts}: ask for larger parts (partSize; each holds ${per} ${fortran ? 'columns' : 'rows'} now)`,
    );
  }
  const parts: PlannedPart[] = [];
  let offset = 0;
  for (let k = 0; k < count; k++) {
    const first = k * per;
    const n = Math.min(per, lines - first);
    const length = n * lineBytes + (k === 0 ? header.length : 0);
    if (k < count - 1 && length < limits.minPartBytes) {
      refuse(
        `part ${k + 1} would hold ${length} bytes (${n} ${fortran ? 'columns' : 'rows'} of ${lineBytes}); the store needs every part but the last to hold at least ${limits.minPartBytes}: ask for fewer parts (the array allows at most ${Math.max(1, Math.floor(dataBytes / limits.minPartBytes))})`,
      );
    }
    const start = shape.map(() => 0);
    const counts = [...shape];
    start[axis] = first;
    counts[axis] = n;
    parts.push({ number: k + 1, offset, length, start, count: counts });
    offset += length;
  }
  return { descr: dtype.descr, shape, fortranOrder: fortran, header: base64(header), headerBytes: header.length, size, parts };
}

/**
 * The bytes of one part, in the object's order (part 1 with the header first), from an array of
 * exactly its region: its dtype and shape are checked against the plan. A part after the first is
 * a view of the array's own memory where its order and byte order are the plan's (no copy).
 * @example
 * const body = encodePart(plan, 2, rows);   // upload as part 2
 */
export function encodePart(plan: PartPlan, number: number, input: NdArray | ArraySpec): Uint8Array {
  const part = plan.parts.find((p) => p.number === number);
  if (!part) refuse(`the plan has parts 1 to ${plan.parts.length}, not ${number}`);
  const body = regionBytes(plan, part, input, `part ${number}`);
  const headerBytes = number === 1 ? fromBase64(plan.header) : new Uint8Array(0);
  if (headerBytes.length + body.length !== part.length) {
    throw new NpyError('INTERNAL', `part ${number} came to ${headerBytes.length + body.length} bytes, the plan says ${part.length}`);
  }
  // A part without the header is the region's bytes as they are: no copy where they need no swap.
  if (headerBytes.length === 0) return body;
  const out = new Uint8Array(headerBytes.length + body.length);
  out.set(headerBytes, 0);
  out.set(body, headerBytes.length);
  return out;
}

/**
 * The file-order bytes of a region of a planned array (`what` names it in errors), from an array of
 * exactly that region: its dtype and shape are checked against the plan.
 * @example
 * const body = regionBytes(plan, { start: [0, 0], count: [10, 4] }, rows, 'part 2');
 */
export function regionBytes(
  plan: Pick<ObjectPlan, 'descr' | 'fortranOrder'>,
  region: { start: readonly number[]; count: readonly number[] },
  input: NdArray | ArraySpec,
  what: string,
): Uint8Array {
  const dtype = parseDescr(plan.descr as DescrInput);
  const array = toNdArray(input);
  // Records are written as their bytes are held: their byte order must be the plan's. Numbers are
  // held native and swapped here.
  const fits = array.dtype.equals(dtype) || (dtype.form === 'scalar' && array.dtype.withByteOrder('<').equals(dtype.withByteOrder('<')));
  if (!fits) {
    throw new NpyError('DTYPE_MISMATCH', `${what} is ${dtype.descrLiteral}; the array is ${array.dtype.descrLiteral}`);
  }
  if (array.shape.join() !== region.count.join()) {
    throw new NpyError(
      'SHAPE_MISMATCH',
      `${what} holds the region of shape ${shapeRepr(region.count)} from ${shapeRepr(region.start)}; the array has shape ${shapeRepr(array.shape)}`,
    );
  }
  const ordered = toOrder(array, plan.fortranOrder ? 'F' : 'C');
  const data = ordered.data as TypedArray;
  const body = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  // In the plan's byte order (the data is native in memory).
  const { swapUnit } = storageOf(dtype);
  return swapUnit > 1 && !dtype.isNative ? copySwapped(body, swapUnit) : body;
}

/**
 * Bytes written as base64 in a plan (its header), back as bytes.
 * @example
 * const header = fromBase64(plan.header);
 */
export function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/** What to append: how many rows (columns along the last axis of a Fortran-order file), and part sizes. */
export interface PlanAppendPartsOptions extends PartLimits {
  /** Rows to add along axis 0 (C order), or columns along the last axis (Fortran order). */
  rows: number;
  /** About how many bytes each part of new rows holds (rounded to whole rows). Default: the smallest part the limits allow. */
  partSize?: number;
  /** The existing object's size, when known: checked to hold all the data its header declares. */
  objectSize?: number;
}

/**
 * One part of an append: `copy` parts are ranges of the old object copied by the store
 * (UploadPartCopy with `CopySourceRange: bytes=first-last`); `upload` parts are sent by a worker: the
 * new header first in part 1, then `old` bytes read back from the old object (only what part 1
 * needs to reach the smallest part size), then the new rows of `start`/`count` (relative to the new
 * rows alone) when `count` is there.
 */
export interface AppendPart {
  number: number;
  kind: 'copy' | 'upload';
  /** Byte offset of the part in the new object. */
  offset: number;
  length: number;
  /** A byte range of the old object: what a copy part copies, or what an upload part carries after its header. */
  old?: { offset: number; length: number };
  /** The new rows an upload part carries (within the rows being appended). */
  start?: number[];
  count?: number[];
}

/** An append as one multipart upload: JSON, like {@link PartPlan}. */
export interface AppendPartPlan extends ObjectPlan {
  parts: AppendPart[];
}

/**
 * A plan that appends rows to a .npy already in object storage as one multipart upload of a new
 * object (usually under the same key): a new header, the old data copied on the server in parts
 * (UploadPartCopy), then the new rows. Only what part 1 needs to reach the smallest part size is
 * read back (all the old data when there is too little to copy). `header` is the old object's, read
 * by range (`readHeader` of its first bytes, or `openNpy(url)`). Refused before anything is uploaded
 * when the limits cannot be met.
 * @example
 * const old = (await openNpy(url)).header;
 * const plan = planAppendParts(old, { rows: 4096 });
 * plan.parts.filter((p) => p.kind === 'copy');   // UploadPartCopy, CopySourceRange bytes=p.old.offset-(p.old.offset + p.old.length - 1)
 */
export function planAppendParts(header: Pick<NpyHeader, 'dtype' | 'shape' | 'fortranOrder' | 'dataOffset'>, options: PlanAppendPartsOptions): AppendPartPlan {
  checkNumbers(options, PART_LIMIT_RULES, PLAN_RULES);
  const limits = { ...S3, ...options };
  const { dtype, fortranOrder: fortran } = header;
  if (hasObject(dtype)) refuse('object arrays are pickles, not fixed-size rows: they cannot be appended in parts');
  if (header.shape.length === 0) refuse('a 0-d array has no axis to append along');
  if (options.rows === undefined) refuse('rows (how many rows to append) is needed');
  const axis = fortran ? header.shape.length - 1 : 0;
  const oldData = shapeSize(header.shape) * dtype.itemsize;
  if (options.objectSize !== undefined && options.objectSize < header.dataOffset + oldData) {
    throw new NpyError('DATA_TRUNCATED', `the object is ${options.objectSize} bytes; its header declares ${header.dataOffset + oldData}`);
  }
  const shape = [...header.shape];
  shape[axis] = shape[axis]! + options.rows;
  const newHeader = encodeHeader(dtype, shape, fortran);
  const H = newHeader.length;
  const lineBytes = (shapeSize(shape) / Math.max(1, shape[axis]!)) * dtype.itemsize;
  const newData = options.rows * lineBytes;
  const size = H + oldData + newData;
  if (size > limits.maxObjectBytes) refuse(`the array would be ${size} bytes with its header; the store takes objects up to ${limits.maxObjectBytes}`);
  if (lineBytes > limits.maxPartBytes)
    refuse(`one ${fortran ? 'column' : 'row'} is ${lineBytes} bytes, larger than the store's largest part (${limits.maxPartBytes})`);
  const min = limits.minPartBytes;
  const oldAt = (k: number) => ({ offset: header.dataOffset + k, length: 0 });
  // Part 1: the header and the old bytes it needs to reach the smallest part; all of the old data
  // when what would be left is too little for a copy part of its own.
  let readBack = Math.min(oldData, Math.max(0, min - H));
  if (oldData - readBack < min) readBack = oldData;
  const parts: AppendPart[] = [];
  const first: AppendPart = { number: 1, kind: 'upload', offset: 0, length: H + readBack, ...(readBack ? { old: { ...oldAt(0), length: readBack } } : {}) };
  parts.push(first);
  let offset = first.length;
  // The rest of the old data, copied by the store in parts no larger than it allows.
  const copied = oldData - readBack;
  if (copied > 0) {
    const count = Math.ceil(copied / limits.maxPartBytes);
    if (count + 1 > limits.maxParts) refuse(`the old data alone needs ${count} copy parts; the store takes at most ${limits.maxParts} parts`);
    const each = Math.ceil(copied / count);
    for (let done = 0; done < copied; ) {
      const length = Math.min(each, copied - done);
      parts.push({ number: parts.length + 1, kind: 'copy', offset, length, old: { ...oldAt(readBack + done), length } });
      offset += length;
      done += length;
    }
  }
  // The new rows, whole rows per part; part 1 takes the first of them when it is still short.
  const region = (firstRow: number, n: number) => {
    const start = shape.map(() => 0);
    const count = [...shape];
    count[axis] = n;
    start[axis] = firstRow;
    return { start, count };
  };
  let row = 0;
  if (first.length < min && copied === 0 && options.rows > 0) {
    const n = Math.min(options.rows, Math.ceil((min - first.length) / lineBytes));
    Object.assign(first, region(0, n));
    first.length += n * lineBytes;
    offset += n * lineBytes;
    row = n;
  }
  const per = Math.min(Math.max(1, Math.ceil((options.partSize ?? min) / lineBytes)), Math.floor(limits.maxPartBytes / lineBytes));
  // Counted before any part is made: the work follows the parts the store allows, never a count
  // that an old header or a large `rows` would imply.
  const planned = parts.length + Math.ceil((options.rows - row) / per);
  if (planned > limits.maxParts) refuse(`${planned} parts; the store takes at most ${limits.maxParts}: ask for larger parts (partSize)`);
  while (row < options.rows) {
    const n = Math.min(per, options.rows - row);
    parts.push({ number: parts.length + 1, kind: 'upload', offset, length: n * lineBytes, ...region(row, n) });
    offset += n * lineBytes;
    row += n;
  }
  for (const p of parts.slice(0, -1)) {
    if (p.length < min)
      refuse(`part ${p.number} would hold ${p.length} bytes; the store needs every part but the last to hold at least ${min}: ask for larger parts (partSize)`);
    if (p.length > limits.maxPartBytes) refuse(`part ${p.number} would hold ${p.length} bytes; the store takes parts up to ${limits.maxPartBytes}`);
  }
  if (offset !== size) throw new NpyError('INTERNAL', `the append plan covers ${offset} bytes of ${size}`);
  return { descr: dtype.descr, shape, fortranOrder: fortran, header: base64(newHeader), headerBytes: H, size, parts };
}

/**
 * The bytes of one upload part of an append plan: the new header (part 1), the old bytes it carries
 * (read back by the caller from `part.old`, checked for length), then the new rows of its region,
 * from an array of exactly that region. Copy parts have no bytes: the store copies them.
 * @example
 * const body = encodeAppendPart(plan, 1, { old: await readRange(url, plan.parts[0].old), rows });
 */
export function encodeAppendPart(plan: AppendPartPlan, number: number, input: { old?: Uint8Array; rows?: NdArray | ArraySpec }): Uint8Array {
  const part = plan.parts.find((p) => p.number === number);
  if (!part) refuse(`the plan has parts 1 to ${plan.parts.length}, not ${number}`);
  if (part.kind === 'copy')
    refuse(`part ${number} is copied by the store (UploadPartCopy of bytes ${part.old!.offset}–${part.old!.offset + part.old!.length - 1}), not uploaded`);
  const headerBytes = number === 1 ? fromBase64(plan.header) : new Uint8Array(0);
  const oldLength = part.old?.length ?? 0;
  if ((input.old?.length ?? 0) !== oldLength) {
    throw new NpyError(
      'SHAPE_MISMATCH',
      `part ${number} carries ${oldLength} bytes of the old object (bytes ${part.old?.offset ?? 0}–); ${input.old?.length ?? 0} were given`,
    );
  }
  let rows: Uint8Array = new Uint8Array(0);
  if (part.count) {
    if (!input.rows) refuse(`part ${number} carries new rows of shape ${shapeRepr(part.count)}; none were given`);
    rows = regionBytes(plan, { start: part.start!, count: part.count }, input.rows, `part ${number}`);
  } else if (input.rows) refuse(`part ${number} carries no new rows`);
  // A part of new rows alone is their bytes as they are: no copy where they need no swap.
  if (headerBytes.length === 0 && oldLength === 0 && rows.length === part.length) return rows;
  const out = new Uint8Array(headerBytes.length + oldLength + rows.length);
  out.set(headerBytes, 0);
  if (input.old) out.set(input.old, headerBytes.length);
  out.set(rows, headerBytes.length + oldLength);
  if (out.length !== part.length) throw new NpyError('INTERNAL', `part ${number} came to ${out.length} bytes, the plan says ${part.length}`);
  return out;
}

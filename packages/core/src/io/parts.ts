/**
 * A .npy written as the parts of one multipart upload (S3 and its compatibles), by many workers: a
 * plan says which region of the array each part holds (whole rows in C order, whole columns along
 * the last axis in Fortran order) and which bytes of the object it is, within the limits object
 * stores set; each worker encodes its part from its region alone. The plan is JSON, so that workers
 * in other languages (numpy and boto3) can follow it.
 */
import { storageOf } from '../array/layout.js';
import type { NdArray } from '../array/ndarray.js';
import { toOrder } from '../array/order.js';
import { copySwapped } from '../array/memory.js';
import { NpyError } from '../errors.js';
import { type DescrJSON, parseDescr, shapeRepr, shapeSize } from '../format/dtype.js';
import type { DescrInput } from '../format/descr-types.js';
import { encodeHeader } from '../format/header.js';
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

const S3: Required<PartLimits> = { minPartBytes: 5 * 2 ** 20, maxPartBytes: 5 * 2 ** 30, maxParts: 10_000, maxObjectBytes: 5 * 2 ** 40 };

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

/** A multipart plan: JSON, for workers in any language. */
export interface PartPlan {
  descr: DescrJSON;
  shape: number[];
  fortranOrder: boolean;
  /** The .npy header (part 1 starts with it), base64. */
  header: string;
  headerBytes: number;
  /** Bytes of the whole object. */
  size: number;
  parts: PlannedPart[];
}

function refuse(message: string): never {
  throw new NpyError('BAD_OPTION', message);
}

function base64(bytes: Uint8Array): string {
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
  if (lineBytes > limits.maxPartBytes) {
    refuse(
      `one ${fortran ? 'column' : 'row'} is ${lineBytes} bytes, larger than the store's largest part (${limits.maxPartBytes}); write it in ${fortran ? 'C' : 'Fortran'} order, or as several arrays`,
    );
  }
  let per: number;
  if (options.parts !== undefined) {
    if (!Number.isSafeInteger(options.parts) || options.parts < 1) refuse(`parts must be a positive integer, not ${options.parts}`);
    per = Math.ceil(lines / options.parts);
  } else {
    const target = options.partSize ?? limits.minPartBytes;
    if (!(target > 0)) refuse(`partSize must be a positive number of bytes, not ${options.partSize}`);
    per = Math.max(1, Math.ceil(target / lineBytes));
  }
  per = Math.min(per, Math.floor(limits.maxPartBytes / lineBytes));
  const count = Math.ceil(lines / per);
  if (count > limits.maxParts) {
    refuse(`${count} parts of ${per} ${fortran ? 'columns' : 'rows'} each; the store takes at most ${limits.maxParts}: ask for larger parts (partSize)`);
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
 * exactly its region: its dtype and shape are checked against the plan.
 * @example
 * const body = encodePart(plan, 2, rows);   // upload as part 2
 */
export function encodePart(plan: PartPlan, number: number, input: NdArray | ArraySpec): Uint8Array {
  const part = plan.parts.find((p) => p.number === number);
  if (!part) refuse(`the plan has parts 1 to ${plan.parts.length}, not ${number}`);
  const dtype = parseDescr(plan.descr as DescrInput);
  const array = toNdArray(input);
  // Records are written as their bytes are held: their byte order must be the plan's. Numbers are
  // held native and swapped here.
  const fits = array.dtype.equals(dtype) || (dtype.form === 'scalar' && array.dtype.withByteOrder('<').equals(dtype.withByteOrder('<')));
  if (!fits) {
    throw new NpyError('DTYPE_MISMATCH', `part ${number} is ${dtype.descrLiteral}; the array is ${array.dtype.descrLiteral}`);
  }
  if (array.shape.join() !== part.count.join()) {
    throw new NpyError(
      'SHAPE_MISMATCH',
      `part ${number} holds the region of shape ${shapeRepr(part.count)} from ${shapeRepr(part.start)}; the array has shape ${shapeRepr(array.shape)}`,
    );
  }
  const ordered = toOrder(array, plan.fortranOrder ? 'F' : 'C');
  const data = ordered.data as TypedArray;
  let body = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  // In the plan's byte order (the data is native in memory).
  const { swapUnit } = storageOf(dtype);
  if (swapUnit > 1 && !dtype.isNative) body = copySwapped(body, swapUnit);
  const headerBytes = number === 1 ? Uint8Array.from(atob(plan.header), (c) => c.charCodeAt(0)) : new Uint8Array(0);
  const out = new Uint8Array(headerBytes.length + body.length);
  out.set(headerBytes, 0);
  out.set(body, headerBytes.length);
  if (out.length !== part.length) throw new NpyError('INTERNAL', `part ${number} came to ${out.length} bytes, the plan says ${part.length}`);
  return out;
}

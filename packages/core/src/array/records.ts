/** One field of a record array, as a typed array of its own (copied) or a strided view (zero-copy). */
import { allocateBuffer } from './memory.js';
import type { DType, Field } from '../format/dtype.js';
import { NpyError } from '../errors.js';
import type { DescrInput, FieldAt, FieldPath } from '../format/descr-types.js';
import { NdArray, orderStrides } from './ndarray.js';
import { toOrder } from './order.js';
import { bytesToData, storageOf } from './layout.js';
import type { TypedArray } from '../format/js-types.js';

function findField(dtype: DType, name: string): Field {
  if (!dtype.fields) throw new NpyError('NO_FIELD', `dtype ${dtype.str} is not a record, it has no field '${name}'`);
  const f = dtype.fields.find((x) => x.name === name) ?? dtype.fields.find((x) => x.title === name);
  if (!f) {
    throw new NpyError('NO_FIELD', `no field '${name}'; the fields are ${dtype.fields.map((x) => `'${x.name}'`).join(', ')}`);
  }
  return f;
}

/**
 * The fields a dotted path names, outermost first: `'pos.lat'` is field `lat` of field `pos`. A field
 * whose own name holds a dot is found too: at each level the longest leading part of the path that
 * names a field is taken (`'a.b.c'` tries `a.b.c`, then `a.b`, then `a`).
 */
function fieldsOnPath(dtype: DType, path: string): Field[] {
  const parts = path.split('.');
  const steps: Field[] = [];
  let current = dtype;
  for (let i = 0; i < parts.length; ) {
    let found: Field | undefined;
    let used = 0;
    for (let n = parts.length - i; n >= 1 && !found; n--) {
      const name = parts.slice(i, i + n).join('.');
      found = current.fields?.find((x) => x.name === name) ?? current.fields?.find((x) => x.title === name);
      used = n;
    }
    // findField names the field and the fields there are.
    const f = found ?? findField(current, parts[i]!);
    steps.push(f);
    i += found ? used : 1;
    current = fieldElement(f).base;
  }
  return steps;
}

/** Split a field dtype into its element dtype and subarray shape. */
function fieldElement(f: Field): { base: DType; subShape: number[] } {
  return f.dtype.subarray ? { base: f.dtype.subarray.base, subShape: [...f.dtype.subarray.shape] } : { base: f.dtype, subShape: [] };
}

/**
 * The values of one record field (a dotted path reaches nested records: `b.c`) as a native-endian
 * array of shape `array.shape + field subarray shape`. Only that field's bytes are touched.
 * @example
 * const x = getField(points, 'pos.x');   // the field as its own array
 */
export function getField<S extends DescrInput, const P extends FieldPath<S>>(array: NdArray<S>, path: P): NdArray<FieldAt<S, P>> {
  let current: NdArray = array;
  for (const f of fieldsOnPath(array.dtype, path)) current = oneField(current, f);
  return current as NdArray<FieldAt<S, P>>;
}

function oneField(array: NdArray, f: Field): NdArray {
  const { base, subShape } = fieldElement(f);
  // Subarray elements are C-ordered inside each record: gather from a C-ordered record array.
  const src = subShape.length && array.order === 'F' ? toOrder(array, 'C') : array;
  const bytes = src.data as Uint8Array;
  const n = array.size;
  const fsize = f.dtype.itemsize;
  const rec = array.dtype.itemsize;
  const out = new Uint8Array(allocateBuffer(n * fsize));
  for (let r = 0; r < n; r++) out.set(bytes.subarray(r * rec + f.offset, r * rec + f.offset + fsize), r * fsize);
  const count = n * (fsize / (base.itemsize || 1));
  const data = base.itemsize === 0 ? new Uint8Array(0) : bytesToData(base, out.buffer, 0, count);
  return new NdArray(base, [...array.shape, ...subShape], data, subShape.length ? 'C' : src.order);
}

/** A zero-copy strided view of one field: `data[offset + Σ index[a] × strides[a]]` (in typed-array units). */
export interface FieldView {
  dtype: DType;
  shape: number[];
  data: TypedArray;
  /** Offset and strides in units of `data`; a complex element spans 2 units (re, im). */
  offset: number;
  strides: number[];
}

/**
 * A strided view of one field over the record array's own memory, or null when the layout does
 * not allow one (non-native byte order, an offset or record size not a multiple of the element
 * size, an element kind held as raw bytes or code points that need decoding, or a path through a
 * subarray of records). The field is named by a dotted path, as for {@link getField}.
 * @example
 * const v = fieldView(records, 'pos.lat');   // strides into the record bytes, or null
 */
export function fieldView(array: NdArray, path: string): FieldView | null {
  const v = fieldViewOrWhyNot(array, path);
  return typeof v === 'string' ? null : v;
}

/**
 * {@link fieldView}, or, where the layout allows no view, why not (a phrase: "its offset 3 is not a
 * multiple of 8 bytes (a packed record)").
 * @example
 * const v = fieldViewOrWhyNot(records, 'x');   // "'>f8' is not in this machine's byte order"
 */
export function fieldViewOrWhyNot(array: NdArray, path: string): FieldView | string {
  const steps = fieldsOnPath(array.dtype, path);
  const f = steps.at(-1)!;
  if (steps.slice(0, -1).some((s) => s.dtype.subarray)) return 'its path goes through a subarray of records';
  const fieldOffset = steps.reduce((sum, s) => sum + s.offset, 0);
  const { base, subShape } = fieldElement(f);
  if (base.fields) return 'it is a record (its fields can be views)';
  if (base.kind === 'O') return 'it holds Python objects';
  if (!base.isNative) return `'${base.str}' is not in this machine's byte order`;
  const { ctor, unitsPerItem } = storageOf(base);
  const bpe = ctor.BYTES_PER_ELEMENT;
  const bytes = array.data as Uint8Array;
  const rec = array.dtype.itemsize;
  if ((bytes.byteOffset + fieldOffset) % bpe !== 0) return `its offset ${fieldOffset} is not a multiple of ${bpe} bytes (a packed record)`;
  if (rec % bpe !== 0) return `the record size ${rec} is not a multiple of ${bpe} bytes (a packed record)`;
  const recUnits = rec / bpe;
  const outer = orderStrides(array.shape, array.order).map((s) => s * recUnits);
  const inner = orderStrides(subShape, 'C').map((s) => s * unitsPerItem);
  const data = new ctor(bytes.buffer, bytes.byteOffset, Math.floor(bytes.byteLength / bpe)) as TypedArray;
  return { dtype: base, shape: [...array.shape, ...subShape], data, offset: fieldOffset / bpe, strides: [...outer, ...inner] };
}

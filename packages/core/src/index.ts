/**
 * `@npyts/core` — NumPy .npy for JavaScript, in browsers and Node alike (no Node built-ins here;
 * file helpers are in `@npyts/core/node`).
 * @module @npyts/core
 */
export { NpyError, type NpyErrorCode, type NpyErrorDetails } from './errors.js';
export {
  DType,
  DTypeBase,
  ScalarDType,
  SubarrayDType,
  RecordDType,
  parseDescr,
  parseTypeString,
  recordDType,
  subarrayDType,
  shapeSize,
  shapeRepr,
  NATIVE_ORDER,
  DATETIME_UNITS,
  type ByteOrder,
  type Kind,
  type Field,
  type FieldSpec,
  type Subarray,
  type DescrJSON,
  type DescrFieldJSON,
  type DatetimeUnit,
} from './format/dtype.js';
export {
  readHeader,
  encodeHeader,
  headerBytesNeeded,
  matchesDescr,
  MAGIC,
  MAX_DIMS,
  DEFAULT_MAX_HEADER_BYTES,
  type NpyHeader,
  type FormatVersion,
  type ReadHeaderOptions,
} from './format/header.js';
export { matchDType, familyOf, type DTypeCases } from './format/dtype-cases.js';
export { putOwn } from './array/safe-object.js';
export { NdArray, orderStrides, isOrderFree, createArray, type Order, type CreateArrayOptions } from './array/ndarray.js';
export type {
  DescrInput,
  FieldDescr,
  FieldName,
  StorageOf,
  ElementOf,
  InputOf,
  Nested,
  FieldPath,
  FieldAt,
  KindFamily,
  KindFamilies,
  FamilyOf,
} from './format/descr-types.js';
export { toOrder, transpose } from './array/order.js';
export { getField, fieldView, type FieldView } from './array/records.js';
export { withByteOrder } from './array/byte-order.js';
export {
  decodeNpy,
  decodeNpyWithHeader,
  encodeNpy,
  encodeNpyParts,
  toNdArray,
  dtypeOfTypedArray,
  hasObject,
  checkDataSize,
  isDType,
  type Expecting,
  type DecodeOptions,
  type EncodeOptions,
  type ArraySpec,
  type ObjectArrayCodec,
  type UnpickleLimits,
} from './npy.js';
export { arrayFromValues, writeValue, type ValuesOptions } from './array/write-value.js';
export { readItem, readFromBytes, NOT_A_TIME, type Scalar, type ScalarRecord } from './array/read-value.js';
export { storageOf, bytesToData, dataToBytes, type Storage } from './array/layout.js';
export type { TypedArray, TypedArrayConstructor, ArrayData, Complex } from './format/js-types.js';
export { float16ToNumber, numberToFloat16, longDoubleToNumber, longDoubleIsNumber, numberToLongDouble } from './format/float-bits.js';
export { jsonValue, arrayToJSON, npyDocument, pythonJSON, decimalText, MAX_INT_DIGITS } from './array/json.js';
export { parsePyLiteral, reprPy, reprString, reprFloat, reprBytes, PyTuple, PyFloat, type PyValue } from './format/literal.js';
export { decodeNpz, encodeNpz, writeNpz, npzMembers, NpzArchive, type NpzOptions, type NpzInput, type NpzWriteOptions } from './npz/archive.js';
export {
  readZipEntries,
  readZipEntry,
  entryDataOffset,
  memorySource,
  ZipWriter,
  MemorySink,
  STORED,
  DEFLATED,
  type ByteSource,
  type ZipCodec,
  type ZipEntry,
  type ZipSink,
  type ZipWriteOptions,
} from './npz/zip.js';
export { fflateCodec } from './npz/fflate.js';
export { crc32 } from './npz/crc32.js';
export {
  planRegion,
  groupRuns,
  placeGroup,
  checkRegion,
  regionArray,
  readRegionFromBytes,
  type ByteRun,
  type RegionPlan,
  type RunGroup,
  type GroupLimits,
  type OpenNpy,
} from './io/region.js';
export { readNpy, writeNpy, type ChunkSink, type ChunkSource } from './io/stream.js';
export { openNpyUrl, type NpyUrlHandle, type UrlOptions } from './io/url.js';
export { openNpy, openNpySource, resolveUrl, type NpyReader, type NpySource } from './io/open.js';
export { openNpyAccessHandle, createNpyAccessHandle, appendNpyAccessHandle, type SyncAccessHandle } from './io/access-handle.js';
export type { NpyFileHandleSync, CreateOptions, AsyncOptions } from './io/handles.js';
export { blobSource, bytesSource, withByteCache, type RandomAccess, type ReadStats, type ByteCacheOptions } from './io/random-access.js';
export {
  RAGGED_TAG,
  raggedIndexDType,
  raggedInfo,
  heapUrlOf,
  widthFor,
  type RaggedInfo,
  type RaggedKind,
  type RaggedLayout,
  type RaggedElement,
  type WordWidth,
} from './ragged/convention.js';
export {
  openRaggedUrl,
  openRaggedWith,
  type RaggedFacts,
  type RaggedReader,
  type RaggedPart,
  type RaggedUrlOptions,
  type RaggedUrlReader,
} from './ragged/readers.js';

/**
 * @npyts/core — NumPy .npy for JavaScript, in browsers and Node alike (no Node built-ins here;
 * file helpers are in `@npyts/core/node`).
 */
export { NpyError, type NpyErrorCode, type NpyErrorDetails } from './errors.js';
export {
  DType, parseDescr, parseTypeString, recordDType, subarrayDType, shapeSize, shapeRepr, NATIVE_ORDER, DATETIME_UNITS,
  type ByteOrder, type Kind, type Field, type FieldSpec, type DescrJSON, type DescrFieldJSON, type DatetimeUnit,
} from './dtype.js';
export { readHeader, encodeHeader, headerBytesNeeded, matchesDescr, MAGIC, MAX_DIMS, type NpyHeader, type FormatVersion, type ReadHeaderOptions } from './header.js';
export { NdArray, orderStrides, isOrderFree, createArray, type Order, type CreateArrayOptions } from './ndarray.js';
export type { DescrInput, FieldDescr, FieldName, StorageOf, ElementOf, InputOf, Nested, FieldPath, FieldAt, KindFamily, KindFamilies, FamilyOf } from './descr-types.js';
export { toOrder } from './order.js';
export { getField, fieldView, type FieldView } from './records.js';
export { withByteOrder } from './byteorder.js';
export {
  decodeNpy, decodeNpyWithHeader, encodeNpy, encodeNpyParts, toNdArray, dtypeOfTypedArray, hasObject, checkDataSize, isDType, type Expecting,
  type DecodeOptions, type EncodeOptions, type ArraySpec, type ObjectArrayCodec, type UnpickleLimits,
} from './codec.js';
export { arrayFromValues, writeValue, type ValuesOptions } from './values.js';
export { readItem, readFromBytes, NOT_A_TIME, type Scalar, type ScalarRecord, type Complex } from './elements.js';
export { storageOf, bytesToData, dataToBytes, type TypedArray, type ArrayData, type Storage } from './storage.js';
export { float16ToNumber, numberToFloat16, longDoubleToNumber, numberToLongDouble } from './scalars.js';
export { jsonValue, arrayToJSON, npyDocument, pythonJSON } from './json.js';
export { parsePyLiteral, reprPy, reprString, PyTuple, PyFloat, type PyValue } from './pyliteral.js';
export { decodeNpz, encodeNpz, writeNpz, npzMembers, NpzArchive, type NpzOptions, type NpzInput, type NpzWriteOptions } from './npz.js';
export {
  readZipEntries, readZipEntry, entryDataOffset, memorySource, ZipWriter, MemorySink, STORED, DEFLATED,
  type ByteSource, type ZipCodec, type ZipEntry, type ZipSink, type ZipWriteOptions,
} from './zip.js';
export { fflateCodec } from './fflate-codec.js';
export { crc32 } from './crc32.js';
export { planRegion, groupRuns, placeGroup, checkRegion, regionArray, readRegionFromBytes, type ByteRun, type RegionPlan, type RunGroup, type GroupLimits } from './region.js';
export { readNpy, writeNpy, type ChunkSink } from './stream.js';
export { openNpyUrl, openNpyUrl as openNpy, type NpyUrlHandle, type UrlOptions } from './url.js';
export { RAGGED_TAG, raggedIndexDType, raggedInfo, openRaggedUrl, heapUrlOf, type RaggedUrlOptions, type RaggedInfo, type RaggedKind, type RaggedElement, type RaggedUrlReader } from './ragged.js';

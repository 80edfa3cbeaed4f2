/**
 * `@npyts/core` — NumPy .npy and .npz for JavaScript, in browsers and Node alike (no Node built-ins
 * here; files are in `@npyts/core/node`, object arrays in `@npyts/core/pickle`, and the parts the
 * format is built from in `@npyts/core/plumbing`).
 * @module @npyts/core
 */
export { NpyError, type NpyErrorCode, type NpyErrorDetails } from './errors.js';
export type { LoadProgress, OnProgress } from './progress.js';
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
  mlFloatDType,
  voidAsMlFloat,
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
export { readHeader, DEFAULT_MAX_HEADER_BYTES, type NpyHeader, type FormatVersion, type ReadHeaderOptions } from './format/header.js';
export { matchDType, familyOf, type DTypeCases } from './format/dtype-cases.js';
export { NdArray, createArray, type Order, type CreateArrayOptions } from './array/ndarray.js';
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
export { getField, fieldView, fieldViewOrWhyNot, type FieldView } from './array/records.js';
export { withByteOrder } from './array/byte-order.js';
export {
  decodeNpy,
  decodeNpyWithHeader,
  encodeNpy,
  hasObject,
  isDType,
  type Expecting,
  type DecodeOptions,
  type EncodeOptions,
  type ArraySpec,
  type ObjectArrayCodec,
  type UnpickleLimits,
} from './npy.js';
export { arrayFromValues, type ValuesOptions } from './array/from-values.js';
export { readItem, NOT_A_TIME, type Scalar, type ScalarRecord } from './array/read-value.js';
export { datetimeText, parseDatetimeText, datetimeToDate } from './format/datetime-text.js';
export type { TypedArray, TypedArrayConstructor, ArrayData, Complex } from './format/js-types.js';
export { float16ToNumber, numberToFloat16, longDoubleToNumber, longDoubleIsNumber, numberToLongDouble } from './format/float-bits.js';
export { ML_FLOATS, mlFloatToNumber, numberToMlFloat, mlFloatsToFloat32, isMlFloatName, type MlFloatName } from './format/ml-floats.js';
export { toFloat32 } from './array/widen.js';
export { arrayToJSON } from './array/json.js';
export {
  decodeNpz,
  encodeNpz,
  NpzArchive,
  type NpzOptions,
  type NpzReadOptions,
  type NpzInput,
  type NpzWriteOptions,
  type MemberBytesOptions,
} from './npz/archive.js';
export { openNpz, type NpzSource, type OpenNpzOptions } from './npz/open.js';
export {
  planParts,
  encodePart,
  planAppendParts,
  encodeAppendPart,
  type PartPlan,
  type PlannedPart,
  type PlanPartsOptions,
  type PartLimits,
  type AppendPart,
  type AppendPartPlan,
  type ObjectPlan,
  type PlanAppendPartsOptions,
} from './io/parts.js';
export {
  planNpzParts,
  encodeNpzPart,
  combineNpzChecksums,
  type NpzPartPlan,
  type NpzPlannedPart,
  type NpzPlannedMember,
  type NpzPiece,
  type NpzMemberSpec,
  type PlanNpzPartsOptions,
  type EncodedNpzPart,
  type MemberChecksum,
} from './npz/parts.js';
export { SafetensorsFile, type TensorInfo, type TensorReadOptions } from './safetensors/file.js';
export { openSafetensors } from './safetensors/open.js';
export { ShardedWeights, ShardedSafetensors, parseShardIndex, type ShardIndex, type OpenShard } from './weights/sharded.js';
export type { TensorFile, FormatOptions, TensorExtent, GetAllReadOptions } from './weights/tensor-file.js';
export { weightFormats, formatOf, SNIFF_BYTES, type WeightFormatEntry } from './weights/formats.js';
export type { ResolveHook, SiblingAnswer } from './weights/place.js';
export { urlStore, hookStore } from './weights/place.js';
export type { ReadStore, WriteStore, Store, StoreWriter, StoreLock, StoreOpenOptions, EditStore, StoreEditor } from './store/types.js';
export { appendNpy, type StoreAppendOptions } from './store/append.js';
export {
  saveRagged,
  appendRagged,
  openRagged,
  type RaggedStore,
  type StoreSaveRaggedOptions,
  type StoreAppendRaggedOptions,
  type StoreOpenRaggedOptions,
} from './store/ragged.js';
export { memoryStore } from './store/memory.js';
export { opfsStore, type OpfsDirectoryHandle, type OpfsFileHandle } from './store/opfs.js';
export {
  saveNpy,
  loadNpy,
  saveNpz,
  saveSafetensors,
  type StoreSaveOptions,
  type StoreLoadOptions,
  type StoreSaveNpzOptions,
  type StoreSaveSafetensorsOptions,
} from './store/entries.js';
export type { SafetensorsSource } from './safetensors/save.js';
export { GgufFile, ggufFormat, type GgufTensorInfo } from './gguf/file.js';
export type { GgufValueType } from './gguf/header.js';
export { openGguf } from './gguf/open.js';
export {
  encodeGguf,
  ggufParts,
  GGUF_WRITE_TYPES,
  GGUF_FILE_TYPES,
  type GgufInput,
  type GgufMetadataInput,
  type GgufParts,
  type GgufWriteOptions,
  type GgufWriteType,
} from './gguf/encode.js';
export { Hdf5File, Hdf5Group, Hdf5Dataset, type Hdf5AttributeValue, type Hdf5ReadOptions } from './hdf5/file.js';
export { openHdf5 } from './hdf5/open.js';
export { encodeHdf5, type Hdf5GroupInput, type Hdf5DatasetInput, type Hdf5AttributeInput } from './hdf5/write.js';
export { KerasFile, type KerasMetadata } from './keras/file.js';
export { hdf5Format, isKerasArchive, isKerasShardMap, kerasShardMap, type KerasShardMap } from './keras/format.js';
export { KerasShardedWeights } from './keras/sharded.js';
export { isHdf5 } from './hdf5/signature.js';
export {
  openWeights,
  weightsOfArchive,
  weightFileKind,
  WeightFile,
  type WeightFormat,
  type WeightFileKind,
  type OpenWeightsOptions,
  type GetAllOptions,
} from './weights/open.js';
export { isTorchArchive } from './torch/layout.js';
export { mergeLora, type MergeLoraOptions, type LoraAdapterParts } from './lora/merge.js';
export { referencesOf, type ReferenceSet, type Reference, type ReferenceOptions } from './refs/references.js';
export {
  encodeSafetensors,
  safetensorsParts,
  safetensorsLayout,
  type SafetensorsEntry,
  type SafetensorsInput,
  type SafetensorsLayout,
  type SafetensorsParts,
  type SafetensorsWriteOptions,
} from './safetensors/encode.js';
export { planShards, parseShardSize, type ShardEntry, type ShardPlan } from './safetensors/shards.js';
export type { CrcOptions, ZipCodec, ZipEntry, ZipWriteOptions } from './npz/zip.js';
export { fflateCodec } from './npz/fflate.js';
export { readNpy, writeNpy, type ChunkSink, type ChunkSource } from './io/stream.js';
export { openNpyUrl, urlSource, type NpyUrlHandle, type UrlOptions, type HttpOptions } from './io/url.js';
export { redactUrls } from './io/redact.js';
export { openNpy, openNpySource, type NpyReader, type NpyReadStats, type NpySource, type NpySourceOptions, type OpenNpyOptions } from './io/open.js';
export { openNpyAccessHandle, createNpyAccessHandle, appendNpyAccessHandle, type SyncAccessHandle } from './io/access-handle.js';
export type { NpyFileHandleSync, CreateOptions, AsyncOptions } from './io/handles.js';
export {
  blobSource,
  bytesSource,
  windowSource,
  withByteCache,
  type ByteSource,
  type SyncByteSource,
  type AsyncByteSource,
  type ReadOptions,
  type ReadStats,
  type ByteCacheOptions,
} from './io/byte-source.js';
export { raggedInfo, type RaggedInfo, type RaggedKind, type RaggedLayout, type RaggedElement, type WordWidth } from './ragged/convention.js';
export {
  openRaggedUrl,
  openRaggedWith,
  type RaggedFacts,
  type RaggedReader,
  type RaggedPart,
  type RaggedUrlOptions,
  type RaggedUrlReader,
} from './ragged/readers.js';

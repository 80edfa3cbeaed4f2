/**
 * `@npyts/core/plumbing` — the parts the format is built from, for tools that work on the format
 * itself rather than on arrays: header encoding and Python literals, storage conversions, the zip
 * container, region plans, documents and the ragged convention's words. Reading and writing arrays
 * needs none of it (see `@npyts/core`).
 * @module @npyts/core/plumbing
 */
export { encodeHeader, headerBytesNeeded, matchesDescr, MAGIC, MAX_DIMS } from './format/header.js';
export { putOwn } from './array/safe-object.js';
export { HTTP_KEYS } from './io/url.js';
export { progressReporter, type ProgressReporter } from './progress.js';
export { dtypeConstructionRepr } from './format/dtype.js';
export {
  checkNumber,
  checkNumbers,
  checkReadOptions,
  pickOptions,
  COUNT,
  AMOUNT,
  SIZE,
  TOLERANCE,
  LIMIT,
  MILLISECONDS,
  LEVEL_RULES,
  checkOptions,
  knownKeys,
  type KnownKeys,
  type NumberRule,
  type NumberRules,
} from './options.js';
export { orderStrides, isOrderFree } from './array/ndarray.js';
export { encodeNpyParts, toNdArray, dtypeOfTypedArray, checkDataSize } from './npy.js';
export { writeValue } from './array/write-value.js';
export { unicodeWidth } from './array/from-values.js';
export { readFromBytes, readExactItem } from './array/read-value.js';
export { storageOf, bytesToData, dataToBytes, type Storage } from './array/layout.js';
export { closeness, indexInShape, type Closeness, type CloseFailure } from './array/closeness.js';
export { jsonValue, npyDocument, pythonJSON, decimalText, MAX_INT_DIGITS, MAX_JSON_DEPTH, nestsDeeperThan } from './array/json.js';
export { parsePyLiteral, reprPy, reprString, reprFloat, reprBytes, hasLoneSurrogate, PyTuple, PyFloat, type PyValue } from './format/literal.js';
export { writeNpz, npzMembers } from './npz/archive.js';
export { readZipEntries, readZipEntry, entryDataOffset, ZipWriter, MemorySink, STORED, DEFLATED, type ZipSink } from './npz/zip.js';
export { crc32, crc32Combine } from './npz/crc32.js';
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
export { resolveUrl, inNode, namesFile, sourceOf } from './io/open.js';
export { extentsOf } from './refs/references.js';
export { mapInParallel, settleAll } from './io/settle.js';
export {
  shortestDigits,
  shortestFloatText,
  numpyScalarText,
  exactExponent,
  scaledRound,
  longDoubleExact,
  compareMagnitudes,
  exactDistance,
  withinTolerance,
  roundedLongDouble,
  longDoubleOfDecimal,
  writeLongDoubleExact,
  withinToleranceComplex,
  complexDistances,
  type ExactComplex,
  type ExactFloat,
} from './format/float-text.js';
export { RAGGED_TAG, raggedIndexDType, heapUrlOf, widthFor } from './ragged/convention.js';
export { openTensorFile } from './weights/formats.js';
export { siblingUrl } from './weights/place.js';
export { checkSiblingName, checkKey, openKey } from './store/key.js';
export { OPEN_WEIGHTS_KEYS } from './weights/open.js';
export { OPEN_NPZ_KEYS } from './npz/open.js';
export { NPZ_WRITE_KEYS } from './npz/archive.js';
export { tensorsOfArchive, zipFormat } from './weights/zip-format.js';
export { safetensorsFormat } from './safetensors/format.js';

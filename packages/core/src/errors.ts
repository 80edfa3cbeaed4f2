/** Stable machine-readable reasons for an {@link NpyError}. */
export type NpyErrorCode =
  | 'BAD_MAGIC'
  | 'UNSUPPORTED_VERSION'
  | 'TRUNCATED'
  | 'HEADER_SYNTAX'
  | 'HEADER_NOT_DICT'
  | 'HEADER_KEYS'
  | 'BAD_SHAPE'
  | 'BAD_FORTRAN_ORDER'
  | 'BAD_DESCR'
  | 'DATA_TRUNCATED'
  | 'SIZE_OVERFLOW'
  | 'PICKLE_UNSUPPORTED'
  | 'BAD_ARRAY'
  | 'HEADER_TOO_LARGE'
  | 'ZIP_FORMAT'
  | 'ZIP_UNSUPPORTED'
  | 'ZIP_CRC'
  | 'ZIP_SIZE'
  | 'NPZ_KEY'
  | 'TOO_LARGE'
  | 'LOCKED'
  | 'UNEXPECTED_DTYPE'
  | 'UNSAFE_PATH'
  /** An object dtype where data is written in place (its data is a pickle, not fixed-size slots). */
  | 'OBJECT_IN_PLACE'
  /** A path that is not a regular file (a FIFO, a device, a directory) where a file is read or written. */
  | 'NOT_A_FILE'
  /** A request failed (no answer, a reset connection, a redirect loop) or a URL is not one. */
  | 'NETWORK'
  /** A ragged index names a heap that is not there. */
  | 'NO_HEAP'
  /** A model document (model.json) that is not what tfjs reads: not UTF-8 or JSON, fields of the wrong type, nested too deep. */
  | 'BAD_MODEL'
  /** A value that the requested form cannot hold exactly (a long double past float64, shown or compared). */
  | 'NOT_REPRESENTABLE'
  /** Model weights and an archive disagree (names, shapes, dtypes): every mismatch is listed. */
  | 'WEIGHT_MISMATCH'
  /** A tfjs layer whose configuration cannot compute what the PyTorch module it is given computes (an epsilon, an activation, a GRU, a grouped convolution). */
  | 'LAYER_CONFIG'
  /** A model's predictions differ from the reference outputs an archive carries (check/output.npy) by more than the tolerance. */
  | 'CHECK_FAILED';

/** Where an error was found: the file, byte offset, field or archive member, when known. */
export interface NpyErrorDetails {
  /** Byte offset in the input where the problem was found. */
  offset?: number;
  /** Path of the record field involved, e.g. `b.c`. */
  field?: string;
  /** Archive member involved. */
  member?: string;
}

/**
 * The one error type npyts throws for malformed input or unrepresentable arrays.
 * @example
 * try { decodeNpy(bytes); } catch (e) { if (e instanceof NpyError && e.code === 'DATA_TRUNCATED') console.log(e.offset); }
 */
export class NpyError extends Error {
  readonly code: NpyErrorCode;
  readonly offset: number | undefined;
  readonly field: string | undefined;

  constructor(code: NpyErrorCode, message: string, details: NpyErrorDetails = {}) {
    const where: string[] = [];
    if (details.offset !== undefined) where.push(`at byte ${details.offset}`);
    if (details.field !== undefined) where.push(`in field '${details.field}'`);
    if (details.member !== undefined) where.push(`in member '${details.member}'`);
    super(where.length ? `${message} (${where.join(', ')})` : message);
    this.name = 'NpyError';
    this.code = code;
    this.offset = details.offset;
    this.field = details.field;
  }
}

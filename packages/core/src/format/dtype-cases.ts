/**
 * The one dispatch over dtypes. Every operation that treats dtypes differently (storage layout,
 * reading and writing an element, JSON, printing, the adapters) names a case for each form and
 * kind family, so adding a kind is one compile error per operation rather than a hunt through
 * `switch (kind)` statements.
 */
import type { KindFamily } from './descr-types.js';
import type { DType, Field, RecordDType, ScalarDType, SubarrayDType } from './dtype.js';

/** A handler per form: records, subarrays, then one per kind family of plain dtypes. */
export type DTypeCases<R> = {
  record(dtype: RecordDType, fields: readonly Field[]): R;
  subarray(dtype: SubarrayDType, base: DType, shape: readonly number[]): R;
} & { [F in Exclude<KindFamily, 'record'>]: (dtype: ScalarDType) => R };

const FAMILY: Record<string, Exclude<KindFamily, 'record' | 'mlfloat'>> = {
  b: 'bool',
  i: 'int',
  u: 'uint',
  f: 'float',
  c: 'complex',
  S: 'bytes',
  U: 'str',
  V: 'void',
  M: 'datetime',
  m: 'timedelta',
  O: 'object',
};

/**
 * Call the handler for the dtype's form (record, subarray) or kind family.
 * @example
 * const bits = matchDType(dtype, { record: () => 0, subarray: () => 0, bool: () => 8, int: (d) => d.itemsize * 8,
 *   uint: (d) => d.itemsize * 8, float: (d) => d.itemsize * 8, complex: (d) => d.itemsize * 8, bytes: () => 0, str: () => 0,
 *   void: () => 0, datetime: () => 64, timedelta: () => 64, object: () => 0, mlfloat: (d) => d.itemsize * 8 });
 */
export function matchDType<R>(dtype: DType, cases: DTypeCases<R>): R {
  switch (dtype.form) {
    case 'record':
      return cases.record(dtype, dtype.fields);
    case 'subarray':
      return cases.subarray(dtype, dtype.subarray.base, dtype.subarray.shape);
    case 'scalar':
      return dtype.mlFloat ? cases.mlfloat(dtype) : cases[FAMILY[dtype.kind]!](dtype);
  }
}

/**
 * `make` run once per dtype and remembered (dtypes are immutable): element readers, writers and
 * converters are built with {@link matchDType} once, so the dispatch is not paid per element.
 * @example
 * const readerOf = perDType((dt) => makeReader(dt));
 */
export function perDType<T>(make: (dtype: DType) => T): (dtype: DType) => T {
  const made = new WeakMap<DType, T>();
  return (dtype) => {
    let value = made.get(dtype);
    if (value === undefined) made.set(dtype, (value = make(dtype)));
    return value;
  };
}

/**
 * The kind family of a dtype: `'float'` for `<f4`, `'record'` for a record; a subarray is `'void'`.
 * @example
 * familyOf(parseDescr('<f4'));   // 'float'
 * familyOf(parseDescr([['a', '<i4']]));   // 'record'
 */
export function familyOf(dtype: DType): KindFamily {
  return dtype.fields ? 'record' : dtype.subarray ? 'void' : dtype.mlFloat ? 'mlfloat' : FAMILY[dtype.kind]!;
}

/**
 * Objects keyed by names that come from a file (dict keys, record field names). A plain
 * `obj[key] = v` with the key `'__proto__'` would change the object's prototype instead of adding
 * a property; these define own properties whatever the key.
 */

/**
 * Set `key` as an own, enumerable property (never through a setter or the prototype).
 * @example
 * const o: Record<string, unknown> = {};
 * putOwn(o, '__proto__', 1);   // an own property, the prototype untouched
 */
export function putOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

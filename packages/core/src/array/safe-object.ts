/**
 * Objects keyed by names that come from a file (dict keys, record field names). A plain
 * `obj[key] = v` with the key `'__proto__'` would change the object's prototype instead of adding
 * a property; these define own properties whatever the key.
 */
import { NpyError } from '../errors.js';
import { hasLoneSurrogate } from '../format/literal.js';

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

/**
 * An object for names given by the user or a file, with no prototype: `o['__proto__'] = v` is then
 * an own property like any other (a JSON header built on it keeps every name).
 * @example
 * const header = namedObject<unknown>();
 * header['__proto__'] = 1;
 * JSON.stringify(header);   // '{"__proto__":1}'
 */
export function namedObject<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

/**
 * Refuse (BAD_OPTION) a name to be written that is not well-formed Unicode (a lone surrogate): UTF-8
 * cannot hold it, so it would be written as U+FFFD (two names becoming one) or as a `\ud800`
 * escape that Python refuses. The one check of every writer's names (zip members, tensor names).
 * @example
 * checkWrittenName('w\ud800', 'tensor name');   // throws NpyError BAD_OPTION
 */
export function checkWrittenName(name: string, what: string): void {
  if (hasLoneSurrogate(name)) {
    // JSON.stringify writes a lone surrogate as its escape, so the message shows which name.
    throw new NpyError(
      'BAD_OPTION',
      `${what} ${JSON.stringify(name)} holds a lone surrogate, which UTF-8 cannot hold (files would not read it back): give a well-formed name`,
    );
  }
}

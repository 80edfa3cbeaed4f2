/**
 * A check JSON.parse does not make: no object names one key twice. JSON.parse keeps the last of two
 * equal keys without a word, so a header that says two things about one tensor would be read as one
 * of them; it is refused instead. One pass over the text, no recursion (nesting depth costs nothing).
 */
import { NpyError } from '../errors.js';

/**
 * Refuse (`BAD_SAFETENSORS`) JSON text in which an object has a key twice (`"a"` and `"\u0061"` are
 * the same key). Text that is not JSON passes here and is refused by the parse that follows.
 * @example
 * checkNoDuplicateKeys('{"a": 1, "a": 2}', 8);   // throws, naming 'a'
 */
export function checkNoDuplicateKeys(text: string, baseOffset = 0): void {
  // One entry per open bracket: the keys of an object, null for an array.
  const open: (Set<string> | null)[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b /* { */) open.push(new Set());
    else if (c === 0x5b /* [ */) open.push(null);
    else if (c === 0x7d /* } */ || c === 0x5d /* ] */) open.pop();
    else if (c === 0x22 /* " */) {
      const start = i;
      let escaped = false;
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) {
        if (text.charCodeAt(i) === 0x5c /* \ */) {
          escaped = true;
          i++;
        }
      }
      const keys = open.at(-1);
      if (!keys) continue;
      let j = i + 1;
      // JSON's whitespace: space, tab, line feed, carriage return.
      for (let w = text.charCodeAt(j); w === 0x20 || w === 0x09 || w === 0x0a || w === 0x0d; w = text.charCodeAt(++j));
      if (text.charCodeAt(j) !== 0x3a /* : */) continue;
      let key: string;
      if (!escaped) key = text.slice(start + 1, i);
      else {
        try {
          key = JSON.parse(text.slice(start, i + 1)) as string;
        } catch {
          return; // not JSON: the parse reports it
        }
      }
      if (keys.has(key)) {
        throw new NpyError('BAD_SAFETENSORS', `the header names '${key}' twice; which one is meant cannot be told (write each key once)`, {
          offset: baseOffset + new TextEncoder().encode(text.slice(0, start)).length,
        });
      }
      keys.add(key);
    }
  }
}

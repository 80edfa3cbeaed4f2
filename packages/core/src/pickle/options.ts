/**
 * Object arrays in files, one rule for .npy and .npz, as numpy has it: saves write them (as a
 * pickle, like `np.save` and `np.savez`), loads decode them only when asked (`allowPickle`, like
 * `np.load(allow_pickle=True)`), with npyts' safe unpickler, which never runs code.
 */
import type { ObjectArrayCodec } from '../npy.js';
import { pickleCodec } from './index.js';

/** The object-array options every file function of `@npyts/core/node` takes. */
export interface PickleOptions {
  /** The codec of object arrays (default: npyts' safe pickle codec where object arrays are allowed). */
  pickle?: ObjectArrayCodec | undefined;
  /** Decode object arrays when loading (numpy's `allow_pickle`); saves write them either way. */
  allowPickle?: boolean | undefined;
}

/** The codec a load decodes object arrays with: the one given, the safe one when allowed, else none (they are refused). */
export function loadCodec(options: PickleOptions): ObjectArrayCodec | undefined {
  return options.pickle ?? (options.allowPickle ? pickleCodec : undefined);
}

/** The codec a save writes object arrays with: the one given, else the safe one (numpy's np.save and np.savez pickle them). */
export function saveCodec(options: PickleOptions): ObjectArrayCodec {
  return options.pickle ?? pickleCodec;
}

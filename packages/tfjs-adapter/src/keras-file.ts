/**
 * Keras's files opened as a model config, its records and its weights by path: a `.keras` zip (its
 * `config.json` and `model.weights.h5`), a `.weights.h5` (`model.save_weights`) and a legacy `.h5`
 * (`model.save('m.h5')`, Keras 2 and 3), read with core's HDF5 reader.
 */
import { NpyError, WeightFile, openHdf5, parseDescr, type Hdf5Dataset, type Hdf5File, type Hdf5Group, type NdArray, type TensorFile } from '@npyts/core';
import type { KerasRecords } from './keras-weights.js';
import { inNode, nodeEntry, openArchive, type NpzSource, type SourceOptions } from './sources.js';

/** An opened Keras file: its model config (null for weights only), what it records of its layers, its weights by path. */
export interface KerasFile {
  readonly config: unknown;
  readonly records: KerasRecords;
  /** The weights by their path in the HDF5 file (`layers/dense/vars/0`). */
  readonly weights: WeightFile;
}

/** Most groups a Keras file's walk visits: far past any model (ResNet50's file has about 800). */
const MAX_GROUPS = 100_000;
/** HDF5's signature, the first bytes of a `.h5`. */
const HDF5_MAGIC = [0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a];

/**
 * What a Keras weight file records of its layers, from its metadata (`layers`: each `vars` group's
 * layer name by the group's path, or a legacy file's layer groups), or undefined for other files.
 */
export function kerasRecordsOf(file: WeightFile): KerasRecords | undefined {
  const layers = (file.metadata as { layers?: unknown }).layers;
  if (file.format !== 'keras' || typeof layers !== 'object' || layers === null) return undefined;
  const groups = Object.entries(layers as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === 'string');
  const keys = file.names;
  if (groups.some(([g]) => g === 'vars' || g.endsWith('/vars'))) {
    // Keras 3: 'layers/dense/vars' names the layer whose group is 'layers/dense'.
    return { keys, layers: new Map(groups.filter(([g]) => g.endsWith('/vars')).map(([g, name]) => [g.slice(0, -'/vars'.length), name])) };
  }
  // Legacy: a layer's weights are the datasets below its group, in its weight_names' order (the file's).
  return { keys, legacy: new Map(groups.map(([g, name]) => [name, keys.filter((k) => k.startsWith(`${g}/`))])) };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new NpyError('BAD_MODEL', `${where} is not JSON: ${(e as Error).message}`);
  }
}

/** Whether a source names a Keras file by its name (`.keras`, `.h5`, `.hdf5`) or starts with HDF5's signature. */
export function isKerasSource(source: unknown): boolean {
  if (typeof source === 'string' || source instanceof URL) return /\.(keras|h5|hdf5)$/i.test(new URL(String(source), 'file:///').pathname);
  if (typeof File !== 'undefined' && source instanceof File) return /\.(keras|h5|hdf5)$/i.test(source.name);
  const bytes = source instanceof ArrayBuffer ? new Uint8Array(source, 0, Math.min(8, source.byteLength)) : source instanceof Uint8Array ? source : null;
  return bytes !== null && bytes.length >= 8 && HDF5_MAGIC.every((b, i) => bytes[i] === b);
}

/** An HDF5 file from a source: a path in Node through core's file source, anything else as core opens it. */
async function openH5(source: Exclude<NpzSource, { entries: unknown }> | Uint8Array, options: SourceOptions): Promise<Hdf5File> {
  if (typeof source === 'string' && inNode() && !/^[a-z][a-z0-9+.-]+:/i.test(source)) {
    return openHdf5((await nodeEntry()).fileSource(source), options);
  }
  return openHdf5(source as Parameters<typeof openHdf5>[0], options);
}

/**
 * A Keras file from a path (Node), URL, `Blob` or bytes. A `.keras` zip is read for its
 * `config.json` and its `model.weights.h5` (held in memory); an `.h5` by range.
 */
export async function openKerasFile(source: NpzSource, options: SourceOptions = {}): Promise<KerasFile> {
  const where = typeof source === 'string' || source instanceof URL ? String(source) : 'the Keras file';
  let head: Uint8Array | null = null;
  if (source instanceof Uint8Array) head = source;
  else if (source instanceof ArrayBuffer) head = new Uint8Array(source);
  const isH5 = head ? HDF5_MAGIC.every((b, i) => head![i] === b) : /\.(h5|hdf5)$/i.test(typeof File !== 'undefined' && source instanceof File ? source.name : where);
  if (isH5) {
    const h5 = await openH5(source as Exclude<NpzSource, { entries: unknown }>, options);
    try {
      return await kerasOfHdf5(h5, null, where);
    } catch (e) {
      await h5.close();
      throw e;
    }
  }
  const [archive, opened] = await openArchive(source, options);
  try {
    const names = archive.entries.map((e) => e.name);
    if (!names.includes('config.json')) {
      throw new NpyError('BAD_MODEL', `${where} is not a .keras file: it has no config.json (its members: ${names.slice(0, 8).join(', ')})`);
    }
    const config = parseJson(utf8.decode(await archive.bytes('config.json')), `${where}: config.json`);
    if (!names.includes('model.weights.h5')) {
      const why = names.includes('model.weights.npz')
        ? 'its weights are in model.weights.npz (Keras 3 writes it of pickled dicts, and cannot load it back itself)'
        : names.some((n) => n.endsWith('.weights.json'))
          ? 'its weights are sharded, which npyts does not read yet'
          : 'it has no model.weights.h5';
      throw new NpyError('BAD_MODEL', `${where}: ${why}; save the model with model.save('model.keras') (weights in model.weights.h5)`);
    }
    const h5 = await openHdf5(await archive.bytes('model.weights.h5'), options);
    try {
      return await kerasOfHdf5(h5, config, `${where}: model.weights.h5`);
    } catch (e) {
      await h5.close();
      throw e;
    }
  } finally {
    if (opened) await archive.close();
  }
}

/** A Keras HDF5 file's records and weights (and the `model_config` of a legacy full-model file). */
async function kerasOfHdf5(h5: Hdf5File, config: unknown, where: string): Promise<KerasFile> {
  const rootAttrs = await h5.root.attrs();
  if (config === null && typeof rootAttrs.model_config === 'string') config = parseJson(rootAttrs.model_config, `${where}: model_config`);
  const datasets = new Map<string, Hdf5Dataset>();
  const layers: Record<string, string> = {};
  const weightsGroup = (await h5.root.children()).includes('model_weights') ? await h5.root.get('model_weights') : h5.root;
  const legacyAttrs = weightsGroup.kind === 'group' ? (weightsGroup === h5.root ? rootAttrs : await weightsGroup.attrs()) : {};
  if (weightsGroup.kind === 'group' && Array.isArray(legacyAttrs.layer_names)) {
    // Legacy: layer_names, and each layer's weight_names (its datasets, below the layer's group).
    const base = weightsGroup === h5.root ? '' : 'model_weights/';
    for (const layer of legacyAttrs.layer_names) {
      const g = await weightsGroup.get(layer);
      const names = g.kind === 'group' ? (await g.attrs()).weight_names : undefined;
      const list = Array.isArray(names) ? names : [];
      for (const w of list) {
        const d = await h5.root.get(`${base}${layer}/${w}`);
        if (d.kind !== 'dataset') throw new NpyError('BAD_MODEL', `${where}: ${base}${layer}/${w} (in weight_names of '${layer}') is not a dataset`);
        const key = `${base}${layer}/${w}`;
        datasets.set(key, d);
      }
      layers[`${base}${layer}`] = layer;
    }
  } else {
    // Keras 3: every dataset by path, and each vars group's `name`. Walked with a stack, each group once.
    const seen = new Set<number>();
    const stack: Hdf5Group[] = [h5.root];
    while (stack.length) {
      const g = stack.pop()!;
      if (seen.has(g.address)) continue;
      seen.add(g.address);
      if (seen.size > MAX_GROUPS) throw new NpyError('BAD_MODEL', `${where} has more than ${MAX_GROUPS} groups`);
      for (const child of await g.children()) {
        const o = await g.get(child);
        const path = o.path.replace(/^\//, '');
        if (o.kind === 'dataset') datasets.set(path, o);
        else {
          if (child === 'vars') {
            const name = (await o.attrs()).name;
            if (typeof name === 'string') layers[path] = name;
          }
          stack.push(o);
        }
      }
    }
  }
  const keys = [...datasets.keys()];
  const kinds = new Map<string, 'bfloat16' | undefined>();
  const kindOf = async (d: Hdf5Dataset): Promise<'bfloat16' | undefined> => {
    if (!kinds.has(d.path)) kinds.set(d.path, d.dtype.kind === 'V' && d.dtype.itemsize === 2 && (await d.attrs()).dtype === 'bfloat16' ? 'bfloat16' : undefined);
    return kinds.get(d.path);
  };
  const dataset = (name: string): Hdf5Dataset => {
    const d = datasets.get(name);
    if (!d) throw new NpyError('NPZ_KEY', `${where} has no weight '${name}'`);
    return d;
  };
  const tensors: TensorFile = {
    format: 'keras',
    names: keys,
    metadata: { config, layers },
    async info(name) {
      const d = dataset(name);
      const as = await kindOf(d);
      return { dtype: as ? parseDescr(as) : d.dtype, shape: [...d.shape] };
    },
    async get(name, options = {}) {
      const d = dataset(name);
      const as = await kindOf(d);
      return d.read({ ...(options.signal ? { signal: options.signal } : {}), ...(as ? { as } : {}) });
    },
    async getAll(options = {}) {
      const all = new Map<string, NdArray>();
      for (const k of keys) all.set(k, await this.get(k, options));
      return all;
    },
    close: () => h5.close(),
  };
  const weights = new WeightFile(tensors);
  return { config, records: kerasRecordsOf(weights)!, weights };
}

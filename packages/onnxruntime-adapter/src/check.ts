/**
 * An ONNX Runtime session checked against PyTorch's recorded outputs, and, where it differs, the
 * first PyTorch module whose output differs with the ONNX nodes that compute it.
 */
import { NpyError, familyOf, toFloat32, type NdArray, type WeightFile } from '@npyts/core';
import type { Tensor } from 'onnxruntime-common';
import { HTTP_KEYS, checkOptions, closeness, knownKeys } from '@npyts/core/plumbing';
import {
  decodeModel,
  encodeModel,
  inlineExternalData,
  modelBytes,
  openInput,
  type GraphNode,
  type ModelInput,
  type OpenInputOptions,
  type WeightInput,
} from './model.js';
import { fromOrtTensor, toOrtTensor, type OrtTensorLike } from './tensors.js';

/**
 * checkSession's default relative tolerance, of each compared array's scale (its largest finite
 * |value|). Calibrated on correct exports of real models (test/adapters/onnxruntime-check.test.mjs:
 * an MLP, a CNN with BatchNorm, nn.TransformerEncoderLayer and a ResNet-18 by both exporters of torch
 * 2.13, torchvision's resnet18 by torch 1.13's): ORT differs from PyTorch by at most 7.3e-7 of the
 * output's scale, while a normalisation epsilon of 1e-3 where PyTorch's is 1e-5 moves an output by
 * 1.3e-4 to 3.7e-4 of its scale (measured for the tfjs check). 3e-5, as tfjs's `DEFAULT_RTOL`, lies
 * about forty times above the one and four below the other.
 * @example
 * await checkSession(session, 'check.npz', { rtol: 10 * DEFAULT_RTOL });   // a looser check, stated
 */
export const DEFAULT_RTOL = 3e-5;

/** The members of a reference archive. */
const CHECK = 'check/';
const MODULE = `${CHECK}module/`;

/** What {@link checkSession} needs of a session: onnxruntime-node's and onnxruntime-web's `InferenceSession` both fit. */
export interface SessionLike {
  /** The model's input names. */
  readonly inputNames: readonly string[];
  /** The model's output names. */
  readonly outputNames: readonly string[];
  /** The model's inputs' types and shapes (onnxruntime 1.22 and later). */
  readonly inputMetadata?: readonly {
    readonly name: string;
    readonly isTensor: boolean;
    readonly type?: string;
    readonly shape?: ReadonlyArray<number | string>;
  }[];
  /** Runs the model. */
  run(feeds: Record<string, Tensor>): Promise<Record<string, OrtTensorLike>>;
}

/** Options of {@link checkSession}. */
export interface CheckSessionOptions extends OpenInputOptions {
  /** Aborts the reads. */
  signal?: AbortSignal;
  /** Relative tolerance (default {@link DEFAULT_RTOL}): |ORT − reference| ≤ atol + rtol·|reference|, as numpy's `allclose`. */
  rtol?: number;
  /** Absolute tolerance (default: rtol times the largest finite |reference| value of the array compared). */
  atol?: number;
  /**
   * The session's `.onnx` model (path, URL or bytes). With it, and `check/module/<name>` members in the
   * reference, a failed check runs a copy of the model once more with the modules' values as extra
   * outputs and names the first module whose output differs. A session does not hold its model.
   * Initializers it keeps in files beside it (ONNX external data) are read into the copy from beside
   * its path or URL; a model given as bytes that points into files (`withWeights`'s `model`) keeps
   * its pointers when `createSession` is given, which must tell ORT where the files are.
   */
  model?: ModelInput;
  /**
   * Makes the session for that copy (default: the session's own class, `InferenceSession.create(bytes)`):
   * pass one to choose execution providers, or to give a `withWeights` model its `sessionOptions`
   * (`(bytes) => ort.InferenceSession.create(bytes, sessionOptions)`).
   */
  createSession?: (model: Uint8Array) => Promise<SessionLike>;
}

/** The options {@link CheckSessionOptions} names. */
const CHECK_SESSION_KEYS = knownKeys<CheckSessionOptions>({ ...HTTP_KEYS, store: true, rtol: true, atol: true, model: true, createSession: true });

/** What {@link checkSession} measured. */
export interface CheckSessionReport {
  /** The largest |ORT − reference| over the outputs compared. */
  maxAbsDiff: number;
  /** The largest |ORT − reference| / |reference| where the reference is not zero. */
  maxRelDiff: number;
  /** How many values were compared. */
  compared: number;
  /** The outputs compared, by ONNX name. */
  outputs: string[];
  /** The relative tolerance used. */
  rtol: number;
}

/** An array's values as numbers, row-major: what is compared. */
function numbers(a: NdArray, key: string): ArrayLike<number> {
  const family = familyOf(a.dtype);
  if (!['float', 'int', 'uint', 'bool'].includes(family)) throw new NpyError('CHECK_FAILED', `${key} is ${a.dtype.name}, which cannot be compared`);
  if (typeof (a.data as ArrayLike<unknown>)[0] === 'bigint') return Array.from(a.data as ArrayLike<bigint>, Number);
  if (family === 'float' && a.dtype.itemsize === 2) return toFloat32(a).data;
  return a.data as ArrayLike<number>;
}

interface Compared {
  abs: number;
  rel: number;
  compared: number;
  /** Empty where the values agree. */
  failure: string;
}

/** ORT's values against the reference's under the one rule (`closeness`): a non-finite reference is matched exactly. */
function compare(got: ArrayLike<number>, want: ArrayLike<number>, shape: readonly number[], key: string, options: CheckSessionOptions): Compared {
  const c = closeness(got, want, shape, options.rtol ?? DEFAULT_RTOL, options.atol);
  const f = c.failure;
  if (f === null) return { abs: c.abs, rel: c.rel, compared: c.compared, failure: '' };
  const at = `${key}: at [${f.index}] ORT gives ${f.got} and the reference ${f.want}`;
  if (f.nonFinite) return { abs: c.abs, rel: c.rel, compared: c.compared, failure: `${at} (a non-finite reference is matched exactly)` };
  const ofScale = c.scale > 0 && Number.isFinite(f.diff) ? `, ${(f.diff / c.scale).toPrecision(2)} of its scale` : '';
  return {
    abs: c.abs,
    rel: c.rel,
    compared: c.compared,
    failure: `${at} (difference ${f.diff.toPrecision(3)}${ofScale}; allowed ${f.allowed.toPrecision(3)} with rtol ${c.rtol}, atol ${c.atol.toPrecision(3)})`,
  };
}

/** The reference member for an ONNX input or output: `check/<kind>/<name>`, or `check/<kind>` for the first. */
function memberFor(archive: WeightFile, kind: 'input' | 'output', name: string, first: boolean): string | undefined {
  if (archive.has(`${CHECK}${kind}/${name}`)) return `${CHECK}${kind}/${name}`;
  return first && archive.has(`${CHECK}${kind}`) ? `${CHECK}${kind}` : undefined;
}

type InputMeta = NonNullable<SessionLike['inputMetadata']>[number];

const wants = (meta: InputMeta | undefined): string =>
  meta?.isTensor && meta.type ? `${meta.type} [${(meta.shape ?? []).map((d) => (typeof d === 'number' && d >= 0 ? d : `'${d}'`)).join(', ')}]` : 'a tensor';

/** The session's feeds from the archive, each checked against what the model wants (ORT's own errors name neither). */
async function feedsOf(session: SessionLike, archive: WeightFile, options: CheckSessionOptions): Promise<Record<string, Tensor>> {
  const feeds: Record<string, Tensor> = {};
  for (const [i, name] of session.inputNames.entries()) {
    const meta = session.inputMetadata?.find((m) => m.name === name) ?? session.inputMetadata?.[i];
    const key = memberFor(archive, 'input', name, session.inputNames.length === 1);
    if (key === undefined) {
      throw new NpyError(
        'NPZ_KEY',
        `the reference has no input for the model's input '${name}' (${wants(meta)}); save it as ${CHECK}input/${name}${session.inputNames.length === 1 ? ` (or ${CHECK}input)` : ''}`,
      );
    }
    const x = await archive.get(key, options);
    const tensor = toOrtTensor(x);
    if (meta?.isTensor && meta.type && meta.type !== tensor.type) {
      throw new NpyError('DTYPE_MISMATCH', `${key} is ${x.dtype.name} but the model's input '${name}' is ${wants(meta)}; save it as ${meta.type}`);
    }
    const shape = meta?.isTensor ? meta.shape : undefined;
    if (shape && shape.length > 0 && (shape.length !== x.shape.length || shape.some((d, k) => typeof d === 'number' && d >= 0 && d !== x.shape[k]))) {
      throw new NpyError('SHAPE_MISMATCH', `${key} has shape [${x.shape.join(', ')}] but the model's input '${name}' is ${wants(meta)}`);
    }
    feeds[name] = tensor;
  }
  return feeds;
}

/** The session run, ORT's refusals as an NpyError naming the inputs the model wants. */
async function run(session: SessionLike, feeds: Record<string, Tensor>): Promise<Record<string, OrtTensorLike>> {
  try {
    return await session.run(feeds);
  } catch (e) {
    const inputs = session.inputNames.map((n, i) => `'${n}' (${wants(session.inputMetadata?.[i])})`).join(', ');
    throw new NpyError(
      'CHECK_FAILED',
      `ONNX Runtime could not run the model on the reference inputs: ${(e as Error).message}; the model's inputs are ${inputs}`,
    );
  }
}

/**
 * Run the session on the reference's inputs and compare its outputs with the reference's, within
 * {@link DEFAULT_RTOL} of each output's scale unless told otherwise; resolves with what was measured.
 *
 * The reference is an `.npz` (path, URL, bytes) written in Python: `check/input` (or
 * `check/input/<name>` per ONNX input), `check/output` (the first ONNX output; or
 * `check/output/<name>`), and optionally `check/module/<module name>` for each module's output,
 * recorded with forward hooks (docs/onnxruntime.md). Inputs are checked against the model's before
 * the run: a missing one is `NPZ_KEY`, another dtype `DTYPE_MISMATCH`, another shape `SHAPE_MISMATCH`,
 * each naming the input and what the model wants.
 *
 * On a difference it rejects with `CHECK_FAILED`. Given `{ model }` (the session's `.onnx`) and module
 * outputs, it runs a copy of the model once more, with the modules' values as extra outputs, and names
 * the first PyTorch module whose output differs and the ONNX nodes that compute it. ONNX nodes are
 * mapped to modules through what the exporter records: the TorchScript exporter's node names
 * (`/layer1/layer1.0/conv1/Conv`), the dynamo exporter's `pkg.torch.onnx.name_scopes`. Modules that
 * cannot be compared (no node of their own where the exporter fused them, or a value of another
 * shape) are named, and the blame spans from the last module that agrees.
 * @example
 * const session = await ort.InferenceSession.create('resnet18.onnx');
 * const { maxAbsDiff } = await checkSession(session, 'check.npz', { model: 'resnet18.onnx' });
 */
export async function checkSession(session: SessionLike, reference: WeightInput, options: CheckSessionOptions = {}): Promise<CheckSessionReport> {
  checkOptions('checkSession', options, CHECK_SESSION_KEYS);
  const rtol = options.rtol ?? DEFAULT_RTOL;
  if (!(rtol >= 0) || (options.atol !== undefined && !(options.atol >= 0))) {
    throw new NpyError('BAD_OPTION', `rtol and atol are tolerances, numbers of at least 0 (got rtol ${options.rtol}, atol ${options.atol})`);
  }
  const [archive, owned] = await openInput(reference, options);
  try {
    const feeds = await feedsOf(session, archive, options);
    const outputs = session.outputNames.flatMap((name, i) => {
      const key = memberFor(archive, 'output', name, i === 0);
      return key === undefined ? [] : [[name, key] as const];
    });
    if (outputs.length === 0) {
      throw new NpyError(
        'NPZ_KEY',
        `the reference has no output for the model's outputs ${session.outputNames.map((n) => `'${n}'`).join(', ')}; save PyTorch's as ${CHECK}output (the first) or ${CHECK}output/<name>`,
      );
    }
    const got = await run(session, feeds);
    const total: Compared = { abs: 0, rel: 0, compared: 0, failure: '' };
    for (const [name, key] of outputs) {
      const want = await archive.get(key, options);
      const value = got[name]!;
      if (value.dims.join() !== want.shape.join()) {
        throw new NpyError('CHECK_FAILED', `the model's output '${name}' has shape [${value.dims.join(', ')}] and ${key} [${want.shape.join(', ')}]`);
      }
      const r = compare(numbers(fromOrtTensor(value), name), numbers(want, key), want.shape, key, options);
      total.abs = Math.max(total.abs, r.abs);
      total.rel = Math.max(total.rel, r.rel);
      total.compared += r.compared;
      total.failure ||= r.failure;
    }
    if (total.failure) {
      const hasModules = archive.names.some((n) => n.startsWith(MODULE));
      if (options.model === undefined || !hasModules) {
        const how = hasModules
          ? `; pass { model } (the .onnx) to have it name the first module that differs`
          : `; record each module's output as ${MODULE}<name> (docs/onnxruntime.md) and pass { model } to have it name the first module that differs`;
        throw new NpyError('CHECK_FAILED', `the model's outputs differ from the reference: ${total.failure}${how}`);
      }
      const where = await firstDivergence(session, archive, feeds, options.model, options);
      throw new NpyError('CHECK_FAILED', `${where}; at the output: ${total.failure}`);
    }
    if (total.compared === 0) {
      throw new NpyError(
        'CHECK_FAILED',
        'the reference outputs have no finite value to compare with, so they prove nothing; save a sample input whose output is finite',
      );
    }
    return { maxAbsDiff: total.abs, maxRelDiff: total.rel, compared: total.compared, outputs: outputs.map(([n]) => n), rtol };
  } finally {
    if (owned) await archive.close();
  }
}

/** Python's repr of a list of strings (`"['', 'layer1', 'layer1.0']"`) as the strings. */
function pythonStrings(repr: string): string[] {
  return [...repr.matchAll(/'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"/g)].map((m) => (m[1] ?? m[2] ?? '').replace(/\\(.)/g, '$1'));
}

/**
 * The PyTorch module a node was exported from ('' for the model itself), from the dynamo exporter's
 * `pkg.torch.onnx.name_scopes` (the modules' qualified names, then the operation) or the TorchScript
 * exporter's node name (`/layer1/layer1.0/conv1/Conv`: attribute names, a Sequential's children by
 * their qualified name; a module called again gets `_1`, `_2`, …).
 */
function scopeOf(node: GraphNode, modules: ReadonlySet<string>): string {
  const scopes = node.metadata_props?.find((p) => p.key === 'pkg.torch.onnx.name_scopes');
  if (scopes) {
    const names = pythonStrings(scopes.value).slice(0, -1);
    return names[names.length - 1] ?? '';
  }
  if (!node.name.startsWith('/')) return '';
  let full = '';
  for (const part of node.name.split('/').slice(1, -1)) {
    let next = full && part.startsWith(`${full}.`) ? part : full ? `${full}.${part}` : part;
    const again = next.replace(/_\d+$/, '');
    if (!modules.has(next) && modules.has(again)) next = again;
    full = next;
  }
  return full;
}

const within = (scope: string, module: string): boolean => scope === module || scope.startsWith(`${module}.`);

/** Words in a list, the first ones and how many more past `shown`. */
function andList(items: readonly string[], shown = 8): string {
  if (items.length > shown) return `${items.slice(0, shown - 1).join(', ')}, ${items.length - shown} more and ${items[items.length - 1]}`;
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

const quoted = (names: readonly string[]): string => andList(names.map((n) => `'${n}'`));

/**
 * The message naming the first recorded module whose output differs, from one run of a copy of the
 * model whose graph outputs include each recorded module's candidate values (those its nodes compute
 * and nodes outside it, or the graph's outputs, use).
 */
async function firstDivergence(
  session: SessionLike,
  archive: WeightFile,
  feeds: Record<string, Tensor>,
  model: ModelInput,
  options: CheckSessionOptions,
): Promise<string> {
  const message = decodeModel(await modelBytes(model, options));
  // A model given as bytes that points into files beside it (a withWeights result, a dynamo export
  // read into memory) has nothing here to find them beside: the caller's createSession tells ORT
  // where they are (withWeights's sessionOptions), so the copy keeps its pointers. Otherwise the
  // files' values are read into the copy, found beside the model's path or URL.
  const fromBytes = model instanceof Uint8Array;
  if (!(fromBytes && options.createSession)) {
    try {
      await inlineExternalData(message, model, options);
    } catch (e) {
      if (!(e instanceof NpyError)) throw e;
      const fix = fromBytes
        ? ", or pass { createSession: (bytes) => ort.InferenceSession.create(bytes, sessionOptions) } with the options that tell ORT where they are (withWeights's sessionOptions)"
        : '';
      return `the model's outputs differ, and the model's copy cannot be made: ${e.message}${fix}`;
    }
  }
  const graph = message.graph ?? {};
  const nodes = graph.node ?? [];
  // Modules in the order their hooks ran (np.savez keeps it): children before their containers.
  const order = archive.names.filter((n) => n.startsWith(MODULE)).map((n) => n.slice(MODULE.length));
  const modules = new Set(order);
  const scope = nodes.map((n) => scopeOf(n, modules));
  const producer = new Map<string, number>();
  const users = new Map<string, number[]>();
  nodes.forEach((n, i) => {
    for (const o of n.output) if (o) producer.set(o, i);
    for (const v of n.input) if (v) users.set(v, [...(users.get(v) ?? []), i]);
  });
  const graphOutputs = new Set((graph.output ?? []).map((o) => o.name));
  const candidates = new Map<string, string[]>();
  for (const m of order) {
    const values: string[] = [];
    nodes.forEach((n, i) => {
      if (!within(scope[i]!, m)) return;
      for (const o of n.output) {
        if (o && (graphOutputs.has(o) || (users.get(o) ?? []).some((j) => !within(scope[j]!, m)))) values.push(o);
      }
    });
    candidates.set(m, values);
  }
  const extra = [...new Set([...candidates.values()].flat())].filter((v) => !graphOutputs.has(v));
  graph.output = [...(graph.output ?? []), ...extra.map((name) => ({ name }))];
  const bytes = encodeModel(message);
  const create = options.createSession ?? (session.constructor as { create?: (m: Uint8Array) => Promise<SessionLike> }).create;
  if (typeof create !== 'function') {
    return `the model's outputs differ, and the layer-by-layer check cannot make a session for the model's copy: pass { createSession: (bytes) => ort.InferenceSession.create(bytes) }`;
  }
  let values: Record<string, OrtTensorLike>;
  try {
    values = await (await create(bytes)).run(feeds);
  } catch (e) {
    return `the model's outputs differ, and ONNX Runtime could not run the model's copy with the modules' values as extra outputs (${(e as Error).message}), so no module is named`;
  }

  // Each module's value: the last candidate of the reference's shape.
  const absent: string[] = [];
  const otherShape: string[] = [];
  const located: { module: string; value: string; at: number }[] = [];
  for (const m of order) {
    const shape = (await archive.info(`${MODULE}${m}`, options)).shape.join();
    const own = candidates.get(m)!;
    if (own.length === 0) {
      absent.push(m);
      continue;
    }
    const value = own.filter((v) => values[v]?.dims.join() === shape).pop();
    if (value === undefined) otherShape.push(m);
    else located.push({ module: m, value, at: producer.get(value)! });
  }
  located.sort((a, b) => a.at - b.at || order.indexOf(a.module) - order.indexOf(b.module));

  /**
   * The module whose output a TorchScript-exported Conv node of a leaf module computes: the next one
   * recorded, where it has no node of its own and the value's shape (the dynamo exporter scopes a
   * fused node to the BatchNorm, which then has one).
   */
  const foldedInto = async (module: string, value: string): Promise<string | undefined> => {
    const node = nodes[producer.get(value)!]!;
    if (node.op_type !== 'Conv' || !node.name.startsWith('/') || node.metadata_props?.some((p) => p.key === 'pkg.torch.onnx.name_scopes')) return undefined;
    if (order.some((m) => m.startsWith(`${module}.`))) return undefined;
    const next = order[order.indexOf(module) + 1];
    if (next === undefined || !absent.includes(next)) return undefined;
    return (await archive.info(`${MODULE}${next}`, options)).shape.join() === values[value]!.dims.join() ? next : undefined;
  };
  const agreed: { module: string; value: string }[] = [];
  const judge = async (module: string, value: string): Promise<string> => {
    const want = await archive.get(`${MODULE}${module}`, options);
    return compare(numbers(fromOrtTensor(values[value]!), value), numbers(want, module), want.shape, `${MODULE}${module}`, options).failure;
  };
  for (const { module, value } of located) {
    // The TorchScript exporter folds a BatchNorm into the convolution before it, under the
    // convolution's name: that Conv node's value is the output of the module recorded right after
    // (the BatchNorm, with no node of its own), and is compared with that module's.
    const fused = await foldedInto(module, value);
    if (fused !== undefined) {
      const failure = await judge(fused, value);
      if (!failure) {
        agreed.push({ module: fused, value });
        continue;
      }
      return blame(module, value, failure, { nodes, scope, producer, order, agreed, absent, otherShape, candidates });
    }
    const failure = await judge(module, value);
    if (!failure) {
      agreed.push({ module, value });
      continue;
    }
    // The TorchScript exporter folds a BatchNorm into the convolution before it under the
    // convolution's name: the value is the module recorded next, which has no node of its own.
    const next = absent.filter((m) => order.indexOf(m) > order.indexOf(module));
    let folded: string | undefined;
    for (const m of next) {
      const shape = (await archive.info(`${MODULE}${m}`, options)).shape.join();
      if (shape === values[value]!.dims.join() && !(await judge(m, value))) {
        folded = m;
        break;
      }
    }
    if (folded !== undefined) {
      agreed.push({ module: folded, value });
      continue;
    }
    return blame(module, value, failure, { nodes, scope, producer, order, agreed, absent, otherShape, candidates });
  }
  const last = agreed.at(-1)?.module;
  return `every module compared agrees with PyTorch${last ? `, up to '${last}'` : ''}: the difference arises after it, outside the recorded modules${absent.length ? ` (not compared, having no ONNX node of their own: ${quoted(absent)})` : ''}`;
}

interface Walk {
  nodes: readonly GraphNode[];
  scope: readonly string[];
  producer: ReadonlyMap<string, number>;
  order: readonly string[];
  agreed: readonly { module: string; value: string }[];
  absent: readonly string[];
  otherShape: readonly string[];
  candidates: ReadonlyMap<string, string[]>;
}

/** The nodes a value depends on, itself included, in graph order. */
function ancestors(value: string, nodes: readonly GraphNode[], producer: ReadonlyMap<string, number>): Set<number> {
  const seen = new Set<number>();
  const stack = [value];
  while (stack.length) {
    const at = producer.get(stack.pop()!);
    if (at === undefined || seen.has(at)) continue;
    seen.add(at);
    for (const input of nodes[at]!.input) stack.push(input);
  }
  return seen;
}

/** The message for the first module that differs: its nodes, and the span from the last module that agrees. */
function blame(module: string, value: string, failure: string, w: Walk): string {
  const { nodes, scope, producer, order } = w;
  const at = order.indexOf(module);
  const mine = ancestors(value, nodes, producer);
  const cleared = new Set(w.agreed.flatMap((a) => [...ancestors(a.value, nodes, producer)]));
  const span = [...mine].filter((i) => !cleared.has(i) && nodes[i]!.op_type !== 'Constant').sort((a, b) => a - b);
  const own = span.filter((i) => within(scope[i]!, module));
  const name = (i: number): string => nodes[i]!.name || `${nodes[i]!.op_type} → ${nodes[i]!.output[0]}`;
  let last = '';
  for (const a of w.agreed) if (order.indexOf(a.module) < at && (!last || order.indexOf(a.module) > order.indexOf(last))) last = a.module;
  const compared = new Set([...w.agreed.map((a) => a.module), module]);
  // Recorded between the last module that agrees and this one, and not compared: not a container of
  // a compared module (its hook runs after its children's), nor part of this one.
  const between = order
    .slice(last ? order.indexOf(last) + 1 : 0, Math.max(at, 0))
    .filter((m) => !compared.has(m) && ![...compared].some((c) => c.startsWith(`${m}.`)) && !m.startsWith(`${module}.`));
  const why = (m: string): string =>
    w.absent.includes(m)
      ? 'no ONNX node of its own: the exporter fused it into another'
      : w.otherShape.includes(m)
        ? "no ONNX value of its output's shape"
        : 'called again later: a hook records the last call';
  const skipped = between.length ? `; PyTorch's ${andList(between.map((m) => `'${m}' (${why(m)})`))} between them could not be compared` : '';
  const from = last ? `after '${last}'` : 'from the input';
  const others = span.filter((i) => !own.includes(i));
  const where =
    between.length || others.length
      ? ` (${last ? `the modules before it, up to '${last}', agree` : 'no module before it was seen to agree'}${skipped}: the mistake lies in the span ${from} up to '${module}', which ONNX computes with nodes ${quoted(span.map(name))})`
      : last
        ? ` (the modules before it, up to '${last}', agree)`
        : '';
  // A module recorded right after this one with no node of its own was folded into it.
  const folded = w.absent.filter(
    (m) => order.indexOf(m) > at && order.slice(at + 1, order.indexOf(m)).every((x) => w.absent.includes(x) || x.startsWith(`${module}.`)),
  );
  const into = folded.length
    ? `; ${quoted(folded)}, recorded after it, ${folded.length === 1 ? 'has' : 'have'} no ONNX node of ${folded.length === 1 ? 'its' : 'their'} own (folded into it or removed by the exporter), so this value is ${folded.length === 1 ? 'its' : 'their'} output too`
    : '';
  return `the first PyTorch module whose output differs is '${module}', computed by ONNX node${own.length === 1 ? '' : 's'} ${quoted((own.length ? own : span).map(name))}${where}${into}: ${failure}`;
}

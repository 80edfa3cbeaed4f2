// LoRA adapters merged against the real thing: tiny random models (GPT-2 with its Conv1D and
// fan_in_fan_out, BERT, a CNN with an Embedding, Conv1d, Conv2d 1x1 and 3x3 and a Linear), adapters
// attached by peft with non-zero A and B and saved by save_pretrained, and peft's merge_and_unload()
// of the same base as the truth (test/helpers/lora_fixtures.py builds every fixture in one call).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { WeightFile, decodeNpy, encodeGguf, encodeSafetensors, float16ToNumber, mergeLora as mergeLoraCore, toFloat32 } from '@npyts/core';
import { fromOrtTensor, toOrtTensor, withWeights } from '@npyts/onnxruntime';
import { assignWeights } from '@npyts/tfjs';
import { mergeLora, openWeights, saveSafetensors } from '@npyts/core/node';
import { runCli, scratch } from '../helpers/numpy.mjs';
import { serveFiles } from '../helpers/serve-files.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';
import { useCpuBackend } from '../helpers/tfjs.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const dir = scratch('npyts-lora-');
const fx = JSON.parse(
  execFileSync('python3', ['-W', 'ignore', join(here, '..', 'helpers', 'lora_fixtures.py'), dir], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
    stdio: ['ignore', 'pipe', 'ignore'],
  }),
);

/** One unit in the last place of a float16/bfloat16 at |x| (mantissa bits `m`, smallest normal exponent `emin`). */
const ulp = (x, m, emin) => 2 ** (Math.max(Math.floor(Math.log2(Math.abs(x) || 2 ** emin)), emin) - m);

/** The values of a float array as numbers (float16 and bfloat16 widened exactly). */
const values = (a) => {
  if (a.dtype.name === 'float16') return Float64Array.from(a.data, float16ToNumber);
  return Float64Array.from(toFloat32(a).data);
};

/**
 * Every tensor of `merged` against peft's `truth`, with the guide's tolerances: float32 within
 * 1e-6·max(1,|w|); float16/bfloat16 within one ulp of the stored type at the larger of |base| and
 * |peft's value|. Returns how many tensors differ from the base (the merge did something).
 */
async function compare(merged, truthPath, basePath) {
  const truth = await openWeights(truthPath);
  const base = await openWeights(basePath);
  assert.equal([...merged.names].sort(), [...truth.names].sort());
  let changed = 0;
  for (const name of truth.names) {
    const want = await truth.get(name);
    const got = await merged.get(name);
    const b = await base.get(name);
    assert.is(got.dtype.name, want.dtype.name, `${name}: dtype`);
    assert.equal(got.shape, want.shape, `${name}: shape`);
    const [g, w, o] = [values(got), values(want), values(b)];
    if (g.some((v, i) => v !== o[i])) changed++;
    for (let i = 0; i < w.length; i++) {
      const tol =
        got.dtype.name === 'float16'
          ? ulp(Math.max(Math.abs(o[i]), Math.abs(w[i])), 10, -14)
          : got.dtype.name === 'bfloat16'
            ? ulp(Math.max(Math.abs(o[i]), Math.abs(w[i])), 7, -126)
            : 1e-6 * Math.max(1, Math.abs(w[i]));
      if (!(Math.abs(g[i] - w[i]) <= tol)) assert.unreachable(`${name}[${i}]: npyts ${g[i]}, peft ${w[i]} (base ${o[i]}, tolerance ${tol})`);
    }
  }
  await truth.close();
  await base.close();
  return changed;
}

for (const [name, changes] of [
  ['gpt2', 11], // 2 layers × (c_attn, attn c_proj, c_fc, mlp c_proj) + wte + ln_f's weight and bias (modules_to_save)
  ['gpt2-f16', 9],
  ['gpt2-bf16', 9],
  ['bert-rslora', 12], // 2 layers × (query, value, 3 dense) + the pooler's dense + word_embeddings
  ['cnn', 5],
  ['cnn-f16', 5],
  ['cnn-bf16', 5],
]) {
  test(`${name}: equal to peft's merge_and_unload()`, async () => {
    const { base, adapter, truth } = fx[name];
    const merged = await mergeLora(base, adapter);
    assert.is(await compare(merged, truth, base), changes, 'tensors the merge changed');
    await merged.close();
  });
}

for (const [name, m, emin] of [
  ['cancel-f16', 10, -14],
  ['cancel-bf16', 7, -126],
]) {
  test(`${name}: PEFT's order of rounding where the merge cancels (Embedding: the delta rounded first)`, async () => {
    const { base, adapter, truth } = fx[name];
    const merged = await mergeLora(base, adapter);
    const peft = await openWeights(truth);
    // An Embedding's delta is rounded to the weight's dtype before it is added: minus itself, zero.
    const emb = values(await merged.get('emb.weight'));
    assert.ok(
      emb.every((v) => v === 0),
      'an embedding that cancels merges to zero',
    );
    assert.ok(values(await peft.get('emb.weight')).every((v) => v === 0));
    // A Linear's float32 delta is added and rounded once: what its rounding to the dtype left,
    // equal to peft's within one unit in the last place of that small result.
    const fc = values(await merged.get('fc.weight'));
    const want = values(await peft.get('fc.weight'));
    assert.ok(
      want.some((v) => v !== 0),
      'a Linear that cancels keeps the rounding',
    );
    for (let i = 0; i < want.length; i++) assert.ok(Math.abs(fc[i] - want[i]) <= ulp(want[i], m, emin), `fc.weight[${i}]: npyts ${fc[i]}, peft ${want[i]}`);
    await peft.close();
    await merged.close();
  });
}

test("{ scale }: 0 is the base unchanged, 0.5 is peft with every layer's scaling halved", async () => {
  const { base, adapter, truthScaled } = fx.cnn;
  const half = await mergeLora(base, adapter, { scale: 0.5 });
  assert.is(await compare(half, truthScaled, base), 5);
  await half.close();
  const none = await mergeLora(base, adapter, { scale: 0 });
  assert.is(await compare(none, base, base), 0);
  await none.close();
});

test('an open base is merged and left open; the merge saved is what peft merged', async () => {
  const { base, adapter, truth } = fx.gpt2;
  const open = await openWeights(base);
  const merged = await mergeLora(open, adapter);
  assert.ok(merged instanceof WeightFile, "a WeightFile of @npyts/core's, as assignWeights and withWeights take");
  const out = join(dir, 'gpt2-merged.safetensors');
  await saveSafetensors(out, await merged.getAll(), { metadata: { format: 'pt' } });
  await merged.close();
  const written = await openWeights(out);
  await compare(written, truth, base);
  await written.close();
  assert.ok((await open.get('transformer.wpe.weight')).size > 0, 'the base given open is still open');
  await open.close();
});

test("by URL (@npyts/core's mergeLora): the base and the adapter's folder read over HTTP", async () => {
  const server = await serveFiles(dir);
  try {
    const { base, adapter, truth } = fx['bert-rslora'];
    const url = (path) => `${server.base}/${path.slice(dir.length + 1)}`;
    const merged = await mergeLoraCore(url(base), url(adapter));
    assert.is(await compare(merged, truth, base), 12);
    await merged.close();
  } finally {
    await server.close();
  }
});

test('refused by name, every one at once: DoRA, other tuners, quantized base weights', async () => {
  const dora = await npyErrorOf(() => mergeLora(fx['cnn-dora'].base, fx['cnn-dora'].adapter));
  assert.is(dora.code, 'LORA_UNSUPPORTED');
  assert.match(dora.message, /DoRA \(use_dora\) on 'fc', 'pw'|DoRA \(use_dora\) on 'pw', 'fc'/);
  const ia3 = await npyErrorOf(() => mergeLora(fx['cnn-ia3'].base, fx['cnn-ia3'].adapter));
  assert.is(ia3.code, 'LORA_UNSUPPORTED');
  assert.match(ia3.message, /"IA3"/);
  // A base whose adapted weights are stored as integers (quantized): both named.
  const base = await openWeights(fx.cnn.base);
  const tensors = await base.getAll();
  await base.close();
  for (const n of ['fc.weight', 'conv.weight']) {
    const a = tensors.get(n);
    tensors.set(n, { dtype: '<i1', shape: a.shape, data: new Int8Array(a.size) });
  }
  const quantized = join(dir, 'quantized.safetensors');
  writeFileSync(quantized, encodeSafetensors(tensors));
  const q = await npyErrorOf(() => mergeLora(quantized, fx.cnn.adapter));
  assert.is(q.code, 'LORA_UNSUPPORTED');
  assert.match(q.message, /'conv\.weight' \(int8\)/);
  assert.match(q.message, /'fc\.weight' \(int8\)/);
});

test('an adapter that does not fit its config or base: WEIGHT_MISMATCH listing each module', async () => {
  const copy = join(dir, 'cnn-edited');
  cpSync(fx.cnn.adapter, copy, { recursive: true });
  const config = JSON.parse(readFileSync(join(copy, 'adapter_config.json'), 'utf8'));
  // r says 2 where the factors have rank 3, and target_modules no longer names fc.
  writeFileSync(
    join(copy, 'adapter_config.json'),
    JSON.stringify({ ...config, r: 2, rank_pattern: { emb: 3 }, target_modules: ['emb', 'conv1d', 'pw', 'conv'] }),
  );
  const e = await npyErrorOf(() => mergeLora(fx.cnn.base, copy));
  assert.is(e.code, 'WEIGHT_MISMATCH');
  for (const m of ['conv1d', 'pw', 'conv']) assert.match(e.message, new RegExp(`'${m}': A \\(3, `));
  assert.match(e.message, /'fc' has factors, but target_modules does not name it/);
  assert.not.match(e.message, /'emb'/, 'rank_pattern gives emb its rank 3');
});

// llama.cpp's GGUF LoRA adapters (test/helpers/lora_fixtures.py's gguf_case: a tiny Llama and its
// PEFT adapter written by gguf-py as llama.cpp's convert_lora_to_gguf.py writes them).
for (const [name, changes] of [
  ['gguf', 12], // 2 layers × (attn_q, attn_v of rank 2, attn_output, ffn_gate, ffn_down) + token_embd + output
  ['gguf-q8_0', 12], // the same with Q8_0 factors, dequantized
]) {
  test(`${name}: a llama.cpp GGUF LoRA adapter merged into its GGUF base equals peft's merge_and_unload() under GGUF's names`, async () => {
    const { base, adapter, truth } = fx[name];
    const merged = await mergeLora(base, adapter);
    assert.is(merged.format, 'gguf');
    assert.is(await compare(merged, truth, base), changes, 'tensors the merge changed');
    await merged.close();
  });
}

test('a GGUF adapter given open, into a base of the same names in another format; { scale: 0 } is the base', async () => {
  const { base, adapter, truth } = fx.gguf;
  const open = await openWeights(adapter);
  const b = await openWeights(base);
  const copy = join(dir, 'gguf-base.safetensors');
  await saveSafetensors(copy, await b.getAll());
  await b.close();
  const merged = await mergeLora(copy, open);
  assert.is(await compare(merged, truth, copy), 12);
  await merged.close();
  const none = await mergeLora(base, open, { scale: 0 });
  assert.is(await compare(none, base, base), 0);
  await none.close();
  assert.ok((await open.get('output.weight.lora_a')).size > 0, 'the adapter given open is still open');
  await open.close();
});

test('a GGUF adapter refused as llama.cpp refuses it, or by name where npyts does not merge it', async () => {
  const { base, adapter } = fx.gguf;
  const a = await openWeights(adapter);
  const tensors = await a.getAll();
  const { metadata, metadataTypes } = a;
  await a.close();
  const write = (file, t, meta, types = metadataTypes) => {
    writeFileSync(join(dir, file), encodeGguf(t, { metadata: meta, metadataTypes: types }));
    return join(dir, file);
  };
  // A model, not an adapter.
  const model = await npyErrorOf(() => mergeLora(base, base));
  assert.is(model.code, 'BAD_ADAPTER');
  assert.match(model.message, /general\.type is "model", not 'adapter'/);
  // mergekit's layer norms (llama.cpp skips them), and an adapter for another architecture.
  const norm = new Map(tensors).set('blk.0.attn_norm.weight', { dtype: '<f4', shape: [16], data: new Float32Array(16).fill(1.5) });
  const e = await npyErrorOf(() => mergeLora(base, write('norm.gguf', norm, metadata)));
  assert.is(e.code, 'LORA_UNSUPPORTED');
  assert.match(e.message, /'blk\.0\.attn_norm\.weight'/);
  const arch = await npyErrorOf(() => mergeLora(base, write('arch.gguf', tensors, { ...metadata, 'general.architecture': 'qwen2' })));
  assert.is(arch.code, 'WEIGHT_MISMATCH');
  assert.match(arch.message, /"qwen2", the base is "llama"/);
  // A tensor of no known part (llama.cpp: an unexpected suffix), and an alpha of another type than float32.
  const stray = await npyErrorOf(() =>
    mergeLora(base, write('stray.gguf', new Map(tensors).set('blk.0.attn_q.weight', tensors.get('blk.0.attn_q.weight.lora_a')), metadata)),
  );
  assert.is(stray.code, 'BAD_ADAPTER');
  assert.match(stray.message, /neither '\.lora_a' nor '\.lora_b' factors.*'blk\.0\.attn_q\.weight'/);
  const wide = await npyErrorOf(() => mergeLora(base, write('f64.gguf', tensors, metadata, { ...metadataTypes, 'adapter.lora.alpha': 'FLOAT64' })));
  assert.is(wide.code, 'BAD_ADAPTER');
  assert.match(wide.message, /adapter\.lora\.alpha is 8 \(FLOAT64\)/);
  // A factor without its pair, and one of the wrong shape, listed together.
  const broken = new Map(tensors);
  broken.delete('blk.1.attn_q.weight.lora_b');
  broken.set('blk.0.ffn_down.weight.lora_a', tensors.get('blk.0.ffn_gate.weight.lora_a'));
  const fit = await npyErrorOf(() => mergeLora(base, write('broken.gguf', broken, metadata)));
  assert.is(fit.code, 'WEIGHT_MISMATCH');
  assert.match(fit.message, /'blk\.1\.attn_q\.weight' has only lora_a/);
  assert.match(fit.message, /'blk\.0\.ffn_down\.weight' \(16, 32\): lora_a \(4, 16\)/);
  // A quantized base: its adapted weights named.
  const q = fx['gguf-q8_0'];
  const qb = await openWeights(q.base);
  const quantized = join(dir, 'base-q8_0.gguf');
  writeFileSync(quantized, encodeGguf(await qb.getAll(), { metadata: qb.metadata, metadataTypes: qb.metadataTypes, type: 'q8_0' }));
  await qb.close();
  const qe = await npyErrorOf(() => mergeLora(quantized, q.adapter));
  assert.is(qe.code, 'LORA_UNSUPPORTED');
  assert.match(qe.message, /'blk\.0\.attn_q\.weight' \(Q8_0\)/);
});

test("a GGUF adapter without adapter.lora.alpha: each delta scaled by { scale } alone, as llama.cpp's get_scale does", async () => {
  const { base, adapter, truth } = fx.gguf;
  const a = await openWeights(adapter);
  const { 'adapter.lora.alpha': alpha, ...metadata } = a.metadata;
  const { 'adapter.lora.alpha': _, ...metadataTypes } = a.metadataTypes;
  const file = join(dir, 'no-alpha.gguf');
  writeFileSync(file, encodeGguf(await a.getAll(), { metadata, metadataTypes }));
  await a.close();
  assert.is(alpha, 8);
  // PEFT's scaling there is alpha / r = 8 / 4 = 2 (attn_v's rank is 2: 4, left out).
  const merged = await mergeLora(base, file, { scale: 2 });
  const peft = await openWeights(truth);
  let compared = 0;
  for (const name of peft.names.filter((n) => !n.includes('attn_v'))) {
    const [g, w] = [values(await merged.get(name)), values(await peft.get(name))];
    for (let i = 0; i < w.length; i++) assert.ok(Math.abs(g[i] - w[i]) <= 1e-6 * Math.max(1, Math.abs(w[i])), `${name}[${i}]: npyts ${g[i]}, peft ${w[i]}`);
    compared++;
  }
  assert.is(compared, peft.names.length - 2);
  await peft.close();
  await merged.close();
});

// The merged weights in the runtimes: the CNN's base exported by torch.onnx (TorchScript exporter),
// run by onnxruntime-node with the merge swapped in (withWeights), and its tfjs twin given the merge
// (assignWeights, layout 'pytorch'): each predicts what peft's merged model predicts in PyTorch on
// the same input, to float32 rounding of differently ordered sums (1e-5 relative + 1e-6 absolute).
const predicts = (got, want, what) => {
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= 1e-6 + 1e-5 * Math.abs(want[i]))) assert.unreachable(`${what}[${i}]: ${got[i]}, peft ${want[i]}`);
  }
};

test("ONNX Runtime: the base's ONNX model with the merged weights (withWeights) predicts what peft's merged model predicts", async () => {
  const { base, adapter, onnx, x, y } = fx.cnn;
  const merged = await mergeLora(base, adapter);
  const r = await withWeights(readFileSync(onnx), merged);
  await merged.close();
  assert.equal([...r.replaced].sort(), ['conv.bias', 'conv.weight', 'fc.bias', 'fc.weight', 'pw.bias', 'pw.weight']);
  const session = await ort.InferenceSession.create(r.model, r.sessionOptions);
  const input = decodeNpy(readFileSync(x));
  const got = fromOrtTensor((await session.run({ x: toOrtTensor(input) })).y);
  const want = decodeNpy(readFileSync(y));
  assert.equal(got.shape, want.shape);
  predicts(got.data, want.data, 'y');
  // The base alone predicts otherwise: the merge is what the runtime ran.
  const plain = await ort.InferenceSession.create(readFileSync(onnx));
  const before = fromOrtTensor((await plain.run({ x: toOrtTensor(input) })).y).data;
  assert.ok(before.some((v, i) => Math.abs(v - want.data[i]) > 1e-3));
});

test("tfjs: the CNN's twin given the merged weights (assignWeights) predicts what peft's merged model predicts", async () => {
  await useCpuBackend();
  const { base, adapter, x, y } = fx.cnn;
  const input = decodeNpy(readFileSync(x));
  const [n, c, h, w] = input.shape;
  const model = tfl.sequential({
    layers: [
      tfl.layers.conv2d({ filters: 4, kernelSize: 1, inputShape: [h, w, c], name: 'pw' }),
      tfl.layers.conv2d({ filters: 6, kernelSize: 3, name: 'conv' }),
      tfl.layers.globalAveragePooling2d({}),
      tfl.layers.dense({ units: 7, name: 'fc' }),
    ],
  });
  // The merged file less the modules the forward pass does not use (the twin has no Embedding or Conv1d).
  const merged = await mergeLora(base, adapter);
  const used = await merged.getAll();
  await merged.close();
  for (const unused of ['emb.weight', 'conv1d.weight', 'conv1d.bias']) used.delete(unused);
  const file = join(dir, 'cnn-merged.safetensors');
  await saveSafetensors(file, used);
  await assignWeights(model, file, { layout: 'pytorch' });
  const nhwc = tf.transpose(tf.tensor(Float32Array.from(input.data), [n, c, h, w]), [0, 2, 3, 1]);
  const got = await model.predict(nhwc).data();
  predicts(got, decodeNpy(readFileSync(y)).data, 'y');
});

test('npyts merge-lora BASE ADAPTER -o OUT: the file peft merged, and refusals as one line', async () => {
  const { base, adapter, truth } = fx['gpt2-f16'];
  const out = join(dir, 'cli-merged.safetensors');
  const r = await runCli(['merge-lora', base, adapter, '-o', out]);
  assert.is(r.code, 0, r.stderr);
  const written = await openWeights(out);
  assert.is(written.metadata.format, 'pt');
  assert.is(await compare(written, truth, base), 9);
  await written.close();
  const refused = await runCli(['merge-lora', fx['cnn-dora'].base, fx['cnn-dora'].adapter, '-o', join(dir, 'dora.safetensors')]);
  assert.is(refused.code, 1);
  assert.match(refused.stderr, /DoRA \(use_dora\)/);
  // A GGUF adapter by its name.
  const gguf = join(dir, 'cli-gguf-merged.safetensors');
  const g = await runCli(['merge-lora', fx.gguf.base, fx.gguf.adapter, '-o', gguf]);
  assert.is(g.code, 0, g.stderr);
  const fromGguf = await openWeights(gguf);
  assert.is(await compare(fromGguf, fx.gguf.truth, fx.gguf.base), 12);
  await fromGguf.close();
  const usage = await runCli(['merge-lora', base, adapter, '-o', join(dir, 'x.npz')]);
  assert.is(usage.code, 2);
});

test.run();

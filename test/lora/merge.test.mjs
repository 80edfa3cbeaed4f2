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
import { WeightFile, encodeSafetensors, float16ToNumber, mergeLora as mergeLoraCore, toFloat32 } from '@npyts/core';
import { mergeLora, openWeights, saveSafetensors } from '@npyts/core/node';
import { runCli, scratch } from '../helpers/numpy.mjs';
import { serveFiles } from '../helpers/serve-files.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';

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
  const usage = await runCli(['merge-lora', base, adapter, '-o', join(dir, 'x.npz')]);
  assert.is(usage.code, 2);
});

test.run();

// What PyTorch gives for a torch.save file, and npyts's arrays in the same form: the ground truth of
// test/torch/*.test.mjs. torch.load(weights_only=True) runs in python3 (PyTorch 2.x) or Debian's
// /usr/bin/python3 (PyTorch 1.13).
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { toFloat32 } from '@npyts/core';
import { loadWeights } from '@npyts/core/node';
import { pythonSession } from './python-session.mjs';

/** Run Python (`which`: python3 with torch 2.x, or Debian's with torch 1.13) and parse its JSON. */
export function torchPython(which, code) {
  const out = execFileSync(which, ['-W', 'ignore', '-c', `import torch, json, sys\n${code}`], { encoding: 'utf8', maxBuffer: 1 << 28 });
  return out.trim() ? JSON.parse(out) : null;
}

/**
 * {@link torchPython} in this file's long-lived session of `which` (one torch import for the file,
 * not one per call): the snippet runs in fresh globals; a snippet that changes torch's own state
 * (seeds excepted: set them where they matter) sets it back.
 */
export async function torchAsync(which, code) {
  const out = await pythonSession(which).run(`import torch, json, sys\n${code}`);
  return out.trim() ? JSON.parse(out) : null;
}

/** What torch.load(weights_only=True) gives for every tensor of a file: shape, dtype and values as float64 (integers as text). */
export const TRUTH = `
def truth(path, root=None):
    d = torch.load(path, weights_only=True)
    out = {}
    def walk(p, v):
        if isinstance(v, torch.Tensor):
            x = v.detach().resolve_conj().resolve_neg()
            vals = x.to(torch.complex128).reshape(-1).view(torch.float64).tolist() if x.is_complex() else [str(int(y)) for y in x.reshape(-1).tolist()] if x.dtype in (torch.int64, getattr(torch, 'uint64', torch.int64)) else x.to(torch.float64).reshape(-1).tolist()
            out[p] = {'shape': list(x.shape), 'values': vals}
        elif isinstance(v, dict):
            for k, y in v.items(): walk(f'{p}.{k}' if p else str(k), y)
        elif isinstance(v, (list, tuple)) and any(isinstance(y, (torch.Tensor, dict, list, tuple)) for y in v):
            for i, y in enumerate(v): walk(f'{p}.{i}' if p else str(i), y)
    walk('', d)
    return out
`;

/** Our values of an array in the same form: row-major, float64 (integers of 64 bits as text). */
export function valuesOf(a) {
  const wide = a.dtype.mlFloat || a.dtype.realBytes === 2 ? toFloat32(a) : a;
  const n = a.size;
  const out = [];
  const strides = a.shape.map((_, k) => a.shape.slice(k + 1).reduce((x, y) => x * y, 1));
  const fStrides = a.shape.map((_, k) => a.shape.slice(0, k).reduce((x, y) => x * y, 1));
  const complex = a.dtype.kind === 'c';
  for (let i = 0; i < n; i++) {
    let at = 0;
    for (let k = 0; k < a.shape.length; k++) at += (Math.floor(i / strides[k]) % a.shape[k]) * (a.order === 'F' ? fStrides[k] : strides[k]);
    if (complex) out.push(wide.data[2 * at], wide.data[2 * at + 1]);
    else {
      const v = wide.data[at];
      out.push(typeof v === 'bigint' ? String(v) : a.dtype.kind === 'b' ? Number(v !== 0) : Number(v));
    }
  }
  return out;
}

export async function checkAgainstTorch(which, path, options = {}) {
  const want = await torchAsync(which, `${TRUTH}\nprint(json.dumps(truth(${JSON.stringify(path)})))`);
  const got = await loadWeights(path, options);
  const prefix = options.root ? `${options.root}.` : '';
  const wanted = Object.fromEntries(
    Object.entries(want)
      .filter(([k]) => k.startsWith(prefix))
      .map(([k, v]) => [k.slice(prefix.length), v]),
  );
  assert.equal([...got.keys()].sort(), Object.keys(wanted).sort(), `${path}: names`);
  for (const [name, { shape, values }] of Object.entries(wanted)) {
    const a = got.get(name);
    assert.equal(a.shape, shape, `${name}: shape`);
    assert.equal(valuesOf(a), values, `${name}: values`);
  }
  return got;
}

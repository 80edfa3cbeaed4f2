const N = 256 << 20;
const src = new Uint8Array(N + 128); for (let i = 0; i < src.length; i += 4093) src[i] = i;
const view = src.subarray(128);
function current() { const out = new Uint8Array(N); out.set(view); const w = new Uint32Array(out.buffer); for (let i = 0; i < w.length; i += 2) { const a = w[i], b = w[i + 1]; w[i] = ((b & 0xff) << 24) | ((b & 0xff00) << 8) | ((b >>> 8) & 0xff00) | (b >>> 24); w[i + 1] = ((a & 0xff) << 24) | ((a & 0xff00) << 8) | ((a >>> 8) & 0xff00) | (a >>> 24); } return out; }
function fused() { const out = new Uint32Array(N / 4); const s = new Uint32Array(view.buffer, view.byteOffset, N / 4); for (let i = 0; i < out.length; i += 2) { const a = s[i], b = s[i + 1]; out[i] = (b << 24) | ((b & 0xff00) << 8) | ((b >>> 8) & 0xff00) | (b >>> 24); out[i + 1] = (a << 24) | ((a & 0xff00) << 8) | ((a >>> 8) & 0xff00) | (a >>> 24); } return out; }
function fusedRot() { const out = new Uint32Array(N / 4); const s = new Uint32Array(view.buffer, view.byteOffset, N / 4); for (let i = 0; i < out.length; i += 2) { const a = s[i], b = s[i + 1]; out[i] = (((b & 0xff00ff) << 8) | ((b >>> 8) & 0xff00ff)) << 16 | ((((b & 0xff00ff) << 8) | ((b >>> 8) & 0xff00ff)) >>> 16); out[i + 1] = (((a & 0xff00ff) << 8) | ((a >>> 8) & 0xff00ff)) << 16 | ((((a & 0xff00ff) << 8) | ((a >>> 8) & 0xff00ff)) >>> 16); } return out; }
function dataview() { const out = new Float64Array(N / 8); const dv = new DataView(view.buffer, view.byteOffset, N); for (let i = 0; i < out.length; i++) out[i] = dv.getFloat64(i * 8, false); return out; }
const check = (a, b) => { const x = new Uint8Array(a.buffer), y = new Uint8Array(b.buffer); for (let i = 0; i < x.length; i += 1001) if (x[i] !== y[i]) return false; return true; };
const ref = current();
for (const [name, fn] of Object.entries({ current, fused, fusedRot, dataview })) {
  const r = fn(); const ok = check(ref, r);
  const ts = []; for (let k = 0; k < 5; k++) { const t = performance.now(); fn(); ts.push(performance.now() - t); }
  console.log(name, ok, ts.sort((a, b) => a - b)[2].toFixed(1));
}
{
  const out = new Uint32Array(N / 4); out.fill(1);
  const s = new Uint32Array(view.buffer, view.byteOffset, N / 4);
  const warm = () => { for (let i = 0; i < out.length; i += 2) { const a = s[i], b = s[i + 1]; out[i] = (b << 24) | ((b & 0xff00) << 8) | ((b >>> 8) & 0xff00) | (b >>> 24); out[i + 1] = (a << 24) | ((a & 0xff00) << 8) | ((a >>> 8) & 0xff00) | (a >>> 24); } };
  const dv = new DataView(view.buffer, view.byteOffset, N); const o64 = new Float64Array(out.buffer);
  const warmDv = () => { for (let i = 0; i < o64.length; i++) o64[i] = dv.getFloat64(i * 8, false); };
  const fresh = () => new Uint8Array(N).fill(0);
  for (const [name, fn] of Object.entries({ warm, warmDv, fresh })) { fn(); const ts = []; for (let k = 0; k < 5; k++) { const t = performance.now(); fn(); ts.push(performance.now() - t); } console.log(name, ts.sort((a, b) => a - b)[2].toFixed(1)); }
}
{
  const out = new Uint32Array(N / 4); out.fill(1);
  const dv = new DataView(view.buffer, view.byteOffset, N);
  const warmDv32 = () => { for (let i = 0, p = 0; i < out.length; i += 2, p += 8) { out[i] = dv.getUint32(p + 4, false); out[i + 1] = dv.getUint32(p, false); } };
  const inplace = new DataView(out.buffer);
  const inPlaceDv32 = () => { for (let p = 0; p < N; p += 8) { const a = inplace.getUint32(p, true), b = inplace.getUint32(p + 4, true); inplace.setUint32(p, b, false); inplace.setUint32(p + 4, a, false); } };
  for (const [name, fn] of Object.entries({ warmDv32, inPlaceDv32 })) { fn(); const ts = []; for (let k = 0; k < 5; k++) { const t = performance.now(); fn(); ts.push(performance.now() - t); } console.log(name, ts.sort((a, b) => a - b)[2].toFixed(1)); }
}

/**
 * The npyts viewer: open a .npy/.npz from a file, a drop or a URL; show the header, members, a
 * paged table of values, a heatmap and a histogram. Remote .npy files are read by range requests:
 * the header, then only the rows on screen.
 */
import {
  formatOf,
  SNIFF_BYTES,
  blobSource,
  openNpySource,
  decodeNpz,
  openNpyUrl,
  readHeader,
  readItem,
  NdArray,
  NpyError,
  familyOf,
  hasObject,
  openWeights,
  shapeRepr,
  encodeNpy,
  type WeightFile,
  type DType,
  type NpyHeader,
  type NpzArchive,
  type ObjectArrayCodec,
} from '@npyts/core';
import { jsonValue, numpyScalarText, readExactItem, readRegionFromBytes, type ExactFloat } from '@npyts/core/plumbing';

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const PAGE_ROWS = 50;
const MAX_COLS = 40;
const PLOT_BYTES = 16 << 20;

/** An array to show: its header, and a way to read a region of it. */
interface Shown {
  label: string;
  header: NpyHeader;
  read(start: number[], count: number[]): Promise<NdArray>;
  /** Bytes moved so far, for remote arrays. */
  transfer?: () => string;
}

let shown: Shown | null = null;
let page = 0;
let sliceIndex: number[] = [];

function showError(e: unknown): void {
  const el = $('error');
  let text = e instanceof Error ? e.message : String(e);
  if (e instanceof NpyError && e.code === 'PICKLE_UNSUPPORTED') {
    text =
      'This array holds Python objects, stored as a pickle. Tick "allow object arrays" to decode it with npyts\' safe unpickler (it never runs code), then open it again.';
  }
  el.textContent = `Cannot open this: ${text}`;
  el.hidden = false;
}

function clearAll(): void {
  for (const id of ['error', 'source', 'members', 'header', 'values', 'plots', 'read-all-controls']) $(id).hidden = true;
  $('fields').textContent = '';
}

async function pickleOption(): Promise<{ pickle?: ObjectArrayCodec }> {
  if (!$<HTMLInputElement>('allow-pickle').checked) return {};
  const { pickleCodec } = await import('@npyts/core/pickle');
  return { pickle: pickleCodec };
}

async function showBytes(label: string, bytes: Uint8Array): Promise<void> {
  // What the bytes are is core's format list's to say (formatOf), as for openWeights and the CLI.
  const format = formatOf(bytes.subarray(0, SNIFF_BYTES), bytes.length);
  if (format?.tensors === undefined && format !== null) return showWeights(label, await openWeights(bytes));
  if (typeof format?.tensors === 'function') {
    // A container whose members tell: a .npz's arrays, or a torch.save checkpoint's tensors.
    const archive = decodeNpz(bytes);
    if (!format.tensors(archive.entries.map((e) => e.name))) return showArchive(label, archive);
    await archive.close();
    return showWeights(label, await openWeights(bytes));
  }
  const header = readHeader(bytes);
  const options = await pickleOption();
  if (hasObject(header.dtype)) {
    // Object arrays are a pickle: decode whole (or refuse, saying how to opt in).
    const { decodeNpy } = await import('@npyts/core');
    const whole = decodeNpy(bytes, options);
    return showArray({ label, header, read: async (s, c) => sliceObjects(whole, s, c) });
  }
  await showArray({ label, header, read: async (s, c) => readRegionFromBytes(bytes, header, s, c) });
}

function sliceObjects(a: NdArray, start: number[], count: number[]): NdArray {
  const out: unknown[] = [];
  const walk = (axis: number, idx: number[]): void => {
    if (axis === a.ndim) {
      out.push(a.get(...idx));
      return;
    }
    for (let i = 0; i < count[axis]!; i++) walk(axis + 1, [...idx, start[axis]! + i]);
  };
  walk(0, []);
  return new NdArray(a.dtype, count, out, 'C');
}

function showArchive(label: string, archive: NpzArchive): void {
  $('source').hidden = false;
  $('source-info').textContent = `${label}: a .npz archive of ${archive.names.length} member${archive.names.length === 1 ? '' : 's'}`;
  const table = $<HTMLTableElement>('members-table');
  table.innerHTML = '<tr><th>name</th><th>size</th><th>stored as</th><th></th></tr>';
  archive.entries.forEach((e, i) => {
    const tr = table.insertRow();
    tr.insertCell().textContent = archive.names[i]!;
    tr.insertCell().textContent = `${e.size} bytes`;
    tr.insertCell().textContent = e.method === 0 ? 'stored' : `deflated, ${e.compressedSize} bytes`;
    const b = document.createElement('button');
    b.textContent = 'show';
    b.dataset.member = archive.names[i]!;
    b.onclick = () =>
      run(async () => {
        const bytes = await archive.bytes(archive.names[i]!);
        $('values').hidden = true;
        await showBytes(`${label}:${archive.names[i]}`, bytes);
        $('members').hidden = false;
      });
    tr.insertCell().append(b);
  });
  $('members').hidden = false;
  if (archive.names.length) (table.querySelector('button') as HTMLButtonElement).click();
}

/**
 * A weight file (GGUF, .safetensors, a torch.save checkpoint): its tensors listed with dtype, shape
 * and how each is stored (a GGUF quantization is dequantized to float32 when shown), each shown as an array.
 */
async function showWeights(label: string, weights: WeightFile): Promise<void> {
  $('source').hidden = false;
  const n = weights.names.length;
  $('source-info').textContent = `${label}: ${weights.format}, ${n} tensor${n === 1 ? '' : 's'}`;
  const table = $<HTMLTableElement>('members-table');
  table.innerHTML = '<tr><th>name</th><th>dtype and shape</th><th>stored as</th><th></th></tr>';
  for (const name of weights.names) {
    const tr = table.insertRow();
    tr.insertCell().textContent = name;
    let info: Awaited<ReturnType<WeightFile['info']>> | null = null;
    try {
      info = await weights.info(name);
    } catch (e) {
      tr.insertCell().textContent = e instanceof Error ? e.message : String(e);
    }
    if (!info) continue;
    tr.insertCell().textContent = `${info.dtype.name} ${shapeRepr(info.shape)}`;
    tr.insertCell().textContent = info.quantization !== undefined ? `${info.quantization} (dequantized to float32)` : 'as is';
    const b = document.createElement('button');
    b.textContent = 'show';
    b.dataset.member = name;
    b.onclick = () =>
      run(async () => {
        const tensor = await weights.get(name);
        $('values').hidden = true;
        await showBytes(`${label}:${name}`, encodeNpy(tensor));
        $('members').hidden = false;
      });
    tr.insertCell().append(b);
  }
  $('members').hidden = false;
  readAllControls(weights);
  const first = table.querySelector('button') as HTMLButtonElement | null;
  first?.click();
}

/**
 * "Read every tensor": `getAll` with a progress bar (bytes read of the total, and the tensor they
 * belong to) and a Cancel button that aborts it; what a big model's load looks like in a page.
 */
function readAllControls(weights: WeightFile): void {
  const bar = $<HTMLProgressElement>('load-progress');
  const status = $('load-status');
  const cancel = $<HTMLButtonElement>('cancel-read');
  bar.value = 0;
  bar.max = 1;
  status.textContent = '';
  $('read-all-controls').hidden = false;
  $<HTMLButtonElement>('read-all').onclick = () =>
    void run(async () => {
      const controller = new AbortController();
      cancel.onclick = () => controller.abort();
      cancel.hidden = false;
      const started = performance.now();
      try {
        const all = await weights.getAll({
          signal: controller.signal,
          onProgress: ({ bytes, total, tensor }) => {
            bar.max = Math.max(1, total);
            bar.value = bytes;
            status.textContent = `${bytes} of ${total} bytes (${tensor})`;
          },
        });
        const bytes = [...all.values()].reduce((n, a) => n + a.size * a.dtype.itemsize, 0);
        status.textContent = `all ${all.size} tensors read: ${bytes} bytes in ${Math.round(performance.now() - started)} ms`;
      } catch (e) {
        if (!(e instanceof Error && e.name === 'AbortError')) throw e;
        status.textContent = `cancelled at ${bar.value} of ${bar.max} bytes`;
      } finally {
        cancel.hidden = true;
      }
    });
}

function orderText(h: NpyHeader): string {
  return h.fortranOrder ? 'Fortran (column-major)' : 'C (row-major)';
}

function byteOrderText(dt: DType): string {
  if (dt.fields) return 'per field';
  return dt.byteOrder === '<' ? 'little-endian' : dt.byteOrder === '>' ? 'big-endian' : 'not applicable';
}

function fieldTree(dt: DType): HTMLElement {
  const ul = document.createElement('ul');
  for (const f of dt.fields ?? []) {
    const li = document.createElement('li');
    const sub = f.dtype.subarray;
    li.textContent = `${f.name}${f.title !== null ? ` (title "${f.title}")` : ''} @ offset ${f.offset}: ${sub ? `${sub.base.str} × (${sub.shape.join(', ')})` : f.dtype.fields ? 'record' : f.dtype.str}, ${f.dtype.itemsize} bytes`;
    if (f.dtype.fields) li.append(fieldTree(f.dtype));
    ul.append(li);
  }
  return ul;
}

async function showArray(s: Shown): Promise<void> {
  shown = s;
  page = 0;
  const h = s.header;
  $('source').hidden = false;
  $('source-info').textContent = s.label;
  const rows: [string, string][] = [
    ['format version', `${h.version[0]}.${h.version[1]}`],
    ['descr', h.dtype.descrLiteral],
    ['dtype', `${h.dtype.name} (${h.dtype.description})`],
    ['shape', `(${h.shape.join(', ')}${h.shape.length === 1 ? ',' : ''})`],
    ['order', orderText(h)],
    ['byte order', byteOrderText(h.dtype)],
    ['item size', `${h.dtype.itemsize} bytes`],
    ['data', `${h.dataBytes} bytes at offset ${h.dataOffset}`],
  ];
  const table = $<HTMLTableElement>('header-table');
  table.innerHTML = '';
  for (const [k, v] of rows) {
    const tr = table.insertRow();
    tr.dataset.key = k;
    const th = document.createElement('th');
    th.textContent = k;
    tr.append(th);
    tr.insertCell().textContent = v;
  }
  $('fields').textContent = '';
  if (h.dtype.fields) $('fields').append(fieldTree(h.dtype));
  $('header').hidden = false;
  sliceIndex = h.shape.slice(0, Math.max(0, h.shape.length - 2)).map(() => 0);
  buildSliceControls();
  await renderPage();
  await renderPlots();
}

function buildSliceControls(): void {
  const box = $('slice-controls');
  box.textContent = '';
  if (!shown || sliceIndex.length === 0) return;
  box.append('2-D slice at leading indices: ');
  sliceIndex.forEach((v, a) => {
    const input = document.createElement('input');
    input.type = 'number';
    input.min = '0';
    input.max = String(shown!.header.shape[a]! - 1);
    input.value = String(v);
    input.dataset.axis = String(a);
    input.onchange = () =>
      run(async () => {
        sliceIndex[a] = Math.max(0, Math.min(Number(input.value) | 0, shown!.header.shape[a]! - 1));
        page = 0;
        await renderPage();
        await renderPlots();
      });
    box.append(input);
  });
}

/** The 2-D view on screen: rows along the second-last axis (the only axis for 1-D). */
function viewGeometry(): { rows: number; cols: number } {
  const sh = shown!.header.shape;
  if (sh.length === 0) return { rows: 1, cols: 1 };
  if (sh.length === 1) return { rows: sh[0]!, cols: 1 };
  return { rows: sh[sh.length - 2]!, cols: sh[sh.length - 1]! };
}

function region(rowStart: number, rowCount: number, colCount: number): { start: number[]; count: number[] } {
  const n = shown!.header.shape.length;
  if (n === 0) return { start: [], count: [] };
  if (n === 1) return { start: [rowStart], count: [rowCount] };
  return { start: [...sliceIndex, rowStart, 0], count: [...sliceIndex.map(() => 1), rowCount, colCount] };
}

/**
 * A cell as numpy prints the value: a float as numpy's str of a scalar of its width (a float32 shows
 * `0.12573022`, not the digits of its float64 widening), at any depth (subarray and record fields included).
 * Text at the top of a cell is shown as it is; inside a list or a record it is quoted.
 */
function cellText(dt: DType, v: unknown, nested = false): string {
  if (dt.subarray) {
    const base = dt.subarray.base;
    const list = (x: unknown): string => (Array.isArray(x) ? `[${x.map(list).join(', ')}]` : cellText(base, x, true));
    return list(v);
  }
  if (dt.fields) {
    const record = v as Record<string, unknown>;
    return `{${dt.fields.map((f) => `${JSON.stringify(f.name)}: ${cellText(f.dtype, record[f.name], true)}`).join(', ')}}`;
  }
  // Floats as numpy's str of a scalar of their width (a long double from its exact value: readExactItem).
  const width = dt.realBytes;
  if (width && familyOf(dt) === 'float') return numpyScalarText(v as number | ExactFloat, width);
  if (width && familyOf(dt) === 'complex') {
    const c = v as { re: number | ExactFloat; im: number | ExactFloat };
    return `[${numpyScalarText(c.re, width)}, ${numpyScalarText(c.im, width)}]`;
  }
  const j = jsonValue(dt, v);
  return typeof j === 'string' && !nested ? j : JSON.stringify(j);
}

async function renderPage(): Promise<void> {
  const s = shown!;
  const { rows, cols } = viewGeometry();
  const pages = Math.max(1, Math.ceil(rows / PAGE_ROWS));
  page = Math.min(page, pages - 1);
  const rowStart = page * PAGE_ROWS;
  const rowCount = Math.min(PAGE_ROWS, rows - rowStart);
  const colCount = Math.min(cols, MAX_COLS);
  const table = $<HTMLTableElement>('values-table');
  table.innerHTML = '';
  $('page-info').textContent =
    `rows ${rows ? rowStart : 0}–${rowStart + Math.max(0, rowCount) - 1} of ${rows}${cols > colCount ? ` (first ${colCount} of ${cols} columns)` : ''}, page ${page + 1} of ${pages}`;
  const dt = s.header.dtype;
  const fields = dt.fields;
  const head = table.insertRow();
  const th = (t: string): void => {
    const c = document.createElement('th');
    c.textContent = t;
    head.append(c);
  };
  th('');
  if (s.header.shape.length <= 1 && fields) for (const f of fields) th(f.name);
  else for (let j = 0; j < (s.header.shape.length <= 1 ? 1 : colCount); j++) th(s.header.shape.length <= 1 ? 'value' : String(j));
  if (rowCount > 0 && (s.header.shape.length <= 1 || colCount > 0)) {
    const { start, count } = region(rowStart, rowCount, colCount);
    const a = await s.read(start, count);
    const perRow = s.header.shape.length <= 1 ? 1 : colCount;
    const strides = a.strides;
    for (let i = 0; i < rowCount; i++) {
      const tr = table.insertRow();
      tr.insertCell().textContent = String(rowStart + i);
      for (let j = 0; j < perRow; j++) {
        const pos =
          s.header.shape.length === 0 ? 0 : s.header.shape.length === 1 ? i * strides[0]! : i * strides[strides.length - 2]! + j * strides[strides.length - 1]!;
        const v = readExactItem(dt, a.data, pos);
        if (fields && s.header.shape.length <= 1) {
          for (const f of fields) tr.insertCell().textContent = cellText(f.dtype, (v as Record<string, unknown>)[f.name]);
        } else {
          tr.insertCell().textContent = cellText(dt, v);
        }
      }
    }
  }
  $('values').hidden = false;
  if (s.transfer) $('transfer').textContent = s.transfer();
}

function numeric(dt: DType): boolean {
  return !dt.fields && !dt.subarray && 'biufc'.includes(dt.kind);
}

function asNumber(dt: DType, v: unknown): number {
  if (familyOf(dt) === 'complex') {
    const c = v as { re: number; im: number };
    return Math.hypot(c.re, c.im);
  }
  if (typeof v === 'boolean') return v ? 1 : 0;
  return Number(v);
}

/** Viridis-like colour ramp. */
function colour(t: number): [number, number, number] {
  const stops: [number, number, number][] = [
    [68, 1, 84],
    [59, 82, 139],
    [33, 145, 140],
    [94, 201, 98],
    [253, 231, 37],
  ];
  const x = Math.max(0, Math.min(1, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const [a, b] = [stops[i]!, stops[i + 1]!];
  return [a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f];
}

async function renderPlots(): Promise<void> {
  const s = shown!;
  const dt = s.header.dtype;
  if (!numeric(dt) || s.header.shape.length === 0 || s.header.size === 0) {
    $('plots').hidden = true;
    return;
  }
  const { rows, cols } = viewGeometry();
  const fits = rows * cols * dt.itemsize <= PLOT_BYTES;
  const plotRows = fits ? rows : Math.min(rows, PAGE_ROWS);
  const { start, count } = region(fits ? 0 : page * PAGE_ROWS, Math.min(plotRows, rows - (fits ? 0 : page * PAGE_ROWS)), cols);
  const a = await s.read(start, count);
  const values = new Float64Array(a.size);
  const strides = a.strides;
  const r = count.length ? count[count.length - (s.header.shape.length === 1 ? 1 : 2)]! : 1;
  const c = s.header.shape.length === 1 ? 1 : cols;
  for (let i = 0; i < r; i++)
    for (let j = 0; j < c; j++) {
      const pos = s.header.shape.length === 1 ? i * strides[0]! : i * strides[strides.length - 2]! + j * strides[strides.length - 1]!;
      values[i * c + j] = asNumber(dt, readItem(dt, a.data, pos));
    }
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values)
    if (Number.isFinite(v)) {
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  if (lo === Infinity) {
    lo = 0;
    hi = 1;
  }
  const span = hi - lo || 1;
  // Heatmap: one pixel per element, scaled to the canvas.
  const heat = $<HTMLCanvasElement>('heatmap');
  const w = Math.min(c, 4096);
  const hgt = Math.min(r, 4096);
  const img = new ImageData(w, hgt);
  for (let i = 0; i < hgt; i++)
    for (let j = 0; j < w; j++) {
      const v = values[i * c + j]!;
      const [R, G, B] = Number.isFinite(v) ? colour((v - lo) / span) : [255, 0, 255];
      const p = (i * w + j) * 4;
      img.data[p] = R;
      img.data[p + 1] = G;
      img.data[p + 2] = B;
      img.data[p + 3] = 255;
    }
  const off = new OffscreenCanvas(w, hgt);
  off.getContext('2d')!.putImageData(img, 0, 0);
  const ctx = heat.getContext('2d')!;
  ctx.imageSmoothingEnabled = false;
  ctx.clearRect(0, 0, heat.width, heat.height);
  const scale = Math.min(heat.width / w, heat.height / hgt);
  ctx.drawImage(off, 0, 0, w * scale, hgt * scale);
  const bar = $<HTMLCanvasElement>('colorbar').getContext('2d')!;
  for (let y = 0; y < 512; y++) {
    const [R, G, B] = colour(1 - y / 511);
    bar.fillStyle = `rgb(${R},${G},${B})`;
    bar.fillRect(0, y, 40, 1);
  }
  // Histogram of the finite values.
  const bins = new Array(64).fill(0);
  for (const v of values) if (Number.isFinite(v)) bins[Math.min(63, Math.floor(((v - lo) / span) * 64))]++;
  const hist = $<HTMLCanvasElement>('histogram').getContext('2d')!;
  hist.clearRect(0, 0, 512, 256);
  const peak = Math.max(1, ...bins);
  hist.fillStyle = '#4a7fb5';
  bins.forEach((n, i) => hist.fillRect(i * 8, 256 - (n / peak) * 240, 7, (n / peak) * 240));
  $('plot-info').textContent =
    `${fits ? `all ${r}×${c}` : `the ${r} rows on this page (the whole slice is larger than ${PLOT_BYTES >> 20} MiB)`}; colour scale ${lo} … ${hi}${dt.kind === 'c' ? ' (magnitude)' : ''}`;
  $('plots').hidden = false;
  if (s.transfer) $('transfer').textContent = s.transfer();
}

async function openUrl(url: string): Promise<void> {
  if (/\.npz($|\?)/i.test(url)) {
    const res = await fetch(url);
    if (!res.ok) throw new Error(`HTTP ${res.status} for ${url}`);
    return showArchive(url, decodeNpz(new Uint8Array(await res.arrayBuffer())));
  }
  // A first request of 64 KiB: a small file is read whole in it (one request), a large one's header.
  const h = await openNpyUrl(url, { firstRequest: 64 << 10 });
  if (familyOf(h.header.dtype) === 'object') {
    const res = await fetch(url);
    return showBytes(url, new Uint8Array(await res.arrayBuffer()));
  }
  await showArray({
    label: `${url} (${h.size} bytes on the server)`,
    header: h.header,
    read: (s, c) => h.read(s, c),
    transfer: () => `${h.stats.requests} range request${h.stats.requests === 1 ? '' : 's'}, ${h.stats.bytes} bytes transferred of ${h.size}`,
  });
}

async function run(task: () => Promise<void>): Promise<void> {
  document.body.dataset.state = 'busy';
  try {
    await task();
  } catch (e) {
    showError(e);
  } finally {
    document.body.dataset.state = 'idle';
  }
}

function openFile(file: File): void {
  void run(async () => {
    clearAll();
    $('transfer').textContent = '';
    const label = `${file.name} (${file.size} bytes)`;
    const first = new Uint8Array(await file.slice(0, SNIFF_BYTES).arrayBuffer());
    // A .npy is read by slices of the file: a dropped multi-gigabyte array costs its header and the
    // rows on screen. Archives and object arrays are read whole.
    if (formatOf(first, file.size)?.name === 'npy') {
      const source = blobSource(file);
      // Object arrays (a pickle, no regions) are refused by openNpySource: they are read whole below.
      const h = await openNpySource(source, { name: file.name }).catch((e: unknown) => {
        if (e instanceof NpyError && e.code === 'PICKLE_UNSUPPORTED') return null;
        throw e;
      });
      if (h) {
        return showArray({
          label,
          header: h.header,
          read: (s, c) => h.read(s, c),
          transfer: () => `${source.stats.reads} slice${source.stats.reads === 1 ? '' : 's'} of the file read, ${source.stats.bytes} bytes of ${file.size}`,
        });
      }
    }
    // A weight file (GGUF, .safetensors) is read by slices too: its header, then each tensor shown.
    const format = formatOf(first, file.size);
    if (format !== null && format.tensors === undefined) return showWeights(label, await openWeights(file));
    await showBytes(label, new Uint8Array(await file.arrayBuffer()));
  });
}

$<HTMLInputElement>('file').onchange = (e) => {
  const input = e.target as HTMLInputElement;
  const f = input.files?.[0];
  if (f) openFile(f);
  input.value = ''; // so that choosing the same file again (say, after allowing pickles) opens it again
};
$('load-url').onclick = () =>
  void run(async () => {
    clearAll();
    await openUrl($<HTMLInputElement>('url').value.trim());
  });
$('prev').onclick = () =>
  void run(async () => {
    if (page > 0) {
      page--;
      await renderPage();
    }
  });
$('next').onclick = () =>
  void run(async () => {
    const { rows } = viewGeometry();
    if ((page + 1) * PAGE_ROWS < rows) {
      page++;
      await renderPage();
    }
  });
document.addEventListener('dragover', (e) => {
  e.preventDefault();
  document.body.classList.add('dragging');
});
document.addEventListener('dragleave', () => document.body.classList.remove('dragging'));
document.addEventListener('drop', (e) => {
  e.preventDefault();
  document.body.classList.remove('dragging');
  const f = e.dataTransfer?.files[0];
  if (f) openFile(f);
});
$('run-demo').onclick = () =>
  void run(async () => {
    const { runDemo } = await import('./demo.js');
    // A relative URL: npyts resolves it against the page, as fetch would.
    $('demo-result').textContent = await runDemo('demo/digits-mlp.npz');
  });
$('run-torch-demo').onclick = () =>
  void run(async () => {
    const { runTorchDemo } = await import('./demo.js');
    $('torch-demo-result').textContent = await runTorchDemo('demo/digits-cnn.npz');
  });
const initial = new URLSearchParams(location.search).get('url');
if (initial) {
  $<HTMLInputElement>('url').value = initial;
  $('load-url').click();
}
document.body.dataset.state = 'idle';

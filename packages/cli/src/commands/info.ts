/** `npyts info`: the header of each input, as a line, as JSON, or as a TypeScript descr constant. */
import { raggedInfo, readHeader, shapeRepr, type NpyHeader } from '@npyts/core';
import { checkDataSize } from '@npyts/core/plumbing';
import { readNpyHeaderSync, openRaggedSync } from '@npyts/core/node';
import { statSync } from 'node:fs';
import { basename } from 'node:path';
import { type Io, UsageError, withFile, printable, stdin } from '../session.js';
import type { Parsed } from '../args.js';
import { target, isArchive, withArchive, checkIsFile } from '../targets.js';
import { isWeightFile, weightsInfo } from '../weights.js';

export function orderName(h: NpyHeader): string {
  return h.fortranOrder ? 'Fortran (F) order' : 'C order';
}

export function infoLine(file: string, h: NpyHeader): string {
  return `${printable(file)}: ${printable(h.dtype.descrLiteral)} (${h.dtype.name}, ${h.dtype.description}), shape ${shapeRepr(h.shape)}, ${orderName(h)}, format ${h.version[0]}.${h.version[1]}, ${h.dataBytes} data bytes`;
}

export function infoJSON(file: string, h: NpyHeader): Record<string, unknown> {
  return {
    file,
    version: h.version,
    descr: h.dtype.descr,
    dtype: h.dtype.name,
    description: h.dtype.description,
    shape: h.shape,
    fortran_order: h.fortranOrder,
    size: h.size,
    data_offset: h.dataOffset,
    data_bytes: h.dataBytes,
  };
}

/** A value of a numpy descr (strings, numbers, lists) as TypeScript source. */
function tsLiteral(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(tsLiteral).join(', ')}]`;
  if (typeof value === 'string')
    return `'${value.replace(/[\\']/g, (c) => `\\${c}`).replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}'`;
  return String(value);
}

/**
 * `--ts`: the descr as a constant to paste into TypeScript, so that `loadNpy(path, { expect })` types
 * the array (and its record fields) as the file holds it.
 */
export function infoTypeScript(label: string, name: string, h: NpyHeader, taken: Set<string>): string {
  const words = name
    .replace(/\.np[yz]$/i, '')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
  const stem = words.map((w, i) => (i === 0 ? w[0]!.toLowerCase() : w[0]!.toUpperCase()) + w.slice(1)).join('') || 'array';
  const base = `${/^[0-9]/.test(stem) ? '_' : ''}${stem}Descr`;
  // Two inputs of one name (a.npy in two folders) get two constants that can be pasted together.
  let ident = base;
  for (let k = 2; taken.has(ident); k++) ident = `${base}${k}`;
  taken.add(ident);
  return `// ${printable(label)}: shape ${shapeRepr(h.shape)}, ${orderName(h)}\nexport const ${ident} = ${tsLiteral(h.dtype.descr)} as const;\n`;
}

export async function cmdInfo(p: Parsed, io: Io): Promise<void> {
  if (p.positional.length === 0) throw new UsageError('info needs at least one FILE');
  const json = p.flags.has('--json');
  const ts = p.flags.has('--ts');
  if (json && ts) throw new UsageError('--json and --ts exclude each other');
  const constants = new Set<string>();
  const docs: Record<string, unknown>[] = [];
  for (const arg of p.positional) {
    const t = target(arg, true);
    checkIsFile(t.file);
    if (withFile(t.label, () => isWeightFile(t))) {
      if (ts) throw new UsageError('--ts describes .npy and .npz arrays; not a weight file');
      await weightsInfo(t, json, io.stdout, docs);
      continue;
    }
    if (t.member === undefined && !isArchive(t.file)) {
      const h = withFile(t.label, () => {
        const header = t.file === '-' ? readHeader(stdin()) : readNpyHeaderSync(t.file);
        // np.load fails on a file whose data is cut short; so does info.
        checkDataSize(header, (t.file === '-' ? stdin().length : statSync(t.file).size) - header.dataOffset);
        return header;
      });
      const ragged = t.file !== '-' ? withFile(t.label, () => raggedInfo(h.dtype)) : null;
      const raggedText = ragged
        ? withFile(t.label, () => {
            const r = openRaggedSync(t.file);
            try {
              const text = r.kind === 'utf8' || r.kind === 'utf8z';
              const what = text
                ? 'UTF-8 strings'
                : r.kind === 'ref'
                  ? `references to slices of ${r.heapDtype.descrLiteral}`
                  : `arrays (k${r.tail.map((d) => `, ${d}`).join('')}) of ${r.heapDtype.descrLiteral}`;
              return {
                text: `ragged: ${r.length} ${what}, shape ${r.raggedShape}, ${r.layout}, in heap ${ragged.heap} (${r.heapLength} ${text ? 'bytes' : 'rows'})`,
                json: { elements: r.length, kind: r.kind, layout: r.layout, shape: r.raggedShape, heap: ragged.heap, heap_rows: r.heapLength },
              };
            } finally {
              r.close();
            }
          })
        : null;
      if (json) docs.push({ ...infoJSON(t.label, h), ...(raggedText ? { ragged: raggedText.json } : {}) });
      else if (ts) io.stdout(infoTypeScript(t.label, basename(t.file === '-' ? 'stdin' : t.file), h, constants));
      else io.stdout(`${infoLine(t.label, h)}${raggedText ? `; ${raggedText.text}` : ''}\n`);
      continue;
    }
    withArchive(t, (archive) => {
      const names = t.member !== undefined ? [t.member] : archive.names;
      for (const name of names) {
        const entry = archive.entry(name);
        // The header alone, from the member's first bytes: no member is inflated whole, no pickle decoded.
        const header = withFile(`${t.file}:${name}`, () => archive.headerSync(name));
        const stored = entry.method === 0 ? 'stored' : `deflated ${entry.compressedSize} bytes`;
        if (json)
          docs.push({
            ...infoJSON(`${t.file}:${name}`, header),
            member: entry.name,
            compression: entry.method === 0 ? 'stored' : 'deflate',
            compressed_size: entry.compressedSize,
          });
        else if (ts) io.stdout(infoTypeScript(`${t.file}:${name}`, name, header, constants));
        else io.stdout(`${infoLine(`${t.file}:${name}`, header)}, ${stored}\n`);
      }
      if (names.length === 0 && !json) io.stdout(`${printable(t.file)}: empty archive\n`);
    });
  }
  if (json) io.stdout(JSON.stringify(docs.length === 1 && p.positional.length === 1 ? docs[0] : docs) + '\n');
}

import { parseArgs as parseArgsOfNode } from 'node:util';
import { DEFAULT_TOLERANCE, type Tolerance } from './diff.js';
import { UsageError } from './session.js';

export const USAGE = `usage: npyts <command> [options]

Commands:
  info FILE... [--json]        one line per array: dtype, shape, order, format version, data bytes
      --ts                     the descr of each array as a TypeScript constant: paste it and pass
                               it as { expect } to loadNpy to type the array and its record fields
  show FILE [--json]           print the array as numpy's repr does, or its JSON document with --json
                               (a .npy file's document is written as it is read: any size)
      --limit N                with --json: data is the first N elements, row-major, as one flat list
  convert IN OUT [options]     re-encode; with no options numpy's own bytes come back
      --order C|F              memory order of the output
      --byteorder little|big|native
      --version 1|2|3          format version (default: numpy's automatic choice)
      --compress | --store     for .npz output: deflate members (np.savez_compressed) or store
                               them (np.savez); default: as the input archive, else store
      --ragged                 an object array of arrays or strings (or a StringDType array)
                               → a ragged index OUT with its heap OUT.heap / OUT.strings
      --layout L               with --ragged: ranges (default), offsets (compact, Arrow-style)
                               or zero-terminated (strings)
      --object                 a ragged index → numpy's object array (a pickle)
      --string-dtype           with --object: strings as numpy 2's StringDType array
      --dtype D                reading a .csv/.tsv: the dtype ('<f8' by default, as np.loadtxt;
                               a record descr takes one column per field, after a header line)
      --max-shard-size S       for OUT.safetensors: Hugging Face's sharded layout, as huggingface_hub's
                               save_torch_state_dict writes it (shards of at most S bytes, '5GB',
                               '500MB', or a number; model-0000k-of-0000n.safetensors and its
                               model.safetensors.index.json beside OUT, or OUT itself for one shard);
                               weight files are streamed, one tensor in memory at a time
      --type T                 for OUT.gguf: the tensor type, as gguf-py names it: f32, f16, bf16,
                               q8_0, q4_0, q4_1, q5_0, q5_1, tq1_0, tq2_0 (default: each float
                               tensor's own); 1-d tensors stay F32 and rows that are not whole
                               blocks F16, as llama.cpp's convert does; integers stay themselves
      OUT.csv / OUT.tsv        a 1-d or 2-d array, or a 1-d record array (columns under a header
                               line), as text: floats as np.savetxt(fmt='%.17g'), integers exactly

  refs FILE... [options]       a reference set (kerchunk JSON) that xarray, dask, zarr-python and
                               zarrita open as a Zarr group, reading the files where they lie
      -o, --output OUT         write it to OUT (default: standard output)
      --zarr-format 2|3        Zarr's metadata: v3 zarr.json (default) or v2 .zarray/.zattrs
      --chunk-bytes N          about N bytes a chunk, whole rows dividing the axis (default 64 MiB)
      --concat 0               join .npy files of one dtype and trailing shape along axis 0
      --url URL                where the references point (default each file's absolute path);
                               {name} stands for each file's name: s3://bucket/run/{name}

  merge-lora BASE ADAPTER -o OUT.safetensors
                               a PEFT LoRA adapter (the folder save_pretrained writes:
                               adapter_config.json, adapter_model.safetensors) merged into its
                               base (any weight file) as peft's merge_and_unload() merges it;
                               or a llama.cpp GGUF LoRA adapter (ADAPTER.gguf) into a base of
                               GGUF's tensor names, as llama.cpp applies it
      --scale S                how much of the adapter: 0 the base unchanged, 1 (default) all

  diff A B [--rtol R --atol A]  compare two arrays (or archives, member by member) as numpy's
                               np.testing.assert_allclose does (rtol 1e-7, atol 0; NaN equals
                               NaN); prints the mismatches; exit 0 equal, 1 different

Object arrays (dtype |O) hold a Python pickle: show and convert read them only with
--allow-pickle, through npyts' own unpickler, which rebuilds plain data and never runs code.

FILE is a .npy, a .npz (every member), ARCHIVE.npz:NAME for one member, or - for standard
input (and OUT - for standard output). convert turns
.npz into .npz, a member into a .npy (IN.npz:NAME OUT.npy), and a .npy into an archive
(OUT.npz, or OUT.npz:NAME to name the member).

Weight files are read as they are, told apart by their bytes: a torch.save file (.pt, .pth,
.bin; read with PyTorch's weights_only rules, nothing run), a .safetensors file, or a sharded
set's *.safetensors.index.json. info lists their tensors (FILE:NAME for one); show prints them;
convert writes them as a .npz, one (FILE:NAME) as a .npy, or any arrays as OUT.safetensors or
OUT.gguf (a GGUF's own metadata is kept in a GGUF written from it).

Options:
  -q, --quiet                  no progress bar (one is drawn on standard error, when it is a
                               terminal, for a convert to .npz or a show --json past a second)
  -h, --help                   show this help
  --version                    print the npyts version and whether @npyts/native is in use
                               (without a command; NPYTS_NATIVE=0 turns it off)

Exit status: 0 success, 1 bad input (one line on stderr) or, for diff, arrays that differ,
2 usage error.
Set NPYTS_DEBUG=1 to see stack traces.`;

export interface Parsed {
  positional: string[];
  flags: Map<string, string | true>;
}

/** Every option, for node:util's parseArgs (strict: an unknown option is a usage error). */
export const OPTIONS = {
  json: { type: 'boolean' },
  ts: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  compress: { type: 'boolean' },
  store: { type: 'boolean' },
  'allow-pickle': { type: 'boolean' },
  quiet: { type: 'boolean', short: 'q' },
  ragged: { type: 'boolean' },
  object: { type: 'boolean' },
  'string-dtype': { type: 'boolean' },
  layout: { type: 'string' },
  order: { type: 'string' },
  byteorder: { type: 'string' },
  version: { type: 'string' },
  limit: { type: 'string' },
  rtol: { type: 'string' },
  atol: { type: 'string' },
  dtype: { type: 'string' },
  type: { type: 'string' },
  output: { type: 'string', short: 'o' },
  url: { type: 'string' },
  'chunk-bytes': { type: 'string' },
  concat: { type: 'string' },
  'zarr-format': { type: 'string' },
  'max-shard-size': { type: 'string' },
  scale: { type: 'string' },
} as const;

/** The options each command takes, beyond --help, --quiet and --allow-pickle; any other is a usage error. */
const COMMAND_OPTIONS: Record<string, readonly string[]> = {
  info: ['json', 'ts'],
  show: ['json', 'limit'],
  convert: ['compress', 'store', 'ragged', 'object', 'string-dtype', 'layout', 'order', 'byteorder', 'version', 'dtype', 'max-shard-size', 'type'],
  diff: ['rtol', 'atol'],
  refs: ['output', 'url', 'chunk-bytes', 'concat', 'zarr-format'],
  'merge-lora': ['output', 'scale'],
};
const GLOBAL_OPTIONS = ['help', 'quiet', 'allow-pickle'];

/** Refuses an option the command does not take (it would otherwise be ignored). */
export function checkOptionsOf(command: string, p: Parsed): void {
  const own = COMMAND_OPTIONS[command];
  if (!own) return;
  for (const flag of p.flags.keys()) {
    const name = flag.slice(2);
    if (!own.includes(name) && !GLOBAL_OPTIONS.includes(name)) throw new UsageError(`${command} does not take ${flag}`);
  }
}

export function parseArgs(args: string[]): Parsed {
  let parsed: ReturnType<typeof parseArgsStrict>;
  try {
    parsed = parseArgsStrict(args);
  } catch (e) {
    throw new UsageError((e as Error).message.replace(/\. To specify a positional argument.*$/s, ''));
  }
  const flags = new Map<string, string | true>();
  for (const [name, value] of Object.entries(parsed.values)) if (value !== undefined && value !== false) flags.set(`--${name}`, value);
  return { positional: parsed.positionals, flags };
}

export function parseArgsStrict(args: string[]) {
  return parseArgsOfNode({ args, options: OPTIONS, allowPositionals: true, strict: true });
}

/** `--limit N`: a count of elements, or undefined. */
export function limitOf(p: Parsed): number | undefined {
  const v = p.flags.get('--limit');
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(String(v))) throw new UsageError('--limit must be a count of elements');
  if (!p.flags.has('--json')) throw new UsageError('--limit goes with --json');
  return Number(v);
}

export function toleranceOf(p: Parsed): Tolerance {
  const value = (flag: string, fallback: number): number => {
    const v = p.flags.get(flag);
    if (v === undefined) return fallback;
    const x = Number(v);
    if (!Number.isFinite(x) || x < 0) throw new UsageError(`${flag} must be a number ≥ 0`);
    return x;
  };
  return { rtol: value('--rtol', DEFAULT_TOLERANCE.rtol), atol: value('--atol', DEFAULT_TOLERANCE.atol) };
}

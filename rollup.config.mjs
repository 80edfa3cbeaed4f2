// Builds every package that has sources: ESM (.js) + CommonJS (.cjs) + bundled .d.ts.
// Entries of one package are built together so that they share chunks (one NdArray class).
import { existsSync, rmSync } from 'node:fs';
import esbuild from 'rollup-plugin-esbuild';
import { dts } from 'rollup-plugin-dts';
import { nodeResolve } from '@rollup/plugin-node-resolve';
import commonjs from '@rollup/plugin-commonjs';
import terser from '@rollup/plugin-terser';

const packages = {
  core: { index: 'src/index.ts', node: 'src/node/index.ts', pickle: 'src/pickle/index.ts', plumbing: 'src/plumbing.ts' },
  cli: { main: 'src/main.ts' },
  'stdlib-adapter': { index: 'src/index.ts' },
  'tfjs-adapter': { index: 'src/index.ts', 'torch-layers': 'src/torch-layers.ts', 'keras-layers': 'src/keras-layers.ts' },
  'onnxruntime-adapter': { index: 'src/index.ts' },
};

// Ambient module declarations a package's types use (its .d.ts must reference them for its users).
const typeReferences = { 'stdlib-adapter': '/// <reference types="@stdlib/types" />' };

/**
 * Types for `require`: every emitted `.d.ts` again as `.d.cts`, with its relative imports pointing at
 * the `.cjs` files, so that TypeScript sees CommonJS types where Node loads CommonJS code (a `.d.ts`
 * beside `"type": "module"` would describe ESM, and CommonJS users would get false errors).
 */
const commonJsTypes = {
  name: 'common-js-types',
  generateBundle(_, bundle) {
    for (const file of Object.values(bundle)) {
      if (file.type !== 'chunk' || !file.fileName.endsWith('.d.ts')) continue;
      const source = file.code.replace(/(from\s+|import\s*\(\s*)(['"])(\.{1,2}\/[^'"]+)\.js\2/g, '$1$2$3.cjs$2');
      this.emitFile({ type: 'asset', fileName: file.fileName.replace(/\.d\.ts$/, '.d.cts'), source });
    }
  },
};

// Everything that is not a relative import stays an import: workspace packages, peers, node:*.
const external = (id) => !id.startsWith('.') && !id.startsWith('/') && !id.startsWith('\0');

const configs = [];
for (const [dir, entries] of Object.entries(packages)) {
  const root = `packages/${dir}`;
  const input = Object.fromEntries(
    Object.entries(entries)
      .filter(([, file]) => existsSync(`${root}/${file}`))
      .map(([name, file]) => [name, `${root}/${file}`]),
  );
  if (Object.keys(input).length === 0) continue;
  rmSync(`${root}/dist`, { recursive: true, force: true }); // no stale chunks from earlier builds
  configs.push({
    input,
    external,
    plugins: [esbuild({ target: 'es2022', tsconfig: 'tsconfig.json' })],
    output: [
      // hoistTransitiveImports: no bare `import 'fflate'` in entries that only re-export a chunk using it.
      {
        dir: `${root}/dist`,
        format: 'es',
        entryFileNames: '[name].js',
        chunkFileNames: 'chunks/[name]-[hash].js',
        sourcemap: false,
        hoistTransitiveImports: false,
      },
      // dynamicImportInCjs: false makes `import('@npyts/core/node')` a require in the CommonJS build, so
      // that a CommonJS program gets core's CommonJS build everywhere (one copy of every class).
      {
        dir: `${root}/dist`,
        format: 'cjs',
        entryFileNames: '[name].cjs',
        chunkFileNames: 'chunks/[name]-[hash].cjs',
        sourcemap: false,
        dynamicImportInCjs: false,
      },
    ],
  });
  if (dir !== 'cli') {
    configs.push({
      input,
      external,
      // Members marked @internal (used across modules, not part of the API) stay out of the published types.
      plugins: [dts({ tsconfig: 'tsconfig.json', compilerOptions: { stripInternal: true } }), commonJsTypes],
      output: {
        dir: `${root}/dist`,
        format: 'es',
        entryFileNames: '[name].d.ts',
        chunkFileNames: 'chunks/[name]-[hash].d.ts',
        ...(typeReferences[dir] ? { banner: typeReferences[dir] } : {}),
      },
    });
  }
}
// The viewer page: one browser bundle of the project's own packages (and tfjs for the demo, split
// into a chunk loaded only when the demo runs).
rmSync('viewer/dist', { recursive: true, force: true });
configs.push({
  input: { main: 'viewer/src/main.ts', demo: 'viewer/src/demo.ts' },
  plugins: [
    nodeResolve({ browser: true, exportConditions: ['browser', 'import', 'default'] }),
    commonjs(),
    esbuild({ target: 'es2022', tsconfig: 'tsconfig.json' }),
    terser(),
  ],
  onwarn(warning, warn) {
    // tfjs-core's own sources have circular imports and `this` at the top level; they are harmless.
    if (warning.code === 'CIRCULAR_DEPENDENCY' || warning.code === 'THIS_IS_UNDEFINED') return;
    warn(warning);
  },
  output: { dir: 'viewer/dist', format: 'es', entryFileNames: '[name].js', chunkFileNames: 'chunks/[name]-[hash].js' },
});

export default configs;

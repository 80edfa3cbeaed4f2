// Builds every package that has sources: ESM (.js) + CommonJS (.cjs) + bundled .d.ts.
// Entries of one package are built together so that they share chunks (one NdArray class).
import { existsSync, rmSync } from 'node:fs';
import esbuild from 'rollup-plugin-esbuild';
import { dts } from 'rollup-plugin-dts';
import { nodeResolve } from '@rollup/plugin-node-resolve';
import commonjs from '@rollup/plugin-commonjs';
import terser from '@rollup/plugin-terser';

const packages = {
  core: { index: 'src/index.ts', node: 'src/node/index.ts', pickle: 'src/pickle/index.ts' },
  cli: { main: 'src/main.ts' },
  'stdlib-adapter': { index: 'src/index.ts' },
  'tfjs-adapter': { index: 'src/index.ts' },
};

// Ambient module declarations a package's types use (its .d.ts must reference them for its users).
const typeReferences = { 'stdlib-adapter': '/// <reference types="@stdlib/types" />' };

// Everything that is not a relative import stays an import: workspace packages, peers, node:*.
const external = (id) => !id.startsWith('.') && !id.startsWith('/') && !id.startsWith('\0');

const configs = [];
for (const [dir, entries] of Object.entries(packages)) {
  const root = `packages/${dir}`;
  const input = Object.fromEntries(
    Object.entries(entries).filter(([, file]) => existsSync(`${root}/${file}`)).map(([name, file]) => [name, `${root}/${file}`]),
  );
  if (Object.keys(input).length === 0) continue;
  rmSync(`${root}/dist`, { recursive: true, force: true }); // no stale chunks from earlier builds
  configs.push({
    input,
    external,
    plugins: [esbuild({ target: 'es2022', tsconfig: 'tsconfig.json' })],
    output: [
      { dir: `${root}/dist`, format: 'es', entryFileNames: '[name].js', chunkFileNames: 'chunks/[name]-[hash].js', sourcemap: true },
      { dir: `${root}/dist`, format: 'cjs', entryFileNames: '[name].cjs', chunkFileNames: 'chunks/[name]-[hash].cjs', sourcemap: true },
    ],
  });
  if (dir !== 'cli') {
    configs.push({
      input,
      external,
      plugins: [dts({ tsconfig: 'tsconfig.json' })],
      output: { dir: `${root}/dist`, format: 'es', entryFileNames: '[name].d.ts', chunkFileNames: 'chunks/[name]-[hash].d.ts', ...(typeReferences[dir] ? { banner: typeReferences[dir] } : {}) },
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

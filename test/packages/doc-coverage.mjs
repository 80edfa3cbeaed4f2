// Which public symbols of the packages lack TSDoc: every exported function, class and constant needs
// an @example; every exported type and interface needs a description. Used by docs.test.mjs and
// runnable alone: `node test/packages/doc-coverage.mjs` lists what is missing.
import ts from 'typescript';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const ENTRIES = [
  'packages/core/src/index.ts',
  'packages/core/src/node/index.ts',
  'packages/core/src/pickle/index.ts',
  'packages/core/src/plumbing.ts',
  'packages/tfjs-adapter/src/index.ts',
  'packages/stdlib-adapter/src/index.ts',
  'packages/onnxruntime-adapter/src/index.ts',
];

/** `[entry, name, what is missing, file:line]` for every public symbol without the documentation it needs. */
export function undocumented() {
  const config = ts.readConfigFile(join(root, 'tsconfig.json'), ts.sys.readFile).config;
  const parsed = ts.parseJsonConfigFileContent(config, ts.sys, root);
  const program = ts.createProgram(
    ENTRIES.map((e) => join(root, e)),
    parsed.options,
  );
  const checker = program.getTypeChecker();
  const missing = [];
  for (const entry of ENTRIES) {
    const source = program.getSourceFile(join(root, entry));
    const moduleSymbol = checker.getSymbolAtLocation(source);
    for (const exported of checker.getExportsOfModule(moduleSymbol)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const decl = symbol.declarations?.[0];
      if (!decl) continue;
      const isValue = (symbol.flags & (ts.SymbolFlags.Function | ts.SymbolFlags.Class | ts.SymbolFlags.Variable)) !== 0;
      // Overloads: the TSDoc may sit on any declaration (usually the first overload).
      const docs = (symbol.declarations ?? []).flatMap((d) => ts.getJSDocCommentsAndTags(d.kind === ts.SyntaxKind.VariableDeclaration ? d.parent.parent : d));
      const hasText = docs.some((d) => ts.isJSDoc(d) && (d.comment || d.tags?.length));
      const hasExample = docs.some((d) => ts.isJSDoc(d) && d.tags?.some((t) => t.tagName.text === 'example'));
      const where = `${decl.getSourceFile().fileName.slice(root.length + 1)}:${decl.getSourceFile().getLineAndCharacterOfPosition(decl.getStart()).line + 1}`;
      if (isValue && !hasExample) missing.push([entry, exported.name, '@example', where]);
      else if (!isValue && !hasText) missing.push([entry, exported.name, 'description', where]);
    }
  }
  return missing;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const missing = undocumented();
  for (const [entry, name, what, where] of missing) console.log(`${where} ${name} ${what} (${entry})`);
  console.log(`${missing.length} missing`);
}

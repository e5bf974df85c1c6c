/**
 * Fails (exit 1) when the modules under src/ import each other in a cycle,
 * printing every cycle found, one per line: `a.ts -> b.ts -> a.ts`.
 *
 * Every kind of reference counts as an edge: static imports and re-exports,
 * `import type` (a type-only cycle still means two modules that can only be
 * understood together), dynamic `import()` and type-level `import('...')`.
 * Only relative specifiers are followed; `.js` resolves to the `.ts` beside it.
 *
 * Written here rather than taken from madge or dpdm: the TypeScript parser
 * the project already has finds every kind of import above, where a regular
 * expression would be fooled by comments and strings, and a few dozen lines
 * cost less than a dependency and its own parser to keep up to date.
 *
 * Usage: node scripts/check-import-cycles.js [root, default src]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const root = resolve(process.argv[2] ?? 'src');

/** Every .ts file under `dir` (declaration files excepted). */
function sourceFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The module specifiers `file` refers to, in every form listed in the module comment. */
function specifiers(file) {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found = [];
  const visit = (node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      if (ts.isStringLiteral(node.moduleSpecifier)) found.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [argument] = node.arguments;
      if (argument && ts.isStringLiteralLike(argument)) found.push(argument.text);
    } else if (ts.isImportTypeNode(node)) {
      const argument = node.argument;
      if (ts.isLiteralTypeNode(argument) && ts.isStringLiteral(argument.literal)) found.push(argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The file a relative specifier names, or undefined for a package or a file outside the graph. */
function resolveSpecifier(from, specifier, known) {
  if (!specifier.startsWith('.')) return undefined;
  const target = resolve(dirname(from), specifier);
  for (const candidate of [target.replace(/\.js$/, '.ts'), target, `${target}.ts`, join(target, 'index.ts')]) {
    if (known.has(candidate)) return candidate;
  }
  return undefined;
}

const files = sourceFiles(root).sort();
const known = new Set(files);
const edges = new Map(
  files.map((file) => [
    file,
    [...new Set(specifiers(file).map((s) => resolveSpecifier(file, s, known)))].filter(Boolean).sort(),
  ]),
);

/**
 * Depth-first search; every edge back to a module still on the path closes a
 * cycle, so every knot of modules shows at least one of its cycles (breaking
 * it may reveal another: run again). Each cycle is printed once, starting
 * from its first module by name.
 */
const cycles = new Map();
const state = new Map(); // file -> 'open' (on the path) | 'done'
const path = [];
function visit(file) {
  state.set(file, 'open');
  path.push(file);
  for (const next of edges.get(file)) {
    if (state.get(next) === 'open') {
      const cycle = path.slice(path.indexOf(next));
      const first = cycle.indexOf([...cycle].sort()[0]);
      const rotated = [...cycle.slice(first), ...cycle.slice(0, first)];
      const line = [...rotated, rotated[0]].map((f) => relative(process.cwd(), f)).join(' -> ');
      cycles.set(line, line);
    } else if (!state.has(next)) {
      visit(next);
    }
  }
  path.pop();
  state.set(file, 'done');
}
for (const file of files) if (!state.has(file)) visit(file);

if (cycles.size > 0) {
  for (const line of cycles.keys()) console.error(`import cycle: ${line}`);
  console.error(`${cycles.size} import cycle(s) under ${relative(process.cwd(), root) || '.'}: break each one`);
  process.exit(1);
}
console.log(`no import cycle among ${files.length} modules under ${relative(process.cwd(), root) || '.'}`);

/**
 * The declared environment (src/environment.ts) against what the code
 * really reads, what `notarize --help` shows and what README's table says.
 * The code is read with the TypeScript parser, so comments and messages
 * that merely mention a variable are not taken for reads.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli.js';
import { ENVIRONMENT_VARIABLES, environmentHelp, inCI, SECRET_VARIABLES } from '../../src/environment.js';
import { ALL_SETTINGS } from '../../src/settings.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { bufferIO } from '../helpers/io.js';

const SRC = join(REPO_ROOT, 'src');

/** A name shaped like an environment variable: `NOTARIZE_TOKEN`, `https_proxy`. */
const VARIABLE_SHAPE = /^(?:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z]+_proxy)$/;

/** Literals of that shape that are not variables (error codes), in files that read variables by computed name. */
const NOT_VARIABLES = new Set(['invalid_proxy', 'ERR_STREAM_DESTROYED']);

/** `env`, `process.env`, `ctx.env`, `this.env`: an expression that is an environment. */
function isEnvironment(node: ts.Expression): boolean {
  return (
    (ts.isIdentifier(node) && node.text === 'env') || (ts.isPropertyAccessExpression(node) && node.name.text === 'env')
  );
}

/**
 * The environment variables a source file reads: `env.NAME`, `env['NAME']`,
 * `const { NAME } = env`, and, where a file reads `env[name]` with a computed
 * name, every string literal in it shaped like a variable's name (the lists
 * it loops over, as proxy-env.ts does).
 */
function variablesRead(fileName: string, text: string): Set<string> {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const read = new Set<string>();
  const literals = new Set<string>();
  let computed = false;
  const visit = (node: ts.Node): void => {
    if (ts.isPropertyAccessExpression(node) && isEnvironment(node.expression)) read.add(node.name.text);
    if (ts.isElementAccessExpression(node) && isEnvironment(node.expression)) {
      if (ts.isStringLiteralLike(node.argumentExpression)) read.add(node.argumentExpression.text);
      else computed = true;
    }
    if (ts.isVariableDeclaration(node) && node.initializer && isEnvironment(node.initializer)) {
      if (ts.isObjectBindingPattern(node.name)) {
        for (const element of node.name.elements) {
          const name = element.propertyName ?? element.name;
          if (ts.isIdentifier(name) || ts.isStringLiteral(name)) read.add(name.text);
        }
      }
    }
    if (ts.isStringLiteralLike(node) && VARIABLE_SHAPE.test(node.text) && !NOT_VARIABLES.has(node.text)) {
      literals.add(node.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  if (computed) for (const literal of literals) read.add(literal);
  return read;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every variable read under src/, with the files reading it. */
function readsUnderSrc(): Map<string, string[]> {
  const reads = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    for (const name of variablesRead(file, readFileSync(file, 'utf8'))) {
      reads.set(name, [...(reads.get(name) ?? []), relative(REPO_ROOT, file)]);
    }
  }
  return reads;
}

const declared = ENVIRONMENT_VARIABLES.flatMap((v) => v.names);

describe('the scan of src/', () => {
  it('sees reads in every form the code uses, and only reads', () => {
    const text = `
      // env.IN_A_COMMENT is not a read, nor is 'NOTARIZE_IN_A_MESSAGE' below
      const message = 'set NOTARIZE_IN_A_MESSAGE';
      const a = process.env.NOTARIZE_DIRECT;
      const b = ctx.env['NOTARIZE_QUOTED'];
      const c = this.env?.NOTARIZE_OPTIONAL;
      const { NOTARIZE_DESTRUCTURED, NOTARIZE_RENAMED: renamed } = env;
    `;
    expect([...variablesRead('direct.ts', text)].sort()).toEqual([
      'NOTARIZE_DESTRUCTURED',
      'NOTARIZE_DIRECT',
      'NOTARIZE_OPTIONAL',
      'NOTARIZE_QUOTED',
      'NOTARIZE_RENAMED',
    ]);
    const computed = `for (const name of ['ftp_proxy', 'FTP_PROXY', 'invalid_proxy', 'EAI_AGAIN_X']) use(env[name]);`;
    expect([...variablesRead('computed.ts', computed)].sort()).toEqual(['EAI_AGAIN_X', 'FTP_PROXY', 'ftp_proxy']);
  });

  it('finds the reads we know of, so it is not blind', () => {
    const reads = readsUnderSrc();
    for (const name of ['NOTARIZE_TOKEN', 'NOTARIZE_SANDBOX_FAULTS', 'HTTPS_PROXY', 'no_proxy', 'NO_COLOR', 'CI']) {
      expect(reads.has(name), name).toBe(true);
    }
  });
});

describe('the declared environment', () => {
  it('declares every variable the code under src/ reads', () => {
    const undeclared = [...readsUnderSrc()].filter(([name]) => !declared.includes(name));
    expect(
      undeclared.map(([name, files]) => `${name} (read in ${files.join(', ')})`),
      'declare them in src/environment.ts',
    ).toEqual([]);
  });

  it('declares only variables something reads: our code, or who `readBy` names', () => {
    const reads = readsUnderSrc();
    const unread = ENVIRONMENT_VARIABLES.filter((v) => v.readBy === undefined).flatMap((v) =>
      v.names.filter((name) => !reads.has(name)),
    );
    expect(unread).toEqual([]);
  });

  it('holds each name once, each setting’s variable, and the secrets cli.ts scrubs', () => {
    expect(new Set(declared).size).toBe(declared.length);
    for (const setting of ALL_SETTINGS) expect(declared).toContain(setting.env);
    expect(SECRET_VARIABLES).toEqual(['NOTARIZE_API_KEY', 'NOTARIZE_TOKEN']);
  });

  it('names in messages and comments under src/ only NOTARIZE_ variables that exist', () => {
    // Not `$NOTARIZE_KEY` in a help example: a shell expansion of the user's own variable.
    const mentioned = new Set(
      sourceFiles(SRC).flatMap(
        (file) => readFileSync(file, 'utf8').match(/(?<![$\w])NOTARIZE_[A-Z0-9_]*[A-Z0-9]\b/g) ?? [],
      ),
    );
    expect([...mentioned].filter((name) => !declared.includes(name))).toEqual([]);
  });
});

describe('the help and README', () => {
  it('`notarize --help` shows the generated section: one aligned line per variable, by group', async () => {
    const buffers = bufferIO();
    expect(await main({ argv: ['--help'], env: {}, io: buffers.io })).toBe(0);
    const section = environmentHelp();
    expect(buffers.stdout()).toContain(`\n${section}\n\nExamples:`);
    const lines = section.split('\n').slice(1);
    const variableLines = lines.filter((line) => line.startsWith('    '));
    expect(variableLines).toHaveLength(ENVIRONMENT_VARIABLES.length);
    const column = variableLines.map((line) => /^ {4}\S.*? {2,}(?=\S)/.exec(line)![0].length);
    expect(new Set(column).size).toBe(1);
    for (const line of lines.filter((line) => !line.startsWith('    '))) expect(line).toMatch(/^ {2}\S.*:$/);
  });

  it("README's Environment table lists the same variables, in the same order, with the same meanings", () => {
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('\n## Environment\n')).split(/\n## /)[1]!;
    const rows = section
      .split('\n')
      .map((line) => /^\|\s*(`.*?)\s*\|\s*(.*?)\s*\|$/.exec(line))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => [m[1]!.replaceAll('`', '').split(', '), m[2]!.replaceAll('`', '')]);
    expect(rows).toEqual(ENVIRONMENT_VARIABLES.map((v) => [v.names, v.description]));
  });
});

describe('inCI', () => {
  it('is CI when CI is set as runners set it, and not when it is empty, 0 or false (any case, spaces around)', () => {
    for (const value of ['true', '1', 'yes', 'woodpecker', 'TRUE']) expect(inCI({ CI: value }), value).toBe(true);
    for (const value of [undefined, '', ' ', '0', 'false', 'False', ' false ']) {
      expect(inCI({ CI: value }), String(value)).toBe(false);
    }
  });
});

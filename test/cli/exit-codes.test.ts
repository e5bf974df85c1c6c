/**
 * The exit-code table is written three times: README's "Exit codes", the
 * `EXIT_CODE_HELP` shown by --help, and the `EXIT` constants the code uses
 * (docs/ci.md has a shorter version). This fails as soon as one drifts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT, EXIT_CODE_HELP } from '../../src/errors.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { REPO_ROOT } from '../helpers/cli.js';

let bed: Bed;
useBed((created) => (bed = created));

/** The `| code | meaning |` rows of the table under `heading` in a Markdown file, as [code, meaning] pairs. */
function markdownTable(file: string, heading: string): [number, string][] {
  const text = readFileSync(join(REPO_ROOT, file), 'utf8');
  const start = text.indexOf(`\n${heading}\n`);
  expect(start, `${file} has no "${heading}" section`).toBeGreaterThanOrEqual(0);
  const section = text.slice(start + heading.length + 2).split(/\n## /)[0]!;
  return section
    .split('\n')
    .map((line) => /^\|\s*(\d+)\s*\|\s*(.*?)\s*\|/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => [Number(m[1]), m[2]!]);
}

describe('the exit-code table', () => {
  const codes = Object.values(EXIT)
    .map(Number)
    .sort((a, b) => a - b);

  it('EXIT holds the codes 0 to 6, each once', () => {
    expect(codes).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it("README's table and --help's say the same, code by code and meaning by meaning", () => {
    const readme = markdownTable('README.md', '## Exit codes');
    const lines = EXIT_CODE_HELP.split('\n');
    expect(lines[0]).toBe('Exit codes:');
    const help = lines.slice(1).map((line): [number, string] => {
      const m = /^ {2}(\d+) {2}(\S.*)$/.exec(line);
      expect(m, `malformed line in EXIT_CODE_HELP: ${line}`).not.toBeNull();
      return [Number(m![1]), m![2]!];
    });
    expect(readme.map(([code]) => code)).toEqual(codes);
    expect(help.map(([code]) => code)).toEqual(codes);
    for (const [i, [code, meaning]] of readme.entries()) expect(help[i], `exit code ${code}`).toEqual([code, meaning]);
  });

  it('--help shows the table', async () => {
    const run = await bed.main(['--help']);
    expect(run.stdout).toContain(`\n${EXIT_CODE_HELP}\n`);
  });

  it("docs/ci.md's shorter table lists every code", () => {
    expect(markdownTable('docs/ci.md', '## Exit codes a script can rely on').map(([code]) => code)).toEqual(codes);
  });
});

/**
 * The README's layout section matches the tree: every path it lists exists,
 * and every folder and top-level module of src/ is listed, so a restructuring
 * that forgets the map fails here.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The paths in the first column of the README's layout block. */
function listedPaths(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('### Layout'));
  const block = /```\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block
    .split('\n')
    .map((line) => /^(\S+)/.exec(line)?.[1])
    .filter((path): path is string => path !== undefined);
}

describe("the README's layout section", () => {
  const listed = listedPaths();

  it('lists only paths that exist', () => {
    expect(listed.length).toBeGreaterThan(10);
    expect(listed.filter((path) => !existsSync(join(ROOT, path)))).toEqual([]);
  });

  it('lists every folder and top-level module of src/, and every top-level folder of the project', () => {
    const src = readdirSync(join(ROOT, 'src'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() || entry.name.endsWith('.ts'))
      .map((entry) => `src/${entry.name}${entry.isDirectory() ? '/' : ''}`);
    // Every folder of the checkout but the hidden ones and what is built or installed (.gitignore).
    const generated = new Set(['node_modules', 'dist', 'coverage']);
    const top = readdirSync(ROOT, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.') && !generated.has(entry.name))
      .map((entry) => `${entry.name}/`);
    expect(top).toEqual(expect.arrayContaining(['bin/', 'src/', 'test/']));
    const missing = [...src, ...top].filter(
      (path) => !listed.some((entry) => entry === path || entry.startsWith(path)),
    );
    expect(missing).toEqual([]);
  });
});

/**
 * The test layout holds: every source file of src/core, src/output and
 * src/store has a unit test file, test/<layer>/<name>.test.ts, or
 * test/<layer>/<name>.<aspect>.test.ts when it has several; and a test file
 * that replaces a module runs with a module graph of its own (vitest.config.ts).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { OWN_MODULES } from '../../vitest.config.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const LAYERS = ['core', 'output', 'store'] as const;

/** Every source file of the layers, as `<layer>/<name>.ts`. */
function sources(): string[] {
  return LAYERS.flatMap((layer) =>
    readdirSync(join(ROOT, 'src', layer), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts'))
      .map((file) => `${layer}/${file.replaceAll('\\', '/')}`),
  );
}

/** The unit test files of `source` (`core/x.ts`): test/core/x.test.ts and test/core/x.<aspect>.test.ts. */
function testsOf(source: string): string[] {
  const layer = source.slice(0, source.indexOf('/'));
  const name = source.slice(layer.length + 1).replace(/\.ts$/, '');
  const dir = join('test', layer, dirname(name));
  const own = new RegExp(`^${basename(name).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\.[a-z0-9-]+)?\\.test\\.ts$`);
  const found = existsSync(join(ROOT, dir)) ? readdirSync(join(ROOT, dir)).filter((file) => own.test(file)) : [];
  return found.map((file) => join(dir, file));
}

describe('the test layout', () => {
  it('every source file of core/, output/ and store/ has a unit test file', () => {
    const untested = sources().filter((source) => testsOf(source).length === 0);
    expect(untested, 'add test/<layer>/<name>.test.ts for each').toEqual([]);
  });

  it('every test file that replaces a module (vi.mock, vi.doMock) has a module graph of its own', () => {
    const mocking = readdirSync(join(ROOT, 'test'), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.test.ts'))
      .map((file) => `test/${file.replaceAll('\\', '/')}`)
      .filter((file) => /\bvi\.(do)?[mM]ock\(/.test(readFileSync(join(ROOT, file), 'utf8')));
    expect(mocking.length).toBeGreaterThan(0);
    expect([...mocking].sort(), 'list them in OWN_MODULES in vitest.config.ts').toEqual([...OWN_MODULES].sort());
  });
});

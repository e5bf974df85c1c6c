/**
 * Real temporary directories for tests, under the OS temp dir, removed
 * whatever happened: after each test, or when the file ends for suites whose
 * tests share what `beforeAll` made.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';

/**
 * Registers the clean-up with `cleanUp` (vitest's afterEach by default, or
 * afterAll) and returns a factory of fresh temporary directories.
 */
export function useTempDirs(prefix = 'notarize-test-', cleanUp: (fn: () => void) => void = afterEach): () => string {
  const made: string[] = [];
  cleanUp(() => {
    for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    made.push(dir);
    return dir;
  };
}

/**
 * Gives every test of the calling file (or describe block) one fresh empty
 * temporary directory, handed to `use` before the test and removed after it.
 */
export function useTempDir(prefix: string, use: (dir: string) => void): void {
  const newDir = useTempDirs(prefix);
  beforeEach(() => use(newDir()));
}

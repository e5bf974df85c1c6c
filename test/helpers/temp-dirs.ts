/**
 * Real temporary directories for tests, under the OS temp dir, removed
 * whatever happened: after each test (unit tests) or when the file ends
 * (suites whose tests share a store set up once).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

/**
 * Registers the clean-up with `cleanUp` (vitest's afterEach by default, or
 * afterAll) and returns a factory of fresh temporary directories.
 */
export function useTempDirs(prefix = 'notarize-unit-', cleanUp: (fn: () => void) => void = afterEach): () => string {
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

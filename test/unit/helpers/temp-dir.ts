/**
 * Real temporary directories for unit tests: each test gets a fresh one
 * under the OS temp dir, removed after the test whatever happened.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

/** Registers cleanup and returns a factory of fresh temporary directories. */
export function useTempDirs(prefix = 'notarize-unit-'): () => string {
  const made: string[] = [];
  afterEach(() => {
    for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    made.push(dir);
    return dir;
  };
}

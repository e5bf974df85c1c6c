/**
 * `mkdir -p` that always ends. Node's own recursive mkdirSync (20.x) loops
 * forever, at 100 % CPU and deaf to signals (the loop is in C++ on the main
 * thread), when mkdir(2) answers ENOENT for a path whose parent exists, as
 * it does anywhere under /proc: NOTARIZE_CONFIG_DIR=/proc/x hung `notarize
 * pending`. Here each missing component is created once, from the top, and
 * the first failure is thrown as is (ENOTDIR, as mkdir -p, when `dir` exists
 * and is not a directory).
 *
 * Used for the store and for --receipt-dir (the promise form loops the same
 * way, on a thread-pool thread).
 */
import { mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

/** Creates `dir` and its missing parents with `mode`; throws the fs error of the first that cannot be made. */
export function makeDirs(dir: string, mode: number): void {
  const missing: string[] = [];
  // Up to the first ancestor that exists (the root always does).
  for (let path = dir; statSync(path, { throwIfNoEntry: false }) === undefined;) {
    missing.push(path);
    const parent = dirname(path);
    if (parent === path) break;
    path = parent;
  }
  for (const path of missing.reverse()) {
    try {
      mkdirSync(path, { mode });
    } catch (error) {
      // Made meanwhile by another process: as good as made here (checked as a directory below).
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  if (!statSync(dir).isDirectory()) throw Object.assign(new Error(`not a directory: '${dir}'`), { code: 'ENOTDIR' });
}

/**
 * Temporary files for the benchmarks: one directory under os.tmpdir() per
 * run, removed on exit whatever happens (see run.js), and random documents.
 */
import { randomFillSync } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const roots = new Set();

/** A fresh directory under os.tmpdir(), removed by removeAll(). */
export function tempDir(prefix = 'notarize-bench-') {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  roots.add(dir);
  return dir;
}

/** Removes a directory made by tempDir() now. */
export function removeDir(dir) {
  rmSync(dir, { recursive: true, force: true });
  roots.delete(dir);
}

/** Removes every directory made by tempDir(). Synchronous, so it can run in an 'exit' handler. */
export function removeAll() {
  for (const dir of roots) rmSync(dir, { recursive: true, force: true });
  roots.clear();
}

/** Bytes free for an unprivileged user on the file system holding `dir`. */
export function freeBytes(dir = tmpdir()) {
  const info = statfsSync(dir);
  return info.bavail * info.bsize;
}

/** Writes `bytes` of random data to `path`, 8 MiB at a time. */
export function writeRandomFile(path, bytes) {
  const block = Buffer.allocUnsafe(Math.min(bytes, 8 * 1024 * 1024));
  const fd = openSync(path, 'w');
  try {
    for (let left = bytes; left > 0;) {
      const n = Math.min(left, block.length);
      randomFillSync(block, 0, n);
      writeSync(fd, block, 0, n);
      left -= n;
    }
  } finally {
    closeSync(fd);
  }
}

/** Creates `count` random files of `bytes` each in `dir` and returns their paths (sorted names). */
export function writeRandomFiles(dir, count, bytes) {
  mkdirSync(dir, { recursive: true });
  const width = String(count - 1).length;
  const paths = [];
  for (let i = 0; i < count; i++) {
    const path = join(dir, `doc-${String(i).padStart(width, '0')}.bin`);
    writeRandomFile(path, bytes);
    paths.push(path);
  }
  return paths;
}

/** Reads files once so that every timed run finds them in the page cache. */
export function warm(paths) {
  const buffer = Buffer.allocUnsafe(4 * 1024 * 1024);
  for (const path of paths) {
    const fd = openSync(path, 'r');
    try {
      while (readSync(fd, buffer) > 0);
    } finally {
      closeSync(fd);
    }
  }
}

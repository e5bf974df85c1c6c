/**
 * A per-hash lock between notarize processes, so two processes never run the
 * request/forfait flow for the same hash at once (which could complete one
 * notarization twice). It is a file created with O_EXCL holding the owner's
 * pid; a lock whose owner has died (e.g. SIGKILL) is stale and taken over.
 */
import { closeSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { TransientError } from '../errors.js';
import { removeFile } from './files.js';

const POLL_MS = 25;

function ownerAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function tryCreate(file: string): boolean {
  try {
    const fd = openSync(file, 'wx', 0o600);
    try {
      writeSync(fd, String(process.pid));
    } finally {
      closeSync(fd);
    }
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

function readOwner(file: string): number | undefined {
  try {
    return Number(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

function emptyForLong(file: string): boolean {
  try {
    return Date.now() - statSync(file).mtimeMs > 2000;
  } catch {
    return false;
  }
}

/**
 * Runs `fn` holding the lock file `file`; waits up to `waitMs` for another
 * live owner, then throws TransientError (exit 4: try again later).
 */
export async function withLock<T>(file: string, waitMs: number, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + waitMs;
  while (!tryCreate(file)) {
    const owner = readOwner(file);
    // A lock file with no pid yet is being written by its creator right now,
    // unless it has been empty for long: then its creator died in between.
    const stale = owner === 0 ? emptyForLong(file) : owner !== undefined && !ownerAlive(owner);
    if (stale) {
      removeFile(file);
      continue;
    }
    if (Date.now() >= deadline) {
      throw new TransientError(`another notarize process (pid ${owner ?? '?'}) is working on the same hash`, {
        hint: 'wait for it to finish, then run the command again',
        notProcessed: true,
      });
    }
    await sleep(POLL_MS);
  }
  try {
    return await fn();
  } finally {
    removeFile(file);
  }
}

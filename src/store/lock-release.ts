/**
 * Releasing this process's lock on a hash from a signal handler, where the
 * `finally` of withLock (lock.ts) will never run because the process exits.
 * Kept apart from lock.ts, whose write paths are being reworked: it only
 * reads a lock file and removes it when it is provably this process's
 * (lock.ts writes `<pid> <host> <nonce>`, and only this process writes its
 * own pid on this host). Left in place, the lock would be found stale by
 * the next run anyway; removing it saves that run the takeover.
 */
import { unlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { readRegularFileSync } from './read-safe.js';

/** Removes the lock file `file` if this process holds it; never throws. */
export function releaseOwnLock(file: string): void {
  try {
    const [pid, host] = readRegularFileSync(file, 4096).trim().split(' ');
    if (pid === String(process.pid) && (host === undefined || host === hostname())) unlinkSync(file);
  } catch {
    // Gone already, or unreadable: nothing of ours to remove.
  }
}

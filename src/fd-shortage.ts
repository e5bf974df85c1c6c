/**
 * Out of file descriptors: EMFILE (this process's limit, `ulimit -n`: 1,024
 * by default on Linux, 256 on macOS, sometimes 64 in a container) or ENFILE
 * (the system's). In a batch it passes: the documents in flight each hold a
 * lock and a connection and close a file or two a moment later. Failing at
 * once turned a moment of it into a whole batch failed (each document's
 * open failed in microseconds, and the queue drained: 1,959 of 2,000 with
 * `-j 16` under `ulimit -n 64`), and a record the service had answered, paid
 * for, into one never saved. So the writes that matter (a session's, a
 * record's, a receipt's file and its directory's flush: store/files.ts) wait
 * a moment and try again, for up to FD_WAIT_MS in all, and a document whose
 * own open or lock found none, nothing sent, is run again by its batch
 * (core/batch.ts runAgain); then the error stands, saying what to change.
 * Fewer of either happen when -j fits the limit (fitConcurrency).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { errnoCodeIn, EXIT, NotarizeError, UsageError } from './errors.js';

/** How long an open waits in all for a descriptor to be freed before its error stands. */
export const FD_WAIT_MS = 30_000;

/** The longest single wait between two tries. */
const MAX_STEP_MS = 100;

/** The shortage `error` is (or wraps, as a StoreError does): EMFILE or ENFILE, else undefined. */
function fdShortageCode(error: unknown): string | undefined {
  return errnoCodeIn(error, (code) => code === 'EMFILE' || code === 'ENFILE');
}

/** Whether `error` is (or wraps, as a StoreError does) a shortage of file descriptors. */
export function isFdShortage(error: unknown): boolean {
  return fdShortageCode(error) !== undefined;
}

/**
 * Loads a module of notarize's bundle on demand (a command's, the context, the
 * table renderer), always before the run sends anything. One that cannot be
 * read for want of a descriptor (`ulimit -n` near 20) is one line and exit 2,
 * as bin/notarize.js says it of the bundle itself, not an unexpected error.
 */
export async function loadingModule<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = fdShortageCode(error);
    if (code === undefined) throw error;
    throw new UsageError(`too many files are open to load notarize (${code}); nothing was sent`, {
      code: 'fd_shortage',
      hint: 'raise the limit of open files (ulimit -n), then run the command again',
      cause: error,
    });
  }
}

/** What to change when descriptors stay short: said by every command, so -j only as register's. */
export const FD_SHORTAGE_REMEDY = "raise the limit of open files (ulimit -n), or lower register's -j";

export interface FdWait {
  /** How long to wait in all (default FD_WAIT_MS). */
  budgetMs?: number;
  /** Which shortages to wait out: those `op` can be run again after (default: every one). */
  onlyIf?: (error: unknown) => boolean;
}

/**
 * Runs `op`, and while it fails for want of file descriptors, runs it again
 * after a short wait (1 ms, doubling up to 100 ms), for up to `budgetMs` in
 * all; any other error, or the shortage past the budget, is thrown as it is.
 * `op` must be safe to run again after such a failure (an open that failed
 * made nothing).
 */
export async function whenFdsFree<T>(op: () => T | Promise<T>, wait: FdWait = {}): Promise<T> {
  // This process's own clock, as a lock's wait (store/lock.ts): a wall clock stepped back stretches nothing.
  const deadline = performance.now() + (wait.budgetMs ?? FD_WAIT_MS);
  for (let step = 1; ; step = Math.min(step * 2, MAX_STEP_MS)) {
    try {
      return await op();
    } catch (error) {
      if (!isFdShortage(error) || (wait.onlyIf && !wait.onlyIf(error)) || performance.now() + step > deadline)
        throw error;
    }
    await sleep(step);
  }
}

/**
 * What `read` gives, a shortage of descriptors waited out (whenFdsFree), or
 * for any other failure what `fallback` makes of it. For the reads of
 * --receipt-dir whose failure is taken to mean "nothing there" (no
 * manifest, no receipt, a file passed over): a moment without a descriptor
 * is no such answer. A manifest read in one made a run register again,
 * paid, every document it places, and a receipt holding a root's record
 * read in one left a document without its receipt, exit 0 (r84). A
 * shortage that outlasts the wait fails what needed the read, as a
 * document's own open does: exit 2 and the remedy (a caller that sent
 * something says so instead).
 */
export async function readOr<T, F>(
  read: () => T | Promise<T>,
  fallback: (error: unknown) => F,
  wait: FdWait = {},
): Promise<T | F> {
  try {
    return await whenFdsFree(read, wait);
  } catch (error) {
    const code = fdShortageCode(error);
    if (code === undefined) return fallback(error);
    throw new UsageError(`${folderShortage(code)}; nothing was sent`, {
      code: 'disk_refused',
      hint: `${FD_SHORTAGE_REMEDY}, then run the command again`,
      cause: error,
    });
  }
}

function folderShortage(code: string): string {
  return `this process has too many files open to read the receipt folder (${code})`;
}

/**
 * readOr's refusal as a caller that had sent something must say it (r87:
 * a lookup of the receipts after the service's 409 said exit 2 and
 * "nothing was sent"): `receipt_write`, exit 1, the remedy kept, and
 * `hint` (what was done, and that running again writes the receipt). Any
 * other error is returned as it is.
 */
export function refusalAfterSending(
  error: unknown,
  hint = 'running the same command again writes the receipt',
): unknown {
  const code = error instanceof UsageError && error.code === 'disk_refused' ? fdShortageCode(error) : undefined;
  if (code === undefined) return error;
  return new NotarizeError('receipt_write', EXIT.failed, folderShortage(code), {
    hint: `${FD_SHORTAGE_REMEDY}; ${hint}`,
    cause: error,
  });
}

/**
 * How many more files this process may open now: its limit (`ulimit -n`,
 * the soft one) less those open; undefined where the system does not say
 * (it is read from /proc, which only Linux has).
 */
export function descriptorsLeft(): number | undefined {
  try {
    const limits = readFileSync('/proc/self/limits', 'utf8');
    const soft = /^Max open files\s+(\d+|unlimited)\s/m.exec(limits)?.[1];
    if (soft === undefined || soft === 'unlimited') return undefined;
    return Number(soft) - readdirSync('/proc/self/fd').length;
  } catch {
    return undefined;
  }
}

/** Descriptors kept for what is not yet open when this is asked (the store's own files), besides `reserved`. */
const RESERVED = 8;

/** Descriptors a worker thread holds once started (its event loop's): 4 each, measured with 1 to 8. */
export const FILES_PER_WORKER = 4;

/**
 * The concurrency that fits the descriptors left (`left`), when `perUnit`
 * are held for each unit of it and `reserved` by what is yet to start (the
 * hash pool's workers), and a warning when `wanted` does not fit. A
 * shortage is waited out (whenFdsFree), but a concurrency whose files
 * cannot all be open at once waits on itself: every unit holds some and
 * waits for one more.
 */
export function fitConcurrency(
  wanted: number,
  perUnit: number,
  reserved = 0,
  left = descriptorsLeft(),
): { concurrency: number; warning?: string } {
  if (left === undefined) return { concurrency: wanted };
  const kept = RESERVED + reserved;
  const fits = Math.max(1, Math.floor((left - kept) / perUnit));
  if (fits >= wanted) return { concurrency: wanted };
  return {
    concurrency: fits,
    warning:
      `-j ${wanted} would hold about ${wanted * perUnit + kept} more files open, and this process may open ${left} more ` +
      `(ulimit -n): ${fits} at a time instead`,
  };
}

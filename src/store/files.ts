/**
 * File primitives of the local store: private directories, atomic writes and
 * reads that name the file when it is damaged. A damaged file is reported,
 * never rewritten or wiped: it may hold the only copy of a registration.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, fdatasync, fsync, openSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { z } from 'zod';
import { describeZodError } from '../api/schemas.js';
import { StoreError } from '../errors.js';
import { makeDirs } from '../mkdirs.js';
import { readRegularFileSync } from './read-safe.js';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/**
 * Creates `dir` (and parents) readable by its owner alone. An existing
 * directory with wider rights is tightened to 0700; returns true when it had
 * to be, so the caller can warn. Throws StoreError naming the directory when
 * it cannot be created or tightened.
 */
export function ensurePrivateDir(dir: string): boolean {
  try {
    makeDirs(dir, PRIVATE_DIR_MODE); // not mkdirSync's recursive mode: it can loop forever (src/mkdirs.ts)
    if (process.platform === 'win32') return false;
    const info = statSync(dir);
    if (!info.isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    if ((info.mode & 0o077) !== 0) {
      // Exactly 0700, not the old mode's owner bits: the owner needs all three.
      chmodSync(dir, PRIVATE_DIR_MODE);
      return true;
    }
    return false;
  } catch (error) {
    throw new StoreError(dir, `cannot use the store directory ${dir}: ${(error as Error).message}`, {
      hint: 'make it a directory you own and can write, or point NOTARIZE_CONFIG_DIR elsewhere',
      cause: error,
    });
  }
}

/**
 * Tightens an existing directory to 0700 when others have rights on it;
 * returns true when it had to be. A missing directory is left missing.
 */
export function tightenDirIfExists(dir: string): boolean {
  return tightenIfExists(dir, () => PRIVATE_DIR_MODE);
}

/**
 * Tightens an existing store file to 0600 when it is readable by others;
 * returns true when it had to be, so the caller can warn.
 */
export function ensurePrivateFile(file: string): boolean {
  return tightenIfExists(file, (mode) => mode & 0o700);
}

/**
 * Gives an existing path the mode `ownerOnly(mode)` when group or others have
 * rights on it; returns true when it had to. A missing path is left missing.
 */
function tightenIfExists(path: string, ownerOnly: (mode: number) => number): boolean {
  if (process.platform === 'win32') return false;
  let mode: number;
  try {
    mode = statSync(path).mode & 0o777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  if ((mode & 0o077) === 0) return false;
  chmodSync(path, ownerOnly(mode));
  return true;
}

/**
 * Writes `data` to `file` atomically: a private temporary file in the same
 * directory, flushed to disk, then renamed over the target, and the directory
 * flushed too. A reader (or a process killed mid-write) sees the old file or
 * the new one, never a mix. Temporary files start with a dot; a process
 * killed before its rename leaves one behind, which listings skip.
 *
 * Only the two flushes wait for the disk, and they run on libuv's thread
 * pool, so those of a batch's documents overlap and this thread never waits
 * for the disk. The other calls (open, write, close, rename) take
 * microseconds on a store file of a few hundred bytes: made here, they cost
 * less than a thread-pool round trip each, which in a batch was most of the
 * store's CPU time (see docs/performance.md). The promise settles only once
 * the data is durable.
 */
export async function writeFileAtomic(file: string, data: string): Promise<void> {
  keepFileSizeSignalHarmless();
  const dir = dirname(file);
  const temp = join(dir, `.${basename(file)}.${uniqueSuffix()}.tmp`);
  const bytes = Buffer.from(data, 'utf8');
  let fd: number | undefined = openSync(temp, 'wx', PRIVATE_FILE_MODE);
  try {
    // A write may be short (a full disk, a file size limit): loop until all
    // bytes are down or the system says why not. Renaming a short temporary
    // file would replace a good entry with a truncated one.
    for (let done = 0; done < bytes.length;) {
      done += writeSync(fd, bytes, done, bytes.length - done);
    }
    await fdatasyncOnPool(fd);
    const written = fd;
    fd = undefined;
    closeSync(written);
    renameSync(temp, file);
  } catch (error) {
    // The write's own error is the one worth reporting, not a failed clean-up.
    if (fd !== undefined) ignoreErrors(() => closeSync(fd!));
    ignoreErrors(() => unlinkSync(temp));
    throw error;
  }
  await flushDirShared(dir);
}

function fdatasyncOnPool(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fdatasync(fd, (error) => (error ? reject(error) : resolve())));
}

function ignoreErrors(fn: () => void): void {
  try {
    fn();
  } catch {
    // See the caller.
  }
}

/** A name part no other writer on this host uses: the pid, a random tag per module instance (pids are reused; threads load their own), a counter. */
export function uniqueSuffix(): string {
  return `${process.pid}.${PROCESS_TAG}.${(writeCounter++).toString(36)}`;
}

const PROCESS_TAG = randomBytes(4).toString('hex');
let writeCounter = 0;

let fileSizeSignalCaught = false;

/**
 * Keeps SIGXFSZ harmless, as Node makes it, so that a write beyond a file
 * size limit (`ulimit -f`) fails with EFBIG and the answer being saved is
 * quoted in the error. conf's writer (atomically, through when-exit) listens
 * for SIGXFSZ once and raises it again, which kills the process without a
 * word as soon as the event loop turns after such a write. While a listener
 * of ours remains, Node keeps catching the signal (its handle is unref'd: it
 * keeps nothing alive).
 */
export function keepFileSizeSignalHarmless(): void {
  if (fileSizeSignalCaught || process.platform === 'win32') return;
  fileSizeSignalCaught = true;
  process.on('SIGXFSZ', () => {});
}

/**
 * Flushes of a directory's entries, shared: a caller needs a flush that
 * started after its rename, so while one runs, every caller arriving joins
 * the single next one. A batch's documents then share a few flushes per
 * directory instead of making one each, with the same guarantee.
 */
const dirFlushes = new Map<string, { running?: Promise<void>; next?: Promise<void> }>();

function flushDirShared(dir: string): Promise<void> {
  const flushes = dirFlushes.get(dir) ?? {};
  dirFlushes.set(dir, flushes);
  const start = (): Promise<void> => {
    const running = syncDir(dir).finally(() => {
      if (flushes.running !== running) return;
      flushes.running = undefined;
      // Nobody waiting: forget the directory (a long-lived process writes to many).
      if (flushes.next === undefined) dirFlushes.delete(dir);
    });
    flushes.running = running;
    return running;
  };
  if (flushes.running === undefined) return start();
  flushes.next ??= flushes.running.then(() => {
    flushes.next = undefined;
    return start();
  });
  return flushes.next;
}

/** Flushes a directory's entries (the rename) to disk; best effort, as some platforms cannot. */
async function syncDir(dir: string): Promise<void> {
  let fd: number;
  try {
    fd = openSync(dir, 'r');
  } catch {
    // Windows and some file systems cannot open a directory.
    return;
  }
  try {
    await new Promise<void>((resolve) => fsync(fd, () => resolve()));
  } finally {
    ignoreErrors(() => closeSync(fd));
  }
}

/** Removes a file; a file already gone is not an error. */
export function removeFile(file: string): void {
  try {
    unlinkSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/**
 * Reads and validates a JSON store file. Returns undefined when it does not
 * exist; throws StoreError naming the file when it is unreadable, not JSON or
 * not of the expected shape.
 */
export function readStoreFile<T extends z.ZodType>(file: string, schema: T): z.infer<T> | undefined {
  let text: string;
  try {
    // Synchronous: a store file is a few hundred bytes (see writeFileAtomic).
    // Never waits: a FIFO or device at the path is refused (see read-safe.ts).
    text = readRegularFileSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new StoreError(file, `cannot read store file ${file}: ${(error as Error).message}`, { cause: error });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw corrupt(file, 'not valid JSON', error);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw corrupt(file, describeZodError(parsed.error), parsed.error);
  return parsed.data;
}

/** The error for a damaged store file: names it and says how to recover. */
export function corrupt(file: string, reason: string, cause?: unknown): StoreError {
  return new StoreError(file, `store file ${file} is damaged (${reason})`, { hint: recoveryHint(file), cause });
}

/** What the user can do about a damaged file, by what it holds. */
function recoveryHint(file: string): string {
  const untouched = 'notarize leaves it untouched';
  const name = basename(file);
  if (name === 'credentials.json') {
    return `${untouched}: repair it by hand, or move it aside and log in again (\`notarize login\`)`;
  }
  if (name === 'config.json') {
    return `${untouched}: repair it by hand, or move it aside (settings go back to their defaults; \`notarize config set\` sets them again)`;
  }
  if (basename(dirname(file)) === 'ledger') {
    return `${untouched}: repair it by hand or restore it from a backup; moved aside, its hash can be registered again`;
  }
  const hash = basename(file, '.json');
  return `${untouched}: repair it by hand, or retire it with \`notarize pending drop ${hash}\` (kept aside) to start that registration afresh`;
}

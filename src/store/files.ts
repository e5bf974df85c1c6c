/**
 * File primitives of the local store: private directories, atomic writes and
 * reads that name the file when it is damaged. A damaged file is reported,
 * never rewritten or wiped: it may hold the only copy of a registration.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, statSync, unlinkSync } from 'node:fs';
import { open, readFile, rename, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { z } from 'zod';
import { describeZodError } from '../api/schemas.js';
import { StoreError } from '../errors.js';

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
    mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
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
  if (process.platform === 'win32') return false;
  let mode: number;
  try {
    mode = statSync(dir).mode & 0o777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  if ((mode & 0o077) === 0) return false;
  chmodSync(dir, PRIVATE_DIR_MODE);
  return true;
}

/**
 * Tightens an existing store file to 0600 when it is readable by others;
 * returns true when it had to be, so the caller can warn.
 */
export function ensurePrivateFile(file: string): boolean {
  if (process.platform === 'win32') return false;
  let mode: number;
  try {
    mode = statSync(file).mode & 0o777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  if ((mode & 0o077) === 0) return false;
  chmodSync(file, mode & 0o700);
  return true;
}

/**
 * Writes `data` to `file` atomically: a private temporary file in the same
 * directory, flushed to disk, then renamed over the target, and the directory
 * flushed too. A reader (or a process killed mid-write) sees the old file or
 * the new one, never a mix. Temporary files start with a dot; a process
 * killed before its rename leaves one behind, which listings skip.
 *
 * Asynchronous on purpose: the fsyncs run on libuv's thread pool, so those of
 * a batch's documents overlap and the thread driving the requests never waits
 * for the disk (synchronous, they took half of its time in a batch: see
 * docs/performance.md). The promise settles only once the data is durable.
 */
export async function writeFileAtomic(file: string, data: string): Promise<void> {
  keepFileSizeSignalHarmless();
  const dir = dirname(file);
  const temp = join(dir, `.${basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const bytes = Buffer.from(data, 'utf8');
  let handle: FileHandle | undefined = await open(temp, 'wx', PRIVATE_FILE_MODE);
  try {
    // A write may be short (a full disk, a file size limit): loop until all
    // bytes are down or the system says why not. Renaming a short temporary
    // file would replace a good entry with a truncated one.
    for (let done = 0; done < bytes.length;) {
      done += (await handle.write(bytes, done, bytes.length - done)).bytesWritten;
    }
    await handle.sync();
    const written = handle;
    handle = undefined;
    await written.close();
    await rename(temp, file);
  } catch (error) {
    // The write's own error is the one worth reporting, not a failed clean-up.
    await handle?.close().catch(() => {});
    await unlink(temp).catch(() => {});
    throw error;
  }
  await syncDir(dir);
}

let fileSizeSignalCaught = false;

/**
 * Keeps SIGXFSZ harmless, as Node makes it, so that a write beyond a file
 * size limit (`ulimit -f`) fails with EFBIG and the answer being saved is
 * quoted in the error. conf's writer (atomically, through when-exit) listens
 * for SIGXFSZ once and raises it again, which kills the process without a
 * word as soon as the event loop turns after such a write; a write on the
 * thread pool always lets it turn. While a listener of ours remains, Node
 * keeps catching the signal (its handle is unref'd: it keeps nothing alive).
 */
export function keepFileSizeSignalHarmless(): void {
  if (fileSizeSignalCaught || process.platform === 'win32') return;
  fileSizeSignalCaught = true;
  process.on('SIGXFSZ', () => {});
}

/** Flushes a directory's entries (the rename) to disk; best effort, as some platforms cannot. */
async function syncDir(dir: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch {
    // Windows and some file systems cannot open or flush a directory.
  } finally {
    await handle?.close().catch(() => {});
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

/** Removes a file without blocking the thread; a file already gone is not an error. */
export async function removeFileAsync(file: string): Promise<void> {
  try {
    await unlink(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/**
 * Reads and validates a JSON store file. Returns undefined when it does not
 * exist; throws StoreError naming the file when it is unreadable, not JSON or
 * not of the expected shape.
 */
export async function readStoreFile<T extends z.ZodType>(file: string, schema: T): Promise<z.infer<T> | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
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
  return `${untouched}: repair it by hand, or move it aside to start that registration afresh`;
}

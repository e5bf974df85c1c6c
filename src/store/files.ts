/**
 * File primitives of the local store: private directories, atomic writes and
 * reads that name the file when it is damaged. A damaged file is reported,
 * never rewritten or wiped: it may hold the only copy of a registration.
 */
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { z } from 'zod';
import { describeZodError } from '../api/schemas.js';
import { StoreError } from '../errors.js';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/**
 * Creates `dir` (and parents) readable by its owner alone. An existing
 * directory with wider rights is tightened; returns true when it had to be,
 * so the caller can warn.
 */
export function ensurePrivateDir(dir: string): boolean {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  if (process.platform === 'win32') return false;
  const mode = statSync(dir).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    chmodSync(dir, mode & 0o700);
    return true;
  }
  return false;
}

/**
 * Writes `data` to `file` atomically: a private temporary file in the same
 * directory, flushed to disk, then renamed over the target. A reader (or a
 * process killed mid-write) sees the old file or the new one, never a mix.
 */
export function writeFileAtomic(file: string, data: string): void {
  const temp = join(dirname(file), `.${basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const fd = openSync(temp, 'wx', PRIVATE_FILE_MODE);
  try {
    writeSync(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(temp, file);
  } catch (error) {
    unlinkSync(temp);
    throw error;
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
  return new StoreError(file, `store file ${file} is damaged (${reason})`, {
    hint: 'notarize leaves it untouched: repair it by hand, or move it aside to start that entry afresh',
    cause,
  });
}

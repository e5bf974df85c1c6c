/**
 * SHA-256 of local documents. The file never leaves the machine: only the
 * digest is sent. Hashing streams, so memory stays constant whatever the size.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { UsageError } from '../errors.js';

/** 64 hex digits, any case, as accepted on the command line. */
const HEX_DIGEST = /^[0-9a-fA-F]{64}$/;

/** Large reads cut the per-chunk overhead of the stream machinery (see bench/). */
const READ_CHUNK_BYTES = 1024 * 1024;

/**
 * Normalises a user-given SHA-256 digest to the lowercase form the service
 * wants. Throws UsageError (exit 2) for anything else, before any URL is built.
 */
export function normalizeHash(input: string): string {
  const trimmed = input.trim();
  if (!HEX_DIGEST.test(trimmed)) {
    throw new UsageError(`invalid hash '${truncate(trimmed)}': expected a SHA-256 digest of 64 hex digits`, {
      code: 'invalid_hash',
      hint: 'compute one with `notarize hash <file>` or `sha256sum <file>`',
    });
  }
  return trimmed.toLowerCase();
}

/** Told the running byte count while hashing (for progress on a terminal). */
export type HashProgress = (bytes: number) => void;

/** Hashes a readable stream to its lowercase hex SHA-256 digest. */
export async function hashStream(stream: Readable, onProgress?: HashProgress): Promise<string> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
    onProgress?.(bytes);
  }
  return hash.digest('hex');
}

export interface FileInfo {
  path: string;
  size: number;
  /** Unix milliseconds. */
  lastModified: number;
}

/**
 * Checks that `path` is a regular readable file and returns its size and
 * mtime. Throws UsageError (exit 2) naming the path otherwise.
 */
export async function statInput(path: string): Promise<FileInfo> {
  let info;
  try {
    info = await stat(path);
  } catch (error) {
    throw fileError(path, error as NodeJS.ErrnoException);
  }
  if (info.isDirectory()) {
    throw new UsageError(`'${path}' is a directory`, { code: 'is_directory', hint: 'give a file, not a directory' });
  }
  if (!info.isFile()) {
    throw new UsageError(`'${path}' is not a regular file`, { code: 'not_a_file' });
  }
  return { path, size: info.size, lastModified: Math.floor(info.mtimeMs) };
}

/** Hashes a file by streaming it; throws UsageError for a missing or unreadable file. */
export async function hashFile(path: string, onProgress?: HashProgress): Promise<string> {
  try {
    return await hashStream(createReadStream(path, { highWaterMark: READ_CHUNK_BYTES }), onProgress);
  } catch (error) {
    throw fileError(path, error as NodeJS.ErrnoException);
  }
}

/** The usage error for a file that cannot be read, from an fs error (or its code and message). */
export function fileError(path: string, error: { code?: string; message?: string }): UsageError {
  const code = error.code;
  const reason =
    code === 'ENOENT'
      ? 'no such file'
      : code === 'EACCES' || code === 'EPERM'
        ? 'permission denied'
        : code === 'EISDIR'
          ? 'is a directory'
          : (error.message ?? 'unreadable');
  return new UsageError(`cannot read '${path}': ${reason}`, { code: 'unreadable_file', cause: error });
}

function truncate(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

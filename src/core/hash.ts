/**
 * SHA-256 of local documents. The file never leaves the machine: only the
 * digest is sent. Files are read in blocks into at most two reused buffers,
 * so memory stays constant whatever the size.
 */
import { createHash } from 'node:crypto';
import { open, stat, type FileHandle } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { InputFileError, UsageError } from '../errors.js';

/** 64 hex digits, any case, as accepted on the command line. */
const HEX_DIGEST = /^[0-9a-fA-F]{64}$/;

/**
 * Bytes per read of a large file. Large enough that the cost of a read (a
 * thread-pool round trip) is lost in the hashing time, small enough that two
 * buffers stay a few MiB (docs/performance.md has the measurements).
 */
const READ_BLOCK_BYTES = 2 * 1024 * 1024;

/** Smallest read buffer: small files get one this size, not two large ones (allocating those dominated). */
const MIN_BLOCK_BYTES = 64 * 1024;

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

/** Opens a document for reading; throws UsageError naming it when it cannot be opened. */
async function openDocument(path: string): Promise<FileHandle> {
  try {
    return await open(path, 'r');
  } catch (error) {
    throw fileError(path, error as NodeJS.ErrnoException);
  }
}

/** Hashes a file; throws UsageError for a missing or unreadable file. */
export async function hashFile(path: string, onProgress?: HashProgress): Promise<string> {
  const file = await openDocument(path);
  try {
    return await hashHandle(file, (await file.stat()).size, onProgress);
  } catch (error) {
    throw fileError(path, error as NodeJS.ErrnoException);
  } finally {
    await file.close();
  }
}

/**
 * Hashes an open file from its current position to its end; `size` (0 when
 * unknown, e.g. a pipe) only picks the block size. Throws the fs error as is.
 *
 * Reads of full blocks are double-buffered: the next block is read on the
 * thread pool while this thread hashes the previous one, so reading and
 * hashing overlap (`openssl dgst` does one, then the other), and the event
 * loop stays free between blocks for spinners and requests.
 */
async function hashHandle(file: FileHandle, size: number, onProgress?: HashProgress): Promise<string> {
  const hash = createHash('sha256');
  const block = Math.min(READ_BLOCK_BYTES, Math.max(MIN_BLOCK_BYTES, size));
  const buffers: Buffer[] = [Buffer.allocUnsafe(block)];
  // One read in flight at a time, from the current file position, so that
  // pipes and character devices named as files work too.
  const read = (index: number) => file.read(buffers[index]!, 0, block, null);
  let current = 0;
  let reading = read(current);
  let bytes = 0;
  try {
    for (;;) {
      const { bytesRead } = await reading;
      if (bytesRead === 0) return hash.digest('hex');
      const filled = buffers[current]!;
      if (bytesRead === block) {
        // A full block: more probably follows; read it into the other buffer meanwhile.
        current = 1 - current;
        buffers[current] ??= Buffer.allocUnsafe(block);
        reading = read(current);
        hash.update(filled.subarray(0, bytesRead));
      } else {
        hash.update(filled.subarray(0, bytesRead));
        reading = read(current);
      }
      bytes += bytesRead;
      onProgress?.(bytes);
    }
  } finally {
    // If onProgress threw, a read is still in flight: let it settle before the file is closed.
    await reading.catch(() => undefined);
  }
}

/** Why a file could not be read, in a few words, from an fs error (or its code and message). */
export function fileErrorReason(error: { code?: string; message?: string }): string {
  switch (error.code) {
    case 'ENOENT':
      return 'no such file or directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'is a directory';
    case 'ENOTDIR':
      return 'not a directory';
    case 'ELOOP':
      return 'too many levels of symbolic links';
    case 'ENAMETOOLONG':
      return 'file name too long';
    default:
      return error.message ?? 'unreadable';
  }
}

/** The usage error for a file that cannot be read, from an fs error (or its code and message). */
export function fileError(path: string, error: { code?: string; message?: string }): InputFileError {
  return new InputFileError(path, fileErrorReason(error), { cause: error });
}

function truncate(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/**
 * Reading a store file so that nothing put at its path can hang or flood
 * notarize: a FIFO at config.json made a plain readFileSync wait forever for
 * a writer, on the main thread, where no signal handler can run.
 *
 * The open is O_NONBLOCK (a FIFO's open returns at once instead of waiting)
 * and O_NOFOLLOW (a store file is never a symbolic link: the store writes
 * them as plain files; see files.ts); fstat on that descriptor then refuses
 * anything that is not a regular file before the first read, and the read
 * stops past a size bound. Kept apart from files.ts so that the store's
 * write paths can change without touching it.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

/**
 * Largest store file read: a session or record holds a service answer of at
 * most 4 MiB (api/http.ts), JSON-escaped once more; anything far larger is
 * not a store file.
 */
export const STORE_FILE_MAX_BYTES = 64 * 1024 * 1024;

const READ_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0);

/** An error with an fs-like code, so callers can tell ENOENT from the rest as before. */
function failure(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

/**
 * The text of the regular file `file` (UTF-8), read without ever waiting.
 * Throws the open's own error (ENOENT for a missing file, so callers keep
 * telling "absent" from "unreadable"), or an error whose message says why
 * the path is refused: a symbolic link, not a regular file, larger than
 * `limit`, or not readable without waiting.
 */
export function readRegularFileSync(file: string, limit: number = STORE_FILE_MAX_BYTES): string {
  let fd: number;
  try {
    fd = openSync(file, READ_FLAGS);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') {
      throw failure('ELOOP', 'it is a symbolic link, which the store does not follow');
    }
    throw error;
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw failure('ENOTREG', 'not a regular file');
    if (info.size > limit) throw failure('EFBIG', `larger than ${limit} bytes`);
    // Read to the end, not to the size: a file rewritten meanwhile is read as it is now;
    // only the bound is fixed (one byte past it is enough to know).
    const buffer = Buffer.allocUnsafe(Math.min(limit + 1, Math.max(info.size + 1, 4096)));
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      let n: number;
      try {
        n = readSync(fd, buffer, 0, Math.min(buffer.length, limit + 1 - total), null);
      } catch (error) {
        // A non-blocking read that would wait: never retried in a loop, it could wait forever.
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') {
          throw failure('EAGAIN', 'not readable without waiting');
        }
        throw error;
      }
      if (n === 0) break;
      chunks.push(Buffer.from(buffer.subarray(0, n)));
      total += n;
      if (total > limit) throw failure('EFBIG', `larger than ${limit} bytes`);
    }
    return Buffer.concat(chunks, total).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

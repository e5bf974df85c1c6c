/**
 * SHA-256 of local documents. The file never leaves the machine: only the
 * digest is sent. Files are read in blocks into at most two reused buffers,
 * so memory stays constant whatever the size.
 *
 * A digest is of one version of a file, never a mix of two: the file is
 * opened once, its metadata taken from that descriptor before the first
 * read, exactly that many bytes hashed, and the metadata taken again after
 * (see `checkVersion`). A file written to meanwhile fails with
 * `changed_while_hashed` (exit 2: nothing was sent for it). The size and
 * mtime returned with the digest come from that same fstat, so custody
 * metadata describes the bytes that were hashed.
 *
 * Nothing here can block forever: files are opened O_NONBLOCK (a FIFO's
 * open() would otherwise wait for a writer), and whatever is not a regular
 * file after opening is refused, as are the kernel's pseudo-files (/proc,
 * /sys), whose size says nothing of their content and whose reads may wait
 * (/proc/kmsg) or consume what they return.
 */
import { createHash } from 'node:crypto';
import { constants, fstatSync, lstatSync, statfsSync, statSync, type BigIntStats } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { InputFileError, UsageError } from '../errors.js';
import { FD_SHORTAGE_REMEDY, whenFdsFree } from '../fd-shortage.js';
import { checkStandardInput } from './read-input.js';

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
 * Flags of every open of a document. O_NONBLOCK: an open of a FIFO returns at
 * once instead of waiting for a writer (regular files ignore the flag), so a
 * path swapped for a FIFO after it was listed cannot hang this thread.
 */
export const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);

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

/**
 * Hashes a readable stream to its lowercase hex SHA-256 digest; `forRegister`:
 * a standard input that is /dev/null (or closed) is refused, as register
 * refuses it (checkStandardInput), and so is one that gives no byte at all.
 */
export async function hashStream(stream: Readable, onProgress?: HashProgress, forRegister = false): Promise<string> {
  checkStandardInput(stream, undefined, forRegister);
  const before = regularStandardInput(stream);
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
    onProgress?.(bytes);
  }
  // `< file`: the digest must be of one version of it, as for a file named (checkVersion). Not its size
  // against the bytes read: a shell may hand over the descriptor partly read (`{ head -c 4; notarize hash -; } < f`).
  if (before !== undefined && changedSince(before, fstatSync(0, { bigint: true }))) {
    throw changedWhileHashed('-', "standard input ('-')");
  }
  // Nothing came down the pipe: for register, as /dev/null, a command before it that failed
  // (`cat missing | notarize register -`), not a document to pay for.
  if (forRegister && bytes === 0) {
    throw new InputFileError('-', 'standard input was empty', {
      code: 'no_input',
      message: "standard input ('-') was empty: nothing to register",
      hint: `a command piping into it may have failed (set -o pipefail); to register the empty document on purpose, give its digest: --hash ${EMPTY_SHA256}`,
    });
  }
  return hash.digest('hex');
}

/** The fstat of this process's standard input when `stream` is it and it is a regular file (`< file`). */
function regularStandardInput(stream: Readable): BigIntStats | undefined {
  if (stream !== process.stdin) return undefined;
  try {
    const info = fstatSync(0, { bigint: true });
    return info.isFile() ? info : undefined;
  } catch {
    return undefined;
  }
}

/** The SHA-256 of no bytes at all. */
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** A file's digest and the facts of the version that was hashed (one fstat for all three). */
export interface HashedFile {
  hash: string;
  size: number;
  /** Unix milliseconds. */
  lastModified: number;
}

/** Opens a document for reading; throws UsageError naming it when it cannot be opened. */
async function openDocument(path: string): Promise<FileHandle> {
  try {
    // Short of descriptors (a low `ulimit -n`), it waits for another file to close one (fd-shortage.ts).
    return await whenFdsFree(() => open(path, OPEN_FLAGS));
  } catch (error) {
    throw fileError(path, error as NodeJS.ErrnoException);
  }
}

/** What reading a file of `size` bytes found: the digest of what was read, and whether there was more. */
export interface ReadResult {
  digest: string;
  /** Bytes read and hashed; fewer than the size when the file was cut short meanwhile. */
  bytes: number;
  /** A byte could be read at the size's offset: the file is longer than its size said. */
  grown: boolean;
}

/**
 * Hashes one version of a file; throws InputFileError (exit 2) for a missing
 * or unreadable file, one that is not a regular file, or one that changed
 * while it was read (see the module comment).
 */
export async function hashFile(path: string, onProgress?: HashProgress, listed?: Listed): Promise<HashedFile> {
  const file = await openDocument(path);
  try {
    let before: BigIntStats;
    let read: ReadResult;
    try {
      before = await file.stat({ bigint: true });
      checkListed(path, before, listed);
      checkRegular(path, before);
      read = await hashHandle(file, before, onProgress);
    } catch (error) {
      throw asInputError(path, error);
    }
    return checkVersion(path, before, await fstatAfter(path, file), read);
  } finally {
    await file.close();
  }
}

/**
 * hashFile for a command that takes one file or a digest and no --recursive
 * (`show`, `receipt`): a directory gets a hint that fits it, not "add
 * --recursive".
 */
export async function hashOneFile(path: string): Promise<HashedFile> {
  try {
    return await hashFile(path);
  } catch (error) {
    if (!(error instanceof InputFileError) || error.code !== 'is_directory') throw error;
    throw new InputFileError(path, error.reason, {
      code: error.code,
      message: error.message,
      hint: 'name one file in it, or a digest; `notarize list` shows what the ledger holds',
    });
  }
}

async function fstatAfter(path: string, file: FileHandle): Promise<BigIntStats> {
  try {
    return await file.stat({ bigint: true });
  } catch (error) {
    throw fileError(path, error as NodeJS.ErrnoException);
  }
}

/**
 * Hashes the first `size` bytes of an open regular file, then tries to read
 * one byte more (which must find none). Reads are at explicit offsets, never
 * past `size`: a file appended to without end still ends its hashing. A file
 * whose fstat moves from `before` between blocks is read no further (see
 * changedSince): fewer bytes than its size are returned.
 * Throws the fs error as is.
 *
 * Reads of full blocks are double-buffered: the next block is read on the
 * thread pool while this thread hashes the previous one, so reading and
 * hashing overlap (`openssl dgst` does one, then the other), and the event
 * loop stays free between blocks for spinners, requests and signals.
 */
async function hashHandle(file: FileHandle, before: BigIntStats, onProgress?: HashProgress): Promise<ReadResult> {
  const size = Number(before.size);
  const hash = createHash('sha256');
  const block = Math.min(READ_BLOCK_BYTES, Math.max(MIN_BLOCK_BYTES, size));
  const buffers: Buffer[] = [Buffer.allocUnsafe(block)];
  const read = (index: number, position: number) =>
    file.read(buffers[index]!, 0, Math.min(block, size - position), position);
  let current = 0;
  let bytes = 0;
  let reading = size > 0 ? read(current, 0) : undefined;
  try {
    while (reading) {
      const { bytesRead } = await reading;
      reading = undefined;
      if (bytesRead === 0) break; // cut short: the caller sees bytes < size
      const filled = buffers[current]!;
      bytes += bytesRead;
      // Changed already: the rest would be read for a digest checkVersion refuses (bytes < size).
      if (bytes < size && changedSince(before, fstatSync(file.fd, { bigint: true }))) break;
      if (bytes < size) {
        // More follows: read it into the other buffer while this one is hashed.
        current = 1 - current;
        buffers[current] ??= Buffer.allocUnsafe(block);
        reading = read(current, bytes);
      }
      hash.update(filled.subarray(0, bytesRead));
      onProgress?.(bytes);
    }
  } finally {
    // If onProgress threw, a read is still in flight: let it settle before the file is closed.
    await reading?.catch(() => undefined);
  }
  if (bytes < size) return { digest: hash.digest('hex'), bytes, grown: false };
  const probe = await file.read(buffers[0]!, 0, 1, bytes);
  return { digest: hash.digest('hex'), bytes, grown: probe.bytesRead > 0 };
}

/** A folder a directory walk went into below the one named: its path, and its lstat's device and inode. */
export interface ListedFolder {
  path: string;
  dev: bigint;
  ino: bigint;
}

/** The file a directory walk saw at a path (its lstat's device and inode), and the folders it is in. */
export interface Listed {
  dev: bigint;
  ino: bigint;
  /** The folders between the one named and the file, as the walk listed them. */
  folders: readonly ListedFolder[];
}

/**
 * Throws unless `info` (an fstat of the opened path) is the file the walk saw
 * there, when it was found by one, and the folders above it (below the one
 * named) are still the folders the walk listed: Node has no openat(), so a
 * link swapped in for the file, or for a folder above it, after the walk
 * would be followed out of the folder walked, and its bytes hashed under a
 * name inside it. Checked after the open: a swap back to hide it would have
 * to come between the two.
 */
export function checkListed(path: string, info: BigIntStats, listed: Listed | undefined): void {
  if (listed === undefined) return;
  const foldersHeld = listed.folders.every((folder) =>
    isFolderSeen(lstatSync(folder.path, { bigint: true, throwIfNoEntry: false }), folder),
  );
  if (!sameFile(info, listed) || !foldersHeld) throw replacedSinceWalked(path, 'after its folder was walked', 'file');
}

/** Whether `now` (an lstat) is still the folder a walk saw as `seen`: a folder, the same one. */
export function isFolderSeen(now: BigIntStats | undefined, seen: { dev: bigint; ino: bigint }): boolean {
  return now?.isDirectory() === true && sameFile(now, seen);
}

function sameFile(now: { dev: bigint; ino: bigint }, seen: { dev: bigint; ino: bigint }): boolean {
  return now.dev === seen.dev && now.ino === seen.ino;
}

/** A file or folder found by a walk that is no longer what the walk saw `when` (exit 2, that one alone). */
export function replacedSinceWalked(path: string, when: string, what: 'file' | 'folder'): InputFileError {
  const reason = `was replaced ${when} (by a link, or another ${what})`;
  return new InputFileError(path, reason, {
    code: 'changed_while_hashed',
    message: `'${path}' ${reason}`,
    hint: 'walk it again when it is stable; a link met in a walk is never followed',
  });
}

/**
 * Throws unless `info` (an fstat of the opened path) is a regular file of a
 * real file system; see the module comment.
 */
export function checkRegular(path: string, info: BigIntStats): void {
  if (info.isDirectory()) {
    throw new InputFileError(path, 'is a directory', {
      code: 'is_directory',
      message: `'${path}' is a directory`,
      hint: 'add --recursive to process the files in it',
    });
  }
  if (!info.isFile()) throw notRegular(path);
  if (onPseudoFileSystem(path, info.dev)) throw notRegular(path, 'a pseudo-file of the kernel, as in /proc or /sys');
}

function notRegular(path: string, what?: string): InputFileError {
  const reason = what ? `not a regular file (${what})` : 'not a regular file';
  return new InputFileError(path, reason, { code: 'not_a_file', message: `'${path}' is ${reason}` });
}

/**
 * statfs(2) magic numbers of Linux's pseudo file systems: their files look
 * regular but are generated by the kernel (size 0 or 4096 whatever they
 * hold), and reading some waits for events or consumes them (/proc/kmsg).
 */
const PSEUDO_FILE_SYSTEMS = new Set([
  0x9fa0, // proc
  0x62656572, // sysfs
  0x64626720, // debugfs
  0x74726163, // tracefs
  0x73636673, // securityfs
  0x27e0eb, // cgroup
  0x63677270, // cgroup2
  0x62656570, // configfs
  0xcafe4a11, // bpf
  0x6165676c, // pstore
  0x6e736673, // nsfs (/proc/<pid>/ns/*)
]);

/** Whether each device holds a pseudo file system; one statfs per device, not per file. */
const pseudoByDevice = new Map<bigint, boolean>();

function onPseudoFileSystem(path: string, dev: bigint): boolean {
  if (process.platform !== 'linux') return false;
  let known = pseudoByDevice.get(dev);
  if (known === undefined) {
    try {
      known = PSEUDO_FILE_SYSTEMS.has(statfsSync(path).type);
    } catch {
      // Unknown: the reads and the checks after them still guard the digest.
      return false;
    }
    // statfs takes a path: cache its answer only if the path is still on that device.
    if (statSync(path, { bigint: true, throwIfNoEntry: false })?.dev === dev) pseudoByDevice.set(dev, known);
  }
  return known;
}

/**
 * The facts of the hashed version, once sure there was one: `before` and
 * `after` (fstats of the descriptor around the reads) must agree on device,
 * inode, size, mtime and ctime (ns), and all `size` bytes must have been
 * read and none after them. Otherwise the digest may mix two versions:
 * throws `changed_while_hashed` (exit 2) naming the file. (A file renamed
 * over the path meanwhile, as editors save, is not a change of the open one:
 * its digest is of one version, the one opened, and the facts returned are
 * that version's. The path is not stat'ed again: on a batch of small files
 * that stat was a tenth of the time.)
 */
export function checkVersion(path: string, before: BigIntStats, after: BigIntStats, read: ReadResult): HashedFile {
  const same = !changedSince(before, after);
  if (same && read.bytes === Number(before.size) && read.grown) {
    // More bytes than the size, with metadata that never moved: no regular file reads like that.
    throw notRegular(path, 'it reads past its size');
  }
  if (!same || read.bytes !== Number(before.size)) throw changedWhileHashed(path, `'${path}'`);
  return { hash: read.digest, size: Number(before.size), lastModified: Number(before.mtimeMs) };
}

/** The failure of a document (`path`, shown in a message as `shown`) whose digest may mix two versions. */
function changedWhileHashed(path: string, shown: string): InputFileError {
  return new InputFileError(path, 'changed while it was being hashed; hash it again when it is stable', {
    code: 'changed_while_hashed',
    message: `${shown} changed while it was being hashed; hash it again when it is stable`,
  });
}

/**
 * Whether two fstats of one descriptor disagree on device, inode, size,
 * mtime or ctime (ns): the file was written to in between. Also checked
 * between the blocks of a large file, so a file being written to stops
 * being read at once instead of at its end (a 400 MB file appended to took
 * its whole hashing time to be refused); ctime never moves back, so what
 * differs there still differs in checkVersion.
 */
export function changedSince(before: BigIntStats, now: BigIntStats): boolean {
  return (
    before.dev !== now.dev ||
    before.ino !== now.ino ||
    before.size !== now.size ||
    before.mtimeNs !== now.mtimeNs ||
    before.ctimeNs !== now.ctimeNs
  );
}

/**
 * Whether a command argument that may be a digest or a file (`show`,
 * `receipt`) is a digest: 64 hex digits, unless a regular file of that name
 * exists.
 */
export async function isDigestNotFile(target: string): Promise<boolean> {
  if (!/^[0-9a-fA-F]{64}$/.test(target)) return false;
  return stat(target).then(
    (info) => !info.isFile(),
    () => true,
  );
}

/** An error of hashing `path` as it is reported: an fs error becomes the InputFileError naming the file; others pass. */
export function asInputError(path: string, error: unknown): unknown {
  if (error instanceof InputFileError) return error;
  if (typeof (error as NodeJS.ErrnoException | undefined)?.code === 'string') {
    return fileError(path, error as NodeJS.ErrnoException);
  }
  return error;
}

/**
 * Why a file or folder could not be written or made, in a few words, from an
 * fs error: never Node's message, which names the temporary file written
 * first (store/files.ts writeFileAtomic) and gives no reason in words. For
 * receipts, whether `-o` or --receipt-dir.
 */
export function writeErrorReason(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'ENOENT':
      return 'its folder does not exist, or cannot hold files';
    case 'ENOTDIR':
      return 'a part of the path that should be a folder is not one';
    case 'EROFS':
      return 'read-only file system';
    case 'ENOSPC':
      return 'no space left on the device';
    case 'EDQUOT':
      return 'disk quota exceeded';
    case undefined:
      return (error as Error | undefined)?.message ?? String(error);
    default:
      // Known codes in the same words as for reading; any other by its code alone.
      return fileErrorReason({ code, message: `the system said ${code}` });
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
    case 'EMFILE':
    case 'ENFILE':
      // Only once a batch has waited for descriptors to be freed (core/batch.ts).
      return `too many files open at once (${FD_SHORTAGE_REMEDY})`;
    case 'EAGAIN':
    case 'EWOULDBLOCK':
      // A non-blocking read found nothing yet: waiting could be forever, so it is not retried.
      return 'not readable without waiting (a device or pseudo-file?)';
    case 'ESPIPE':
      return 'not a regular file';
    case 'ERR_INVALID_ARG_VALUE':
      // Node refuses a path with a NUL byte before any system call: a line of a --files-from list.
      if (error.message?.includes('null bytes'))
        return 'the name holds a NUL byte, which no file name can (a NUL-separated list needs -0)';
      return error.message ?? 'unreadable';
    default:
      return error.message ?? 'unreadable';
  }
}

/** The usage error for a file that cannot be read, from an fs error (or its code and message). */
export function fileError(path: string, error: { code?: string; message?: string }): InputFileError {
  // A socket (or a device without its driver) cannot be opened: what a stat calls not a regular file.
  if (error.code === 'ENXIO') return notRegular(path);
  return new InputFileError(path, fileErrorReason(error), { cause: error });
}

function truncate(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/**
 * File primitives of the local store: private directories, atomic writes and
 * reads that name the file when it is damaged. A damaged file is reported,
 * never rewritten or wiped: it may hold the only copy of a registration.
 *
 * The store may sit where others could plant links (a CI checkout that
 * earlier build steps touched, a shared /tmp), and notarize may run as root.
 * So no store file is ever opened through a symbolic link: writes create a
 * new file with O_EXCL|O_NOFOLLOW beside the target and rename it over the
 * target (a rename replaces a link itself, never what it points to), reads
 * open with O_NOFOLLOW and refuse a link. A store directory that is a link,
 * is not ours, or is writable by everyone (a sticky /tmp) is refused, never
 * chmod'ed: its content cannot be trusted, and changing its rights would
 * change them for everyone who shares it. Rights are only ever changed on an
 * open descriptor of the very directory or file that was checked.
 */
import { randomBytes } from 'node:crypto';
import {
  accessSync,
  closeSync,
  constants,
  readdirSync,
  fchmodSync,
  fdatasync,
  fstatSync,
  fsync,
  fsyncSync,
  linkSync,
  lstatSync,
  open,
  openSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { z } from 'zod';
import { NewerStoreFileError, StoreError } from '../errors.js';
import { FD_SHORTAGE_REMEDY, isFdShortage, whenFdsFree } from '../fd-shortage.js';
import { makeDirs } from '../mkdirs.js';
import { anythingAt } from '../path-spelling.js';
import { describeZodError } from '../validation.js';

/** The version of the service store's files (their `schemaVersion`): what this notarize writes and reads. */
export const STORE_SCHEMA_VERSION = 1;

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** 0 where the platform has no such flag (Windows): the checks below then rest on lstat alone. */
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const O_DIRECTORY = constants.O_DIRECTORY ?? 0;
/** A FIFO planted in place of a store file would block a plain open forever. */
const O_NONBLOCK = constants.O_NONBLOCK ?? 0;
/** A new file only, never through a link: every store file and lock is made so. */
export const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW;

const HINT_DIR = 'use a private directory of your own, named by its real path in NOTARIZE_CONFIG_DIR';

const NOT_A_DIRECTORY = 'it is not a directory';

/** A file where a folder of the store goes is no one's choice of store: moved aside, notarize makes the folder. */
const HINT_NOT_A_DIRECTORY =
  'move that file aside (notarize makes the folder anew), or name another store in NOTARIZE_CONFIG_DIR';

/** This process's user id; undefined where the platform has none (Windows: no owner checks). */
export function myUid(): number | undefined {
  return process.getuid?.();
}

/**
 * Why `info` (from lstat, or fstat of a descriptor opened without following
 * links) cannot be a store directory, or undefined when it can.
 */
function unsafeDirReason(info: Stats): string | undefined {
  if (info.isSymbolicLink()) return 'it is a symbolic link, which notarize does not follow';
  if (!info.isDirectory()) return NOT_A_DIRECTORY;
  const uid = myUid();
  if (uid !== undefined && info.uid !== uid) return `it belongs to another user (uid ${info.uid}, you are ${uid})`;
  // Sticky or world-writable: others may have put anything in it, and it is
  // not ours alone to tighten (this is /tmp's 1777, even for root).
  if (process.platform !== 'win32' && (info.mode & 0o1002) !== 0) {
    return `it is world-writable or sticky, as shared directories are (mode ${(info.mode & 0o7777).toString(8)})`;
  }
  return undefined;
}

function dirError(
  dir: string,
  reason: string,
  cause?: unknown,
  hint = refusalHint(cause) ?? (reason === NOT_A_DIRECTORY ? HINT_NOT_A_DIRECTORY : HINT_DIR),
): StoreError {
  return new StoreError(dir, `cannot use the store directory ${dir}: ${reason}`, {
    hint,
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * Where the system refused this user a path (EACCES, EPERM), from the
 * error's path and call: a folder whose listing was refused; else the
 * highest folder above the path it cannot search, or the folder holding
 * the path when the call changes its entries (a create, a rename, a link,
 * a removal), which its write permission governs; else what is at the
 * path itself (a folder's or a file's own rights), or, when nothing is
 * there, its folder. Undefined when the error names no path.
 */
export function refusedPlace(cause: unknown): { folder?: string; file?: string } | undefined {
  const { path, syscall } = (cause ?? {}) as NodeJS.ErrnoException;
  if (typeof path !== 'string') return undefined;
  if (syscall === 'scandir' || syscall === 'opendir') return { folder: path };
  const changesEntry = syscall !== undefined && ENTRY_CHANGES.has(syscall);
  const folder = refusedFolder(path, changesEntry);
  if (folder !== undefined) return { folder };
  // The folders look open to access(2) (root's always do): a change of entries is still its folder's to allow.
  if (changesEntry) return { folder: dirname(path) };
  let info;
  try {
    info = lstatSync(path, { throwIfNoEntry: false });
  } catch {
    // A folder above changed its rights since: its folder is where to look.
  }
  if (info === undefined) return { folder: dirname(path) };
  return info.isDirectory() ? { folder: path } : { file: path };
}

/**
 * What to change when the system refused a store path: this user's access
 * to it (accessHint), or a file descriptor to open it with (EMFILE, ENFILE:
 * a moment's shortage is waited out where the open can be tried again,
 * fd-shortage.ts; past that, the limit is what to change). Undefined for
 * any other error: the caller's hint stands.
 */
export function refusalHint(cause: unknown): string | undefined {
  return accessHint(cause) ?? (isFdShortage(cause) ? FD_SHORTAGE_REMEDY : undefined);
}

/**
 * What to change when the system refused this user a store path (EACCES):
 * the folder or file refusedPlace finds, with the chmod that fixes it. Only
 * a folder or file of this user's is named; for anyone else's (a store
 * under another user's home, a file another user owns) undefined: the
 * caller's hint stands (a store of your own, or the file moved aside).
 * Undefined for any other error too.
 */
export function accessHint(cause: unknown): string | undefined {
  const errno = cause as NodeJS.ErrnoException | undefined;
  if (errno?.code !== 'EACCES') return undefined;
  const place = refusedPlace(errno);
  if (place?.folder !== undefined) {
    const access =
      errno.syscall === 'scandir' || errno.syscall === 'opendir' ? 'read and search' : 'read, write and search';
    return ownPath(place.folder) ? `give this user ${access} access to ${place.folder} (chmod u+rwx)` : undefined;
  }
  // Every folder above it let this user in: the file's own rights refused it (a regular file's only:
  // anything else in a store file's place is no store file, which the caller's hint says).
  return place?.file !== undefined && ownPath(place.file, true)
    ? `give this user read and write access to ${place.file} (chmod u+rw)`
    : undefined;
}

/** The calls that change a folder's entries, which its write permission governs. */
const ENTRY_CHANGES = new Set(['rename', 'link', 'unlink', 'mkdir', 'rmdir', 'symlink']);

/**
 * The folder above `path` that refuses this user: the highest one it
 * cannot search, else the one holding `path` when it cannot write there
 * and the call changes its entries (`changesEntry`, or `path` is not there:
 * a create); undefined when none does.
 */
function refusedFolder(path: string, changesEntry: boolean): string | undefined {
  const folders: string[] = [];
  for (let folder = dirname(path); !folders.includes(folder); folder = dirname(folder)) folders.unshift(folder);
  for (const folder of folders) {
    try {
      accessSync(folder, constants.X_OK);
    } catch {
      return folder;
    }
  }
  const holding = dirname(path);
  if (!changesEntry && anythingAt(path)) return undefined;
  try {
    accessSync(holding, constants.W_OK);
    return undefined;
  } catch {
    return holding;
  }
}

/**
 * Whether `path` can be looked up and is this user's, and so is what it
 * leads to (a link of this user's into another user's folder is not: a
 * chmod through it would fail); with `file`, a regular file only.
 */
function ownPath(path: string, file = false): boolean {
  try {
    const entry = lstatSync(path);
    const target = statSync(path);
    const uid = myUid();
    if (file && !entry.isFile()) return false;
    return uid === undefined || (entry.uid === uid && target.uid === uid);
  } catch {
    return false;
  }
}

/**
 * Refuses to tighten a directory that holds entries not notarize's: its
 * rights were someone's choice for what else it holds.
 */
function refuseForeignEntries(dir: string, info: Stats, own: OwnEntries): void {
  const foreign = readdirSync(dir).filter((name) => !own(name));
  if (foreign.length === 0) return;
  const shown = foreign.slice(0, 3).join(', ') + (foreign.length > 3 ? `, and ${foreign.length - 3} more` : '');
  throw dirError(
    dir,
    `others may read it (mode ${(info.mode & 0o7777).toString(8)}) and it holds entries that are not notarize's (${shown})`,
    undefined,
    `notarize only tightens a directory of its own to 0700: name one in NOTARIZE_CONFIG_DIR, or \`chmod 700\` this one if it is meant to hold credentials`,
  );
}

/**
 * Which entries a directory may hold for notarize to tighten it: a directory
 * holding anything else (NOTARIZE_CONFIG_DIR set to a home, a web root, or
 * `/` from an unset variable) is not notarize's to chmod, and is refused.
 */
export type OwnEntries = (name: string) => boolean;

/**
 * Creates `dir` (and parents) readable by its owner alone. An existing
 * directory of ours with group rights is tightened to 0700; returns true when
 * it had to be, so the caller can warn. Throws StoreError naming the
 * directory when it is a link, not a directory, not ours or shared with
 * everyone (see the module comment), wider than 0700 while holding entries
 * `own` does not accept, or cannot be created.
 */
export function ensurePrivateDir(dir: string, own?: OwnEntries): boolean {
  try {
    makeDirs(dir, PRIVATE_DIR_MODE); // not mkdirSync's recursive mode: it can loop forever (src/mkdirs.ts)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (isLink(dir)) throw dirError(dir, 'it is a symbolic link, which notarize does not follow', error);
    if (code === 'EEXIST' || code === 'ENOTDIR') throw dirError(dir, NOT_A_DIRECTORY, error);
    throw dirError(dir, (error as Error).message, error);
  }
  const tightened = tightenDirIfExists(dir, own);
  if (tightened === undefined) throw dirError(dir, 'it disappeared while being prepared');
  return tightened;
}

/**
 * Checks an existing store directory as ensurePrivateDir does, without
 * creating it: true when it had to be tightened, false when it was already
 * private, undefined when it does not exist.
 */
export function tightenDirIfExists(dir: string, own?: OwnEntries): boolean | undefined {
  let seen: Stats;
  try {
    seen = lstatSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw dirError(dir, (error as Error).message, error);
  }
  const reason = unsafeDirReason(seen);
  if (reason !== undefined) throw dirError(dir, reason);
  if (process.platform === 'win32' || (seen.mode & 0o077) === 0) return false;
  // Tightened through a descriptor of the directory just checked: a link
  // swapped in meanwhile fails to open instead of being chmod'ed.
  let fd: number;
  try {
    fd = openSync(dir, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch (error) {
    throw dirError(dir, `it changed while being checked (${(error as NodeJS.ErrnoException).code})`, error);
  }
  try {
    const info = fstatSync(fd);
    if (info.ino !== seen.ino || info.dev !== seen.dev) throw dirError(dir, 'it changed while being checked');
    if (own !== undefined) refuseForeignEntries(dir, info, own);
    // Exactly 0700, not the old mode's owner bits: the owner needs all three.
    fchmodSync(fd, PRIVATE_DIR_MODE);
    return true;
  } catch (error) {
    if (error instanceof StoreError) throw error;
    throw dirError(dir, (error as Error).message, error);
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads a store file without following a link. Returns undefined when it
 * does not exist; throws StoreError naming the file when it is a link, not a
 * regular file, another user's, or unreadable. Given `onTightened`, a file
 * of ours readable by others is tightened to 0600 (its owner bits kept) and
 * `onTightened` told.
 */
export function readPrivateFile(file: string, onTightened?: () => void): string | undefined {
  return readRegularFile(file, { onTightened });
}

/**
 * Reads a file as readPrivateFile does; with `anyOwner`, also one of
 * another user (a file whose content is checked in full by its reader, such
 * as a tree's manifest in --receipt-dir, never a store file).
 */
export function readRegularFile(
  file: string,
  { onTightened, anyOwner = false }: { onTightened?: () => void; anyOwner?: boolean },
): string | undefined {
  let fd: number;
  try {
    // Most lookups are of files not there (a document's probes under its lock):
    // an lstat says so without the exception a failed open throws.
    if (lstatSync(file, { throwIfNoEntry: false }) === undefined) return undefined;
    fd = openSync(file, constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    // ELOOP (Linux, macOS) or EMLINK (FreeBSD): the name is a link.
    if ((code === 'ELOOP' || code === 'EMLINK') && isLink(file)) throw fileError(file, 'it is a symbolic link');
    throw fileError(file, (error as Error).message, error);
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw fileError(file, 'it is not a regular file');
    const uid = myUid();
    if (!anyOwner && uid !== undefined && info.uid !== uid) {
      throw fileError(file, `it belongs to another user (uid ${info.uid}, you are ${uid})`);
    }
    if (onTightened !== undefined && process.platform !== 'win32' && (info.mode & 0o077) !== 0) {
      fchmodSync(fd, info.mode & 0o700);
      onTightened?.();
    }
    // Synchronous: a store file is a few hundred bytes (see writeFileAtomic).
    return readFileSync(fd, 'utf8');
  } catch (error) {
    if (error instanceof StoreError) throw error;
    throw fileError(file, (error as Error).message, error);
  } finally {
    closeSync(fd);
  }
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

function fileError(file: string, reason: string, cause?: unknown): StoreError {
  return new StoreError(file, `cannot read store file ${file}: ${reason}`, {
    hint:
      refusalHint(cause) ??
      'notarize never reads or writes a store file through a link or owned by someone else: move it aside, or use a store of your own',
    ...(cause === undefined ? {} : { cause }),
  });
}

export interface WriteOptions {
  /** Mode of a new file (before the umask); store files are 0600. */
  mode?: number;
  /**
   * false: fail with EEXIST when `file` exists (a link included) rather
   * than replace it; the new file still appears whole, never half-written,
   * except on a file system without hard links (linkOrCreate).
   */
  replace?: boolean;
  /** Shares the directory's flush with the owner's other writes; without it, this write flushes alone. */
  flushes?: DirFlushes;
}

/**
 * Writes `data` to `file` atomically: a new temporary file in the same
 * directory, flushed to disk, then renamed over the target, and the directory
 * flushed too. A reader (or a process killed mid-write) sees the old file or
 * the new one, never a mix. Temporary files start with a dot; a process
 * killed before its rename leaves one behind, which listings skip.
 *
 * No link is ever followed: the temporary file is created with
 * O_EXCL|O_NOFOLLOW (a link planted at its name makes the create fail), and
 * a rename over a link replaces the link itself. With `replace: false` the
 * temporary file is hard-linked to the target instead, which fails when
 * anything (a link included) is there.
 *
 * The calls that change the directory (the create, the rename) and the two
 * flushes run on libuv's thread pool, so those of a batch's documents
 * overlap and this thread, which also drives a batch's requests, never waits
 * for the file system: on ext4 a create can wait behind a journal commit or
 * walk past recently freed inodes (0.5–0.7 ms each in a busy batch; see
 * docs/performance.md). The writes and the close stay here: a few hundred
 * bytes into a descriptor already open. The promise settles only once the
 * data is durable.
 */
export async function writeFileAtomic(
  file: string,
  data: string | Iterable<string>,
  options: WriteOptions = {},
): Promise<void> {
  const dir = dirname(file);
  const temp = join(dir, `.${basename(file)}.${uniqueSuffix()}.tmp`);
  // Pieces are written one by one: a tree of 100,000 leaves never becomes one
  // string (store/service-store.ts). Only linkOrCreate's fallback needs the whole.
  const pieces = typeof data === 'string' ? [data] : options.replace === false ? [[...data].join('')] : data;
  // Out of descriptors for a moment (a batch's other documents hold them): wait, do not lose the write.
  let fd: number | undefined = await whenFdsFree(() =>
    onPool<number>((done) => open(temp, CREATE_NEW, options.mode ?? PRIVATE_FILE_MODE, done)),
  );
  let bytes = Buffer.alloc(0);
  try {
    // A write may be short (a full disk, a file size limit): loop until all
    // bytes are down or the system says why not. Renaming a short temporary
    // file would replace a good entry with a truncated one.
    for (const piece of pieces) {
      bytes = Buffer.from(piece, 'utf8');
      for (let done = 0; done < bytes.length;) {
        done += writeSync(fd, bytes, done, bytes.length - done);
      }
    }
    const written = fd;
    await onPool<void>((done) => fdatasync(written, done));
    fd = undefined;
    closeSync(written);
    if (options.replace === false) {
      // `bytes`: the one piece, the whole content (see above).
      linkOrCreate(temp, file, bytes, options.mode ?? PRIVATE_FILE_MODE);
      ignoreErrors(() => unlinkSync(temp));
    } else {
      await rename(temp, file);
    }
  } catch (error) {
    // The write's own error is the one worth reporting, not a failed clean-up.
    if (fd !== undefined) ignoreErrors(() => closeSync(fd!));
    ignoreErrors(() => unlinkSync(temp));
    throw error;
  }
  await (options.flushes ? options.flushes.flush(dir) : syncDir(dir));
}

/**
 * Gives the complete file `temp` the name `file` only if that name is free.
 * Where hard links are not supported, creates `file` with O_EXCL|O_NOFOLLOW
 * and writes it (a reader may then briefly see it incomplete).
 */
function linkOrCreate(temp: string, file: string, bytes: Buffer, mode: number): void {
  try {
    linkSync(temp, file);
    return;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'ENOSYS') throw error;
  }
  const fd = openSync(file, CREATE_NEW, mode);
  try {
    for (let done = 0; done < bytes.length;) done += writeSync(fd, bytes, done, bytes.length - done);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A call of node:fs's callback API on libuv's pool, as a promise: for a descriptor, not a FileHandle. */
function onPool<T>(start: (done: (error: NodeJS.ErrnoException | null, value?: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => start((error, value) => (error ? reject(error) : resolve(value as T))));
}

function ignoreErrors(fn: () => void): void {
  try {
    fn();
  } catch {
    // See the caller.
  }
}

/**
 * A name part no other writer on this host uses: the pid, a random tag per
 * module instance (pids are reused; threads load their own), a counter. The
 * tag and counter stay module-level on purpose: they name this instance of
 * the code, whoever writes (the store, locks, receipts), and hold nothing else.
 */
export function uniqueSuffix(): string {
  return `${process.pid}.${PROCESS_TAG}.${(writeCounter++).toString(36)}`;
}

const PROCESS_TAG = randomBytes(4).toString('hex');
let writeCounter = 0;

/**
 * The most bytes writeFileAtomic's temporary name adds to its target's
 * name: `.`, `.`, a pid (7 digits: Linux's largest pid_max is 4194304), `.`,
 * the tag (8), `.`, the counter (8 base-36 digits: 2.8 million million
 * writes), `.tmp`. A target's name must leave room for them (core/receipts.ts).
 */
export const TEMPORARY_NAME_EXTRA_BYTES = 1 + 1 + 7 + 1 + 8 + 1 + 8 + 4;

/**
 * The name of the file `name` is writeFileAtomic's temporary file for
 * (`.<target>.<uniqueSuffix>.tmp`, renamed to `<target>` once written), or
 * undefined: a run stopped between the two leaves one behind.
 */
export function temporaryTarget(name: string): string | undefined {
  return /^\.(.+)\.\d+\.[0-9a-f]{8}\.[0-9a-z]+\.tmp$/.exec(name)?.[1];
}

/**
 * Flushes of directories' entries, shared: a caller needs a flush that
 * started after its rename, so while one runs, every caller arriving joins
 * the single next one. A batch's documents then share a few flushes per
 * directory instead of making one each, with the same guarantee. Owned by
 * whoever writes a run's files (the Store, a receipt plan) and handed to
 * writeFileAtomic; it holds only flushes in progress.
 */
export class DirFlushes {
  readonly #byDir = new Map<string, { running?: Promise<void>; next?: Promise<void> }>();

  /** Resolves once a flush of `dir` that started after this call has ended. */
  flush(dir: string): Promise<void> {
    const flushes = this.#byDir.get(dir) ?? {};
    this.#byDir.set(dir, flushes);
    const start = (): Promise<void> => {
      const running = syncDir(dir).finally(() => {
        if (flushes.running !== running) return;
        flushes.running = undefined;
        // Nobody waiting: forget the directory (a long-lived process writes to many).
        if (flushes.next === undefined) this.#byDir.delete(dir);
      });
      flushes.running = running;
      return running;
    };
    if (flushes.running === undefined) return start();
    const startNext = (): Promise<void> => {
      flushes.next = undefined;
      return start();
    };
    // Whatever the running flush's outcome: it may have started before this caller's rename.
    flushes.next ??= flushes.running.then(startNext, startNext);
    return flushes.next;
  }
}

/**
 * Flushes a directory's entries (the rename) to disk. Skipped where the
 * platform cannot (a directory that cannot be opened, as on Windows, or a
 * file system refusing to flush one: CANNOT_FLUSH_DIR); any other failure
 * (EIO, a full disk) rejects: the rename may not be durable, and the
 * caller promised it would be. Not for want of a descriptor either: that
 * passes (it waits), or fails the write, which was never made durable.
 */
/** What fsync(2) of a directory answers on file systems that cannot flush one: not a failure of the write. */
const CANNOT_FLUSH_DIR = new Set(['EINVAL', 'ENOTSUP', 'EOPNOTSUPP', 'EISDIR', 'EBADF', 'EPERM']);

async function syncDir(dir: string): Promise<void> {
  let fd: number;
  try {
    fd = await whenFdsFree(() => openSync(dir, 'r'));
  } catch (error) {
    if (isFdShortage(error)) throw error;
    // Windows and some file systems cannot open a directory.
    return;
  }
  try {
    await new Promise<void>((resolve, reject) =>
      fsync(fd, (error) => (error && !CANNOT_FLUSH_DIR.has(error.code ?? '') ? reject(error) : resolve())),
    );
  } finally {
    ignoreErrors(() => closeSync(fd));
  }
}

/**
 * Removes a file without blocking this thread (see writeFileAtomic); a file
 * already gone is not an error.
 */
export async function removeFileOffThread(file: string): Promise<void> {
  try {
    await unlink(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** Removes a file; a file already gone is not an error. */
export function removeFile(file: string): void {
  try {
    // Often not there (a document's unanswered request): no unlink, and no exception, for nothing.
    if (lstatSync(file, { throwIfNoEntry: false }) === undefined) return;
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
  const text = readPrivateFile(file);
  return text === undefined ? undefined : parseStoreText(file, text, schema);
}

/** Parses and validates the text of the store file `file`, read by the caller; throws StoreError as readStoreFile. */
export function parseStoreText<T extends z.ZodType>(file: string, text: string, schema: T): z.infer<T> {
  const value = parseStoreJson(file, text);
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw newerVersion(file, value) ?? corrupt(file, describeZodError(parsed.error), parsed.error);
  return parsed.data;
}

/** The JSON value of the text of the store file `file`; StoreError naming the file when it is not JSON. */
export function parseStoreJson(file: string, text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw corrupt(file, 'not valid JSON', error);
  }
}

/**
 * A file of the store's layout (a `schemaVersion` number) of a version above
 * the one this notarize writes: written by a newer notarize, not damaged;
 * left untouched, and the way out is that version, not a repair by hand.
 */
function newerVersion(file: string, value: unknown): NewerStoreFileError | undefined {
  const version = (value as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (typeof version !== 'number' || !Number.isInteger(version) || version <= STORE_SCHEMA_VERSION) return undefined;
  return new NewerStoreFileError(
    file,
    `store file ${file} was written by a newer notarize (store version ${version}; this one reads ${STORE_SCHEMA_VERSION})`,
    { hint: 'run the newer notarize that wrote it, or give this one another NOTARIZE_CONFIG_DIR' },
  );
}

/**
 * The failure of a listing that passed over files it could not read
 * (`what`: "ledger file"), once the rest is shown: its output is not the
 * whole, and must not pass for it (`[]` and exit 0 for files all damaged).
 * Undefined when every file was read.
 */
export function passedOver(problems: readonly StoreError[], what: string): StoreError | undefined {
  const [first] = problems;
  if (first === undefined) return undefined;
  const which = problems.length === 1 ? `a ${what}` : `${problems.length} ${what}s`;
  return new StoreError(
    first.file,
    `${which} could not be read: the list leaves ${problems.length === 1 ? 'it' : 'them'} out`,
    {
      hint: 'see the warnings above for what to do with each',
    },
  );
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
  if (basename(dirname(file)) === 'trees') {
    return (
      `${untouched}: restore it from a backup, or from ${basename(file, '.json')}.tree.json of the --receipt-dir ` +
      `of its run (copied in as it is); it lists the documents under that Merkle root, so until then ` +
      `register stops rather than register them again (--aggregate, or a document it may hold on its own)`
    );
  }
  if (basename(dirname(file)) === 'ledger') {
    return `${untouched}: repair it by hand or restore it from a backup (should you move it aside instead, this store no longer has that record)`;
  }
  const hash = basename(file, '.json');
  return `${untouched}: repair it by hand, or retire it with \`notarize pending drop ${hash}\` (kept aside) to start that registration afresh`;
}

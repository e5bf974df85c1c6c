/**
 * Turning what the user named (paths, directories with --recursive, a
 * --files-from list, '-') into the documents to process, the same way for
 * `register`, `hash` and `verify`.
 *
 * Only problems with the arguments as a whole (no input, '-' twice, -0
 * without --files-from, --include/--exclude without --recursive, a list that
 * cannot be opened) are usage errors raised up front. A named path that cannot be processed (missing, unreadable, a
 * special file, a directory without --recursive) becomes an `unusable` item:
 * it fails on its own and the others go on. Symbolic links and special files
 * met while walking a directory are reported, not followed.
 *
 * The documents come as an async iterator, read as they are consumed: a
 * --files-from list of millions of paths is streamed (never held whole, as
 * text or as an array), so memory stays bounded however long it is.
 */
import { isUtf8 } from 'node:buffer';
import { constants, lstatSync, open as openCallback, openSync, statSync } from 'node:fs';
import { Socket } from 'node:net';
import { open, readdir, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { anythingAt, entryPath, systemRealPath } from '../path-spelling.js';
import type { Readable } from 'node:stream';
import picomatch from 'picomatch';
import { InputFileError, UsageError } from '../errors.js';
import { unblockOnInterrupt } from '../interrupt.js';
import { fileErrorReason, isFolderSeen, replacedSinceWalked, type Listed, type ListedFolder } from './hash.js';
import { checkStandardInput } from './read-input.js';

export interface InputOptions {
  recursive?: boolean;
  include?: string[];
  exclude?: string[];
  /** A file listing paths, or '-' for standard input. */
  filesFrom?: string;
  /** The --files-from list is NUL-separated (-0). */
  nul?: boolean;
  /**
   * The notarize store's folder, whose files are never documents: a walk
   * does not enter it, and a file named or listed inside it is passed over.
   * Walked with the documents (`register -r .` with the store in `./.notarize`,
   * or under the home folder walked), they would be registered and paid for,
   * and the records each run writes there paid for again by the next.
   */
  storeDir?: string;
  /**
   * Given when the folder is one notarize cannot use as its store (a shared
   * /tmp, with the documents in it): then only the entries at its top this
   * accepts (config.json, services/, ...) are the store's, and the rest of the
   * folder holds documents like any other.
   */
  storeEntries?: (name: string) => boolean;
}

/** One document to process: a file on disk, standard input, or a named path that cannot be processed. */
export type InputItem =
  | {
      kind: 'file';
      path: string;
      /**
       * From the stat of the walk, for progress only: the size and mtime sent
       * as custody metadata come from the fstat that the digest was checked
       * against (hash.ts), since the file may change in between.
       */
      size: number;
      /** For a file found under a directory: its path below it, with '/' (e.g. `linux/app.tar.gz`). */
      relative?: string;
      /**
       * For a file found under a directory: the file the walk saw (lstat), which
       * the file opened must be (hash.ts Listed): a link swapped in for it, or
       * for a folder above it, would lead out of the folder walked.
       */
      listed?: Listed;
    }
  | { kind: 'stdin' }
  /** Fails on its own when processed (see the module comment). */
  | { kind: 'unusable'; path: string; error: InputFileError };

function fileItem(path: string, info: { size: number }, relative?: string, listed?: Listed): InputItem {
  return {
    kind: 'file',
    path,
    size: info.size,
    ...(relative ? { relative } : {}),
    ...(listed ? { listed } : {}),
  };
}

/** The name an item is reported under: its path, or '-' for standard input. */
export function itemName(item: InputItem): string {
  return item.kind === 'stdin' ? '-' : item.path;
}

/** A path passed over while walking a directory (or in the store), and why. */
export interface SkippedPath {
  path: string;
  reason: string;
  /** The store's folder or a file in it: no document (register passes it over; verify fails it: it would ship). */
  ownStore?: boolean;
}

const IN_STORE = 'part of the notarize store, whose files are never documents';

/**
 * The store's folder as the documents meet it, by identity (device and
 * inode): the folder a walk comes to, and the folders above a file named or
 * listed, from its folder's real path up. Not by path: a bind mount, or a
 * link, shows the same folder under another. Looked up until it is there
 * (the run itself may make it); each folder is asked about once.
 */
class StoreFolder {
  readonly #dir: string;
  readonly #entries: ((name: string) => boolean) | undefined;
  #id: { dev: bigint; ino: bigint } | undefined;
  /** Whether each folder met (a real path) is the store's or inside it. */
  readonly #inside = new Map<string, boolean>();
  /** Whether each folder met (a real path) is the store's folder itself. */
  readonly #tops = new Map<string, boolean>();
  /** The real path of the folder of each path as named (undefined: none). */
  readonly #realFolders = new Map<string, string | undefined>();

  constructor(dir: string, entries?: (name: string) => boolean) {
    this.#dir = dir;
    this.#entries = entries;
  }

  /**
   * The folder's own identity: a store named through a link (which every
   * command refuses to use) is the folder it leads to, where its token is
   * (r109: credentials.json was hashed as a document of `verify -r` there).
   */
  #identity(): { dev: bigint; ino: bigint } | undefined {
    return (this.#id ??=
      statSync(this.#dir, { bigint: true, throwIfNoEntry: false }) ??
      lstatSync(this.#dir, { bigint: true, throwIfNoEntry: false }));
  }

  /** Whether a folder, as lstat or stat saw it, is the store's folder itself. */
  #isTop(folder: { dev: bigint; ino: bigint }): boolean {
    const id = this.#identity();
    return id !== undefined && folder.dev === id.dev && folder.ino === id.ino;
  }

  /** Whether a folder, as lstat or stat saw it, is the store's (none is when only its entries are). */
  is(folder: { dev: bigint; ino: bigint }): boolean {
    return this.#entries === undefined && this.#isTop(folder);
  }

  /**
   * When only the store's entries are its own, and the folder walked (as lstat
   * saw it, else stat'ed here) is the store's: which of its entries are.
   */
  entriesIn(folder: string, seen?: { dev: bigint; ino: bigint }): ((name: string) => boolean) | undefined {
    if (this.#entries === undefined) return undefined;
    const id = seen ?? statSync(folder, { bigint: true, throwIfNoEntry: false });
    return id !== undefined && this.#isTop(id) ? this.#entries : undefined;
  }

  /** Whether a path (a file, or a folder named) is the store's or inside it. */
  holds(path: string): boolean {
    if (this.#identity() === undefined) return false;
    const folder = this.#realFolder(dirname(path));
    if (folder !== undefined && this.#entryInside(folder, basename(path))) return true;
    // A link named or listed (creds.json -> the store's credentials.json) leads into it from outside.
    let link = false;
    try {
      link = lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink() === true;
    } catch {
      // A name the system refuses: expandPath says why.
    }
    const target = link ? systemRealPath(path) : undefined;
    return target !== undefined && this.#entryInside(dirname(target), basename(target));
  }

  /** Once per folder as named: a list of 100,000 files in one folder asks the system once. */
  #realFolder(named: string): string | undefined {
    if (!this.#realFolders.has(named)) this.#realFolders.set(named, systemRealPath(named));
    return this.#realFolders.get(named);
  }

  /** Whether the entry `name` of `folder` (a real path) is the store's or inside it. */
  #entryInside(folder: string, name: string): boolean {
    return (this.#entries !== undefined && this.#entries(name) && this.#top(folder)) || this.#folderInside(folder);
  }

  /** Whether a folder (a real path) is the store's folder itself; each asked about once. */
  #top(folder: string): boolean {
    let top = this.#tops.get(folder);
    if (top === undefined) {
      const seen = statSync(folder, { bigint: true, throwIfNoEntry: false });
      top = seen !== undefined && this.#isTop(seen);
      this.#tops.set(folder, top);
    }
    return top;
  }

  #folderInside(folder: string): boolean {
    let inside = this.#inside.get(folder);
    if (inside !== undefined) return inside;
    const parent = dirname(folder);
    inside =
      (this.#entries === undefined && this.#top(folder)) ||
      (parent !== folder && this.#entryInside(parent, basename(folder)));
    this.#inside.set(folder, inside);
    return inside;
  }
}

export interface Expansion {
  /** The documents, in input order; read once, as they are consumed. */
  items: AsyncIterable<InputItem>;
  /** True when the user named exactly one file (or '-'): output stays in the single-item form. */
  single: boolean;
  /** True when '-' (standard input) is among the paths named on the command line. */
  stdinNamed: boolean;
}

/**
 * Longest path accepted from a --files-from list (Linux's PATH_MAX): a longer
 * line is a failed item, never a crash.
 */
export const MAX_LIST_PATH_BYTES = 4096;

/**
 * Bytes of a --files-from list read without finding a single name: past this
 * it is not a list of paths (e.g. /dev/zero), and the rest is not read.
 */
export const MAX_LIST_GAP_BYTES = 1024 * 1024;

const BYTE_ORDER_MARK = Buffer.from([0xef, 0xbb, 0xbf]);

/** What a --files-from list yields: a name, or a stretch that cannot be one. */
type ListEntry =
  /** `carriageReturn`: a '\r' before the '\n' was dropped (a CRLF list, or a name ending in one). */
  | { name: string; carriageReturn?: true }
  | { tooLong: string; bytes: number }
  | { garbage: number }
  /** Bytes that are not UTF-8 (shown with U+FFFD for them). */
  | { notUtf8: Buffer };

/**
 * Splits a stream into names at '\n' (a '\r' before it dropped) or NUL,
 * skipping empty ones, holding at most MAX_LIST_PATH_BYTES of a name at a
 * time. Ends with a `garbage` entry when MAX_LIST_GAP_BYTES pass without a
 * name (see there).
 */
export async function* splitList(
  input: AsyncIterable<Buffer | string> | Iterable<Buffer | string>,
  nul: boolean,
): AsyncGenerator<ListEntry> {
  const separator = nul ? 0 : 0x0a;
  let held: Buffer[] = [];
  let heldBytes = 0;
  let overflow = 0; // bytes of the current line past the limit, not held
  let gap = 0; // bytes read since the last name
  let first = true;
  const end = (): ListEntry | undefined => {
    let bytes = Buffer.concat(held, heldBytes);
    held = [];
    heldBytes = 0;
    // A list saved by a Windows editor or PowerShell starts with a byte order mark: no name's.
    // Not in a NUL-separated list (find -print0 writes none): there it is a name's.
    if (first && !nul && bytes.subarray(0, 3).equals(BYTE_ORDER_MARK)) bytes = bytes.subarray(3);
    first = false;
    const carriageReturn = !nul && bytes.length > 0 && bytes[bytes.length - 1] === 0x0d;
    if (carriageReturn) bytes = bytes.subarray(0, -1);
    const length = bytes.length + overflow;
    overflow = 0;
    if (length === 0) return undefined;
    if (length > MAX_LIST_PATH_BYTES) return { tooLong: bytes.subarray(0, 60).toString('utf8'), bytes: length };
    // Decoded strictly: a lossy decoding could name another file, one whose name has U+FFFD in it.
    if (!isUtf8(bytes)) return { notUtf8: bytes };
    return carriageReturn ? { name: bytes.toString('utf8'), carriageReturn } : { name: bytes.toString('utf8') };
  };
  for await (const raw of input) {
    const chunk = typeof raw === 'string' ? Buffer.from(raw) : raw;
    let start = 0;
    while (start < chunk.length) {
      const at = chunk.indexOf(separator, start);
      const stop = at === -1 ? chunk.length : at;
      const piece = stop - start;
      // Up to one byte past the limit is held (room for a '\r' before the '\n');
      // of an overlong line only the beginning is kept, to name it, and the rest counted.
      const kept = Math.min(piece, MAX_LIST_PATH_BYTES + 1 - heldBytes);
      // A copy: the stream may reuse its chunk.
      if (kept > 0) held.push(Buffer.from(chunk.subarray(start, start + kept)));
      heldBytes += kept;
      overflow += piece - kept;
      gap += piece + (at === -1 ? 0 : 1);
      if (at === -1) break;
      start = at + 1;
      const entry = end();
      if (entry) {
        gap = 0;
        yield entry;
      }
      if (gap > MAX_LIST_GAP_BYTES) {
        yield { garbage: gap };
        return;
      }
    }
    if (gap > MAX_LIST_GAP_BYTES) {
      yield { garbage: gap };
      return;
    }
  }
  const last = end();
  if (last) yield last;
}

/**
 * The filter of --include/--exclude over paths relative to the walked
 * directory: a glob with a slash matches that whole relative path, one
 * without matches the file name (as in .gitignore).
 */
function matcher(include: string[], exclude: string[]): PathFilter {
  const compile = (globs: string[]) => {
    const withSlash = globs.filter((g) => g.includes('/'));
    const nameOnly = globs.filter((g) => !g.includes('/'));
    const byPath = withSlash.length > 0 ? picomatch(withSlash, { dot: true }) : () => false;
    const byName = nameOnly.length > 0 ? picomatch(nameOnly, { dot: true }) : () => false;
    return (path: string) => byPath(path) || byName(path.slice(path.lastIndexOf('/') + 1));
  };
  const included = include.length > 0 ? compile(include) : () => true;
  const excluded = exclude.length > 0 ? compile(exclude) : () => false;
  return { accepts: (path) => included(path) && !excluded(path), excludes: excluded };
}

/** --include/--exclude: whether a file is let through, and whether --exclude names a path. */
interface PathFilter {
  accepts: (relativePath: string) => boolean;
  excludes: (relativePath: string) => boolean;
}

/**
 * Whether a link or special file met in a walk is left out without a word.
 * --exclude leaves any out; --include leaves out only what cannot hold a
 * file it lets through: a link to a folder can (its name says nothing of
 * the files under it), so only --exclude leaves it out.
 */
function leftOut(path: string, relativePath: string, filter: PathFilter): boolean {
  if (filter.excludes(relativePath)) return true;
  let toFolder = false;
  try {
    toFolder = statSync(path).isDirectory();
  } catch {
    // A link to nothing: named by itself.
  }
  return !toFolder && !filter.accepts(relativePath);
}

/** When a folder the walk went into was found replaced (replacedSinceWalked). */
const WHILE_WALKED = 'while its folder was walked';

/** The item of `path`, which could not be used: `error`, or, an errno error, the reason it gives. */
function unusable(path: string, error: unknown): InputItem {
  const reason =
    error instanceof InputFileError ? error : new InputFileError(path, fileErrorReason(error as NodeJS.ErrnoException));
  return { kind: 'unusable', path, error: reason };
}

/**
 * notarize names files by UTF-8 strings. A name whose bytes are not UTF-8
 * would be decoded with U+FFFD in place of those bytes, and so open another
 * file, one whose name really holds U+FFFD, or none: such a name fails on
 * its own, never checked in another's place. `shown`: the name with those
 * bytes as \xNN (escapedName), so it is not mistaken for the other.
 */
function notUtf8(shown: string, from: 'walk' | 'list'): InputItem {
  const where = from === 'walk' ? 'found in a folder walked' : 'in the --files-from list';
  const reason = `its name is not valid UTF-8 (${where}), so notarize cannot open it by name`;
  // --exclude filters a walk only (checkInputOptions): a list's name is left out of the list.
  const leaveOut = from === 'walk' ? 'leave it out (--exclude)' : 'leave it out of the --files-from list';
  return {
    kind: 'unusable',
    path: shown,
    error: new InputFileError(shown, reason, {
      code: 'name_not_utf8',
      message: `'${shown}': ${reason}`,
      hint: `rename it to a UTF-8 name, or ${leaveOut}`,
    }),
  };
}

/** The length of the UTF-8 character whose first byte is `lead`; 0 when no character starts so. */
function utf8Length(lead: number): number {
  if (lead < 0x80) return 1;
  if (lead < 0xc2) return 0; // a continuation byte, or the lead of an overlong form
  if (lead < 0xe0) return 2;
  if (lead < 0xf0) return 3;
  return lead < 0xf5 ? 4 : 0;
}

/** `bytes` as text, each byte that is not part of a UTF-8 character written `\xNN`. */
export function escapedName(bytes: Buffer): string {
  let text = '';
  let from = 0;
  for (let i = 0; i < bytes.length;) {
    const lead = bytes[i]!;
    const length = utf8Length(lead);
    // isUtf8 checks the bytes that follow the lead (a character cut short at the end is not UTF-8).
    if (length > 0 && isUtf8(bytes.subarray(i, i + length))) {
      i += length;
      continue;
    }
    text += bytes.subarray(from, i).toString('utf8') + `\\x${lead.toString(16).padStart(2, '0')}`;
    from = ++i;
  }
  return text + bytes.subarray(from).toString('utf8');
}

/**
 * A path named on the command line holding U+FFFD: what the bytes of an
 * argument that are not UTF-8 become (as for -d), so which file is meant
 * cannot be known. A --files-from list is decoded strictly and takes a real one.
 */
function replacementNamed(path: string): InputItem {
  const reason = 'it holds U+FFFD, which is what bytes of a command line that are not UTF-8 become';
  return {
    kind: 'unusable',
    path,
    error: new InputFileError(path, reason, {
      code: 'name_not_utf8',
      message: `'${path}': ${reason}: notarize cannot tell which file is meant`,
      hint: 'rename it to a UTF-8 name: notarize names every file in UTF-8 (in results, receipts and manifests)',
    }),
  };
}

/** The files under `dir` in name order (deterministic), depth first. */
async function* walk(
  dir: string,
  below: string,
  state: ExpandState,
  folders: readonly ListedFolder[] = [],
): AsyncGenerator<InputItem> {
  const { filter, onSkipped } = state;
  let listed;
  let inside = folders;
  let seen: { dev: bigint; ino: bigint; isDirectory(): boolean } | undefined;
  try {
    // A folder found by the walk (not the one named) must be a folder, not a link swapped in for it
    // since its parent was listed, both before it is listed and after: else its listing may be of
    // another folder's, outside the one walked (readdir takes a path, and follows a link).
    seen = below === '' ? undefined : lstatSync(dir, { bigint: true });
    if (seen !== undefined && !seen.isDirectory()) throw replacedSinceWalked(dir, WHILE_WALKED, 'folder');
    if (seen !== undefined && state.store?.is(seen)) {
      passOverStore(dir, state);
      return;
    }
    // As bytes: a name that is not UTF-8 must not be decoded into another's (notUtf8).
    listed = await readdir(dir, { withFileTypes: true, encoding: 'buffer' });
    if (seen !== undefined) {
      if (!isFolderSeen(lstatSync(dir, { bigint: true }), seen)) {
        throw replacedSinceWalked(dir, WHILE_WALKED, 'folder');
      }
      inside = [...folders, { path: dir, dev: seen.dev, ino: seen.ino }];
    }
  } catch (error) {
    // A subdirectory that cannot be listed fails on its own, like a named file.
    yield unusable(dir, error);
    return;
  }
  const entries = listed.map((entry) => ({ entry, name: entry.name.toString('utf8'), utf8: isUtf8(entry.name) }));
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const storeEntries = state.store?.entriesIn(dir, seen);
  for (const { entry, name, utf8 } of entries) {
    // A name that is not UTF-8 is shown with \xNN for its bytes: never as the name of another file.
    const path = entryPath(dir, utf8 ? name : escapedName(entry.name));
    if (storeEntries?.(name) === true) {
      passOverStore(path, state);
      continue;
    }
    const relativePath = below ? `${below}/${name}` : name;
    const fileOrFolder = entry.isFile() || entry.isDirectory();
    if (!utf8 && fileOrFolder) {
      // Left out as any other would be; a folder may hold files --include lets through.
      const wanted = entry.isDirectory() ? !filter.excludes(relativePath) : filter.accepts(relativePath);
      if (wanted) yield notUtf8(path, 'walk');
    } else if (entry.isDirectory()) {
      yield* walk(path, relativePath, state, inside);
    } else if (!entry.isFile()) {
      // A link or special file: reported (verify fails it), unless --include/--exclude leave it out.
      if (leftOut(path, relativePath, filter)) continue;
      onSkipped({ path, reason: entry.isSymbolicLink() ? 'symbolic link (not followed)' : 'not a regular file' });
    } else if (filter.accepts(relativePath)) {
      let info;
      try {
        info = lstatSync(path, { bigint: true }); // synchronous: see expandPath
      } catch (error) {
        yield unusable(path, error);
        continue;
      }
      yield fileItem(path, { size: Number(info.size) }, relativePath, {
        dev: info.dev,
        ino: info.ino,
        folders: inside,
      });
    }
  }
}

interface ExpandState {
  options: InputOptions;
  filter: PathFilter;
  onSkipped: (skipped: SkippedPath) => void;
  store: StoreFolder | undefined;
  /** Paths passed over as the store's: with no document besides, the run has nothing to do. */
  inStore: number;
  /** Whether standard input is taken (by '-' or by the list): a second '-' fails. */
  stdinTaken: boolean;
}

/** The items of one named path (followed even when it is a symbolic link). */
async function* expandPath(path: string, state: ExpandState): AsyncGenerator<InputItem> {
  let info;
  try {
    // stat, never open: a FIFO or device is recognised here without ever blocking on it,
    // and without the side effects of an open (a watchdog armed, a tty's DTR toggled, a
    // FIFO's writer unblocked and its data dropped). So a --files-from list's paths are
    // stat'ed too, though that is one system call of six per small file (docs/performance.md).
    // Synchronous: a stat takes microseconds, while the thread-pool round trip of the
    // promise form made a list of a million small files 4 times slower (13.2 s against
    // 3.5 s for 200,000 paths); the hash pool opens files synchronously for the same reason.
    info = statSync(path, { bigint: true });
  } catch (error) {
    yield unusable(path, error);
    return;
  }
  if (state.store !== undefined && ((info.isDirectory() && state.store.is(info)) || state.store.holds(path))) {
    passOverStore(path, state);
    return;
  }
  if (info.isDirectory()) {
    if (state.options.recursive) yield* walk(path, '', state);
    else {
      const error = new InputFileError(path, 'is a directory', {
        code: 'is_directory',
        message: `'${path}' is a directory`,
        hint: 'add --recursive to process the files in it',
      });
      yield { kind: 'unusable', path, error };
    }
  } else if (info.isFile()) {
    yield fileItem(path, { size: Number(info.size) });
  } else {
    const error = new InputFileError(path, 'not a regular file', {
      code: 'not_a_file',
      message: `'${path}' is not a regular file`,
    });
    yield { kind: 'unusable', path, error };
  }
}

function passOverStore(path: string, state: ExpandState): void {
  state.inStore++;
  state.onSkipped({ path, reason: IN_STORE, ownStore: true });
}

/**
 * A list's line whose '\r' before the '\n' was dropped: a CRLF list's, or
 * the name of a file ending in a carriage return in a list written by
 * `find` (LF). The name without it, unless only the name with it is there;
 * with both there, neither is taken: the line fails on its own, rather than
 * register or verify another file than the one the list meant.
 */
async function* expandCarriageReturn(name: string, state: ExpandState): AsyncGenerator<InputItem> {
  const withIt = `${name}\r`;
  // A name the system refuses (a NUL in it) is not there: expandPath says why, for this line alone.
  if (!anythingAt(withIt) || !anythingAt(name)) {
    yield* expandPath(anythingAt(withIt) ? withIt : name, state);
    return;
  }
  const reason = `names both '${name}' and a file whose name ends in a carriage return`;
  yield {
    kind: 'unusable',
    path: withIt,
    error: new InputFileError(withIt, reason, {
      code: 'ambiguous_name',
      message: `the --files-from line '${withIt}' ${reason}`,
      hint: 'give the list NUL-separated: find -print0, and -0',
    }),
  };
}

/** Opens the --files-from list up front, so a list that cannot be read is a usage error before anything runs. */
async function openList(source: string, stdin: Readable): Promise<AsyncIterable<Buffer | string>> {
  if (source === '-') {
    checkStandardInput(stdin, 'the --files-from list');
    return stdin;
  }
  let unblock = () => {};
  try {
    const info = await stat(source);
    if (info.isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
    if (!info.isFIFO()) return (await open(source, 'r')).createReadStream({ highWaterMark: 256 * 1024 });
    // A FIFO's open waits for its writer, in a thread a signal's exit would wait for in turn: the
    // signal opens the writing end itself (nothing written), which lets the open return.
    unblock = unblockOnInterrupt(() => openWritingEnd(source));
    const fd = await new Promise<number>((resolve, reject) =>
      openCallback(source, 'r', (error, opened) => (error ? reject(error) : resolve(opened))),
    );
    // Read as a pipe is (standard input's way), on the event loop, never in a pool thread: a writer
    // that holds the FIFO open and sends nothing cannot hold up a signal's exit.
    return new Socket({ fd, readable: true, writable: false });
  } catch (error) {
    throw new UsageError(
      `cannot read the --files-from list from '${source}': ${fileErrorReason(error as NodeJS.ErrnoException)}`,
      { cause: error },
    );
  } finally {
    unblock();
  }
}

/**
 * Opens the FIFO at `path` for reading and writing, without waiting, and
 * keeps it open (only an interruption's exit runs this, which closes it): a
 * reader blocked opening it goes on, and so does one whose open was queued
 * on the pool but not yet made when the signal came, which a writing end
 * opened and closed at once (O_WRONLY, ENXIO with no reader yet) left to
 * block for ever, and the exit with it. Nothing is written: whatever is at
 * that path now is left as it is. Linux opens a FIFO O_RDWR at once.
 */
function openWritingEnd(path: string): void {
  try {
    openSync(path, constants.O_RDWR | constants.O_NONBLOCK);
  } catch {
    // The FIFO gone: nothing to free.
  }
}

/** The documents of the arguments and the list (expandAll); a UsageError when walks found none. */
async function* expand(
  paths: string[],
  list: AsyncIterable<Buffer | string> | undefined,
  state: ExpandState,
): AsyncGenerator<InputItem> {
  let yielded = 0;
  for await (const item of expandAll(paths, list, state)) {
    yielded++;
    yield item;
  }
  // Only walks and the store's files can come to nothing (a named file is an item even when
  // missing): an empty folder is most often a build step that made nothing, which must not pass.
  if (yielded === 0 && state.inStore > 0) {
    throw new UsageError(
      'no documents: every file named or found is in the notarize store, and its files are never documents',
      {
        code: 'no_documents',
        hint: 'name the documents themselves, and keep the store (NOTARIZE_CONFIG_DIR) out of the folders processed',
      },
    );
  }
  if (yielded === 0) throw noDocuments(state.options);
}

/** The error when the folders walked held no document. */
function noDocuments(options: InputOptions): UsageError {
  const filtered = (options.include?.length ?? 0) > 0 || (options.exclude?.length ?? 0) > 0;
  return new UsageError(
    `no documents: the folders walked hold no file${filtered ? ' that --include and --exclude let through' : ''}`,
    {
      code: 'no_documents',
      hint: 'check the paths (did the step that makes the files run?)' + (filtered ? ' and the patterns' : ''),
    },
  );
}

/** The items of each path named, then of each path of the list. */
async function* expandAll(
  paths: string[],
  list: AsyncIterable<Buffer | string> | undefined,
  state: ExpandState,
): AsyncGenerator<InputItem> {
  for (const path of paths) {
    if (path === '-') yield { kind: 'stdin' };
    else if (path.includes('\uFFFD')) yield replacementNamed(path);
    else yield* expandPath(path, state);
  }
  if (list === undefined) return;
  let names = 0;
  for await (const entry of splitList(list, state.options.nul ?? false)) {
    names++;
    // A list that arrives fast (a pipe, a FIFO) of documents quick to hash is worked through in
    // microtasks alone: every 256 names the event loop gets a turn, so that a signal is handled at
    // once, not once the list is drained.
    if (names % 256 === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    if ('garbage' in entry) {
      const source = state.options.filesFrom ?? '';
      yield {
        kind: 'unusable',
        path: source,
        error: new InputFileError(
          source,
          `no path in ${entry.garbage} bytes: not a list of paths; the rest is not read`,
          {
            code: 'not_a_list',
            message: `the --files-from list '${source}' holds no path in ${entry.garbage} bytes: the rest of it is not read`,
            hint: state.options.nul ? undefined : 'for a NUL-separated list (find -print0), add -0',
          },
        ),
      };
    } else if ('tooLong' in entry) {
      const path = `${entry.tooLong}...`;
      yield {
        kind: 'unusable',
        path,
        error: new InputFileError(
          path,
          `a line of ${entry.bytes} bytes in the --files-from list: too long for a path`,
          {
            code: 'path_too_long',
          },
        ),
      };
    } else if ('notUtf8' in entry) {
      yield notUtf8(escapedName(entry.notUtf8), 'list');
    } else if (entry.name === '-') {
      if (state.stdinTaken) {
        const reason = "'-' (standard input) can be named only once";
        yield {
          kind: 'unusable',
          path: '-',
          error: new InputFileError('-', reason, { code: 'usage', message: reason }),
        };
      } else {
        state.stdinTaken = true;
        yield { kind: 'stdin' };
      }
    } else if (entry.carriageReturn) {
      yield* expandCarriageReturn(entry.name, state);
    } else yield* expandPath(entry.name, state);
  }
  if (names === 0 && paths.length === 0) {
    // Nothing has run yet: an empty list is the same usage error as no argument at all, said as what it is.
    const list = state.options.filesFrom === '-' ? 'on standard input' : `'${state.options.filesFrom ?? ''}'`;
    throw new UsageError(`no input given: the --files-from list ${list} holds no path`, {
      hint: `give the list one path per ${state.options.nul ? 'NUL-terminated entry' : 'line'}, or name files`,
    });
  }
}

/**
 * Refuses an option that would do nothing as given: -0 without --files-from,
 * --include/--exclude without --recursive (they filter the files a walk
 * finds, nothing else). Ignored, such an option would let a run go on,
 * and a register pay, for documents the user meant to leave out.
 */
export function checkInputOptions(options: InputOptions): void {
  if (options.nul && options.filesFrom === undefined) throw new UsageError('-0 goes with --files-from');
  const filters = [
    ...((options.include?.length ?? 0) > 0 ? ['--include'] : []),
    ...((options.exclude?.length ?? 0) > 0 ? ['--exclude'] : []),
  ];
  // A glob is matched against a file's path below the folder walked (`sub/x.txt`): the folder and
  // anchored forms of .gitignore (`sub/`, `/x.txt`) can match no file, and would let a run go on, and a
  // register pay, for what the user meant to leave out.
  for (const [flag, globs] of [
    ['--include', options.include ?? []],
    ['--exclude', options.exclude ?? []],
  ] as const) {
    for (const glob of globs) {
      if (glob.endsWith('/')) {
        const folder = glob.replace(/^\/+/, '');
        const anyDepth = folder.startsWith('**/') ? '' : ` (or '**/${folder}**' at any depth)`;
        throw new UsageError(`${flag} '${glob}' names a folder, and globs match files`, {
          hint: `write '${folder}**' for the files in it${anyDepth}`,
        });
      }
      if (glob.startsWith('/')) {
        throw new UsageError(`${flag} '${glob}' starts with '/', and globs match paths below the folder walked`, {
          hint: `write '${glob.replace(/^\/+/, '')}'`,
        });
      }
    }
  }
  if (filters.length > 0 && !options.recursive) {
    throw new UsageError(
      `${filters.join(' and ')} ${filters.length === 1 ? 'goes' : 'go'} with --recursive: ${filters.length === 1 ? 'it filters' : 'they filter'} only the files found in folders walked`,
      {
        hint: 'add -r to walk folders, or name only the documents wanted, on the command line or in the --files-from list',
      },
    );
  }
}

/**
 * Checks the arguments as a whole and returns the documents to come; see the
 * module comment. `onSkipped` hears of each path passed over while walking,
 * as it is met.
 */
export async function expandInputs(
  paths: string[],
  options: InputOptions,
  stdin: Readable,
  onSkipped: (skipped: SkippedPath) => void = () => {},
): Promise<Expansion> {
  const stdinNamed = paths.includes('-');
  if (options.filesFrom === '-' && stdinNamed) throw new UsageError("'-' cannot be both a document and --files-from");
  checkInputOptions(options);
  if (paths.filter((p) => p === '-').length > 1) throw new UsageError("'-' (standard input) can be named only once");
  if (paths.length === 0 && options.filesFrom === undefined) {
    throw new UsageError('no input given', { hint: "name files, '-' for standard input, or use --files-from" });
  }
  const list = options.filesFrom === undefined ? undefined : await openList(options.filesFrom, stdin);
  let single = paths.length === 1 && list === undefined;
  if (single && options.recursive && paths[0] !== '-') {
    // One directory walked gives a batch, whatever it holds; stat errors are the item's own, later.
    single = !(await stat(paths[0]!)
      .then((s) => s.isDirectory())
      .catch(() => false));
  }
  const state: ExpandState = {
    options,
    filter: matcher(options.include ?? [], options.exclude ?? []),
    onSkipped,
    store: options.storeDir === undefined ? undefined : new StoreFolder(options.storeDir, options.storeEntries),
    inStore: 0,
    stdinTaken: stdinNamed || options.filesFrom === '-',
  };
  return { items: expand(paths, list, state), single, stdinNamed };
}

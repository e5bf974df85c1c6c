/**
 * Paths as the user spelt them. path.join, resolve and normalize work a
 * `..` out as text, but the system follows a link before it: with `link`
 * pointing at `sub/deep`, `link/../R` is `sub/R`, while join and resolve
 * make it `./R`, another folder (and so does Node's fs.realpathSync, which
 * resolves first: only `realpathSync.native` asks the system). A folder
 * given by the user is therefore never combined with a name through them
 * (`entryPath`), compared only through the system's realpath or as spelt
 * (`sameSpelling`), and one with a `..` after
 * a folder's name is refused where notarize would write or read a whole
 * folder by name (`parentAfterName`: the store, --receipt-dir).
 */
import { lstatSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { UsageError } from './errors.js';

const SEPARATORS = sep === '\\' ? /[/\\]/ : /\//;
const TRAILING_SEPARATORS = sep === '\\' ? /[/\\]+$/ : /\/+$/;

/** The path of `dir`'s entry `name`: `dir` as given, its trailing separators dropped, one separator, the name. */
export function entryPath(dir: string, name: string): string {
  return `${dir.replace(TRAILING_SEPARATORS, '')}${sep}${name}`;
}

/** Whether `path` has a `..` after a folder's name (`a/../b`), where its text and the system may name two folders. */
export function parentAfterName(path: string): boolean {
  let named = false;
  for (const part of path.split(SEPARATORS)) {
    if (part === '..' && named) return true;
    if (part !== '' && part !== '.' && part !== '..') named = true;
  }
  return false;
}

/**
 * `path` made absolute (from the working directory) without `.` or repeated
 * separators, a `..` kept: two paths of one spelling are one file
 * (`x.txt`, `./x.txt`, `/work/x.txt` run in /work).
 */
export function sameSpelling(path: string, cwd?: string): string {
  const parts = (isAbsolute(path) ? path : `${cwd ?? workingDir()}${sep}${path}`).split(SEPARATORS);
  return parts.filter((part, i) => (part !== '' || i === 0) && part !== '.').join('/');
}

/**
 * The working directory, asked only for a relative path: a CI step may run
 * in a folder an earlier step removed, where absolute paths still work but
 * the system has no working directory to give (uv_cwd ENOENT). UsageError
 * then (exit 2: asked before anything is sent).
 */
export function workingDir(): string {
  try {
    return process.cwd();
  } catch (error) {
    throw new UsageError('the current directory no longer exists (removed after it was entered)', {
      code: 'no_working_directory',
      hint: '`cd` into an existing folder, or name every path in full',
      cause: error,
    });
  }
}

/** `path` made absolute from the working directory (workingDir), as path.resolve does. */
function absolute(path: string): string {
  return isAbsolute(path) ? resolve(path) : resolve(workingDir(), path);
}

/** The system's realpath of `path`, or undefined when it cannot be had (not there). */
export function systemRealPath(path: string): string | undefined {
  try {
    return realpathSync.native(path);
  } catch {
    return undefined;
  }
}

/**
 * Whether anything (a link included) is at `path`; false when it cannot be
 * looked up either (a folder above it refuses the search, a name the system
 * refuses: whoever opens it says why).
 */
export function anythingAt(path: string): boolean {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return false;
  }
}

/**
 * Paths with their folder's real path, the system's, asked once per folder:
 * one file whether its folder is reached through a link or not (the file
 * itself is not followed). A folder that is not there is taken as
 * `missing` makes it (as named, by default).
 */
export class RealFolders {
  readonly #byFolder = new Map<string, string>();
  readonly #missing: (folder: string) => string;

  constructor(missing: (folder: string) => string = (folder) => folder) {
    this.#missing = missing;
  }

  of(path: string): string {
    // The folder as given: resolve() would work a '..' out as text.
    const folder = dirname(path);
    let real = this.#byFolder.get(folder);
    if (real === undefined) this.#byFolder.set(folder, (real = systemRealPath(folder) ?? this.#missing(folder)));
    return join(real, basename(path));
  }
}

/**
 * Whether a path is inside the folder `dir` (--receipt-dir, whose files are
 * receipts, never documents), by where both really are: a --receipt-dir
 * named through a symbolic link (`link/R`, `link` -> `docs`) is the same
 * folder as `docs/R` met walking `docs`. A path's folder is resolved once.
 */
export function insideDir(dir: string): (path: string) => boolean {
  // Not there (yet): as named, made absolute.
  const real = systemRealPath(dir) ?? absolute(dir);
  // The root folder ends with its separator already: '/' + sep is '//', which no path starts with.
  const root = real.endsWith(sep) ? real : real + sep;
  const folders = new RealFolders(absolute);
  return (path) => folders.of(path).startsWith(root);
}

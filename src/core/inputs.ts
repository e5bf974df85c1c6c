/**
 * Turning what the user named (paths, directories with --recursive, a
 * --files-from list, '-') into the list of documents to process, the same
 * way for `register`, `hash` and `verify`. Problems with the arguments
 * themselves (a missing path, a directory without --recursive) are usage
 * errors raised before anything is hashed or sent; symbolic links and
 * special files met while walking a directory are reported, not followed.
 */
import { lstat, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import picomatch from 'picomatch';
import { UsageError } from '../errors.js';
import { readTextInput } from './read-input.js';

export interface InputOptions {
  recursive?: boolean;
  include?: string[];
  exclude?: string[];
  /** A file listing paths, or '-' for standard input. */
  filesFrom?: string;
  /** The --files-from list is NUL-separated (-0). */
  nul?: boolean;
}

/** One document to process: a file on disk, or standard input. */
export type InputItem =
  | {
      kind: 'file';
      path: string;
      size: number;
      lastModified: number;
      /** For a file found under a directory: its path below it, with '/' (e.g. `linux/app.tar.gz`). */
      relative?: string;
    }
  | { kind: 'stdin' };

function fileItem(path: string, info: { size: number; mtimeMs: number }, relative?: string): InputItem {
  return {
    kind: 'file',
    path,
    size: info.size,
    lastModified: Math.floor(info.mtimeMs),
    ...(relative ? { relative } : {}),
  };
}

/** A path passed over while walking a directory, and why. */
export interface SkippedPath {
  path: string;
  reason: string;
}

export interface Expansion {
  items: InputItem[];
  skipped: SkippedPath[];
  /** True when the user named exactly one file (or '-'): output stays in the single-item form. */
  single: boolean;
}

/** Lists of paths beyond this are a wrong argument (e.g. /dev/zero), not a list. */
const MAX_LIST_BYTES = 256 * 1024 * 1024;

async function readList(source: string, nul: boolean, stdin: Readable): Promise<string[]> {
  const content = await readTextInput(source, stdin, MAX_LIST_BYTES, 'the --files-from list');
  const names = nul ? content.split('\0') : content.split(/\r?\n/);
  return names.filter((name) => name !== '');
}

/**
 * The filter of --include/--exclude over paths relative to the walked
 * directory: a glob with a slash matches that whole relative path, one
 * without matches the file name (as in .gitignore).
 */
function matcher(include: string[], exclude: string[]): (relativePath: string) => boolean {
  const compile = (globs: string[]) => {
    const withSlash = globs.filter((g) => g.includes('/'));
    const nameOnly = globs.filter((g) => !g.includes('/'));
    const byPath = withSlash.length > 0 ? picomatch(withSlash, { dot: true }) : () => false;
    const byName = nameOnly.length > 0 ? picomatch(nameOnly, { dot: true }) : () => false;
    return (path: string) => byPath(path) || byName(path.slice(path.lastIndexOf('/') + 1));
  };
  const included = include.length > 0 ? compile(include) : () => true;
  const excluded = exclude.length > 0 ? compile(exclude) : () => false;
  return (path) => included(path) && !excluded(path);
}

async function walk(
  dir: string,
  below: string,
  accept: (relativePath: string) => boolean,
  out: Expansion,
): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const path = join(dir, entry.name);
    const relativePath = below ? `${below}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      await walk(path, relativePath, accept, out);
    } else if (entry.isSymbolicLink()) {
      out.skipped.push({ path, reason: 'symbolic link (not followed)' });
    } else if (!entry.isFile()) {
      out.skipped.push({ path, reason: 'not a regular file' });
    } else if (accept(relativePath)) {
      out.items.push(fileItem(path, await lstat(path), relativePath));
    }
  }
}

/**
 * Expands the named paths into documents; see the module comment. Paths
 * named directly are followed even when they are symbolic links.
 */
export async function expandInputs(paths: string[], options: InputOptions, stdin: Readable): Promise<Expansion> {
  const named = [...paths];
  if (options.filesFrom !== undefined) {
    if (options.filesFrom === '-' && named.includes('-'))
      throw new UsageError("'-' cannot be both a document and --files-from");
    named.push(...(await readList(options.filesFrom, options.nul ?? false, stdin)));
  } else if (options.nul) {
    throw new UsageError('-0 goes with --files-from');
  }
  if (named.filter((p) => p === '-').length > 1) throw new UsageError("'-' (standard input) can be named only once");
  const out: Expansion = { items: [], skipped: [], single: false };
  let sawDirectory = false;
  for (const path of named) {
    if (path === '-') {
      out.items.push({ kind: 'stdin' });
      continue;
    }
    let info;
    try {
      info = await stat(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new UsageError(
        `cannot read '${path}': ${code === 'ENOENT' ? 'no such file or directory' : (error as Error).message}`,
        {
          code: 'unreadable_file',
          cause: error,
        },
      );
    }
    if (info.isDirectory()) {
      if (!options.recursive) {
        throw new UsageError(`'${path}' is a directory`, {
          code: 'is_directory',
          hint: 'add --recursive to process the files in it',
        });
      }
      sawDirectory = true;
      await walk(path, '', matcher(options.include ?? [], options.exclude ?? []), out);
    } else if (info.isFile()) {
      out.items.push(fileItem(path, info));
    } else {
      throw new UsageError(`'${path}' is not a regular file`, { code: 'not_a_file' });
    }
  }
  if (named.length === 0) {
    throw new UsageError('no input given', { hint: "name files, '-' for standard input, or use --files-from" });
  }
  out.single = named.length === 1 && options.filesFrom === undefined && !sawDirectory;
  return out;
}

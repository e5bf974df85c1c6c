/**
 * Turning what the user named (paths, directories with --recursive, a
 * --files-from list, '-') into the list of documents to process, the same
 * way for `register`, `hash` and `verify`. Problems with the arguments
 * themselves (a missing path, a directory without --recursive) are usage
 * errors raised before anything is hashed or sent; symbolic links and
 * special files met while walking a directory are reported, not followed.
 */
import { lstat, readdir, readFile, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import picomatch from 'picomatch';
import { UsageError } from '../errors.js';

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
export type InputItem = { kind: 'file'; path: string; size: number; lastModified: number } | { kind: 'stdin' };

function fileItem(path: string, info: { size: number; mtimeMs: number }): InputItem {
  return { kind: 'file', path, size: info.size, lastModified: Math.floor(info.mtimeMs) };
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

async function readList(source: string, nul: boolean, stdin: Readable): Promise<string[]> {
  let content: string;
  try {
    content = source === '-' ? await text(stdin) : await readFile(source, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read --files-from '${source}': ${(error as Error).message}`, { cause: error });
  }
  const names = nul ? content.split('\0') : content.split(/\r?\n/);
  return names.filter((name) => name !== '');
}

function matcher(include: string[], exclude: string[]): (relativePath: string) => boolean {
  const options = { dot: true, basename: true } as const;
  const included = include.length > 0 ? picomatch(include, options) : () => true;
  const excluded = exclude.length > 0 ? picomatch(exclude, options) : () => false;
  return (path) => included(path) && !excluded(path);
}

async function walk(root: string, accept: (relativePath: string) => boolean, out: Expansion): Promise<void> {
  const entries = await readdir(root, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const path = join(root, entry.name);
    if (entry.isDirectory()) {
      await walk(path, accept, out);
    } else if (entry.isSymbolicLink()) {
      out.skipped.push({ path, reason: 'symbolic link (not followed)' });
    } else if (!entry.isFile()) {
      out.skipped.push({ path, reason: 'not a regular file' });
    } else if (accept(path)) {
      out.items.push(fileItem(path, await lstat(path)));
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
      const accept = matcher(options.include ?? [], options.exclude ?? []);
      await walk(path, (file) => accept(relative(path, file).split(sep).join('/')), out);
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

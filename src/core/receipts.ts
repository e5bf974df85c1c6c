/**
 * Receipts for CI artifacts (--receipt-dir): `<name>.notarization.json`
 * holding the record exactly as the service sent it.
 *
 * Everything that can be checked before a registration is sent is checked
 * then (`planReceipts`, `checkBeforeSending`), so that a receipt problem
 * never shows up after a paid completion: the directory is a writable
 * directory, names do not collide within the run and fit the filesystem, and
 * an existing receipt with other content is refused. A write that still fails
 * after the completion (a full disk) is exit 1: something was sent.
 *
 * Names: a file named on the command line gets its file name; a file found
 * under a directory keeps its place below it (`linux/app.tar.gz`); standard
 * input and --hash get the digest. When documents of one run would get the
 * same name, each keeps as many of its parent folders as tell them apart
 * (`register ca/x.txt cb/x.txt` gives `ca/x.txt` and `cb/x.txt`).
 */
import { lstat, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import { EXIT, NotarizeError, UsageError } from '../errors.js';
import { makeDirs } from '../mkdirs.js';
import { uniqueSuffix } from '../store/files.js';

export const RECEIPT_SUFFIX = '.notarization.json';

/** Longest file name most filesystems take (NAME_MAX), and longest path (PATH_MAX less the NUL). */
const MAX_NAME_BYTES = 255;
const MAX_PATH_BYTES = 4095;

/** A document as the receipt namer sees it. */
export interface ReceiptSubject {
  /** The path as given or found; undefined for standard input and --hash. */
  path?: string;
  /** For a file found under a directory: its path below it, with '/'. */
  relative?: string;
}

/** The receipt file of each document of a run (undefined: named after its digest, once known). */
export interface ReceiptPlan {
  dir: string;
  names: (string | undefined)[];
}

/** The folders and name of a path as given, without `.`, `..` or empty segments. */
function segments(path: string): string[] {
  return normalize(path)
    .split(/[/\\]+/)
    .filter((part) => part !== '' && part !== '.' && part !== '..');
}

/**
 * The names of documents whose first choice collided: each keeps as many of
 * its parent folders as it takes to tell them all apart (`ca/x.txt`,
 * `cb/x.txt`), the same number for the whole group.
 */
function distinguish(paths: readonly string[]): Map<string, string> {
  const split = new Map(paths.map((path) => [path, segments(path)]));
  const longest = Math.max(...[...split.values()].map((parts) => parts.length));
  let names = new Map<string, string>();
  for (let keep = 2; keep <= longest; keep++) {
    names = new Map([...split].map(([path, parts]) => [path, parts.slice(-keep).join('/')]));
    if (new Set(names.values()).size === paths.length) break;
  }
  return names;
}

/** Receipt names for the documents of one run; see the module comment. Throws UsageError if two still collide. */
export function receiptNames(subjects: readonly ReceiptSubject[]): (string | undefined)[] {
  const first = subjects.map((s) => (s.path === undefined ? undefined : (s.relative ?? segments(s.path).pop()!)));
  const pathsByName = new Map<string, Set<string>>();
  subjects.forEach((s, i) => {
    const name = first[i];
    if (name !== undefined) pathsByName.set(name, (pathsByName.get(name) ?? new Set()).add(s.path!));
  });
  const renamed = new Map<string, string>();
  for (const paths of pathsByName.values()) {
    if (paths.size > 1) for (const [path, name] of distinguish([...paths])) renamed.set(path, name);
  }
  const names = first.map((name, i) => (name === undefined ? undefined : (renamed.get(subjects[i]!.path!) ?? name)));
  const owner = new Map<string, string>();
  names.forEach((name, i) => {
    if (name === undefined) return;
    const path = subjects[i]!.path!;
    const other = owner.get(name);
    if (other !== undefined && other !== path) {
      throw new UsageError(`'${other}' and '${path}' would both get the receipt ${name}${RECEIPT_SUFFIX}`, {
        code: 'receipt_collision',
        hint: 'register them in separate runs, or with separate --receipt-dir directories',
      });
    }
    owner.set(name, path);
  });
  return names;
}

/** Throws UsageError when `name`'s receipt cannot exist on a usual filesystem. */
function checkFits(dir: string, name: string): void {
  const path = join(dir, `${name}${RECEIPT_SUFFIX}`);
  const longest = Math.max(...path.split('/').map((part) => Buffer.byteLength(part)));
  if (longest > MAX_NAME_BYTES || Buffer.byteLength(path) > MAX_PATH_BYTES) {
    throw new UsageError(`the receipt name for '${name}' is too long for the filesystem`, {
      code: 'receipt_name_too_long',
      hint: `file names may have at most ${MAX_NAME_BYTES} bytes: rename the document or register it without --receipt-dir`,
    });
  }
}

/**
 * Creates the receipt directory if needed and proves it is a directory this
 * process can write in (by creating and removing a file there), then names
 * every document's receipt. Throws UsageError (nothing was sent yet).
 */
export async function planReceipts(dir: string, subjects: readonly ReceiptSubject[]): Promise<ReceiptPlan> {
  const notUsable = (why: string, cause?: unknown) =>
    new UsageError(`--receipt-dir ${dir} ${why}`, {
      code: 'receipt_dir',
      hint: 'name a directory you can write in (it is created if missing)',
      ...(cause === undefined ? {} : { cause }),
    });
  try {
    // Not mkdir's recursive mode: under /proc it never returns (see mkdirs.ts).
    makeDirs(dir, 0o777);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw notUsable(
      code === 'EEXIST' || code === 'ENOTDIR' ? 'is not a directory' : `cannot be created (${code})`,
      error,
    );
  }
  if (!(await stat(dir)).isDirectory()) throw notUsable('is not a directory');
  const probe = join(dir, `.notarize-probe-${uniqueSuffix()}`);
  try {
    await writeFile(probe, '', { flag: 'wx' });
  } catch (error) {
    throw notUsable(`is not writable (${(error as NodeJS.ErrnoException).code})`, error);
  }
  await rm(probe, { force: true });
  const names = receiptNames(subjects);
  for (const name of names) if (name !== undefined) checkFits(dir, name);
  return { dir, names };
}

/** The receipt path of document `index`, whose digest is `hash`. */
export function receiptPath(plan: ReceiptPlan, index: number, hash: string): string {
  return join(plan.dir, `${plan.names[index] ?? hash}${RECEIPT_SUFFIX}`);
}

function contentOf(recordJson: string): string {
  return recordJson.endsWith('\n') ? recordJson : `${recordJson}\n`;
}

/**
 * Before document `index` is sent: an existing receipt is refused (UsageError,
 * nothing sent) unless it is exactly what would be written (`recordJson`, the
 * ledger's record when there is one) or `overwrite` allows replacing it.
 */
export async function checkBeforeSending(
  plan: ReceiptPlan,
  index: number,
  hash: string,
  recordJson: string | undefined,
  overwrite: boolean,
): Promise<void> {
  const path = receiptPath(plan, index, hash);
  checkFits(plan.dir, plan.names[index] ?? hash);
  let info;
  try {
    info = await lstat(path);
  } catch {
    return; // None yet: the usual case.
  }
  if (!info.isFile()) {
    throw new UsageError(`receipt ${path} exists and is not a regular file`, {
      code: 'receipt_exists',
      hint: 'remove it and run again, or choose another --receipt-dir',
    });
  }
  if (overwrite) return;
  const existing = await readFile(path, 'utf8').catch(() => undefined);
  if (recordJson !== undefined && existing === contentOf(recordJson)) return;
  throw new UsageError(`receipt ${path} already exists with other content`, {
    code: 'receipt_exists',
    hint: 'remove it and run again, or choose another --receipt-dir (--force overwrites it, but also registers the document again)',
  });
}

/**
 * Writes the receipt of document `index` after its registration ended and
 * returns its path. Identical content already there is left as is. A failure
 * here comes after something was sent: exit 1, never 2.
 */
export async function writeReceipt(
  plan: ReceiptPlan,
  index: number,
  hash: string,
  recordJson: string,
  overwrite: boolean,
): Promise<string> {
  const path = receiptPath(plan, index, hash);
  const content = contentOf(recordJson);
  const failed = (message: string, cause: unknown) =>
    new NotarizeError('receipt_write', EXIT.refused, message, {
      hint: `the registration itself is done and in the ledger; \`notarize show ${hash}\` prints the record, and running the same command again writes the receipt`,
      cause,
    });
  try {
    makeDirs(dirname(path), 0o777);
    await writeFile(path, content, { flag: overwrite ? 'w' : 'wx' });
    return path;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const existing = code === 'EEXIST' ? await readFile(path, 'utf8').catch(() => undefined) : undefined;
    if (existing === content) return path;
    // EEXIST from the write itself (a receipt that appeared since the check), not from mkdir.
    if (code === 'EEXIST' && existing !== undefined) {
      throw failed(`receipt ${path} appeared with other content while ${hash} was being registered`, error);
    }
    throw failed(`the receipt ${path} could not be written: ${(error as Error).message}`, error);
  }
}

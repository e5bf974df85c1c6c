/**
 * Receipt files for CI artifacts (--receipt-dir): `<name>.notarization.json`,
 * a v1 receipt (receipt-format.ts) that travels with the artifact.
 *
 * Everything that can be checked before a registration is sent is checked
 * then (`planReceipts`, `checkBeforeSending`), so that a receipt problem
 * never shows up after a paid completion: the directory is a writable
 * directory, names do not collide within the run and fit the filesystem, and
 * an existing file that is not a receipt of the same digest is refused (one
 * of the same digest and registration, such as a receipt written before v1,
 * is replaced; one of another registration is left: writeReceipt). A write that still fails
 * after the completion (a full disk) is exit 1: something was sent.
 *
 * Names: a file named on the command line gets its file name; a file found
 * under a directory keeps its place below it (`linux/app.tar.gz`); standard
 * input and --hash get the digest. When documents of one run would get the
 * same name, each keeps as many of its parent folders as tell them apart
 * (`register ca/x.txt cb/x.txt` gives `ca/x.txt` and `cb/x.txt`).
 *
 * Links: the receipt directory itself may be anything the user names (a
 * link to their output folder included), but nothing below it is reached
 * through a link. A link where a receipt or one of its folders would be
 * (`R/doc.notarization.json -> /etc/x`, `R/linux -> /elsewhere`) is refused
 * before anything is sent, even with --force: --force replaces receipts, and
 * a link is not one. Folders are created one at a time and each is checked;
 * the receipt itself is written to a new file (O_EXCL|O_NOFOLLOW) that is
 * then renamed (--force) or hard-linked (no --force) to its name, so a link
 * that appears after the check is replaced or refused, never written through.
 * Someone able to write in the receipt directory could still swap a checked
 * folder for a link in the microseconds before the file is created: Node has
 * no openat(); keep the receipt directory your own.
 */
import { constants, rmSync, type Stats } from 'node:fs';
import { access, lstat, mkdir, open, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, normalize, sep } from 'node:path';
import { EXIT, NotarizeError, UsageError } from '../errors.js';
import { isFdShortage, readOr, refusalAfterSending } from '../fd-shortage.js';
import { cleanUpOnInterrupt } from '../interrupt.js';
import { makeDirs } from '../mkdirs.js';
import { parentAfterName, sameSpelling } from '../path-spelling.js';
import { DirFlushes, myUid, TEMPORARY_NAME_EXTRA_BYTES, uniqueSuffix, writeFileAtomic } from '../store/files.js';
import { writeErrorReason } from './hash.js';
import { decodeJsonText } from './read-input.js';
import {
  isCompletedRecord,
  readReceipt,
  redactedReceipt,
  redactedReceiptWarning,
  receiptText,
  type ConsistentReceipt,
  type InclusionProof,
} from './receipt-format.js';

export const RECEIPT_SUFFIX = '.notarization.json';

/**
 * The empty file planReceipts makes, and removes at once, to learn that
 * --receipt-dir takes files. A run killed in between (SIGKILL) leaves it:
 * `verify` passes over such a file when it is empty (isWriteProbe).
 */
const WRITE_PROBE_PREFIX = '.notarize-probe-';

/** Whether `name` is that of planReceipts's probe (its prefix, then store/files.ts's uniqueSuffix). */
export function isWriteProbe(name: string): boolean {
  return (
    name.startsWith(WRITE_PROBE_PREFIX) && /^\d+\.[0-9a-f]{8}\.[0-9a-z]+$/.test(name.slice(WRITE_PROBE_PREFIX.length))
  );
}

/** Longest file name most filesystems take (NAME_MAX), and longest path (PATH_MAX less the NUL). */
const MAX_NAME_BYTES = 255;
const MAX_PATH_BYTES = 4095;
/**
 * The longest receipt file name: a receipt is written to a temporary file
 * named after it (writeFileAtomic: `.<name>.<pid>.<tag>.<counter>.tmp`),
 * which must fit NAME_MAX too, or the write fails after the registration
 * was paid for. TEMPORARY_NAME_EXTRA_BYTES is the most that name adds.
 */
const MAX_RECEIPT_NAME_BYTES = MAX_NAME_BYTES - TEMPORARY_NAME_EXTRA_BYTES;

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
  /** The run's receipts share their directories' flushes (a batch writes many into one). */
  flushes: DirFlushes;
}

/**
 * The folders and name of a path as given, without `.`, `..` or empty
 * segments. Split at this system's separator only: on Linux and macOS a
 * backslash is part of a file's name (`back\slash.txt` is one file), while
 * on Windows normalize() has turned every `/` into `\`.
 */
export function pathSegments(path: string): string[] {
  return normalize(path)
    .split(sep)
    .filter((part) => part !== '' && part !== '.' && part !== '..');
}

/**
 * The names of documents whose first choice collided: each keeps as many of
 * its parent folders as it takes to tell them all apart (`ca/x.txt`,
 * `cb/x.txt`), the same number for the whole group.
 */
function distinguish(paths: readonly string[]): Map<string, string> {
  const split = new Map(paths.map((path) => [path, pathSegments(path)]));
  // A loop, not a spread: a group may be of 200,000 index.html (past V8's argument limit).
  let longest = 0;
  for (const parts of split.values()) longest = Math.max(longest, parts.length);
  let names = new Map<string, string>();
  for (let keep = 2; keep <= longest; keep++) {
    names = new Map([...split].map(([path, parts]) => [path, parts.slice(-keep).join('/')]));
    if (new Set(names.values()).size === paths.length) break;
  }
  return names;
}

/** Receipt names for the documents of one run; see the module comment. Throws UsageError if two still collide. */
export function receiptNames(subjects: readonly ReceiptSubject[]): (string | undefined)[] {
  const first = subjects.map((s) => (s.path === undefined ? undefined : (s.relative ?? pathSegments(s.path).pop()!)));
  // The same file however it is spelt (`a.txt`, `./a.txt`, `docs//a.txt`): one path, one receipt.
  const same = subjects.map((s) => (s.path === undefined ? undefined : sameSpelling(s.path)));
  // By first name: each file (its spelling) with a path as given, from which folders tell them apart.
  const pathsByName = new Map<string, Map<string, string>>();
  first.forEach((name, i) => {
    if (name === undefined) return;
    const paths = pathsByName.get(name) ?? new Map<string, string>();
    if (!paths.has(same[i]!)) paths.set(same[i]!, subjects[i]!.path!);
    pathsByName.set(name, paths);
  });
  const renamed = new Map<string, string>();
  for (const paths of pathsByName.values()) {
    if (paths.size <= 1) continue;
    const names = distinguish([...paths.values()]);
    for (const [spelling, given] of paths) renamed.set(spelling, names.get(given)!);
  }
  const names = first.map((name, i) => (name === undefined ? undefined : (renamed.get(same[i]!) ?? name)));
  /** Each receipt name's path: as given (for the message) and as compared. */
  const owner = new Map<string, { given: string; same: string }>();
  names.forEach((name, i) => {
    if (name === undefined) return;
    const path = subjects[i]!.path!;
    const other = owner.get(name);
    if (other !== undefined && other.same !== same[i]) {
      throw new UsageError(`'${other.given}' and '${path}' would both get the receipt ${name}${RECEIPT_SUFFIX}`, {
        code: 'receipt_collision',
        hint: 'register them in separate runs, or with separate --receipt-dir directories',
      });
    }
    owner.set(name, { given: path, same: same[i]! });
  });
  return names;
}

/** The folders between the receipt directory and `name`'s receipt: `a/b/x` gives `dir/a`, `dir/a/b`. */
function foldersOf(dir: string, name: string): string[] {
  const parts = name.split('/').slice(0, -1);
  return parts.map((_, i) => join(dir, ...parts.slice(0, i + 1)));
}

function linkRefused(path: string, what: string): UsageError {
  return new UsageError(`${what} ${path} is a symbolic link; notarize never writes a receipt through a link`, {
    code: 'receipt_link',
    hint: 'remove the link and run again, or choose another --receipt-dir; --force does not replace links',
  });
}

/** Throws UsageError when a folder of `name`'s receipt exists as a link or as something other than a folder. */
async function checkFolders(dir: string, name: string): Promise<void> {
  let deepest: string | undefined;
  for (const folder of foldersOf(dir, name)) {
    let info;
    try {
      info = await lstat(folder);
    } catch {
      break; // Missing: created when the receipt is written, and nothing below it can exist yet.
    }
    if (info.isSymbolicLink()) throw linkRefused(folder, 'receipt folder');
    if (!info.isDirectory()) {
      throw new UsageError(`receipt folder ${folder} exists and is not a directory`, {
        code: 'receipt_exists',
        hint: 'remove it and run again, or choose another --receipt-dir',
      });
    }
    deepest = folder;
  }
  // The receipt (or the next folder) is made in the deepest one there: planReceipts proved only the
  // top folder writable, and a subfolder left by another user (a root build step) failed after paying.
  if (deepest === undefined) return;
  try {
    await access(deepest, constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new UsageError(`receipt folder ${deepest} is not writable: ${writeErrorReason(error)}`, {
      code: 'receipt_dir',
      hint: 'give this user write access to it, or choose another --receipt-dir',
      cause: error,
    });
  }
}

/**
 * Creates the folders of `name`'s receipt one at a time, none through a
 * link: an existing one must be a real directory (see the module comment).
 */
async function makeFolders(dir: string, name: string): Promise<void> {
  for (const folder of foldersOf(dir, name)) {
    try {
      await mkdir(folder);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const info = await lstat(folder);
      if (info.isSymbolicLink()) throw linkRefused(folder, 'receipt folder');
      if (!info.isDirectory()) throw new Error(`${folder} exists and is not a directory`);
    }
  }
}

/**
 * The content of an existing receipt, read without following a link;
 * undefined if unreadable (a shortage of descriptors waited out: readOr).
 */
function readNoFollow(path: string): Promise<string | undefined> {
  return readOr(
    async () => {
      const handle = await open(path, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
      try {
        return (await handle.stat()).isFile() ? decodeJsonText(await handle.readFile()) : undefined;
      } finally {
        await handle.close();
      }
    },
    () => undefined,
  );
}

/** Throws UsageError when `name`'s receipt cannot exist on a usual filesystem. */
function checkFits(dir: string, name: string): void {
  const path = join(dir, `${name}${RECEIPT_SUFFIX}`);
  const parts = path.split('/');
  const folders = parts.slice(0, -1).map((part) => Buffer.byteLength(part));
  const fileName = Buffer.byteLength(parts.at(-1)!);
  if (
    Math.max(0, ...folders) > MAX_NAME_BYTES ||
    fileName > MAX_RECEIPT_NAME_BYTES ||
    Buffer.byteLength(path) + TEMPORARY_NAME_EXTRA_BYTES > MAX_PATH_BYTES
  ) {
    throw new UsageError(`the receipt name for '${name}' is too long for the filesystem`, {
      code: 'receipt_name_too_long',
      hint:
        `a receipt's file name may have at most ${MAX_RECEIPT_NAME_BYTES} bytes (the ${MAX_NAME_BYTES} of a file name, ` +
        `less what its temporary name adds while it is written): rename the document or register it without --receipt-dir`,
    });
  }
}

/**
 * Why a folder spelt `a/../R` is refused as --receipt-dir (path-spelling.ts):
 * its receipts would be written, and read, in another folder than the one
 * the system reads under that name.
 */
export const PARENT_AFTER_NAME =
  "is spelt with '..' after a folder's name, which after a link names another folder than it reads: give it without (its real path)";

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
  if (parentAfterName(dir)) throw notUsable(PARENT_AFTER_NAME);
  try {
    // Not mkdir's recursive mode: under /proc it never returns (see mkdirs.ts).
    makeDirs(dir, 0o777);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw notUsable(
      code === 'EEXIST' || code === 'ENOTDIR' ? 'is not a directory' : `cannot be created: ${writeErrorReason(error)}`,
      error,
    );
  }
  if (!(await stat(dir)).isDirectory()) throw notUsable('is not a directory');
  const probe = join(dir, `${WRITE_PROBE_PREFIX}${uniqueSuffix()}`);
  // A signal in between removes it too: an empty file left in the folder is met by every `verify -r` of it.
  const forget = cleanUpOnInterrupt(() => rmSync(probe, { force: true }));
  try {
    try {
      await writeFile(probe, '', { flag: 'wx' });
    } catch (error) {
      throw notUsable(`is not writable: ${writeErrorReason(error)}`, error);
    }
    await rm(probe, { force: true });
  } finally {
    forget();
  }
  const names = receiptNames(subjects);
  for (const name of names) {
    if (name === undefined) continue;
    checkFits(dir, name);
    await checkFolders(dir, name);
  }
  return { dir, names, flushes: new DirFlushes() };
}

/** The receipt path of document `index`, whose digest is `hash`. */
export function receiptPath(plan: ReceiptPlan, index: number, hash: string): string {
  return join(plan.dir, `${plan.names[index] ?? hash}${RECEIPT_SUFFIX}`);
}

/**
 * What --force does to a file at a receipt's place: the document is
 * registered again, and a receipt can only be written from a record. A
 * service that already has the document answers 409 with none, and a store
 * with no record of it (a cold runner) has none either (r91: the hint said
 * --force overwrites it, and the file stayed).
 */
const FORCE_OVER_RECEIPT =
  '--force registers the document again and writes its receipt over it, unless the service already has it and this store has no record of it: then nothing is written';

/**
 * Before document `index` is sent: an existing receipt is refused (UsageError,
 * nothing sent) unless it is a receipt of this very digest from the service
 * at `baseUrl` (which the new one replaces; another service's is evidence
 * of another registration) or `overwrite` allows replacing it. A store with no record of the
 * hash (a cold CI runner) cannot write a new one if the service answers 409:
 * the receipt already there then stays the document's evidence. A link at
 * the receipt or one of its folders is refused whatever `overwrite`.
 */
export async function checkBeforeSending(
  plan: ReceiptPlan,
  index: number,
  hash: string,
  overwrite: boolean,
  baseUrl: string,
): Promise<void> {
  const path = receiptPath(plan, index, hash);
  const name = plan.names[index] ?? hash;
  // Standard input or --hash, named after its digest: a file of the run named like that digest has
  // the same receipt name. Found only after paying, it failed the run, and every re-run with it.
  if (plan.names[index] === undefined && plan.names.includes(hash)) {
    throw new UsageError(
      `receipt ${path} would belong both to the file named ${hash} and to this document, named after its digest`,
      {
        code: 'receipt_collision',
        hint: 'rename that file, or give this document as a file (its receipt is then named after it)',
      },
    );
  }
  checkFits(plan.dir, name);
  await checkFolders(plan.dir, name);
  let info;
  try {
    info = await lstat(path);
  } catch {
    return; // None yet: the usual case.
  }
  if (info.isSymbolicLink()) throw linkRefused(path, 'receipt');
  if (!info.isFile()) {
    throw new UsageError(`receipt ${path} exists and is not a regular file`, {
      code: 'receipt_exists',
      hint: 'remove it and run again, or choose another --receipt-dir',
    });
  }
  if (overwrite) {
    // --force registers it again and replaces its receipt; without it a receipt of this document is
    // kept as it is (a 409, a ledger's record), so one this user could not replace is no obstacle.
    await checkReplaceable(path, info);
    return;
  }
  const receipt = receiptOf(await readNoFollow(path), hash);
  if (receipt !== undefined) {
    // Of this document, and of this service (or a bare record, which does not say): the new one replaces it.
    if (receipt.baseUrl === undefined || receipt.baseUrl === baseUrl) return;
    throw new UsageError(
      `receipt ${path} is of this document's registration with another service (${receipt.baseUrl}): ` +
        'a new receipt would replace that evidence',
      {
        code: 'receipt_exists',
        hint: `move it aside and keep it (it proves that registration), or choose another --receipt-dir (${FORCE_OVER_RECEIPT})`,
      },
    );
  }
  // Most often the receipt of an earlier build of the artifact (a build that is not reproducible): the
  // only record of bytes that may come back, never to be deleted (r105: "remove it" said so).
  throw new UsageError(`receipt ${path} already exists and is not a receipt of ${hash}`, {
    code: 'receipt_exists',
    hint:
      'the receipt of an earlier build? move it aside and keep it, never delete it: it may be the only record of ' +
      'those bytes (under the --receipt-dir, e.g. earlier-attempts/, register and verify still find it by its digest; ' +
      `docs/ci.md); then run again; or choose another --receipt-dir (${FORCE_OVER_RECEIPT})`,
  });
}

/** The sticky bit of a folder's mode: only a file's owner (or the folder's) may rename or remove it. */
const STICKY = 0o1000;

/**
 * A receipt another user owns, in a sticky folder (as /tmp) that is not
 * this user's either: only they may rename over it, so its replacement
 * would fail (EPERM) after the registration was paid for, and on every
 * re-run. Refused before anything is sent. root may (CAP_FOWNER).
 */
async function checkReplaceable(path: string, file: Stats): Promise<void> {
  const uid = myUid();
  if (uid === undefined || uid === 0 || file.uid === uid) return;
  const folder = await stat(dirname(path));
  if ((folder.mode & STICKY) === 0 || folder.uid === uid) return;
  throw new UsageError(
    `receipt ${path} belongs to another user, in a folder where only a file's owner may replace it (sticky, as /tmp)`,
    { code: 'receipt_exists', hint: 'have its owner move it aside, or choose another --receipt-dir' },
  );
}

/** A receipt's proof to a Merkle root, the service the receipt names, and where it is. */
export interface EarlierProof {
  proof: InclusionProof;
  baseUrl: string;
  path: string;
}

/**
 * The proof in the receipt already at document `index`'s place, when it is
 * a consistent receipt of that document (digest `hash`) under a Merkle root
 * (an earlier `register --aggregate`); else undefined. A file that cannot be
 * read says nothing here: checkBeforeSending judges it.
 */
export function earlierProof(plan: ReceiptPlan, index: number, hash: string): Promise<EarlierProof | undefined> {
  return proofIn(receiptPath(plan, index, hash), hash);
}

/**
 * The proof in the receipt at `path` (opened without following a link),
 * when it is a consistent receipt of the document of digest `hash` under a
 * Merkle root, with the base URL it names; else undefined, a file that
 * cannot be read included.
 */
export async function proofIn(path: string, hash: string): Promise<EarlierProof | undefined> {
  const receipt = await receiptAt(path, hash);
  if (receipt === undefined) return undefined;
  const { proof, baseUrl } = receipt;
  return proof && baseUrl !== undefined ? { proof, baseUrl, path } : undefined;
}

/** A receipt of a document registered on its own (no proof), the service it names, and where it is. */
export interface EarlierRegistration {
  /** Undefined for a receipt written before v1 (the bare record), which does not say. */
  baseUrl: string | undefined;
  path: string;
  /**
   * The description its record holds (what the service registered it with),
   * if any: the folder's text, unchecked (see the ask that sends it).
   */
  description: string | undefined;
}

/**
 * The receipt at `path` (opened without following a link), when it is a
 * consistent receipt (v1, or a bare record) of the document of digest
 * `hash` registered on its own (per-document register: no proof); else
 * undefined, a file that cannot be read included.
 */
export async function registrationIn(path: string, hash: string): Promise<EarlierRegistration | undefined> {
  const receipt = await receiptAt(path, hash);
  if (receipt === undefined || receipt.proof !== null) return undefined;
  const { description } = JSON.parse(receipt.recordJson) as { description?: unknown };
  return { baseUrl: receipt.baseUrl, path, description: typeof description === 'string' ? description : undefined };
}

/**
 * What keptReceipt found: a receipt that answers for the document (`kept`),
 * or one at its place of another registration (`other`: what it claims, a
 * root or the document's own digest, and its service when not this one),
 * which is left as it is and named by no result.
 */
export type KeptReceipt =
  { kind: 'kept'; path: string } | { kind: 'other'; path: string; claimed: string; service?: string; refuted?: true };

/** A receipt of another registration at a document's place (keptReceipt, writeReceipt). */
export type OtherReceipt = Extract<KeptReceipt, { kind: 'other' }>;

/** What a consistent receipt says was registered: the root its proof leads to, or its document on its own. */
function claimOf(receipt: ConsistentReceipt): string {
  return receipt.proof?.root ?? receipt.sha256;
}

/**
 * `there`, a receipt of a document at `path`, as `other`: unless it answers
 * for `confirmed` (a root, or the document on its own) at `baseUrl` (it
 * claims that, and names that service or none, as a bare record). Marked
 * `refuted` when the service said it does not have what it claims.
 */
function otherThan(
  there: ConsistentReceipt,
  path: string,
  confirmed: string,
  baseUrl: string | undefined,
  refuted: (claimed: string) => boolean,
): OtherReceipt | undefined {
  const claimed = claimOf(there);
  const service = there.baseUrl !== undefined && there.baseUrl !== baseUrl ? there.baseUrl : undefined;
  if (claimed === confirmed && service === undefined) return undefined;
  return {
    kind: 'other',
    path,
    claimed,
    ...(service === undefined ? {} : { service }),
    ...(refuted(claimed) ? { refuted: true as const } : {}),
  };
}

/**
 * The receipt already at document `index`'s place when it is a consistent
 * receipt of that document (digest `hash`), else one under another name in
 * the folder (`elsewhere`: the receipts by digest): a registration the
 * service confirmed with no record here leaves it as it is, and it still
 * answers for the document; else undefined.
 *
 * A receipt answers only for the registration confirmed (`confirmed`: the
 * root the document is under, or its own digest), at this service (a bare
 * record does not say its service): r88 named a receipt whose proof led to
 * a root the service had just said it does not have; r90 one of the
 * document on its own where only a root was confirmed, and one of another
 * service with --force. One at the document's place that claims another is
 * `other`, and no receipt may be written over it (r89: that replaced a
 * genuine receipt of the document on its own, whose record is sent once).
 */
export async function keptReceipt(
  plan: ReceiptPlan,
  index: number,
  hash: string,
  confirmed: string,
  baseUrl: string,
  elsewhere: () => Promise<Map<string, string[]>> = () => Promise.resolve(new Map<string, string[]>()),
  refuted: (claimed: string) => boolean = () => false,
  secrets?: Secrets,
): Promise<KeptReceipt | undefined> {
  const answers = (receipt: ConsistentReceipt, path: string) =>
    otherThan(receipt, path, confirmed, baseUrl, () => false) === undefined;
  const own = receiptPath(plan, index, hash);
  const there = await receiptAt(own, hash);
  if (there !== undefined && answers(there, own)) return { kind: 'kept', path: own };
  // Then the receipts of the same digest under other names (receiptsByDigest: another layout of the
  // same folder, `-r dist` against `dist/sub/c.txt`, or a copy), of this service: verify finds those too.
  for (const path of ((await elsewhere()).get(hash) ?? []).filter((p) => p !== own)) {
    const receipt = await receiptAt(path, hash);
    if (receipt?.baseUrl === baseUrl && answers(receipt, path)) {
      // Its own place empty: the receipt is written there too, from that one's record (r105). Without it,
      // `verify -r --receipt-dir` found no receipt under the document's name, and so took any registered
      // bytes swapped in at that name for it (receipts moved aside by docs/ci.md's re-run step).
      if (there === undefined && secrets !== undefined) {
        return { kind: 'kept', path: (await copiedTo(plan, index, receipt, path, secrets)) ?? path };
      }
      return { kind: 'kept', path };
    }
  }
  // `refuted`: the service said in this run it does not have what it claims. It stands in the way of
  // nothing: a receipt of what was confirmed is written over it (writeReceipt) when a record is found
  // (r96: it was left, and verify over the folder went on saying verified); else it is said so.
  return there && otherThan(there, own, confirmed, baseUrl, refuted);
}

/** What a receipt written by a run goes through: the run's secrets taken out, and said (io's redact and warn). */
export interface Secrets {
  redact: (text: string) => string;
  warn: (message: string) => void;
}

/**
 * Writes at document `index`'s place a receipt of it made from `found` (at
 * `from`), a v1 receipt of the same digest under another name (its record,
 * service, date and proof; this document's name), with every secret this
 * run knows taken out as from any receipt it writes (r106: a token in the
 * record, the API key in the name, were written as they were), and returns
 * its path; undefined when it could not be written (the receipt under the
 * other name still answers).
 */
async function copiedTo(
  plan: ReceiptPlan,
  index: number,
  found: ConsistentReceipt,
  from: string,
  secrets: Secrets,
): Promise<string | undefined> {
  if (found.registeredAt === undefined || found.baseUrl === undefined) return undefined;
  try {
    const { text, redacted } = redactedReceipt(
      receiptText({
        document: { name: plan.names[index] ?? null, sha256: found.sha256, size: found.size ?? null },
        recordJson: found.recordJson,
        baseUrl: found.baseUrl,
        registeredAt: found.registeredAt,
        ...(found.proof ? { proof: found.proof } : {}),
      }),
      found.sha256,
      secrets.redact,
    );
    const written = await writeReceipt(plan, index, found.sha256, text, false);
    if (!('path' in written)) return undefined;
    if (redacted) secrets.warn(redactedReceiptWarning(`receipt ${written.path}`, from));
    return written.path;
  } catch {
    return undefined;
  }
}

/**
 * What a run says of a receipt keptReceipt found `other` at the place of
 * document `hash`, where `confirmed` (a root, or `hash` on its own) is what
 * this run has confirmed at `baseUrl`. It says nothing of whether the
 * receipt's own claim is true: only that it is not what was confirmed here.
 * A receipt of another service names both services: the same claim at two
 * services read as no difference at all (r91). `recorded`: the run has the
 * record of what it confirmed, so the same run again writes its receipt
 * once that one is moved aside, which the warning then says (r96: it named
 * no way out).
 */
export function otherClaimWarning(
  other: OtherReceipt,
  hash: string,
  confirmed: string,
  baseUrl: string,
  recorded = false,
): string {
  const name = (registered: string) =>
    registered === hash ? 'its document registered on its own' : `Merkle root ${registered}`;
  const [theirs, ours] = other.service === undefined ? ['', ''] : [` at ${other.service}`, ` at ${baseUrl}`];
  const denied = other.refuted ? ' (the service said in this run that it does not have it)' : '';
  return (
    `${other.path} is a receipt of ${name(other.claimed)}${theirs}${denied}, where this run confirmed ` +
    `${name(confirmed)}${ours}: it is left as it is, and no result names it` +
    (recorded
      ? "; to have this run's receipt there, move it aside (keep it: it may be the only copy of that registration's record) and run the same command again"
      : '')
  );
}

/** The record of a Merkle root as a receipt in --receipt-dir carries it (rootRecordInReceipts). */
export interface RootRecordKept {
  recordJson: string;
  /** When its registration was completed, as that receipt says. */
  completedAt: string;
  /** The receipt it was read from. */
  path: string;
}

/**
 * The records of Merkle roots as receipts in --receipt-dir carry them, for
 * roots this store has no record of: looked for once per root (`of`).
 * The service sends a record once, to the run that paid: a run stopped while
 * it wrote its receipts (a CI job cancelled, killed) left the record only in
 * those it wrote, and a re-run on a new runner, whose store has no record
 * (the service answers 409 for the root), wrote none for the other
 * documents: `verify` said "unknown" of them on every re-run, with no way
 * out but paying again (r80). From such a receipt, theirs are written.
 *
 * A receipt is a file anyone may have edited, and notarize writes the ones
 * it makes from it: every receipt of the root there must say the same (its
 * record and date), and its record must be of the shape forfait answers
 * (a stub `{"hash": ...}` holds together for verify, and is refused here),
 * or none is used (r82). `warnings` says, once a run is over, which
 * receipt each root's record came from, and which roots' receipts disagree.
 */
export class RootRecordsInReceipts {
  readonly #found = new Map<string, Promise<RootRecordLook>>();
  /** Roots a receipt was written from the record of: only these are said to be (warnings). */
  readonly #wroteFrom = new Set<string>();
  /** Roots already told of (warnings): a single document's run tells as it goes, and not again at its end. */
  readonly #told = new Set<string>();
  readonly #baseUrl: string;
  readonly #byDigest: () => Promise<ReadonlyMap<string, readonly string[]>>;

  /** `byDigest`: the receipts of the folder by the digest each names (planReceiptsByDigest). */
  constructor(baseUrl: string, byDigest: () => Promise<ReadonlyMap<string, readonly string[]>>) {
    this.#baseUrl = baseUrl;
    this.#byDigest = byDigest;
  }

  /**
   * The record of `root` as the receipts there of documents under it carry
   * it: v1, of this service, holding together (a record of that root, a
   * proof checked to lead there from its document), all alike. That the
   * other documents are under the root, which the service has, is checked
   * by their own proofs. `digests`: the documents whose receipts are looked
   * at (a tree's leaves); by default every receipt's. Undefined when none
   * carries it, or when they disagree.
   */
  async of(root: string, digests?: () => Iterable<string>): Promise<RootRecordKept | undefined> {
    let found = this.#found.get(root);
    if (found === undefined) {
      found = this.#look(root, digests);
      this.#found.set(root, found);
    }
    const look = await found;
    if ('unreadable' in look) {
      // Asked after the service's 409: something was sent, so exit 1, not the read's exit 2.
      const after = refusalAfterSending(look.unreadable) as NotarizeError;
      throw new NotarizeError(
        'receipt_write',
        EXIT.failed,
        `the receipts under the Merkle root ${root} could not be read for its record: ${after.message}`,
        { hint: after.hint ?? 'run the same command again', cause: look.unreadable },
      );
    }
    return 'kept' in look ? look.kept : undefined;
  }

  /** A receipt was written from the record of `root` that `of` gave. */
  wrote(root: string): void {
    this.#wroteFrom.add(root);
  }

  /**
   * One line per root looked for and not told of yet: where its record was
   * taken from (when a receipt was written from it: a write that failed
   * says so itself), or why none was.
   */
  async warnings(): Promise<string[]> {
    const lines: string[] = [];
    for (const [root, found] of this.#found) {
      if (this.#told.has(root)) continue;
      const look = await found;
      if ('kept' in look && !this.#wroteFrom.has(root)) continue;
      this.#told.add(root);
      if ('kept' in look) {
        lines.push(
          `receipts of documents under the Merkle root ${root} written from the record in ${look.kept.path} ` +
            '(this store has none: the service sends it once, to the run that paid, which wrote it there)',
        );
      } else if ('disagree' in look) {
        const [one, other] = look.disagree;
        const why =
          other === undefined
            ? `${one} carries no record of a completed registration`
            : `${one} and ${other} carry different records of it, or one not of a completed registration`;
        lines.push(
          `no receipt written from those under the Merkle root ${root}: ${why} (one of them is not what the ` +
            'service sent: move it out of the receipt folder, and run again)',
        );
      }
    }
    return lines;
  }

  async #look(root: string, digests: (() => Iterable<string>) | undefined): Promise<RootRecordLook> {
    try {
      return await this.#lookThrough(root, digests);
    } catch (error) {
      // Still no descriptor after the wait (readOr): not "no record there", which would leave it unwritten, exit 0.
      if (error instanceof UsageError && isFdShortage(error)) return { unreadable: error };
      throw error;
    }
  }

  async #lookThrough(root: string, digests: (() => Iterable<string>) | undefined): Promise<RootRecordLook> {
    const byDigest = await this.#byDigest();
    const seen = new Set<string>();
    let first: RootRecordKept | undefined;
    for (const digest of digests?.() ?? byDigest.keys()) {
      if (seen.has(digest)) continue;
      seen.add(digest);
      for (const path of byDigest.get(digest) ?? []) {
        const receipt = await receiptAt(path, digest);
        if (receipt?.proof?.root !== root || receipt.baseUrl !== this.#baseUrl) continue;
        const { recordJson, registeredAt } = receipt;
        if (registeredAt === undefined || !isCompletedRecord(recordJson)) {
          return { disagree: first === undefined ? [path] : [first.path, path] };
        }
        if (first === undefined) first = { recordJson, completedAt: registeredAt, path };
        else if (first.recordJson !== recordJson || first.completedAt !== registeredAt) {
          return { disagree: [first.path, path] };
        }
      }
    }
    return first === undefined ? { none: true } : { kept: first };
  }
}

/** What RootRecordsInReceipts found of a root: its record, receipts that disagree, or nothing. */
type RootRecordLook =
  { kept: RootRecordKept } | { disagree: [string, string?] } | { none: true } | { unreadable: UsageError };

/** `text` read as a consistent receipt (v1, or a bare record) of the document of digest `hash`; else undefined. */
function receiptOf(text: string | undefined, hash: string): ConsistentReceipt | undefined {
  if (text === undefined) return undefined;
  const receipt = readReceipt(text);
  return receipt.consistent && receipt.sha256 === hash.toLowerCase() ? receipt : undefined;
}

/** receiptOf the file at `path` (opened without following a link); undefined when it cannot be read. */
async function receiptAt(path: string, hash: string): Promise<ConsistentReceipt | undefined> {
  return receiptOf(await readNoFollow(path), hash);
}

/**
 * What writeReceipt did: wrote `path` (or found it there, identical), or
 * left `other` at the document's place: a receipt of the same document
 * that claims another registration, or names another service, which no run
 * may write over unless told that registration does not exist.
 */
export type WrittenReceipt = { path: string } | { other: OtherReceipt };

/**
 * The receipt of the same digest already at a document's place, `existing`
 * (text), when the new receipt `text` may not replace it: it claims another
 * registration (a root, or the document on its own) or another service than
 * `text` does, and that claim is not one the service said it does not have
 * (`refuted`). Such a receipt may be the only copy of a paid registration's
 * record (sent once): r89 lost one so in a run, r91 in a store whose ledger
 * had the document's root. One of the same registration, or of a refuted
 * one, is replaced: the receipt of what this run confirmed is written.
 */
function otherClaim(
  existing: string | undefined,
  text: string,
  path: string,
  hash: string,
  refuted: (claimed: string) => boolean,
): OtherReceipt | undefined {
  const there = receiptOf(existing, hash);
  const written = readReceipt(text);
  if (there === undefined || !written.consistent) return undefined;
  const other = otherThan(there, path, claimOf(written), written.baseUrl, refuted);
  return other?.refuted ? undefined : other;
}

/**
 * Writes `text`, the receipt of document `index` (digest `hash`), after its
 * registration ended, and returns its path. Identical content already there
 * is left as is; another receipt of the same digest is replaced (also one
 * another run wrote between the look and the write) when it is of the same
 * registration, or `overwrite` (--force), or `refuted` says the service does
 * not have what it claims; else it is left as it is and returned as
 * `other` (otherClaim). A failure here comes after something was sent: exit
 * 1, never 2. `recordFrom`: the receipt the record came from, when the
 * ledger has none (RootRecordsInReceipts).
 */
export async function writeReceipt(
  plan: ReceiptPlan,
  index: number,
  hash: string,
  text: string,
  overwrite: boolean,
  recordFrom?: string,
  refuted: (claimed: string) => boolean = () => false,
): Promise<WrittenReceipt> {
  const path = receiptPath(plan, index, hash);
  const hint =
    recordFrom === undefined
      ? `the registration itself is done and in the ledger; \`notarize receipt ${hash}\` prints the receipt, and running the same command again writes it`
      : `the registration itself is done; this store has no record of it, ${recordFrom} has: running the same command again writes the receipt from it`;
  const failed = (message: string, cause: unknown) =>
    new NotarizeError('receipt_write', EXIT.failed, message, { hint, cause });
  const kept = (existing: string | undefined) =>
    overwrite ? undefined : otherClaim(existing, text, path, hash, refuted);
  try {
    await makeFolders(plan.dir, plan.names[index] ?? hash);
    const existing = await readNoFollow(path);
    if (existing === text) return { path };
    if ((await lstat(path).catch(() => undefined))?.isSymbolicLink()) throw linkRefused(path, 'receipt');
    const other = kept(existing);
    if (other !== undefined) return { other };
    const replace = overwrite || receiptOf(existing, hash) !== undefined;
    await writeFileAtomic(path, text, { mode: 0o666, replace, flushes: plan.flushes });
    return { path };
  } catch (error) {
    // A folder unreadable for want of descriptors: the remedy, and no "nothing was sent" (r87).
    const afterSending = refusalAfterSending(error, hint);
    if (afterSending !== error) throw afterSending;
    if (error instanceof UsageError) {
      throw failed(error.message, error);
    }
    const code = (error as NodeJS.ErrnoException).code;
    const existing = code === 'EEXIST' ? await readNoFollow(path).catch(() => undefined) : undefined;
    if (existing === text) return { path };
    // EEXIST from the write itself (a receipt that appeared since the check), not from mkdir.
    if (code === 'EEXIST' && existing !== undefined) {
      // Another process's receipt of the same document (an aggregate and a per-document run sharing the
      // folder): replaced, as one found before the write is.
      if (receiptOf(existing, hash) !== undefined) {
        const other = kept(existing);
        if (other !== undefined) return { other };
        try {
          await writeFileAtomic(path, text, { mode: 0o666, replace: true, flushes: plan.flushes });
          return { path };
        } catch (again) {
          throw failed(`the receipt ${path} could not be written: ${writeErrorReason(again)}`, again);
        }
      }
      throw failed(`receipt ${path} appeared with other content while ${hash} was being registered`, error);
    }
    throw failed(`the receipt ${path} could not be written: ${writeErrorReason(error)}`, error);
  }
}

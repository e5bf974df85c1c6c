/**
 * What `verify` checks a document's digest against, with no network: its
 * receipt if one is found, else the local ledger. For each document the
 * first source found decides, in this order:
 *   1. `--receipt <file>` (one document only),
 *   2. `--receipt-dir <dir>`: the receipt `register --receipt-dir` would have
 *      written for it there (same names: receipts.ts receiptNames); when there
 *      is none of that name, a receipt there of its digest (names depend on
 *      the documents of a run: one registered beside a namesake elsewhere got
 *      `a/x.txt.notarization.json`, and verify of it alone would look for
 *      `x.txt.notarization.json`); when that name's receipt is of another
 *      digest, the document is `modified`, a receipt of its digest under
 *      another name only named in the reason (it may be an older release's);
 *      when it is of its digest (under its name, or found by digest) but a
 *      later receipt of another digest is named after more of its path,
 *      `modified` too (#laterUnderFullerName),
 *   3. without --receipt-dir only: `<path>.notarization.json` beside the document,
 *   4. the ledger of the current service.
 * A receipt found is never passed over for a later source: the receipt the
 * user points at, or keeps with the artifact, is what is checked. Given
 * --receipt-dir, the user names where the receipts are: a receipt beside a
 * document (in the folder of build outputs, which anything in the build
 * can write to) must not stand in for one missing there.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { basename, join, relative, resolve } from 'node:path';
import { MAX_ANSWER_BYTES } from '../api/http.js';
import { UsageError } from '../errors.js';
import { readOr } from '../fd-shortage.js';
import type { InputItem } from './inputs.js';
import type { LedgerIndex, NamedOtherwise, Namesake } from './ledger.js';
import { decodeJsonText } from './read-input.js';
import { readReceipt, type ConsistentReceipt, type InclusionProof } from './receipt-format.js';
import { pathSegments, RECEIPT_SUFFIX, type ReceiptPlan } from './receipts.js';

/**
 * Receipts are a few kilobytes; a file far larger is no receipt, and is not
 * read whole. But the record a receipt carries is the service's answer as it
 * came, up to api/http.ts's MAX_ANSWER_BYTES (4 MiB): every receipt register
 * can write must be read, so the limit is that plus room for the rest (the
 * document's name, a proof). contrib/verify-receipt.py has the same.
 */
export const MAX_RECEIPT_BYTES = MAX_ANSWER_BYTES + 64 * 1024;

export type FindingStatus = 'verified' | 'modified' | 'unknown' | 'invalid';

/** What was found for one document, and what it says. */
export interface Finding {
  status: FindingStatus;
  /** What decided: a receipt or the ledger (none for `unknown`). */
  source?: 'receipt' | 'ledger';
  /** The receipt's path, when one decided. */
  receipt?: string;
  /** Why a document is not verified (or, for `unknown`, why a ledger entry was no proof). */
  reason?: string;
  /** For `verified`: the record, as JSON text. */
  recordJson?: string;
  /** For `verified` by a v1 receipt: the service it names (else the current service is meant). */
  baseUrl?: string;
  /** For `verified` under a Merkle root (an aggregate registration): the proof from the document to the root. */
  proof?: InclusionProof;
  /** The receipt is not the one of the document's name, but one of its digest in --receipt-dir. */
  byDigest?: true;
  /** For `verified` by the ledger: its name was notarized later with another digest (`reason` says which). */
  laterNamesake?: true;
  /** For `verified` by the ledger: by bytes it has under another name only, this name of other digests (`reason`). */
  namedOtherwise?: true;
}

/** Where receipts are looked for, besides beside each document. */
export interface ReceiptSources {
  /** `--receipt`: the one document's receipt, already read. */
  receipt?: { path: string; text: string };
  /** `--receipt-dir`, with the receipt name of each document by index (undefined: named by its digest). */
  receiptDir?: { dir: string; names: readonly (string | undefined)[] };
}

/**
 * The text of the receipt at `path`, or undefined when there is none (no
 * such file, or a folder on the way is not one). Throws UsageError when one
 * is there but cannot be read as a receipt file: a symbolic link, not a
 * regular file, unreadable, or larger than MAX_RECEIPT_BYTES. Opened non-blocking and
 * checked before any read, as every input is (core/hash.ts): a FIFO put
 * where a receipt is looked for is refused, never waited on.
 */
export function readReceiptFile(path: string): Promise<string | undefined> {
  // An error of readReceiptText rejects the promise, as the callers expect of a read.
  return new Promise((resolve) => resolve(readReceiptText(path)));
}

/**
 * readReceiptFile's work, synchronous: a receipt is read in a call or two
 * (receiptsByDigest reads thousands, where streams cost more than the reads).
 */
function readReceiptText(path: string): string | undefined {
  const unreadable = (error: unknown) =>
    new UsageError(
      `cannot read the receipt ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      { code: 'receipt_unreadable', cause: error },
    );
  let fd: number;
  try {
    // Not through a link, as a walk does not follow one: `verify -r` showed a linked receipt as a document's
    // evidence and, in the same run, as a link not followed, not checked (r92).
    fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') {
      throw new UsageError(`the receipt ${path} is a symbolic link, which verify does not follow`, {
        code: 'receipt_unreadable',
        hint: 'check the file it points to with --receipt, or put the receipt itself there',
        cause: error,
      });
    }
    // No such receipt: also where its name would be too long to exist (a document named 238+ bytes).
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ENAMETOOLONG') return undefined;
    throw unreadable(error);
  }
  let bytes: Buffer | undefined;
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw new Error('not a regular file');
    bytes = readAtMost(fd, info.size, MAX_RECEIPT_BYTES);
  } catch (error) {
    throw unreadable(error);
  } finally {
    closeSync(fd);
  }
  if (bytes === undefined) {
    throw new UsageError(`the receipt ${path} is larger than ${MAX_RECEIPT_BYTES} bytes`, {
      code: 'receipt_unreadable',
      hint: 'a receipt is a small JSON file: check that this file is one',
    });
  }
  return decodeJsonText(bytes);
}

/**
 * The bytes of the open file `fd` to its end, or undefined past `limit`
 * (never more than `limit` + 1 read). `size`, its fstat size, is only where
 * the buffer starts: a file that grew meanwhile is read to its end too.
 */
function readAtMost(fd: number, size: number, limit: number): Buffer | undefined {
  let buffer = Buffer.allocUnsafe(Math.min(size, limit) + 1);
  let length = 0;
  for (;;) {
    if (length === buffer.length) {
      if (length > limit) return undefined;
      const larger = Buffer.allocUnsafe(Math.min(length * 2, limit + 1));
      buffer.copy(larger, 0, 0, length);
      buffer = larger;
    }
    const read = readSync(fd, buffer, length, buffer.length - length, length);
    if (read === 0) return buffer.subarray(0, length);
    length += read;
  }
}

/** The verdict of a digest against a receipt's text. */
export function judgeByReceipt(hash: string, path: string, text: string): Finding {
  const receipt = readReceipt(text);
  const found = { source: 'receipt', receipt: path } as const;
  if (!receipt.consistent) return { status: 'invalid', ...found, reason: receipt.reason };
  if (receipt.sha256 !== hash) {
    return { status: 'modified', ...found, reason: `its receipt is of another digest, ${receipt.sha256}` };
  }
  return {
    status: 'verified',
    ...found,
    recordJson: receipt.recordJson,
    ...(receipt.baseUrl === undefined ? {} : { baseUrl: receipt.baseUrl }),
    ...(receipt.proof ? { proof: receipt.proof } : {}),
  };
}

/** The verdict of a digest against the ledger (see ledger.ts). */
function judgeByLedger(ledger: LedgerIndex, hash: string, name: string | undefined): Finding {
  const verdict = ledger.verdict(hash, name);
  if (verdict.status === 'verified') {
    const { entry, proof, laterNamesake, namedOtherwise } = verdict;
    return {
      status: 'verified',
      source: 'ledger',
      recordJson: entry.recordJson,
      ...(proof ? { proof } : {}),
      ...(laterNamesake ? { reason: namesakeNote(laterNamesake), laterNamesake: true as const } : {}),
      ...(namedOtherwise ? { reason: namedOtherwiseNote(namedOtherwise), namedOtherwise: true as const } : {}),
    };
  }
  if (verdict.status === 'modified') {
    const { name, sha256, completedAt, digests } = verdict;
    return { status: 'modified', source: 'ledger', reason: notarizedWith(name, sha256, completedAt, digests) };
  }
  if (verdict.damaged) return { status: 'unknown', reason: `its ledger entry is no proof: ${verdict.damaged.message}` };
  if (verdict.confirmedUnder !== undefined) {
    const what = verdict.confirmedUnder === hash ? 'it' : `the Merkle root ${verdict.confirmedUnder} that holds it`;
    return {
      status: 'unknown',
      reason:
        `the service said it has ${what} (a 409), but this store never received the record, so nothing here proves it: ` +
        'its page on the service may show it; a receipt written when it was registered would verify it',
    };
  }
  return { status: 'unknown' };
}

/**
 * What the ledger says of a name notarized with other digests than the
 * document's: several under one base name (versions of one document, or
 * files of other folders sharing it), so the latest is not named as if it
 * were this file's own.
 */
function notarizedWith(name: string, sha256: string, completedAt: string, digests: number): string {
  return digests === 1
    ? `'${name}' was notarized with digest ${sha256} (${completedAt})`
    : `'${name}' was notarized with ${digests} other digests, the latest ${sha256} (${completedAt})`;
}

/** The reason of a document verified by the ledger by bytes it has under another name only (NamedOtherwise). */
function namedOtherwiseNote({ name, sha256, completedAt, digests, notarizedAs }: NamedOtherwise): string {
  const as = notarizedAs === null ? 'with no name (standard input or --hash)' : `as '${notarizedAs}'`;
  return (
    `its bytes were notarized ${as}, and ${notarizedWith(name, sha256, completedAt, digests)}: if this is ` +
    `that '${name}', another document's bytes were copied over it; a copy of that document under this name reads ` +
    'the same (the ledger keeps one name a digest): verify against the receipts register wrote, --receipt-dir, to tell'
  );
}

/**
 * The reason of a document verified by the ledger whose name was notarized later with another
 * digest: it may be an older build, or a namesake of another folder, which the ledger cannot tell.
 */
function namesakeNote({ name, sha256, completedAt }: Namesake): string {
  return (
    `'${name}' was notarized later with another digest, ${sha256} (${completedAt}): if that was this same file, ` +
    'this is an older build (the ledger keeps names without their folders, so a file of that name in another folder ' +
    'looks the same: verify against the receipts register wrote, --receipt-dir, to tell)'
  );
}

/** receiptsByDigest of each run's --receipt-dir, read once per run by whichever part of it asks first. */
const runIndexes = new WeakMap<ReceiptPlan, Promise<Map<string, string[]>>>();

/**
 * receiptsByDigest of `plan`'s folder, read once per run (the plan is the
 * run's): register's document roots, its 409s and --aggregate all ask it,
 * and each had read the whole folder again.
 */
export function planReceiptsByDigest(plan: ReceiptPlan): Promise<Map<string, string[]>> {
  let index = runIndexes.get(plan);
  if (index === undefined) {
    index = receiptsByDigest(plan.dir);
    runIndexes.set(plan, index);
  }
  return index;
}

/**
 * The receipts under `dir` (walked, links not followed, name order) by the
 * digest each says its document has: every one that says so, as the first
 * may not hold together (Evidence.judge checks each in turn). Read with
 * JSON.parse alone, not checked: this only finds receipts whose name was not
 * the one looked for. Files that cannot be read are passed over (but for
 * a shortage of descriptors: readOr).
 */
export async function receiptsByDigest(dir: string): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  const walk = async (folder: string): Promise<void> => {
    const entries = await readOr(
      () => readdir(folder, { withFileTypes: true }),
      () => undefined,
    );
    if (entries === undefined) return;
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile() && entry.name.endsWith(RECEIPT_SUFFIX)) {
        const sha256 = claimedDigest(await readQuietly(path));
        if (sha256 !== undefined) found.set(sha256, [...(found.get(sha256) ?? []), path]);
      }
    }
  };
  await walk(dir);
  return found;
}

/**
 * readReceiptText, or undefined for a file that cannot be read as a receipt
 * file (passed over), but for a shortage of descriptors (readOr).
 */
function readQuietly(path: string): Promise<string | undefined> {
  return readOr(
    () => readReceiptText(path),
    () => undefined,
  );
}

/**
 * The digest a receipt's text says its document has, unchecked: as
 * readReceipt reads it, a top-level `hash` makes it a bare record of that
 * hash (r107: indexed by its `document.sha256`, --receipt-dir did not find
 * what --receipt verified), else its `document.sha256`.
 */
function claimedDigest(text: string | undefined): string | undefined {
  let value: unknown;
  try {
    value = text === undefined ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { document, hash } = value as { document?: { sha256?: unknown }; hash?: unknown };
  const claimed = hash ?? document?.sha256;
  return typeof claimed === 'string' ? claimed.toLowerCase() : undefined;
}

/** The sources of a run, asked document by document (see the module comment). */
export class Evidence {
  readonly #sources: ReceiptSources;
  readonly #ledger: LedgerIndex;
  /** --receipt-dir's receipts by the digest they name, read the first time a document's named receipt is missing. */
  #byDigest: Promise<Map<string, string[]>> | undefined;
  /** The names of --receipt-dir's folders, read the first time a receipt's fuller names are looked for. */
  #topFolders: Promise<Set<string>> | undefined;

  constructor(sources: ReceiptSources, ledger: LedgerIndex) {
    this.#sources = sources;
    this.#ledger = ledger;
  }

  /**
   * The receipt looked for first for document `index` (`item`) of digest
   * `hash`: in --receipt-dir under the name register gave it, else beside it;
   * undefined with --receipt (that one is read), or for standard input or
   * --hash without --receipt-dir (none is looked for).
   */
  namedReceipt(item: InputItem, index: number, hash: string): string | undefined {
    const { receipt, receiptDir } = this.#sources;
    if (receipt) return undefined;
    if (receiptDir) return join(receiptDir.dir, `${receiptDir.names[index] ?? hash}${RECEIPT_SUFFIX}`);
    return item.kind === 'file' ? `${item.path}${RECEIPT_SUFFIX}` : undefined;
  }

  /** Where register puts the receipt of a document of digest `hash` with no name (standard input, --hash): in --receipt-dir only. */
  digestReceipt(hash: string): string | undefined {
    const { receiptDir } = this.#sources;
    return receiptDir ? join(receiptDir.dir, `${hash}${RECEIPT_SUFFIX}`) : undefined;
  }

  /** The finding for document `index` (`item`) of digest `hash`. Throws UsageError for a receipt that cannot be read. */
  async judge(item: InputItem, index: number, hash: string): Promise<Finding> {
    const { receipt, receiptDir } = this.#sources;
    if (receipt) return judgeByReceipt(hash, receipt.path, receipt.text);
    const named = this.namedReceipt(item, index, hash);
    const text = named === undefined ? undefined : await readReceiptFile(named);
    if (named !== undefined && text !== undefined) {
      const finding = judgeByReceipt(hash, named, text);
      if (finding.status === 'verified' && receiptDir && item.kind === 'file') {
        const used = receiptDir.names[index]?.split('/').length;
        const later = used && (await this.#laterUnderFullerName(item.path, receiptDir, hash, named, text, used));
        if (later) return later;
      }
      // Its name's receipt is of another digest: `modified`, even when a receipt of its digest is there
      // under another name. Names depend on the folder walked (`-r dist` names dist/linux/app.tgz
      // `linux/app.tgz`; `-r dist/linux`, `app.tgz`), but a receipts folder kept across releases also holds
      // older releases' receipts, and one of those must never pass for an artifact swapped for that older
      // build. The reason names such a receipt, so that a folder walked from elsewhere is easy to see.
      if (finding.status === 'modified' && receiptDir) {
        const elsewhere = await this.#ofDigest(receiptDir.dir, hash);
        if (elsewhere) return { ...finding, reason: `${finding.reason!}; ${elsewhereNote(elsewhere.finding)}` };
      }
      return finding;
    }
    if (receiptDir) {
      const all = await this.#allOfDigest(receiptDir.dir, hash);
      // Found under another name: the same check (r94: a document added to the run changed the swapped
      // build's name to one with no receipt, and it was verified), against every name of its path, its
      // last element alone included: this run's name has no receipt, and the one found may be named after
      // none of it (r96: app-linux/app.tgz hid linux/app.tgz).
      if (all.length > 0 && item.kind === 'file') {
        const { found, named, notItsName } = chooseByName(receiptDir.dir, all, pathSegments(resolve(item.path)));
        const { receipt, text: foundText } = found;
        // Every name of its path is weighed, shorter ones than the receipt found included: a later run of
        // it registered from a folder nearer (`-r build/dist`, after `-r build`) names it by less of its
        // path, and skipping those let the older build through (r112).
        const later = await this.#laterUnderFullerName(
          item.path,
          receiptDir,
          hash,
          receipt,
          foundText,
          0,
          notItsName,
          named,
        );
        return later ?? { ...found.finding, byDigest: true };
      }
      if (all.length > 0) return { ...all[0]!.finding, byDigest: true };
    }
    return judgeByLedger(this.#ledger, hash, item.kind === 'file' ? basename(item.path) : undefined);
  }

  /**
   * A receipt of another digest, registered later, named after more of the
   * document's path (more than `used` of its last elements: 0 for a receipt
   * found by digest whose own name is none of them) than the receipt
   * `matched` (of its digest, text `matchedText`) that this run found it by:
   * `modified`, said so. Names depend on the documents of a run
   * (receiptNames): `verify build/linux/app.tgz` alone looks for `app.tgz`,
   * which an older release registered alone may hold, while the release that
   * registered `build/linux/app.tgz` beside `build/mac/app.tgz` wrote
   * `linux/app.tgz`: that older build swapped in passed as verified (r92).
   * A fuller name that is older leaves the verdict alone: a later run named
   * the document by less of its path. One of the same date does not: one
   * --aggregate run dates all its receipts alike. A bare record is dated by
   * its creationDate.
   *
   * A fuller name this run gives another of its documents is checked all
   * the same: a file added beside the swapped build (`build/linux/linux/
   * app.tgz`, a copy of the newer one) makes that name its own, and passing
   * over it let the older build through (r94). What this flags wrongly,
   * documents of one run whose names end like each other's, the longer one
   * registered later (`site/docs/x` beside `site/site/docs/x`: r93;
   * `register -r dist public`: r96), is said so in the reason, with the way
   * to check it (--receipt).
   */
  async #laterUnderFullerName(
    path: string,
    receiptDir: NonNullable<ReceiptSources['receiptDir']>,
    hash: string,
    matched: string,
    matchedText: string,
    used: number,
    notItsName?: string,
    named = used,
  ): Promise<Finding | undefined> {
    const matchedReceipt = readReceipt(matchedText);
    const matchedAt = matchedReceipt.consistent ? registeredMs(matchedReceipt) : undefined;
    const parts = pathSegments(resolve(path));
    if (matchedAt === undefined && notItsName === undefined) return undefined;
    // A receipt named after more of the path sits under a folder named after one of its folders.
    this.#topFolders ??= topFolders(receiptDir.dir);
    const folders = await this.#topFolders;
    for (let keep = parts.length; keep > used; keep--) {
      if (keep > 1 && !folders.has(parts[parts.length - keep]!)) continue;
      const fullerName = parts.slice(-keep).join('/');
      const fuller = join(receiptDir.dir, `${fullerName}${RECEIPT_SUFFIX}`);
      const text = await readQuietly(fuller);
      const receipt = text === undefined ? undefined : readReceipt(text);
      if (receipt?.consistent !== true || receipt.sha256 === hash) continue;
      const at = registeredMs(receipt);
      // At the same moment: one --aggregate run (its receipts share their root's date). Under a fuller
      // name, which of its documents whose names end alike is this one cannot be told, and one's bytes
      // copied over the other's passed as verified (r110); a shorter name is another document of that
      // run, not a rebuild (r113).
      const same = at !== undefined && at === matchedAt;
      const later = at !== undefined && matchedAt !== undefined && (at > matchedAt || (same && keep > named));
      if (!later && notItsName === undefined) continue;
      const another = receiptDir.names.includes(fullerName)
        ? `; it is also the name this run gives another of its documents: if one run registered both, ` +
          `check this one with --receipt ${matched}`
        : '';
      const when = receipt.registeredAt ?? new Date(at!).toISOString();
      const why = !later
        ? `and ${matched}, the receipt of its digest, is ${notItsName!}`
        : same
          ? `registered at the same moment (${when}: one --aggregate run) as ${matched}, the receipt of its digest`
          : `registered later (${when}) than ${matched}, the receipt of its digest: it may be an older build`;
      return {
        status: 'modified',
        source: 'receipt',
        receipt: fuller,
        reason:
          `${fuller}, named after ${keep > named ? 'more of its path' : 'the end of its path too'}, is of another ` +
          `digest, ${receipt.sha256}, ${why} ` +
          '(receipt names follow the documents register was given: verify them as registered, or check that receipt with --receipt)' +
          another,
      };
    }
    return undefined;
  }

  /**
   * The first receipt in `dir` of digest `hash` that holds together (one that does not is no receipt of
   * this document): its finding, path and text.
   */
  async #ofDigest(dir: string, hash: string): Promise<OfDigest | undefined> {
    for await (const found of this.#receiptsOfDigest(dir, hash)) return found;
    return undefined;
  }

  /** Every receipt in `dir` of digest `hash` that holds together, in name order. */
  async #allOfDigest(dir: string, hash: string): Promise<OfDigest[]> {
    const all: OfDigest[] = [];
    for await (const found of this.#receiptsOfDigest(dir, hash)) all.push(found);
    return all;
  }

  async *#receiptsOfDigest(dir: string, hash: string): AsyncGenerator<OfDigest> {
    this.#byDigest ??= receiptsByDigest(dir);
    for (const path of (await this.#byDigest).get(hash) ?? []) {
      const text = await readQuietly(path);
      const finding = text === undefined ? undefined : judgeByReceipt(hash, path, text);
      if (finding?.status === 'verified') yield { finding, receipt: path, text: text! };
    }
  }
}

/** A receipt found by its digest: what it says of the document, its path and text. */
interface OfDigest {
  finding: Finding;
  receipt: string;
  text: string;
}

/**
 * Which receipt of its digest, among `all` in `dir` (none under the name
 * checked), speaks for a document (its path's segments `parts`), by the
 * names register gave their documents: first the fullest one named after the
 * end of its path (a later run of it alone, or from another folder: the
 * dates of the other names of its path decide; `named`, its length, says
 * which are fuller); else one named after another document, or else one
 * named by its digest (standard input, --hash), which names no document:
 * then a receipt of another digest under any name of the document's path
 * (its bare file name included: r113) counts whatever its date, and
 * `notItsName` says why (one run that
 * registered `ca/x.txt` beside `cb/x.txt` wrote both, 14 ms apart, and cb's
 * bytes copied over ca/x.txt passed as verified when ca's came first: r101;
 * a changelog piped to `register -` later, copied over `a/x`: r110). Every receipt
 * is weighed, not the first by name: one named by the digest, or an
 * identical file's, sorted before the others and decided alone (r109).
 */
function chooseByName(
  dir: string,
  all: readonly OfDigest[],
  parts: readonly string[],
): { found: OfDigest; named: number; notItsName?: string } {
  const named = all.map((found) => {
    const name = relative(dir, found.receipt).slice(0, -RECEIPT_SUFFIX.length);
    const segments = pathSegments(name);
    const ends =
      segments.length <= parts.length &&
      segments.every((part, i) => part === parts[parts.length - segments.length + i]);
    return { found, byDigest: /^[0-9a-f]{64}$/.test(name), ends, segments };
  });
  // The fullest of the names that end its path, as if verify had computed it.
  const ending = named
    .filter((one) => !one.byDigest && one.ends)
    .reduce<(typeof named)[number] | undefined>(
      (best, one) => (best === undefined || one.segments.length > best.segments.length ? one : best),
      undefined,
    );
  if (ending) return { found: ending.found, named: ending.segments.length };
  const another = named.find((one) => !one.byDigest);
  if (another) {
    const name = another.segments.join('/');
    return {
      found: another.found,
      named: 0,
      notItsName: `named after another document, ${name}: it may be that document swapped in`,
    };
  }
  // Named by the digest, it names no document (r110: a changelog piped to `register -`, copied over an artifact).
  return {
    found: all[0]!,
    named: 0,
    notItsName:
      'named by its digest (standard input or --hash), after no document: it may be other bytes registered so',
  };
}

/**
 * When `receipt`'s registration was completed, in ms: as a v1 receipt says,
 * or for a bare record (written before v1, which does not say) when the
 * service created it, its creationDate (r93: such a receipt was never
 * compared). Undefined when neither says.
 */
function registeredMs(receipt: ConsistentReceipt): number | undefined {
  if (receipt.registeredAt !== undefined) return Date.parse(receipt.registeredAt);
  const { creationDate } = JSON.parse(receipt.recordJson) as { creationDate?: unknown };
  return typeof creationDate === 'number' && Number.isSafeInteger(creationDate) ? creationDate : undefined;
}

/**
 * The names of the folders in `dir`, and of the links there, which may lead
 * to one (r93: a receipts folder linked in was passed over); none when `dir`
 * cannot be read: no fuller name is looked for.
 */
async function topFolders(dir: string): Promise<Set<string>> {
  const entries = await readOr(
    () => readdir(dir, { withFileTypes: true }),
    () => [],
  );
  return new Set(entries.filter((entry) => entry.isDirectory() || entry.isSymbolicLink()).map((entry) => entry.name));
}

/** The note on a `modified` finding whose digest has a receipt under another name (`found`). */
function elsewhereNote(found: Finding): string {
  return (
    `${found.receipt!} is a receipt of its digest under another name (receipt names follow the folder register ` +
    'walked: verify from that folder, or check that receipt with --receipt, if this is the same artifact and not an older one)'
  );
}

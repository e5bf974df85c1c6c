/**
 * The receipts and tree manifests a walk of `verify` meets (`verify -r dist`,
 * receipts beside the documents or in a folder under them): notarize's
 * outputs, not documents. Such a file is passed over only when it is one
 * (a receipt that holds together, a manifest with the bytes register wrote:
 * trees.ts exactManifestDigests) and it belongs to the documents checked in the same run:
 *
 * - a receipt, when it was a document's evidence; or when it is at the very
 *   path of the receipt of a document checked here (`<file>.notarization.json`
 *   beside that file; in --receipt-dir, the name register gives it there, or
 *   `<digest>.notarization.json` as register names one without a name) and
 *   is of that document's digest (or that document is not verified: the run
 *   fails on it anyway). One of such a name in any other folder of the walk
 *   is not (`dist/other/app.notarization.json` is no receipt of
 *   `dist/linux/app`). A receipt beside a file left out with --exclude is
 *   not passed over: exclude it too;
 * - a manifest, when its root is that of a document verified here, or of
 *   the proof of a receipt passed over.
 *
 * Anyone can write a file that reads as a receipt (a bare record is any
 * JSON object of the record's shape), and a digest is public: a file planted
 * in a release folder as `postinstall.notarization.json`, passed over on its
 * looks or its digest alone, let the release check exit 0 with it
 * unverified. One that belongs to no document is `unknown`, as any file
 * nothing proves. What a receipt or manifest says in free text (a
 * description, the service's record) is not checked here: only the service
 * confirms a registration (docs/verify-by-hand.md).
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { readReceipt } from '../core/receipt-format.js';
import { readReceiptFile, type Finding } from '../core/evidence.js';
import type { InputItem } from '../core/inputs.js';
import { exactManifestDigests, manifestRoot, TREE_MANIFEST_SUFFIX } from '../core/trees.js';
import { isWriteProbe, RECEIPT_SUFFIX } from '../core/receipts.js';
import { InputFileError, UsageError } from '../errors.js';
import { RealFolders } from '../path-spelling.js';
import { temporaryTarget } from '../store/files.js';

export const INSIDE_RECEIPT_DIR = 'inside_receipt_dir';

/** A receipt or manifest met while walking, held until the documents are checked. */
type Output =
  | { kind: 'receipt'; path: string; inside: boolean; sha256: string; root: string | undefined }
  | { kind: 'manifest'; path: string; inside: boolean; root: string }
  /** In --receipt-dir, what may be the temporary file of a receipt or manifest a stopped run left (`target`). */
  | { kind: 'leftover'; path: string; inside: true; target: string }
  /** In --receipt-dir, what may be the empty file register checks the folder with, left by a run killed then. */
  | { kind: 'probe'; path: string; inside: true };

export class WalkOutputs {
  readonly #held: Output[] = [];
  /** The receipts that were a document's evidence. */
  readonly #evidence = new Set<string>();
  /** The roots documents were verified under. */
  readonly #roots = new Set<string>();
  /** The receipts named as a document's, by real path (#real): the digests each may be of (any: undefined). */
  readonly #named = new Map<string, Set<string> | undefined>();
  /** Each folder's real path, by its path as given. */
  readonly #folders = new RealFolders();

  /**
   * The items of a walk without notarize's outputs, which are held for
   * settle(). Anything else in --receipt-dir (`inReceiptDir`), whatever its
   * name, is a file register passed over: it has no receipt, and verifying
   * it would only say `unknown`; it fails with the way out instead (still
   * not a pass). A walk of outputs alone has no document: a UsageError, as
   * for an empty folder.
   */
  async *documents(
    items: Iterable<InputItem> | AsyncIterable<InputItem>,
    inReceiptDir: ((path: string) => boolean) | undefined,
  ): AsyncGenerator<InputItem> {
    let documents = 0;
    for await (const item of items) {
      const walked = item.kind === 'file' && item.relative !== undefined;
      const inside = item.kind === 'file' && inReceiptDir !== undefined && inReceiptDir(item.path);
      const target = item.kind === 'file' && inside ? leftoverTarget(item.path) : undefined;
      let output: Output | undefined;
      if (item.kind === 'file' && target !== undefined)
        output = { kind: 'leftover', path: item.path, inside: true, target };
      else if (item.kind === 'file' && inside && isWriteProbe(basename(item.path)))
        output = { kind: 'probe', path: item.path, inside: true };
      else if (walked || inside) output = await notarizeOutput(item.path, inside);
      if (output !== undefined) {
        this.#held.push(output);
        continue;
      }
      documents++;
      // Found by a walk, it is a file register passed over, so it has no receipt; named or listed, it
      // is a document like any (receipts kept beside their documents, that folder given as
      // --receipt-dir): checked, as the one document named alone always was.
      yield inside && walked ? insideReceiptDir(item.path) : item;
    }
    if (documents === 0) throw onlyOutputsFound();
  }

  /**
   * Takes what the document `item` of digest `sha256`, found to be
   * `finding`, accounts for. `named` is the receipt looked for first for it
   * (Evidence.namedReceipt: in --receipt-dir under the name register gave
   * it, else beside it), `byDigest` where register puts the receipt of a
   * document of its digest with no name (Evidence.digestReceipt). Exact
   * paths: a file of the same name in another folder is not its receipt.
   */
  checked(
    item: InputItem,
    sha256: string,
    finding: Finding,
    named: string | undefined,
    byDigest: string | undefined,
  ): void {
    if (finding.receipt !== undefined) this.#evidence.add(this.#real(finding.receipt));
    const verified = finding.status === 'verified';
    if (verified && finding.proof) this.#roots.add(finding.proof.root);
    // Beside it too with --receipt-dir, where it is not looked for: not a file nothing proves when of its digest.
    const beside = item.kind === 'file' ? `${item.path}${RECEIPT_SUFFIX}` : undefined;
    for (const path of [named, beside, verified ? byDigest : undefined]) {
      if (path === undefined) continue;
      const key = this.#real(path);
      // Of a document not verified, any receipt there: the run fails on that document anyway.
      if (!verified) this.#named.set(key, undefined);
      else if (!this.#named.has(key) || this.#named.get(key) !== undefined) {
        this.#named.set(key, new Set([...(this.#named.get(key) ?? []), sha256]));
      }
    }
  }

  /** Each output held: passed over (`skip`) when it belongs to a document checked, else `unknown` (`unowned`). */
  settle(skip: (path: string, reason: string) => void, unowned: (path: string, reason: string) => void): void {
    // Receipts first: the roots of their proofs account for manifests.
    const receipts = this.#held.filter((output) => output.kind === 'receipt');
    const roots = new Set(this.#roots);
    const owned = new Set<Output>();
    for (const receipt of receipts) {
      if (!this.#ownsReceipt(receipt)) continue;
      owned.add(receipt);
      if (receipt.root !== undefined) roots.add(receipt.root);
    }
    // The receipts and manifests passed over, by absolute path (however the walk spelt it): what a
    // leftover may be a piece of.
    const passed = new Set<string>();
    for (const output of this.#held) {
      if (output.kind === 'leftover' || output.kind === 'probe') continue;
      const where = output.inside ? 'inside --receipt-dir: ' : '';
      if (output.kind === 'receipt' ? owned.has(output) : roots.has(output.root)) {
        passed.add(resolve(output.path));
        skip(
          output.path,
          `${where}${output.kind === 'receipt' ? 'a receipt' : 'a tree manifest'} of a document checked (not a document)`,
        );
      } else {
        unowned(output.path, unownedReason(output));
      }
    }
    for (const output of this.#held) {
      if (output.kind === 'probe') {
        // Anyone can give a file such a name: only an empty one holds nothing to prove.
        if (isEmptyFile(output.path)) skip(output.path, `inside --receipt-dir: ${PROBE_REASON}`);
        else unowned(output.path, PROBE_UNOWNED_REASON);
      }
      if (output.kind !== 'leftover') continue;
      // Only a piece of a receipt or manifest passed over: anyone can give a file such a name.
      const of = resolve(dirname(output.path), output.target);
      if (passed.has(of) && isPrefixOf(output.path, of)) skip(output.path, `inside --receipt-dir: ${LEFTOVER_REASON}`);
      else unowned(output.path, LEFTOVER_UNOWNED_REASON);
    }
  }

  /**
   * `path` in its folder's real path: one receipt whether reached through a
   * link to a folder or not (--receipt-dir named through a link to the
   * folder walked). The file itself is not followed: a walk meets no link's
   * target.
   */
  #real(path: string): string {
    return this.#folders.of(path);
  }

  /**
   * Whether a receipt met belongs to a document checked: it was its evidence,
   * or it is at the very path named as its receipt (checked()) and of its
   * digest. Not one of the same name in another folder of the walk, nor one
   * beside a file left out (--exclude it too), nor beside another receipt
   * (`x.notarization.json.notarization.json`).
   */
  #ownsReceipt(receipt: Extract<Output, { kind: 'receipt' }>): boolean {
    const path = this.#real(receipt.path);
    if (this.#evidence.has(path)) return true;
    if (!this.#named.has(path)) return false;
    const digests = this.#named.get(path);
    return digests === undefined || digests.has(receipt.sha256);
  }
}

/**
 * What `path` is when it is a receipt that holds together (readReceipt) or a
 * tree manifest as notarize writes it (trees.ts exactManifestDigests); undefined when it is neither,
 * so a document. Outside --receipt-dir only files named as register names
 * them (`*.notarization.json`, `<root>.tree.json`) are read as such; inside
 * it, a receipt must be so named too: another JSON file there that reads as
 * a bare record is a file register passed over.
 */
async function notarizeOutput(path: string, inside: boolean): Promise<Output | undefined> {
  try {
    const name = basename(path);
    const root = manifestRoot(name);
    if (root !== undefined) {
      return exactManifestDigests(path, root) === undefined ? undefined : { kind: 'manifest', path, inside, root };
    }
    if (!name.endsWith(RECEIPT_SUFFIX)) return undefined;
    const text = await readReceiptFile(path);
    if (text === undefined) return undefined;
    const receipt = readReceipt(text);
    if (!receipt.consistent) return undefined;
    return { kind: 'receipt', path, inside, sha256: receipt.sha256, root: receipt.proof?.root };
  } catch {
    return undefined;
  }
}

/**
 * Whether `path`, met by a walk, is a receipt or a tree manifest (notarizeOutput): register
 * passes such a file over as verify does (r97: it registered, and paid for, what verify never
 * checks as a document).
 */
export async function outputKind(path: string): Promise<'receipt' | 'manifest' | undefined> {
  return (await notarizeOutput(path, false))?.kind as 'receipt' | 'manifest' | undefined;
}

const LEFTOVER_REASON =
  'the temporary file of a receipt or tree manifest passed over here, left by a run stopped before it renamed it ' +
  '(it holds the start of that file; not a document; it can be removed)';
const LEFTOVER_UNOWNED_REASON =
  'inside --receipt-dir, named as a temporary file of a receipt or tree manifest, but it holds no start of one ' +
  'passed over here: nothing checked here proves this file (remove it)';

const PROBE_REASON =
  'the empty file register makes to check that the folder takes files, left by a run killed at that moment (not a document; it can be removed)';
const PROBE_UNOWNED_REASON =
  'inside --receipt-dir, named as the empty file register checks the folder with, but not empty: nothing checked here proves this file (remove it)';

/** Whether `path` is an empty regular file (never followed, never opened: its size is all that is asked). */
function isEmptyFile(path: string): boolean {
  const info = lstatSync(path, { throwIfNoEntry: false });
  return info !== undefined && info.isFile() && info.size === 0;
}

/** The receipt or manifest `path` is named as the temporary file of (writeFileAtomic's), if it is. */
function leftoverTarget(path: string): string | undefined {
  const target = temporaryTarget(basename(path));
  return target !== undefined && (target.endsWith(RECEIPT_SUFFIX) || target.endsWith(TREE_MANIFEST_SUFFIX))
    ? target
    : undefined;
}

/**
 * Whether the bytes of the file `piece` are the first bytes of the file
 * `whole` (a receipt or manifest read whole already). `piece` is read only
 * if it is a regular file no larger than `whole`: a file planted under such
 * a name may be anything (a FIFO, gigabytes), never waited on or held.
 */
function isPrefixOf(piece: string, whole: string): boolean {
  let fd: number | undefined;
  try {
    const all = readFileSync(whole);
    fd = openSync(piece, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
    const info = fstatSync(fd);
    if (!info.isFile() || info.size > all.length) return false;
    const start = Buffer.alloc(info.size);
    for (let read = 0; read < start.length;) {
      const n = readSync(fd, start, read, start.length - read, read);
      if (n === 0) return false; // Shorter than it said: changing under us.
      read += n;
    }
    return all.subarray(0, start.length).equals(start);
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The failed item of a file inside --receipt-dir that is no receipt (see WalkOutputs.documents). */
function insideReceiptDir(path: string): InputItem {
  const reason = 'inside --receipt-dir, and no receipt: register passes such a file over, so it has none';
  return {
    kind: 'unusable',
    path,
    error: new InputFileError(path, reason, {
      code: INSIDE_RECEIPT_DIR,
      message: `${path} is ${reason}`,
      hint: 'move it out of --receipt-dir, or leave it out with --exclude',
    }),
  };
}

/** Why a receipt or manifest that belongs to no document checked is `unknown`. */
function unownedReason(output: Exclude<Output, { kind: 'leftover' | 'probe' }>): string {
  if (output.kind === 'manifest') {
    return `the manifest of root ${output.root}, under which no document was verified here: nothing checked here proves this file (leave it out of the files checked if it is not shipped)`;
  }
  return (
    `a receipt of ${output.sha256}, named as the receipt of no document checked here and the evidence of none: ` +
    'nothing checked here proves this file (a folder of receipts counts only as --receipt-dir; else leave it out of the files checked if it is not shipped)'
  );
}

/**
 * A walk that found notarize's outputs and no document (register and verify alike): exit 2. Not
 * "every file found is a receipt": the walk may have passed over links or FIFOs besides (r100).
 */
export function onlyOutputsFound(): UsageError {
  return new UsageError('no documents: the walk found receipts or tree manifests, and no document beside them', {
    code: 'no_documents',
    hint: 'name the documents, or the folders that hold them',
  });
}

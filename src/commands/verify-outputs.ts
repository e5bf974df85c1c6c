/**
 * The receipts and tree manifests a walk of `verify` meets (`verify -r dist`,
 * receipts beside the documents or in a folder under them): notarize's
 * outputs, not documents. Such a file is passed over only when it is one
 * (a receipt that holds together, a manifest byte for byte as register
 * writes it) and it belongs to the documents checked in the same run:
 *
 * - a receipt, when it was a document's evidence; or when it is named as
 *   the receipt of a document checked here (`<file>.notarization.json`
 *   beside that file, under the name register gives it in a folder of
 *   receipts, or `<digest>.notarization.json` for one without a name) and is
 *   of that document's digest (or that document is not verified: the run
 *   fails on it anyway). A receipt beside a file left out with --exclude is
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
import { basename, resolve, sep } from 'node:path';
import { readReceipt } from '../core/receipt-format.js';
import { readReceiptFile, type Finding } from '../core/evidence.js';
import type { InputItem } from '../core/inputs.js';
import { exactManifestDigests, manifestRoot } from '../core/trees.js';
import { RECEIPT_SUFFIX } from '../core/receipts.js';
import { InputFileError, UsageError } from '../errors.js';

export const INSIDE_RECEIPT_DIR = 'inside_receipt_dir';

/** A receipt or manifest met while walking, held until the documents are checked. */
type Output =
  | { kind: 'receipt'; path: string; inside: boolean; sha256: string; root: string | undefined }
  | { kind: 'manifest'; path: string; inside: boolean; root: string };

export class WalkOutputs {
  readonly #held: Output[] = [];
  /** The receipts that were a document's evidence. */
  readonly #evidence = new Set<string>();
  /** The roots documents were verified under. */
  readonly #roots = new Set<string>();
  /** By receipt name (`<name>.notarization.json`, a name as register gives): the digests it may be of (any: undefined). */
  readonly #named = new Map<string, Set<string> | undefined>();
  /** The documents checked, by resolved path: the digest a receipt beside one must be of (any: undefined). */
  readonly #files = new Map<string, string | undefined>();
  /** The digests of the documents verified: a receipt named by its digest (stdin, --hash) may be of one. */
  readonly #digests = new Set<string>();

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
      const output = walked || inside ? await notarizeOutput(item.path, inside) : undefined;
      if (output !== undefined) {
        this.#held.push(output);
        continue;
      }
      documents++;
      yield inside ? insideReceiptDir(item.path) : item;
    }
    if (documents === 0) {
      throw new UsageError('no documents: every file found is a receipt or a tree manifest', {
        code: 'no_documents',
        hint: 'name the documents, or the folders that hold them',
      });
    }
  }

  /** Takes what the document `item` of digest `sha256`, found to be `finding`, accounts for. */
  checked(item: InputItem, sha256: string, finding: Finding): void {
    if (finding.receipt !== undefined) this.#evidence.add(resolve(finding.receipt));
    if (finding.status === 'verified' && finding.proof) this.#roots.add(finding.proof.root);
    if (finding.status === 'verified') this.#digests.add(sha256);
    if (item.kind !== 'file') return;
    this.#files.set(resolve(item.path), finding.status === 'verified' ? sha256 : undefined);
    for (const name of new Set([basename(item.path), ...(item.relative === undefined ? [] : [item.relative])])) {
      const key = `${name}${RECEIPT_SUFFIX}`;
      if (finding.status !== 'verified') this.#named.set(key, undefined);
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
    for (const output of this.#held) {
      const where = output.inside ? 'inside --receipt-dir: ' : '';
      if (output.kind === 'receipt' ? owned.has(output) : roots.has(output.root)) {
        skip(
          output.path,
          `${where}${output.kind === 'receipt' ? 'a receipt' : 'a tree manifest'} of a document checked (not a document)`,
        );
      } else {
        unowned(output.path, unownedReason(output));
      }
    }
  }

  #ownsReceipt(receipt: Extract<Output, { kind: 'receipt' }>): boolean {
    if (this.#evidence.has(resolve(receipt.path))) return true;
    // Of a document with no name (stdin, --hash), named by its digest as register names it.
    if (basename(receipt.path) === `${receipt.sha256}${RECEIPT_SUFFIX}` && this.#digests.has(receipt.sha256))
      return true;
    // Beside the document checked that it is named after, and of its digest. Not beside a
    // file left out (--exclude it too), nor beside another receipt (`x.notarization.json.notarization.json`).
    const beside = resolve(receipt.path.slice(0, -RECEIPT_SUFFIX.length));
    if (this.#files.has(beside)) {
      const sha256 = this.#files.get(beside);
      if (sha256 === undefined || sha256 === receipt.sha256) return true;
    }
    // In a folder of receipts, under the name register gives a document checked here (its base
    // name, or its path below the folder walked), and of its digest: each tail of the path looked up.
    const parts = receipt.path.split(sep);
    for (let from = parts.length - 1; from >= 0; from--) {
      const key = parts.slice(from).join('/');
      if (!this.#named.has(key)) continue;
      const digests = this.#named.get(key);
      if (digests === undefined || digests.has(receipt.sha256)) return true;
    }
    return false;
  }
}

/**
 * What `path` is when it is a receipt that holds together (readReceipt) or a
 * tree manifest exactly as notarize writes it; undefined when it is neither,
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
function unownedReason(output: Output): string {
  const what =
    output.kind === 'receipt'
      ? `a receipt of ${output.sha256}, named as the receipt of no document checked here and the evidence of none`
      : `the manifest of root ${output.root}, under which no document was verified here`;
  return `${what}: a file nothing proves (leave it out with --exclude if it is not shipped)`;
}

/**
 * The receipts and tree manifests a walk of `verify` meets (`verify -r dist`,
 * receipts beside the documents or in a folder under them): notarize's
 * outputs, not documents. Such a file is passed over only when it is one
 * (a receipt that holds together, a manifest byte for byte as register
 * writes it) and the documents checked in the same run account for it:
 *
 * - a receipt, when it was the evidence of a document, or is of the digest
 *   of one;
 * - a manifest, when a document was verified under its root, or it lists
 *   the digest of one.
 *
 * Anyone can write a file that reads as a receipt: a bare record is any JSON
 * object with a 64-hex `hash`, a manifest's description is free text. Passed
 * over on its looks alone, such a file planted in a release folder let the
 * release check exit 0 with it unverified. One that nothing accounts for
 * fails instead, as a file that cannot be checked.
 */
import { basename, resolve } from 'node:path';
import { readReceipt } from '../core/receipt-format.js';
import { readReceiptFile, type Finding } from '../core/evidence.js';
import type { InputItem } from '../core/inputs.js';
import { exactManifestDigests, manifestRoot } from '../core/trees.js';
import { RECEIPT_SUFFIX } from '../core/receipts.js';
import { InputFileError, UsageError } from '../errors.js';

export const INSIDE_RECEIPT_DIR = 'inside_receipt_dir';

/** A receipt or manifest met while walking, held until the documents are checked. */
type Output =
  | { kind: 'receipt'; path: string; inside: boolean; sha256: string }
  | { kind: 'manifest'; path: string; inside: boolean; root: string };

export class WalkOutputs {
  readonly #held: Output[] = [];
  /** What the documents checked account for: their digests, the roots they are under, the receipts read. */
  readonly #digests = new Set<string>();
  readonly #roots = new Set<string>();
  readonly #receipts = new Set<string>();

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

  /** Takes what a checked document accounts for. */
  checked(sha256: string, finding: Finding): void {
    this.#digests.add(sha256);
    if (finding.proof) this.#roots.add(finding.proof.root);
    if (finding.receipt !== undefined) this.#receipts.add(resolve(finding.receipt));
  }

  /** Each output held: passed over (`skip`) when accounted for, else failed (`fail`). */
  settle(skip: (path: string, reason: string) => void, fail: (path: string, error: InputFileError) => void): void {
    for (const output of this.#held) {
      if (this.#accounts(output)) {
        const what = output.kind === 'receipt' ? 'a receipt' : 'a tree manifest';
        skip(
          output.path,
          `${output.inside ? 'inside --receipt-dir: ' : ''}${what} of a document checked (not a document)`,
        );
      } else {
        fail(output.path, unaccounted(output));
      }
    }
  }

  #accounts(output: Output): boolean {
    if (output.kind === 'receipt') return this.#receipts.has(resolve(output.path)) || this.#digests.has(output.sha256);
    if (this.#roots.has(output.root)) return true;
    // Read again rather than held: a manifest of 100,000 leaves is 20 MB of text.
    return (exactManifestDigests(output.path, output.root) ?? []).some((sha256) => this.#digests.has(sha256));
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
    return receipt.consistent ? { kind: 'receipt', path, inside, sha256: receipt.sha256 } : undefined;
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

/** The error of a receipt or manifest that no document of the run accounts for. */
function unaccounted(output: Output): InputFileError {
  const reason =
    output.kind === 'receipt'
      ? `a receipt of ${output.sha256}, which is no document checked here`
      : `the manifest of root ${output.root}, under which no document checked here is`;
  return new InputFileError(output.path, reason, {
    code: 'output_unaccounted',
    message: `${output.path} is ${reason}: it is not passed over unchecked`,
    hint: 'verify it along with its documents, or leave it out with --exclude if it is not shipped',
  });
}

/**
 * Writing a tree's manifest, `<root>.tree.json`, into --receipt-dir: by
 * `register --aggregate` (register-aggregate.ts) for the roots it registers,
 * and by per-document `register` when it completes a pending root
 * (register.ts). What a manifest is for: core/manifests.ts.
 */
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ReceiptPlan } from '../core/receipts.js';
import { redactedReceiptWarning } from '../core/receipt-format.js';
import { manifestName, treeManifestText, type LoadedTree } from '../core/trees.js';
import { EXIT, NotarizeError, UsageError } from '../errors.js';
import { diskRefused } from '../store/disk.js';
import { writeFileAtomic } from '../store/files.js';

/** Where the manifest of `root` goes (--receipt-dir). */
export function manifestPath(plan: ReceiptPlan, root: string): string {
  return join(plan.dir, manifestName(root));
}

/**
 * Before anything is sent: the manifest of `root` must be free, or a
 * regular file (replaced); a link or a folder there is refused (exit 2),
 * as for receipts.
 */
export async function checkManifestPath(plan: ReceiptPlan, root: string): Promise<void> {
  const path = manifestPath(plan, root);
  const info = await lstat(path).catch(() => undefined);
  if (info && !info.isFile()) {
    throw new UsageError(`the tree manifest ${path} exists and is not a regular file`, {
      code: 'receipt_exists',
      hint: 'remove it and run again, or choose another --receipt-dir',
    });
  }
}

/** What a manifest is written with: the run's secrets to scrub from it (IO.redact), and where to say it was. */
export interface ManifestOutput {
  redact(text: string): string;
  warn(text: string): void;
}

/**
 * Writes `<root>.tree.json` of `tree` in --receipt-dir (replacing a regular
 * file there, never a link). A manifest travels like the receipts (0644, an
 * artifact): a secret in a document's name is written as `[redacted]`,
 * with a warning (a description holding one is refused before anything is
 * sent). Names are no part of the tree's hashes, so the manifest still makes
 * the same root and every proof; the store's tree file keeps them as they were.
 */
export async function writeManifest(plan: ReceiptPlan, tree: LoadedTree, output: ManifestOutput): Promise<void> {
  const { entry } = tree;
  const leaves = entry.leaves.map((leaf) => {
    const name = leaf.name === null ? null : output.redact(leaf.name);
    return name === leaf.name ? leaf : { ...leaf, name };
  });
  const redacted = leaves.some((leaf, i) => leaf !== entry.leaves[i]);
  const path = manifestPath(plan, entry.root);
  await writeFileAtomic(path, treeManifestText(redacted ? { ...entry, leaves } : entry), {
    mode: 0o666,
    replace: true,
    flushes: plan.flushes,
  });
  if (redacted) output.warn(redactedReceiptWarning(`the tree manifest ${path}`));
}

/**
 * Writes the manifest of `tree` before its root's completion (forfait, the
 * paid step) is sent, once its session is saved: a run on another store
 * (a CI re-run on a fresh runner) then finds it and asks about the root
 * (core/manifests.ts) rather than paying for a new one, even when this
 * run never learnt how its completion ended (its answer lost, the run
 * killed). Not earlier: a run that fails before (its request step
 * refused, the network down) leaves no manifest of a root the service
 * does not have, which later runs would ask about for nothing. A root
 * left pending (--no-complete) gets its manifest after an aggregate run:
 * `complete <root>` may pay for it later, and writes none. One that cannot
 * be written stops the root there, its session kept pending, nothing paid.
 */
export async function writeManifestFirst(plan: ReceiptPlan, tree: LoadedTree, output: ManifestOutput): Promise<void> {
  try {
    await writeManifest(plan, tree, output);
  } catch (error) {
    const done = 'its request step was sent, nothing was paid for: its session is kept pending';
    throw (
      diskRefused(error, plan.dir, done, 'choose another --receipt-dir') ??
      manifestNotWritten(
        plan,
        tree.entry.root,
        error,
        `${done}; check that --receipt-dir is a folder you can write to, then run the same command again`,
      )
    );
  }
}

/** The error (exit 1: its root was requested) of a manifest that could not be written; `hint` says where that leaves it. */
export function manifestNotWritten(plan: ReceiptPlan, root: string, error: unknown, hint: string): NotarizeError {
  return new NotarizeError(
    'receipt_write',
    EXIT.failed,
    `the tree manifest ${manifestPath(plan, root)} could not be written: ${(error as Error).message}`,
    { hint, cause: error },
  );
}

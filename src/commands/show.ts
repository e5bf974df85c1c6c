/** `notarize show <hash|file>`: one record from the local ledger. */
import type { Command } from 'commander';
import { notInLedger, recordOf } from '../core/trees.js';
import type { Context } from '../context.js';
import { hashOneFile, isDigestNotFile, normalizeHash } from '../core/hash.js';
import type { RecordResult } from '../output/present.js';
import type { ServiceStore } from '../store/service-store.js';
import { finish, viewOf } from './action.js';
import { examples } from './options.js';

/** What `show` uses: the digest or file named, and the ledger. */
export interface ShowOptions {
  target: string;
  baseUrl: () => string;
  serviceStore: () => ServiceStore;
}

export function configure(command: Command, context: () => Context): void {
  command
    .argument('<hash|file>', 'a SHA-256 digest, or a file to hash')
    .addHelpText(
      'after',
      `\nReads the local ledger only (no network). Exit 6 when the document is not in it.
${examples([
  'notarize show contract.pdf',
  'notarize show 905d4f33b218427e8371341674a913db02402f648fef6cdf47c16f65d2dd3001 --json',
  '# CI: keep the record of the release tarball as a build output',
  'notarize show dist/app.tar.gz --json > record.json',
])}`,
    )
    .action(async (target: string) => {
      const ctx = context();
      await finish(
        await viewOf(ctx),
        await runShow({ target, baseUrl: () => ctx.baseUrl, serviceStore: () => ctx.serviceStore }),
      );
    });
}

/** The record of a digest, or of a file's; a digest is taken as such unless a file of that name exists. */
export async function runShow(options: ShowOptions): Promise<RecordResult> {
  const { target } = options;
  const baseUrl = options.baseUrl();
  const hash = (await isDigestNotFile(target)) ? normalizeHash(target) : (await hashOneFile(target)).hash;
  const held = await recordOf(options.serviceStore(), hash);
  if (!held) {
    throw await notInLedger(
      options.serviceStore(),
      hash,
      baseUrl,
      '`notarize list` shows what is; `notarize pending` what awaits completion',
    );
  }
  if (!held.underRoot) return { kind: 'record', hash, recordJson: held.entry.recordJson, baseUrl };
  // Registered under a Merkle root (register --aggregate): the root's record is the document's.
  const { proof } = held.underRoot;
  return {
    kind: 'record',
    hash: proof.root,
    recordJson: held.entry.recordJson,
    baseUrl,
    note: `${hash} is leaf ${proof.leafIndex} of ${proof.treeSize} under the registered Merkle root ${proof.root}; \`notarize receipt ${hash}\` gives its proof`,
  };
}

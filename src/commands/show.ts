/** `notarize show <hash|file>`: one record from the local ledger. */
import type { Command } from 'commander';
import { stat } from 'node:fs/promises';
import type { Context } from '../context.js';
import { hashFile, normalizeHash } from '../core/hash.js';
import { NotNotarizedError } from '../errors.js';
import { showRecord } from '../output/outcome.js';
import { examples } from './options.js';

export function configure(command: Command, context: () => Context): void {
  command
    .argument('<hash|file>', 'a SHA-256 digest, or a file to hash')
    .addHelpText(
      'after',
      `\nReads the local ledger only (no network). Exit 6 when the document is not in it.
${examples([
  'notarize show contract.pdf',
  'notarize show 905d4f33b218427e8371341674a913db02402f648fef6cdf47c16f65d2dd3001 --json',
  '# CI: attach the record of the release tarball',
  'notarize show dist/app.tar.gz --json > dist/app.tar.gz.notarization.json',
])}`,
    )
    .action(async (target: string) => {
      await runShow(context(), target);
    });
}

async function isFile(path: string): Promise<boolean> {
  return stat(path).then(
    (info) => info.isFile(),
    () => false,
  );
}

/** A digest is taken as such unless a file of that name exists. */
export async function runShow(ctx: Context, target: string): Promise<void> {
  const baseUrl = ctx.baseUrl;
  const hash =
    /^[0-9a-fA-F]{64}$/.test(target) && !(await isFile(target)) ? normalizeHash(target) : (await hashFile(target)).hash;
  const entry = ctx.ledger.readRecord(hash);
  if (!entry) {
    throw new NotNotarizedError(`${hash} is not in the ledger of ${baseUrl}`, {
      hint: '`notarize list` shows what is; `notarize pending` what awaits completion',
    });
  }
  showRecord(ctx.io, entry.recordJson, hash, { json: ctx.globals.json ?? false, baseUrl });
}

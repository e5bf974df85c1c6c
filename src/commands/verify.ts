/**
 * `notarize verify <file...>`: re-hash documents and look the digests up in
 * the local ledger, with no network at all. Exit 6 when a document is
 * unknown or was modified since it was notarized.
 */
import type { Command } from 'commander';
import { basename } from 'node:path';
import { z } from 'zod';
import type { Context } from '../context.js';
import { runAll, type Settled } from '../core/batch.js';
import { hashStream } from '../core/hash.js';
import { HashPool } from '../core/hash-pool.js';
import { expandInputs, itemName, type InputItem } from '../core/inputs.js';
import { LedgerIndex, type Verdict } from '../core/ledger.js';
import { NotNotarizedError, UsageError, type NotarizeError } from '../errors.js';
import { reportToGitHub } from '../output/github.js';
import { showRecord } from '../output/outcome.js';
import {
  compact,
  failedResult,
  itemResult,
  proofOf,
  renderResults,
  skippedResult,
  summarize,
  type ItemResult,
} from '../output/results.js';
import { addInputOptions, inputOptionsShape, toInputOptions } from './input-options.js';
import { examples, parseOptions } from './options.js';

const optionsSchema = z.object({ ...inputOptionsShape });

export function configure(command: Command, context: () => Context): void {
  addInputOptions(command.argument('[paths...]', "documents to check ('-' reads standard input)"))
    .addHelpText(
      'after',
      `\nNo network: the digest is looked up in the local ledger of the current service.
verified: the digest is in the ledger (the record and its public verification page are printed);
modified: a document of this name was notarized with another digest; unknown: not in the ledger.
A document that cannot be read (missing, unreadable, not a regular file) is a failed
result and the others go on. Exit 0 when every document is verified; 2 when one could not
be read (nothing is ever sent); else 6.
${examples([
  'notarize verify contract.pdf',
  'notarize verify -r dist --json',
  '# CI: before release, refuse artifacts that were not notarized at build time',
  'notarize verify -r dist --quiet || { echo "unnotarized artifacts"; exit 1; }',
])}`,
    )
    .action(async (paths: string[], raw: unknown) => {
      await runVerify(context(), paths, parseOptions(optionsSchema, raw, command));
    });
}

function describeVerdict(verdict: Verdict): string | undefined {
  if (verdict.status === 'unknown')
    return verdict.damaged && `its ledger entry is no proof: ${verdict.damaged.message}`;
  if (verdict.status !== 'modified') return undefined;
  return `'${verdict.entry.file?.name}' was notarized with digest ${verdict.entry.hash} (${verdict.entry.completedAt})`;
}

/** Verifies every input against the ledger; see the module comment. */
export async function runVerify(ctx: Context, paths: string[], options: z.infer<typeof optionsSchema>): Promise<void> {
  const skipped: ItemResult[] = [];
  const expansion = await expandInputs(paths, toInputOptions(options), ctx.io.stdin, (s) => {
    ctx.io.warn(`skipped ${s.path}: ${s.reason}`);
    skipped.push(skippedResult(s.path, s.reason));
  });
  const baseUrl = ctx.baseUrl;
  const { index, problems } = await LedgerIndex.load(ctx.ledger);
  for (const problem of problems) ctx.io.warn(`${problem.message}; ${problem.hint ?? ''}`);
  const pool = new HashPool(expansion.single ? 1 : undefined);
  const json = ctx.globals.json ?? false;
  // Held for the final table or array, in input order; for the table without the records.
  const checked: ItemResult[] = [];
  let only: { hash: string; verdict: Verdict } | undefined;
  let singleError: NotarizeError | undefined;
  try {
    await runAll(
      expansion.items,
      async (item) => {
        if (item.kind === 'unusable') throw item.error;
        // HashPool.hash already hashes in this thread for a pool of one.
        const hash = item.kind === 'stdin' ? await hashStream(ctx.io.stdin) : (await pool.hash(item.path)).hash;
        return { hash, verdict: index.verdict(hash, item.kind === 'file' ? basename(item.path) : undefined) };
      },
      {
        concurrency: pool.size * 4,
        onSettled: (i, r, item) => {
          if (expansion.single) {
            if (r.ok) only = r.value;
            else if ('error' in r) singleError = r.error;
          }
          const result = toResult(item, r, baseUrl);
          checked[i] = json ? result : compact(result);
        },
      },
    );
  } finally {
    await pool.close();
  }
  // One document named alone that cannot be read: the command's one-line error, as for any usage error.
  if (singleError) throw singleError;
  const results = [...checked, ...skipped];
  if (expansion.single && only?.verdict.status === 'verified') {
    reportToGitHub(ctx.io, ctx.env, 'notarize verify', results);
    ctx.io.info(`verified: ${results[0]!.file} is notarized`);
    showRecord(ctx.io, only.verdict.entry.recordJson, only.hash, { json, baseUrl });
    return;
  }
  if (json) ctx.io.dataJsonArray(results);
  else ctx.io.data(renderResults(results, ctx.io.colour));
  ctx.io.info(summarize(results));
  reportToGitHub(ctx.io, ctx.env, 'notarize verify', results);
  // Nothing is ever sent by verify, so a document that cannot be read is exit 2 (it comes before 6).
  const unreadable = checked.filter((r) => r.status === 'failed');
  if (unreadable.length > 0) {
    throw new UsageError(
      `${unreadable.length} of ${checked.length} document${checked.length === 1 ? '' : 's'} could not be read`,
      { code: 'batch_failed' },
    );
  }
  const bad = checked.filter((r) => r.status !== 'verified');
  if (bad.length > 0) {
    throw new NotNotarizedError(
      `${bad.length} of ${checked.length} document${checked.length === 1 ? ' is' : 's are'} not notarized in the ledger of ${baseUrl}`,
      {
        hint:
          'register them with `notarize register`, or check --base-url; a document the service already had ' +
          '(409) has no record in this store: verify with the store that registered it',
      },
    );
  }
}

/** The JSON result of one document. */
function toResult(item: InputItem, r: Settled<{ hash: string; verdict: Verdict }>, baseUrl: string): ItemResult {
  const file = itemName(item);
  if (!r.ok) return 'error' in r ? failedResult(file, null, r.error) : itemResult(file, null, 'failed');
  const { hash, verdict } = r.value;
  const reason = describeVerdict(verdict);
  return itemResult(file, hash, verdict.status, {
    ...(verdict.status === 'verified' ? proofOf(baseUrl, hash, verdict.entry.recordJson) : {}),
    ...(reason ? { reason } : {}),
  });
}

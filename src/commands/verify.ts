/**
 * `notarize verify <file...>`: re-hash documents and look the digests up in
 * the local ledger, with no network at all. Exit 6 when a document is
 * unknown or was modified since it was notarized.
 */
import type { Command } from 'commander';
import { basename } from 'node:path';
import { z } from 'zod';
import type { Context } from '../context.js';
import { runAll } from '../core/batch.js';
import { hashStream } from '../core/hash.js';
import { HashPool } from '../core/hash-pool.js';
import { expandInputs, type InputItem } from '../core/inputs.js';
import { LedgerIndex, type Verdict } from '../core/ledger.js';
import { NotNotarizedError, UsageError } from '../errors.js';
import { reportToGitHub } from '../output/github.js';
import { showRecord } from '../output/outcome.js';
import { verificationUrl } from '../output/render.js';
import { embed, errorJson, renderResults, skippedResult, summarize, type ItemResult } from '../output/results.js';
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
Exit 0 when every document is verified, 6 otherwise (2 for unreadable input).
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
  if (verdict.status !== 'modified') return undefined;
  return `'${verdict.entry.file?.name}' was notarized with digest ${verdict.entry.hash} (${verdict.entry.completedAt})`;
}

/** Verifies every input against the ledger; see the module comment. */
export async function runVerify(ctx: Context, paths: string[], options: z.infer<typeof optionsSchema>): Promise<void> {
  const expansion = await expandInputs(paths, toInputOptions(options), ctx.io.stdin);
  for (const s of expansion.skipped) ctx.io.warn(`skipped ${s.path}: ${s.reason}`);
  const baseUrl = ctx.baseUrl;
  const { index, problems } = await LedgerIndex.load(ctx.ledger);
  for (const problem of problems) ctx.io.warn(`${problem.message}; ${problem.hint ?? ''}`);
  const items = expansion.items;
  const pool = new HashPool(items.length > 1 ? undefined : 1);
  const name = (item: InputItem) => (item.kind === 'stdin' ? '-' : item.path);
  let settled;
  try {
    settled = await runAll(
      items,
      async (item) => {
        // HashPool.hash already hashes in this thread for a pool of one.
        const hash = item.kind === 'stdin' ? await hashStream(ctx.io.stdin) : await pool.hash(item.path);
        return { hash, verdict: index.verdict(hash, item.kind === 'file' ? basename(item.path) : undefined) };
      },
      { concurrency: pool.size * 4 },
    );
  } finally {
    await pool.close();
  }
  const skipped = expansion.skipped.map((s) => skippedResult(s.path, s.reason));
  const checked: ItemResult[] = settled.map((r, i) => {
    const file = name(items[i]!);
    if (!r.ok)
      return {
        schemaVersion: 1,
        file,
        hash: null,
        status: 'failed',
        ...('error' in r ? { error: errorJson(r.error) } : {}),
      };
    const { hash, verdict } = r.value;
    const reason = describeVerdict(verdict);
    return {
      schemaVersion: 1,
      file,
      hash,
      status: verdict.status,
      ...(verdict.status === 'verified'
        ? { record: embed(verdict.entry.recordJson), verificationUrl: verificationUrl(baseUrl, hash) }
        : {}),
      ...(reason ? { reason } : {}),
    };
  });
  const results = [...checked, ...skipped];
  if (expansion.single && results[0]?.status === 'verified') {
    const only = settled[0];
    if (only?.ok && only.value.verdict.status === 'verified') {
      reportToGitHub(ctx.io, ctx.env, 'notarize verify', results);
      ctx.io.info(`verified: ${results[0].file} is notarized`);
      showRecord(ctx.io, only.value.verdict.entry.recordJson, only.value.hash, {
        json: ctx.globals.json ?? false,
        baseUrl,
      });
      return;
    }
  }
  if (ctx.globals.json) ctx.io.dataJsonArray(results);
  else ctx.io.data(renderResults(results, ctx.io.colour));
  ctx.io.info(summarize(results));
  reportToGitHub(ctx.io, ctx.env, 'notarize verify', results);
  const unreadable = results.find((r) => r.status === 'failed');
  if (unreadable) throw new UsageError(unreadable.error?.message ?? 'a document could not be read');
  const bad = checked.filter((r) => r.status !== 'verified');
  if (bad.length > 0) {
    throw new NotNotarizedError(
      `${bad.length} of ${checked.length} document${checked.length === 1 ? ' is' : 's are'} not notarized in the ledger of ${baseUrl}`,
      { hint: 'register them with `notarize register`, or check --base-url' },
    );
  }
}

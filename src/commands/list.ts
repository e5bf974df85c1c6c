/** `notarize list`: the local ledger of completed notarizations of the current service. */
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { verificationUrl } from '../api/pages.js';
import { renderTable } from '../output/render.js';
import { embed } from '../output/results.js';
import { examples } from './options.js';

export function configure(command: Command, context: () => Context): void {
  command
    .addHelpText(
      'after',
      `\nReads the local ledger only (no network). --json: an array of
{"hash","file","completedAt","verificationUrl","record"}, oldest first.
${examples(['notarize list', '# CI: keep the ledger as a build artifact', 'notarize list --json > notarizations.json'])}`,
    )
    .action(async () => {
      await runList(context());
    });
}

function describe(record: unknown): string {
  const description = (record as { description?: unknown } | null)?.description;
  return typeof description === 'string' ? description : '';
}

export async function runList(ctx: Context): Promise<void> {
  const baseUrl = ctx.baseUrl;
  const { entries, problems } = await ctx.ledger.listRecords();
  for (const problem of problems) ctx.io.warn(`${problem.message}; ${problem.hint ?? ''}`);
  entries.sort((a, b) => (a.completedAt < b.completedAt ? -1 : a.completedAt > b.completedAt ? 1 : 0));
  const rows = entries.map((e) => ({
    hash: e.hash,
    file: e.file?.name ?? null,
    completedAt: e.completedAt,
    verificationUrl: verificationUrl(baseUrl, e.hash),
    record: embed(e.recordJson),
  }));
  if (ctx.globals.json) {
    ctx.io.dataJsonArray(rows);
    return;
  }
  if (rows.length === 0) {
    ctx.io.info(`the ledger of ${baseUrl} is empty`);
    return;
  }
  ctx.io.data(
    renderTable(
      ['HASH', 'COMPLETED', 'FILE', 'DESCRIPTION'],
      rows.map((r) => [r.hash, r.completedAt, r.file ?? '-', describe(r.record)]),
      ctx.io.colour,
    ),
  );
}

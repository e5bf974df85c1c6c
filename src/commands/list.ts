/** `notarize list`: the local ledger of completed notarizations of the current service. */
import type { Command } from 'commander';
import { verificationUrl } from '../api/pages.js';
import type { Context } from '../context.js';
import type { RowsResult } from '../output/present.js';
import { ExactJson } from '../exact-json.js';
import { embed } from '../output/results.js';
import { passedOver } from '../store/files.js';
import type { ServiceStore } from '../store/service-store.js';
import { finish, viewOf } from './action.js';
import { examples } from './options.js';

/** What `list` uses: the ledger of the service. */
export interface ListOptions {
  baseUrl: () => string;
  serviceStore: () => ServiceStore;
}

export function configure(command: Command, context: () => Context): void {
  command
    .addHelpText(
      'after',
      `\nReads the local ledger only (no network). --json: an array of
{"hash","file","completedAt","verificationUrl","record"}, oldest first.
${examples(['notarize list', '# CI: keep the ledger as a build artifact', 'notarize list --json > notarizations.json'])}`,
    )
    .action(async () => {
      const ctx = context();
      await finish(
        await viewOf(ctx),
        await runList({ baseUrl: () => ctx.baseUrl, serviceStore: () => ctx.serviceStore }),
      );
    });
}

function describe(record: ListRow['record']): string {
  const value = record instanceof ExactJson ? record.parsed() : record;
  const description = (value as { description?: unknown } | null)?.description;
  return typeof description === 'string' ? description : '';
}

/** One row of `list --json`. */
export interface ListRow {
  hash: string;
  file: string | null;
  completedAt: string;
  verificationUrl: string;
  /** The record as the service sent it. */
  record: ExactJson | string;
}

/**
 * The completed notarizations of the ledger, oldest first. A damaged file
 * is a warning and is passed over, and the run fails (exit 2) once the rest
 * is shown: a list kept as a build artifact (`list --json > ...`) must not
 * pass for the whole ledger, `[]` for a ledger of one damaged record.
 */
export async function runList(options: ListOptions): Promise<RowsResult<ListRow>> {
  const baseUrl = options.baseUrl();
  const { entries, problems } = await options.serviceStore().listRecords();
  entries.sort((a, b) => (a.completedAt < b.completedAt ? -1 : a.completedAt > b.completedAt ? 1 : 0));
  const failure = passedOver(problems, 'ledger file');
  return {
    kind: 'rows',
    ...(failure ? { failure } : {}),
    warnings: problems.map((problem) => `${problem.message}; ${problem.hint ?? ''}`),
    rows: entries.map((e) => ({
      hash: e.hash,
      file: e.file?.name ?? null,
      completedAt: e.completedAt,
      verificationUrl: verificationUrl(baseUrl, e.hash),
      record: embed(e.recordJson),
    })),
    headers: ['HASH', 'COMPLETED', 'FILE', 'DESCRIPTION'],
    cells: (r) => [r.hash, r.completedAt, r.file ?? '-', describe(r.record)],
    empty:
      failure === undefined ? `the ledger of ${baseUrl} is empty` : `no readable record in the ledger of ${baseUrl}`,
  };
}

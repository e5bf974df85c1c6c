/** `notarize pending`: the sessions saved and not yet completed. */
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { renderTable } from '../output/render.js';
import type { PendingEntry } from '../store/service-store.js';
import { examples } from './options.js';

export function configure(command: Command, context: () => Context): void {
  command
    .addHelpText(
      'after',
      examples([
        'notarize pending',
        '# CI: finish what an earlier job left pending',
        "notarize pending --json | jq -r '.[].hash' | xargs -r -n1 notarize complete --quiet",
      ]),
    )
    .action(async () => {
      await runPending(context());
    });
}

function planOf(entry: PendingEntry): string {
  try {
    const session = JSON.parse(entry.sessionJson) as { planNickname?: unknown };
    return typeof session.planNickname === 'string' ? session.planNickname : '?';
  } catch {
    return '?';
  }
}

/** Lists pending sessions; a damaged file is reported on stderr and skipped. */
export async function runPending(ctx: Context): Promise<void> {
  const { entries, problems } = await ctx.ledger.listPending();
  for (const problem of problems) ctx.io.warn(`${problem.message}; ${problem.hint ?? ''}`);
  if (ctx.globals.json) {
    const rows = entries.map((e) => ({
      hash: e.hash,
      description: e.description,
      savedAt: e.savedAt,
      plan: planOf(e),
      session: JSON.parse(e.sessionJson) as unknown,
    }));
    ctx.io.dataJsonArray(rows);
    return;
  }
  if (entries.length === 0) {
    ctx.io.info('no pending registrations');
    return;
  }
  ctx.io.data(
    renderTable(
      ['HASH', 'DESCRIPTION', 'PLAN', 'SAVED'],
      entries.map((e) => [e.hash, e.description, planOf(e), e.savedAt]),
      ctx.io.colour,
    ),
  );
}

/**
 * `notarize pending`: the sessions saved and not yet completed; and
 * `notarize pending drop <hash>`, which retires one by hand (moves it aside,
 * never deletes it), so no session ever needs a person to edit the store.
 */
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { normalizeHash } from '../core/hash.js';
import { UsageError } from '../errors.js';
import { renderTable } from '../output/render.js';
import { LEASE_MS, withLock } from '../store/lock.js';
import type { PendingEntry } from '../store/service-store.js';
import { examples } from './options.js';

/**
 * How long `drop` waits for a process completing the same hash: longer than
 * a lease, so that the lock of an owner that died where its pid cannot be
 * checked (another container or host) is taken over rather than reported.
 */
const DROP_LOCK_WAIT_MS = LEASE_MS + 5_000;

export function configure(command: Command, context: () => Context): void {
  command
    .addHelpText(
      'after',
      `\nSTATE is 'ready' (complete sends it), or 'answer-unread': its forfait was answered 2xx with a body
notarize could not read, so the service may have completed it; only \`notarize complete <hash>\` sends it
again (a 409 then means it went through: the session is retired).
${examples([
  'notarize pending',
  'notarize pending drop 905d4f33b218427e8371341674a913db02402f648fef6cdf47c16f65d2dd3001',
  '# CI: finish what an earlier job left pending',
  "notarize pending --json | jq -r '.[].hash' | xargs -r -n1 notarize complete --quiet",
])}`,
    )
    .action(async () => {
      await runPending(context());
    });
  command
    .command('drop <hash>')
    .description('retire a pending session: move it aside (kept, never sent again, no longer listed)')
    .action(async (hash: string) => {
      const ctx = context();
      const retired = await runPendingDrop(ctx, hash);
      ctx.io.info(`retired the pending session of ${normalizeHash(hash)}; kept in ${retired}`);
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

function stateOf(entry: PendingEntry): 'ready' | 'answer-unread' {
  return entry.forfaitUnreadAt === undefined ? 'ready' : 'answer-unread';
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
      state: stateOf(e),
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
      ['HASH', 'DESCRIPTION', 'PLAN', 'SAVED', 'STATE'],
      entries.map((e) => [e.hash, e.description, planOf(e), e.savedAt, stateOf(e)]),
      ctx.io.colour,
    ),
  );
}

/**
 * Retires the pending session of a hash and returns where it was kept.
 * Waits for a process completing the same hash. Throws UsageError when
 * nothing is pending for it.
 */
export async function runPendingDrop(ctx: Context, rawHash: string): Promise<string> {
  const hash = normalizeHash(rawHash);
  const store = ctx.ledger;
  const retired = await withLock(store.lockFile(hash), DROP_LOCK_WAIT_MS, () =>
    store.retirePending(hash, 'retired by hand (notarize pending drop)', new Date()),
  );
  if (retired === undefined) {
    throw new UsageError(`no pending session for ${hash}`, {
      code: 'no_pending_session',
      hint: 'see `notarize pending` for what is pending',
    });
  }
  return retired;
}

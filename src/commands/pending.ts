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
      `\nSTATE is 'ready' (complete sends it); 'answer-unread': its forfait was answered 2xx with a body
notarize could not read, so the service may have completed it; only \`notarize complete <hash>\` sends it
again (a 409 then means it went through: the session is retired); or 'request-unread': the request step
was answered 2xx unreadably, so no session was saved (plan '?', session null): complete it with
\`notarize complete <hash> --use-active-subscription\`, or \`pending drop\` it to let register request anew.
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
      ctx.io.info(
        retired === undefined
          ? `forgot the unread request step of ${normalizeHash(hash)}; \`notarize register\` requests it anew`
          : `retired the pending session of ${normalizeHash(hash)}; kept in ${retired}`,
      );
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

/** One row of the listing: a saved session, or a request step answered unreadably (no session). */
interface Row {
  hash: string;
  description: string;
  savedAt: string;
  plan: string;
  state: 'ready' | 'answer-unread' | 'request-unread';
  session: unknown;
}

/** Lists pending sessions and unread request steps; a damaged file is reported on stderr and skipped. */
export async function runPending(ctx: Context): Promise<void> {
  const [pending, unanswered] = await Promise.all([ctx.ledger.listPending(), ctx.ledger.listUnanswered()]);
  for (const problem of [...pending.problems, ...unanswered.problems]) {
    ctx.io.warn(`${problem.message}; ${problem.hint ?? ''}`);
  }
  const rows: Row[] = [
    ...pending.entries.map((e) => ({
      hash: e.hash,
      description: e.description,
      savedAt: e.savedAt,
      plan: planOf(e),
      state: stateOf(e),
      session: JSON.parse(e.sessionJson) as unknown,
    })),
    ...unanswered.entries
      .filter((e) => !pending.entries.some((p) => p.hash === e.hash))
      .map((e) => ({
        hash: e.hash,
        description: e.description,
        savedAt: e.requestedAt,
        plan: '?',
        state: 'request-unread' as const,
        session: null,
      })),
  ].sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0));
  if (ctx.globals.json) {
    ctx.io.dataJsonArray(rows);
    return;
  }
  if (rows.length === 0) {
    ctx.io.info('no pending registrations');
    return;
  }
  ctx.io.data(
    renderTable(
      ['HASH', 'DESCRIPTION', 'PLAN', 'SAVED', 'STATE'],
      rows.map((r) => [r.hash, r.description, r.plan, r.savedAt, r.state]),
      ctx.io.colour,
    ),
  );
}

/**
 * Retires the pending session of a hash and returns where it was kept
 * (undefined when there was only an unread request step, now forgotten).
 * Waits for a process completing the same hash. Throws UsageError when
 * nothing is pending for it.
 */
export async function runPendingDrop(ctx: Context, rawHash: string): Promise<string | undefined> {
  const hash = normalizeHash(rawHash);
  const store = ctx.ledger;
  const { retired, unanswered } = await withLock(store.lockFile(hash), DROP_LOCK_WAIT_MS, async () => {
    const unanswered = store.readUnanswered(hash) !== undefined;
    store.clearUnanswered(hash);
    return {
      retired: await store.retirePending(hash, 'retired by hand (notarize pending drop)', new Date()),
      unanswered,
    };
  });
  if (retired === undefined && unanswered) return undefined;
  if (retired === undefined) {
    throw new UsageError(`no pending session for ${hash}`, {
      code: 'no_pending_session',
      hint: 'see `notarize pending` for what is pending',
    });
  }
  return retired;
}

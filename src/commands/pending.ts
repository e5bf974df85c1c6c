/**
 * `notarize pending`: the sessions saved and not yet completed; and
 * `notarize pending drop <hash>`, which retires one by hand (moves it aside,
 * never deletes it), so no session ever needs a person to edit the store.
 */
import type { Command } from 'commander';
import { isSubscriptionSession } from '../api/schemas.js';
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import type { Context } from '../context.js';
import { normalizeHash } from '../core/hash.js';
import { sessionsUnderRoots } from '../core/trees.js';
import { UsageError } from '../errors.js';
import type { RowsResult, ValueResult } from '../output/present.js';
import { someDocuments } from '../output/wording.js';
import { embed } from '../output/results.js';
import type { ExactJson } from '../exact-json.js';
import { diskRefusedBeforeSending } from '../store/disk.js';
import { passedOver } from '../store/files.js';
import { LEASE_MS, waitNotice, withLock } from '../store/lock.js';
import type { PendingEntry, ServiceStore } from '../store/service-store.js';
import { finish, viewOf, viewWithoutTables } from './action.js';
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
      `\nSTATE is 'ready' (complete sends it); 'under-root': a document's own session (or its own request step
answered unreadably), though the document is a leaf of a Merkle root registered or pending here
(requested on its own while a root held it: \`register --aggregate --no-complete\`, then
\`register --no-complete --force\` of one of its documents):
completing it would pay a second time, so \`complete --all\` leaves it out; drop it with \`pending drop\`;
'blocked': a tree file that cannot be read may hold it under a root already paid for, or it is a leaf
of a root whose request step was answered unreadably, so \`complete --all\` does not send it (a warning
says what to restore, complete or drop first);
'answer-unread': its forfait was answered 2xx with a body notarize could not read, so the service may
have completed it; only \`notarize complete <hash>\` sends it again (a 409 then means it went through:
the session is retired); 'unexpected-shape': the request step's answer was not of the documented
session shape and was kept as it came: only \`notarize complete <hash>\` sends it back; or 'request-unread': the request step was answered 2xx unreadably, so no
session was saved (plan '?', session null): complete it with
\`notarize complete <hash> --use-active-subscription\` (refused while a Merkle root here holds the document,
which it then is: under-root or blocked), or \`pending drop\` it to let register request anew
(\`complete --all\` reports it failed, exit 5; a root's documents are not registered one by one meanwhile).
${examples([
  'notarize pending',
  'notarize pending drop 905d4f33b218427e8371341674a913db02402f648fef6cdf47c16f65d2dd3001',
  '# CI, with a store kept between jobs: finish what an earlier job left pending (what is ready)',
  'notarize complete --all --quiet',
])}`,
    )
    .action(async () => {
      const ctx = context();
      await finish(await viewOf(ctx), await runPending({ serviceStore: () => ctx.serviceStore }));
    });
  command
    .command('drop <hash>')
    .description('retire a pending session: move it aside (kept, never sent again, no longer listed)')
    .action(async (hash: string) => {
      const ctx = context();
      await finish(
        await viewWithoutTables(ctx),
        await runPendingDrop({ hash, serviceStore: () => ctx.serviceStore, info: (message) => ctx.io.info(message) }),
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

function stateOf(entry: PendingEntry, underRoot: boolean, blocked: boolean): PendingRow['state'] {
  if (entry.forfaitUnreadAt !== undefined) return 'answer-unread';
  if (!isSubscriptionSession(entry.sessionJson)) return 'unexpected-shape';
  if (underRoot) return 'under-root';
  return blocked ? 'blocked' : 'ready';
}

/** What `pending` and `pending drop` use: the pending sessions of the service. */
export interface PendingOptions {
  serviceStore: () => ServiceStore;
}

/** One row of the listing: a saved session, or a request step answered unreadably (no session). */
export interface PendingRow {
  hash: string;
  description: string;
  savedAt: string;
  plan: string;
  state: 'ready' | 'under-root' | 'blocked' | 'answer-unread' | 'unexpected-shape' | 'request-unread';
  session: ExactJson | string | null;
}

/** Lists pending sessions and unread request steps; a damaged file is a warning, passed over, and fails the run (exit 2) once the rest is shown. */
export async function runPending(options: PendingOptions): Promise<RowsResult<PendingRow>> {
  const ledger = options.serviceStore();
  const [pending, unanswered, custody] = await Promise.all([
    ledger.listPending(),
    ledger.listUnanswered(),
    ledger.listCustodyOwedOfRecords(),
  ]);
  // Registrations done whose custody metadata the service has not taken: no session, but not finished either.
  const owed = custody.entries.map((e) => e.hash);
  // As complete --all judges them: every session, a damaged one's hash included.
  const { covered, blocked } = await sessionsUnderRoots(ledger, [
    ...pending.entries.map((e) => e.hash),
    ...pending.problems.map((problem) => basename(problem.file, '.json')),
    ...unanswered.entries.map((e) => e.hash),
  ]);
  const blockedBy = [...new Set([...blocked.values()].map((error) => `${error.message}; ${error.hint ?? ''}`))];
  // Sessions of registrations the ledger holds, left over by a run that could not remove them: not pending.
  const listed: PendingEntry[] = [];
  const leftovers: string[] = [];
  for (const entry of pending.entries) {
    if (ledger.isLeftover(entry)) leftovers.push(entry.hash);
    else listed.push(entry);
  }
  const rows: PendingRow[] = [
    ...listed.map((e) => ({
      hash: e.hash,
      description: e.description,
      savedAt: e.savedAt,
      plan: planOf(e),
      state: stateOf(e, covered.has(e.hash), blocked.has(e.hash)),
      // As the service sent it (big integers, number spellings, escapes): --json prints that text.
      session: embed(e.sessionJson),
    })),
    ...unanswered.entries
      .filter((e) => !pending.entries.some((p) => p.hash === e.hash))
      .map((e) => ({
        hash: e.hash,
        description: e.description,
        savedAt: e.requestedAt,
        plan: '?',
        state: covered.has(e.hash)
          ? ('under-root' as const)
          : blocked.has(e.hash)
            ? ('blocked' as const)
            : ('request-unread' as const),
        session: null,
      })),
  ].sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0));
  const problems = [...pending.problems, ...unanswered.problems];
  // Sessions whose requests were sent, maybe paid: a listing that passed one over fails (exit 2).
  const failure = passedOver(problems, 'pending file');
  return {
    kind: 'rows',
    ...(failure ? { failure } : {}),
    warnings: [
      ...problems.map((p) => `${p.message}; ${p.hint ?? ''}`),
      ...blockedBy.map((why) => `sessions marked blocked are not completed by \`complete --all\`: ${why}`),
      ...(leftovers.length === 0
        ? []
        : [
            leftovers.length === 1
              ? `not listed: the session file of ${leftovers[0]!}, registered and in the ledger, left over by a run ` +
                'that could not remove it (nothing is sent for it; the next run that meets it removes it, or, ' +
                `if it cannot tell it is older than the record, \`notarize pending drop ${leftovers[0]!}\` puts it aside)`
              : `not listed: the session files of ${someDocuments(leftovers.length, leftovers[0]!)}, registered and ` +
                'in the ledger, left over by a run that could not remove them (nothing is sent for them; the next ' +
                'run that meets them removes them, or, if it cannot tell they are older than the records, ' +
                '`notarize pending drop <hash>` puts one aside)',
          ]),
      ...(owed.length === 0
        ? []
        : [
            `custody metadata not yet taken by the service, of ${someDocuments(owed.length, owed[0]!)} (registered): ` +
              '`notarize complete --all` sends it',
          ]),
    ],
    rows,
    headers: ['HASH', 'DESCRIPTION', 'PLAN', 'SAVED', 'STATE'],
    cells: (r) => [r.hash, r.description, r.plan, r.savedAt, r.state],
    // A damaged session file is no registration less: not "none" then.
    empty: failure ? 'no readable pending registrations (see the warnings above)' : 'no pending registrations',
  };
}

/**
 * Retires the pending session of a hash (or forgets its unread request
 * step) and says where it was kept. Waits for a process completing the same
 * hash. Throws UsageError when nothing is pending for it.
 */
export async function runPendingDrop(
  options: PendingOptions & { hash: string; info?: (message: string) => void },
): Promise<ValueResult> {
  const hash = normalizeHash(options.hash);
  const store = options.serviceStore();
  // A long wait is said (r100: 17 s of nothing while a completion ran).
  const timing = waitNotice(options.info ?? (() => {}));
  const { retired, unanswered } = await withLock(
    store.lockFile(hash),
    DROP_LOCK_WAIT_MS,
    async () => {
      const unanswered = store.readUnanswered(hash) !== undefined;
      store.clearUnanswered(hash);
      const retired = await store.retirePending(hash, 'retired by hand (notarize pending drop)', new Date());
      // The custody metadata that session would have owed goes with it; a registration in the ledger keeps its own.
      if (retired !== undefined && !existsSync(store.ledgerFile(hash))) await store.removeCustodyOwed(hash);
      return { retired, unanswered };
    },
    timing,
  ).catch((error: unknown) => {
    // A full, read-only or forbidden store (its lock first): the user's to fix; run again once it is.
    throw diskRefusedBeforeSending(error, store.dir) ?? error;
  });
  if (retired === undefined && unanswered) {
    return {
      kind: 'value',
      info: [`forgot the unread request step of ${hash}; \`notarize register\` requests it anew`],
    };
  }
  if (retired === undefined) {
    throw new UsageError(`no pending session for ${hash}`, {
      code: 'no_pending_session',
      hint: 'see `notarize pending` for what is pending',
    });
  }
  return { kind: 'value', info: [`retired the pending session of ${hash}; kept in ${retired}`] };
}

/**
 * `notarize complete <hash>`: forfait for a pending registration, with the
 * session from the store, from --session, or the active subscription.
 * Several hashes, or --all (every session pending in the store), are
 * completed in one run: one login, a few at once, one result each.
 */
import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { parseAnswer, type ApiClient } from '../api/client.js';
import { subscriptionSessionSchema } from '../api/schemas.js';
import type { Context } from '../context.js';
import { normalizeHash } from '../core/hash.js';
import { FailureTally, runAll, settledError } from '../core/batch.js';
import {
  complete,
  confirmedBefore,
  confirmedRoots,
  custodyFailure,
  requestUnread,
  type SessionSource,
} from '../core/notarize.js';
import { waitNotice } from '../store/lock.js';
import { convertHint, decodeUtf8, readBytesInput } from '../core/read-input.js';
import { sessionsUnderRoots } from '../core/trees.js';
import { TreesNow, UnderRootSince } from '../core/trees-now.js';
import { NotarizeError, UsageError } from '../errors.js';
import { fitConcurrency } from '../fd-shortage.js';
import type { IO } from '../output/io.js';
import { sentMetadata, showMetadataSent, type ItemsResult, type OutcomeResult } from '../output/present.js';
import { someDocuments } from '../output/wording.js';
import { failedResult, itemResult, outcomeResult, receiptDetails, type ItemResults } from '../output/results.js';
import type { ServiceStore } from '../store/service-store.js';
import { finish, finishItems, viewOf } from './action.js';
import { RETRY_HELP } from '../settings.js';
import { examples, parseOptions } from './options.js';

export const optionsSchema = z.object({
  session: z.string().optional(),
  useActiveSubscription: z.boolean().default(false),
  all: z.boolean().default(false),
});

/** How many registrations a run of several completes at once (as `register`'s default). */
const CONCURRENCY = 8;

/** Files held for each completion under way: its connection, its lock, and a store file a moment at a time. */
const FILES_PER_COMPLETION = 3;

/** What `complete` uses: the hash, where the session comes from, and the service. */
export interface CompleteOptions extends z.infer<typeof optionsSchema> {
  /** The digest as given (checked by the run). */
  hash: string;
  /** Standard input (--session -), and the spinner. */
  io: IO;
  baseUrl: () => string;
  api: () => Promise<ApiClient>;
  serviceStore: () => ServiceStore;
}

export function configure(command: Command, context: () => Context): void {
  command
    .argument('[hash...]', 'SHA-256 digest of each registration to complete (64 hex digits)')
    .option(
      '--all',
      'complete every registration whose session is pending in the store, in one run (not one whose last completion was answered unreadably, nor the own session of a document under a Merkle root registered or pending, or being registered by another process, which it waits for: name its hash)',
    )
    .option('--session <file|->', 'take the subscription session JSON from a file or standard input (one hash)')
    .option(
      '--use-active-subscription',
      'use the active subscription (GET /api/v2/payment/subscription/active) as the session (one hash)',
    )
    .addHelpText(
      'after',
      `\nThe session is sent to the service exactly as it was received (or given), byte for byte
(but for a byte order mark before it, which JSON readers pass over: notarize drops it as it reads).
A 409 is read as "the service already has this hash" (an assumption: its status codes are
undocumented): exit 0, already-registered, and the pending session is retired (kept aside
in the store's retired/ folder, never sent again). A session given with --session or
--use-active-subscription is not kept when the service answers 404 (it does not know the hash).
Several hashes, or --all, are completed in one run, ${CONCURRENCY} at once (fewer when the limit
of open files, ulimit -n, is low), with one login: one result each (a table, or with --json
an array), and the exit code of a batch (see \`notarize --help\`).
complete knows nothing of --receipt-dir: a pending Merkle root whose documents another store
has since registered under a root of its own (runners sharing a receipt folder) is paid for
again. There, finish it with the same \`register --aggregate ... --receipt-dir R\` instead,
which asks about the other roots first and retires a root the service has all of elsewhere.

${RETRY_HELP}
${examples([
  'notarize complete 905d4f33b218427e8371341674a913db02402f648fef6cdf47c16f65d2dd3001',
  'notarize complete <hash> --session session.json --json',
  '# CI, with a store kept between jobs (a self-hosted runner): finish what an earlier job left pending',
  'notarize complete --all --quiet',
])}`,
    )
    .action(async (hashes: string[], raw: unknown) => {
      const ctx = context();
      const flags = parseOptions(optionsSchema, raw, command);
      const common = {
        io: ctx.io,
        baseUrl: () => ctx.baseUrl,
        api: () => ctx.api(),
        serviceStore: () => ctx.serviceStore,
      };
      if (hashes.length === 1 && !flags.all) {
        await finish(await viewOf(ctx), await runComplete({ ...flags, ...common, hash: hashes[0]! }));
        return;
      }
      await finishItems(await viewOf(ctx), (items) => runCompleteMany({ ...flags, ...common, hashes, items }));
    });
}

/** Where a session comes from, for the messages of a session that is none. */
const SESSION_HINT = 'give the JSON the request step answered; `notarize pending --json` shows those this store keeps';

async function readSession(from: string, stdin: Readable): Promise<string> {
  // No session comes near 1 MiB; anything larger is not one.
  const bytes = await readBytesInput(from, stdin, 1024 * 1024, 'the session');
  const source = `the session ${from === '-' ? 'on standard input' : 'file'}`;
  // Said as what it is: "not JSON (6 bytes)" of a file of two, or of a 36-byte session saved by
  // PowerShell 5's `>` (UTF-16, its bytes counted once decoded as UTF-8), misled.
  const { text: json, marked } = decodeUtf8(bytes, `invalid --session: ${source}`, (encoding) =>
    encoding === undefined
      ? SESSION_HINT
      : `${convertHint(encoding)}; \`notarize pending --json\` shows the sessions this store keeps`,
  );
  // Blank as JSON has it (trim() would also pass over U+00A0 and the like, which JSON refuses).
  if (/^[ \t\r\n]*$/.test(json)) {
    const but = marked ? ' but for a byte order mark' : '';
    throw new UsageError(`invalid --session: ${source} is ${json === '' ? 'empty' : 'blank'}${but}`, {
      hint: SESSION_HINT,
    });
  }
  try {
    parseAnswer(json, subscriptionSessionSchema, 'session');
  } catch (error) {
    // A session given by hand is local input: a bad one is a usage error.
    if (error instanceof NotarizeError) throw new UsageError(`invalid --session: ${error.message}`, { cause: error });
    throw error;
  }
  return json;
}

/** Completes a pending registration and returns what the flow did; throws NotarizeError subclasses for main() to map. */
export async function runComplete(options: CompleteOptions): Promise<OutcomeResult> {
  const hash = normalizeHash(options.hash);
  if (options.session !== undefined && options.useActiveSubscription) {
    throw new UsageError('give either --session or --use-active-subscription, not both');
  }
  const baseUrl = options.baseUrl();
  let source: SessionSource = { kind: 'store' };
  if (options.session !== undefined)
    source = { kind: 'given', json: await readSession(options.session, options.io.stdin) };
  else if (options.useActiveSubscription) source = { kind: 'active-subscription' };
  const spinner = options.io.spinner('completing');
  try {
    const store = options.serviceStore();
    // Run again after the service answered 409 (its session retired, no record here): the same answer,
    // exit 0, rather than "no pending session" (exit 2), as a re-run after a completion gets; said
    // here before credentials are needed (core complete() says it under the lock, for the others).
    if (source.kind === 'store' && store.readRecord(hash) === undefined && !existsSync(store.pendingFile(hash))) {
      if ((await confirmedRoots(store)).has(hash))
        return { kind: 'outcome', outcome: await confirmedBefore(store, hash), baseUrl };
    }
    const refused = await unreadUnderRoot(store, hash);
    if (refused) throw refused;
    const lockTiming = waitNotice((message) => options.io.info(message));
    const outcome = await complete({ api: await options.api(), store, lockTiming }, hash, source);
    const failure = custodyFailure(outcome);
    return { kind: 'outcome', outcome, baseUrl, ...(failure ? { failure } : {}) };
  } finally {
    spinner.stop();
  }
}

/**
 * The refusal to complete a document's own request step answered unreadably
 * (it has no session of its own: --use-active-subscription, --session, or
 * the hint of either) when a Merkle root of this store, registered or
 * pending, holds the document, or a tree that cannot be read may: that would
 * pay for it a second time. Undefined when nothing stands in the way.
 */
async function unreadUnderRoot(store: ServiceStore, hash: string): Promise<NotarizeError | undefined> {
  if (store.readUnanswered(hash) === undefined || existsSync(store.pendingFile(hash))) return undefined;
  // A pending root counts as being completed (sessionsUnderRoots): its completion pays for the document.
  const roots = (await store.listPending()).entries.map((entry) => entry.hash);
  const { covered, blocked } = await sessionsUnderRoots(store, [hash, ...roots]);
  const under = covered.get(hash);
  return under ? underRootUnread(hash, under) : blocked.get(hash);
}

/** Where a document stands under the Merkle root `root` of this store (sessionsUnderRoots' covered). */
function underRoot(root: string, pending: boolean): string {
  return pending
    ? `a leaf of the Merkle root ${root}, pending in this store`
    : `registered under the Merkle root ${root}`;
}

/** The refusal of unreadUnderRoot for a document under a Merkle root here. */
function underRootUnread(hash: string, { root, pending }: { root: string; pending: boolean }): UsageError {
  return new UsageError(
    `${hash} is ${underRoot(root, pending)}: ` +
      'its own request step, answered unreadably, is not completed (that would pay a second time)',
    {
      code: 'under_root',
      hint: `\`notarize pending drop ${hash}\` forgets that request step${pending ? `; \`notarize complete ${root}\` completes the root` : ''}`,
    },
  );
}

/** What `complete` of several hashes, or --all, uses. */
export interface CompleteManyOptions extends Omit<CompleteOptions, 'hash'> {
  hashes: string[];
  items: ItemResults;
}

/**
 * Completes several pending registrations (the hashes given, or with --all
 * every one pending in the store), a few at once under one login; each
 * result goes to `items`. Everything is checked before anything is sent.
 */
export async function runCompleteMany(options: CompleteManyOptions): Promise<ItemsResult> {
  const usage = (message: string) => new UsageError(message, { hint: 'see `notarize complete --help`' });
  if (options.all && options.hashes.length > 0) throw usage('give the hashes to complete, or --all, not both');
  if (!options.all && options.hashes.length === 0) throw usage('give the hash of a registration to complete, or --all');
  if (options.session !== undefined || options.useActiveSubscription) {
    throw usage('--session and --use-active-subscription complete one hash at a time');
  }
  const store = options.serviceStore();
  let hashes = options.all ? await pendingHashes(store) : options.hashes.map((hash) => normalizeHash(hash));
  let skipped = 0;
  const tally = new FailureTally();
  if (options.all) {
    const withSession = new Set(hashes);
    const unread = await requestsUnread(store, withSession);
    // A document's own request step answered unreadably, then registered under a Merkle root
    // (`register --aggregate`), is left out as its own session would be: failed on every run, its
    // way out (--use-active-subscription) paid for it a second time.
    const { covered, blocked } = await sessionsUnderRoots(store, [...hashes, ...unread.map(([hash]) => hash)]);
    hashes = hashes.filter((hash) => !covered.has(hash) && !blocked.has(hash));
    for (const [hash, { root, pending }] of covered) {
      const under = underRoot(root, pending);
      const own = withSession.has(hash) ? 'its own session' : 'its own request step, answered unreadably,';
      const reason = `left out: ${under}, so completing ${own} would pay a second time`;
      options.items.add(skipped++, itemResult(null, hash, 'skipped', { reason }));
    }
    for (const [hash, error] of blocked) {
      tally.add(skipped, error);
      options.items.add(skipped++, failedResult(null, hash, error));
    }
    // A request step answered unreadably has no session to complete, but is not done either:
    // failed with its way out (exit 5), never "nothing pending".
    for (const [hash, error] of unread.filter(([hash]) => !covered.has(hash) && !blocked.has(hash))) {
      tally.add(skipped, error);
      options.items.add(skipped++, failedResult(null, hash, error));
    }
    warnLeftOut(options.io, [...covered.keys()]);
    // Registrations done whose custody metadata is still owed: complete sends it (no session, nothing paid).
    hashes = [...hashes, ...(await owedHashes(store, withSession))];
  }
  if (options.all && hashes.length === 0 && skipped === 0) {
    // Exit 0: nothing left to finish is what a re-run after success meets. But a job on another
    // runner than the one that saved the sessions meets it too, and must not pass unwarned.
    options.io.warn(
      `no session is pending in this store (${store.dir}): if the registrations were made on another machine ` +
        `or with another NOTARIZE_CONFIG_DIR, complete them there, or here with --session`,
    );
  }
  const baseUrl = options.baseUrl();
  const api = await options.api();
  // --all: a document's own session is sent only if, its lock held, no Merkle root another process
  // planted meanwhile answers for it (an aggregate retried over a tree only planned: TreesNow).
  const treesNow = options.all ? new TreesNow(store) : undefined;
  const lockTiming = waitNotice((message) => options.io.info(message));
  const deps = {
    api,
    store,
    lockTiming,
    ...(treesNow && {
      beforeCompletion: (hash: string) =>
        treesNow.settle({ store, lockTiming }, hash, "its documents' own sessions are completed"),
    }),
  };
  // --all never sends again a session whose last completion was answered unreadably: only its hash does.
  const source = { kind: 'store', resendUnread: !options.all } as const;
  /** The documents left out once a root another process was registering answered for them (TreesNow). */
  const placedMeanwhile: string[] = [];
  /** Registrations whose custody metadata this run sent (said once at the end). */
  let metadataSent = 0;
  const total = await runAll(
    hashes,
    async (hash) => {
      const refused = await unreadUnderRoot(store, hash);
      if (refused) throw refused;
      return complete(deps, hash, source);
    },
    {
      // Lowered to what the open files allowed fit (fd-shortage.ts): under a low `ulimit -n` eight at
      // once would each hold some and wait on one more. A hash whose try found no descriptor, nothing
      // sent, is tried again: its session is still in the store.
      concurrency: fitConcurrency(CONCURRENCY, FILES_PER_COMPLETION).concurrency,
      runAgain: () => true,
      onSettled: (i, settled, hash) => {
        const index = skipped + i;
        const failure = settled.ok ? custodyFailure(settled.value) : undefined;
        if (settled.ok) {
          // The custody metadata not sent fails the item, its record in it (receiptDetails).
          options.items.add(index, outcomeResult(null, settled.value, baseUrl, receiptDetails(undefined, failure)));
          if (failure) tally.add(index, failure);
          if (sentMetadata(settled.value)) metadataSent++;
        } else if ('error' in settled && settled.error instanceof UnderRootSince) {
          placedMeanwhile.push(hash);
          const reason = `left out: placed under the Merkle root ${settled.error.root} by another process as it was about to be sent, so completing its own session would pay a second time`;
          options.items.add(index, itemResult(null, hash, 'skipped', { reason }));
        } else {
          const error = settledError(settled);
          options.items.add(index, failedResult(null, hash, error));
          tally.add(index, error);
        }
      },
    },
  );
  warnLeftOut(options.io, placedMeanwhile);
  showMetadataSent(options.io, metadataSent);
  // Whatever left for the service counts, a login included (r99: a 503 to it, then a hash with no
  // session, was exit 2); a completion announced but stopped before its request (a damaged
  // credentials file) does not.
  const failure = tally.failure(api.anythingSent, skipped + total);
  return { kind: 'items', title: 'notarize complete', items: options.items, ...(failure ? { failure } : {}) };
}

/** Says once, of the documents whose own sessions `--all` left out under a Merkle root, what to do with them. */
function warnLeftOut(io: CompleteManyOptions['io'], hashes: readonly string[]): void {
  if (hashes.length === 0) return;
  const one = hashes.length === 1;
  io.warn(
    `${someDocuments(hashes.length, hashes[0]!)} left out: under a Merkle root registered or pending, so completing ` +
      `${one ? 'its own session' : 'their own sessions'} would pay a second time; drop ` +
      `${one ? 'it' : 'them'} with \`notarize pending drop <hash>\`, or name the hash to complete it anyway`,
  );
}

/** The request steps answered unreadably, of hashes with no session pending, and why each is not done. */
async function requestsUnread(store: ServiceStore, pending: ReadonlySet<string>): Promise<[string, NotarizeError][]> {
  const { entries, problems } = await store.listUnanswered();
  return [
    ...entries
      .filter((entry) => !pending.has(entry.hash))
      .map((entry): [string, NotarizeError] => [entry.hash, requestUnread(entry.hash, entry.requestedAt)]),
    ...problems.map((problem): [string, NotarizeError] => [basename(problem.file, '.json'), problem]),
  ].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The hashes of every session pending in the store, a damaged one included (it fails, naming its file). */
async function pendingHashes(store: ServiceStore): Promise<string[]> {
  const { entries, problems } = await store.listPending();
  return [...entries.map((entry) => entry.hash), ...problems.map((problem) => basename(problem.file, '.json'))].sort();
}

/** Registrations in the ledger whose custody metadata is still owed, without a pending session (complete sends it). */
async function owedHashes(store: ServiceStore, pending: ReadonlySet<string>): Promise<string[]> {
  const { entries, problems } = await store.listCustodyOwedOfRecords();
  const hashes = [...entries.map((entry) => entry.hash), ...problems.map((problem) => basename(problem.file, '.json'))];
  return hashes.filter((hash) => !pending.has(hash)).sort();
}

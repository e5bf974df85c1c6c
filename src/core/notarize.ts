/**
 * The register -> complete flow. Its one rule: the service's answer to the
 * request step is on disk before anything else happens, and a session leaves
 * the pending store only once its record is in the ledger, or once the
 * service has said it already has the hash (then it is retired: kept aside,
 * never sent again). So a crash, a timeout or a refusal at any point leaves
 * the registration pending, to be finished by `notarize complete <hash>`,
 * and no run leaves behind something only a person editing files can clear.
 *
 * A 409 from the request step or from forfait is read as "the service already
 * has this hash". The service documents no status code, so this is an
 * assumption (said in `--help`); it is what the sandbox answers, and what a
 * forfait whose answer was lost leads to on the next try.
 *
 * Returns data; never prints.
 */
import type { ApiClient } from '../api/client.js';
import { verificationPath } from '../api/pages.js';
import {
  COMPLETED_STATUS,
  fileMetadataSchema,
  isSubscriptionSession,
  subscriptionSessionSchema,
  type BLOCKCHAIN_TYPES,
  type FileMetadata,
  type RegistrationRequest,
} from '../api/schemas.js';
import {
  EXIT,
  InvalidAnswerError,
  NotarizeError,
  ProtocolError,
  ServiceRefusedError,
  TransientError,
  UnreadableAnswerError,
  UsageError,
  type UnsavedAnswer,
} from '../errors.js';
import {
  followsRecord,
  type CustodyOwed,
  type FileFacts,
  type LedgerEntry,
  type PendingEntry,
  type ServiceStore,
} from '../store/service-store.js';
import { diskRefusedBeforeSending, isDiskRefusal } from '../store/disk.js';
import { beforeSending, sendingCompletion, track, whenStopping, type Tracked } from '../interrupt.js';
import { holdLock, releaseOwnLock, stillHolds, withLock, type LockTiming } from '../store/lock.js';
import { asNotarizeError } from './batch.js';
import { MAX_RECORD_DEPTH } from './receipt-format.js';
import { jsonDepth } from '../exact-json.js';
import { mimeType } from './mime.js';

export type Blockchain = (typeof BLOCKCHAIN_TYPES)[number];

export interface RegisterInput {
  hash: string;
  description: string;
  /**
   * True when the description was given (-d, --description-file) rather than
   * taken from the file's name: a pending session requested with another
   * one is then refused, not completed with it unsaid.
   */
  descriptionGiven?: boolean;
  /**
   * True when the caller has said what a pending session's own request
   * makes of this input's (aggregate.ts warns that --signed is not used for
   * a pending root): completed as requested, not refused.
   */
  asRequested?: boolean;
  custody: boolean;
  signed: boolean;
  blockchain: Blockchain;
  /** The local file, when the hash came from one (needed for custody metadata). */
  file?: FileFacts;
  /** False for --no-complete: stop once the session is saved. */
  complete: boolean;
  /** Register again even when the ledger already has the hash. */
  force: boolean;
  walletName?: string;
}

/** What a register or complete call did. */
export type Outcome =
  | {
      kind: 'already-registered';
      hash: string;
      /** The ledger's record, when this store has one. */
      entry: LedgerEntry | undefined;
      /** Present when the service said so (a 409) rather than the ledger. */
      service?: ServiceSaysRegistered;
      /** The custody metadata a run before this one could not send, sent again (ServiceStore.readCustodyOwed). */
      custody?: CustodyOutcome;
    }
  | { kind: 'pending'; entry: PendingEntry; reused: boolean }
  | { kind: 'completed'; entry: LedgerEntry; reusedSession: boolean; custody?: CustodyOutcome };

/** The service answered 409 to the request step or to forfait: it already has the hash. */
export interface ServiceSaysRegistered {
  /** The service's own words, when its error body had a message. */
  message: string | undefined;
  /** Where the pending session was moved aside, when there was one. */
  retiredSession: string | undefined;
  /**
   * With no record of the hash here: the latest answer to its completion kept
   * in quarantine/ (it could not be read, or was no record of it), which may
   * hold the record the service sent.
   */
  answerKeptAside?: string;
}

/**
 * How a session retired because forfait was answered 409 says why (its
 * `retiredBecause` starts so): the service has the hash, whose record this
 * store may never have received (trees.ts reads it).
 */
export const ANSWERED_409 = 'forfait answered 409';

/**
 * How the store keeps a 409 to a request step, when no session was there to
 * put aside (ServiceStore.keepAnswered409): the service has the hash all the
 * same, and trees.ts counts it confirmed, so that `register --aggregate` on
 * this store never puts the document (or root) under a new root to pay for.
 */
export const REQUEST_ANSWERED_409 = 'request answered 409';

/** Whether `error` is the 409 that says the service already has the hash (see the module comment). */
export function isAlreadyRegistered(error: unknown): error is ServiceRefusedError {
  return error instanceof ServiceRefusedError && error.status === 409;
}

/** Custody: the metadata was sent; the file bytes never are (the upload API is undocumented). */
export interface CustodyOutcome {
  metadataSent: boolean;
  error?: NotarizeError;
}

export interface FlowDeps {
  api: ApiClient;
  store: ServiceStore;
  /**
   * Called as the flow moves on, for spinners and batches; never needed for
   * correctness. `saving`: the service has answered the last call this
   * registration makes, and only its record is left to save.
   */
  onStep?: (step: 'requesting' | 'completing' | 'waiting' | 'saving' | 'metadata') => void;
  /**
   * Awaited before a completion (forfait, the paid step) is sent, once its
   * session is saved: what must be on disk before then (register
   * --aggregate's tree manifest, core/aggregate.ts). Throwing stops the flow
   * there, its session kept pending.
   */
  beforeCompletion?: (hash: string) => Promise<void>;
  /**
   * Awaited under the hash's lock right before a request step is sent for
   * it (none was saved): the last look at whether it must be sent at all
   * (per-document register: a Merkle root another process planted over the
   * document meanwhile answers for it, register-roots.ts). Throwing stops
   * the flow there, nothing sent.
   */
  beforeRequest?: (hash: string) => Promise<void>;
  /** The locks the caller holds across steps (holdAcross), by the name `locked` takes: run under, not taken again. */
  heldAcross?: ReadonlySet<string>;
  /** How long to wait for another process working on the same hash. */
  lockWaitMs?: number;
  /**
   * The lock's lease and polling (tests only: notarize runs with withLock's defaults), and who is
   * told of a long wait for another process (onWaiting: waitNotice).
   */
  lockTiming?: LockTiming;
  now?: () => Date;
  /** Resolves once a signal is stopping the run (interrupt.ts whenStopping, the default). */
  stopping?: () => Promise<void>;
}

const DEFAULT_LOCK_WAIT_MS = 60_000;

/** Runs the register flow for one hash; see the module comment. */
export async function register(deps: FlowDeps, input: RegisterInput): Promise<Outcome> {
  const { store } = deps;
  return locked(deps, input.hash, async (tracked) => {
    const existing = store.readRecord(input.hash);
    if (existing) removeLeftover(deps, existing);
    if (existing && !input.force) return alreadyInLedger(deps, existing, tracked, input.walletName, input.custody);
    // Even with --force, a pending session is reused, never replaced: it may
    // be the only copy of a paid checkout session. A damaged pending file
    // stops the run here (StoreError naming it), so it is never overwritten.
    let pending = store.readPending(input.hash);
    const reused = pending !== undefined;
    if (pending !== undefined) refuseOtherRequest(pending, input);
    if (pending === undefined) {
      // A request step answered unreadably before: the service may hold a
      // session notarize never saw, so only an explicit choice requests again.
      const unanswered = input.force ? undefined : store.readUnanswered(input.hash);
      if (unanswered !== undefined) throw requestUnread(input.hash, unanswered.requestedAt);
      await deps.beforeRequest?.(input.hash);
      try {
        // With --force over a record: the session says which record it was asked for after.
        pending = await requestStep(deps, input, existing?.completedAt);
      } catch (error) {
        if (!isAlreadyRegistered(error)) throw error;
        // Only a help (the service has it whatever happens here): when the disk refuses, the next run asks again.
        const reason = [REQUEST_ANSWERED_409, error.serviceMessage].join(': ');
        // One mark is enough: a re-run told 409 again (it asks again: the 409 is an assumption, and one
        // the service sends for another reason must not stick) kept one more on every CI run.
        const known = (await store.retirements(input.hash)).get(input.hash)?.some(says409) === true;
        if (!known) await store.keepAnswered409(input.hash, reason, now(deps)).catch(() => undefined);
        const service = await serviceSays(store, input.hash, error.serviceMessage, undefined, existing);
        // Asked for custody: as after a forfait answered 409 (finish), no metadata of ours goes onto a
        // registration nothing tells is ours, and the outcome says it was not sent.
        const custody = input.custody ? { custody: { metadataSent: false } } : {};
        return { kind: 'already-registered', hash: input.hash, entry: existing, service, ...custody };
      }
    }
    tracked.sessionSaved();
    if (!input.complete) return { kind: 'pending', entry: pending, reused };
    // Its last forfait was answered unreadably (it may have gone through), or the session is not of the
    // documented shape: only an explicit `complete` sends it, never a re-run of register.
    const notOnItsOwn = refusedOnItsOwn(deps, pending);
    if (notOnItsOwn) throw notOnItsOwn;
    return finish(deps, pending, reused, input, tracked);
  });
}

/**
 * A pending session was requested with its own description and custody,
 * which its completion keeps for good (the service records what the request
 * step said): a run asking for another description, or for custody the
 * session did not ask for, is refused before anything is sent rather than
 * completed with the old ones unsaid. Without -d the description is the
 * file's name, which a renamed copy changes: only a given one counts.
 */
function refuseOtherRequest(pending: PendingEntry, input: RegisterInput): void {
  if (input.asRequested === true) return;
  const refusal = otherRequestRefusal(pending, {
    hash: input.hash,
    ...(input.descriptionGiven === true ? { description: input.description } : {}),
    custody: input.custody,
    signed: input.signed,
  });
  if (refusal) throw refusal;
}

/**
 * The refusal (exit 2, nothing sent) of a run asking `asked` of the pending
 * session `pending` was not requested with, or undefined when it asks
 * nothing else: another description given, custody or `signed` the session
 * did not ask for. Also what `register --aggregate` checks of a pending
 * Merkle root before it sends anything, its -d being that root's.
 */
export function otherRequestRefusal(
  pending: PendingEntry,
  asked: { hash: string; description?: string; custody: boolean; signed: boolean },
): UsageError | undefined {
  const differs = [
    asked.description !== undefined && asked.description !== pending.description
      ? `the description ${JSON.stringify(pending.description)}`
      : undefined,
    asked.custody && !pending.custody ? 'no custody' : undefined,
    asked.signed && pending.signed === false ? 'signed: false' : undefined,
    // Saved by a notarize that did not keep it: whether it was requested signed cannot be told.
    asked.signed && pending.signed === undefined ? '`signed` unknown (the saved session does not say)' : undefined,
  ].filter((part): part is string => part !== undefined);
  if (differs.length === 0) return undefined;
  return new UsageError(
    `a pending session for ${asked.hash} was requested with ${differs.join(' and ')}; nothing was sent`,
    {
      code: 'pending_session_differs',
      hint:
        `complete it as it was requested (\`notarize complete ${asked.hash}\`), or drop it ` +
        `(\`notarize pending drop ${asked.hash}\`) and register again`,
    },
  );
}

/**
 * Removes the session file a registration in the ledger left behind; met
 * before anything is sent, a disk refusing it (no permission, read-only) is
 * a usage error saying so (store/disk.ts), not an unexpected one.
 */
function removeLeftover(deps: Pick<FlowDeps, 'store'>, existing: LedgerEntry): void {
  try {
    deps.store.removeLeftoverPending(existing);
  } catch (error) {
    throw diskRefusedBeforeSending(error, deps.store.dir) ?? error;
  }
}

/**
 * Runs `fn` holding the lock of `hash`, known to interrupt.ts meanwhile: a
 * signal then releases the lock, and its line names the session once `fn`
 * says it is saved. Until `fn` starts, only the lock is being made and
 * nothing has been sent, so a full (or read-only) disk is a usage error
 * saying so (store/disk.ts); once it has started, its errors pass unchanged
 * (a store write failing after an answer is `notSaved`'s). `hash` may also
 * name another step under its own lock (aggregate.ts: `aggregate`).
 */
export async function locked<T>(
  deps: Pick<FlowDeps, 'store' | 'lockWaitMs' | 'lockTiming' | 'heldAcross'>,
  hash: string,
  fn: (tracked: Tracked) => Promise<T>,
): Promise<T> {
  let started = false;
  try {
    // Inside the try: making the locks directory is a store write before sending too.
    const file = deps.store.lockFile(hash);
    const underLock = async () => {
      started = true;
      const tracked = track(hash, () => releaseOwnLock(file));
      try {
        return await fn(tracked);
      } finally {
        tracked.done();
      }
    };
    // Held already by the caller, across steps (holdAcross): run under it.
    if (deps.heldAcross?.has(hash)) return await underLock();
    return await withLock(file, deps.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS, underLock, deps.lockTiming);
  } catch (error) {
    if (started) throw error;
    throw diskRefusedBeforeSending(error, deps.store.dir) ?? error;
  }
}

/**
 * Takes the lock of `hash` (or of another step, as `locked` names them) and
 * keeps it until the returned function is called: for a lock no one
 * callback spans (aggregate.ts: a new Merkle root's, from its tree's planting
 * to its registration, whose flow is told so by FlowDeps.heldAcross). `waitMs`:
 * how long to wait for another holder (TransientError after).
 */
export async function holdAcross(deps: FlowDeps, hash: string, waitMs: number): Promise<() => void> {
  const file = deps.store.lockFile(hash);
  const release = await holdLock(file, waitMs, deps.lockTiming);
  // A signal releases it as it does the flow's locks.
  const tracked = track(hash, () => releaseOwnLock(file));
  return () => {
    tracked.done();
    release();
  };
}

/** What a session keeps of a request with --custody, to send the file metadata once completed. */
function custodyOf(request: {
  custody: boolean;
  walletName?: string | undefined;
  file?: FileFacts | undefined;
}): Pick<PendingEntry, 'custody' | 'walletName' | 'file'> {
  return {
    custody: request.custody,
    ...(request.custody && request.walletName !== undefined ? { walletName: request.walletName } : {}),
    ...(request.file ? { file: request.file } : {}),
  };
}

/** Where `complete` takes its session from. */
export type SessionSource =
  /**
   * The session saved in the store. `resendUnread: false` (complete --all)
   * leaves one whose last completion was answered unreadably (it may have
   * been paid) to be sent again only when named by its hash.
   */
  | { kind: 'store'; resendUnread?: boolean }
  /** Session JSON given by the user (--session), sent exactly as given. */
  | { kind: 'given'; json: string; description?: string }
  | { kind: 'active-subscription' };

/** Completes the registration of `hash` (step 4); see the module comment. */
export async function complete(deps: FlowDeps, hash: string, source: SessionSource): Promise<Outcome> {
  const { store } = deps;
  return locked(deps, hash, async (tracked) => {
    const existing = store.readRecord(hash);
    if (existing) removeLeftover(deps, existing);
    // With a record, only a readable session requested after it (`register --force --no-complete`:
    // registered again, as asked) is completed; anything else would pay for a hash the ledger has.
    // (One that cannot be read beside a record: the ledger answers.)
    const stored = existing ? store.pendingIfReadable(hash) : store.readPending(hash);
    if (existing && !(source.kind === 'store' && stored && followsRecord(stored, existing))) {
      // A hash in the ledger has no request step left unread (a store of an older notarize may say so).
      store.clearUnanswered(hash);
      return alreadyInLedger(deps, existing, tracked);
    }
    if (stored) tracked.sessionSaved();
    let pending: PendingEntry;
    if (source.kind === 'store') {
      // A request step answered unreadably left no session, but a way out, which `register` names too.
      const unread = stored ? undefined : store.readUnanswered(hash);
      if (unread) throw requestUnread(hash, unread.requestedAt);
      if (!stored) {
        // Its session retired on a 409 meanwhile (another process completing it while this one
        // waited for the lock, or an earlier run): the service has it, as a re-run is told.
        if ((await confirmedRoots(store)).has(hash)) return await confirmedBefore(store, hash);
        throw new UsageError(`no pending session for ${hash}`, {
          code: 'no_pending_session',
          hint: 'register it first (`notarize register`), or pass the session with --session <file|->',
        });
      }
      const notOnItsOwn = source.resendUnread === false ? refusedOnItsOwn(deps, stored) : undefined;
      if (notOnItsOwn) throw notOnItsOwn;
      pending = stored;
    } else {
      const sessionJson = source.kind === 'given' ? source.json : (await deps.api.activeSubscription()).raw;
      // What the request step asked (its session kept, or its unread answer marked): with --custody,
      // the file metadata is sent after this completion as after any (it was dropped, never sent).
      const requested = stored ?? store.readUnanswered(hash);
      pending = {
        hash,
        description: (source.kind === 'given' ? source.description : undefined) ?? requested?.description ?? '',
        ...custodyOf({ ...requested, custody: requested?.custody ?? false }),
        savedAt: now(deps).toISOString(),
        sessionJson,
      };
      // A session given by hand is kept like one from the service, so that a
      // failed completion can be finished later from the store; but it never
      // replaces a session already pending, which may be the good one.
      if (!stored) {
        // A session given by hand is saved before anything is sent; one from the active subscription after a read.
        await savePendingOrExplain(deps, pending, { sentBefore: source.kind !== 'given' });
        tracked.sessionSaved();
        // The session saved stands for what an unread request step began, even if its completion fails
        // now: `complete` (--all too) finishes it from the store from here on, as any pending session.
        store.clearUnanswered(hash);
        return await finishGiven(deps, pending);
      }
    }
    return finish(deps, pending, source.kind === 'store', { hash }, tracked);
  });
}

/**
 * Completes with a session given by hand and saved by this run. A 404 proves
 * the service does not know the hash, so that session was never good for it:
 * it is not kept (the user still has it where they gave it from).
 */
async function finishGiven(deps: FlowDeps, pending: PendingEntry): Promise<Outcome> {
  try {
    return await finish(deps, pending, false, { hash: pending.hash });
  } catch (error) {
    if (error instanceof ServiceRefusedError && error.status === 404) {
      // The 404 is the answer to report, even when the store can no longer be changed (made read-only
      // since the session was saved): the session then stays where `pending drop` finds it.
      const stuck = await deps.store.removePending(pending.hash).then(
        () => undefined,
        (removal: unknown) => removal as Error,
      );
      // Nothing else of the hash is left here (an unread request step's mark went when the session was saved).
      error.hint =
        stuck === undefined
          ? `the service does not know ${pending.hash}, so the session given was not kept; ` +
            'register the document first (`notarize register`)'
          : `the service does not know ${pending.hash}; the session given could not be removed (${stuck.message}): ` +
            `\`notarize pending drop ${pending.hash}\` puts it aside once the store is writable; ` +
            'register the document first (`notarize register`)';
    }
    throw error;
  }
}

/**
 * How every registration ends, in `register` or `complete`: forfait, then the
 * custody metadata when the request asked for custody (the stored session
 * decides, not this run's flags). A 409 from forfait retires the session.
 */
async function finish(
  deps: FlowDeps,
  pending: PendingEntry,
  reusedSession: boolean,
  input: Pick<RegisterInput, 'hash' | 'file' | 'walletName'>,
  tracked?: Tracked,
): Promise<Outcome> {
  const metadata = pending.custody ? custodyMetadata(input, pending, owedWalletName(deps, pending.hash)) : undefined;
  // Owed before forfait is sent: however the run ends after it, a re-run finds it (store's custody/).
  if (typeof metadata === 'string') await saveCustodyOwed(deps, pending.hash, metadata);
  let entry: LedgerEntry;
  try {
    entry = await completeStep(deps, pending);
  } catch (error) {
    if (!isAlreadyRegistered(error)) throw error;
    const retiredSession = await retire(deps, pending.hash, `${ANSWERED_409}: ${error.serviceMessage ?? ''}`);
    // Completed meanwhile by the process that took the lock over from this one (stopped past its
    // lease): the ledger has that record, which the result gives, not null.
    const recorded = deps.store.recordIfReadable(pending.hash);
    const service = await serviceSays(deps.store, pending.hash, error.serviceMessage, retiredSession, recorded);
    if (typeof metadata !== 'string')
      return { kind: 'already-registered', hash: pending.hash, entry: recorded, service };
    // Registered, and nothing tells by whom (this session, its answer lost before; or another, without
    // custody): no metadata of ours goes onto it, and the outcome says it was not sent (a known limit).
    await deps.store.removeCustodyOwed(pending.hash).catch(() => undefined);
    return {
      kind: 'already-registered',
      hash: pending.hash,
      entry: recorded,
      service,
      custody: { metadataSent: false },
    };
  }
  tracked?.recordSaved(typeof metadata === 'string');
  if (metadata === undefined) return { kind: 'completed', entry, reusedSession };
  if (typeof metadata !== 'string') return { kind: 'completed', entry, reusedSession, custody: metadata };
  return {
    kind: 'completed',
    entry,
    reusedSession,
    custody: await sendOwedMetadata(deps, entry.hash, metadata, tracked),
  };
}

/**
 * Saves the custody metadata a registration will owe, before its forfait;
 * if the disk refuses, nothing more is sent and the session stays pending.
 */
async function saveCustodyOwed(deps: FlowDeps, hash: string, metadataJson: string): Promise<void> {
  try {
    await deps.store.saveCustodyOwed({ hash, savedAt: now(deps).toISOString(), metadataJson });
  } catch (error) {
    throw new NotarizeError(
      'store_write',
      EXIT.failed,
      `the custody metadata of ${hash} could not be saved, so its completion was not sent: ${(error as Error).message}`,
      {
        hint: `the session is kept: \`notarize complete ${hash}\` finishes it once the store can be written`,
        cause: error,
      },
    );
  }
}

/**
 * The custody metadata's failure, when a run tried to send it: the
 * registration stands (its result says so), but the run fails with it, and
 * the record keeps the metadata for the same command to send again.
 */
export function custodyFailure(outcome: Outcome): NotarizeError | undefined {
  return outcome.kind === 'pending' ? undefined : outcome.custody?.error;
}

/**
 * A hash the ledger has: already registered, nothing paid. Custody metadata
 * an earlier run could not send (still owed in the store) is sent now, with
 * this run's --wallet-name if it gives one, so that re-running the same
 * command (or `complete`) finishes what exit 4 left.
 */
async function alreadyInLedger(
  deps: FlowDeps,
  existing: LedgerEntry,
  tracked: Tracked,
  walletName?: string,
  custodyAsked = false,
): Promise<Outcome> {
  const { hash } = existing;
  let owed;
  try {
    owed = deps.store.readCustodyOwed(hash);
  } catch (error) {
    // Damaged: nothing to send from it, and nothing sent (exit 2, the StoreError's). The record stands; the file is left.
    const failure = asNotarizeError(error);
    failure.hint = `the registration of ${hash} is complete; move ${deps.store.custodyFile(hash)} aside, or restore it`;
    return { kind: 'already-registered', hash, entry: existing, custody: { metadataSent: false, error: failure } };
  }
  if (owed === undefined) return recordedOutcome(existing, custodyAsked);
  tracked.recordSaved(true);
  const metadataJson = await withWalletName(deps, owed, walletName);
  const custody = await sendOwedMetadata(deps, hash, metadataJson, tracked);
  return { kind: 'already-registered', hash, entry: existing, custody };
}

/**
 * The outcome of a run for a hash the ledger has, nothing left to send for
 * it. Asked for custody of a registration made without it, it says no
 * metadata was sent (exit 0 alone looked like custody in effect).
 */
export function recordedOutcome(entry: LedgerEntry, custodyAsked: boolean): Outcome {
  const recorded = { kind: 'already-registered' as const, hash: entry.hash, entry };
  // The record is read only when custody was asked for: a re-run over thousands of documents parses none.
  // (The ledger keeps only the text of a JSON object: its schema.)
  if (!custodyAsked || (JSON.parse(entry.recordJson) as { custody?: unknown }).custody === true) return recorded;
  return { ...recorded, custody: { metadataSent: false } };
}

/**
 * The wallet name of custody metadata already owed for `hash` (an earlier
 * completion of the same session that failed), if readable.
 */
function owedWalletName(deps: FlowDeps, hash: string): string | undefined {
  try {
    const owed = deps.store.readCustodyOwed(hash);
    const walletName = owed && (JSON.parse(owed.metadataJson) as { walletName?: unknown }).walletName;
    return typeof walletName === 'string' ? walletName : undefined;
  } catch {
    return undefined; // Damaged: rebuilt from the session, which is saved over it.
  }
}

/**
 * The owed metadata with this run's --wallet-name, if it gives another one:
 * kept so (saved again), so that should this run's call fail too, the next
 * one sends what was last asked for.
 */
async function withWalletName(deps: FlowDeps, owed: CustodyOwed, walletName: string | undefined): Promise<string> {
  if (walletName === undefined) return owed.metadataJson;
  // The text of a JSON object: the store's schema says so (a wrong shape inside, sendOwedMetadata reports).
  const metadata = JSON.parse(owed.metadataJson) as Record<string, unknown>;
  if (metadata.walletName === walletName) return owed.metadataJson;
  const metadataJson = JSON.stringify({ ...metadata, walletName });
  // Not saved (a disk refusing): this run still sends the name it asks for; only a later retry would not.
  await deps.store.saveCustodyOwed({ ...owed, metadataJson }).catch(() => undefined);
  return metadataJson;
}

/** Moves a pending session aside; if the disk refuses, says so with exit 1 (forfait was sent). */
async function retire(deps: FlowDeps, hash: string, reason: string): Promise<string | undefined> {
  try {
    return await deps.store.retirePending(hash, reason, now(deps));
  } catch (error) {
    throw new NotarizeError(
      'store_write',
      EXIT.failed,
      `the service says ${hash} is already registered, but its pending session could not be moved aside: ${(error as Error).message}`,
      { hint: `retire it with \`notarize pending drop ${hash}\``, cause: error },
    );
  }
}

/** The refusal to request again a hash whose last request step was answered unreadably. */
export function requestUnread(hash: string, requestedAt: string): ProtocolError {
  return new ProtocolError(
    `the registration request for ${hash} was answered 2xx at ${requestedAt}, but the answer could not be read; ` +
      'notarize does not request it again on its own',
    {
      hint:
        `the service may hold a subscription session for it: \`notarize complete ${hash} --use-active-subscription\` ` +
        `completes it with your active subscription; \`notarize pending drop ${hash}\` (or, for a document, register --force) requests anew`,
    },
  );
}

/**
 * Why `pending` is sent only when named (`notarize complete <hash>`), never
 * by a re-run of register or by `complete --all`: its last forfait was
 * answered unreadably, or it is not of the documented session shape.
 */
function refusedOnItsOwn(deps: FlowDeps, pending: PendingEntry): ProtocolError | undefined {
  if (pending.forfaitUnreadAt !== undefined) return answerUnread(deps, pending);
  if (!isSubscriptionSession(pending.sessionJson)) return unexpectedSession(pending.hash);
  return undefined;
}

/**
 * What the service's 409 for `hash` tells, and, when this store has no record
 * of it, where an answer that may have held the record was kept aside (a
 * completion paid once, answered unreadably, then sent again and told 409).
 */
async function serviceSays(
  store: ServiceStore,
  hash: string,
  message: string | undefined,
  retiredSession?: string,
  recorded?: LedgerEntry,
): Promise<ServiceSaysRegistered> {
  const kept = recorded === undefined ? (await store.quarantinedAnswers(hash)).at(-1) : undefined;
  return { message, retiredSession, ...(kept === undefined ? {} : { answerKeptAside: kept }) };
}

/** The refusal to send on its own a session kept although not of the documented shape (`unexpectedShape`). */
function unexpectedSession(hash: string): ProtocolError {
  return new ProtocolError(
    `the session kept for ${hash} is not of the shape the service documents; notarize does not send it on its own`,
    {
      hint:
        `inspect it with \`notarize pending --json\`; \`notarize complete ${hash}\` sends it back as received, ` +
        `or \`notarize pending drop ${hash}\` puts it aside`,
    },
  );
}

/** The refusal to send again a session whose last forfait was answered unreadably (`forfaitUnreadAt` set). */
function answerUnread(deps: FlowDeps, pending: PendingEntry): ProtocolError {
  const page = deps.api.transport.url(verificationPath(pending.hash));
  return new ProtocolError(
    `the completion of ${pending.hash} was sent at ${pending.forfaitUnreadAt!} and answered, ` +
      'but the answer could not be read, or was no record of it; notarize does not send it again on its own ' +
      `(an answer kept aside is in ${deps.store.quarantineDir})`,
    {
      hint:
        `the service may have completed it (see ${page}); \`notarize complete ${pending.hash}\` sends the session again ` +
        `(if it went through, the service answers 409 and the session is retired), ` +
        `or \`notarize pending drop ${pending.hash}\` puts it aside`,
    },
  );
}

function now(deps: FlowDeps): Date {
  return deps.now?.() ?? new Date();
}

/** The body of the request step for `input` (also how manifests.ts asks about a manifest's root). */
export function registrationRequest(
  input: Pick<RegisterInput, 'hash' | 'description' | 'custody' | 'signed' | 'blockchain'>,
): RegistrationRequest {
  return {
    blockchainType: input.blockchain,
    custody: input.custody,
    description: input.description,
    hash: input.hash,
    signed: input.signed,
    status: 'not_registered',
  };
}

/**
 * Throws unless this process still holds the lock of `hash`: one stopped
 * longer than its lease (SIGSTOP, a paused VM) had it taken over by another
 * run, which may have registered the hash meanwhile. Its session, saved
 * beside that record, would be a leftover at best; its forfait would be a
 * second completion: neither is done. Checked as each attempt of the
 * request step and of the forfait goes out (their onSent, after any wait for
 * a slot or a retry), and before the session is saved: the steps whose doing
 * twice costs, or spoils the other run's session.
 */
function checkStillHeld(deps: FlowDeps, hash: string, notDone: string): void {
  if (stillHolds(deps.store.lockFile(hash))) return;
  throw new TransientError(
    `the lock on ${hash} was taken over by another notarize while this one was stopped: ${notDone}`,
    {
      hint: 'run the same command again: it finds where the registration stands (the other run may have finished it)',
      // Nothing of the step went out.
      notProcessed: true,
    },
  );
}

/**
 * The request step; the answer is saved before this returns or throws.
 * `follows`: the completedAt of the record of the hash, when there is one
 * (--force), kept in the session (see followsRecord).
 */
async function requestStep(deps: FlowDeps, input: RegisterInput, follows?: string): Promise<PendingEntry> {
  deps.onStep?.('requesting');
  const save = async (sessionJson: string): Promise<PendingEntry> => {
    checkStillHeld(deps, input.hash, 'its session is not saved, nor its completion sent');
    const entry: PendingEntry = {
      hash: input.hash,
      description: input.description,
      ...custodyOf(input),
      signed: input.signed,
      savedAt: now(deps).toISOString(),
      ...(follows === undefined ? {} : { follows }),
      sessionJson,
    };
    await savePendingOrExplain(deps, entry);
    return entry;
  };
  try {
    // The lock looked at as the request goes out, after any wait for its slot or a retry: a run
    // stopped past its lease meanwhile would open a session over the one of the run that took it over.
    const answer = await deps.api.requestRegistration(registrationRequest(input), () =>
      checkStillHeld(deps, input.hash, 'its request step is not sent, nor its completion'),
    );
    const saved = await save(answer.raw);
    deps.store.clearUnanswered(input.hash);
    return saved;
  } catch (error) {
    // An object of an unexpected shape may still be a session the service
    // will accept back: keep it rather than lose the registration (only an
    // explicit `complete` sends it: refusedOnItsOwn).
    if (error instanceof InvalidAnswerError && isPlainObject(error.json)) {
      await save(error.raw);
      throw new ProtocolError(`${error.message}; the answer was kept as pending`, {
        hint: `inspect it with \`notarize pending\`; \`notarize complete ${input.hash}\` sends it back as received`,
        cause: error,
      });
    }
    if (error instanceof UnreadableAnswerError) {
      // Never retried, nor re-sent by a plain re-run: the service said yes,
      // and a second request could open a second subscription session.
      const requestedAt = now(deps).toISOString();
      await deps.store
        .markUnanswered({
          hash: input.hash,
          description: input.description,
          requestedAt,
          // What a completion with the active subscription or a given session needs to send the metadata.
          ...(input.custody ? custodyOf(input) : {}),
        })
        .catch(() => {});
      error.hint = requestUnread(input.hash, requestedAt).hint;
    }
    // A 4xx but 409 (already registered, the caller's): what to do, which the service's message alone
    // does not say (r115). Read as refused, not processed: an assumption, as every status is.
    if (error instanceof ServiceRefusedError && error.status !== 409 && error.hint === undefined) {
      error.hint =
        `the service refused the registration request of ${input.hash}, as its message says: no session of it was ` +
        'kept and nothing paid for it; fix what it names and run the same command again';
    }
    throw error;
  }
}

/**
 * Forfait with the pending session; on success the record is in the ledger
 * and the session gone. An interruption waits a moment for one under way
 * (interrupt.ts); none starts once an interruption is under way (and no
 * attempt goes out then, a retry or one that waited for its slot included:
 * the client's retry policy sees to it, context.ts).
 */
async function completeStep(deps: FlowDeps, pending: PendingEntry): Promise<LedgerEntry> {
  await deps.beforeCompletion?.(pending.hash);
  await beforeSending();
  // Told once the forfait goes out: one still waiting for its slot (api/slots.ts) is not under way,
  // neither for an interruption's wait nor for the caller (its result owed, something sent).
  let recorded: (() => void) | undefined;
  let told = false;
  const onSent = () => {
    // As each attempt goes out, after any wait for its slot (which a run stopped past its lease may
    // have spent stopped): never a forfait over the run that took the lock over meanwhile.
    checkStillHeld(deps, pending.hash, 'its completion (forfait) is not sent');
    recorded ??= sendingCompletion(pending.hash);
    if (!told) deps.onStep?.('completing');
    told = true;
  };
  // Waiting to send it again after an attempt not processed (a 503 with Retry-After): nothing is under
  // way, so a signal neither waits for it nor says it may have been completed (r119).
  const onRetryWait = () => {
    recorded?.();
    recorded = undefined;
    // What the caller holds for a completion under way (its result owed) is let go too, until the next.
    told = false;
    deps.onStep?.('waiting');
  };
  try {
    return await sendCompletion(deps, pending, onSent, onRetryWait);
  } finally {
    recorded?.();
  }
}

async function sendCompletion(
  deps: FlowDeps,
  pending: PendingEntry,
  onSent: () => void,
  onRetryWait: () => void,
): Promise<LedgerEntry> {
  const { store } = deps;
  const save = async (recordJson: string): Promise<LedgerEntry> => {
    const entry: LedgerEntry = {
      hash: pending.hash,
      completedAt: now(deps).toISOString(),
      ...(pending.file ? { file: pending.file } : {}),
      recordJson,
    };
    try {
      await store.saveRecord(entry);
    } catch (error) {
      throw notSaved(`the registration of ${pending.hash} was completed, but its record could not be saved`, error, {
        what: 'record',
        text: recordJson,
        next:
          `the session stays pending in ${store.pendingFile(pending.hash)}, though paid (completing it again ` +
          'gets a 409, and no record); keep the record quoted here: the service sends it only this once',
      });
    }
    // Only now that the record is on disk may the session go. A disk that refuses to let it
    // go (a folder made read-only meanwhile) takes nothing from a registration done and
    // recorded: the ledger answers for the hash, and the next run that meets the session
    // file removes it as a leftover, or says why it cannot (removeLeftover).
    try {
      await store.removePending(pending.hash);
    } catch (error) {
      if (!isDiskRefusal(error)) throw error;
    }
    return entry;
  };
  let answer;
  let sent = false;
  try {
    answer = await deps.api.completeRegistration(
      pending.hash,
      pending.sessionJson,
      () => {
        onSent();
        sent = true;
      },
      onRetryWait,
    );
  } catch (error) {
    // Its login failed (a 500, no answer, an answer unread): no completion went out. Nothing of an
    // answer to it is said or kept aside, and the session stays as it was (r111: "the service may
    // have completed it" was said of a forfait never sent, and a login's unread answer marked it).
    if (!sent) throw withCompleteHint(deps, error, pending.hash, false);
    if (error instanceof InvalidAnswerError) {
      throw await setAside(deps, pending, error.raw, error.message);
    }
    if (error instanceof UnreadableAnswerError) {
      // A body that came whole but is not JSON (a number written NaN) or in a coding that could not
      // be undone may be the record all the same, paid for and sent once: kept aside, as an answer
      // that is no record of it is.
      if (error.body !== undefined) {
        // Its bytes are kept with the message, which names the coding (to undo them by hand).
        const why = typeof error.body === 'string' ? 'it is not JSON' : error.message;
        error.message += `; ${await keptAside(deps, pending, error.body, why)}`;
      }
      // A 2xx whose body could not be read: the service may have completed
      // it. Marked so that only an explicit `complete` sends it again.
      const marked = await markAnswerUnread(deps, pending);
      error.hint = [error.hint, answerUnread(deps, marked).hint].filter(Boolean).join('; ');
      throw error;
    }
    if (isAlreadyRegistered(error)) throw error;
    throw withCompleteHint(deps, error, pending.hash);
  }
  if (answer.value.hash.toLowerCase() !== pending.hash) {
    throw await setAside(deps, pending, answer.raw, `the answer is a record of hash ${answer.value.hash}`);
  }
  // The service says what it did in the record's status: one of no completed registration is no proof
  // (verify refuses such a receipt), so it never enters the ledger, where verify would take it for one.
  if (answer.value.status !== COMPLETED_STATUS) {
    const status = JSON.stringify(answer.value.status);
    throw await setAside(deps, pending, answer.raw, `the record's status is ${status}, not "${COMPLETED_STATUS}"`);
  }
  // Nor one no receipt can carry: verify would call every receipt of it invalid.
  if (jsonDepth(answer.raw) > MAX_RECORD_DEPTH) {
    const why = `the record nests more than ${MAX_RECORD_DEPTH} levels deep, which no receipt can carry`;
    throw await setAside(deps, pending, answer.raw, why);
  }
  // With custody, the file's metadata is sent after the record is saved.
  if (!pending.custody) deps.onStep?.('saving');
  return save(answer.raw);
}

/** Marks a session whose forfait was answered 2xx without a usable record (see answerUnread). */
async function markAnswerUnread(deps: FlowDeps, pending: PendingEntry): Promise<PendingEntry> {
  const marked = { ...pending, forfaitUnreadAt: now(deps).toISOString() };
  // Should even this write fail, the error's hint still says what to do.
  await deps.store.savePending(marked).catch(() => {});
  return marked;
}

/**
 * A 2xx forfait answer that is not a record of this hash (another hash, no
 * hash, an error object...): it never enters the ledger, where `verify` would
 * take it for proof. It is kept aside in quarantine/ for a person to read,
 * and the session stays pending, marked so that only an explicit `complete`
 * sends it again. Returns the exit-5 error to throw.
 */
async function setAside(deps: FlowDeps, pending: PendingEntry, raw: string, why: string): Promise<ProtocolError> {
  const marked = await markAnswerUnread(deps, pending);
  const kept = await keptAside(deps, pending, raw, why);
  return new ProtocolError(
    `the service answered the completion of ${pending.hash} with something that is not its record (${why}); ` +
      `it was not put in the ledger: ${kept}`,
    { hint: answerUnread(deps, marked).hint },
  );
}

/** Keeps a forfait's answer in quarantine/ (never read back by notarize), and says where, or that it could not. */
async function keptAside(deps: FlowDeps, pending: PendingEntry, raw: string | Buffer, why: string): Promise<string> {
  try {
    return `kept aside in ${await deps.store.quarantine(pending.hash, raw, why, now(deps))}`;
  } catch {
    return 'it could not even be kept aside';
  }
}

/**
 * Adds to a failed completion's hint what happened to the session and what to
 * do next. Only failures that prove the service did not complete it (no
 * connection, a 429 or a 503 with Retry-After, a 401: api/http.ts
 * notProcessed) say to simply run `complete` again; after any other 5xx or
 * no answer, it may have, and the hint says how to tell. Not `sent` (its
 * login failed first), it says only that.
 */
function withCompleteHint(deps: FlowDeps, error: unknown, hash: string, sent = true): unknown {
  if (!(error instanceof NotarizeError) || error instanceof UsageError) return error;
  const file = deps.store.pendingFile(hash);
  const page = deps.api.transport.url(verificationPath(hash));
  let next: string;
  if (!sent) {
    next = `the completion was not sent; the session is kept: finish with \`notarize complete ${hash}\``;
  } else if (error.tokenRefusedFirst) {
    // The error is the login's: the completion itself was answered 401, not taken.
    next =
      `the completion was refused its token (401), so not taken, and logging in again failed; ` +
      `the session is kept: finish with \`notarize complete ${hash}\``;
  } else if (error instanceof ServiceRefusedError) {
    next =
      `the session is kept in ${file}; if the service will never accept it, ` +
      `\`notarize pending drop ${hash}\` puts it aside`;
  } else if (error instanceof ProtocolError) {
    next =
      `the service may have completed it, but its answer could not be read (see ${page}); ` +
      `the session is kept: \`notarize complete ${hash}\` sends it again`;
  } else if (error instanceof TransientError && !error.notProcessed) {
    // Sent, and no answer (a timeout, a connection lost: not "could not be reached"), or a 5xx
    // that does not say it turned the call away: the retry policy's "may have been processed".
    // The message names a status already: only a missing answer is said here.
    const why = error.status === undefined ? 'no answer came, so ' : '';
    error.hint =
      `${why}the service may have completed it (see ${page}); the session is kept: ` +
      `\`notarize complete ${hash}\` sends it again (an "already registered" then means it had)`;
    return error;
  } else {
    next = `the session is kept: finish with \`notarize complete ${hash}\``;
  }
  error.hint = error.hint ? `${error.hint}; ${next}` : next;
  return error;
}

/**
 * Saves a pending session; if the disk refuses, the error carries the session
 * so it is not lost. When nothing was sent before (`sentBefore: false`, a
 * session given by hand), the user still has it: a full disk is then a usage
 * error like any other met before sending.
 */
async function savePendingOrExplain(
  deps: FlowDeps,
  entry: PendingEntry,
  { sentBefore }: { sentBefore: boolean } = { sentBefore: true },
): Promise<void> {
  try {
    await deps.store.savePending(entry);
  } catch (error) {
    const refused = sentBefore ? undefined : diskRefusedBeforeSending(error, deps.store.dir);
    if (refused) throw refused;
    throw notSaved(`the session for ${entry.hash} could not be saved`, error, {
      what: 'session',
      text: entry.sessionJson,
      next: `save it to a file and finish with \`notarize complete ${entry.hash} --session <file>\``,
    });
  }
}

/**
 * A store write that failed after the service answered: the message says
 * why, and the hint quotes the answer whole, however long (a record echoes
 * a description of up to 64 KiB), so the user can keep it: the service
 * sends it once. Exit 1: this is not a usage error (something was sent)
 * nor worth a blind retry.
 */
function notSaved(message: string, error: unknown, answer: UnsavedAnswer & { next: string }) {
  return new NotarizeError('store_write', EXIT.failed, `${message}: ${(error as Error).message}`, {
    hint: `${answer.next}; the ${answer.what} the service sent: ${answer.text.trim()}`,
    cause: error,
    unsaved: { what: answer.what, text: answer.text },
  });
}

/**
 * The body of the custody metadata call (`PUT /api/v2/file/{hash}`) for
 * `pending`, as JSON text, or why there is none (no local file, or a session
 * without the userId the call needs: nothing to send, now or later).
 */
function custodyMetadata(
  input: Pick<RegisterInput, 'hash' | 'file' | 'walletName'>,
  pending: PendingEntry,
  owedWalletName?: string,
): string | CustodyOutcome {
  const file = input.file ?? pending.file;
  // The last one asked for: this run's, an earlier attempt's of this session, the request's.
  const walletName = input.walletName ?? owedWalletName ?? pending.walletName;
  // A session reaching here is the text of a JSON object: the store's schema, or the request step's parse, says so.
  const session = subscriptionSessionSchema.safeParse(JSON.parse(pending.sessionJson));
  if (!file || !session.success) {
    // Forfait is still sent (the registration asked for): exit 1, not a usage error, once it is paid.
    const error = new NotarizeError(
      'custody_unsendable',
      EXIT.failed,
      'custody metadata needs the local file and a valid session',
    );
    return { metadataSent: false, error };
  }
  const metadata: FileMetadata = {
    hash: pending.hash,
    name: file.name,
    type: mimeType(file.name),
    size: file.size,
    lastModified: file.lastModified,
    userId: session.data.userId,
    ...(walletName === undefined ? {} : { walletName }),
  };
  return JSON.stringify(metadata);
}

/**
 * Sends custody metadata owed for `hash` (`owed`, the body as saved; this
 * run's `walletName` in place of its own, if given). Taken: no longer owed.
 * Refused (4xx): no longer owed either, since the same body would be
 * refused again (the run fails once, saying so). Any other failure, or a
 * signal that stops the wait for the answer (the record's result and
 * receipt come first), leaves it owed, and the hint says what sends it.
 */
async function sendOwedMetadata(
  deps: FlowDeps,
  hash: string,
  owed: string,
  tracked?: Tracked,
): Promise<CustodyOutcome> {
  const stands = (how: string) => `the registration of ${hash} stands; its file metadata ${how}`;
  const metadata = fileMetadataSchema.safeParse(JSON.parse(owed));
  if (!metadata.success || metadata.data.hash !== hash) {
    // Damaged by hand: nothing to send, now or later.
    const error = new NotarizeError(
      'store_damaged',
      EXIT.failed,
      `${stands('was not sent')}: the metadata kept in ${deps.store.custodyFile(hash)} is not of the documented shape`,
    );
    return { metadataSent: false, error };
  }
  deps.onStep?.('metadata');
  try {
    const stopping = (deps.stopping ?? whenStopping)().then(interruptedMetadata);
    await Promise.race([deps.api.putFileMetadata(metadata.data), stopping]);
  } catch (error) {
    if (!(error instanceof NotarizeError)) throw error;
    const refused = error instanceof ServiceRefusedError;
    // Removed off the answer's path: should it fail, a re-run sends it again and is refused again.
    if (refused) await deps.store.removeCustodyOwed(hash).catch(() => undefined);
    const how = refused
      ? 'was refused, so it is not sent again'
      : `was ${error instanceof TransientError && error.notProcessed ? 'not taken' : 'not confirmed as taken'}; ` +
        `\`notarize complete ${hash}\`, or \`notarize register\` of the file, with this store, sends it ` +
        '(nothing is paid again; a store without it cannot)';
    error.hint = [stands(how), error.hint].filter(Boolean).join('; ');
    return { metadataSent: false, error };
  }
  tracked?.recordSaved(false);
  // Should this fail, a re-run sends the metadata again: a PUT of the same body, harmless.
  await deps.store.removeCustodyOwed(hash).catch(() => undefined);
  return { metadataSent: true };
}

/** Thrown in place of the custody metadata's answer once a signal is being handled. */
function interruptedMetadata(): never {
  throw new TransientError('interrupted before the service answered the file metadata');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether a `retiredBecause` says the service answered 409: it has the hash. */
export function says409(reason: string): boolean {
  return reason.startsWith(ANSWERED_409) || reason.startsWith(REQUEST_ANSWERED_409);
}

/**
 * The outcome of a hash confirmedRoots holds and the ledger has no record
 * of: already registered by the service's word, nothing sent now.
 */
export async function confirmedBefore(
  store: ServiceStore,
  hash: string,
): Promise<Extract<Outcome, { kind: 'already-registered' }>> {
  const message =
    'the service answered 409 for this document before (it has it; its record was never received here); nothing sent';
  return { kind: 'already-registered', hash, entry: undefined, service: await serviceSays(store, hash, message) };
}

/** The hashes the service answered 409 for (a session retired, or a request step): it has them. */
export async function confirmedRoots(store: ServiceStore): Promise<Set<string>> {
  const confirmed = new Set<string>();
  for (const [hash, reasons] of await store.retirements()) {
    if (reasons.some(says409)) confirmed.add(hash);
  }
  return confirmed;
}

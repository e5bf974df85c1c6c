/**
 * Retries with exponential backoff and full jitter, honouring Retry-After.
 * What may be retried is the caller's decision (`RetryMode`), because
 * retrying forfait after the service may have processed it could complete a
 * notarization twice.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { AuthError, HeldBackError, ownCopy, ProtocolError, ServiceRefusedError, TransientError } from '../errors.js';

/**
 * `safe`: the call may be repeated whatever happened (login, request step, reads).
 * `unprocessed-only`: retry only when the failure proves the service did not
 * process the call (connection refused, 429, 503 with Retry-After).
 */
export type RetryMode = 'safe' | 'unprocessed-only';

export interface RetryPolicy {
  /** Further attempts after the first. */
  retries: number;
  /** First backoff step; doubles each attempt. */
  baseDelayMs: number;
  /** No single wait is longer; a Retry-After beyond it ends the retries. */
  maxDelayMs: number;
  random?: () => number;
  wait?: (ms: number) => Promise<unknown>;
  /** Told about each retry before its wait (for --verbose). */
  onRetry?: (error: TransientError, attempt: number, delayMs: number) => void;
  /** Shared by a run's calls: while the service is known not to answer, calls are not sent (see Outage). */
  outage?: Outage;
}

/** How long an outage holds back a run's calls before they are tried again. */
export const OUTAGE_HOLD_MS = 30_000;

/**
 * What a run has learnt about the service. Without it, a batch of 1,000
 * documents against a service that was down, or answered 503 to everything,
 * waited out every document's own retries (3.5 minutes), one that hung on
 * forfait cost a full timeout per document, and one whose forfait answers
 * could not be read was paid for every document with no record kept.
 *
 * Calls are told apart by route (login, request, forfait...). A call ends
 * badly when its last attempt, not to be tried again, got no answer (no
 * connection, a timeout, a connection closed), a 5xx or 429, or an answer
 * that could not be read; well when it was answered and processed (a
 * success, or a refusal such as a 409). An outage starts when two calls in
 * a row on one route end badly with no call on that route ending well since
 * either began: one bad call may be about its document alone (a 500 for
 * that input, a reused connection closing at the wrong moment), two in a
 * row are about the service.
 *
 * While it holds, a call not yet sent waits for the calls in flight: one on
 * the outage's route ending well ends the outage and the call goes out; once
 * none is left in flight, it fails at once with a HeldBackError (transient,
 * provably not processed). A call about to retry waits the same way, but if
 * the outage stands it ends with its own last error, since its first attempt
 * may have been processed. The outage ends by itself after OUTAGE_HOLD_MS (a
 * run reading its list from a pipe may last hours). Optional calls (custody
 * metadata) never start one.
 */
export class Outage {
  #seen: { error: HeldBackError; route: string; at: number } | undefined;
  /** Per route, how many calls ended well so far: a call notes it when it begins. */
  readonly #wellEnded = new Map<string, number>();
  /** Per route, the count above when the last call ended badly, if none has ended well since. */
  readonly #strike = new Map<string, number>();
  #inFlight = 0;
  #waiting: (() => void)[] = [];
  readonly #holdMs: number;
  readonly #now: () => number;

  constructor({ holdMs = OUTAGE_HOLD_MS, now = Date.now }: { holdMs?: number; now?: () => number } = {}) {
    this.#holdMs = holdMs;
    this.#now = now;
  }

  /** Whether calls not yet sent are held back now. */
  get holding(): boolean {
    if (this.#seen !== undefined && this.#now() - this.#seen.at >= this.#holdMs) this.#seen = undefined;
    return this.#seen !== undefined;
  }

  /**
   * Resolves when a call may be sent: at once unless an outage holds; then
   * once the outage ends, or throws (a copy of) its error once no call is
   * left in flight to end it.
   */
  async admit(): Promise<void> {
    if (!(await this.mayProceed())) throw ownCopy(this.#seen!.error);
  }

  /** True at once unless an outage holds; then true once it ends, false once no call is left in flight. */
  async mayProceed(): Promise<boolean> {
    while (this.holding) {
      if (this.#inFlight === 0) return false;
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
    return true;
  }

  /** A call on `route` begins; returns what `ended` needs to know whether one ended well since. */
  begin(route: string): number {
    return this.#wellEnded.get(route) ?? 0;
  }

  /** An attempt goes out. */
  sending(): void {
    this.#inFlight++;
  }

  /**
   * The attempt just sent ended (`error` undefined: a success); `final`: the
   * call will not be tried again (and, for an optional call, counts for nothing).
   */
  attemptEnded(route: string, began: number, error: unknown, final: boolean): void {
    this.#inFlight--;
    const wellEnded = this.#wellEnded.get(route) ?? 0;
    if (endedWell(error)) {
      this.#wellEnded.set(route, wellEnded + 1);
      this.#strike.delete(route);
      if (this.#seen?.route === route) this.#seen = undefined;
    } else if (final && endedBadly(error) && began === wellEnded) {
      if (this.#strike.get(route) === wellEnded) {
        this.#seen ??= { error: heldBack(error), route, at: this.#now() };
      } else {
        this.#strike.set(route, wellEnded);
      }
    }
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const wake of waiting) wake();
  }
}

/** Answered and processed: a success, or the service's refusal (not a proxy's, nor one decided here). */
function endedWell(error: unknown): boolean {
  if (error === undefined || error instanceof ServiceRefusedError) return true;
  return error instanceof AuthError && error.status !== undefined && error.status !== 407;
}

/** No answer, a 5xx or 429, or an answer that could not be read. */
function endedBadly(error: unknown): error is TransientError | ProtocolError {
  return (error instanceof TransientError || error instanceof ProtocolError) && !(error instanceof HeldBackError);
}

function heldBack(error: TransientError | ProtocolError): HeldBackError {
  // The call was another document's: its hash is not this one's to show.
  const what = error.message.replace(/[0-9a-f]{64}/g, '<hash>');
  return new HeldBackError(`not sent: the service failed two calls of this run in a row, the last with: ${what}`, {
    hint: 'the service is down or failing; try again later',
    cause: error,
  });
}

/** Whether `error` may be retried under `mode`. */
export function isRetryable(error: unknown, mode: RetryMode): error is TransientError {
  return error instanceof TransientError && (mode === 'safe' || error.notProcessed);
}

/** The wait before retry number `attempt` (1-based), or undefined to give up. */
export function backoffDelay(error: TransientError, attempt: number, policy: RetryPolicy): number | undefined {
  if (error.retryAfterSeconds !== undefined) {
    const asked = error.retryAfterSeconds * 1000;
    return asked <= policy.maxDelayMs ? asked : undefined;
  }
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.round((policy.random ?? Math.random)() * ceiling);
}

/**
 * Runs `operation`, retrying it under `mode` and `policy`; rethrows the last
 * error. With `policy.outage`, a call waits for the run's outage to end, or
 * fails with a HeldBackError (see Outage); `route` names its kind of call
 * there, and `optional` says its failure fails nothing, so it never counts
 * towards an outage (custody metadata).
 */
export async function withRetries<T>(
  operation: () => Promise<T>,
  mode: RetryMode,
  policy: RetryPolicy,
  { route = '', optional = false }: { route?: string; optional?: boolean } = {},
): Promise<T> {
  const { outage } = policy;
  await outage?.admit();
  const began = outage?.begin(route) ?? 0;
  for (let attempt = 1; ; attempt++) {
    outage?.sending();
    let failure: unknown;
    try {
      const value = await operation();
      outage?.attemptEnded(route, began, undefined, true);
      return value;
    } catch (error) {
      failure = error;
    }
    const retriesSpent = attempt > policy.retries;
    const delay = !retriesSpent && isRetryable(failure, mode) ? backoffDelay(failure, attempt, policy) : undefined;
    outage?.attemptEnded(route, began, failure, delay === undefined && !optional);
    if (delay === undefined) throw failure;
    policy.onRetry?.(failure as TransientError, attempt, delay);
    await (policy.wait ?? sleep)(delay);
    // Not "not sent": this call's first attempt may have been processed.
    if (outage && !(await outage.mayProceed())) throw failure;
  }
}

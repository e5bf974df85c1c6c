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
 * documents against a service that was down waited out every document's own
 * retries: 3.5 minutes with the default policy, and hours with one that hangs.
 *
 * An outage starts when a call ends with no answer at all (no connection, a
 * timeout, a connection closed before any answer) with its retries spent,
 * or when a call that may not be retried (forfait) timed out, and no answer
 * to any call came since that attempt was sent. While it holds, a call not
 * yet sent waits for the calls in flight: the first answer to one of them
 * (even a 5xx, which may concern one document alone) ends the outage and
 * the call goes out; once none is left in flight, it fails at once with a
 * HeldBackError (transient, provably not processed). A call about to
 * retry waits the same way, but if the outage stands, it ends with its own
 * last error, since its first attempt may have been processed. The outage ends by itself after
 * OUTAGE_HOLD_MS (a run reading its list from a pipe may last hours).
 *
 * A forfait whose connection closed does not start one (a reused connection
 * may close at the wrong moment), nor does an optional call.
 */
export class Outage {
  #seen: { error: HeldBackError; at: number } | undefined;
  /** How many answers (any status) came so far: an attempt notes it when sent. */
  #answers = 0;
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
   * once an answer ends it, or throws (a copy of) its error once no call is
   * left in flight to bring one.
   */
  async admit(): Promise<void> {
    if (!(await this.mayProceed())) throw ownCopy(this.#seen!.error);
  }

  /**
   * True at once unless an outage holds; then true once an answer ends it,
   * false once no call is left in flight to bring one.
   */
  async mayProceed(): Promise<boolean> {
    while (this.holding) {
      if (this.#inFlight === 0) return false;
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
    return true;
  }

  /** An attempt goes out; returns what `settled` needs to know whether an answer came since. */
  sending(): number {
    this.#inFlight++;
    return this.#answers;
  }

  /**
   * The attempt sent at `sentAt` (what `sending` returned) ended (`error` undefined: a success).
   * `final`: it will not be tried again; `attempts`: how many it had.
   */
  settled(sentAt: number, error: unknown, ending: { attempts: number; retriesSpent: boolean; final: boolean }): void {
    this.#inFlight--;
    if (isAnswer(error)) {
      this.#answers++;
      this.#seen = undefined;
    } else if (startsOutage(error, ending) && this.#answers === sentAt) {
      this.#seen ??= { error: heldBack(error, ending.attempts), at: this.#now() };
    }
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const wake of waiting) wake();
  }
}

/** Whether the service (not this client, nor a proxy on the way) answered. */
function isAnswer(error: unknown): boolean {
  if (error === undefined) return true;
  if (error instanceof TransientError || error instanceof AuthError) {
    return error.status !== undefined && error.status !== 407;
  }
  return error instanceof ServiceRefusedError || (error instanceof ProtocolError && !(error instanceof HeldBackError));
}

function startsOutage(error: unknown, ending: { retriesSpent: boolean; final: boolean }): error is TransientError {
  return (
    error instanceof TransientError &&
    !(error instanceof HeldBackError) &&
    error.status === undefined &&
    ending.final &&
    (ending.retriesSpent || error.timedOut)
  );
}

function heldBack(error: TransientError, attempts: number): HeldBackError {
  const tries = attempts > 1 ? ` (tried ${attempts} times)` : '';
  // The call may have been another document's: its hash is not this one's to show.
  const what = error.message.replace(/[0-9a-f]{64}/g, '<hash>');
  return new HeldBackError(`not sent: the service did not answer an earlier call of this run${tries}: ${what}`, {
    ...(error.hint === undefined ? {} : { hint: error.hint }),
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
 * fails with a HeldBackError (see Outage). `optional`: the call's failure
 * fails nothing, so it never starts an outage (custody metadata).
 */
export async function withRetries<T>(
  operation: () => Promise<T>,
  mode: RetryMode,
  policy: RetryPolicy,
  { optional = false }: { optional?: boolean } = {},
): Promise<T> {
  const { outage } = policy;
  await outage?.admit();
  for (let attempt = 1; ; attempt++) {
    const sentAt = outage?.sending() ?? 0;
    let failure: unknown;
    try {
      const value = await operation();
      outage?.settled(sentAt, undefined, { attempts: attempt, retriesSpent: false, final: true });
      return value;
    } catch (error) {
      failure = error;
    }
    const retriesSpent = attempt > policy.retries;
    const delay = !retriesSpent && isRetryable(failure, mode) ? backoffDelay(failure, attempt, policy) : undefined;
    // An optional call's answer tells the service is there, but its failure starts nothing.
    outage?.settled(sentAt, failure, { attempts: attempt, retriesSpent, final: delay === undefined && !optional });
    if (delay === undefined) throw failure;
    policy.onRetry?.(failure as TransientError, attempt, delay);
    await (policy.wait ?? sleep)(delay);
    // Not "not sent": this call's first attempt may have been processed.
    if (outage && !(await outage.mayProceed())) throw failure;
  }
}

/**
 * Retries with exponential backoff and full jitter, honouring Retry-After.
 * What may be retried is the caller's decision (`RetryMode`), because
 * retrying forfait after the service may have processed it could complete a
 * notarization twice.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ownCopy, TransientError, UsageError } from '../errors.js';

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
 * What a run has learnt about the service: once a call has ended with no
 * answer at all (no connection, a timeout, a connection closed before any
 * answer) with its retries spent, or a call that may not be retried timed
 * out, the run's calls not yet sent are not sent for a while
 * (OUTAGE_HOLD_MS): each fails at once, as transient and provably not
 * processed, with the message of that call. Without it, a batch of 1,000
 * documents against a service that was down waited out every document's own
 * retries: 3.5 minutes with the default policy, and hours with a service
 * that hangs.
 *
 * An answer, even a 5xx, ends it at once: the service is there, and a 5xx
 * may be about one document alone. So does the end of the hold, after which
 * calls are sent again (a run reading its list from a pipe may last hours).
 * A connection closed on a call that may not be retried (forfait) does not
 * start one: that may be one reused connection closing at the wrong moment.
 */
export class Outage {
  #seen: { error: TransientError; at: number } | undefined;
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
   * Learns from how a call ended: an answer (`undefined`: a success) ends
   * the outage; a final failure without one starts it (see the class).
   */
  heard(error: unknown, ending: { attempts: number; retriesSpent: boolean; final: boolean }): void {
    if (!(error instanceof TransientError) || error.status !== undefined) {
      // A refusal decided here, before anything went out, says nothing of the service.
      if (!(error instanceof UsageError)) this.#seen = undefined;
      return;
    }
    if (!ending.final || (!ending.retriesSpent && !error.timedOut)) return;
    const tries = ending.attempts > 1 ? ` (tried ${ending.attempts} times)` : '';
    const noAnswer = new TransientError(
      `not sent: the service did not answer an earlier call of this run${tries}: ${error.message}`,
      { ...(error.hint === undefined ? {} : { hint: error.hint }), notProcessed: true, cause: error },
    );
    this.#seen = { error: noAnswer, at: this.#now() };
  }

  /** Throws (a copy of) the outage's error while it holds. */
  check(): void {
    if (this.holding) throw ownCopy(this.#seen!.error);
  }
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
 * error. With `policy.outage`, a call is not sent while the run holds an
 * outage (and a call waiting to retry is not tried again, rethrowing its own
 * last error: its first attempt may have been processed). `optional`: the
 * call's failure fails nothing, so it never starts an outage (custody
 * metadata).
 */
export async function withRetries<T>(
  operation: () => Promise<T>,
  mode: RetryMode,
  policy: RetryPolicy,
  { optional = false }: { optional?: boolean } = {},
): Promise<T> {
  const { outage } = policy;
  outage?.check();
  for (let attempt = 1; ; attempt++) {
    let failure: unknown;
    try {
      const value = await operation();
      outage?.heard(undefined, { attempts: attempt, retriesSpent: false, final: true });
      return value;
    } catch (error) {
      failure = error;
    }
    const retriesSpent = attempt > policy.retries;
    const delay = !retriesSpent && isRetryable(failure, mode) ? backoffDelay(failure, attempt, policy) : undefined;
    // An optional call's answer tells the service is there, but its failure starts nothing.
    outage?.heard(failure, { attempts: attempt, retriesSpent, final: delay === undefined && !optional });
    if (delay === undefined) throw failure;
    policy.onRetry?.(failure as TransientError, attempt, delay);
    await (policy.wait ?? sleep)(delay);
    if (outage?.holding) throw failure;
  }
}

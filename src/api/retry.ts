/**
 * Retries with exponential backoff and full jitter, honouring Retry-After.
 * What may be retried is the caller's decision (`RetryMode`), because
 * retrying forfait after the service may have processed it could complete a
 * notarization twice.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { TransientError } from '../errors.js';

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
  /** Shared by a run's calls: once the service has not answered one of them through all its retries, the others are not sent. */
  outage?: Outage;
}

/**
 * What a run has learnt about the service: once a call has had no answer at
 * all (no connection, a timeout, a connection closed before any answer) on
 * its last attempt, with every retry spent, the run's later attempts are not
 * sent; each fails at once, as transient and provably not processed, with
 * the message of that call. Without it, a batch of 1,000 documents against a
 * service that is down waited out every document's own retries: 3.5 minutes
 * with the default policy, and hours with a service that hangs. An answer,
 * even a 5xx, is not an outage: it may be about one document alone.
 */
export class Outage {
  #seen: TransientError | undefined;

  /** Notes the last failure of a call whose retries are spent. */
  saw(error: unknown, retries: number): void {
    if (this.#seen === undefined && error instanceof TransientError && error.status === undefined) {
      this.#seen = new TransientError(
        `not sent: the service did not answer an earlier call of this run${retries > 0 ? ` (tried ${retries + 1} times)` : ''}: ${error.message}`,
        { ...(error.hint === undefined ? {} : { hint: error.hint }), notProcessed: true, cause: error },
      );
    }
  }

  /** Throws the outage's error when one was seen. */
  check(): void {
    if (this.#seen !== undefined) throw this.#seen;
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
 * error. With `policy.outage`, an attempt is not made once the run has met one.
 */
export async function withRetries<T>(operation: () => Promise<T>, mode: RetryMode, policy: RetryPolicy): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    policy.outage?.check();
    try {
      return await operation();
    } catch (error) {
      if (attempt > policy.retries) policy.outage?.saw(error, policy.retries);
      if (attempt > policy.retries || !isRetryable(error, mode)) throw error;
      const delay = backoffDelay(error, attempt, policy);
      if (delay === undefined) throw error;
      policy.onRetry?.(error, attempt, delay);
      await (policy.wait ?? sleep)(delay);
    }
  }
}

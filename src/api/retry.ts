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

/** Runs `operation`, retrying it under `mode` and `policy`; rethrows the last error. */
export async function withRetries<T>(operation: () => Promise<T>, mode: RetryMode, policy: RetryPolicy): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      if (attempt > policy.retries || !isRetryable(error, mode)) throw error;
      const delay = backoffDelay(error, attempt, policy);
      if (delay === undefined) throw error;
      policy.onRetry?.(error, attempt, delay);
      await (policy.wait ?? sleep)(delay);
    }
  }
}

/**
 * Retries with exponential backoff and full jitter, honouring Retry-After.
 * What may be retried is the caller's decision (`RetryMode`), because
 * retrying forfait after the service may have processed it could complete a
 * notarization twice.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  AuthError,
  HeldBackError,
  NotarizeError,
  ownCopy,
  ProtocolError,
  ServiceRefusedError,
  TransientError,
} from '../errors.js';
import type { ReleaseSlot, RequestSlots } from './slots.js';

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
  /** Shared by a run's calls: how many may be under way at once (api/slots.ts), each with its retries. */
  slots?: RequestSlots;
  /** Awaited before each attempt goes out, once it has its slot: an interruption under way never lets it (interrupt.ts). */
  beforeAttempt?: () => Promise<void>;
}

/** What withRetries is told of a call besides its mode. */
export interface CallOptions {
  /** Its kind for the run's outage (login, request, forfait...). */
  route?: string;
  /** Its failure fails nothing, so it never counts towards an outage (custody metadata). */
  optional?: boolean;
  /** It finishes what a saved session began (forfait, custody metadata): it gets the next free slot. */
  finishing?: boolean;
  /**
   * Called as each attempt goes out (admitted, its slot taken, beforeAttempt
   * passed): the last word on it, after every wait. What it throws keeps the
   * attempt from going out, and ends the call with that error.
   */
  onSent?: () => void;
  /**
   * Called when an attempt has failed and the call waits to try again, or
   * was answered 401 and may be sent again with a renewed token: nothing of
   * it is under way then (interrupt.ts: not a completion sent and
   * unanswered).
   */
  onRetryWait?: () => void;
}

/** The longest an outage waits between two calls let through to see whether the service is back. */
export const OUTAGE_HOLD_MS = 30_000;

/** How an outage paces itself (see Outage). */
export interface OutageTiming {
  /** The wait after the first call let through ends badly; it doubles after each one, up to holdMs. */
  probeMs: number;
  /** How long after an outage begins calls held back wait for it to end, rather than fail at once. */
  waitMs: number;
  holdMs: number;
}

/**
 * An outage's pace from the retry policy's first backoff step (500 ms by
 * default: 1 s between calls let through at first, a 5 s wait): as patient
 * with a failing service as the retries are, and as quick in tests.
 */
export function outageTiming(baseDelayMs: number): OutageTiming {
  // Floors: a retry delay of 0 (allowed) must not leave the service no time to show it is back.
  return { probeMs: Math.max(50, 2 * baseDelayMs), waitMs: Math.max(500, 10 * baseDelayMs), holdMs: OUTAGE_HOLD_MS };
}

const OUTAGE_TIMING = outageTiming(500);

/**
 * What a run has learnt about the service. Without it, a batch of 1,000
 * documents against a service that was down, or answered 503 to everything,
 * waited out every document's own retries (3.5 minutes), one that hung on
 * forfait cost a full timeout per document, and one whose forfait answers
 * could not be read was paid for every document with no record kept.
 *
 * Calls are told apart by route (login, request, forfait...). A call ends
 * badly when its last attempt, not to be tried again, got no answer (no
 * connection, a timeout, a connection closed), a 5xx, 408 or 429, or an answer
 * that could not be read or used (not JSON, the wrong shape, a redirect
 * notarize does not follow: every ProtocolError); well when it was answered and processed (a
 * success, or a refusal such as a 409). An outage starts when two calls in
 * a row on one route end badly with no call on that route ending well since
 * either began: one bad call may be about its document alone, two in a row
 * most likely are about the service.
 *
 * An outage holds back the calls on its route only: with forfait out, new
 * documents still get their sessions, kept pending for `complete`. While it
 * holds, one call at a time is let through, as a circuit breaker's
 * half-open probe, sent once: the first at once, then `probeMs` after it
 * ended badly, then twice as long each time, up to `holdMs` (OutageTiming).
 * It ending well ends the outage, as does a call on the outage's route still
 * in flight ending well: two documents that each got a 500 of their own, or
 * a blip that failed two of eight calls in flight, hold nothing back for
 * long. The other calls wait for that: while one is out, however long it
 * takes (its timeout bounds it); otherwise for up to `waitMs` after the
 * outage began; then, and from then on until it ends, a call held back fails
 * at once with a HeldBackError (transient, provably not processed). A call
 * about to retry while an outage holds is not tried again: it ends with its
 * own last error, since its first attempt may have been processed. Optional
 * calls (custody metadata) never start one.
 */
export class Outage {
  /** The outage of each route that has one. */
  readonly #held = new Map<string, Held>();
  /** Per route, how many calls ended well so far: a call notes it when it begins. */
  readonly #wellEnded = new Map<string, number>();
  /** Per route, the count above when the last call ended badly, if none has ended well since. */
  readonly #strike = new Map<string, number>();
  /** Calls held back and waiting: woken whenever an attempt ends. */
  #waiting: (() => void)[] = [];
  readonly #now: () => number;
  readonly #timing: OutageTiming;

  /** `timing`: the constants above, shorter for tests. */
  constructor({ now = Date.now, timing = OUTAGE_TIMING }: { now?: () => number; timing?: OutageTiming } = {}) {
    this.#now = now;
    this.#timing = timing;
  }

  /** Whether an outage holds back calls on `route`. */
  holding(route: string): boolean {
    return this.#held.has(route);
  }

  /**
   * Resolves when a call on `route` may be sent, with the outage it is let
   * through to test, if it is the one let through to see whether the
   * service is back (it must give it to `attemptEnded`); throws (a copy of)
   * the outage's error when the call is held back.
   */
  async admit(route: string): Promise<Held | undefined> {
    for (;;) {
      const held = this.#held.get(route);
      if (held === undefined) return undefined;
      const now = this.#now();
      if (!held.probeOut && now >= held.probeAt) {
        held.probeOut = true;
        return held;
      }
      // The one let through may take up to its timeout: wait for it, however long the outage has lasted.
      const waitUntil = held.probeOut ? Infinity : held.since + this.#timing.waitMs;
      if (now >= waitUntil) throw ownCopy(held.error);
      // Woken by an attempt that ends, or when the next call may go through, or when the wait is over.
      const wakeAt = held.probeOut ? undefined : Math.min(waitUntil, held.probeAt);
      await new Promise<void>((resolve) => {
        const timer = wakeAt === undefined ? undefined : setTimeout(resolve, Math.max(0, wakeAt - now));
        this.#waiting.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /**
   * The call `admit` let through to test the outage of `route` (`probe`)
   * did not go out after all (its onSent refused it): it tested nothing, and
   * the next call may go in its place at once rather than wait for it.
   */
  probeNotSent(route: string, probe: Held): void {
    if (this.#held.get(route) === probe) probe.probeOut = false;
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const wake of waiting) wake();
  }

  /** A call on `route` begins; returns what `attemptEnded` needs to know whether one ended well since. */
  begin(route: string): number {
    return this.#wellEnded.get(route) ?? 0;
  }

  /**
   * An attempt of a call on `route` ended (`error` undefined: a success);
   * `final`: the call will not be tried again (and, for an optional call,
   * counts for nothing); `probe`: the outage `admit` let the call through
   * to test, if it did.
   */
  attemptEnded(
    route: string,
    began: number,
    error: unknown,
    { final, probe }: { final: boolean; probe: Held | undefined },
  ): void {
    this.#learn(route, began, error, final, probe);
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const wake of waiting) wake();
  }

  #learn(route: string, began: number, error: unknown, final: boolean, probe: Held | undefined): void {
    const wellEnded = this.#wellEnded.get(route) ?? 0;
    const held = this.#held.get(route);
    if (endedWell(error)) {
      this.#wellEnded.set(route, wellEnded + 1);
      this.#strike.delete(route);
      this.#held.delete(route);
      return;
    }
    if (probe !== undefined) {
      // Let through by an outage that has ended since: it says nothing of the one now, if any.
      if (probe !== held) return;
      // Still down: the next one goes through later, and later each time.
      held.probeAt = this.#now() + held.probeWaitMs;
      held.probeWaitMs = Math.min(this.#timing.holdMs, held.probeWaitMs * 2);
      held.probeOut = false;
      return;
    }
    if (!final || !endedBadly(error) || began !== wellEnded) return;
    if (this.#strike.get(route) !== wellEnded) {
      this.#strike.set(route, wellEnded);
    } else if (held === undefined) {
      const since = this.#now();
      this.#held.set(route, {
        error: heldBack(error),
        since,
        probeAt: since,
        probeWaitMs: this.#timing.probeMs,
        probeOut: false,
      });
    }
  }
}

/** An outage on one route: see Outage. */
export interface Held {
  error: HeldBackError;
  since: number;
  /** When a call may next be let through, how long the wait after that one will be, and whether one is out. */
  probeAt: number;
  probeWaitMs: number;
  probeOut: boolean;
}

/** Answered and processed: a success, or the service's refusal (not a proxy's, nor one decided here). */
function endedWell(error: unknown): boolean {
  if (error === undefined || error instanceof ServiceRefusedError) return true;
  return error instanceof AuthError && error.status !== undefined && error.status !== 407;
}

/** No answer, a 5xx, 408 or 429, or an answer that could not be read or used (any ProtocolError). */
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
 * error. With `policy.slots`, the call waits for a slot first and keeps it
 * until it ends, its waits to retry included: a run that meets a failing
 * service never has more calls under way than its limit, and the outage
 * (below) forms before documents beyond them try. With `policy.outage`, a
 * call held back by the run's outage fails with a HeldBackError (see Outage).
 */
export async function withRetries<T>(
  operation: () => Promise<T>,
  mode: RetryMode,
  policy: RetryPolicy,
  { route = '', optional = false, finishing = false, onSent, onRetryWait }: CallOptions = {},
): Promise<T> {
  const { outage } = policy;
  const { probe, release } = await admitted(route, finishing, policy);
  try {
    const began = outage?.begin(route) ?? 0;
    // Whether an attempt so far may have been processed: then the call's failure is not "not processed",
    // whatever its last attempt's says (a retry that found no socket after a connection dropped mid-answer).
    let processedMaybe = false;
    for (let attempt = 1; ; attempt++) {
      await policy.beforeAttempt?.();
      try {
        onSent?.();
      } catch (error) {
        // Kept from going out: a probe let through says nothing of the service, and must not be waited for.
        if (probe !== undefined) outage?.probeNotSent(route, probe);
        throw error;
      }
      let failure: unknown;
      try {
        const value = await operation();
        outage?.attemptEnded(route, began, undefined, { final: true, probe });
        return value;
      } catch (error) {
        failure = error;
      }
      const retriesSpent = attempt > policy.retries;
      const delay = !retriesSpent && isRetryable(failure, mode) ? backoffDelay(failure, attempt, policy) : undefined;
      // A probe ends with its first attempt: it only asks whether the service is back.
      const final = delay === undefined || probe !== undefined;
      // An optional call's answer tells the service works, but its failure starts nothing (a probe's reschedules).
      outage?.attemptEnded(route, began, failure, { final: probe !== undefined || (final && !optional), probe });
      const earlierMaybe = processedMaybe;
      processedMaybe ||= !(failure instanceof TransientError && failure.notProcessed);
      if (final) {
        // A 401 (not processed, the assumption): the credentials log in again and send it again (r120).
        if (failure instanceof AuthError && failure.status === 401 && !earlierMaybe) onRetryWait?.();
        throw ofTheCall(failure, processedMaybe, earlierMaybe);
      }
      policy.onRetry?.(failure as TransientError, attempt, delay);
      onRetryWait?.();
      await (policy.wait ?? sleep)(delay);
      // Not "not sent": this call's first attempt may have been processed.
      if (outage?.holding(route)) throw ofTheCall(failure, processedMaybe, processedMaybe);
    }
  } finally {
    release?.();
  }
}

/**
 * The last attempt's `failure` as the call's: not "not processed" when an
 * attempt may have been; and one that says nothing of that (a 401) marked
 * when an attempt before it may have been (`earlierMaybe`).
 */
export function ofTheCall(failure: unknown, processedMaybe: boolean, earlierMaybe: boolean): unknown {
  if (processedMaybe && failure instanceof TransientError) failure.notProcessed = false;
  if (earlierMaybe && failure instanceof NotarizeError) failure.earlierAttemptMaybeProcessed = true;
  return failure;
}

/**
 * Admits a call by the run's outage (Outage.admit), then gives it a slot.
 * An outage that began while it waited for the slot is asked again, the
 * slot given back meanwhile: a call never waits on an outage holding a slot
 * other routes' calls could use, and is never sent past an outage it did
 * not see.
 */
async function admitted(
  route: string,
  finishing: boolean,
  { outage, slots }: RetryPolicy,
): Promise<{ probe: Held | undefined; release: ReleaseSlot | undefined }> {
  for (;;) {
    const probe = await outage?.admit(route);
    const release = await slots?.take(finishing);
    if (probe !== undefined || !outage?.holding(route)) return { probe, release };
    release?.();
  }
}

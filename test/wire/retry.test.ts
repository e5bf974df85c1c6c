import { describe, expect, it } from 'vitest';
import {
  backoffDelay,
  isRetryable,
  Outage,
  OUTAGE_HOLD_MS,
  withRetries,
  type RetryMode,
  type RetryPolicy,
} from '../../src/api/retry.js';
import {
  AuthError,
  HeldBackError,
  ProtocolError,
  ServiceRefusedError,
  TransientError,
  UsageError,
} from '../../src/errors.js';
import { rejection } from '../helpers/catch.js';

/** A policy whose waits are recorded instead of slept, with jitter pinned to its ceiling. */
function recordingPolicy(overrides: Partial<RetryPolicy> = {}): RetryPolicy & { delays: number[] } {
  const delays: number[] = [];
  return {
    retries: 3,
    baseDelayMs: 100,
    maxDelayMs: 10_000,
    random: () => 1,
    wait: (ms) => {
      delays.push(ms);
      return Promise.resolve();
    },
    ...overrides,
    delays,
  };
}

/** An operation that throws the given errors in turn, then returns 'done'; counts its calls. */
function failing(...errors: Error[]) {
  const op = {
    calls: 0,
    run: (): Promise<string> => {
      const error = errors[op.calls++];
      return error === undefined ? Promise.resolve('done') : Promise.reject(error);
    },
  };
  return op;
}

const transient = (details: ConstructorParameters<typeof TransientError>[1] = {}) =>
  new TransientError('GET x failed: ECONNRESET', details);

describe('withRetries in safe mode', () => {
  it('returns at once when the first call succeeds', async () => {
    const policy = recordingPolicy();
    const op = failing();
    expect(await withRetries(op.run, 'safe', policy)).toBe('done');
    expect(op.calls).toBe(1);
    expect(policy.delays).toEqual([]);
  });

  it('retries transient errors and returns the eventual success', async () => {
    const policy = recordingPolicy();
    const op = failing(transient(), transient());
    expect(await withRetries(op.run, 'safe', policy)).toBe('done');
    expect(op.calls).toBe(3);
    expect(policy.delays).toEqual([100, 200]);
  });

  it('retries up to `retries` times, then rethrows the last error', async () => {
    const policy = recordingPolicy({ retries: 2 });
    const errors = [transient(), transient(), transient({ status: 502 }), transient()];
    const op = failing(...errors);
    const error = await rejection(withRetries(op.run, 'safe', policy));
    expect(error).toBe(errors[2]);
    expect(op.calls).toBe(3);
    expect(policy.delays).toEqual([100, 200]);
  });

  it('does not retry at all with retries 0', async () => {
    const policy = recordingPolicy({ retries: 0 });
    const op = failing(transient({ notProcessed: true }));
    expect(await rejection(withRetries(op.run, 'safe', policy))).toBeInstanceOf(TransientError);
    expect(op.calls).toBe(1);
    expect(policy.delays).toEqual([]);
  });

  it.each([
    ['AuthError', new AuthError('401', { status: 401 })],
    ['ServiceRefusedError', new ServiceRefusedError(409, 'conflict')],
    ['ProtocolError', new ProtocolError('bad shape')],
    ['a plain Error', new Error('bug')],
  ])('does not retry %s', async (_label, thrownError) => {
    const policy = recordingPolicy();
    const op = failing(thrownError);
    expect(await rejection(withRetries(op.run, 'safe', policy))).toBe(thrownError);
    expect(op.calls).toBe(1);
    expect(policy.delays).toEqual([]);
  });

  it('doubles the backoff each attempt and caps it at maxDelayMs', async () => {
    const policy = recordingPolicy({ retries: 6, baseDelayMs: 100, maxDelayMs: 1000 });
    const op = failing(transient(), transient(), transient(), transient(), transient(), transient());
    expect(await withRetries(op.run, 'safe', policy)).toBe('done');
    expect(policy.delays).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('applies full jitter: the wait is random() times the ceiling', async () => {
    const policy = recordingPolicy({ random: () => 0.5 });
    const op = failing(transient(), transient());
    await withRetries(op.run, 'safe', policy);
    expect(policy.delays).toEqual([50, 100]);
  });

  it('honours Retry-After instead of the backoff', async () => {
    const policy = recordingPolicy();
    const op = failing(transient({ status: 429, retryAfterSeconds: 3, notProcessed: true }));
    expect(await withRetries(op.run, 'safe', policy)).toBe('done');
    expect(policy.delays).toEqual([3000]);
  });

  it('stops retrying when Retry-After is beyond maxDelayMs, rethrowing that error', async () => {
    const policy = recordingPolicy({ maxDelayMs: 5000 });
    const tooLong = transient({ status: 503, retryAfterSeconds: 6, notProcessed: true });
    const op = failing(tooLong);
    expect(await rejection(withRetries(op.run, 'safe', policy))).toBe(tooLong);
    expect(op.calls).toBe(1);
    expect(policy.delays).toEqual([]);
  });

  it('tells onRetry about each retry with its attempt number and delay', async () => {
    const seen: [string, number, number][] = [];
    const policy = recordingPolicy({ onRetry: (error, attempt, delay) => seen.push([error.message, attempt, delay]) });
    const op = failing(transient(), transient());
    await withRetries(op.run, 'safe', policy);
    expect(seen).toEqual([
      ['GET x failed: ECONNRESET', 1, 100],
      ['GET x failed: ECONNRESET', 2, 200],
    ]);
  });
});

describe("withRetries in 'unprocessed-only' mode", () => {
  it('retries an error that proves the service did not process the call', async () => {
    const policy = recordingPolicy();
    const op = failing(transient({ notProcessed: true }), transient({ status: 429, notProcessed: true }));
    expect(await withRetries(op.run, 'unprocessed-only', policy)).toBe('done');
    expect(op.calls).toBe(3);
  });

  it('does not retry a transient error that may have been processed (500, timeout, reset)', async () => {
    const policy = recordingPolicy();
    const maybeDone = transient({ status: 500 });
    const op = failing(maybeDone);
    expect(await rejection(withRetries(op.run, 'unprocessed-only', policy))).toBe(maybeDone);
    expect(op.calls).toBe(1);
    expect(policy.delays).toEqual([]);
  });

  it('stops at the first processed-maybe error after unprocessed ones', async () => {
    const policy = recordingPolicy();
    const maybeDone = transient();
    const op = failing(transient({ notProcessed: true }), maybeDone);
    expect(await rejection(withRetries(op.run, 'unprocessed-only', policy))).toBe(maybeDone);
    expect(op.calls).toBe(2);
  });
});

describe('an outage: the service did not answer a call that will not be tried again', () => {
  const refused = () => transient({ notProcessed: true, hint: 'the service could not be reached; try again later' });
  const timedOut = () => new TransientError('POST x failed: timed out', { timedOut: true });
  /** A call in flight until the test settles it: with `answer` (a value or an error) or with `noAnswer`. */
  function inFlight(outage: Outage, mode: RetryMode = 'safe') {
    let settle: (outcome: { value?: string; error?: Error }) => void = () => {};
    const call = withRetries(
      () =>
        new Promise<string>((resolve, reject) => {
          settle = ({ value, error }) => (error ? reject(error) : resolve(value!));
        }),
      mode,
      recordingPolicy({ retries: 0, outage }),
    );
    const outcome = call.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    return { settle: (o: { value?: string; error?: Error }) => settle(o), outcome };
  }
  /** A call of its own that gets no answer, with no retry: starts an outage. */
  const unanswered = (outage: Outage) =>
    rejection(withRetries(failing(refused()).run, 'safe', recordingPolicy({ retries: 0, outage })));
  /** Whether `promise` is still unsettled after the pending jobs have run. */
  async function stillPending(promise: Promise<unknown>): Promise<boolean> {
    const marker = Symbol('pending');
    return (await Promise.race([promise, new Promise((resolve) => setImmediate(() => resolve(marker)))])) === marker;
  }

  it('holds back the calls not yet sent once none is in flight: each fails at once, not processed, with its own copy', async () => {
    const outage = new Outage();
    const first = failing(refused(), refused(), refused());
    const last = await rejection(withRetries(first.run, 'safe', recordingPolicy({ retries: 2, outage })));
    expect(first.calls).toBe(3);

    const later = failing();
    const errors = [
      await rejection(withRetries(later.run, 'safe', recordingPolicy({ outage }))),
      // Forfait too: nothing was sent, which is what lets its session wait for `complete`.
      await rejection(withRetries(later.run, 'unprocessed-only', recordingPolicy({ outage }))),
    ];
    expect(later.calls).toBe(0);
    for (const error of errors) {
      expect(error).toBeInstanceOf(HeldBackError);
      expect(error).toMatchObject({
        message:
          'not sent: the service did not answer an earlier call of this run (tried 3 times): GET x failed: ECONNRESET',
        hint: 'the service could not be reached; try again later',
        notProcessed: true,
        exitCode: 4,
        cause: last,
      });
    }
    // A document's flow adds its own `notarize complete <hash>` to the hint: never to another's.
    expect(errors[0]).not.toBe(errors[1]);
  });

  it("quotes the call's failure without its document's hash, which is another document's", async () => {
    const outage = new Outage();
    const hash = 'ab'.repeat(32);
    const other = new TransientError(`POST http://127.0.0.1:1/api/v2/registration/${hash}/forfait failed: timed out`, {
      timedOut: true,
    });
    await rejection(withRetries(failing(other).run, 'unprocessed-only', recordingPolicy({ outage })));
    expect(((await rejection(withRetries(failing().run, 'safe', recordingPolicy({ outage })))) as Error).message).toBe(
      'not sent: the service did not answer an earlier call of this run: ' +
        'POST http://127.0.0.1:1/api/v2/registration/<hash>/forfait failed: timed out',
    );
  });

  it('makes a new call wait while others are in flight: sent once one of them is answered', async () => {
    const outage = new Outage();
    const a = inFlight(outage);
    await unanswered(outage);
    expect(outage.holding).toBe(true);
    const later = failing();
    const call = withRetries(later.run, 'safe', recordingPolicy({ outage }));
    expect(await stillPending(call)).toBe(true);
    expect(later.calls).toBe(0);
    a.settle({ error: new ServiceRefusedError(409, 'conflict') });
    expect(await call).toBe('done');
    expect(later.calls).toBe(1);
  });

  it('makes a new call wait while others are in flight: held back once none is left to answer', async () => {
    const outage = new Outage();
    const a = inFlight(outage);
    await unanswered(outage);
    const later = failing();
    const call = rejection(withRetries(later.run, 'safe', recordingPolicy({ outage })));
    expect(await stillPending(call)).toBe(true);
    a.settle({ error: refused() });
    expect(await call).toBeInstanceOf(HeldBackError);
    expect(later.calls).toBe(0);
  });

  it('is not started by a call sent before an answer came: the service answered since', async () => {
    const outage = new Outage();
    const a = inFlight(outage, 'unprocessed-only');
    expect(await withRetries(failing().run, 'safe', recordingPolicy({ outage }))).toBe('done');
    a.settle({ error: timedOut() });
    await a.outcome;
    expect(outage.holding).toBe(false);
  });

  it('does not retry a call whose outage stands, and does not say "not sent": it ends with its own last error', async () => {
    const outage = new Outage();
    const own = refused();
    const waiting = failing(own, refused());
    // While this call waits to retry, another spends its retries on no answer.
    const policy = recordingPolicy({ outage, wait: () => unanswered(outage) });
    // Its first attempt may have been processed (a request step's answer lost): "not sent" would be false.
    expect(await rejection(withRetries(waiting.run, 'safe', policy))).toBe(own);
    expect(waiting.calls).toBe(1);
    expect(outage.holding).toBe(true);
  });

  it('is started by a call that may not be retried (forfait) when it timed out, not when its connection closed', async () => {
    const closed = new Outage();
    await rejection(withRetries(failing(transient()).run, 'unprocessed-only', recordingPolicy({ outage: closed })));
    expect(closed.holding).toBe(false);

    const hung = new Outage();
    await rejection(withRetries(failing(timedOut()).run, 'unprocessed-only', recordingPolicy({ outage: hung })));
    expect(hung.holding).toBe(true);
  });

  it.each([
    { label: 'an answer, even a 5xx, which may be about this call alone', errors: [transient({ status: 503 })] },
    { label: 'no answer, then an answer on the last attempt', errors: [refused(), transient({ status: 500 })] },
    { label: 'an error that is not transient', errors: [new ServiceRefusedError(409, 'conflict')] },
    { label: 'no answer with retries left, then a success', errors: [refused(), refused()], succeeds: true },
  ])('is not started by $label', async ({ errors, succeeds }) => {
    const outage = new Outage();
    const retries = succeeds ? errors.length : errors.length - 1;
    const call = withRetries(failing(...errors).run, 'safe', recordingPolicy({ retries, outage }));
    if (succeeds) expect(await call).toBe('done');
    else await rejection(call);
    expect(outage.holding).toBe(false);
  });

  it('is not started by an optional call (custody metadata), whose answer still ends one', async () => {
    const outage = new Outage();
    const optional = { optional: true };
    await rejection(withRetries(failing(refused()).run, 'safe', recordingPolicy({ retries: 0, outage }), optional));
    expect(outage.holding).toBe(false);

    let answer = (): void => {};
    const metadata = withRetries(
      () => new Promise<string>((resolve) => (answer = () => resolve('done'))),
      'safe',
      recordingPolicy({ outage }),
      optional,
    );
    await unanswered(outage);
    expect(outage.holding).toBe(true);
    answer();
    expect(await metadata).toBe('done');
    expect(outage.holding).toBe(false);
  });

  it.each<[string, { error?: Error }]>([
    ['a success', {}],
    ['a 5xx', { error: transient({ status: 502 }) }],
    ['a 4xx', { error: new ServiceRefusedError(409, 'conflict') }],
    ['a 401 from the service', { error: new AuthError('401', { status: 401 }) }],
  ])('ends with an answer to a call in flight: %s', async (_label, answer) => {
    const outage = new Outage();
    const a = inFlight(outage);
    await unanswered(outage);
    expect(outage.holding).toBe(true);
    a.settle(answer.error ? answer : { value: 'done' });
    await a.outcome;
    expect(outage.holding).toBe(false);
  });

  it.each([
    ['a 407 from a proxy', new AuthError('407', { status: 407 })],
    ['a refusal decided here (no status)', new AuthError('the bearer token holds characters...; nothing was sent')],
    ['a usage error', new UsageError('bad argument')],
  ])('does not end with what the service did not say: %s', async (_label, error) => {
    const outage = new Outage();
    const a = inFlight(outage);
    await unanswered(outage);
    a.settle({ error });
    await a.outcome;
    expect(outage.holding).toBe(true);
  });

  it('ends after OUTAGE_HOLD_MS: calls are sent again (a list read from a pipe may last hours)', async () => {
    const clock = { now: 1_000_000 };
    const outage = new Outage({ holdMs: OUTAGE_HOLD_MS, now: () => clock.now });
    await unanswered(outage);
    clock.now += OUTAGE_HOLD_MS - 1;
    expect(outage.holding).toBe(true);
    clock.now += 1;
    const later = failing();
    expect(await withRetries(later.run, 'safe', recordingPolicy({ outage }))).toBe('done');
    expect(later.calls).toBe(1);
    expect(OUTAGE_HOLD_MS).toBe(30_000);
  });
});

describe('isRetryable and backoffDelay', () => {
  it('only TransientErrors are retryable, and only unprocessed ones in unprocessed-only mode', () => {
    expect(isRetryable(transient(), 'safe')).toBe(true);
    expect(isRetryable(transient(), 'unprocessed-only')).toBe(false);
    expect(isRetryable(transient({ notProcessed: true }), 'unprocessed-only')).toBe(true);
    expect(isRetryable(new Error('x'), 'safe')).toBe(false);
    expect(isRetryable('string', 'safe')).toBe(false);
  });

  it('a Retry-After of 0 means retry now', () => {
    expect(backoffDelay(transient({ retryAfterSeconds: 0 }), 1, recordingPolicy())).toBe(0);
  });

  it('a Retry-After exactly at maxDelayMs is still honoured', () => {
    expect(backoffDelay(transient({ retryAfterSeconds: 5 }), 1, recordingPolicy({ maxDelayMs: 5000 }))).toBe(5000);
  });
});

import { describe, expect, it } from 'vitest';
import { backoffDelay, isRetryable, Outage, withRetries, type RetryPolicy } from '../../src/api/retry.js';
import { AuthError, ProtocolError, ServiceRefusedError, TransientError } from '../../src/errors.js';
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

describe('an outage: a call the service never answered, its retries spent', () => {
  const refused = () => transient({ notProcessed: true, hint: 'the service could not be reached; try again later' });

  it("is not sent again by the run's later calls: each fails at once, not processed, saying why", async () => {
    const outage = new Outage();
    const first = failing(refused(), refused(), refused());
    const last = await rejection(withRetries(first.run, 'safe', recordingPolicy({ retries: 2, outage })));
    expect(first.calls).toBe(3);

    const later = failing();
    const error = await rejection(withRetries(later.run, 'safe', recordingPolicy({ outage })));
    expect(later.calls).toBe(0);
    expect(error).toBeInstanceOf(TransientError);
    expect(error).toMatchObject({
      message:
        'not sent: the service did not answer an earlier call of this run (tried 3 times): GET x failed: ECONNRESET',
      hint: 'the service could not be reached; try again later',
      notProcessed: true,
      exitCode: 4,
      cause: last,
    });
    // Forfait too: nothing was sent, which is what lets its session wait for `complete`.
    expect(await rejection(withRetries(later.run, 'unprocessed-only', recordingPolicy({ outage })))).toBe(error);
  });

  it('stops a call waiting to retry at its next attempt', async () => {
    const outage = new Outage();
    const waiting = failing(refused(), refused());
    let tripped = false;
    const policy = recordingPolicy({
      outage,
      // While this call waits, another spends its retries on no answer.
      wait: async () => {
        if (tripped) return;
        tripped = true;
        await rejection(withRetries(failing(refused()).run, 'safe', recordingPolicy({ retries: 0, outage })));
      },
    });
    const error = await rejection(withRetries(waiting.run, 'safe', policy));
    expect(waiting.calls).toBe(1);
    expect((error as Error).message).toMatch(/^not sent: the service did not answer an earlier call of this run: /);
  });

  it.each([
    [
      'an answer, even a 5xx, which may be about this call alone',
      [transient({ status: 503 }), transient({ status: 503 })],
    ],
    ['no answer, then an answer on the last attempt', [refused(), transient({ status: 500 })]],
    ['an error that is not transient', [new ServiceRefusedError(409, 'conflict')]],
  ])('is not %s', async (_label, errors) => {
    const outage = new Outage();
    await rejection(
      withRetries(failing(...errors).run, 'safe', recordingPolicy({ retries: errors.length - 1, outage })),
    );
    const later = failing();
    expect(await withRetries(later.run, 'safe', recordingPolicy({ outage }))).toBe('done');
    expect(later.calls).toBe(1);
  });

  it('is not a call that got no answer but has retries left when it succeeds', async () => {
    const outage = new Outage();
    expect(await withRetries(failing(refused(), refused()).run, 'safe', recordingPolicy({ outage }))).toBe('done');
    const later = failing();
    expect(await withRetries(later.run, 'safe', recordingPolicy({ outage }))).toBe('done');
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

import { describe, expect, it } from 'vitest';
import {
  backoffDelay,
  isRetryable,
  Outage,
  OUTAGE_HOLD_MS,
  withRetries,
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

describe('an outage: two calls in a row on one route ended badly', () => {
  const refused = () => transient({ notProcessed: true });
  const route = { route: 'request' };
  /** A policy on `outage` with no retry. */
  const once = (outage: Outage) => recordingPolicy({ retries: 0, outage });
  /** A call on `options.route` ('request' by default) ending with `error`, not retried. */
  const ends = (outage: Outage, error: Error, options: { route?: string; optional?: boolean } = route) =>
    rejection(withRetries(failing(error).run, 'safe', once(outage), options));
  /** A call in flight until the test settles it. */
  function inFlight(outage: Outage, options: { route?: string } = route) {
    let settle: (outcome: { value?: string; error?: Error }) => void = () => {};
    const outcome = withRetries(
      () =>
        new Promise<string>((resolve, reject) => {
          settle = ({ value, error }) => (error ? reject(error) : resolve(value!));
        }),
      'safe',
      once(outage),
      options,
    ).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    return { settle: (o: { value?: string; error?: Error }) => settle(o), outcome };
  }
  /** Whether `promise` is still unsettled once pending jobs have run. */
  async function stillPending(promise: Promise<unknown>): Promise<boolean> {
    const marker = Symbol('pending');
    return (await Promise.race([promise, new Promise((resolve) => setImmediate(() => resolve(marker)))])) === marker;
  }

  it.each([
    ['no answer, retries spent', () => refused()],
    ['a 503, retries spent', () => transient({ status: 503 })],
    ['a 429', () => transient({ status: 429, notProcessed: true })],
    ['an answer that could not be read', () => new ProtocolError('the answer is not JSON')],
  ])(
    'is started by %s, twice: later calls fail at once, not processed, each with its own copy',
    async (_label, bad) => {
      const outage = new Outage();
      const first = failing(bad(), bad(), bad());
      await rejection(withRetries(first.run, 'safe', recordingPolicy({ retries: 2, outage }), route));
      expect(outage.holding).toBe(false);
      const last = await ends(outage, bad());
      expect(outage.holding).toBe(true);

      const later = failing();
      const errors = [
        await rejection(withRetries(later.run, 'safe', recordingPolicy({ outage }), route)),
        // Any route, forfait included: nothing was sent, which is what lets its session wait for `complete`.
        await rejection(withRetries(later.run, 'unprocessed-only', recordingPolicy({ outage }), { route: 'forfait' })),
      ];
      expect(later.calls).toBe(0);
      for (const error of errors) {
        expect(error).toBeInstanceOf(HeldBackError);
        expect(error).toMatchObject({
          message: `not sent: the service failed two calls of this run in a row, the last with: ${(last as Error).message}`,
          hint: 'the service is down or failing; try again later',
          notProcessed: true,
          exitCode: 4,
          cause: last,
        });
      }
      // A document's flow adds its own `notarize complete <hash>` to the hint: never to another's.
      expect(errors[0]).not.toBe(errors[1]);
    },
  );

  it('is not started by one bad call alone, nor by two with a call ending well between them', async () => {
    const outage = new Outage();
    await ends(outage, refused());
    expect(outage.holding).toBe(false);
    expect(await withRetries(failing().run, 'safe', once(outage), route)).toBe('done');
    await ends(outage, refused());
    expect(outage.holding).toBe(false);
    // A refusal is an answer that worked: the service processed the call.
    await ends(outage, new ServiceRefusedError(409, 'conflict'));
    await ends(outage, refused());
    expect(outage.holding).toBe(false);
  });

  it('is not started by two bad calls on different routes, nor by a call that began before one ended well', async () => {
    const outage = new Outage();
    await ends(outage, refused(), { route: 'request' });
    await ends(outage, refused(), { route: 'forfait' });
    expect(outage.holding).toBe(false);

    const stale = new Outage();
    await ends(stale, refused());
    const a = inFlight(stale);
    expect(await withRetries(failing().run, 'safe', once(stale), route)).toBe('done');
    a.settle({ error: refused() });
    await a.outcome;
    expect(stale.holding).toBe(false);
  });

  it('is not started by optional calls (custody metadata)', async () => {
    const outage = new Outage();
    await ends(outage, refused(), { route: 'file', optional: true });
    await ends(outage, refused(), { route: 'file', optional: true });
    expect(outage.holding).toBe(false);
  });

  it("quotes the failure without its document's hash, which is another document's", async () => {
    const outage = new Outage();
    const other = (hash: string) =>
      new TransientError(`POST http://127.0.0.1:1/api/v2/registration/${hash}/forfait answered 503`, { status: 503 });
    await ends(outage, other('ab'.repeat(32)), { route: 'forfait' });
    await ends(outage, other('cd'.repeat(32)), { route: 'forfait' });
    const error = (await rejection(withRetries(failing().run, 'safe', once(outage), route))) as Error;
    expect(error.message).toBe(
      'not sent: the service failed two calls of this run in a row, the last with: ' +
        'POST http://127.0.0.1:1/api/v2/registration/<hash>/forfait answered 503',
    );
  });

  it('makes a new call wait while others are in flight: sent once one on its route ends well', async () => {
    const outage = new Outage();
    const other = inFlight(outage, { route: 'forfait' });
    const a = inFlight(outage);
    await ends(outage, refused());
    await ends(outage, refused());
    const later = failing();
    const call = withRetries(later.run, 'safe', recordingPolicy({ outage }), route);
    expect(await stillPending(call)).toBe(true);
    // A call on another route ending well does not end it: that route works, this one does not.
    other.settle({ value: 'done' });
    await other.outcome;
    expect(await stillPending(call)).toBe(true);
    a.settle({ error: new ServiceRefusedError(409, 'conflict') });
    expect(await call).toBe('done');
    expect(later.calls).toBe(1);
  });

  it('makes a new call wait while others are in flight: held back once none is left', async () => {
    const outage = new Outage();
    const a = inFlight(outage);
    await ends(outage, refused());
    await ends(outage, refused());
    const later = failing();
    const call = rejection(withRetries(later.run, 'safe', recordingPolicy({ outage }), route));
    expect(await stillPending(call)).toBe(true);
    a.settle({ error: refused() });
    expect(await call).toBeInstanceOf(HeldBackError);
    expect(later.calls).toBe(0);
  });

  it('does not retry a call whose outage stands, and does not say "not sent": it ends with its own last error', async () => {
    const outage = new Outage();
    const own = refused();
    const waiting = failing(own, refused());
    // While this call waits to retry, two others end badly.
    const policy = recordingPolicy({ outage, wait: () => ends(outage, refused()).then(() => ends(outage, refused())) });
    // Its first attempt may have been processed (a request step's answer lost): "not sent" would be false.
    expect(await rejection(withRetries(waiting.run, 'safe', policy, route))).toBe(own);
    expect(waiting.calls).toBe(1);
    expect(outage.holding).toBe(true);
  });

  it.each<[string, Error]>([
    ['a 407 from a proxy', new AuthError('407', { status: 407 })],
    ['a refusal decided here (no status)', new AuthError('the bearer token holds characters...; nothing was sent')],
    ['a usage error', new UsageError('bad argument')],
    ['a 5xx', transient({ status: 502 })],
  ])('does not end with what is not an answer that worked: %s', async (_label, error) => {
    const outage = new Outage();
    const a = inFlight(outage);
    await ends(outage, refused());
    await ends(outage, refused());
    a.settle({ error });
    await a.outcome;
    expect(outage.holding).toBe(true);
  });

  it('ends after OUTAGE_HOLD_MS: calls are sent again (a list read from a pipe may last hours)', async () => {
    const clock = { now: 1_000_000 };
    const outage = new Outage({ holdMs: OUTAGE_HOLD_MS, now: () => clock.now });
    await ends(outage, refused());
    await ends(outage, refused());
    clock.now += OUTAGE_HOLD_MS - 1;
    expect(outage.holding).toBe(true);
    clock.now += 1;
    const later = failing();
    expect(await withRetries(later.run, 'safe', recordingPolicy({ outage }), route)).toBe('done');
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

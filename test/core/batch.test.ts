/**
 * runAll over an async source (pulled as lanes free up, results reported,
 * not kept), its window for in-order printing, and the exit code of a batch
 * (2 only when nothing was sent).
 */
import { describe, expect, it } from 'vitest';
import { BatchError, FailureTally, runAll, type Settled } from '../../src/core/batch.js';
import { AuthError, ProtocolError, TransientError, UsageError, type NotarizeError } from '../../src/errors.js';

async function* numbers(count: number, pulled: { n: number }): AsyncGenerator<number> {
  for (let i = 0; i < count; i++) {
    // A source that really is asynchronous, as a file being read.
    await Promise.resolve();
    pulled.n = i + 1;
    yield i;
  }
}

describe('runAll', () => {
  it('pulls an async source only as lanes free up, reporting every item with its index', async () => {
    const pulled = { n: 0 };
    let inFlight = 0;
    let maxInFlight = 0;
    let maxAhead = 0;
    const seen: [number, number][] = [];
    const total = await runAll(
      numbers(500, pulled),
      async (item) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        maxAhead = Math.max(maxAhead, pulled.n - seen.length);
        await new Promise((resolve) => setTimeout(resolve, item % 7));
        inFlight--;
        if (item % 10 === 3) throw new UsageError(`bad ${item}`);
        return item * 2;
      },
      {
        concurrency: 4,
        onSettled: (index, result: Settled<number>, item) => {
          expect(index).toBe(item);
          seen.push([index, result.ok ? result.value : -1]);
        },
      },
    );
    expect(total).toBe(500);
    expect(maxInFlight).toBe(4);
    // The source is never read far ahead of what has settled.
    expect(maxAhead).toBeLessThanOrEqual(5);
    expect(seen.sort((a, b) => a[0] - b[0])).toEqual(
      Array.from({ length: 500 }, (_, i) => [i, i % 10 === 3 ? -1 : i * 2]),
    );
  });

  it('keeps the started items within `window` of the oldest one not settled', async () => {
    let release!: () => void;
    const slow = new Promise<void>((resolve) => (release = resolve));
    const started: number[] = [];
    const run = runAll(
      Array.from({ length: 100 }, (_, i) => i),
      async (item) => {
        started.push(item);
        if (item === 0) await slow;
      },
      { concurrency: 4, window: 10 },
    );
    // Waited for (bounded: a loaded machine is slow to start them), then a while longer for any past it.
    for (let i = 0; i < 500 && !started.includes(9); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Item 0 holds the window: nothing past index 9 has started.
    expect(Math.max(...started)).toBe(9);
    release();
    expect(await run).toBe(100);
    expect(started).toHaveLength(100);
  });

  it("rejects with onSettled's own error for an item settled early, and leaves no rejection unhandled", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const calls: number[] = [];
      const run = runAll(
        [0, 1, 2, 3],
        async (item) => {
          // Item 0 is done long before the others.
          await new Promise((resolve) => setTimeout(resolve, item === 0 ? 1 : 30));
          return item;
        },
        {
          concurrency: 2,
          window: 2, // item 0's failing report must still move the window on
          onSettled: (index) => {
            calls.push(index);
            if (index === 0) throw new Error('onSettled failed for item 0');
          },
        },
      );
      await expect(run).rejects.toThrow('onSettled failed for item 0');
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(unhandled).toEqual([]);
      // Once per item, the failing one included.
      expect(calls.sort()).toEqual([0, 1, 2, 3]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('with failFast, a failure cancels the items not started', async () => {
    const results: string[] = [];
    await runAll(
      Array.from({ length: 20 }, (_, i) => i),
      async (item) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        if (item === 0) throw new UsageError('bad 0');
        return item;
      },
      {
        concurrency: 2,
        failFast: true,
        onSettled: (_index, result) => results.push(result.ok ? 'ok' : 'cancelled' in result ? 'cancelled' : 'failed'),
      },
    );
    expect(results).toHaveLength(20);
    expect(results.filter((r) => r === 'failed')).toHaveLength(1);
    // Item 0 failed within 5 ms, while the lanes were still starting items: most never ran.
    expect(results.filter((r) => r === 'cancelled').length).toBeGreaterThan(10);
  });

  it('throws an error of the source once the items in flight have settled', async () => {
    async function* failing(): AsyncGenerator<number> {
      yield await Promise.resolve(1);
      throw new UsageError('no input given');
    }
    const settled: number[] = [];
    await expect(
      runAll(failing(), (n) => Promise.resolve(n), { concurrency: 3, onSettled: (i) => settled.push(i) }),
    ).rejects.toThrow('no input given');
    expect(settled).toEqual([0]);
  });

  it('runs again an item that failed for want of file descriptors with nothing sent (exit 2), not one that sent something', async () => {
    const emfile = () => Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' });
    const attempts = [0, 0];
    const results: Settled<string>[] = [];
    await runAll(
      [0, 1],
      async (item) => {
        await Promise.resolve();
        attempts[item]!++;
        // Item 0: its document's open failed twice (nothing sent); item 1: a record not saved (sent: exit 1).
        if (item === 0 && attempts[0]! < 3) throw new UsageError("cannot read 'a'", { cause: emfile() });
        if (item === 1) throw new ProtocolError('record not saved', { cause: emfile() });
        return 'registered';
      },
      { concurrency: 2, onSettled: (index, result) => (results[index] = result), runAgain: () => true },
    );
    expect(attempts).toEqual([3, 1]);
    expect(results[0]).toEqual({ ok: true, value: 'registered' });
    expect(results[1]).toMatchObject({ ok: false, error: { message: 'record not saved' } });
  });

  it('never runs again an item the caller does not say may be (standard input, read once)', async () => {
    let attempts = 0;
    const results: Settled<string>[] = [];
    await runAll(
      ['-'],
      async () => {
        await Promise.resolve();
        attempts++;
        throw new UsageError('no descriptor for its lock', {
          cause: Object.assign(new Error('EMFILE'), { code: 'EMFILE' }),
        });
      },
      { concurrency: 1, onSettled: (index, result) => (results[index] = result), runAgain: (item) => item !== '-' },
    );
    expect(attempts).toBe(1);
    expect(results[0]).toMatchObject({ ok: false, error: { message: 'no descriptor for its lock' } });
  });
});

describe('FailureTally', () => {
  const usage = new UsageError('cannot read');
  const transient = new TransientError('503');
  /** The tally of items failing with `errors`, settled in reverse order (as a batch may settle them). */
  const tallyOf = (errors: readonly (NotarizeError | undefined)[]) => {
    const tally = new FailureTally();
    [...errors.entries()].reverse().forEach(([index, error]) => tally.add(index, error));
    return tally;
  };
  it('2 for a local failure only when nothing was sent; else 1', () => {
    expect(tallyOf([undefined, usage]).code(false)).toBe(2);
    expect(tallyOf([undefined, usage]).code(true)).toBe(1);
  });
  it('4 when every failure was transient; else the first lasting failure in input order', () => {
    expect(tallyOf([transient, undefined, transient]).code(true)).toBe(4);
    expect(tallyOf([transient, new AuthError('401'), usage]).code(true)).toBe(3);
    expect(tallyOf([undefined, undefined]).code(true)).toBe(0);
  });
  it('failure: a BatchError counting the failed items with the exit code; none when all succeeded', () => {
    expect(tallyOf([undefined, undefined]).failure(true, 2)).toBeUndefined();
    const failure = tallyOf([transient, undefined, usage]).failure(true, 3);
    expect(failure).toBeInstanceOf(BatchError);
    expect(failure).toMatchObject({ exitCode: 1, message: '2 of 3 items failed' });
  });
  it("failure's hint: the deciding failure's own (a table shows no item's hint), and whether others differ", () => {
    const unread = new ProtocolError('the answer could not be read', { hint: 'finish it with notarize complete h' });
    const other = new UsageError('no such file', { hint: 'check the path' });
    expect(tallyOf([transient, transient]).failure(true, 2)?.hint).toBe(
      'every failure was transient: run the same command again later',
    );
    expect(tallyOf([transient, unread, unread]).failure(true, 3)?.hint).toBe('finish it with notarize complete h');
    expect(tallyOf([unread, other]).failure(true, 2)?.hint).toBe(
      "finish it with notarize complete h; each item's own hint is in its result (error.hint with --json)",
    );
    expect(tallyOf([usage, other]).failure(true, 2)?.hint).toBe(
      "each item's own hint is in its result (error.hint with --json)",
    );
    expect(tallyOf([usage]).failure(true, 1)?.hint).toBeUndefined();
  });
  it('failure\'s hint when a transient failure lacked a file descriptor: the limit to raise, not "later" (r79)', () => {
    const shortOfFds = new TransientError('POST /x failed: EMFILE', {
      cause: Object.assign(new Error('EMFILE'), { code: 'EMFILE' }),
    });
    const expected =
      "every failure was transient: raise the limit of open files (ulimit -n), or lower register's -j, then run the command again";
    expect(tallyOf([shortOfFds, shortOfFds]).failure(true, 2)?.hint).toBe(expected);
    // Some, not all: "later" for the others, the limit for those (r81).
    expect(tallyOf([transient, shortOfFds, shortOfFds]).failure(true, 3)?.hint).toBe(
      "every failure was transient: run the same command again later (2 short of file descriptors: first raise the limit of open files (ulimit -n), or lower register's -j)",
    );
    expect(tallyOf([transient, undefined]).failure(true, 2)?.hint).toBe(
      'every failure was transient: run the same command again later',
    );
  });
});

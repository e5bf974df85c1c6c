/**
 * Running one operation over many inputs: a bounded number at once, each
 * with its own result, one failure never stopping the others (unless
 * --fail-fast), and an exit code that tells a script whether a retry can
 * help. Knows nothing of what the operation is, but that a failure of exit
 * 2 sent nothing, and what the caller says may be run again (`runAgain`).
 */
import { EXIT, NotarizeError, nothingSent, type ExitCode } from '../errors.js';
import { FD_SHORTAGE_REMEDY, isFdShortage, whenFdsFree } from '../fd-shortage.js';

/** An item's failure, normalised so unexpected errors have a code too. */
export function asNotarizeError(error: unknown): NotarizeError {
  if (error instanceof NotarizeError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new NotarizeError('unexpected', EXIT.failed, `unexpected error: ${message}`, { cause: error });
}

export type Settled<R> = { ok: true; value: R } | { ok: false; error: NotarizeError } | { ok: false; cancelled: true };

export interface RunOptions<T, R> {
  concurrency: number;
  failFast?: boolean;
  /**
   * At most this many items between the oldest one not yet settled and the
   * next one started, so a caller printing in input order holds a bounded
   * number of results behind a slow item. Default: no limit.
   */
  window?: number;
  /** Called as each item settles, in completion order (for in-order printing, NDJSON and progress). */
  onSettled?: (index: number, result: Settled<R>, item: T) => void;
  /**
   * Whether `item` may be run again from the start, when it failed for want
   * of file descriptors with nothing sent (exit 2): its document's open or
   * its lock's, once the items in flight have freed theirs (fd-shortage.ts;
   * failing at once drained a whole batch in milliseconds). Only an item
   * whose input can be read twice: standard input, read once, would be
   * hashed again as empty. Default: none.
   */
  runAgain?: (item: T) => boolean;
}

/**
 * Runs `operation` over `items` with at most `concurrency` in flight, and
 * reports each result to `onSettled`; returns how many items there were.
 * Items are pulled from the (possibly async) iterable only as lanes free up,
 * so a source of millions is never held, and results are not kept here. With
 * failFast, items not yet started when one fails are reported as cancelled.
 * An error of the iterable itself ends the run (once the items in flight have
 * settled) and is thrown.
 */
export async function runAll<T, R>(
  items: Iterable<T> | AsyncIterable<T>,
  operation: (item: T, index: number) => Promise<R>,
  options: RunOptions<T, R>,
): Promise<number> {
  const iterator: Iterator<T> | AsyncIterator<T> =
    Symbol.asyncIterator in items ? items[Symbol.asyncIterator]() : items[Symbol.iterator]();
  let count = 0;
  let requested = 0;
  let stop = false;
  let exhausted = false;
  let sourceFailed: { error: unknown } | undefined;
  // Pulls are chained: an iterator need not support overlapping next() calls,
  // and items get their indexes in source order.
  let pulls: Promise<unknown> = Promise.resolve();
  const pull = (): Promise<{ item: T; index: number } | undefined> => {
    const pulled = pulls.then(async () => {
      if (sourceFailed) return undefined;
      const next = await iterator.next();
      if (next.done) {
        exhausted = true;
        return undefined;
      }
      return { item: next.value, index: count++ };
    });
    pulls = pulled.catch(() => undefined);
    return pulled;
  };
  // The window: indexes settled above the oldest unsettled one, and lanes waiting for it to move.
  let oldest = 0;
  const settledAbove = new Set<number>();
  let waiting: (() => void)[] = [];
  const settle = (index: number, result: Settled<R>, item: T) => {
    try {
      options.onSettled?.(index, result, item);
    } finally {
      // Even when onSettled throws: lanes waiting on the window must not wait forever.
      settledAbove.add(index);
      while (settledAbove.delete(oldest)) oldest++;
      const wake = waiting;
      waiting = [];
      for (const resolve of wake) resolve();
    }
  };
  // onSettled's own failure (a defect of the caller): no item is started after it, and it ends the run.
  let reportFailed: { error: unknown } | undefined;
  const report = (index: number, result: Settled<R>, item: T) => {
    try {
      settle(index, result, item);
    } catch (error) {
      reportFailed ??= { error };
      stop = true;
    }
  };
  const lane = async () => {
    for (;;) {
      while (!exhausted && options.window !== undefined && requested - oldest >= Math.max(1, options.window)) {
        await new Promise<void>((resolve) => waiting.push(resolve));
      }
      requested++;
      let next;
      try {
        next = await pull();
      } catch (error) {
        sourceFailed ??= { error };
        exhausted = true;
        return;
      }
      if (!next) return;
      const { item, index } = next;
      if (stop) {
        report(index, { ok: false, cancelled: true }, item);
        continue;
      }
      let result: Settled<R>;
      try {
        const again = options.runAgain?.(item) ? nothingSent : () => false;
        result = { ok: true, value: await whenFdsFree(() => operation(item, index), { onlyIf: again }) };
      } catch (error) {
        if (options.failFast) stop = true;
        result = { ok: false, error: asNotarizeError(error) };
      }
      report(index, result, item);
    }
  };
  const lanes = Math.max(1, Array.isArray(items) ? Math.min(options.concurrency, items.length) : options.concurrency);
  await Promise.all(Array.from({ length: lanes }, lane));
  if (reportFailed) throw reportFailed.error;
  if (sourceFailed) throw sourceFailed.error;
  return count;
}

/**
 * Tallies a batch's failures as items settle, to give its exit code without
 * keeping every error (see `code`).
 */
export class FailureTally {
  failed = 0;
  /** The lasting (not transient) failure of the lowest index so far, and what its error says to do. */
  #firstLasting: { index: number; code: ExitCode; hint: string | undefined } | undefined;
  /** The one hint failures gave so far; `several` once two differed (then each item's is in its JSON result). */
  #hints: { one: string } | 'several' | undefined;
  /** Transient failures for want of a file descriptor, which "later" does not cure. */
  #fdShortage = 0;

  /** Counts the item at `index` (input order; items may settle in any order) if it failed. */
  add(index: number, error: NotarizeError | undefined): void {
    if (error === undefined) return;
    this.failed++;
    if (error.hint !== undefined && this.#hints !== 'several') {
      this.#hints = this.#hints === undefined || this.#hints.one === error.hint ? { one: error.hint } : 'several';
    }
    if (error.exitCode === EXIT.transient && isFdShortage(error)) this.#fdShortage++;
    if (error.exitCode !== EXIT.transient && (this.#firstLasting === undefined || index < this.#firstLasting.index)) {
      this.#firstLasting = { index, code: error.exitCode, hint: error.hint };
    }
  }

  /**
   * The exit code of the batch: 0 when every item succeeded; 4 when every
   * failure was transient (running the same command again can help:
   * finished items are skipped as already registered); otherwise the code of
   * the first other failure in input order (1, 2, 3 or 5: a retry alone will
   * not help). Exit 2 promises that nothing was sent: once `sent` (some item
   * reached the service), a local failure gives 1 instead.
   */
  code(sent: boolean): ExitCode {
    if (this.failed === 0) return EXIT.ok;
    if (this.#firstLasting === undefined) return EXIT.transient;
    const { code } = this.#firstLasting;
    return sent && code === EXIT.usage ? EXIT.failed : code;
  }

  /**
   * What ends the batch (see `code`) for main() to report, after its
   * results; undefined when every item succeeded. Its hint is what to do:
   * a table shows each item's error but not its hint, so the hint of the
   * failure that decided the exit code is said here (a re-run that fails
   * the same way must still show the way out).
   */
  failure(sent: boolean, total: number): BatchError | undefined {
    const code = this.code(sent);
    if (code === EXIT.ok) return undefined;
    const several = "each item's own hint is in its result (error.hint with --json)";
    let hint: string | undefined;
    if (code === EXIT.transient) {
      // As each item's own hint says: where the limit of open files is the cause, "later" is no cure.
      // (Exit 4: every failure was transient.)
      if (this.#fdShortage === this.failed)
        hint = `every failure was transient: ${FD_SHORTAGE_REMEDY}, then run the command again`;
      else if (this.#fdShortage > 0)
        hint = `every failure was transient: run the same command again later (${this.#fdShortage} short of file descriptors: first ${FD_SHORTAGE_REMEDY})`;
      else hint = 'every failure was transient: run the same command again later';
    } else if (this.#firstLasting?.hint !== undefined) {
      hint = this.#hints === 'several' ? `${this.#firstLasting.hint}; ${several}` : this.#firstLasting.hint;
    } else if (this.#hints !== undefined) hint = several;
    return new BatchError(this.failed, total, code, hint);
  }
}

/** Why an item did not succeed: its error, or, cancelled by --fail-fast, that it never started. */
export function settledError(settled: Exclude<Settled<unknown>, { ok: true }>): NotarizeError {
  return 'error' in settled ? settled.error : asNotarizeError(new Error('not started'));
}

/** Thrown after a batch's results are printed, to set the exit code. */
export class BatchError extends NotarizeError {
  constructor(failed: number, total: number, exitCode: ExitCode, hint?: string) {
    super('batch_failed', exitCode, `${failed} of ${total} item${total === 1 ? '' : 's'} failed`, hint ? { hint } : {});
  }
}

/**
 * Running one operation over many inputs: a bounded number at once, each
 * with its own result, one failure never stopping the others (unless
 * --fail-fast), and an exit code that tells a script whether a retry can
 * help. Knows nothing of what the operation is.
 */
import { EXIT, NotarizeError, type ExitCode } from '../errors.js';

/** An item's failure, normalised so unexpected errors have a code too. */
export function asNotarizeError(error: unknown): NotarizeError {
  if (error instanceof NotarizeError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new NotarizeError('unexpected', EXIT.refused, `unexpected error: ${message}`, { cause: error });
}

export type Settled<R> = { ok: true; value: R } | { ok: false; error: NotarizeError } | { ok: false; cancelled: true };

export interface RunOptions<R> {
  concurrency: number;
  failFast?: boolean;
  /** Called as each item settles, in completion order (for NDJSON and progress). */
  onSettled?: (index: number, result: Settled<R>) => void;
}

/**
 * Runs `operation` over `items` with at most `concurrency` in flight and
 * returns one result per item, in input order. With failFast, items not yet
 * started when one fails are reported as cancelled.
 */
export async function runAll<T, R>(
  items: readonly T[],
  operation: (item: T, index: number) => Promise<R>,
  options: RunOptions<R>,
): Promise<Settled<R>[]> {
  const results = new Array<Settled<R>>(items.length);
  let next = 0;
  let stop = false;
  const settle = (index: number, result: Settled<R>) => {
    results[index] = result;
    options.onSettled?.(index, result);
  };
  const lane = async () => {
    while (next < items.length) {
      const index = next++;
      if (stop) {
        settle(index, { ok: false, cancelled: true });
        continue;
      }
      try {
        settle(index, { ok: true, value: await operation(items[index] as T, index) });
      } catch (error) {
        if (options.failFast) stop = true;
        settle(index, { ok: false, error: asNotarizeError(error) });
      }
    }
  };
  const lanes = Math.max(1, Math.min(options.concurrency, items.length));
  await Promise.all(Array.from({ length: lanes }, lane));
  return results;
}

/**
 * The exit code of a batch: 0 when every item succeeded; 4 when every failure
 * was transient (running the same command again can help: finished items are
 * skipped as already registered); otherwise the code of the first other
 * failure in input order (1, 2, 3 or 5: a retry alone will not help).
 */
export function batchExitCode(errors: readonly (NotarizeError | undefined)[]): ExitCode {
  const failures = errors.filter((e): e is NotarizeError => e !== undefined);
  if (failures.length === 0) return EXIT.ok;
  const lasting = failures.find((e) => e.exitCode !== EXIT.transient);
  return lasting ? lasting.exitCode : EXIT.transient;
}

/** Thrown after a batch's results are printed, to set the exit code. */
export class BatchError extends NotarizeError {
  constructor(failed: number, total: number, exitCode: ExitCode) {
    super(
      'batch_failed',
      exitCode,
      `${failed} of ${total} item${total === 1 ? '' : 's'} failed`,
      exitCode === EXIT.transient ? { hint: 'every failure was transient: run the same command again later' } : {},
    );
  }
}

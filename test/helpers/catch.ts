/** Capture an error to assert on all its fields (class, exit code, message) at once. */

/** Awaits a promise that must reject and returns what it rejected with. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the promise to reject, but it resolved');
}

/** Calls a function that must throw and returns what it threw. */
export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to throw, but it returned');
}

/** An error class, for the checks below. */
type ErrorClass<T extends Error> = abstract new (...args: never[]) => T;

function ofClass<T extends Error>(error: unknown, type: ErrorClass<T>): T {
  if (error instanceof type) return error;
  throw new Error(`expected a ${type.name}, got: ${String(error)}`, { cause: error });
}

/** Awaits a promise that must reject with a `type` and returns what it rejected with. */
export async function rejectionOf<T extends Error>(promise: Promise<unknown>, type: ErrorClass<T>): Promise<T> {
  return ofClass(await rejection(promise), type);
}

/** Calls a function that must throw a `type` and returns what it threw. */
export function thrownOf<T extends Error>(fn: () => unknown, type: ErrorClass<T>): T {
  return ofClass(thrown(fn), type);
}

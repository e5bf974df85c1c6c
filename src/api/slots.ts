/**
 * How many requests a run has at the service at once (`register -j`): a
 * counting semaphore with two queues. A request that finishes what a saved
 * session began (forfait, custody metadata) is let through before one that
 * would begin something new (a request step, a login), so a session kept in
 * the store waits for its completion as briefly as the limit allows.
 *
 * The limit is on requests, not on documents: a batch keeps more documents
 * in flight than it has slots, so that while one document hashes, takes its
 * lock or makes its session durable, another's request uses the slot, and
 * the connections never wait for the disk (docs/performance.md §6).
 */

/** Lets one request through; call it once the request's answer is read or has failed. */
export type ReleaseSlot = () => void;

export class RequestSlots {
  #limit = Number.POSITIVE_INFINITY;
  #taken = 0;
  readonly #finishing: (() => void)[] = [];
  readonly #beginning: (() => void)[] = [];

  /** From now on, at most `limit` (≥ 1) requests at once; without a call, no limit. */
  limit(limit: number): void {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`a request limit must be a whole number ≥ 1, not ${limit}`);
    this.#limit = limit;
    this.#wake();
  }

  /** Waits for a slot (`finishing` requests first, each queue in arrival order) and returns its release. */
  async take(finishing: boolean): Promise<ReleaseSlot> {
    if (this.#taken >= this.#limit || this.#finishing.length > 0 || this.#beginning.length > 0) {
      await new Promise<void>((resolve) => (finishing ? this.#finishing : this.#beginning).push(resolve));
    } else {
      this.#taken++;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#taken--;
      this.#wake();
    };
  }

  /** Hands free slots to the waiting requests, the finishing ones first. */
  #wake(): void {
    while (this.#taken < this.#limit) {
      const next = this.#finishing.shift() ?? this.#beginning.shift();
      if (next === undefined) return;
      this.#taken++;
      next();
    }
  }
}

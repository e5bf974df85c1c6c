/**
 * Questions answered from the local ledger alone, with no network: is this
 * digest notarized, and was a file of this name notarized with another
 * digest (a modified document)?
 */
import { basename } from 'node:path';
import type { StoreError } from '../errors.js';
import type { LedgerEntry, ServiceStore } from '../store/service-store.js';

export type Verdict =
  | { status: 'verified'; entry: LedgerEntry }
  | { status: 'modified'; entry: LedgerEntry }
  /** `damaged`: the ledger has a file for this digest, but it is no proof (unreadable, or a record of another hash). */
  | { status: 'unknown'; damaged?: StoreError };

/** The ledger read once, indexed by digest and by file name. */
export class LedgerIndex {
  readonly #byHash = new Map<string, LedgerEntry>();
  readonly #byName = new Map<string, LedgerEntry>();
  readonly #damaged = new Map<string, StoreError>();

  constructor(entries: readonly LedgerEntry[], problems: readonly StoreError[] = []) {
    for (const problem of problems) this.#damaged.set(basename(problem.file, '.json'), problem);
    for (const entry of entries) {
      this.#byHash.set(entry.hash, entry);
      const name = entry.file?.name;
      const known = name === undefined ? undefined : this.#byName.get(name);
      // For a name notarized several times, the latest completion speaks for it.
      if (name !== undefined && (!known || known.completedAt < entry.completedAt)) this.#byName.set(name, entry);
    }
  }

  /** Reads the whole ledger of a service; damaged files are returned as problems. */
  static async load(store: ServiceStore) {
    const { entries, problems } = await store.listRecords();
    return { index: new LedgerIndex(entries, problems), problems };
  }

  /** The verdict for a document of digest `hash` named `name` (its base name). */
  verdict(hash: string, name: string | undefined): Verdict {
    const entry = this.#byHash.get(hash);
    if (entry) return { status: 'verified', entry };
    const damaged = this.#damaged.get(hash);
    if (damaged) return { status: 'unknown', damaged };
    const sameName = name === undefined ? undefined : this.#byName.get(name);
    return sameName ? { status: 'modified', entry: sameName } : { status: 'unknown' };
  }
}

/**
 * Questions answered from the local ledger alone, with no network: is this
 * digest notarized, and was a file of this name notarized with another
 * digest (a modified document)?
 */
import type { LedgerEntry, ServiceStore } from '../store/service-store.js';

export type Verdict =
  { status: 'verified'; entry: LedgerEntry } | { status: 'modified'; entry: LedgerEntry } | { status: 'unknown' };

/** The ledger read once, indexed by digest and by file name. */
export class LedgerIndex {
  readonly #byHash = new Map<string, LedgerEntry>();
  readonly #byName = new Map<string, LedgerEntry>();

  constructor(entries: readonly LedgerEntry[]) {
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
    return { index: new LedgerIndex(entries), problems };
  }

  /** The verdict for a document of digest `hash` named `name` (its base name). */
  verdict(hash: string, name: string | undefined): Verdict {
    const entry = this.#byHash.get(hash);
    if (entry) return { status: 'verified', entry };
    const sameName = name === undefined ? undefined : this.#byName.get(name);
    return sameName ? { status: 'modified', entry: sameName } : { status: 'unknown' };
  }
}

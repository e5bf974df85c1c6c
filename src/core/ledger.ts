/**
 * Questions answered from the local ledger alone, with no network: is this
 * digest notarized, by its own record or as a document under a registered
 * Merkle root (aggregate.ts), and was a file of this name notarized with
 * another digest (a modified document)?
 */
import { basename } from 'node:path';
import { StoreError } from '../errors.js';
import type { LedgerEntry, ServiceStore } from '../store/service-store.js';
import { confirmedOf, Trees, type LoadedTree } from './trees.js';
import type { InclusionProof } from './receipt-format.js';

export type Verdict =
  /**
   * `proof`: the document is a leaf of the registered root `entry` is the record of. `laterNamesake`:
   * a file of this name was notarized later with another digest (see LedgerIndex.verdict).
   */
  | {
      status: 'verified';
      entry: LedgerEntry;
      proof?: InclusionProof;
      laterNamesake?: Namesake;
      /**
       * The digest was notarized as `notarizedAs` (null: with no name, standard input or --hash), never
       * under the name asked about, which was notarized with other digests: another document's bytes
       * copied over this one, or a copy of that document under this name (r117, r118).
       */
      namedOtherwise?: NamedOtherwise;
    }
  /**
   * A file of this name was notarized with digest `sha256`, completed at
   * `completedAt` (the latest of `digests` distinct digests notarized under
   * that name: a name is a base name, which files of several folders share).
   */
  | { status: 'modified'; name: string; sha256: string; completedAt: string; digests: number }
  /**
   * `damaged`: the ledger has a file for this digest, but it is no proof (unreadable, or a record of another hash).
   * `confirmedUnder`: the service answered 409 for this digest, or for the root of a tree holding it
   * (that root), but its record never reached this store: registered by the service's word, with no proof here.
   */
  | { status: 'unknown'; damaged?: StoreError; confirmedUnder?: string };

/** The latest notarization of a file name with another digest than the one asked about: which, and when. */
export interface Namesake {
  name: string;
  sha256: string;
  completedAt: string;
}

/** What the ledger knows of a name a digest was never notarized under (LedgerIndex.verdict). */
export interface NamedOtherwise {
  name: string;
  /** The latest digest notarized under `name`, when, and how many there are. */
  sha256: string;
  completedAt: string;
  digests: number;
  /** The name the digest was notarized under; null: none (standard input or --hash). */
  notarizedAs: string | null;
}

/** The record of a registered tree's root: every tree LedgerIndex is given has one (Trees.load, registeredOnly). */
function registeredRecord(tree: LoadedTree): LedgerEntry {
  if (tree.record === undefined) throw new Error(`tree ${tree.entry.root} is not registered`);
  return tree.record;
}

/** What the ledger knows of a file name: the digest it was last notarized with, and when, and every digest under it. */
interface NamedDigest {
  sha256: string;
  completedAt: string;
  all: Set<string>;
}

/** The registered trees (trees.ts indexes them by document), and where a tree's file is, for its errors. */
interface RegisteredTrees {
  trees: Trees;
  treeFile: (root: string) => string;
  /** What the service confirmed (a 409) without a record reaching this store: hashes, and the trees of such roots. */
  confirmed?: { hashes: ReadonlySet<string>; trees: Trees };
}

/** The ledger read once (with its registered trees), indexed by digest and by file name. */
export class LedgerIndex {
  readonly #byHash = new Map<string, LedgerEntry>();
  readonly #byName = new Map<string, NamedDigest>();
  /** Whether the names of the registered trees' leaves are in #byName yet (#nameLeaves). */
  #leavesNamed = false;
  readonly #damaged = new Map<string, StoreError>();
  readonly #registered: RegisteredTrees | undefined;

  constructor(entries: readonly LedgerEntry[], problems: readonly StoreError[] = [], registered?: RegisteredTrees) {
    this.#registered = registered;
    for (const problem of problems) this.#damaged.set(basename(problem.file, '.json'), problem);
    for (const entry of entries) {
      this.#byHash.set(entry.hash, entry);
      if (entry.file?.name !== undefined) this.#name(entry.file.name, entry.hash, entry.completedAt);
    }
  }

  /**
   * Adds the names of the registered trees' leaves, the first time a verdict
   * needs names: only of trees whose leaves make their root (each is built
   * to tell), since a leaf of a damaged tree says nothing of what was
   * notarized, not even that a file of its name was.
   */
  #nameLeaves(): void {
    if (this.#leavesNamed) return;
    this.#leavesNamed = true;
    for (const tree of this.#registered?.trees.all ?? []) {
      try {
        tree.merkle(this.#registered!.treeFile(tree.entry.root));
      } catch (error) {
        if (!(error instanceof StoreError)) throw error;
        continue;
      }
      const { completedAt } = registeredRecord(tree);
      for (const leaf of tree.entry.leaves) if (leaf.name !== null) this.#name(leaf.name, leaf.sha256, completedAt);
    }
  }

  /** For a name notarized several times, the latest completion speaks for it; every digest is counted. */
  #name(name: string, sha256: string, completedAt: string): void {
    const known = this.#byName.get(name);
    if (!known) this.#byName.set(name, { sha256, completedAt, all: new Set([sha256]) });
    else {
      known.all.add(sha256);
      if (known.completedAt < completedAt) Object.assign(known, { sha256, completedAt });
    }
  }

  /** Reads the whole ledger of a service and its registered trees; damaged files are returned as problems. */
  static async load(store: ServiceStore) {
    const { entries, problems } = await store.listRecords();
    // Only the trees whose root has a record are read: the others prove nothing yet.
    const roots = new Set(entries.map((entry) => entry.hash));
    const trees = await Trees.load(store, { registeredOnly: true, roots });
    // What the service said it has without a record here: no proof, but not "unknown to anyone" either.
    const hashes = await confirmedOf(store, trees);
    const confirmed = {
      hashes,
      trees: hashes.size === 0 ? new Trees([]) : await Trees.load(store, { roots: hashes, confirmed: hashes }),
    };
    const all = [...problems, ...trees.problems];
    const treeFile = (root: string) => store.treeFile(root);
    return { index: new LedgerIndex(entries, all, { trees, treeFile, confirmed }), problems: all };
  }

  /**
   * The verdict for a document of digest `hash` named `name` (its base name).
   * A verified one whose name was notarized later with another digest says
   * so (`laterNamesake`): an older build swapped in passes here, since the
   * ledger knows names without their folders and cannot tell a namesake in
   * another folder (dist/mac/app.tgz beside dist/linux/app.tgz) from a
   * later build of the same file (r97); receipts, named after the folders
   * register walked, can.
   */
  verdict(hash: string, name: string | undefined): Verdict {
    const entry = this.#byHash.get(hash);
    if (entry) return this.#verified(hash, name, { status: 'verified', entry }, entry.file?.name ?? null);
    const placed = this.#registered?.trees.place(hash);
    if (placed) {
      const { tree, leafIndex } = placed;
      try {
        const proof = tree.proof(leafIndex, this.#registered!.treeFile(tree.entry.root));
        const leafName = tree.entry.leaves[leafIndex]?.name ?? null;
        return this.#verified(hash, name, { status: 'verified', entry: registeredRecord(tree), proof }, leafName);
      } catch (error) {
        if (!(error instanceof StoreError)) throw error;
        return { status: 'unknown', damaged: error };
      }
    }
    const damaged = this.#damaged.get(hash);
    if (damaged) return { status: 'unknown', damaged };
    const confirmed = this.#registered?.confirmed;
    const confirmedUnder = confirmed?.hashes.has(hash) ? hash : confirmed?.trees.place(hash)?.tree.entry.root;
    if (confirmedUnder !== undefined) return { status: 'unknown', confirmedUnder };
    if (name !== undefined) this.#nameLeaves();
    const sameName = name === undefined ? undefined : this.#byName.get(name);
    if (sameName === undefined || name === undefined) return { status: 'unknown' };
    const { sha256, completedAt, all } = sameName;
    return { status: 'modified', name, sha256, completedAt, digests: all.size };
  }

  /**
   * `verdict`, with the later notarization of its name with another digest,
   * if any; or, when the digest was notarized as `ownName` and never as
   * `name`, which was notarized with other digests, what says so
   * (`namedOtherwise`): another document's bytes copied over this one (r117)
   * look so, but so does a copy of that document under this name registered
   * as such, which the ledger answered "already registered" and kept no name
   * of (r118: an alias such as app-latest.tgz): verified, with a warning.
   */
  #verified(
    hash: string,
    name: string | undefined,
    verdict: Extract<Verdict, { status: 'verified' }>,
    ownName: string | null,
  ): Verdict {
    if (name === undefined) return verdict;
    if (ownName !== name) {
      // Every name the digest had, a tree's leaves' included: only for a document checked under another.
      this.#nameLeaves();
      const named = this.#byName.get(name);
      if (named !== undefined && !named.all.has(hash)) {
        const { sha256, completedAt, all } = named;
        return { ...verdict, namedOtherwise: { name, sha256, completedAt, digests: all.size, notarizedAs: ownName } };
      }
    }
    // Only a tree completed after it can hold a later namesake: the leaves (each tree folded to be
    // trusted, #nameLeaves) are named only then, not for every document the ledger verifies.
    const after = verdict.entry.completedAt;
    if (this.#registered?.trees.all.some((tree) => registeredRecord(tree).completedAt > after)) this.#nameLeaves();
    const latest = this.#byName.get(name);
    if (latest === undefined || latest.sha256 === hash || !(latest.completedAt > verdict.entry.completedAt))
      return verdict;
    return { ...verdict, laterNamesake: { name, sha256: latest.sha256, completedAt: latest.completedAt } };
  }
}

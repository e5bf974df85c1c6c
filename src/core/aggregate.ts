/**
 * Aggregate registration (`register --aggregate`): many documents, one
 * registration. Their digests become the salted leaves of one RFC 9162
 * Merkle tree (merkle.ts), whose root is registered by the ordinary flow
 * (notarize.ts: one request step, one forfait, the session saved first), and
 * each document's receipt carries its inclusion proof to that root.
 *
 * The tree is saved in the store (`trees/<root>.json`) before its root is
 * sent, and the store says where each tree stands by the root's own files: a
 * record in the ledger (registered), a pending session, or neither (planned:
 * the run that made it stopped before the service answered). So every kill
 * point is covered by the flow's own guarantees, and a re-run over the same
 * documents, choosing their trees again, sends:
 *   - nothing for a document under a registered root;
 *   - the pending session of its root, completed (never a new request);
 *   - for a planned root, the request again, for that same root (the service
 *     knows no record of it: a request it may have seen made no payment);
 *   - a new tree only for documents under none.
 * Choosing trees and saving a new one happen under one store-wide lock
 * (`locks/aggregate.lock`), so two processes aggregating the same documents
 * agree on one tree, and the root's own lock then keeps them from
 * registering it twice.
 *
 * Returns data; never prints.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { StoreError } from '../errors.js';
import {
  jsonWithRows,
  LEAVES_DIGEST,
  readTreeFile,
  TREE_MANIFEST,
  type LedgerEntry,
  type ServiceStore,
  type TreeEntry,
  type TreeLeaf,
} from '../store/service-store.js';
import { diskRefusedBeforeSending } from '../store/disk.js';
import { leafHash, MerkleTree } from './merkle.js';
import { ANSWERED_409, locked, register, type Blockchain, type FlowDeps, type Outcome } from './notarize.js';
import { PROOF_TYPE, type InclusionProof } from './receipt-format.js';

/** A document of an aggregate run, hashed. */
export interface AggregateDocument {
  /** Its base name, kept with its leaf (as `file.name` in the ledger). */
  name: string | null;
  sha256: string;
  size: number | null;
}

export interface AggregateInput {
  documents: readonly AggregateDocument[];
  /** The root registration's description; by default it says what the root is. */
  description?: string;
  signed: boolean;
  blockchain: Blockchain;
  /** False for --no-complete: stop once the root's session is saved. */
  complete: boolean;
  /** Put every document under a new tree, whatever trees already hold it. */
  force: boolean;
  /** Once a root fails, attempt no other. */
  failFast?: boolean;
  /**
   * --receipt-dir: where earlier runs left their trees' manifests, which
   * documents under no tree of the store may be placed under again (see
   * adoptableManifests). Not with `force`.
   */
  manifestDir?: string;
  /** Told of a manifest there that was passed over because it cannot be read or its leaves do not make its root. */
  onManifestIgnored?: (error: StoreError) => void;
}

/**
 * Where a tree stands, by its root's files in the store: its record in the
 * ledger, its pending session, its session retired after the service said
 * it already had the root (a forfait whose answer was lost: `confirmed`,
 * never requested again), or none of these (`planned`).
 */
export type TreeState = 'registered' | 'pending' | 'confirmed' | 'planned';

/** A document's place: its tree, its leaf, and what became of the tree's root in this run. */
export interface Placement {
  tree: LoadedTree;
  leafIndex: number;
}

/** What registering one root gave: the flow's outcome, or the error that stopped it. */
export type RootResult =
  | { ok: true; outcome: Outcome; sent: boolean }
  | { ok: false; error: unknown }
  /** Not attempted: an earlier root of the run failed, with --fail-fast. */
  | { ok: false; cancelled: true };

export interface AggregateResult {
  /** Each document's place, by the index of the document in the input. */
  placements: Placement[];
  /** Each root this run dealt with, and what happened to it. */
  roots: Map<string, RootResult>;
}

/** The default description of an aggregate root: what it is, for anyone reading the record. */
export function rootDescription(treeSize: number): string {
  return `Merkle root of ${treeSize} document${treeSize === 1 ? '' : 's'} (RFC 9162, SHA-256, salted leaves)`;
}

/** Registers `input.documents` under Merkle roots (see the module comment): `placeDocuments`, then `registerRoots`. */
export async function registerAggregate(deps: FlowDeps, input: AggregateInput): Promise<AggregateResult> {
  const placements = await placeDocuments(deps, input);
  return { placements, roots: await registerRoots(deps, input, placements) };
}

/**
 * Chooses each document's tree, planting (and saving) a new one for those
 * under none; sends nothing. Throws StoreError (exit 2) when a tree of the
 * store cannot be read, or one this run relies on does not make its root.
 */
export async function placeDocuments(deps: FlowDeps, input: AggregateInput): Promise<Placement[]> {
  const { store } = deps;
  if (input.documents.length === 0) throw new RangeError('an aggregate needs at least one document');
  return locked(deps, 'aggregate', async () => {
    // --force registers again what a registered root holds, but never
    // replaces a pending or planned root: its session may be paid for.
    const holding = new Set(input.documents.map((doc) => doc.sha256));
    const known = await Trees.load(store, { skipRegistered: input.force, holding });
    // A tree that cannot be read may hold these documents: going on could
    // register them a second time. Nothing has been sent: stop here (exit 2).
    if (known.problems.length > 0) throw known.problems[0]!;
    const placed: (Placement | undefined)[] = input.documents.map((doc) => known.place(doc.sha256));
    // A root is sent, and a proof given, only from a tree whose leaves make that root.
    for (const tree of new Set(placed.flatMap((p) => (p ? [p.tree] : []))))
      tree.merkle(store.treeFile(tree.entry.root));
    let newcomers = input.documents.flatMap((doc, i) => (placed[i] ? [] : [{ doc, i }]));
    if (newcomers.length > 0 && input.manifestDir !== undefined && !input.force) {
      const adopted = await adoptManifests(deps, input, new Set(newcomers.map(({ doc }) => doc.sha256)));
      for (const { i, doc } of newcomers) placed[i] = adopted.place(doc.sha256);
      for (const tree of new Set(placed.flatMap((p) => (p?.tree.adopted ? [p.tree] : [])))) {
        // In the store before its root is sent, as a new tree is (below).
        try {
          await store.saveTree(tree.entry);
        } catch (error) {
          throw diskRefusedBeforeSending(error, store.dir) ?? error;
        }
      }
      newcomers = newcomers.filter(({ i }) => placed[i] === undefined);
    }
    if (newcomers.length > 0) {
      const tree = plantTree(
        newcomers.map(({ doc }) => doc),
        input.description,
        deps.now?.() ?? new Date(),
      );
      // On disk before the root is sent: a run killed after the request step
      // finds its pending session, and the documents find their tree. A disk
      // that refuses it (full, a file size limit) is exit 2: nothing was sent.
      try {
        await store.saveTree(tree.entry);
      } catch (error) {
        throw diskRefusedBeforeSending(error, store.dir) ?? error;
      }
      newcomers.forEach(({ i }, leafIndex) => (placed[i] = { tree, leafIndex }));
    }
    return placed as Placement[];
  });
}

/** Room for one leaf line of a manifest: a name of 255 bytes, each escaped, and the rest. */
const MANIFEST_BYTES_PER_LEAF = 2048;

/**
 * The trees of earlier runs' manifests in --receipt-dir (`<root>.tree.json`)
 * that the `newcomers` (documents of this run under no tree of the store)
 * are placed under again. A CI re-run over the same documents on an empty
 * store then sends that root again, and the service's 409 says it has it,
 * where a new tree would be a second paid registration; a root the service
 * does not know (its run stopped before the request) is registered once.
 *
 * A manifest is trusted for nothing but its salts: whoever could write the
 * folder (a CI checkout that earlier steps touched) could have planted it.
 *   - Every leaf must be a document of this run, and no more leaves than
 *     the run has documents: a registration of this run never vouches for a
 *     document it was not given, and a manifest cannot make it larger.
 *   - Its leaves must make its root (the fold is checked here).
 *   - Its description, names and sizes are not kept: the root is sent with
 *     this run's description, the leaves carry this run's names (only the
 *     date the tree was planted stays, which orders nothing but equal trees).
 * The largest manifests are tried first (the whole run of an earlier day
 * rather than a part of it), and one is read only if it places a newcomer
 * no manifest placed before it. One that cannot be read, or whose leaves
 * do not make its root, is passed over and `onManifestIgnored` told.
 */
async function adoptManifests(deps: FlowDeps, input: AggregateInput, newcomers: ReadonlySet<string>): Promise<Trees> {
  const dir = input.manifestDir!;
  let names: string[];
  try {
    names = (await readdir(dir)).filter((name) => /^[0-9a-f]{64}\.tree\.json$/.test(name));
  } catch {
    return new Trees([]);
  }
  const byDigest = new Map<string, AggregateDocument>();
  for (const doc of input.documents) if (!byDigest.has(doc.sha256)) byDigest.set(doc.sha256, doc);
  const count = input.documents.length;
  const fits = (digests: readonly string[]) =>
    digests.length <= count && digests.every((digest) => byDigest.has(digest));
  const unplaced = new Set(newcomers);
  const candidates = await Promise.all(
    names.map(async (name) => ({ name, size: (await lstat(join(dir, name)).catch(() => undefined))?.size ?? 0 })),
  );
  candidates.sort((a, b) => b.size - a.size || (a.name < b.name ? -1 : 1));
  const retired = candidates.length === 0 ? new Set<string>() : await confirmedRoots(deps.store);
  const trees: LoadedTree[] = [];
  for (const { name, size } of candidates) {
    if (unplaced.size === 0) break;
    if (size > 4096 + MANIFEST_BYTES_PER_LEAF * count) continue; // more leaves than this run has documents
    const root = name.slice(0, 64);
    const file = join(dir, name);
    let entry: TreeEntry | undefined;
    try {
      entry = readTreeFile(file, root, (digests) => fits(digests) && digests.some((d) => unplaced.has(d)), {
        anyOwner: true,
      });
      const digests = entry?.leaves.map((leaf) => leaf.sha256) ?? [];
      if (entry === undefined || !fits(digests) || !digests.some((d) => unplaced.has(d))) continue;
      new LoadedTree(entry, { state: 'planned' }).merkle(file);
    } catch (error) {
      if (!(error instanceof StoreError)) throw error;
      input.onManifestIgnored?.(error);
      continue;
    }
    const ours: TreeEntry = {
      root,
      treeSize: entry.treeSize,
      description: input.description ?? rootDescription(entry.treeSize),
      createdAt: entry.createdAt,
      leaves: entry.leaves.map(({ index, sha256, salt }) => {
        const doc = byDigest.get(sha256)!;
        return { index, name: doc.name, sha256, size: doc.size, salt };
      }),
    };
    // Outside the manifest's try: a damaged file of the store stops the run (exit 2), as in Trees.load.
    trees.push(new LoadedTree(ours, standingOf(deps.store, root, retired), undefined, true));
    for (const leaf of entry.leaves) unplaced.delete(leaf.sha256);
  }
  return new Trees(trees);
}

/**
 * After the service answered 409 to the request for an adopted root (see
 * adoptManifests) and this store has no record of it: its tree is removed
 * from the store, which then holds nothing of that root, as before the run.
 * Kept, it would stay `planned` for good, and --force, which plants new
 * trees only in place of registered or confirmed ones, could never register
 * those documents again on this store. Best effort, under the store-wide
 * lock that placing documents takes, and never while a session is pending.
 */
async function forgetAdopted(deps: FlowDeps, root: string): Promise<void> {
  const { store } = deps;
  try {
    await locked(deps, 'aggregate', async () => {
      if (store.readPending(root) === undefined && store.readRecord(root) === undefined) await store.removeTree(root);
    });
  } catch {
    // Kept: a later run sends the root again and meets the same 409.
  }
}

/** Registers the root of every tree the documents were placed under, once each, in order. */
export async function registerRoots(
  deps: FlowDeps,
  input: Omit<AggregateInput, 'documents' | 'description'>,
  placements: readonly Placement[],
): Promise<Map<string, RootResult>> {
  const roots = new Map<string, RootResult>();
  let failed = false;
  for (const { tree } of placements) {
    const root = tree.entry.root;
    if (roots.has(root)) continue;
    if (failed && input.failFast) {
      roots.set(root, { ok: false, cancelled: true });
      continue;
    }
    if (tree.state === 'registered' || tree.state === 'confirmed') {
      await tidyFinishedRoot(deps, root);
      // `confirmed`: the service said it has the root (a 409), but its record never reached this store.
      const entry = tree.record;
      const service = entry ? undefined : { message: CONFIRMED_MESSAGE, retiredSession: undefined };
      const outcome = { kind: 'already-registered', hash: root, entry, ...(service ? { service } : {}) } as const;
      roots.set(root, { ok: true, sent: false, outcome });
      continue;
    }
    let sent = false;
    const onStep: FlowDeps['onStep'] = (step) => {
      sent = true;
      deps.onStep?.(step);
    };
    try {
      const outcome = await register(
        { ...deps, onStep },
        {
          hash: root,
          description: tree.entry.description,
          custody: false,
          signed: input.signed,
          blockchain: input.blockchain,
          complete: input.complete,
          force: false,
        },
      );
      roots.set(root, { ok: true, outcome, sent });
      if (tree.adopted && outcome.kind === 'already-registered' && outcome.entry === undefined) {
        await forgetAdopted(deps, root);
      }
    } catch (error) {
      failed = true;
      roots.set(root, { ok: false, error });
    }
  }
  return roots;
}

/**
 * What a run killed after its root was done may have left: the root's lock
 * (killed before releasing it) and its session (killed between saving the
 * record and removing the session). The per-document flow tidies both when
 * it takes a hash's lock again; a re-run sends nothing for such a root, so it
 * tidies them here, under the root's lock, taken only when free or when its
 * owner provably died (never waiting: a live owner tidies them itself). The
 * common case, nothing left, costs two existence checks.
 */
async function tidyFinishedRoot(deps: FlowDeps, root: string): Promise<void> {
  const { store } = deps;
  try {
    if (!existsSync(store.lockFile(root)) && !existsSync(store.pendingFile(root))) return;
    await locked({ ...deps, lockWaitMs: 0 }, root, () => {
      const record = store.readRecord(root);
      if (record) store.removeLeftoverPending(record);
      return Promise.resolve();
    });
  } catch {
    // Tidying is optional: the root is registered whatever happens here. A
    // live owner of the lock tidies under it; a lock that is not a lock, a
    // full or read-only disk, is left for a run that can (and is not this
    // run's failure: an error here would end a run that registered other
    // roots, with exit 2 saying nothing was sent).
  }
}

/** What an already-registered result says of a root the service confirmed, whose record this store never got. */
const CONFIRMED_MESSAGE =
  'the service answered 409 to an earlier completion of this root (its record was never received); nothing sent';

/**
 * A tree read from (or just saved to) the store, with its root's record when
 * it is registered (read once, by `stateOf`), and its Merkle tree built when
 * first needed.
 */
export class LoadedTree {
  readonly entry: TreeEntry;
  readonly state: TreeState;
  readonly record: LedgerEntry | undefined;
  /** Taken from a manifest of an earlier run in --receipt-dir (adoptManifests), not from the store. */
  readonly adopted: boolean;
  #merkle: MerkleTree | undefined;

  constructor(entry: TreeEntry, { state, record }: Standing, merkle?: MerkleTree, adopted = false) {
    this.entry = entry;
    this.state = state;
    this.record = record;
    this.#merkle = merkle;
    this.adopted = adopted;
  }

  /**
   * The Merkle tree of the leaves; throws StoreError when they do not fold
   * to the root the file names (`file`: the tree's file, for the message).
   */
  merkle(file: string): MerkleTree {
    if (this.#merkle === undefined) {
      const merkle = merkleOf(this.entry.leaves);
      if (merkle.root.toString('hex') !== this.entry.root) {
        throw new StoreError(
          file,
          `${file} is damaged: its leaves make root ${merkle.root.toString('hex')}, not ${this.entry.root}`,
          {
            hint:
              `it is no proof for its documents: restore it from a backup, or from ${this.entry.root}.tree.json ` +
              'of the --receipt-dir of its run (copied in as it is); moved aside, its documents would be registered again',
          },
        );
      }
      this.#merkle = merkle;
    }
    return this.#merkle;
  }

  /** The inclusion proof of leaf `leafIndex`, as a v1 receipt carries it; throws StoreError as `merkle` does. */
  proof(leafIndex: number, file: string): InclusionProof {
    return {
      type: PROOF_TYPE,
      leafSalt: this.entry.leaves[leafIndex]!.salt,
      leafIndex,
      treeSize: this.entry.treeSize,
      path: this.merkle(file)
        .path(leafIndex)
        .map((hash) => hash.toString('hex')),
      root: this.entry.root,
    };
  }
}

function merkleOf(leaves: readonly TreeLeaf[]): MerkleTree {
  const hashes = Buffer.allocUnsafe(leaves.length * 32);
  leaves.forEach((leaf, i) => {
    leafHash(Buffer.from(leaf.sha256, 'hex'), Buffer.from(leaf.salt, 'hex')).copy(hashes, i * 32);
  });
  return new MerkleTree(hashes);
}

/** A new tree over `documents`, in their order, each leaf with a fresh 32-byte random salt. */
function plantTree(documents: readonly AggregateDocument[], description: string | undefined, at: Date): LoadedTree {
  const salts = randomBytes(documents.length * 32);
  const leaves: TreeLeaf[] = documents.map((doc, index) => ({
    index,
    name: doc.name,
    sha256: doc.sha256,
    size: doc.size,
    salt: salts.toString('hex', index * 32, (index + 1) * 32),
  }));
  const merkle = merkleOf(leaves);
  const entry: TreeEntry = {
    root: merkle.root.toString('hex'),
    treeSize: leaves.length,
    description: description ?? rootDescription(leaves.length),
    createdAt: at.toISOString(),
    leaves,
  };
  return new LoadedTree(entry, { state: 'planned' }, merkle);
}

interface TreesOptions {
  /** Only the trees in the ledger. */
  registeredOnly?: boolean;
  /** Leave out registered and confirmed trees (--force). */
  skipRegistered?: boolean;
  /** Only the trees that may hold one of these digests: the others are not built (ServiceStore.readTree). */
  holding?: ReadonlySet<string>;
  /** Only the trees of these roots (the others are not even read). */
  roots?: ReadonlySet<string>;
}

const RANK: Record<TreeState, number> = { registered: 0, confirmed: 1, pending: 2, planned: 3 };

/**
 * The trees of a store, indexed by document digest: for each, the tree that
 * best proves it (registered before pending before planned; among registered
 * ones the latest completion, as the ledger answers for a hash; else the
 * latest made). `verify` (core/ledger.ts) asks the same index. A damaged tree
 * file holds no document: it is skipped here, and `problems` names it.
 */
export class Trees {
  readonly #byDigest = new Map<string, Placement>();
  readonly all: readonly LoadedTree[];
  readonly problems: StoreError[];

  constructor(trees: readonly LoadedTree[], problems: StoreError[] = []) {
    this.all = trees;
    this.problems = problems;
    for (const tree of trees) {
      for (const leaf of tree.entry.leaves) {
        const known = this.#byDigest.get(leaf.sha256);
        if (known === undefined || better(tree, known.tree)) {
          this.#byDigest.set(leaf.sha256, { tree, leafIndex: leaf.index });
        }
      }
    }
  }

  /**
   * Every tree of the store, with its state; `registeredOnly` keeps only
   * those in the ledger, `skipRegistered` (--force) leaves them and the
   * confirmed ones out.
   */
  static async load(
    store: ServiceStore,
    { registeredOnly = false, skipRegistered = false, holding, roots }: TreesOptions = {},
  ): Promise<Trees> {
    const { entries, problems } = await store.listTrees(holding, roots);
    const retired = entries.length === 0 ? new Set<string>() : await confirmedRoots(store);
    const trees: LoadedTree[] = [];
    for (const entry of entries) {
      let standing: Standing;
      try {
        standing = standingOf(store, entry.root, retired);
      } catch (error) {
        if (!(error instanceof StoreError)) throw error;
        problems.push(error);
        continue;
      }
      const { state } = standing;
      if (registeredOnly && state !== 'registered') continue;
      if (skipRegistered && (state === 'registered' || state === 'confirmed')) continue;
      trees.push(new LoadedTree(entry, standing));
    }
    return new Trees(trees, problems);
  }

  /** The place of the document of digest `sha256`, if a tree holds it. */
  place(sha256: string): Placement | undefined {
    return this.#byDigest.get(sha256);
  }
}

function better(a: LoadedTree, b: LoadedTree): boolean {
  if (RANK[a.state] !== RANK[b.state]) return RANK[a.state] < RANK[b.state];
  const [completedA, completedB] = [a.record?.completedAt, b.record?.completedAt];
  if (completedA !== undefined && completedB !== undefined && completedA !== completedB) return completedA > completedB;
  return a.entry.createdAt > b.entry.createdAt;
}

/** The hashes whose session was retired because the service answered forfait 409: it has them. */
async function confirmedRoots(store: ServiceStore): Promise<Set<string>> {
  const confirmed = new Set<string>();
  for (const [hash, reasons] of await store.retirements()) {
    if (reasons.some((reason) => reason.startsWith(ANSWERED_409))) confirmed.add(hash);
  }
  return confirmed;
}

/** Where a tree stands, and its root's record when it is registered. */
export interface Standing {
  state: TreeState;
  record?: LedgerEntry;
}

/** Where the tree of `root` stands (see TreeState); `retired`: the hashes with a retired session. */
function standingOf(store: ServiceStore, root: string, retired: ReadonlySet<string>): Standing {
  const record = store.readRecord(root);
  if (record) return { state: 'registered', record };
  if (store.readPending(root)) return { state: 'pending' };
  return { state: retired.has(root) ? 'confirmed' : 'planned' };
}

/** A document found under a registered root: the root's record, the document's leaf, and its proof. */
export interface FoundLeaf {
  entry: LedgerEntry;
  leaf: TreeLeaf;
  proof: InclusionProof;
}

/**
 * The registered tree holding the document of digest `sha256`, if any (for
 * `show` and `receipt`, once the ledger has no record of the digest itself).
 * Throws StoreError for a tree whose leaves do not fold to its root, and,
 * when no readable tree holds it, for a tree file that cannot be read.
 */
export async function findLeaf(store: ServiceStore, sha256: string): Promise<FoundLeaf | undefined> {
  const trees = await Trees.load(store, { registeredOnly: true, holding: new Set([sha256]) });
  const place = trees.place(sha256);
  // A tree that cannot be read may be the one holding it: say so rather than "not in the ledger".
  if (!place && trees.problems.length > 0) throw trees.problems[0]!;
  if (!place) return undefined;
  const { root } = place.tree.entry;
  const entry = place.tree.record!; // registeredOnly: every tree loaded has its root's record
  const proof = place.tree.proof(place.leafIndex, store.treeFile(root));
  return { entry, leaf: place.tree.entry.leaves[place.leafIndex]!, proof };
}

/**
 * What the ledger holds for a digest (`show`, `receipt`): its own record, or
 * the record of the registered root it is a leaf of, with that leaf and its
 * proof; undefined when neither. Throws StoreError as findLeaf does.
 */
export async function recordOf(
  store: ServiceStore,
  sha256: string,
): Promise<{ entry: LedgerEntry; underRoot?: FoundLeaf } | undefined> {
  const own = store.readRecord(sha256);
  if (own) return { entry: own };
  const found = await findLeaf(store, sha256);
  return found && { entry: found.entry, underRoot: found };
}

/**
 * The manifest of a tree, as `register --aggregate --receipt-dir` writes it:
 * every leaf (name, digest, size, salt, index) under its root, one per line,
 * from which any document's proof can be made again (see
 * docs/verify-by-hand.md). It holds every salt: it is the owner's copy, not
 * something to hand out with one document (its receipt is).
 */
export function treeManifestText(entry: TreeEntry): Generator<string> {
  return jsonWithRows({ ...TREE_MANIFEST, proofType: PROOF_TYPE, ...entry }, 'leaves', LEAVES_DIGEST);
}

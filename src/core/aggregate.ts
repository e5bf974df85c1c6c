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
 * registering it twice. On a store without their trees, the roots of the
 * manifests an earlier run left in --receipt-dir are asked about first,
 * outside that lock (adoptManifests): a 409 places documents under a root
 * the service already has, and nothing is paid for them.
 *
 * Returns data; never prints.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { InvalidAnswerError, sentAlready, StoreError, UnreadableAnswerError } from '../errors.js';
import {
  jsonWithRows,
  LEAVES_DIGEST,
  readTreeFile,
  TREE_MANIFEST,
  treeFileDigests,
  type LedgerEntry,
  type ServiceStore,
  type TreeEntry,
  type TreeLeaf,
} from '../store/service-store.js';
import { diskRefused } from '../store/disk.js';
import { leafHash, MerkleTree } from './merkle.js';
import {
  ANSWERED_409,
  isAlreadyRegistered,
  locked,
  register,
  type Blockchain,
  type FlowDeps,
  type Outcome,
} from './notarize.js';
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
   * --receipt-dir: where earlier runs left their trees' manifests, under
   * whose roots documents under no tree of the store may be confirmed (see
   * adoptManifests). Not with `force`.
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

/** A document's place: its tree and its leaf. */
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

/** The default description of an aggregate root: what it is, for anyone reading the record. */
export function rootDescription(treeSize: number): string {
  return `Merkle root of ${treeSize} document${treeSize === 1 ? '' : 's'} (RFC 9162, SHA-256, salted leaves)`;
}

export interface AggregateResult {
  /** Each document's place, by the index of the document in the input. */
  placements: Placement[];
  /** Each root this run dealt with, and what happened to it. */
  roots: Map<string, RootResult>;
}

/** Registers `input.documents` under Merkle roots (see the module comment): `placeDocuments`, then `registerRoots`. */
export async function registerAggregate(deps: FlowDeps, input: AggregateInput): Promise<AggregateResult> {
  const { placements, asked } = await placeDocuments(deps, input);
  return { placements, roots: await registerRoots(deps, input, placements, asked) };
}

/** Where the documents of a run go (placeDocuments), and what was sent to find out. */
export interface Placed {
  /** Each document's place, by the index of the document in the input. */
  placements: Placement[];
  /** The roots of manifests asked about (adoptManifests), and what the service said. */
  asked: Map<string, RootResult>;
  /** Whether anything was sent: from then on, exit 2 would lie. */
  sent: boolean;
}

/**
 * Chooses each document's tree: one of the store's, else the root of a
 * manifest the service says it has (adoptManifests: the only part that
 * sends anything), else a new tree planted (and saved) for all the rest.
 * The store's trees are read, and a new one saved, under the store-wide
 * `aggregate` lock; the manifests' roots are asked about outside it, so
 * another run on this store never waits for the service's answers: the
 * store is read again under the lock afterwards (another run may have
 * planted a tree for some of these documents meanwhile: they go there).
 * Throws StoreError when a tree of the store cannot be read, or one this
 * run relies on does not make its root: exit 2, nothing sent (1 once a
 * manifest's root was asked about).
 */
export async function placeDocuments(deps: FlowDeps, input: AggregateInput): Promise<Placed> {
  if (input.documents.length === 0) throw new RangeError('an aggregate needs at least one document');
  const first = await locked(deps, 'aggregate', async (): Promise<Placed | Set<string>> => {
    const placed = await placeInStore(deps, input);
    const unplaced = new Set(input.documents.flatMap((doc, i) => (placed[i] ? [] : [doc.sha256])));
    // A manifest to ask about: asked outside the lock, placed again under it (below).
    if (await anyManifestFor(input, unplaced)) return unplaced;
    return plantTheRest(deps, input, placed, NO_ADOPTIONS);
  });
  if (!(first instanceof Set)) return first;
  const adopted = await adoptManifests(deps, input, first);
  try {
    return await locked(deps, 'aggregate', async () =>
      plantTheRest(deps, input, await placeInStore(deps, input), adopted),
    );
  } catch (error) {
    // Taking the lock included: a disk that refuses it is exit 2 only while nothing was sent.
    throw adopted.sent ? sentAlready(error) : error;
  }
}

/** Each document's place under a tree of the store, if one holds it; checks those trees make their roots. */
async function placeInStore(deps: FlowDeps, input: AggregateInput): Promise<(Placement | undefined)[]> {
  const { store } = deps;
  // --force registers again what a registered root holds, but never
  // replaces a pending or planned root: its session may be paid for.
  const holding = new Set(input.documents.map((doc) => doc.sha256));
  const known = await Trees.load(store, { skipRegistered: input.force, holding });
  // A tree that cannot be read may hold these documents: going on could
  // register them a second time. Stop here (exit 2: nothing was sent).
  if (known.problems.length > 0) throw known.problems[0]!;
  const placed = input.documents.map((doc) => known.place(doc.sha256));
  // A root is sent, and a proof given, only from a tree whose leaves make that root.
  for (const tree of new Set(placed.flatMap((p) => (p ? [p.tree] : [])))) tree.merkle(store.treeFile(tree.entry.root));
  return placed;
}

/**
 * The documents neither the store nor a manifest places go into one new
 * tree, saved before its root is sent: a run killed after the request step
 * finds its pending session, and the documents find their tree. With
 * --fail-fast, after a manifest's root could not be asked about, it is
 * neither saved nor sent: its documents are skipped (a tree saved for them
 * would be registered by the next run, whatever the manifests hold).
 */
async function plantTheRest(
  deps: FlowDeps,
  input: AggregateInput,
  placed: (Placement | undefined)[],
  adopted: Adoptions,
): Promise<Placed> {
  const { store } = deps;
  const asked = new Map(adopted.roots);
  // Under a root asked about (adoptManifests): never saved, never sent again.
  for (const [i, doc] of input.documents.entries()) placed[i] ??= adopted.placements.get(doc.sha256);
  const newcomers = input.documents.flatMap((doc, i) => (placed[i] ? [] : [{ doc, i }]));
  if (newcomers.length > 0) {
    const tree = plantTree(
      newcomers.map(({ doc }) => doc),
      input.description,
      deps.now?.() ?? new Date(),
    );
    const stopped = input.failFast === true && [...adopted.roots.values()].some((root) => !root.ok);
    if (stopped) {
      asked.set(tree.entry.root, { ok: false, cancelled: true });
    } else {
      try {
        await store.saveTree(tree.entry);
      } catch (error) {
        // Full, a file size limit: the user's to fix, and nothing was paid for.
        const sent = adopted.sent ? 'nothing was paid for: only the roots of manifests were asked about' : undefined;
        throw diskRefused(error, store.dir, sent) ?? error;
      }
    }
    newcomers.forEach(({ i }, leafIndex) => (placed[i] = { tree, leafIndex }));
  }
  return { placements: placed as Placement[], asked, sent: adopted.sent };
}

/** Room for one leaf line of a manifest: a name of 255 bytes, each escaped, and the rest. */
const MANIFEST_BYTES_PER_LEAF = 2048;

/**
 * A manifest may have this many times as many leaves as the run has
 * documents, no more: a document named twice has two leaves, but a manifest
 * must not make a run of one document build a tree of a million.
 */
const MANIFEST_LEAVES_PER_DOCUMENT = 4;

/** At most this many manifests' roots are asked about per run: each costs a request step. */
const MAX_ASKED_ROOTS = 16;

/** Documents placed under the roots of manifests asked about (adoptManifests). */
interface Adoptions {
  /** Each such document's place, by digest: under a root the service has, or one whose ask failed. */
  placements: Map<string, Placement>;
  /** What asking about each of those roots gave: already registered, or the error that stopped it. */
  roots: Map<string, RootResult>;
  /** Whether a request was attempted: from then on, exit 2 would lie. */
  sent: boolean;
}

const NO_ADOPTIONS: Adoptions = { placements: new Map(), roots: new Map(), sent: false };

/**
 * The manifests of --receipt-dir that adoptManifests may ask about, in the
 * order it would (newest first, then the largest), with the test a
 * manifest's leaf digests must pass (see adoptManifests); none with --force.
 */
async function manifestCandidates(input: AggregateInput, unplaced: ReadonlySet<string>) {
  const dir = input.manifestDir;
  const byDigest = new Map<string, AggregateDocument>();
  for (const doc of input.documents) if (!byDigest.has(doc.sha256)) byDigest.set(doc.sha256, doc);
  const maxLeaves = MANIFEST_LEAVES_PER_DOCUMENT * input.documents.length;
  const useful = (digests: readonly string[]) =>
    digests.length <= maxLeaves &&
    digests.every((digest) => byDigest.has(digest)) &&
    digests.some((digest) => unplaced.has(digest));
  let names: string[] = [];
  if (dir !== undefined && !input.force && unplaced.size > 0) {
    try {
      names = (await readdir(dir)).filter((name) => /^[0-9a-f]{64}\.tree\.json$/.test(name));
    } catch {
      // No folder (yet): no manifests.
    }
  }
  const found = await Promise.all(
    names.map(async (name) => {
      const info = await lstat(join(dir!, name)).catch(() => undefined);
      return { root: name.slice(0, 64), file: join(dir!, name), size: info?.size ?? 0, mtimeMs: info?.mtimeMs ?? 0 };
    }),
  );
  const candidates = found
    .filter(({ size }) => size <= 4096 + MANIFEST_BYTES_PER_LEAF * maxLeaves) // else too many leaves for this run
    .sort((a, b) => b.mtimeMs - a.mtimeMs || b.size - a.size || (a.root < b.root ? -1 : 1));
  return { candidates, useful, byDigest };
}

/** Whether a manifest in --receipt-dir may place one of the `unplaced` documents (read, not parsed; nothing sent). */
async function anyManifestFor(input: AggregateInput, unplaced: ReadonlySet<string>): Promise<boolean> {
  const { candidates, useful } = await manifestCandidates(input, unplaced);
  return candidates.some(({ file }) => {
    try {
      const digests = treeFileDigests(file, { anyOwner: true });
      // One not as notarize writes it: adoptManifests passes it over, and says why.
      return digests === undefined || useful(digests);
    } catch {
      return true; // unreadable: the same
    }
  });
}

/**
 * Places the `unplaced` documents (under no tree of the store; each removed
 * from the set once placed) under the roots of earlier runs' manifests in
 * --receipt-dir (`<root>.tree.json`) that the service says it already has.
 * A CI re-run over the same documents on an empty store then pays nothing:
 * where a new tree would be a second paid registration, the manifest's root
 * is asked about with a request step, and its 409 (read as "the service has
 * it") is final.
 *
 * Only ever confirmed, never registered: a manifest could have been planted
 * by whoever wrote the folder (a CI checkout that earlier steps touched),
 * so a root the service does not know (any 2xx) is dropped on the spot, its
 * session neither saved nor completed, and its documents go into this run's
 * new tree. Nothing of an adopted tree is saved in the store either: a run
 * killed meanwhile leaves nothing behind. So manifests cost request steps,
 * never a description or a leaf name, and never make a run pay more than
 * it would without them (at worst, its one new tree). Further:
 *   - every leaf must be a document of this run, and the leaves at most
 *     MANIFEST_LEAVES_PER_DOCUMENT times the run's documents;
 *   - its leaves must make its root, and its text be exactly as notarize
 *     writes it (read without being parsed unless it is used: bounded memory);
 *   - the newest are asked about first (then the largest), one only if it
 *     holds a document no root asked about holds yet, at most
 *     MAX_ASKED_ROOTS per run; a document stays under the first that holds it;
 *   - a root whose request step fails otherwise (a network failure, a 5xx)
 *     fails its documents as any root would; with --fail-fast, no other is
 *     asked about after it.
 * A manifest that cannot be read or does not make its root is passed over,
 * and `onManifestIgnored` told.
 */
async function adoptManifests(deps: FlowDeps, input: AggregateInput, unplaced: Set<string>): Promise<Adoptions> {
  const adoptions: Adoptions = { placements: new Map(), roots: new Map(), sent: false };
  const { candidates, useful, byDigest } = await manifestCandidates(input, unplaced);
  let asked = 0;
  for (const { root, file } of candidates) {
    if (unplaced.size === 0 || asked === MAX_ASKED_ROOTS) break;
    let entry: TreeEntry;
    let merkle: MerkleTree;
    try {
      const read = readTreeFile(file, root, useful, { anyOwner: true, exactOnly: true });
      if (read === undefined) continue;
      entry = adoptedEntry(read, byDigest, input.description);
      merkle = new LoadedTree(entry, { state: 'planned' }).merkle(file);
    } catch (error) {
      if (!(error instanceof StoreError)) throw error;
      input.onManifestIgnored?.(error);
      continue;
    }
    asked++;
    adoptions.sent = true;
    const said = await askAbout(deps, entry, input);
    if (said.kind === 'unknown') continue;
    // `confirmed`: the service has the root; `planned`: nothing is known of it (its ask failed).
    const tree = new LoadedTree(entry, { state: said.kind === 'has' ? 'confirmed' : 'planned' }, merkle, true);
    for (const [leafIndex, leaf] of entry.leaves.entries()) {
      if (unplaced.delete(leaf.sha256)) adoptions.placements.set(leaf.sha256, { tree, leafIndex });
    }
    if (said.kind === 'failed') {
      adoptions.roots.set(root, { ok: false, error: said.error });
      if (input.failFast) break;
      continue;
    }
    const service = { message: said.message, retiredSession: undefined };
    const outcome = { kind: 'already-registered', hash: root, entry: undefined, service } as const;
    adoptions.roots.set(root, { ok: true, sent: true, outcome });
  }
  return adoptions;
}

/** A manifest's tree as this run adopts it: its root and salts; this run's description, names and sizes. */
function adoptedEntry(
  entry: TreeEntry,
  byDigest: ReadonlyMap<string, AggregateDocument>,
  description: string | undefined,
): TreeEntry {
  return {
    root: entry.root,
    treeSize: entry.treeSize,
    description: description ?? rootDescription(entry.treeSize),
    createdAt: entry.createdAt,
    leaves: entry.leaves.map(({ index, sha256, salt }) => {
      const doc = byDigest.get(sha256)!;
      return { index, name: doc.name, sha256, size: doc.size, salt };
    }),
  };
}

/**
 * Asks the service whether it has the root of `entry`, with a request step
 * whose session is never kept: 409, it has it; any 2xx (a session, even one
 * that cannot be read), it does not, and nothing more is sent for it.
 */
async function askAbout(
  deps: FlowDeps,
  entry: TreeEntry,
  input: AggregateInput,
): Promise<{ kind: 'has'; message: string | undefined } | { kind: 'unknown' } | { kind: 'failed'; error: unknown }> {
  try {
    await deps.api.requestRegistration({
      blockchainType: input.blockchain,
      custody: false,
      description: entry.description,
      hash: entry.root,
      signed: input.signed,
      status: 'not_registered',
    });
    return { kind: 'unknown' };
  } catch (error) {
    if (isAlreadyRegistered(error)) return { kind: 'has', message: error.serviceMessage };
    if (error instanceof InvalidAnswerError || error instanceof UnreadableAnswerError) return { kind: 'unknown' };
    return { kind: 'failed', error };
  }
}

/** Registers the root of every tree the documents were placed under, once each, in order. */
export async function registerRoots(
  deps: FlowDeps,
  input: Omit<AggregateInput, 'documents' | 'description'>,
  placements: readonly Placement[],
  asked: ReadonlyMap<string, RootResult> = new Map(),
): Promise<Map<string, RootResult>> {
  // Roots adoptManifests asked about are done: never sent again.
  const roots = new Map<string, RootResult>(asked);
  let failed = [...asked.values()].some((result) => !result.ok);
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
  /** Taken from a manifest of an earlier run in --receipt-dir whose root was asked about (adoptManifests); never in the store. */
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

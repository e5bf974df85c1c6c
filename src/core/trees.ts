/**
 * The Merkle trees of aggregate registrations (`register --aggregate`,
 * core/aggregate.ts), as the store keeps them (`trees/<root>.json`): each
 * tree with where its root stands (by the root's own files: its record, its
 * pending session, its session retired after a 409, or none), the index from
 * a document's digest to the tree that best proves it, and each leaf's
 * inclusion proof. `verify`, `show` and `receipt` read them here too.
 *
 * Returns data; never prints, never sends.
 */
import { randomBytes } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import {
  jsonWithRows,
  leafDigestsOfWholeTree,
  LEAVES_DIGEST,
  TREE_MANIFEST,
  treeOfText,
  type LedgerEntry,
  type ServiceStore,
  type TreeEntry,
  type TreeLeaf,
} from '../store/service-store.js';
import { NotNotarizedError, ProtocolError, StoreError, type NotarizeError } from '../errors.js';
import { withoutByteOrderMark } from '../exact-json.js';
import { isFdShortage } from '../fd-shortage.js';
import { readRegularFile } from '../store/files.js';
import { leafHash, MerkleTree } from './merkle.js';
import { confirmedRoots, says409 } from './notarize.js';
import { PROOF_TYPE, type InclusionProof } from './receipt-format.js';

/** A document of an aggregate run, hashed. */
export interface AggregateDocument {
  /** Its base name, kept with its leaf (as `file.name` in the ledger). */
  name: string | null;
  sha256: string;
  size: number | null;
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

/** The default description of an aggregate root: what it is, for anyone reading the record. */
export function rootDescription(treeSize: number): string {
  return `Merkle root of ${treeSize} document${treeSize === 1 ? '' : 's'} (RFC 9162, SHA-256, salted leaves)`;
}

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
    this.#merkle ??= foldedTree(this.entry, file);
    return this.#merkle;
  }

  /** The inclusion proof of leaf `leafIndex`, as a v1 receipt carries it; throws StoreError as `merkle` does. */
  proof(leafIndex: number, file: string): InclusionProof {
    return {
      type: PROOF_TYPE,
      leafSalt: this.entry.leaves[leafIndex]!.salt,
      leafIndex,
      treeSize: this.entry.treeSize,
      path: this.merkle(file).pathHex(leafIndex),
      root: this.entry.root,
    };
  }
}

/**
 * The Merkle tree of `entry`'s leaves; throws StoreError when they do not
 * fold to the root it names (`file`: where it was read, for the message).
 */
export function foldedTree(entry: TreeEntry, file: string): MerkleTree {
  const merkle = merkleOf(entry.leaves);
  if (merkle.root.toString('hex') !== entry.root) {
    throw new StoreError(
      file,
      `${file} is damaged: its leaves make root ${merkle.root.toString('hex')}, not ${entry.root}`,
      {
        hint:
          `it is no proof for its documents: restore it from a backup, or from ${entry.root}.tree.json ` +
          'of the --receipt-dir of its run (copied in as it is); moved aside, its documents would be registered again',
      },
    );
  }
  return merkle;
}

function merkleOf(leaves: readonly TreeLeaf[]): MerkleTree {
  const hashes = Buffer.allocUnsafe(leaves.length * 32);
  leaves.forEach((leaf, i) => {
    leafHash(Buffer.from(leaf.sha256, 'hex'), Buffer.from(leaf.salt, 'hex')).copy(hashes, i * 32);
  });
  return new MerkleTree(hashes);
}

/** A new tree over `documents`, in their order, each leaf with a fresh 32-byte random salt. */
export function plantTree(
  documents: readonly AggregateDocument[],
  description: string | undefined,
  at: Date,
): LoadedTree {
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
  /** confirmedRoots of the store, when the caller has it already (it reads every retired session). */
  confirmed?: ReadonlySet<string>;
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
  /** confirmedRoots of the store, when load read it (it does when the store has trees): see confirmedOf. */
  readonly confirmed: ReadonlySet<string> | undefined;

  constructor(trees: readonly LoadedTree[], problems: StoreError[] = [], confirmed?: ReadonlySet<string>) {
    this.all = trees;
    this.problems = problems;
    this.confirmed = confirmed;
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
    { registeredOnly = false, skipRegistered = false, holding, roots, confirmed }: TreesOptions = {},
  ): Promise<Trees> {
    const { entries, problems } = await store.listTrees(holding, roots);
    // Not read for a store without trees: no tree needs it.
    const known = confirmed ?? (entries.length === 0 ? undefined : await confirmedRoots(store));
    const retired = known ?? new Set<string>();
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
    return new Trees(trees, problems, known);
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

/** confirmedRoots of the store `trees` were loaded from, read again only if loading did not. */
export async function confirmedOf(store: ServiceStore, trees: Trees): Promise<ReadonlySet<string>> {
  return trees.confirmed ?? confirmedRoots(store);
}

/**
 * The problems of a store's trees (Trees.load) that may hide a paid root:
 * a record or a session of a root that cannot be read, or a tree of a root
 * the ledger has a record of, the service confirmed (a 409), or whose
 * completion was sent and its answer not read (it may have gone through).
 * A damaged tree of a root never paid for (left pending, dropped) holds no
 * document registered: it stops nothing here.
 */
export async function paidRootProblems(store: ServiceStore, trees: Trees): Promise<StoreError[]> {
  if (trees.problems.length === 0) return [];
  return paidAmong(store, trees.problems, await confirmedOf(store, trees));
}

/** Of `problems`, those that may hide a paid root (see paidRootProblems); `confirmed`: confirmedRoots of the store. */
function paidAmong(store: ServiceStore, problems: readonly StoreError[], confirmed: ReadonlySet<string>): StoreError[] {
  return problems.filter((problem) => {
    const root = basename(problem.file, '.json');
    const folder = basename(dirname(problem.file));
    if (folder === 'ledger' || folder === 'pending' || confirmed.has(root)) return true;
    try {
      return store.readRecord(root) !== undefined || store.readPending(root)?.forfaitUnreadAt !== undefined;
    } catch {
      return true;
    }
  });
}

/**
 * Of the sessions pending in the store (`complete --all`, `pending`), those
 * of documents that completing would pay for a second time, each with its root: leaves (with
 * no record of their own) of a Merkle root registered, confirmed by a 409,
 * or pending too (`register --no-complete`, then `register --aggregate`
 * over the same documents): this run completes it, or it waits for its
 * hash to be named. And, when a tree file that cannot be read may hold
 * documents under a root already paid for, or one this run completes, the
 * sessions that are not a readable tree's root: any of them may be one of
 * those documents, so each fails with that file's error, as `register`
 * stops (exit 2 while nothing was sent).
 */
export async function sessionsUnderRoots(
  store: ServiceStore,
  hashes: readonly string[],
): Promise<{ covered: Map<string, { root: string; pending: boolean }>; blocked: Map<string, NotarizeError> }> {
  const covered = new Map<string, { root: string; pending: boolean }>();
  const blocked = new Map<string, NotarizeError>();
  if (hashes.length === 0) return { covered, blocked };
  const completing = new Set(hashes);
  const confirmed = await confirmedRoots(store);
  // Each hash's best place (as Trees ranks them), the trees read one at a time and not kept:
  // a store of many large trees is looked through in the memory of one.
  const best = new Map<string, { root: string; state: TreeState }>();
  const unknown: StoreError[] = []; // roots whose own files cannot be read
  // Documents under a root whose request step was answered unreadably: the service may hold a
  // session for it, so their own sessions wait until that root is completed or dropped.
  const underUnread = new Map<string, NotarizeError>();
  const unreadable = await store.eachTree(completing, (entry) => {
    let state: TreeState;
    let unread: NotarizeError | undefined;
    try {
      state = standingOf(store, entry.root, confirmed).state;
      if (state === 'planned' && store.readUnanswered(entry.root) !== undefined) {
        unread = underUnreadRoot(entry.root, "its documents' own sessions are completed or left out");
      }
    } catch (error) {
      if (!(error instanceof StoreError)) throw error;
      unknown.push(error);
      return;
    }
    for (const { sha256 } of entry.leaves) {
      if (!completing.has(sha256)) continue;
      if (unread !== undefined) underUnread.set(sha256, unread);
      const known = best.get(sha256);
      if (known === undefined || RANK[state] < RANK[known.state]) best.set(sha256, { root: entry.root, state });
    }
  });
  const problems = [...unreadable, ...unknown];
  // A damaged tree of a root being completed (pending here) may hold these documents too: it pays for them.
  const treeProblems = problems.filter((problem) => basename(dirname(problem.file)) === 'trees');
  const ofCompleted = treeProblems.filter((problem) => completing.has(basename(problem.file, '.json')));
  const problem = [...paidAmong(store, problems, confirmed), ...ofCompleted][0];
  for (const hash of hashes) {
    const place = best.get(hash);
    const finished = place?.state === 'registered' || place?.state === 'confirmed';
    if (place !== undefined && (finished || (place.state === 'pending' && completing.has(place.root)))) {
      try {
        if (store.readRecord(hash) === undefined) covered.set(hash, { root: place.root, pending: !finished });
      } catch {
        // A damaged record file: completing it fails, naming the file.
      }
    } else if (underUnread.has(hash)) {
      blocked.set(hash, underUnread.get(hash)!);
    } else if (problem !== undefined && !existsSync(store.treeFile(hash))) {
      // Not a tree's root (readable or not): a document's own session, which the damaged tree may hold.
      blocked.set(hash, problem);
    }
  }
  return { covered, blocked };
}

/**
 * Why a document under `root`, whose request step was answered unreadably,
 * is not paid for on its own (exit 5, as that root's own refusal): the
 * service may hold a session for the root, which completing it pays, once
 * for all its documents. `then`: what its documents are once the root is
 * completed or dropped. No --force is offered: it would pay for the
 * document, and completing the root would pay for it again.
 */
export function underUnreadRoot(root: string, then: string): ProtocolError {
  return new ProtocolError(
    `under the Merkle root ${root}, whose request step was answered unreadably: the service may hold a session for it`,
    {
      hint:
        `complete the root with \`notarize complete ${root} --use-active-subscription\` (one payment for all its ` +
        `documents), or drop it with \`notarize pending drop ${root}\`; then ${then}`,
    },
  );
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

/**
 * Where the tree of `root` stands now, told by the root's own files as
 * Trees.load tells it, without reading the tree (which may hold 100,000
 * leaves). Throws StoreError when the root's record or session is damaged.
 */
export async function rootState(store: ServiceStore, root: string): Promise<TreeState> {
  const { state } = standingOf(store, root, new Set());
  if (state !== 'planned') return state;
  // Only then the retired sessions, all read (a planned root is rare; every look for a registered one is not).
  return (await confirmedRoots(store)).has(root) ? 'confirmed' : 'planned';
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
 * The error of `show` and `receipt` for a digest the ledger does not hold
 * (exit 6). When the service told this store it has the digest, or a Merkle
 * root holding it (a 409 to a completion whose answer was lost), it says
 * so: the document is registered, only its record never arrived, and no
 * other ledger is where it was registered. Otherwise `hint` says what to do.
 */
export async function notInLedger(
  store: ServiceStore,
  sha256: string,
  baseUrl: string,
  hint: string,
): Promise<NotNotarizedError> {
  const retired = (await store.retirements()).get(sha256) ?? [];
  let confirmed = retired.some(says409) ? sha256 : undefined;
  if (confirmed === undefined) {
    const place = (await Trees.load(store, { holding: new Set([sha256]) })).place(sha256);
    if (place?.tree.state === 'confirmed') confirmed = place.tree.entry.root;
  }
  if (confirmed === undefined) return new NotNotarizedError(`${sha256} is not in the ledger of ${baseUrl}`, { hint });
  const what = confirmed === sha256 ? 'it' : `the Merkle root ${confirmed} that holds it`;
  return new NotNotarizedError(
    `${sha256} is registered (${baseUrl} answered 409 for ${what}), but this store never received its record`,
    {
      hint: 'the service documents no way to fetch a record, so none is shown or made into a receipt here; a receipt written when it was registered still verifies',
    },
  );
}

/** How the name of a tree's manifest ends. */
export const TREE_MANIFEST_SUFFIX = '.tree.json';

/** The name of a tree's manifest in --receipt-dir: `<root>.tree.json`. */
export function manifestName(root: string): string {
  return `${root}${TREE_MANIFEST_SUFFIX}`;
}

/** The root a manifest's file name names, or undefined for a name that is no manifest's. */
export function manifestRoot(name: string): string | undefined {
  return /^[0-9a-f]{64}\.tree\.json$/.test(name) ? name.slice(0, 64) : undefined;
}

/**
 * The tree of the manifest `file` (named for `root`): read without being
 * parsed when its bytes are those treeManifestText wrote and `wanted` turns
 * its leaves down (many manifests are searched without building them all),
 * else parsed. A manifest travels: a checkout with core.autocrlf, `jq .` or
 * an editor's byte order mark change its bytes, never its value, and passing
 * it over made a re-run on a fresh store pay again for documents it had
 * registered. Only its root and leaves are used (checked against the
 * SHA-256 of their lines it records, when it does, and folded to the root
 * by the caller). Undefined when it is not there, or `wanted` turns it
 * down; StoreError when it cannot be read or is no tree of `root`.
 */
export function readManifest(
  file: string,
  root: string,
  wanted?: (digests: readonly string[]) => boolean,
): TreeEntry | undefined {
  const read = asManifest(file, () => readRegularFile(file, { anyOwner: true }));
  if (read === undefined) return undefined;
  const text = withoutByteOrderMark(read);
  const digests = leafDigestsOfWholeTree(text);
  if (digests !== undefined && wanted && !wanted(digests)) return undefined;
  const entry = asManifest(file, () => treeOfText(file, text, root));
  return digests === undefined && wanted && !wanted(entry.leaves.map((leaf) => leaf.sha256)) ? undefined : entry;
}

/** What `read` gives; its StoreError named for what `file` is, a tree manifest (of --receipt-dir), not a store file. */
function asManifest<T>(file: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (!(error instanceof StoreError)) throw error;
    const message = error.message.replace(/^(cannot read )?store file /, '$1tree manifest ');
    throw new StoreError(file, message, { cause: error });
  }
}

/**
 * The digests of the documents under `root`, when `file` is its tree's
 * manifest with the bytes treeManifestText wrote, its leaves making that
 * root; undefined otherwise. Only such a file can be passed over by
 * `verify` as no document (commands/verify-outputs.ts), unchecked: anything
 * else named like one, a script with a manifest's tail, a member given
 * twice, bytes after its end, is not. What a checkout with core.autocrlf or
 * an editor does to it carries nothing more, and is taken: every line
 * ending in CRLF, a byte order mark at its start, its final line break
 * dropped or doubled.
 */
export function exactManifestDigests(file: string, root: string): string[] | undefined {
  try {
    const read = readRegularFile(file, { anyOwner: true });
    if (read === undefined) return undefined;
    let text = withoutByteOrderMark(read);
    if (text.includes('\r')) {
      const lines = text.replace(/\r\n/g, '\n');
      if (lines.includes('\r') || lines.replace(/\n/g, '\r\n') !== text) return undefined;
      text = lines;
    }
    // Decoded with U+FFFD for bytes that are no UTF-8, which the comparison below cannot see.
    if (text.includes('\uFFFD') && !isUtf8(readFileSync(file))) return undefined;
    const entry = treeOfText(file, text, root);
    const written = [...treeManifestText(entry)].join('');
    // An editor's end of file: its final line break dropped, or one more (EditorConfig, end-of-file-fixer).
    if (text !== written && `${text}\n` !== written && text !== `${written}\n`) return undefined;
    foldedTree(entry, file);
    return entry.leaves.map((leaf) => leaf.sha256);
  } catch (error) {
    // A moment without a descriptor says nothing of the file: the caller waits it out (readOr).
    if (error instanceof StoreError && !isFdShortage(error)) return undefined;
    throw error;
  }
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

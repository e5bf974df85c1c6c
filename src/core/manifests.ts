/**
 * The manifests an earlier aggregate run left in --receipt-dir
 * (`<root>.tree.json`), as a run on a store without their trees uses them:
 * it asks the service about their roots, and a 409 places documents under a
 * root the service already has, so a CI re-run on an empty store pays
 * nothing for them (see adoptManifests). Sends only those request steps;
 * never prints, never writes.
 */
import { existsSync, lstatSync } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { EXIT, NotarizeError, StoreError } from '../errors.js';
import { readOr } from '../fd-shortage.js';
import { treeFileDigests, type TreeEntry } from '../store/service-store.js';
import type { MerkleTree } from './merkle.js';
import {
  isAlreadyRegistered,
  registrationRequest,
  REQUEST_ANSWERED_409,
  type Blockchain,
  type FlowDeps,
} from './notarize.js';
import {
  exactManifestDigests,
  foldedTree,
  LoadedTree,
  manifestName,
  manifestRoot,
  readManifest,
  rootDescription,
  type AggregateDocument,
  type Placement,
} from './trees.js';

/** Room for one leaf line of a manifest: a name of 255 bytes, each escaped, and the rest. */
const MANIFEST_BYTES_PER_LEAF = 2048;

/**
 * A manifest may have this many times as many leaves as the run has
 * documents, or MANIFEST_LEAVES_ANY_RUN, no more: a document named twice has
 * two leaves, but a manifest must not make a run of one document build a
 * tree of a million.
 */
const MANIFEST_LEAVES_PER_DOCUMENT = 4;

/**
 * A manifest of up to this many leaves is read by a run of any size (about
 * 2 MB: a release's tree of artifacts): a re-run of one document of such a
 * tree on a fresh runner, its receipt lost, paid again for it when a
 * manifest was read only up to four leaves per document of the run.
 * Larger ones only by a run of a quarter as many documents: every manifest
 * of the folder is read (planted ones too), so their size is what bounds a
 * run's time and memory.
 */
const MANIFEST_LEAVES_ANY_RUN = 10_000;

/** The most leaves a manifest read by a run of `documents` documents may have. */
function manifestLeavesFor(documents: number): number {
  return Math.max(MANIFEST_LEAVES_ANY_RUN, MANIFEST_LEAVES_PER_DOCUMENT * documents);
}

/** The largest manifest file (in bytes) a run of `documents` documents reads: its leaves, each with room. */
function manifestBytesFor(documents: number): number {
  return 4096 + MANIFEST_BYTES_PER_LEAF * manifestLeavesFor(documents);
}

/**
 * The warning naming manifests not read for their size, which may hold
 * `documents` (those left to be registered on their own, or under a new root).
 */
function manifestsTooLarge(files: readonly string[], runSize: number, documents: string): string {
  return (
    `tree manifests in --receipt-dir not read, as larger than a run of ${runSize} ` +
    `document${runSize === 1 ? '' : 's'} reads (${manifestLeavesFor(runSize)} leaves): if ${documents} ` +
    `is under one of their roots, its receipt gone, it is registered again (keep the receipts, or run over more ` +
    `of their documents): ${files.join(', ')}`
  );
}

/**
 * At most this many roots that the service turns out not to have (stale or
 * planted manifests) are asked about per run, as each costs a request step.
 * Asks that place documents are not counted: each places at least one, so
 * they are at most as many as the run's documents, and a release that adds
 * a document per run never finds its oldest ones left out and paid again.
 */
export const MAX_ABSENT_ROOTS = 16;

/** What adoptManifests needs of an aggregate run (core/aggregate.ts, AggregateInput). */
export interface ManifestQuery {
  documents: readonly AggregateDocument[];
  /** Sent with each root asked about; by default the root's own default description. */
  description?: string;
  signed: boolean;
  blockchain: Blockchain;
  /** --force: no manifest is used. */
  force: boolean;
  /** No root is asked about once one ask failed. */
  failFast?: boolean;
  /** The asks of the run so far (register-aggregate.ts asks about receipts' roots first). */
  asks?: RootAsks;
  /** --receipt-dir, where the manifests are. */
  manifestDir?: string;
  /**
   * The documents of the run a manifest's leaves are bounded by
   * (manifestLeavesFor): by default `documents`; the whole
   * run's when some were placed before (register-aggregate.ts), so that a
   * manifest judged usable for them stays so.
   */
  runSize?: number;
  /**
   * Told of a manifest there that was passed over (it cannot be read, or its
   * leaves do not make its root), or of manifests left unasked (MAX_ABSENT_ROOTS).
   */
  warn?: (message: string) => void;
}

/** What the service said to the request step for a manifest's root: it has it (409), or the ask failed. */
export type Asked = { kind: 'has'; message: string | undefined } | { kind: 'failed'; error: unknown };

/**
 * The roots asked about in one run, each once, and the files (manifests,
 * receipts) naming those the service does not have: shared by the askers of
 * a run (register-roots.ts for receipts, adoptManifests for manifests), so
 * that no root is asked twice and MAX_ABSENT_ROOTS bounds them together.
 */
export class RootAsks {
  readonly #answers = new Map<string, Promise<Asked | { kind: 'absent' }>>();
  /** The files whose roots the service said it does not have: the ones to move aside. */
  readonly #absent: string[] = [];
  /** The manifests among the files naming those roots, whoever asked first (a receipt may have): warnStaleManifests. */
  readonly #absentManifests = new Set<string>();
  /** Whether the warning listing them (staleManifests) was given. */
  #warned = false;
  /** The roots the service said it does not have. */
  readonly #refuted = new Set<string>();

  /** Whether `root` was asked about in this run. */
  has(root: string): boolean {
    return this.#answers.has(root);
  }

  /**
   * Whether the service said, in this run, that it does not have `root`: a
   * receipt claiming it may be written over (writeReceipt).
   */
  refutes(root: string): boolean {
    return this.#refuted.has(root);
  }

  /**
   * Why `file`, which names `root`, is not asked about: once
   * MAX_ABSENT_ROOTS roots turned out unknown to the service, no new one is
   * (manifestsLeft), and the first time `warn` is told which files to move
   * aside; undefined when it may be asked about, or was already.
   */
  refusal(root: string, file: string, warn?: (message: string) => void): NotarizeError | undefined {
    if (this.#answers.has(root) || this.#absent.length < MAX_ABSENT_ROOTS) return undefined;
    // Every manifest of such a root too, whoever asked about it first (a receipt may have).
    if (!this.#warned) warn?.(staleManifests([...new Set([...this.#absent, ...this.#absentManifests])]));
    this.#warned = true;
    return manifestsLeft(file);
  }

  /**
   * Tells `warn`, once, of the tree manifests (not receipts: a run rewrites
   * those of its documents) whose roots the service said it does not have,
   * still in --receipt-dir: manifests of runs that never registered their
   * roots, which `verify` over the folder reports unknown. Said once per
   * run, unless staleManifests (via refusal) said it already.
   */
  warnStaleManifests(warn: (message: string) => void): void {
    if (this.#warned) return;
    const manifests = [...this.#absentManifests].filter((file) => existsSync(file));
    if (manifests.length === 0) return;
    this.#warned = true;
    const one = manifests.length === 1;
    const [roots, these, a, completes, subject, it] = one
      ? ['root', 'this tree manifest', 'a run', 'completes', 'the manifest proves', 'it']
      : ['roots', `these ${manifests.length} tree manifests`, 'runs', 'complete', 'they prove', 'them'];
    warn(
      `the service does not have the ${roots} of ${these} in --receipt-dir: unless ${a} elsewhere still ` +
        `${completes} ${it}, ${subject} nothing, and \`verify\` over that folder reports ${it} unknown ` +
        `(move ${it} aside, or leave ${it} out with --exclude): ${manifests.join(', ')}`,
    );
  }

  /**
   * What the service says of `root`: asked with `ask` the first time (`file`
   * then kept among the absent if the service does not have it), the same
   * answer every time after, with no second request step.
   */
  ask(
    root: string,
    file: string | undefined,
    ask: () => Promise<Asked | { kind: 'absent' }>,
  ): Promise<Asked | { kind: 'absent' }> {
    let asked = this.#answers.get(root);
    const first = asked === undefined;
    asked ??= ask();
    this.#answers.set(root, asked);
    return asked.then((said) => {
      if (said.kind === 'absent') this.#refuted.add(root);
      if (said.kind === 'absent' && file !== undefined) {
        if (first) this.#absent.push(file);
        if (manifestRoot(basename(file)) !== undefined) this.#absentManifests.add(file);
      }
      return said;
    });
  }
}

/** Documents placed under the roots of manifests asked about (adoptManifests). */
export interface Adoptions {
  /** Each such document's place, by digest: under a root the service has, or one whose ask failed. */
  placements: Map<string, Placement>;
  /** What asking about each of those roots gave. */
  roots: Map<string, Asked>;
}

export const NO_ADOPTIONS: Adoptions = { placements: new Map(), roots: new Map() };

/**
 * The manifests of --receipt-dir that adoptManifests may ask about, in the
 * order it would (newest first, then the largest), with the test a
 * manifest's leaf digests must pass (see adoptManifests); none with --force.
 */
async function manifestCandidates(
  input: ManifestQuery,
  unplaced: ReadonlySet<string>,
  storeRoots: ReadonlySet<string>,
) {
  const dir = input.manifestDir;
  const byDigest = new Map<string, AggregateDocument>();
  for (const doc of input.documents) if (!byDigest.has(doc.sha256)) byDigest.set(doc.sha256, doc);
  const runSize = input.runSize ?? input.documents.length;
  const maxLeaves = manifestLeavesFor(runSize);
  // Leaves of documents not in this run are allowed (a re-run without one of them, or with one changed or
  // unreadable): they only make the proofs; the documents of this run it holds are what it places.
  const holdsUnplaced = (digests: readonly string[]) => digests.some((digest) => unplaced.has(digest));
  const useful = (digests: readonly string[]) => digests.length <= maxLeaves && holdsUnplaced(digests);
  /** Would be useful, but has more leaves than this run reads: said (manifestsTooLarge), never silently passed over. */
  const overfull = (digests: readonly string[]) => digests.length > maxLeaves && holdsUnplaced(digests);
  const found = dir !== undefined && !input.force && unplaced.size > 0 ? await manifestsIn(dir) : [];
  // The store's own roots are its to register: asking about a pending one would replace its session.
  const others = found.filter(({ root }) => !storeRoots.has(root));
  const maxBytes = manifestBytesFor(runSize);
  const tooLarge = others.filter(({ size }) => size > maxBytes).map(({ file }) => file);
  const candidates = others
    .filter(({ size }) => size <= maxBytes)
    .sort((a, b) => b.mtimeMs - a.mtimeMs || b.size - a.size || (a.root < b.root ? -1 : 1));
  return { candidates, useful, overfull, byDigest, tooLarge, runSize };
}

/**
 * Whether a manifest in --receipt-dir, of none of `storeRoots`, may place one
 * of the `unplaced` documents (read, not parsed; nothing sent), or is one
 * adoptManifests warns of, as too large for this run to read.
 */
export async function anyManifestFor(
  input: ManifestQuery,
  unplaced: ReadonlySet<string>,
  storeRoots: ReadonlySet<string> = new Set(),
): Promise<boolean> {
  const { candidates, useful, overfull, tooLarge } = await manifestCandidates(input, unplaced, storeRoots);
  // One too large to read: adoptManifests names it in a warning.
  if (tooLarge.length > 0) return true;
  for (const { file } of candidates) if (await mayPlace(file, (d) => useful(d) || overfull(d))) return true;
  return false;
}

/** Whether the manifest `file` may place a document, or be said of: its leaves pass `test`, or it must be read to tell. */
async function mayPlace(file: string, test: (digests: readonly string[]) => boolean): Promise<boolean> {
  const digests = await readOr(
    () => treeFileDigests(file, { anyOwner: true }),
    () => 'unreadable' as const,
  );
  // One laid out otherwise (or unreadable) must be parsed to tell; one that is no manifest, adoptManifests
  // passes over, and says why.
  return digests === undefined || digests === 'unreadable' || test(digests);
}

/**
 * The files named `<root>.tree.json` in `dir`, with their sizes and times
 * (none when there is no such folder yet). A moment without a descriptor is
 * waited out (readOr): read as "no manifests", it made a run pay again.
 */
async function manifestsIn(dir: string): Promise<{ root: string; file: string; size: number; mtimeMs: number }[]> {
  const names = await readOr(
    () => readdir(dir),
    () => [] as string[],
  );
  return Promise.all(
    names
      .filter((name) => manifestRoot(name) !== undefined)
      .map(async (name) => {
        const file = join(dir, name);
        const info = await readOr(
          () => lstat(file),
          () => undefined,
        );
        return { root: manifestRoot(name)!, file, size: info?.size ?? 0, mtimeMs: info?.mtimeMs ?? 0 };
      }),
  );
}

/**
 * Places the `unplaced` documents (under no tree of the store, or under one
 * of `storeRoots`, the store's roots not paid for yet; each removed from the
 * set once placed) under the roots of earlier runs' manifests in
 * --receipt-dir (`<root>.tree.json`) that the service says it already has;
 * never those of `storeRoots` themselves.
 * A CI re-run over the same documents on an empty store then pays nothing:
 * where a new tree would be a second paid registration, the manifest's root
 * is asked about with a request step, and its 409 (read as "the service has
 * it") is final.
 *
 * A manifest whose root this store has a record of (a root completed here
 * with `complete --session`, planted by another store) places its documents
 * under that record without asking (and aggregate.ts keeps that tree in
 * the store: the record proves it).
 *
 * Only ever confirmed, never registered: a manifest could have been planted
 * by whoever wrote the folder (a CI checkout that earlier steps touched),
 * so a root the service does not know (a 2xx with a session) is dropped on the spot, its
 * session neither saved nor completed, and its documents go into this run's
 * new tree. Nothing of an adopted tree is saved in the store either: a run
 * killed meanwhile leaves nothing behind. So manifests cost request steps,
 * never a description or a leaf name, and never make a run pay more than
 * it would without them (at worst, its one new tree). Further:
 *   - it must hold a document of this run not placed yet, and its leaves be at
 *     most manifestLeavesFor the run's documents (its other leaves, documents
 *     this run lacks, only make the proofs: a re-run without one document, or
 *     with one changed, still pays nothing for the others); one with more is
 *     named in a warning (manifestsTooLarge) if documents are left for a new
 *     tree;
 *   - its leaves must make its root, and it must hold what notarize wrote
 *     (trees.ts readManifest: read without being parsed unless it is used,
 *     when its bytes are those written; else parsed, bounded by its size);
 *   - the newest are asked about first (then the largest), one only if it
 *     holds a document no root asked about holds yet; a document stays
 *     under the first that holds it; once MAX_ABSENT_ROOTS roots were
 *     answered with a session (the service does not have them), no more
 *     are asked about, and the documents the others hold fail (manifestsLeft)
 *     rather than go into a new tree: one of them may be the root that
 *     registered them (after an artifact restore, the newest by time may
 *     be the stale ones);
 *   - a root whose request step fails otherwise (a network failure, a 5xx)
 *     fails its documents as any root would; with --fail-fast, no other is
 *     asked about after it.
 * A manifest that cannot be read or does not make its root is passed over,
 * and `warn` told.
 */
export async function adoptManifests(
  deps: FlowDeps,
  input: ManifestQuery,
  unplaced: Set<string>,
  storeRoots: ReadonlySet<string> = new Set(),
): Promise<Adoptions> {
  const adoptions: Adoptions = { placements: new Map(), roots: new Map() };
  const { candidates, useful, overfull, byDigest, tooLarge, runSize } = await manifestCandidates(
    input,
    unplaced,
    storeRoots,
  );
  /** The roots asked about, and the files whose roots the service does not have (answered with a session). */
  const asks = input.asks ?? new RootAsks();
  /** Places under `tree` the documents of this run it holds that nothing placed yet. */
  const place = (tree: LoadedTree) => {
    for (const [leafIndex, leaf] of tree.entry.leaves.entries()) {
      if (unplaced.delete(leaf.sha256)) adoptions.placements.set(leaf.sha256, { tree, leafIndex });
    }
  };
  for (const { root, file } of candidates) {
    if (unplaced.size === 0) break;
    let entry: TreeEntry;
    let merkle: MerkleTree;
    try {
      // A shortage of descriptors waited out; one that outlasts the wait fails the run (readOr), rather
      // than pay again for what the manifest places.
      const read = await readOr(
        () =>
          readManifest(file, root, (digests) => {
            if (overfull(digests)) tooLarge.push(file);
            return useful(digests);
          }),
        (error) => {
          throw error;
        },
      );
      if (read === undefined) continue;
      entry = adoptedEntry(read, byDigest, input.description);
      merkle = foldedTree(entry, file);
    } catch (error) {
      if (!(error instanceof StoreError)) throw error;
      input.warn?.(`a tree manifest was passed over: ${error.message}`);
      continue;
    }
    // A damaged one: the service is asked, as before.
    const record = deps.store.recordIfReadable(root);
    if (record !== undefined) {
      // This store has the root's record (completed here with `complete --session`, its tree
      // planted by another store): registered, as the record proves, so nothing is asked and
      // registerRoots gives its documents that record. Leaves that fold to a recorded root
      // cannot be forged (that would take a SHA-256 collision), wherever the manifest came from.
      place(new LoadedTree(entry, { state: 'registered', record }, merkle, true));
      continue;
    }
    let said: Asked | { kind: 'absent' };
    const refused = asks.refusal(root, file, input.warn);
    if (refused !== undefined) {
      said = { kind: 'failed', error: refused };
    } else {
      // A root asked about already in this run (a receipt's) has its answer: no second request step.
      said = await asks.ask(root, file, () => askAbout(deps, entry, input));
    }
    if (said.kind === 'absent') continue;
    // `confirmed`: the service has the root; `planned`: nothing is known of it (its ask failed).
    place(new LoadedTree(entry, { state: said.kind === 'has' ? 'confirmed' : 'planned' }, merkle, true));
    adoptions.roots.set(root, said);
    if (said.kind === 'failed' && input.failFast) break;
  }
  // Only while documents are left for a new tree: a manifest not read then may have held them.
  if (tooLarge.length > 0 && unplaced.size > 0) {
    input.warn?.(manifestsTooLarge(tooLarge, runSize, `a document of this run (${[...unplaced][0]!})`));
  }
  return adoptions;
}

/**
 * The manifests of --receipt-dir by the digests of their leaves, for
 * per-document `register` on a store without their trees: which manifest's
 * root may hold a document, newest first. Read once, when first asked:
 * each manifest scanned as text (treeFileDigests), never parsed unless it
 * holds a document asked about (one laid out otherwise is parsed: trees.ts
 * readManifest); one that is no manifest as notarize writes it is passed
 * over, and `warn` told once.
 */
export class ManifestIndex {
  readonly #dir: string;
  /** How many documents the run has: as for register --aggregate, they bound the manifests read (manifestLeavesFor). */
  readonly #documents: number;
  readonly #warn: (message: string) => void;
  #byDigest: Promise<Map<string, { root: string; file: string }[]>> | undefined;
  /** The manifests not read for their size (manifestsTooLarge), said once, at the first document none placed. */
  readonly #tooLarge: string[] = [];
  #toldTooLarge = false;
  /**
   * Each manifest's tree, read and folded once a run (or why it could not
   * be), with the first leaf of each digest: per document, a cold re-run of
   * per-document register over 3,000 documents under one manifest read and
   * folded it 3,000 times (106 s; r82).
   */
  readonly #trees = new Map<
    string,
    Promise<{ tree: LoadedTree; leaves: Map<string, number> } | { passedOver: true }>
  >();

  /** `documents`: how many the run has (bounds the manifests read, and so time and memory). */
  constructor(dir: string, documents: number, warn: (message: string) => void) {
    this.#dir = dir;
    this.#documents = documents;
    this.#warn = warn;
  }

  /** The manifests that list `sha256` among their leaves, newest first. */
  async holding(sha256: string): Promise<{ root: string; file: string }[]> {
    this.#byDigest ??= this.#read();
    return (await this.#byDigest).get(sha256) ?? [];
  }

  /**
   * Says, once a run, that `sha256`, which no manifest read places (none
   * lists it, or those that do were passed over), is to be registered
   * while manifests too large to read may hold it. `ownRoot`: a root of
   * this store's own trees, whose leaves the store has (never named).
   */
  unplaced(sha256: string, ownRoot: (root: string) => boolean): void {
    if (this.#toldTooLarge) return;
    const files = this.#tooLarge.filter((file) => !ownRoot(manifestRoot(basename(file))!));
    if (files.length === 0) return;
    this.#toldTooLarge = true;
    this.#warn(manifestsTooLarge(files, this.#documents, sha256));
  }

  /**
   * The tree of a manifest `holding` gave, checked (its leaves make its
   * root), with the leaf of `sha256`; undefined when it is passed over (it
   * cannot be read, or is damaged: said once, however many documents it
   * lists). A shortage of descriptors is waited out, never taken for a
   * damaged manifest (readOr): that made every document it lists be
   * registered again, paid (r84).
   */
  async placement(manifest: { root: string; file: string }, sha256: string): Promise<Placement | undefined> {
    let reading = this.#trees.get(manifest.file);
    if (reading === undefined) {
      // The reading itself is kept: documents asking at once share it.
      reading = readOr(
        () => {
          const entry = readManifest(manifest.file, manifest.root)!;
          const tree = new LoadedTree(entry, { state: 'confirmed' }, foldedTree(entry, manifest.file), true);
          const leaves = new Map<string, number>();
          // The first leaf of a digest, as findIndex gave it.
          for (const [index, leaf] of entry.leaves.entries())
            if (!leaves.has(leaf.sha256)) leaves.set(leaf.sha256, index);
          return { tree, leaves };
        },
        (error) => {
          if (!(error instanceof StoreError)) throw error;
          this.#warn(`a tree manifest was passed over: ${error.message}`);
          return { passedOver: true as const };
        },
      );
      this.#trees.set(manifest.file, reading);
      // A shortage that outlasted the wait fails the document that asked; the next one reads again.
      const kept = reading;
      kept.catch(() => {
        if (this.#trees.get(manifest.file) === kept) this.#trees.delete(manifest.file);
      });
    }
    const read = await reading;
    return 'passedOver' in read ? undefined : { tree: read.tree, leafIndex: read.leaves.get(sha256) ?? -1 };
  }

  async #read(): Promise<Map<string, { root: string; file: string }[]>> {
    const byDigest = new Map<string, { root: string; file: string }[]>();
    const found = await manifestsIn(this.#dir);
    const passedOver: string[] = [];
    for (const { root, file, size } of found.sort((a, b) => b.mtimeMs - a.mtimeMs || (a.root < b.root ? -1 : 1))) {
      if (size > manifestBytesFor(this.#documents)) {
        this.#tooLarge.push(file);
        continue;
      }
      // Read as text when it is as notarize wrote it; else parsed (one that travelled: readManifest).
      const digests = await readOr(
        () => treeFileDigests(file, { anyOwner: true }) ?? readManifest(file, root)?.leaves.map((leaf) => leaf.sha256),
        () => undefined,
      );
      if (digests === undefined) {
        passedOver.push(file);
        continue;
      }
      if (digests.length > manifestLeavesFor(this.#documents)) {
        this.#tooLarge.push(file);
        continue;
      }
      const manifest = { root, file };
      for (const digest of new Set(digests)) {
        const holding = byDigest.get(digest);
        if (holding === undefined) byDigest.set(digest, [manifest]);
        else holding.push(manifest);
      }
    }
    if (passedOver.length > 0) {
      this.#warn(`tree manifests passed over (not as notarize writes them, or unreadable): ${passedOver.join(', ')}`);
    }
    return byDigest;
  }
}

/**
 * Why a document a manifest (or, for per-document register, a receipt: a
 * file not named `<root>.tree.json`) not asked about places under a root is
 * not registered (see adoptManifests).
 */
export function manifestsLeft(file: string): NotarizeError {
  const which =
    manifestRoot(basename(file)) === undefined
      ? `its receipt ${file} leads to a root that may hold it`
      : `the tree manifest ${file} may hold it`;
  // Exit 1, not 2: roots were asked about, so something was sent.
  return new NotarizeError(
    'manifests_unasked',
    EXIT.failed,
    `not registered: ${which}, but ${MAX_ABSENT_ROOTS} roots asked about were ` +
      `unknown to the service, and no more are asked about in one run`,
    {
      hint:
        'move aside the manifests and receipts the warning lists (the service does not have their roots; a re-run asks ' +
        'about the rest), or register the documents anew with --force',
    },
  );
}

/** The warning naming the manifests (and receipts) whose roots the service does not have: the ones to move aside. */
export function staleManifests(files: readonly string[]): string {
  const receipts = files.filter((file) => manifestRoot(basename(file)) === undefined).length;
  const what =
    receipts === 0 ? 'tree manifests' : receipts === files.length ? 'receipts' : 'tree manifests and receipts';
  return (
    `the service does not have the roots of these ${files.length} ${what} (runs that never registered ` +
    `them); no more are asked about in this run: ${files.join(', ')}`
  );
}

/**
 * The digests of the leaves of the manifest of `root` in `dir`, when
 * adoptManifests would use it for a run of `documents` documents: there, at
 * most manifestLeavesFor(documents) leaves, as notarize writes
 * it (readManifest; its leaves making its root); else undefined. A document under
 * a manifest that would be passed over is left to its receipt
 * (register-aggregate.ts, which reads each root's manifest once per run).
 */
export function usableManifest(dir: string, root: string, documents: number): ReadonlySet<string> | undefined {
  const file = join(dir, manifestName(root));
  const maxLeaves = manifestLeavesFor(documents);
  try {
    if (lstatSync(file).size > manifestBytesFor(documents)) return undefined;
  } catch {
    return undefined;
  }
  const digests = exactManifestDigests(file, root);
  return digests !== undefined && digests.length <= maxLeaves ? new Set(digests) : undefined;
}

/**
 * A manifest's tree as this run adopts it: its root and salts; this run's
 * description, names and sizes (none for a leaf that is no document of
 * this run: nothing of the manifest's own names is used).
 */
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
      const doc = byDigest.get(sha256);
      return { index, name: doc?.name ?? null, sha256, size: doc?.size ?? null, salt };
    }),
  };
}

/**
 * Asks the service whether it has `root` (see askAbout), for a document
 * whose receipt or a manifest in --receipt-dir (`source`, for the hint of a
 * failed ask) puts it under that root (per-document register on a store
 * without its tree): the description sent is the root's default one, of
 * `treeSize` documents.
 */
export function askAboutRoot(
  deps: FlowDeps,
  root: string,
  treeSize: number,
  flags: Pick<ManifestQuery, 'signed' | 'blockchain'>,
  source: string,
): Promise<Asked | { kind: 'absent' }> {
  return askAbout(deps, { root, description: rootDescription(treeSize) }, flags, source);
}

/**
 * Keeps in the store that the service answered 409 to the ask about `hash`
 * (`message`, its words), as per-document register keeps a 409 to its
 * request step: the hash is confirmed from then on, and later runs send
 * nothing for it. Only a help: a disk that refuses it is no failure.
 */
export async function keepAsked409(store: FlowDeps['store'], hash: string, message: string | undefined): Promise<void> {
  const reason = [REQUEST_ANSWERED_409, message].join(': ');
  await store.keepAnswered409(hash, reason, new Date()).catch(() => undefined);
}

/**
 * Asks the service whether it has the document of digest `hash` registered
 * on its own (see askAbout), for one whose receipt in --receipt-dir
 * (`source`) says so: `register --aggregate` on a store without its record.
 * `description`: the one its receipt's record holds, if it passes the checks
 * a description given here does, else the digest.
 */
export function askAboutDocument(
  deps: FlowDeps,
  hash: string,
  description: string,
  flags: Pick<ManifestQuery, 'signed' | 'blockchain'>,
  source: string,
): Promise<Asked | { kind: 'absent' }> {
  return askAbout(deps, { root: hash, description }, flags, source, 'document');
}

/**
 * Asks the service whether it has the root of `entry`, with a request step
 * whose session is never kept: 409, it has it; a session (2xx, read and
 * valid), it does not, and nothing more is sent for it. Any other answer,
 * a 2xx that cannot be read as a session included (a proxy's or a
 * maintenance page says nothing of the root), is no answer: the ask
 * failed, and its documents with it, rather than be paid for again.
 */
async function askAbout(
  deps: FlowDeps,
  entry: Pick<TreeEntry, 'root' | 'description'>,
  input: Pick<ManifestQuery, 'signed' | 'blockchain'>,
  source = 'its manifest in --receipt-dir',
  what: 'root' | 'document' = 'root',
): Promise<Asked | { kind: 'absent' }> {
  try {
    const { root: hash, description } = entry;
    await deps.api.requestRegistration(registrationRequest({ ...input, hash, description, custody: false }));
    return { kind: 'absent' };
  } catch (error) {
    if (isAlreadyRegistered(error)) return { kind: 'has', message: error.serviceMessage };
    // Nothing was paid and nothing kept: asking again is the way on (a 5xx has its own hint).
    if (error instanceof NotarizeError && error.hint === undefined) {
      error.hint = `asking about ${what} ${entry.root} (${source}) got no answer that says whether the service has it; run the same command again once it answers normally`;
    }
    return { kind: 'failed', error };
  }
}

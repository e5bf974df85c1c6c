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
 *     knows no record of it: a request it may have seen made no payment),
 *     unless one of its documents was registered on its own since, or is
 *     being so now: then the tree is abandoned (abandonTakenUp);
 *   - a new tree only for documents under none.
 * Choosing trees and saving a new one happen under one store-wide lock
 * (`locks/aggregate.lock`), so two processes aggregating the same documents
 * agree on one tree, and the root's own lock, taken as the tree is saved
 * and held until the root is registered, keeps them from registering it
 * twice, and per-document register from paying for one of its documents
 * alone meanwhile (it waits: register-roots.ts, beforeRequest). Documents
 * a per-document run took up before it could see the tree are left out
 * (plantTheRest). On a store without their trees, the roots of the
 * manifests an earlier run left in --receipt-dir are asked about first,
 * outside that lock (manifests.ts): a 409 places documents under a root
 * the service already has, and nothing is paid for them. The trees
 * themselves, their states and proofs: trees.ts.
 *
 * Returns data; never prints.
 */
import { existsSync } from 'node:fs';
import { sentAlready, TransientError } from '../errors.js';
import { diskRefused } from '../store/disk.js';
import type { ServiceStore } from '../store/service-store.js';
import {
  adoptManifests,
  anyManifestFor,
  NO_ADOPTIONS,
  type Adoptions,
  type Asked,
  type ManifestQuery,
} from './manifests.js';
import { holdAcross, locked, otherRequestRefusal, register, type FlowDeps, type Outcome } from './notarize.js';
import { plantTree, Trees, type LoadedTree, type Placement } from './trees.js';
import { registeringRoot } from './trees-now.js';

/** An aggregate run: its documents and flags (ManifestQuery: those the manifests of --receipt-dir use too). */
export interface AggregateInput extends ManifestQuery {
  /** False for --no-complete: stop once the root's session is saved. */
  complete: boolean;
}

/** What registering one root gave: the flow's outcome, or the error that stopped it. */
export type RootResult =
  | { ok: true; outcome: Outcome }
  | { ok: false; error: unknown }
  /** Not attempted: an earlier root of the run failed, with --fail-fast. */
  | { ok: false; cancelled: true };

/** Where the documents of a run go (placeDocuments), and what was sent to find out. */
export interface Placed {
  /**
   * Each document's place, by the index of the document in the input;
   * undefined for those left out (`leftOut`).
   */
  placements: (Placement | undefined)[];
  /**
   * The indexes of the documents another process took up on their own
   * while their tree was being planted (its lock, a session or a record of
   * their own seen once the tree was saved): under no tree of this run, for
   * their own registration to settle (as per-document register would).
   */
  leftOut: number[];
  /**
   * The roots whose lock this run holds from their planting on (holdAcross),
   * each with what releases it: registerRoots releases each once its root is
   * registered; whoever placed the documents releases the rest when done.
   */
  holds: Map<string, () => void>;
  /** The roots of manifests asked about (adoptManifests), and what the service said. */
  asked: Map<string, RootResult>;
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
  const first = await locked(deps, 'aggregate', async (): Promise<Placed | Unsettled> => {
    const placed = await placeInStore(deps, input);
    // Under no tree, or under a root of this store not paid for yet: a manifest of another root the
    // service has (another store's run over the same documents, its receipts beside it) places such a
    // document there, where this store's root would pay for it a second time.
    const unsettled: Unsettled = { digests: new Set(), storeRoots: new Set() };
    for (const [i, doc] of input.documents.entries()) {
      const tree = placed[i]?.tree;
      if (tree !== undefined && !unpaid(tree)) continue;
      unsettled.digests.add(doc.sha256);
      if (tree !== undefined) unsettled.storeRoots.add(tree.entry.root);
    }
    // A manifest to ask about: asked outside the lock, placed again under it (below).
    if (await anyManifestFor(input, unsettled.digests, unsettled.storeRoots)) return unsettled;
    return plantTheRest(deps, input, placed, NO_ADOPTIONS);
  });
  if (!('digests' in first)) return first;
  const adopted = await adoptManifests(deps, input, first.digests, first.storeRoots);
  try {
    return await locked(deps, 'aggregate', async () =>
      plantTheRest(deps, input, await placeInStore(deps, input), adopted),
    );
  } catch (error) {
    // Taking the lock included: a disk that refuses it is exit 2 only while nothing was sent.
    throw deps.api.anythingSent ? sentAlready(error) : error;
  }
}

/** The documents a manifest may place (placeDocuments), and the roots of the store's unpaid trees among them. */
interface Unsettled {
  digests: Set<string>;
  storeRoots: Set<string>;
}

/** A tree of the store whose root is not paid for yet: planned (never answered) or pending (not completed). */
function unpaid(tree: LoadedTree): boolean {
  return !tree.adopted && (tree.state === 'planned' || tree.state === 'pending');
}

/** A tree whose root the service has: registered here, or confirmed by its 409. */
function serviceHas(tree: LoadedTree): boolean {
  return tree.state === 'registered' || tree.state === 'confirmed';
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
  for (const tree of treesOf(placed)) tree.merkle(store.treeFile(tree.entry.root));
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
  const asked = new Map([...adopted.roots].map(([root, said]) => [root, rootResultOf(root, said)]));
  // Under a root asked about (adoptManifests): never saved, never sent again. Also a document this
  // store has under a root not paid for yet (`moved`: the service has it under the manifest's root,
  // or the ask failed, and it fails rather than be paid for; `unsure`: the trees of those).
  const moved = new Set<LoadedTree>();
  const unsure = new Set<LoadedTree>();
  for (const [i, doc] of input.documents.entries()) {
    const adoption = adopted.placements.get(doc.sha256);
    const own = placed[i]?.tree;
    if (adoption === undefined || (own !== undefined && !unpaid(own))) continue;
    if (own !== undefined) moved.add(own);
    if (own !== undefined && !serviceHas(adoption.tree)) unsure.add(own);
    placed[i] = adoption;
  }
  // Before the store is touched (a new tree saved would carry the refused -d into a later run).
  refuseOtherRequests(deps, input, placed);
  await keepRecordedTrees(store, adopted, input.warn);
  const holds = new Map<string, () => void>();
  const leftOut: number[] = [];
  try {
    await holdPlannedRoots(deps, [...placed, ...[...moved].map((tree) => ({ tree, leafIndex: 0 }))], holds);
    const stopped = input.failFast === true && [...adopted.roots.values()].some((said) => said.kind === 'failed');
    const abandoned = stopped ? [] : abandonTakenUp(deps, input, placed, holds, moved);
    await settlePendingPassedOver(deps, input, placed, new Set([...moved].filter((tree) => !unsure.has(tree))));
    let newcomers = input.documents.flatMap((doc, i) => (placed[i] ? [] : [{ doc, i }]));
    const plant = () =>
      plantTree(
        newcomers.map(({ doc }) => doc),
        input.description,
        deps.now?.() ?? new Date(),
      );
    if (newcomers.length > 0 && stopped) {
      // Never saved: placed for their results (skipped), nothing is sent for them.
      const tree = plant();
      asked.set(tree.entry.root, { ok: false, cancelled: true });
      newcomers.forEach(({ i }, leafIndex) => (placed[i] = { tree, leafIndex }));
    } else if (newcomers.length > 0) {
      let tree: LoadedTree | undefined = plant();
      await saveNewTree(deps, tree, holds);
      // A per-document run may have taken one of them up between the look at their locks
      // (commands/register-aggregate.ts) and this tree's being saved, and pay for it alone: it
      // looks at the trees only once it holds the document's lock, so a document whose lock is
      // free now, with no session or record of its own, is this tree's (that run, if any, will see
      // the tree and wait for its root). Those taken up are left out, and the tree planted again.
      const taking = () =>
        takenUp(
          deps,
          input,
          newcomers.map(({ doc }) => doc.sha256),
        );
      for (let taken = taking(); taken.size > 0; taken = taking()) {
        for (const { doc, i } of newcomers) if (taken.has(doc.sha256)) leftOut.push(i);
        newcomers = newcomers.filter(({ doc }) => !taken.has(doc.sha256));
        const replaced: LoadedTree = tree;
        tree = newcomers.length === 0 ? undefined : plant();
        if (tree) await saveNewTree(deps, tree, holds);
        // The new tree first: a document it keeps is under a tree of the store all along.
        dropTree(store, replaced.entry.root, holds);
        if (!tree) break;
      }
      if (tree) newcomers.forEach(({ i }, leafIndex) => (placed[i] = { tree, leafIndex }));
    }
    // Once their documents are under the new tree (or left out): a planned tree frees its documents.
    for (const root of abandoned) dropTree(store, root, holds);
    await redescribePlanned(deps, input, placed, holds);
  } catch (error) {
    for (const release of holds.values()) release();
    throw error;
  }
  leftOut.sort((a, b) => a - b);
  return { placements: placed, leftOut, holds, asked };
}

/** The trees the documents are placed under, each once. */
function treesOf(placed: readonly (Placement | undefined)[]): Set<LoadedTree> {
  return new Set(placed.flatMap((place) => (place ? [place.tree] : [])));
}

/** Removes the tree of `root`, never sent, from the store, then lets go of its root's lock (`holds`). */
function dropTree(store: ServiceStore, root: string, holds: Map<string, () => void>): void {
  store.removeTree(root);
  holds.get(root)?.();
  holds.delete(root);
}

/**
 * Saves a tree just planted, and takes its root's lock, held until its root
 * is registered (`holds`): from then on another process finding one of its
 * documents under it waits for it (register-roots.ts) rather than see a
 * tree planned by a run that is gone, which frees its documents.
 */
async function saveNewTree(deps: FlowDeps, tree: LoadedTree, holds: Map<string, () => void>): Promise<void> {
  await saveTree(deps, tree);
  // A new root (its leaves' salts are random): no one else holds its lock.
  holds.set(tree.entry.root, await holdAcross(deps, tree.entry.root, 0));
}

/** Saves a tree before its root is sent; a disk refusing it is said as such, with what was sent so far. */
async function saveTree(deps: FlowDeps, tree: LoadedTree): Promise<void> {
  const { store } = deps;
  try {
    await store.saveTree(tree.entry);
  } catch (error) {
    // Full, a file size limit: the user's to fix, and nothing was paid for (a tree is saved before its
    // root is requested): whatever was sent before asked about roots of manifests or receipts.
    const sent = deps.api.anythingSent
      ? 'nothing was paid for: only the roots of manifests or receipts were asked about'
      : undefined;
    throw diskRefused(error, store.dir, sent) ?? error;
  }
}

/**
 * A pending root is completed as it was requested: a run whose -d, or
 * --signed, is not what its session was requested with is refused (exit 2,
 * or 1 once a manifest's root was asked about) before anything more is sent
 * or saved, as per-document register refuses a document's own session,
 * rather than complete it with the old ones unsaid, for good.
 */
function refuseOtherRequests(deps: FlowDeps, input: AggregateInput, placed: readonly (Placement | undefined)[]): void {
  const { description, signed } = input;
  if (description === undefined && !signed) return;
  for (const tree of treesOf(placed)) {
    if (tree.state !== 'pending') continue;
    const pending = deps.store.pendingIfReadable(tree.entry.root);
    const refusal =
      pending &&
      otherRequestRefusal(pending, {
        hash: tree.entry.root,
        ...(description === undefined ? {} : { description }),
        custody: false,
        signed,
      });
    if (refusal) throw refusal;
  }
}

/**
 * The planned trees this run holds (holdPlannedRoots), to be requested
 * again, take the run's -d when it gives one: their request step was never
 * answered, so nothing holds the old description (a run fixing a typo after
 * a failed request step sent the typo, and its manifest kept it). Saved
 * before the root is sent, so that the manifest written from the tree and a
 * later run, should this answer be lost too, keep the same one. A planned
 * tree another process holds is left as it is: that process registers it.
 */
async function redescribePlanned(
  deps: FlowDeps,
  input: AggregateInput,
  placed: readonly (Placement | undefined)[],
  holds: ReadonlyMap<string, () => void>,
): Promise<void> {
  const { description } = input;
  if (description === undefined) return;
  for (const tree of treesOf(placed)) {
    if (tree.state !== 'planned' || tree.adopted || !holds.has(tree.entry.root)) continue;
    if (tree.entry.description === description) continue;
    tree.entry.description = description;
    await saveTree(deps, tree);
  }
}

/**
 * Holds the locks of the planned roots (saved by a run that stopped before
 * the service answered) this run registers again, so that, as for a new
 * tree, a per-document run finding one of their documents under them waits.
 * One held by another process (registering it now) is left to it:
 * registerRoot waits for it.
 */
async function holdPlannedRoots(
  deps: FlowDeps,
  placed: readonly (Placement | undefined)[],
  holds: Map<string, () => void>,
): Promise<void> {
  for (const place of placed) {
    const tree = place?.tree;
    if (tree === undefined || tree.state !== 'planned' || tree.adopted || holds.has(tree.entry.root)) continue;
    try {
      holds.set(tree.entry.root, await holdAcross(deps, tree.entry.root, 0));
    } catch (error) {
      if (!(error instanceof TransientError)) throw error;
    }
  }
}

/**
 * The planned trees this run holds the roots of (holdPlannedRoots: their
 * planting run is gone, stopped before the service answered, or failed)
 * that hold a document taken up on its own since (takenUp: registered on its
 * own, or at work in another process: a planned tree frees its documents,
 * see register-roots.ts): requesting that root again would pay
 * for such a document both ways, and for nothing new when all were. Each
 * such tree is abandoned: its documents of this run are unplaced (`placed`),
 * to be planted anew without those taken up; the caller removes the tree
 * once they are, and lets go of its root's lock. Not one whose request step
 * was answered unreadably: the service may hold its session (the flow says
 * so), nor for a document's session of its own left pending (a run that
 * stopped: with --no-complete, nothing was paid; the root answers for it,
 * as before, and its session is shown `under-root`). Returns the roots
 * abandoned. --force: none.
 */
function abandonTakenUp(
  deps: FlowDeps,
  input: AggregateInput,
  placed: (Placement | undefined)[],
  holds: ReadonlyMap<string, () => void>,
  moved: ReadonlySet<LoadedTree>,
): string[] {
  const abandoned = new Set<string>();
  for (const tree of [...placed.map((place) => place?.tree), ...moved]) {
    if (tree === undefined || tree.state !== 'planned' || !holds.has(tree.entry.root)) continue;
    const root = tree.entry.root;
    if (abandoned.has(root) || existsSync(deps.store.unansweredFile(root))) continue;
    // One whose documents the service has under another root (a manifest's): the same as taken up.
    if (moved.has(tree)) abandoned.add(root);
    const leaves = tree.entry.leaves.map((leaf) => leaf.sha256);
    if (takenUp(deps, input, leaves, { sessions: false }).size > 0) abandoned.add(root);
  }
  for (const [i, place] of placed.entries()) if (place && abandoned.has(place.tree.entry.root)) placed[i] = undefined;
  return [...abandoned];
}

/**
 * A pending root of the store none of whose documents of this run is left
 * under it (`moved`: the service said it has them under a manifest's root;
 * not one whose documents' ask failed, which fail and say so) is not
 * completed by this run: completing it would pay for them a second time.
 * When the service has every one of its leaves under other roots, nothing
 * is left for it to prove: its session is retired (kept in retired/, as
 * `pending drop` keeps one) and its tree let go, so that no later
 * `complete --all` pays for it. Under its lock, taken only when free (a
 * process completing it now is left to it). Otherwise it stays pending
 * (it may hold documents this run does not have), and the warning says how
 * to let it go.
 */
async function settlePendingPassedOver(
  deps: FlowDeps,
  input: AggregateInput,
  placed: readonly (Placement | undefined)[],
  moved: ReadonlySet<LoadedTree>,
): Promise<void> {
  const still = new Set(placed.map((place) => place?.tree.entry.root));
  // The digests under roots the service has: this store's registered ones, those it confirmed.
  const done = new Set(placed.flatMap((place) => (place && serviceHas(place.tree) ? [place.tree] : [])));
  const elsewhere = new Set([...done].flatMap((tree) => tree.entry.leaves.map((leaf) => leaf.sha256)));
  for (const tree of moved) {
    const root = tree.entry.root;
    if (tree.state !== 'pending' || still.has(root)) continue;
    if (completionUnread(deps.store, root)) {
      // Its completion was sent and answered unreadably: it may be paid for. Never retired.
      input.warn?.(
        `root ${root} is pending in this store, its last completion answered unreadably (it may have been paid ` +
          `for); the service has its documents of this run under another root, so it is not sent again here: ` +
          `\`notarize complete ${root}\` finds out (a 409 records it)`,
      );
      continue;
    }
    if (tree.entry.leaves.every((leaf) => elsewhere.has(leaf.sha256)) && (await retireRoot(deps, root))) {
      input.warn?.(
        `root ${root} was pending in this store, but the service has all its documents under other roots ` +
          `(tree manifests in --receipt-dir): its session is retired, never completed (it would pay for them again)`,
      );
      continue;
    }
    input.warn?.(
      `root ${root} is pending in this store, but the service has its documents of this run under another root ` +
        `(a tree manifest in --receipt-dir): it is not completed, which would pay for them again; ` +
        `\`notarize pending drop ${root}\` forgets it`,
    );
  }
}

/** Whether the pending session of `root` had its completion answered unreadably (it may be paid for). */
export function completionUnread(store: ServiceStore, root: string): boolean {
  try {
    return store.readPending(root)?.forfaitUnreadAt !== undefined;
  } catch {
    return true; // Unreadable: it may be anything; never retired.
  }
}

/** Retires the session of `root` and removes its tree, under its lock if free; whether it did. */
async function retireRoot(deps: FlowDeps, root: string): Promise<boolean> {
  const { store } = deps;
  try {
    return await locked({ ...deps, lockWaitMs: 0 }, root, async () => {
      if (completionUnread(store, root)) return false;
      const reason = 'retired by register --aggregate: the service has all its documents under other roots';
      if ((await store.retirePending(root, reason, deps.now?.() ?? new Date())) === undefined) return false;
      store.removeTree(root);
      return true;
    });
  } catch {
    return false; // Held by a live process, or the store refused: the warning says what to do.
  }
}

/**
 * Of `digests`, those another process has taken up on their own since the
 * command looked (their lock held, a record of their own, or unless
 * `sessions` is false a session of their own). --force puts documents with
 * records of their own in the tree, as asked: nothing is looked at.
 */
function takenUp(
  deps: FlowDeps,
  input: Partial<Pick<AggregateInput, 'force'>>,
  digests: readonly string[],
  { sessions = true } = {},
): Set<string> {
  const taken = new Set<string>();
  if (input.force) return taken;
  const { store } = deps;
  // One listing of each folder rather than three lookups per document (a tree of 100,000).
  const named = store.namedHashes(digests.length);
  for (const hash of digests) {
    if (named !== undefined && !named.has(hash)) continue;
    if (
      store.hasLock(hash) ||
      (sessions && existsSync(store.pendingFile(hash))) ||
      existsSync(store.ledgerFile(hash))
    ) {
      taken.add(hash);
    }
  }
  return taken;
}

/**
 * A planned root not requested: documents of its tree were taken up on their
 * own by another process since it was planned (takenUp), and requesting it
 * would pay for them twice. Nothing was sent for it; the next run abandons
 * the tree (abandonTakenUp) and plants its other documents anew.
 */
export class TakenUpSince extends TransientError {
  constructor(root: string, taken: ReadonlySet<string>) {
    const [first] = taken;
    const which =
      taken.size === 1
        ? `its document ${first} was taken up on its own`
        : `${taken.size} of its documents (${first} first) were taken up on their own`;
    super(
      `the Merkle root ${root} was not requested: ${which} by another notarize process since its tree was planned`,
      { hint: 'run the same command again: it plants a new tree without them', notProcessed: true },
    );
  }
}

/**
 * Saves in the store the trees adoptManifests placed under a root this store
 * has the record of (its leaves fold to it, so the tree is that root's): from
 * then on verify, show, receipt and per-document register find its documents
 * here, as under any tree registered here. Not a tree whose root was only
 * asked about: the service's word is no record. Under the aggregate lock.
 * A help, not needed by this run: a tree that cannot be saved is a warning.
 */
async function keepRecordedTrees(
  store: ServiceStore,
  adopted: Adoptions,
  warn: ((message: string) => void) | undefined,
): Promise<void> {
  const recorded = new Set([...adopted.placements.values()].map(({ tree }) => tree));
  for (const tree of recorded) {
    const file = store.treeFile(tree.entry.root);
    if (tree.state !== 'registered' || existsSync(file)) continue;
    try {
      await store.saveTree(tree.entry);
    } catch (error) {
      warn?.(
        `the tree of root ${tree.entry.root} (from its manifest) could not be kept in the store as ${file}: ` +
          `${(error as Error).message}; its documents got their receipts, and a later run with --receipt-dir finds them again`,
      );
    }
  }
}

/** A manifest's root asked about (adoptManifests), as a root of this run: already registered, or failed. */
function rootResultOf(root: string, said: Asked): RootResult {
  if (said.kind === 'failed') return { ok: false, error: said.error };
  const service = { message: said.message, retiredSession: undefined };
  return { ok: true, outcome: { kind: 'already-registered', hash: root, entry: undefined, service } };
}

/** Registers the root of every tree the documents were placed under, once each, in order. */
export async function registerRoots(
  deps: FlowDeps,
  input: Omit<AggregateInput, 'documents' | 'description'>,
  placements: readonly (Placement | undefined)[],
  asked: ReadonlyMap<string, RootResult> = new Map(),
  holds: ReadonlyMap<string, () => void> = new Map(),
): Promise<Map<string, RootResult>> {
  // Roots adoptManifests asked about are done: never sent again.
  const roots = new Map<string, RootResult>(asked);
  let failed = [...asked.values()].some((result) => !result.ok);
  for (const place of placements) {
    if (place === undefined) continue;
    const { tree } = place;
    const root = tree.entry.root;
    if (roots.has(root)) continue;
    if (failed && input.failFast) {
      roots.set(root, { ok: false, cancelled: true });
      continue;
    }
    if (tree.state === 'registered' || tree.state === 'confirmed') {
      await tidyRoot(deps, root);
      roots.set(root, { ok: true, outcome: finishedRoot(tree) });
      continue;
    }
    const result = await registerRoot(holds.has(root) ? { ...deps, heldAcross: new Set([root]) } : deps, tree, input);
    // Registered, pending, or failed: a per-document run waiting for the root may look again.
    holds.get(root)?.();
    if (!result.ok) failed = true;
    roots.set(root, result);
  }
  return roots;
}

/**
 * Registers one tree's root by the ordinary flow: a pending root's session
 * is completed (never a new request), a planned root is requested again
 * with its tree's description (the run's -d when it holds the tree:
 * redescribePlanned).
 * Never throws: an error is the result's.
 */
export async function registerRoot(
  deps: FlowDeps,
  tree: LoadedTree,
  flags: Pick<AggregateInput, 'signed' | 'blockchain' | 'complete'> & Partial<Pick<AggregateInput, 'force'>>,
): Promise<RootResult> {
  const root = tree.entry.root;
  // A planned root whose lock this run did not hold from its placing on (holdPlannedRoots found it
  // held a moment, by a per-document run looking at the trees, say) had its documents looked at by
  // no one under that lock (abandonTakenUp): looked at here, under it, before it is requested.
  const unheld = tree.state === 'planned' && !deps.heldAcross?.has(root);
  const beforeRequest = async (hash: string): Promise<void> => {
    if (unheld && hash === root) {
      const taken = takenUp(
        deps,
        flags,
        tree.entry.leaves.map((leaf) => leaf.sha256),
        { sessions: false },
      );
      if (taken.size > 0) throw new TakenUpSince(root, taken);
    }
    await deps.beforeRequest?.(hash);
  };
  try {
    // A wait for another run at work on the root says so, not "is working on <a digest never given>".
    const lockTiming = { ...deps.lockTiming, doing: registeringRoot(root) };
    const outcome = await register(
      { ...deps, beforeRequest, lockTiming },
      {
        hash: root,
        // A pending root's session keeps its own (asRequested); only a new request step sends this.
        description: tree.entry.description,
        custody: false,
        signed: flags.signed,
        blockchain: flags.blockchain,
        complete: flags.complete,
        force: false,
        // A pending root is completed as it was requested: an aggregate run has refused other -d and
        // --signed before (refuseOtherRequests), per-document register warned they go unused.
        asRequested: true,
      },
    );
    // A 409 to its request step (a planned root the service has: its session dropped after a
    // completion that went through) is kept by the flow: the tree is `confirmed` from then on.
    return { ok: true, outcome };
  } catch (error) {
    return { ok: false, error };
  }
}

/**
 * What a run killed may have left of a root a run sends nothing for: the
 * root's lock (killed before releasing it) and, once the root is done, its
 * session (killed between saving the record and removing the session). The
 * per-document flow tidies both when it takes a hash's lock again; a re-run
 * that sends nothing for the root (done, or only planned and left to
 * per-document register) tidies them here, under the root's lock, taken only
 * when free or when its owner provably died (never waiting: a live owner
 * tidies them itself). The common case, nothing left, costs two existence
 * checks.
 */
export async function tidyRoot(deps: FlowDeps, root: string): Promise<void> {
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

/**
 * The outcome of a tree whose root is done: registered (its record), or
 * `confirmed`: the service said it has the root (a 409), but its record
 * never reached this store. Nothing is sent for it.
 */
export function finishedRoot(tree: LoadedTree): Outcome {
  const root = tree.entry.root;
  if (tree.record) return { kind: 'already-registered', hash: root, entry: tree.record };
  const service = { message: CONFIRMED_MESSAGE, retiredSession: undefined };
  return { kind: 'already-registered', hash: root, entry: undefined, service };
}

/** What an already-registered result says of a root the service confirmed, whose record this store never got. */
const CONFIRMED_MESSAGE =
  'the service answered 409 for this root before (to its completion, or to a request step once its session was dropped); ' +
  'its record was never received here; nothing sent';

/**
 * Where a document of a per-document `register` run stands under Merkle
 * roots (`register --aggregate`), before the flow would register it on its
 * own: under a root this store registered (or the service confirmed), under
 * one still pending (completed, once for all its documents), or, on a store
 * without the tree, under the root its receipt in --receipt-dir names (the
 * service asked). Registering it on its own in any of these cases would pay
 * twice for it. Undefined: nothing known, the flow's to register.
 */
import { existsSync } from 'node:fs';
import { completionUnread, finishedRoot, registerRoot, tidyRoot, type RootResult } from '../core/aggregate.js';
import { askAboutRoot, keepAsked409, ManifestIndex, RootAsks } from '../core/manifests.js';
import { locked, type FlowDeps, type Outcome } from '../core/notarize.js';
import type { UnderRoot } from '../output/results.js';
import type { LedgerEntry } from '../store/service-store.js';
import { earlierProof, proofIn, type EarlierProof, type ReceiptPlan } from '../core/receipts.js';
import type { InclusionProof } from '../core/receipt-format.js';
import { planReceiptsByDigest } from '../core/evidence.js';
import { paidRootProblems, underUnreadRoot, type LoadedTree, type Trees } from '../core/trees.js';
import type { StoreError } from '../errors.js';
import { registeringRoot, TreesNow } from '../core/trees-now.js';
import { checkManifestPath, writeManifestFirst } from './manifest-files.js';
import type { RegisterOptions } from './register-inputs.js';

/** The root's outcome, and the document's proof to it. */
export interface Rooted {
  outcome: Outcome;
  under: UnderRoot;
  /** The receipt in --receipt-dir whose proof led to the root: it stands, and is left as it is. */
  kept?: string;
}

interface DocumentRootsRun {
  options: RegisterOptions;
  /** --receipt-dir, if given. */
  receipts: ReceiptPlan | undefined;
  baseUrl: string;
  deps: Pick<FlowDeps, 'api' | 'store' | 'lockTiming'>;
  /** The asks of the run, when shared with its manifests' (register --aggregate); else its own. */
  asks?: RootAsks;
}

/** Where a document stands under the trees of this store (#underRoot). */
type TreeStanding =
  | { state: 'registered' | 'pending' | 'retired'; tree: LoadedTree; proof: InclusionProof }
  | { state: 'planned'; tree: LoadedTree };

export class DocumentRoots {
  readonly #options: RegisterOptions;
  readonly #receipts: ReceiptPlan | undefined;
  readonly #baseUrl: string;
  readonly #deps: Pick<FlowDeps, 'api' | 'store' | 'lockTiming'>;
  /** The trees of this store as they are now, read when a document first needs them (#underRoot). */
  readonly #treesNow: TreesNow;
  /** The roots whose 409 this run kept (#keep409). */
  readonly #kept409 = new Set<string>();
  /** The hashes with a retired session (#retiredRoots). */
  #retired: Promise<ReadonlySet<string>> | undefined;
  /** The planned roots whose trees were read again before paying for a document of theirs (#underRoot). */
  readonly #plannedReread = new Set<string>();
  /** Of the tree files that could not be read, those whose root may have been paid for (paidRootProblems). */
  #paidProblems: { of: Trees; problems: Promise<StoreError[]> } | undefined;
  /** The pending roots this run completes, once each however many of its documents it meets (#underPendingRoot). */
  readonly #pendingRoots = new Map<string, Promise<RootResult>>();
  /** Whether #flagsNotForRoots has spoken. */
  #warnedRootFlags = false;
  /** The roots tidied (tidyRoot), once each. */
  readonly #tidied = new Map<string, Promise<void>>();
  /**
   * The roots of receipts and manifests in --receipt-dir asked about, once
   * each (#underEarlierRoot), and the files whose roots the service does not
   * have: past MAX_ABSENT_ROOTS, no more are asked about. Shared with the
   * manifests of an aggregate run.
   */
  readonly #asks: RootAsks;
  /** The manifests of --receipt-dir, read when a document first needs them. */
  #manifests: ManifestIndex | undefined;

  constructor({ options, receipts, baseUrl, deps, asks }: DocumentRootsRun) {
    this.#asks = asks ?? new RootAsks();
    this.#treesNow = new TreesNow(deps.store);
    this.#options = options;
    this.#receipts = receipts;
    this.#baseUrl = baseUrl;
    this.#deps = deps;
  }

  /**
   * What must hold before anything is sent for the document of digest
   * `hash` (--fail-fast checks every document first): a pending root it is
   * under, which this run would complete, must have a place for its
   * manifest in --receipt-dir. Throws UsageError (exit 2) when not.
   */
  async checkBeforeSending(hash: string): Promise<void> {
    if (this.#receipts === undefined || this.#options.force) return;
    const leaf = await this.#underRoot(hash);
    if (leaf?.state === 'pending') await checkManifestPath(this.#receipts, leaf.tree.entry.root);
  }

  /**
   * The root that answers for document `index` (digest `hash`), and its
   * proof; undefined when none does (see the module comment). `onStep`: the
   * flow's, for a pending root this run completes.
   */
  async standing(hash: string, index: number, onStep: FlowDeps['onStep']): Promise<Rooted | undefined> {
    const leaf = await this.#underRoot(hash);
    if (leaf?.state === 'registered') {
      // Only to warn: a session of its own there (damaged or not) would pay a second time if completed.
      if (existsSync(this.#deps.store.pendingFile(hash))) {
        this.#options.io.warn(
          `${hash} has a session of its own pending, though it is registered under the Merkle root ` +
            `${leaf.proof.root}: completing it would pay a second time; drop it with \`notarize pending drop ${hash}\``,
        );
      }
      await this.#tidy(leaf.tree);
      return { outcome: finishedRoot(leaf.tree), under: { sha256: hash, proof: leaf.proof } };
    }
    if (leaf?.state === 'pending') {
      // Another root the service has (another store's run: its receipt or manifest in --receipt-dir)
      // answers for it first: completing this store's root would pay for it a second time.
      const root = leaf.tree.entry.root;
      const elsewhere = await this.#underEarlierRoot(hash, index, root);
      if (elsewhere !== undefined) {
        // One whose completion was answered unreadably may be paid for already: complete finds out.
        const unread = completionUnread(this.#deps.store, root);
        this.#options.io.warn(
          `root ${root} is pending in this store, but the service has ${hash} under root ${elsewhere.under.proof.root} ` +
            `(--receipt-dir): it is not completed for it, which would pay for it again; ` +
            (unread
              ? `its last completion was answered unreadably: \`notarize complete ${root}\` finds out (a 409 records it)`
              : `\`notarize pending drop ${root}\` forgets it once no document needs it`),
        );
        return elsewhere;
      }
      return { outcome: await this.#underPendingRoot(leaf.tree, onStep), under: { sha256: hash, proof: leaf.proof } };
    }
    if (leaf?.state === 'retired') {
      // Its root's request step was answered, then its session retired (`pending drop`): a completion
      // sent before, its answer lost, may have paid for it (r103). The service says: a 409 makes the
      // document already-registered under it; a root it does not have frees the document.
      const root = leaf.tree.entry.root;
      const source = "its tree in this store, the root's session retired (`notarize pending drop`)";
      const said = await this.#ask(root, leaf.tree.entry.treeSize, source);
      if (said.kind === 'failed') throw said.error;
      if (said.kind === 'has') {
        // Kept as a 409 to a request step is (the root `confirmed` from then on): later runs send nothing.
        await this.#keep409(root, said.message);
        return this.#under(hash, leaf.proof, said);
      }
    }
    if (leaf?.state === 'planned') await this.#tidy(leaf.tree);
    return this.#underEarlierRoot(hash, index);
  }

  /**
   * A document this store knows nothing of (no record, no session, under no
   * tree of its own: a fresh CI runner) that an earlier `register
   * --aggregate` left evidence of in --receipt-dir: its receipt with a proof
   * to a root of this service, or a `<root>.tree.json` manifest listing it
   * (newest first; written before the root was paid for, so it is there even
   * when the completion's answer was lost). The service is asked about each
   * such root, once per run, as `register --aggregate` asks about a
   * manifest's: a 409 (read as "it has it") makes the document
   * already-registered under it, its receipt left as it is; a root the
   * service does not have (it answers with a session, dropped unsaved) is
   * passed over, and with none left the flow registers the document on its
   * own; an ask without an answer fails the document rather than pay for it
   * again, as does a manifest left unasked once MAX_ABSENT_ROOTS roots were
   * unknown to the service. --force asks nothing. `pendingRoot`: a root of
   * this store's, pending, that holds the document: never asked about (its
   * session would be replaced), only another that holds it.
   */
  async #underEarlierRoot(hash: string, index: number, pendingRoot?: string): Promise<Rooted | undefined> {
    const receipts = this.#receipts;
    const { store } = this.#deps;
    if (receipts === undefined || this.#options.force) return undefined;
    try {
      // Its own record or session answers for it (the flow's): nothing to ask.
      if (store.readRecord(hash) !== undefined || existsSync(store.pendingFile(hash))) return undefined;
    } catch {
      return undefined; // A damaged record: the flow says so.
    }
    // Its own receipt first, then those of the same content under other names (a copy of a
    // document): the root each leads to answers for this digest too; only its own is kept as its.
    const own = await earlierProof(receipts, index, hash);
    for await (const found of this.#proofsOf(hash, own)) {
      if (found.proof.root === pendingRoot) continue;
      // Its root's record here (completed with `complete --session`, its tree never here): nothing to ask.
      const entry = this.#deps.store.recordIfReadable(found.proof.root);
      if (entry) return this.#under(hash, found.proof, { entry });
      // Receipts are as easy to plant as manifests: the same bound on the roots asked about in vain.
      this.#refuseOnceTooManyAbsent(found.proof.root, found.path);
      const said = await this.#ask(found.proof.root, found.proof.treeSize, 'its receipt in --receipt-dir', found.path);
      if (said.kind === 'failed') throw said.error;
      if (said.kind === 'has') {
        const rooted = this.#under(hash, found.proof, said);
        return found === own ? { ...rooted, kept: own.path } : rooted;
      }
    }
    // The manifests there that list it (its receipt lost, or never written: a completion whose answer was lost).
    this.#manifests ??= new ManifestIndex(receipts.dir, receipts.names.length, (message) =>
      this.#options.io.warn(message),
    );
    for (const manifest of await this.#manifests.holding(hash)) {
      if (manifest.root === pendingRoot) continue;
      const placement = await this.#manifests.placement(manifest, hash);
      if (placement === undefined) continue;
      const { tree, leafIndex } = placement;
      const entry = this.#deps.store.recordIfReadable(manifest.root);
      if (entry) return this.#under(hash, tree.proof(leafIndex, manifest.file), { entry });
      this.#refuseOnceTooManyAbsent(manifest.root, manifest.file);
      const said = await this.#ask(manifest.root, tree.entry.treeSize, 'its manifest in --receipt-dir', manifest.file);
      if (said.kind === 'failed') throw said.error;
      if (said.kind === 'has') return this.#under(hash, tree.proof(leafIndex, manifest.file), said);
    }
    this.#manifests.unplaced(hash, (root) => existsSync(store.treeFile(root)));
    return undefined;
  }

  /**
   * The proofs to roots of this service that the receipts in --receipt-dir
   * give the document of digest `hash`: its own receipt's (`own`), then
   * those of the same digest under other names (planReceiptsByDigest, read once
   * per run), each holding together, one per root. Both base URLs without a
   * final slash (readReceipt, parseBaseUrl): a receipt of another service is
   * no question for this one.
   */
  async *#proofsOf(hash: string, own: EarlierProof | undefined): AsyncGenerator<EarlierProof> {
    const roots = new Set<string>();
    if (own !== undefined && own.baseUrl === this.#baseUrl) {
      roots.add(own.proof.root);
      yield own;
    }
    if (this.#receipts === undefined) return;
    for (const path of (await planReceiptsByDigest(this.#receipts)).get(hash) ?? []) {
      if (path === own?.path) continue;
      const found = await proofIn(path, hash);
      if (found === undefined || found.baseUrl !== this.#baseUrl || roots.has(found.proof.root)) continue;
      roots.add(found.proof.root);
      yield found;
    }
  }

  /**
   * Throws manifestsLeft for `file` (a manifest or receipt naming `root`)
   * once MAX_ABSENT_ROOTS roots asked about were unknown to the service,
   * unless `root` was asked about already; the first time, the warning
   * names the files whose roots the service does not have.
   */
  #refuseOnceTooManyAbsent(root: string, file: string): void {
    const refused = this.#asks.refusal(root, file, (message) => this.#options.io.warn(message));
    if (refused !== undefined) throw refused;
  }

  /**
   * A document under `proof.root`, already registered: by this store's
   * record of the root (completed here with `complete --session`, its tree
   * never here: its receipt is written), or by the service's word (a 409 to
   * a request step).
   */
  #under(
    sha256: string,
    proof: InclusionProof,
    known: { entry: LedgerEntry } | { message: string | undefined },
  ): Rooted {
    const outcome: Outcome =
      'entry' in known
        ? { kind: 'already-registered', hash: proof.root, entry: known.entry }
        : {
            kind: 'already-registered',
            hash: proof.root,
            entry: undefined,
            service: { message: known.message, retiredSession: undefined },
          };
    return { under: { sha256, proof }, outcome };
  }

  /**
   * What the service says of `root` (askAboutRoot), asked once per run;
   * `source`: what named it, for an error's hint; `file`: its manifest, listed
   * in the warning once too many roots were unknown to the service.
   */
  async #ask(
    root: string,
    treeSize: number,
    source: string,
    file?: string,
  ): Promise<Awaited<ReturnType<typeof askAboutRoot>>> {
    return this.#asks.ask(root, file, () => askAboutRoot(this.#deps, root, treeSize, this.#options, source));
  }

  /**
   * Said once, when this run completes a pending root: what was asked for
   * the documents themselves does not go on the root's registration (its
   * description is the one saved with its session; a root has no file).
   */
  #flagsNotForRoots(root: string): void {
    const { custody, walletName, description, signed } = this.#options;
    const flags = [
      ...(description === undefined ? [] : ['the description']),
      ...(custody ? ['--custody'] : []),
      ...(walletName === undefined ? [] : ['--wallet-name']),
      // Sent with the request step, which the root had before this run.
      ...(signed ? ['--signed'] : []),
    ];
    if (flags.length === 0 || this.#warnedRootFlags) return;
    this.#warnedRootFlags = true;
    this.#options.io.warn(
      `${flags.join(', ')} ${flags.length === 1 ? 'is' : 'are'} not used for the documents under a pending Merkle root ` +
        `(${root} first): completing it registers the root as it was requested; --force registers them on their own`,
    );
  }

  /** Whether the service said in this run that it does not have `root` (RootAsks.refutes). */
  refutes(root: string): boolean {
    return this.#asks.refutes(root);
  }

  /** Says which manifests of --receipt-dir name roots the service does not have (RootAsks.warnStaleManifests). */
  warnStaleManifests(): void {
    this.#asks.warnStaleManifests((message) => this.#options.io.warn(message));
  }

  /** Keeps, once per root and run (not once per leaf), that the service answered 409 for `root` (keepAsked409). */
  async #keep409(root: string, message: string | undefined): Promise<void> {
    if (this.#kept409.has(root)) return;
    this.#kept409.add(root);
    await keepAsked409(this.#deps.store, root, message);
  }

  /** The hashes with a session in the store's retired/ folder, read once per run (only for a planned tree's document). */
  #retiredRoots(): Promise<ReadonlySet<string>> {
    this.#retired ??= this.#deps.store.retirements().then((reasons) => new Set(reasons.keys()));
    return this.#retired;
  }

  /** What a run killed may have left of the root of `tree`, which this run sends nothing for (tidyRoot): once per root. */
  async #tidy(tree: LoadedTree): Promise<void> {
    const root = tree.entry.root;
    if (!this.#tidied.has(root)) this.#tidied.set(root, tidyRoot(this.#deps, root));
    await this.#tidied.get(root);
  }

  /**
   * The root of a tree this store has pending (an --aggregate run stopped
   * after its request step, or --no-complete), registered as `register
   * --aggregate` or `complete <root>` would: its saved session completed,
   * never a new request, once for all its documents in this run. Paying for
   * the document on its own instead would pay twice for it once the root is
   * completed (--force does). Its failure is each of those documents'.
   */
  async #underPendingRoot(tree: LoadedTree, onStep: FlowDeps['onStep']): Promise<Outcome> {
    const root = tree.entry.root;
    let done = this.#pendingRoots.get(root);
    if (done === undefined) {
      const { signed, blockchain, complete } = this.#options;
      this.#flagsNotForRoots(root);
      // With --receipt-dir, its manifest goes there before it is paid for, as an aggregate run's does
      // (its place checked first: nothing is sent when it cannot be written).
      const plan = this.#receipts;
      const manifest = plan && { beforeCompletion: () => writeManifestFirst(plan, tree, this.#options.io) };
      done = (plan ? checkManifestPath(plan, root) : Promise.resolve()).then(() =>
        registerRoot({ ...this.#deps, onStep, ...manifest }, tree, { signed, blockchain, complete }),
      );
      this.#pendingRoots.set(root, done);
    }
    const result = await done;
    if (result.ok) return result.outcome;
    throw 'error' in result ? result.error : new Error(`the root ${root} was not registered`);
  }

  /**
   * The last look, under the document's lock, right before its request
   * step is sent (FlowDeps.beforeRequest), at whether a Merkle root another
   * process planted answers for it after all (TreesNow.settle: throws
   * UnderRootSince, and #send places the document again).
   */
  async beforeRequest(hash: string): Promise<void> {
    if (this.#options.force) return;
    await this.#treesNow.settle(this.#deps, hash, 'register its documents again');
  }

  /**
   * Where a document with no record of its own stands under the Merkle roots
   * of this store (`register --aggregate`): a leaf of a registered root (its
   * tree and proof: registering it again would pay twice for what `verify`
   * already calls notarized; so for a root the service confirmed with a 409,
   * whose record never arrived), or of a pending one (that root is completed,
   * see #underPendingRoot). --force registers it on its own. A root only
   * planned (never answered) does not count: the document goes through the
   * flow as before. A tree file
   * that cannot be read fails the documents it is not known not to hold (its
   * error says how to restore it). The trees are read once per run, and only
   * when a document is hashed: on a cold store there are none.
   */
  async #underRoot(hash: string, waited = false): Promise<TreeStanding | undefined> {
    if (this.#options.force) return undefined;
    const { store } = this.#deps;
    const trees = await this.#treesNow.current();
    const placed = trees.place(hash);
    if (placed === undefined || placed.tree.state === 'planned' || placed.tree.state === 'pending') {
      // About to pay (on its own, or for a pending root): a tree that cannot be read may hold it under
      // a root already paid for. Stop, as --aggregate does, unless it has a record of its own.
      // (Its record is read only then: not once per document.)
      if (this.#paidProblems?.of !== trees)
        this.#paidProblems = { of: trees, problems: paidRootProblems(store, trees) };
      const problem = (await this.#paidProblems.problems)[0];
      if (problem && store.readRecord(hash) === undefined) throw problem;
    }
    if (placed === undefined) return undefined;
    const { tree, leafIndex } = placed;
    // Its own record (registered one by one, or --force) answers for it, as the flow's does.
    if (store.readRecord(hash) !== undefined) return undefined;
    if (tree.state === 'planned') {
      // Its request step answered unreadably: the service may hold a session for the root, which
      // `complete <root> --use-active-subscription` pays. Paying for its documents one by one as
      // well could pay twice: they wait, as in --aggregate, until the root is completed or dropped.
      if (store.readUnanswered(tree.entry.root) !== undefined) {
        throw underUnreadRoot(tree.entry.root, 'register its documents again');
      }
      // The run that planted it may be registering its root right now (another process, its request
      // in flight: the root's lock held). Paying for the document alone meanwhile would cover it twice:
      // wait for that lock, then look again (registered, pending, or still planned: nothing paid).
      // Its state as read may be stale too (registered or pending since): the trees are read again
      // the first time, and then whenever the root has a record or a session (two existence checks a
      // document: a tree of 10,000 planned leaves is not read again for each of them).
      const root = tree.entry.root;
      if (!waited) {
        const held = existsSync(store.lockFile(root));
        const lockTiming = { ...this.#deps.lockTiming, doing: registeringRoot(root, hash) };
        if (held) await locked({ ...this.#deps, lockTiming }, root, async () => {});
        const moved = existsSync(store.ledgerFile(root)) || existsSync(store.pendingFile(root));
        if (held || moved || !this.#plannedReread.has(root)) {
          this.#plannedReread.add(root);
          this.#treesNow.forget();
          return this.#underRoot(hash, true);
        }
      }
      // A session of the root's retired other than by a 409 (which makes it `confirmed`): by hand
      // (`pending drop`) after a completion whose answer was lost, maybe. Asked about (standing).
      if (!this.#options.force && (await this.#retiredRoots()).has(root)) {
        return { state: 'retired' as const, tree, proof: tree.proof(leafIndex, store.treeFile(root)) };
      }
      // Nothing paid for it: the document goes through the flow (the root's leftovers tidied).
      return { state: 'planned' as const, tree };
    }
    // A tree whose leaves do not make its root proves nothing: StoreError, the document fails (exit 2 or 1).
    const proof = tree.proof(leafIndex, store.treeFile(tree.entry.root));
    if (tree.state === 'pending') {
      // Its own session pending goes first, as before: it may be the one paid for (a checkout).
      if (existsSync(store.pendingFile(hash))) return undefined;
      return { state: 'pending' as const, tree, proof };
    }
    // Registered, or confirmed: the service answered 409 for the root, whose record this store never got.
    return { state: 'registered' as const, tree, proof };
  }
}

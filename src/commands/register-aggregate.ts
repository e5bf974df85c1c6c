/**
 * `notarize register --aggregate <paths...>`: every document hashed, one
 * Merkle root registered for all of them (core/aggregate.ts), and a result
 * and a receipt per document carrying its proof to that root.
 */
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import type { ApiClient } from '../api/client.js';
import { confirmedBefore, register, says409, type Outcome } from '../core/notarize.js';
import { waitNotice, type LockTiming } from '../store/lock.js';
import { placeDocuments, registerRoots, type RootResult } from '../core/aggregate.js';
import { planReceiptsByDigest } from '../core/evidence.js';
import { isSendableDescription } from '../core/description.js';
import { refusalAfterSending } from '../fd-shortage.js';
import { askAboutDocument, keepAsked409, RootAsks, usableManifest } from '../core/manifests.js';
import { Trees, type AggregateDocument, type LoadedTree, type Placement } from '../core/trees.js';
import { asNotarizeError, FailureTally, runAll, settledError } from '../core/batch.js';
import { HashPool } from '../core/hash-pool.js';
import {
  checkBeforeSending,
  earlierProof,
  keptReceipt,
  otherClaimWarning,
  type KeptReceipt,
  type OtherReceipt,
  receiptPath,
  registrationIn,
  RootRecordsInReceipts,
  writeReceipt,
  type RootRecordKept,
  type ReceiptPlan,
} from '../core/receipts.js';
import { receiptText, redactedReceipt, redactedReceiptWarning, type InclusionProof } from '../core/receipt-format.js';
import { nothingSent, ProtocolError, sentAlready, NotarizeError, TransientError, UsageError } from '../errors.js';
import type { ItemsResult } from '../output/present.js';
import { someDocuments } from '../output/wording.js';
import { failedResult, itemResult, outcomeResult, receiptDetails, type ItemResults } from '../output/results.js';
import type { ServiceStore } from '../store/service-store.js';
import { escapeControls } from '../output/safe-text.js';
import { owingResult, sessionNote } from '../interrupt.js';
import {
  checkManifestPath,
  manifestNotWritten,
  manifestPath,
  writeManifest,
  writeManifestFirst,
} from './manifest-files.js';
import { DocumentRoots, type Rooted } from './register-roots.js';
import { TreesNow } from '../core/trees-now.js';
import {
  checkNameSent,
  displayName,
  TITLE,
  type Documents,
  type Item,
  type RegisterOptions,
  type RegisterRun,
} from './register-inputs.js';

const FAIL_FAST_REASON = 'not registered: another document or root failed (--fail-fast)';

/** Whether a failed completion may have been processed all the same (core/notarize.ts withCompleteHint). */
function mayHaveCompleted(error: unknown): boolean {
  if (error instanceof NotarizeError && error.tokenRefusedFirst) return false;
  return (error instanceof TransientError && !error.notProcessed) || error instanceof ProtocolError;
}

/** A root failed with an answer not read or not of the documented shape: its session or mark kept for `complete`. */
function isRootProtocolFailure(result: RootResult): result is { ok: false; error: ProtocolError } {
  return !result.ok && 'error' in result && result.error instanceof ProtocolError;
}

/** Adds to a root's failure that, once `complete` has registered it, this command writes its documents' receipts. */
function sayReceiptsAfterComplete(error: ProtocolError): void {
  const then =
    'this being a Merkle root, once complete has registered it, run this same command with this store: it writes ' +
    "the documents' receipts from the record";
  if (!error.hint?.includes(then)) error.hint = error.hint ? `${error.hint}; ${then}` : then;
}

/** The flags --aggregate cannot go with, refused before anything is read or sent. */
export function checkAggregate(options: RegisterOptions): void {
  const refuse = (what: string, why: string) =>
    new UsageError(`--aggregate cannot be used with ${what}: ${why}`, { hint: 'name the documents as files' });
  if (options.hash !== undefined) throw refuse('--hash', 'its leaves are documents hashed here');
  if (options.custody) throw refuse('--custody', 'the registered root is no file whose metadata could be sent');
  if (options.paths.includes('-')) throw refuse("'-'", 'each leaf is a file, kept by its name');
}

/** A document the service has registered on its own, and the receipt there that says so, left as it is. */
interface Alone {
  outcome: Outcome;
  kept: string;
}

/** A document hashed for the tree: its index in the run, and what its leaf keeps. */
interface Hashed extends AggregateDocument {
  index: number;
  file: string | null;
}

/** One aggregate run: hash, check receipts, register the roots, then one result per document. */
export class Aggregator {
  readonly #options: RegisterOptions;
  readonly #documents: Documents;
  readonly #items: ItemResults;
  readonly #baseUrl: string;
  readonly #api: ApiClient;
  /** One notice for the run's long lock waits, the tree's and its documents' own (waitNotice). */
  readonly #lockWaits: LockTiming;
  readonly #store: ServiceStore;
  readonly #tally = new FailureTally();
  #total = 0;
  /** Roots the service says it has, of which this store has no record: no receipts for their documents. */
  readonly #unrecordedRoots = new Set<string>();
  /** Roots completed whose record the store could not save: the date their receipts are written with, and whether that was said. */
  readonly #unsavedRecords = new Map<string, { at: string; said: boolean }>();
  /** The record of each root with none here, as the receipts in --receipt-dir carry it. */
  readonly #rootRecords: RootRecordsInReceipts | undefined;
  /** The roots asked about in this run, for receipts and manifests alike: once each, 16 unknown at most. */
  readonly #asks = new RootAsks();
  /** The documents left for roots once the registered ones are out: what manifests are judged by. */
  #runSize = 0;
  /** The roots whose manifest this run wrote (manifest-files.ts). */
  readonly #manifestsWritten = new Set<string>();
  /** The documents with sessions of their own pending that a tree holds (#alreadyOnTheirOwn): said once placed. */
  #rootedSessions: Hashed[] = [];
  /** The documents whose own registration settles them (#alreadyOnTheirOwn), after the tree's (#onTheirOwn). */
  #alone: Hashed[] = [];
  /** A manifest the tree's part of the run could not write (#end), for the run's end once #alone are settled. */
  #manifestFailure: NotarizeError | undefined;
  /** The last write of each receipt path still under way (see #receipt). */
  readonly #writing = new Map<string, Promise<void>>();
  constructor({ options, documents, items, baseUrl, api, store }: RegisterRun) {
    this.#options = options;
    this.#documents = documents;
    this.#items = items;
    this.#baseUrl = baseUrl;
    this.#api = api;
    this.#lockWaits = waitNotice((message) => options.io.info(message));
    this.#store = store;
    const plan = documents.receipts;
    this.#rootRecords = plan && new RootRecordsInReceipts(baseUrl, () => planReceiptsByDigest(plan));
  }

  async run(): Promise<ItemsResult> {
    try {
      return await this.#run();
    } finally {
      this.#asks.warnStaleManifests((message) => this.#options.io.warn(message));
    }
  }

  async #run(): Promise<ItemsResult> {
    let result: ItemsResult | undefined;
    let thrown: { error: unknown } | undefined;
    try {
      result = await this.#runTree();
    } catch (error) {
      thrown = { error };
    }
    // The tree's part failed with nothing sent (a usage error: exit 2 must stay true): the
    // documents with their own sessions are left as they are, their sessions pending.
    if (this.#alone.length === 0 || (thrown && nothingSent(thrown.error) && !this.#api.anythingSent)) {
      if (thrown) throw thrown.error;
      return result!;
    }
    // Settled after the tree's root: waiting for their locks first would hold up the tree (and a
    // per-document run taking up one of the tree's documents meanwhile is seen: core/aggregate.ts);
    // settled also when the tree's part failed after something was sent. --fail-fast: after a
    // failure (the tree's part included), they are skipped too.
    if (this.#options.failFast && (thrown || this.#tally.failed > 0)) this.#skip(this.#alone);
    else await this.#onTheirOwn(this.#alone);
    // Something was sent: a usage error is exit 1 from here on (exit 2 promises nothing was).
    if (thrown) throw sentAlready(thrown.error);
    return this.#end(this.#manifestFailure);
  }

  async #runTree(): Promise<ItemsResult> {
    const all = await this.#hashAll();
    // --fail-fast: one document that cannot be hashed stops the run before anything is sent.
    if (this.#options.failFast && this.#tally.failed > 0) {
      this.#skip(all);
      return this.#end();
    }
    const rest = await this.#alreadyOnTheirOwn(all);
    // --fail-fast: a record of one that cannot be read (or its receipt) stops the run before anything is sent.
    if (this.#options.failFast && this.#tally.failed > 0) {
      this.#skip(rest);
      return this.#end();
    }
    if (rest.length === 0) return this.#end();
    this.#runSize = rest.length;
    const unrooted = await this.#underReceiptRoots(rest);
    // --fail-fast: a root that could not be asked about stops the run before more is sent.
    if (this.#options.failFast && this.#tally.failed > 0) {
      this.#skip(unrooted);
      return this.#end();
    }
    if (unrooted.length === 0) {
      await this.#warnNoRecords();
      return this.#end();
    }
    return this.#registerTree(unrooted);
  }

  /**
   * The documents left for a tree once those whose receipt in --receipt-dir
   * carries a proof to a Merkle root of this service, whose tree neither
   * this store nor --receipt-dir holds (a cold runner that kept the receipts
   * but not `<root>.tree.json`), are placed as per-document register places
   * them (register-roots.ts): that root is asked about first, and a 409
   * makes the document already-registered under it, its receipt left as it
   * is, rather than paid for again in a new tree that would also replace its
   * receipt. Those whose root the service does not have go on into the tree.
   */
  async #underReceiptRoots(hashed: Hashed[]): Promise<Hashed[]> {
    const plan = this.#documents.receipts;
    if (plan === undefined || this.#options.force) return hashed;
    const rest: Hashed[] = [];
    const candidates: Hashed[] = [];
    /** The manifests of the roots the receipts name: the digests of a usable one's leaves, by root. */
    const manifests = new Map<string, ReadonlySet<string> | undefined>();
    for (const doc of hashed) {
      const earlier = await earlierProof(plan, doc.index, doc.sha256);
      if (earlier !== undefined && earlier.baseUrl === this.#baseUrl) {
        // With a manifest there that placeDocuments adopts, the whole tree (every document's proof) is known.
        // (Each root's manifest read once: the documents of one tree all name it.)
        const { root } = earlier.proof;
        if (!manifests.has(root)) manifests.set(root, usableManifest(plan.dir, root, hashed.length));
        (manifests.get(root)?.has(doc.sha256) ? rest : candidates).push(doc);
        continue;
      }
      // Its receipt of a registration on its own (per-document register): the service is asked about it.
      const alone = await registrationIn(receiptPath(plan, doc.index, doc.sha256), doc.sha256);
      if (alone !== undefined && (alone.baseUrl === undefined || alone.baseUrl === this.#baseUrl)) {
        candidates.push(doc);
        continue;
      }
      // A receipt of the same content under another name (a copy of a document): DocumentRoots asks.
      const byDigest = await planReceiptsByDigest(plan);
      (byDigest.has(doc.sha256) ? candidates : rest).push(doc);
    }
    if (candidates.length === 0) return hashed;
    const known = await Trees.load(this.#store, { holding: new Set(candidates.map((doc) => doc.sha256)) });
    const roots = new DocumentRoots({
      options: this.#options,
      receipts: plan,
      baseUrl: this.#baseUrl,
      deps: { api: this.#api, store: this.#store, lockTiming: this.#lockWaits },
      asks: this.#asks,
    });
    /** The roots found so (or the service's word that it has the document on its own), by the digest of the document whose receipt led there. */
    const found = new Map<string, Rooted | Alone>();
    /** The digests whose root could not be asked about: a copy of one is not paid for either. */
    const failed = new Map<string, NotarizeError>();
    for (const [i, doc] of candidates.entries()) {
      // --fail-fast: after an ask that failed, no other is sent (the rest are skipped).
      if (this.#options.failFast && this.#tally.failed > 0) {
        for (const left of candidates.slice(i)) rest.push(left);
        break;
      }
      // Under a tree of this store paid for or pending: placeDocuments places it, sending nothing to
      // find out. One only planned (never answered) counts for nothing, as in per-document register.
      const placed = known.place(doc.sha256);
      if (placed !== undefined && placed.tree.state !== 'planned') {
        rest.push(doc);
        continue;
      }
      let rooted;
      let alone;
      try {
        rooted = await roots.standing(doc.sha256, doc.index, undefined);
        if (rooted === undefined) alone = await this.#registeredAlone(doc, plan);
      } catch (error) {
        const failure = asNotarizeError(error);
        failed.set(doc.sha256, failure);
        this.#fail(doc.index, doc.file, doc.sha256, failure);
        continue;
      }
      if (alone !== undefined) {
        found.set(doc.sha256, alone);
        this.#items.add(
          doc.index,
          outcomeResult(doc.file, alone.outcome, this.#baseUrl, receiptDetails(alone.kept, undefined)),
        );
        continue;
      }
      if (rooted === undefined) {
        rest.push(doc);
        continue;
      }
      found.set(doc.sha256, rooted);
      await this.#rooted(doc, rooted, rooted.kept);
    }
    // The same content under another name, with no receipt of its own: under the same root (its leaf,
    // its proof), not paid for again in a new tree; it has no receipt (no record here to write one from).
    // A copy of one whose ask failed fails with it, rather than be paid for.
    const left: Hashed[] = [];
    for (const doc of rest) {
      const rooted = found.get(doc.sha256);
      const error = failed.get(doc.sha256);
      if (rooted !== undefined && !('under' in rooted)) {
        const details = receiptDetails(rooted.kept, undefined);
        this.#items.add(doc.index, outcomeResult(doc.file, rooted.outcome, this.#baseUrl, details));
      } else if (rooted !== undefined) await this.#rooted(doc, rooted, undefined);
      else if (error !== undefined) this.#fail(doc.index, doc.file, doc.sha256, error);
      else left.push(doc);
    }
    return left.sort((a, b) => a.index - b.index);
  }

  /**
   * Of `dropped`, documents whose own session was retired other than by a
   * 409 (`notarize pending drop`, which the warning of #warnOwnSessions
   * suggests), those the service does not have: maybe their completion was
   * sent before and its answer lost (r103: planted in a new tree, paid for
   * twice). Each is asked about as a receipt's is (#registeredAlone): a 409
   * makes it already-registered on its own, no record (a warning names it
   * when no receipt is there to answer for it, and the 409 is kept: the
   * next run sends nothing); a failed ask fails it. One under a tree of
   * this store not only planned is its root's, as any document's.
   */
  async #droppedAlone(dropped: readonly Hashed[]): Promise<Hashed[]> {
    if (dropped.length === 0) return [];
    const free: Hashed[] = [];
    const unrecorded: string[] = [];
    const trees = await Trees.load(this.#store, { holding: new Set(dropped.map((doc) => doc.sha256)) });
    for (const doc of dropped) {
      // Under a tree of this store paid for or pending, its root answers for it (placeDocuments); a tree that
      // cannot be read stops the run there, nothing paid.
      const placed = trees.place(doc.sha256);
      if (trees.problems.length > 0 || (placed !== undefined && placed.tree.state !== 'planned')) {
        free.push(doc);
        continue;
      }
      const source = 'its own session, retired in this store (`notarize pending drop`)';
      const said = await this.#asks.ask(doc.sha256, undefined, () =>
        askAboutDocument({ api: this.#api, store: this.#store }, doc.sha256, doc.sha256, this.#options, source),
      );
      if (said.kind === 'failed') {
        this.#fail(doc.index, doc.file, doc.sha256, asNotarizeError(said.error));
        continue;
      }
      if (said.kind === 'absent') {
        free.push(doc);
        continue;
      }
      await keepAsked409(this.#store, doc.sha256, said.message);
      let kept: KeptReceipt | undefined;
      try {
        kept = await this.#keptReceipt(doc, doc.sha256);
      } catch (error) {
        this.#fail(doc.index, doc.file, doc.sha256, asNotarizeError(error));
        continue;
      }
      if (this.#documents.receipts !== undefined && kept === undefined) unrecorded.push(doc.sha256);
      const service = { message: said.message, retiredSession: undefined };
      const outcome = { kind: 'already-registered' as const, hash: doc.sha256, entry: undefined, service };
      const receipt = receiptDetails(kept?.kind === 'kept' ? kept.path : undefined, undefined);
      this.#items.add(doc.index, outcomeResult(doc.file, outcome, this.#baseUrl, receipt));
    }
    if (unrecorded.length > 0) {
      // Not "answered 409 before ... nothing sent" (r104): this run asked.
      const one = unrecorded.length === 1;
      this.#options.io.warn(
        `no receipt written for ${someDocuments(unrecorded.length, unrecorded[0]!)}: asked about now (${one ? 'its' : 'their'} ` +
          `own session${one ? ' was' : 's were'} dropped), the service answered 409, and this store has no record to write one from`,
      );
    }
    return free;
  }

  /**
   * Whether the service has `doc` registered on its own, when a receipt in
   * --receipt-dir of this service says so (per-document register: its own,
   * or one of the same content under another name) and this store has no
   * record of it (a cold runner): its digest is asked about as a root's is
   * (a request step whose session is never kept; the same bound on what is
   * asked in vain), and a 409 makes it already-registered, that receipt left
   * as it is and named in its result (verify finds it by digest), rather than paid for again under a new root that would also
   * replace that receipt. Undefined: no such receipt, or the service does
   * not have it (it goes into the tree). Throws when the ask failed.
   */
  async #registeredAlone(doc: Hashed, plan: ReceiptPlan): Promise<Alone | undefined> {
    const own = receiptPath(plan, doc.index, doc.sha256);
    const byDigest = await planReceiptsByDigest(plan);
    for (const path of [own, ...(byDigest.get(doc.sha256) ?? []).filter((p) => p !== own)]) {
      const alone = await registrationIn(path, doc.sha256);
      // A bare record does not say its service: asking this one costs a request step, never a payment.
      if (alone === undefined || (alone.baseUrl !== undefined && alone.baseUrl !== this.#baseUrl)) continue;
      const refused = this.#asks.refusal(doc.sha256, path, (message) => this.#options.io.warn(message));
      if (refused !== undefined) throw refused;
      const source = `its receipt ${path}`;
      const description = this.#askDescription(alone.description) ?? doc.sha256;
      const said = await this.#asks.ask(doc.sha256, path, () =>
        askAboutDocument({ api: this.#api, store: this.#store }, doc.sha256, description, this.#options, source),
      );
      if (said.kind === 'failed') throw said.error;
      if (said.kind === 'absent') return undefined;
      const service = { message: said.message, retiredSession: undefined };
      const outcome = { kind: 'already-registered' as const, hash: doc.sha256, entry: undefined, service };
      return { outcome, kept: path };
    }
    return undefined;
  }

  /**
   * A receipt's description, when it may be sent as a description given
   * here may (-d: isSendableDescription, and no secret of the user's: the
   * folder's text is nobody's check); else undefined. r88: an escape
   * sequence and a line break; r89: the API key, 1.5 MB refused with 413.
   */
  #askDescription(text: string | undefined): string | undefined {
    if (text === undefined || !isSendableDescription(text) || this.#options.io.holdsSecret(text)) return undefined;
    return text;
  }

  /**
   * The receipt of `doc` already in --receipt-dir (keptReceipt) of the
   * registration confirmed (`confirmed`: the root it is under, or its own
   * digest), when there is one; one at its place claiming another root is
   * warned of here, and no receipt is to be written over it. `sent`: this
   * run sent something for it (its failure is then never exit 2).
   */
  async #keptReceipt(doc: Hashed, confirmed: string, sent = true): Promise<KeptReceipt | undefined> {
    const plan = this.#documents.receipts;
    if (plan === undefined) return undefined;
    let found: KeptReceipt | undefined;
    try {
      found = await keptReceipt(
        plan,
        doc.index,
        doc.sha256,
        confirmed,
        this.#baseUrl,
        () => planReceiptsByDigest(plan),
        (claimed) => this.#asks.refutes(claimed),
        { redact: (raw) => this.#options.io.redact(raw), warn: (message) => this.#options.io.warn(message) },
      );
    } catch (error) {
      // A folder unreadable for want of descriptors, after something was sent: exit 1, not 2 (r87).
      throw sent ? refusalAfterSending(error) : error;
    }
    // One the service said it does not have is said so only when nothing is written over it (#settle).
    if (found?.kind === 'other' && !found.refuted) {
      this.#options.io.warn(otherClaimWarning(found, doc.sha256, confirmed, this.#baseUrl));
    }
    return found;
  }

  /**
   * The result of `doc`, under the root a receipt led to (`kept`: that
   * receipt, left as it is). Without one, a receipt is written when this
   * store has the root's record; with none, one warning says so for all.
   */
  async #rooted(doc: Hashed, { outcome, under }: Rooted, given: string | undefined): Promise<void> {
    const proof = under.proof;
    const entry = outcome.kind === 'already-registered' ? outcome.entry : undefined;
    const plan = this.#documents.receipts;
    let written: { receipt?: string; receiptError?: NotarizeError } = {};
    let kept = given;
    // A receipt at its place claiming another root: left as it is, nothing written over it; one of a root
    // the service said it does not have: written over if a record is found, else said so.
    let other: OtherReceipt | undefined;
    try {
      const found = kept === undefined && entry === undefined ? await this.#keptReceipt(doc, proof.root) : undefined;
      if (found?.kind === 'kept') kept = found.path;
      else other = found;
    } catch (error) {
      // The folder unreadable for want of descriptors (readOr), after the ask was sent: this document fails.
      written = { receiptError: asNotarizeError(error) };
    }
    // Nothing there answers for it, nor may be written over: its receipt is written from the record,
    // this store's, or with none here, another document's receipt under the root may carry it.
    if (kept === undefined && !(other && !other.refuted) && !written.receiptError) {
      let record: { recordJson: string; completedAt: string; path?: string } | undefined = entry;
      if (record === undefined && outcome.kind === 'already-registered') {
        const found = await this.#rootRecordInReceipts(proof.root);
        record = found.record;
        if (found.receiptError) written = { receiptError: found.receiptError };
        else if (record === undefined && other !== undefined)
          this.#options.io.warn(otherClaimWarning(other, doc.sha256, proof.root, this.#baseUrl));
        else if (record === undefined) this.#unrecordedRoots.add(proof.root);
      }
      if (record !== undefined && plan !== undefined) written = await this.#receipt(plan, doc, record, proof);
    }
    const result = outcomeResult(doc.file, outcome, this.#baseUrl, {
      under: { sha256: doc.sha256, proof },
      ...receiptDetails(kept ?? written.receipt, written.receiptError),
    });
    this.#items.add(doc.index, result);
    this.#tally.add(doc.index, written.receiptError);
  }

  /** The documents for a tree: placed (the store, manifests, a new tree), then their roots registered. */
  async #registerTree(hashed: Hashed[]): Promise<ItemsResult> {
    const { io } = this.#options;
    // The manifest of a root goes to --receipt-dir before its completion is sent (writeManifestFirst).
    const trees = new Map<string, LoadedTree>();
    // Held from a root's completion until every result and receipt is out, with the flow's own
    // (interrupt.ts): a signal's grace then covers what a record saved in it is owed.
    let reporting: (() => void) | undefined;
    // The receipts (or result lines) of documents under a root registered or known, not yet out:
    // a signal's grace may not cover thousands of them, and its line then says a re-run writes them.
    const unwritten = new Set<number>();
    let underRoots = 0;
    // Those under a root this store has no record of: a receipt there may carry it (#settle), or none does.
    const recordless = new Set<number>();
    const owing = () => {
      if (unwritten.size === 0) return undefined;
      const [what, verb] = this.#documents.receipts ? ['receipts', 'written'] : ['results', 'printed'];
      const some = this.#documents.receipts !== undefined && [...unwritten].some((index) => recordless.has(index));
      return (
        // Not known: a receipt renamed into place whose write has not returned yet is counted too (r86).
        `the ${what} of ${unwritten.size} of the ${underRoots} documents under a Merkle root are not known to be ${verb}: ` +
        `run the same command again to ${verb === 'written' ? 'write' : 'print'} them` +
        // A re-run writes those only from a record a receipt there carries (r93): it cannot make one up.
        (some ? ' (under a root this store has no record of, only if a receipt there carries its record)' : '')
      );
    };
    const deps = {
      api: this.#api,
      store: this.#store,
      lockTiming: this.#lockWaits,
      onStep: (step: string) => {
        if (step === 'completing') reporting ??= owingResult(owing);
        // The root's completion waits to be sent again (not processed): nothing of it is owed meanwhile.
        if (step === 'waiting') {
          reporting?.();
          reporting = undefined;
        }
      },
      beforeCompletion: async (root: string) => {
        const [plan, tree] = [this.#documents.receipts, trees.get(root)];
        if (plan !== undefined && tree !== undefined) {
          await writeManifestFirst(plan, tree, io);
          this.#manifestsWritten.add(root);
        }
        // Stopped by a signal before its answer, this root may be paid for: only its tree leads to it.
        const manifest = this.#manifestThere(root);
        const where =
          manifest !== undefined
            ? `this store and ${manifest} hold its tree: keep either (on a new runner, the receipt folder: docs/ci.md)`
            : 'only this store holds its tree: keep it';
        sessionNote(
          root,
          `finish it with \`notarize complete ${root}\` or the same command (the Merkle root of this run's documents; ${where})`,
        );
      },
    };
    const input = {
      documents: hashed,
      ...(this.#options.description === undefined ? {} : { description: this.#options.description }),
      signed: this.#options.signed,
      blockchain: this.#options.blockchain,
      complete: this.#options.complete,
      force: this.#options.force,
      failFast: this.#options.failFast,
      ...(this.#documents.receipts ? { manifestDir: this.#documents.receipts.dir } : {}),
      // As #underReceiptRoots judged the manifests: by the run before receipts placed some documents.
      runSize: this.#runSize,
      asks: this.#asks,
      warn: (message: string) => io.warn(message),
    };
    let placed;
    try {
      placed = await placeDocuments(deps, input);
    } catch (error) {
      // A root asked about for a receipt (#underReceiptRoots): something was sent, so not exit 2.
      throw this.#api.anythingSent ? sentAlready(error) : error;
    }
    const { placements, holds } = placed;
    // Taken up by another process while their tree was planted: settled on their own, after the tree's.
    this.#alone = [...this.#alone, ...placed.leftOut.map((i) => hashed[i]!)].sort((a, b) => a.index - b.index);
    const leftOut = new Set(placed.leftOut.map((i) => hashed[i]!.sha256));
    this.#warnRootedSessions(this.#rootedSessions.filter((doc) => !leftOut.has(doc.sha256)));
    this.#warnOwnSessions(this.#rootedSessions.filter((doc) => leftOut.has(doc.sha256)));
    const inTrees = hashed.flatMap((doc, i) => {
      const placement = placements[i];
      return placement === undefined ? [] : [{ doc, placement }];
    });
    try {
      for (const { placement } of inTrees)
        if (!placement.tree.adopted) trees.set(placement.tree.entry.root, placement.tree);
      try {
        await this.#checkManifests(inTrees.map(({ placement }) => placement));
      } catch (error) {
        throw this.#api.anythingSent ? sentAlready(error) : error;
      }
      io.progress(`registering the Merkle root of ${inTrees.length} document${inTrees.length === 1 ? '' : 's'}`);
      const roots = await registerRoots(deps, input, placements, placed.asked, holds);
      io.clearProgress();
      this.#warnAnswerLost(roots);
      const manifestFailure = await this.#manifestsAfter(trees, roots);
      for (const { doc, placement } of inTrees) {
        const root = roots.get(placement.tree.entry.root)!;
        // With no record here, a receipt under the root may still carry it (#settle): owed all the same (r87).
        if (root.ok && root.outcome.kind !== 'pending') unwritten.add(doc.index);
        if (root.ok && root.outcome.kind === 'already-registered' && root.outcome.entry === undefined)
          recordless.add(doc.index);
      }
      underRoots = unwritten.size;
      // A re-run writing the receipts a stopped run left sends no completion: what it owes is said all the same.
      if (unwritten.size > 0) reporting ??= owingResult(owing);
      await runAll(
        inTrees,
        async ({ doc, placement }) => {
          // With NDJSON a line per document: write no more while stdout is backed up.
          await this.#items.ready();
          try {
            await this.#settle(doc, placement, roots.get(placement.tree.entry.root)!);
          } catch (error) {
            // A receipt folder unreadable for want of descriptors (readOr): the document fails, its result said.
            this.#fail(doc.index, doc.file, doc.sha256, asNotarizeError(error));
          }
          unwritten.delete(doc.index);
        },
        // Receipts are written several at once: each waits for its own flush.
        { concurrency: 16 },
      );
      await this.#warnNoRecords();
      return this.#end(manifestFailure);
    } finally {
      for (const release of holds.values()) release();
      reporting?.();
    }
  }

  /** --fail-fast: `docs` are skipped, their hashes kept. */
  #skip(docs: readonly Hashed[]): void {
    for (const doc of docs) {
      this.#items.add(doc.index, itemResult(doc.file, doc.sha256, 'skipped', { reason: FAIL_FAST_REASON }));
    }
  }

  /** The run's result, as the tree's part ended (a manifest not written: `manifestFailure`). */
  #end(manifestFailure?: NotarizeError): ItemsResult {
    this.#manifestFailure = manifestFailure;
    // A manifest that could not be written fails the run (exit 1) even when every document succeeded.
    const failure = this.#tally.failure(this.#api.anythingSent, this.#total) ?? manifestFailure;
    return { kind: 'items', title: TITLE, items: this.#items, ...(failure ? { failure } : {}) };
  }

  /** Hashes every document (and checks its receipt can be written); those that fail get their result now. */
  async #hashAll(): Promise<Hashed[]> {
    const options = this.#options;
    const pool = new HashPool();
    const hashed: (Hashed | undefined)[] = [];
    // A document hashed, then failed (its receipt cannot be written): its result has its hash.
    const digests = new Map<number, string>();
    try {
      this.#total = await runAll(
        this.#documents.items,
        async (item: Item, index): Promise<Hashed> => {
          if (item.kind === 'unusable') throw item.error;
          if (item.kind !== 'file') throw new UsageError("--aggregate takes files only, not '-' or a digest");
          const { hash, size } = await pool.hash(item.path, item.listed);
          digests.set(index, hash);
          const { receipts } = this.#documents;
          if (receipts) await checkBeforeSending(receipts, index, hash, options.force, this.#baseUrl);
          return { index, file: item.path, name: basename(item.path), sha256: hash, size };
        },
        {
          concurrency: pool.size * 4,
          onSettled: (index, settled, item) => {
            if (settled.ok) {
              hashed[index] = settled.value;
              return;
            }
            this.#fail(index, displayName(item), digests.get(index) ?? null, settledError(settled));
          },
        },
      );
    } finally {
      await pool.close();
    }
    // Leaves in the order the documents were given.
    return hashed.filter((doc): doc is Hashed => doc !== undefined);
  }

  /**
   * The documents this store registered one by one (a record of their own)
   * are no leaves of a new tree: a root over them would pay again for what is
   * notarized already. Each gets its record as `already-registered`, and its
   * receipt without a proof, as per-document registration gives it; --force
   * puts them in the tree. A document with a session of its own pending
   * (`register --no-complete`) goes into the tree like the others: completing
   * that session as well would pay twice, which one warning says. Read
   * outside any lock: a record, once written, stays.
   */
  async #alreadyOnTheirOwn(hashed: Hashed[]): Promise<Hashed[]> {
    if (this.#options.force) return hashed;
    const rest: Hashed[] = [];
    const sessions: Hashed[] = [];
    const inFlight: Hashed[] = [];
    /** Of their own sessions, retired other than by a 409 (`pending drop`): the service is asked (#droppedAlone). */
    const dropped: Hashed[] = [];
    const plan = this.#documents.receipts;
    // Why each retired session was retired, by hash: those the service answered 409 for, to their request
    // step or completion (no record came), it has; others were dropped, maybe after a completion was sent.
    const retired = await this.#store.retirements();
    const confirmed = new Set([...retired].filter(([, reasons]) => reasons.some(says409)).map(([hash]) => hash));
    const unrecorded: string[] = [];
    // One listing of each folder instead of three lookups per document (those named are looked up).
    const named = this.#store.namedHashes(hashed.length);
    for (const doc of hashed) {
      if (named !== undefined && !named.has(doc.sha256) && !retired.has(doc.sha256)) {
        rest.push(doc);
        continue;
      }
      let entry;
      try {
        entry = this.#store.readRecord(doc.sha256);
      } catch (error) {
        // A damaged record of it: as placeDocuments does with a damaged tree, stop rather than pay again.
        this.#fail(doc.index, doc.file, doc.sha256, asNotarizeError(error));
        continue;
      }
      if (entry === undefined && confirmed.has(doc.sha256)) {
        // No record to write a receipt from: one of it already there answers for it, as per-document
        // register has it (r89); with none, said once for all, with the root ones.
        let kept: KeptReceipt | undefined;
        try {
          kept = await this.#keptReceipt(doc, doc.sha256, false);
        } catch (error) {
          // The folder unreadable for want of descriptors (readOr): nothing sent, this document fails.
          this.#fail(doc.index, doc.file, doc.sha256, asNotarizeError(error));
          continue;
        }
        if (plan !== undefined && kept === undefined) unrecorded.push(doc.sha256);
        // Confirmed on its own (a 409 to its request step or its completion): not put in a tree.
        const outcome = await confirmedBefore(this.#store, doc.sha256);
        const receipt = receiptDetails(kept?.kind === 'kept' ? kept.path : undefined, undefined);
        this.#items.add(doc.index, outcomeResult(doc.file, outcome, this.#baseUrl, receipt));
        continue;
      }
      if (entry === undefined) {
        // Its own session pending (a run stopped, maybe after sending its completion; or --no-complete),
        // or its lock held (another process at work on it, or one killed there): its own flow settles it.
        let pending;
        try {
          // Read now: one that cannot be read fails here, before anything is sent (--fail-fast stops).
          pending = this.#store.readPending(doc.sha256);
        } catch (error) {
          this.#fail(doc.index, doc.file, doc.sha256, asNotarizeError(error));
          continue;
        }
        if (pending !== undefined) sessions.push(doc);
        else if (this.#store.hasLock(doc.sha256)) inFlight.push(doc);
        else if (retired.has(doc.sha256)) dropped.push(doc);
        else rest.push(doc);
        continue;
      }
      const outcome = { kind: 'already-registered' as const, hash: doc.sha256, entry };
      const { receipt, receiptError } = plan ? await this.#receipt(plan, doc, entry) : {};
      this.#items.add(
        doc.index,
        outcomeResult(doc.file, outcome, this.#baseUrl, receiptDetails(receipt, receiptError)),
      );
      this.#tally.add(doc.index, receiptError);
    }
    // Under a tree of this store (registered, confirmed or pending), a document's root answers for it, as
    // before; else its own registration, under way or left pending, settles it (#onTheirOwn).
    const ownWay = [...sessions, ...inFlight].sort((a, b) => a.index - b.index);
    const trees =
      ownWay.length === 0
        ? undefined
        : await Trees.load(this.#store, { holding: new Set(ownWay.map((d) => d.sha256)) });
    // A tree that cannot be read may hold it: placeDocuments stops the run, saying which (nothing paid).
    // A tree only planned, by a run that is gone (its root's lock free), frees a document at work in
    // another process (its lock held): this run abandons that tree rather than pay for it both ways
    // (core/aggregate.ts, abandonTakenUp). One planned by a run at work on it now answers for it once
    // registered; so does any for a session of its own left pending (its root is requested again).
    const inFlightSet = new Set(inFlight);
    const underRoot = new Set(
      ownWay.filter((doc) => {
        if (trees!.problems.length > 0) return true;
        const placed = trees!.place(doc.sha256);
        if (placed === undefined) return false;
        const freed =
          placed.tree.state === 'planned' && inFlightSet.has(doc) && !this.#store.hasLock(placed.tree.entry.root);
        return !freed;
      }),
    );
    const alone = ownWay.filter((doc) => !underRoot.has(doc));
    for (const doc of await this.#droppedAlone(dropped)) rest.push(doc);
    // A loop, not a spread: a re-run over 200,000 documents under roots is past V8's argument limit.
    for (const doc of underRoot) rest.push(doc);
    rest.sort((a, b) => a.index - b.index);
    // Said once their place is known (#registerTree): a planned tree may yet be abandoned.
    this.#rootedSessions = sessions.filter((doc) => underRoot.has(doc));
    this.#warnOwnSessions(sessions.filter((doc) => !underRoot.has(doc)));
    this.#alone = alone;
    if (unrecorded.length > 0) {
      const which = someDocuments(unrecorded.length, unrecorded[0]!);
      this.#options.io.warn(
        `no receipt written for ${which}: the service answered 409 for ${unrecorded.length === 1 ? 'it' : 'them'} before, ` +
          `and this store has no record to write one from (nothing sent for ${unrecorded.length === 1 ? 'it' : 'them'})`,
      );
    }
    return rest;
  }

  /** Says of documents with sessions of their own pending that a Merkle root of this run answers for them. */
  #warnRootedSessions(rooted: readonly Hashed[]): void {
    if (rooted.length === 0) return;
    const which = someDocuments(rooted.length, rooted[0]!.sha256);
    this.#options.io.warn(
      `${which} also ${rooted.length === 1 ? 'has a session' : 'have sessions'} of ${rooted.length === 1 ? 'its' : 'their'} own pending ` +
        `(register --no-complete): this run puts ${rooted.length === 1 ? 'it' : 'them'} under a Merkle root, and completing ` +
        `such a session would pay a second time; drop it with \`notarize pending drop <hash>\``,
    );
  }

  /** Says of documents with sessions of their own pending that their own registration settles them. */
  #warnOwnSessions(completed: readonly Hashed[]): void {
    if (completed.length === 0) return;
    const which = someDocuments(completed.length, completed[0]!.sha256);
    const one = completed.length === 1;
    this.#options.io.warn(
      `${which} ${one ? 'has a session' : 'have sessions'} of ${one ? 'its' : 'their'} own pending: ` +
        `${one ? 'it goes' : 'they go'} through ${one ? 'its' : 'their'} own registration (${one ? 'its session' : 'their sessions'} completed, ` +
        `or left pending with --no-complete), not under a Merkle root ` +
        `(a run stopped after sending ${one ? 'its' : 'their'} completion may have paid for ${one ? 'it' : 'them'} already); ` +
        `to put such a document in a tree, drop its session first with \`notarize pending drop <hash>\`: the next ` +
        `--aggregate run asks the service about it, and puts it in a tree only if the service does not have it`,
    );
  }

  /**
   * Documents whose own registration is under way or left pending (a
   * session of their own, or their lock held): each goes through the flow
   * of per-document register, under its lock, never into a tree. That waits
   * for a live process at work on it (then finds its record), takes over a
   * dead one's lock, and completes a pending session (a 409 if its
   * completion went through before) rather than pay a root over a document
   * that may be paid for already. With neither left by then, the document
   * is registered on its own: once, never twice. Its lock held, the trees
   * are looked at before its request step, as per-document register does
   * (TreesNow.settle): one another aggregate run planted over it
   * meanwhile answers for it (the document then fails, exit 4: a re-run
   * finds it under that root).
   */
  async #onTheirOwn(docs: Hashed[]): Promise<void> {
    if (docs.length === 0) return;
    const options = this.#options;
    const plan = this.#documents.receipts;
    const treesNow = new TreesNow(this.#store);
    const beforeRequest = (hash: string) =>
      treesNow.settle({ store: this.#store, lockTiming: this.#lockWaits }, hash, 'register its documents again');
    /** The documents the service answered 409 for, with no receipt there to answer for them: said once. */
    const unrecorded: string[] = [];
    await runAll(
      docs,
      async (doc) => {
        // Held from its completion until its result and receipt are out, as per-document register does:
        // a signal's grace then covers what a record saved in it is owed (interrupt.ts).
        let reporting: (() => void) | undefined;
        const onStep = (step: string) => {
          if (step === 'completing') reporting ??= owingResult();
          if (step === 'waiting') {
            reporting?.();
            reporting = undefined;
          }
        };
        try {
          // With no session of its own, it comes to a request step, its name the description by default:
          // never one holding a secret. (A session kept is completed as it is: nothing of the name is sent.)
          if (doc.name !== null && !existsSync(this.#store.pendingFile(doc.sha256))) {
            checkNameSent(options, doc.name, false);
          }
          const input = {
            hash: doc.sha256,
            description: options.description ?? escapeControls(doc.name ?? doc.sha256),
            custody: false,
            signed: options.signed,
            blockchain: options.blockchain,
            complete: options.complete,
            force: false,
          };
          const outcome = await register(
            { api: this.#api, store: this.#store, onStep, beforeRequest, lockTiming: this.#lockWaits },
            input,
          );
          const entry = outcome.kind === 'pending' ? undefined : outcome.entry;
          let written: { receipt?: string; receiptError?: NotarizeError } = {};
          if (plan && entry) written = await this.#receipt(plan, doc, entry);
          // A 409 with no record here: its receipt from an earlier run, if there and of it, answers for it.
          else if (plan && outcome.kind === 'already-registered') {
            const kept = await this.#keptReceipt(doc, doc.sha256);
            if (kept?.kind === 'kept') written = { receipt: kept.path };
            else if (kept === undefined) unrecorded.push(doc.sha256);
          }
          const { receipt, receiptError } = written;
          this.#items.add(
            doc.index,
            outcomeResult(doc.file, outcome, this.#baseUrl, receiptDetails(receipt, receiptError)),
          );
          this.#tally.add(doc.index, receiptError);
        } finally {
          reporting?.();
        }
      },
      {
        concurrency: options.concurrency,
        failFast: options.failFast,
        onSettled: (index, settled) => {
          const doc = docs[index]!;
          if (settled.ok) return;
          if ('cancelled' in settled) this.#skip([doc]);
          else this.#fail(doc.index, doc.file, doc.sha256, settledError(settled));
        },
      },
    );
    if (unrecorded.length > 0) {
      const which = someDocuments(unrecorded.length, unrecorded[0]!);
      const one = unrecorded.length === 1;
      options.io.warn(
        `no receipt written for ${which}: the service answered 409 (it has ${one ? 'it' : 'them'}), and this store ` +
          'has no record to write one from (the service sends a record once, to the run that paid: if that run ' +
          'received it, its store or its receipts have it; if its answer was lost, nothing has: docs/reliability.md, "Limits"); ' +
          '`verify` will not call it verified, and only its verification page can vouch for it',
      );
    }
  }

  #fail(index: number, file: string | null, hash: string | null, error: NotarizeError): void {
    this.#items.add(index, failedResult(file, hash, error));
    this.#tally.add(index, error);
  }

  /**
   * One warning for each root whose completion may have been paid for without
   * an answer this run could read (no answer, a 5xx that does not say it
   * turned the call away, an answer that is no record) and whose session is
   * kept: only its tree leads a later run to it, its root being of salted
   * leaves. With this store, the session is sent again (by the same command,
   * or, once an answer came that could not be read, only by `complete`), and
   * a repeated completion is answered 409, not paid (the Retries
   * assumption); with the manifest alone (a new runner), the root is asked
   * about, and a new one is paid only if the service does not have it. With
   * neither, a new root is planted and paid for the same documents.
   */
  #warnAnswerLost(roots: Map<string, RootResult>): void {
    for (const [root, result] of roots) {
      if (!('error' in result) || !mayHaveCompleted(result.error)) continue;
      let session;
      try {
        session = this.#store.readPending(root);
      } catch {
        continue; // A damaged session file: its own error says so.
      }
      if (session === undefined) continue;
      const next =
        session.forfaitUnreadAt === undefined
          ? 'the same command run again with this store sends its session again'
          : `\`notarize complete ${root}\` with this store sends its session again (answered 409 if it went through)`;
      const manifest = this.#manifestThere(root);
      const where =
        manifest !== undefined
          ? `its tree is in this store (${this.#store.dir}) and in ${manifest}: a run with either of them ` +
            'never pays for these documents twice (on a new runner, restore the receipt folder: docs/ci.md)'
          : `its tree is only in this store (${this.#store.dir}): keep it`;
      this.#options.io.warn(
        `the Merkle root ${root} may have been registered and paid for, its answer lost; ${next}; ${where}; ` +
          'a run with neither cannot find this root, and registers the documents again under a new one',
      );
    }
  }

  /** The manifest of `root` in --receipt-dir, if there is one there: with this store, where its tree is kept. */
  #manifestThere(root: string): string | undefined {
    const plan = this.#documents.receipts;
    const manifest = plan === undefined ? undefined : manifestPath(plan, root);
    return manifest !== undefined && existsSync(manifest) ? manifest : undefined;
  }

  /**
   * One warning for every root whose documents got no receipt: the store has
   * no record to write them from; and where the record of those whose
   * receipts were written from another receipt came from (or why not).
   */
  async #warnNoRecords(): Promise<void> {
    for (const line of (await this.#rootRecords?.warnings()) ?? []) this.#options.io.warn(line);
    const roots = [...this.#unrecordedRoots];
    const plan = this.#documents.receipts;
    if (roots.length === 0 || plan === undefined) return;
    const which = roots.length === 1 ? `root ${roots[0]}` : `${roots.length} roots (${roots.join(', ')})`;
    const they = roots.length === 1 ? 'it is' : 'they are';
    this.#options.io.warn(
      `no new receipts for the documents under ${which}: the service says ${they} registered, but this store has ` +
        `no record of ${roots.length === 1 ? 'it' : 'them'} (receipts already in ${plan.dir} are left as they are)`,
    );
  }

  /**
   * Before anything is sent: the manifest of each root this run may write
   * must be free, or a regular file (replaced); a link or a folder there is
   * refused (exit 2), as for receipts.
   */
  async #checkManifests(placements: readonly Placement[]): Promise<void> {
    const plan = this.#documents.receipts;
    if (!plan) return;
    for (const tree of new Set(placements.flatMap((p) => (p.tree.adopted ? [] : [p.tree])))) {
      await checkManifestPath(plan, tree.entry.root);
    }
  }

  /**
   * Writes the manifest of every root of the run this run did not write
   * before its completion: one the service has (its record in the ledger,
   * or its 409; registered by an earlier run), or one left in this store for
   * `complete <root>`, which may pay for it later without knowing of
   * --receipt-dir: pending (--no-complete), or failed with its request step
   * answered unreadably or its session of an unexpected shape (r114: a new
   * runner, the receipt folder restored but no manifest in it, paid for a
   * second root). A failure does not stop the receipts: it is returned, for
   * exit 1.
   */
  async #manifestsAfter(
    trees: ReadonlyMap<string, LoadedTree>,
    roots: ReadonlyMap<string, RootResult>,
  ): Promise<NotarizeError | undefined> {
    const plan = this.#documents.receipts;
    if (!plan) return undefined;
    let failure: NotarizeError | undefined;
    for (const [root, tree] of trees) {
      const result = roots.get(root);
      if (result === undefined || this.#manifestsWritten.has(root)) continue;
      // Only what `complete` is said to finish: a failure before its completion (a manifest unwritten) is not.
      if (isRootProtocolFailure(result)) {
        if (!this.#keptForComplete(root)) continue;
        sayReceiptsAfterComplete(result.error);
      } else if (!result.ok) continue;
      try {
        await writeManifest(plan, tree, this.#options.io);
        this.#manifestsWritten.add(root);
      } catch (error) {
        failure ??= manifestNotWritten(
          plan,
          root,
          error,
          result.ok && result.outcome.kind !== 'pending'
            ? 'the registration itself is done and in the ledger; running the same command again writes it'
            : 'its root is kept in the store; running the same command again writes it',
        );
        this.#options.io.warn(failure.message);
      }
    }
    return failure;
  }

  /** Whether this store keeps `root` for an explicit `complete`: its request step answered, unread, or its session kept. */
  #keptForComplete(root: string): boolean {
    try {
      return this.#store.readUnanswered(root) !== undefined || this.#store.readPending(root) !== undefined;
    } catch {
      return false; // A damaged file: its own error says so.
    }
  }

  /**
   * The receipt of a document under a root whose record the store could not
   * save (`error` quotes it: the service sends it only once), written from
   * that record; said once a root. A re-run's completion is answered 409 and
   * keeps these receipts (r108: none was written, and none could be later).
   */
  async #unsavedRecordReceipt(doc: Hashed, { tree, leafIndex }: Placement, error: NotarizeError): Promise<void> {
    const plan = this.#documents.receipts;
    if (plan === undefined || error.unsaved?.what !== 'record') return;
    const { root } = tree.entry;
    let unsaved = this.#unsavedRecords.get(root);
    if (unsaved === undefined)
      this.#unsavedRecords.set(root, (unsaved = { at: new Date().toISOString(), said: false }));
    let proof;
    try {
      proof = tree.proof(leafIndex, this.#store.treeFile(root));
    } catch {
      return; // A tree changed since it was placed: its failure is the root's, already said.
    }
    const { receipt } = await this.#receipt(
      plan,
      doc,
      { recordJson: error.unsaved.text, completedAt: unsaved.at },
      proof,
    );
    if (receipt !== undefined && !unsaved.said) {
      unsaved.said = true;
      this.#options.io.warn(
        `the record of the Merkle root ${root} could not be saved: the receipts of its documents are written ` +
          `from the record quoted, in ${plan.dir}`,
      );
    }
  }

  /** The result of one document, from its root's; its receipt written when the root has a record. */
  async #settle(doc: Hashed, placement: Placement, rootResult: RootResult): Promise<void> {
    const { tree, leafIndex } = placement;
    const { root } = tree.entry;
    if (!rootResult.ok) {
      if ('cancelled' in rootResult) {
        this.#items.add(doc.index, itemResult(doc.file, doc.sha256, 'skipped', { reason: FAIL_FAST_REASON }));
        return;
      }
      const error = asNotarizeError(rootResult.error);
      await this.#unsavedRecordReceipt(doc, placement, error);
      this.#fail(doc.index, doc.file, doc.sha256, error);
      return;
    }
    let proof;
    try {
      proof = tree.proof(leafIndex, this.#store.treeFile(root));
    } catch (error) {
      // Checked before its root was sent (placeDocuments): only a tree changed since gets here.
      this.#fail(doc.index, doc.file, doc.sha256, asNotarizeError(error));
      return;
    }
    const { outcome } = rootResult;
    const under = { sha256: doc.sha256, proof };
    if (outcome.kind === 'pending') {
      this.#items.add(doc.index, outcomeResult(doc.file, outcome, this.#baseUrl, { under }));
      return;
    }
    const { entry } = outcome;
    let receipt: string | undefined;
    let receiptError: NotarizeError | undefined;
    const plan = this.#documents.receipts;
    if (plan && entry) {
      ({ receipt, receiptError } = await this.#receipt(plan, doc, entry, proof));
    } else if (plan) {
      // No record to write one from (a 409): the receipt already there, if any, is its result's
      // (a cold runner that kept the receipts folder); else said once for all such roots, after
      // the results (#warnNoRecords): there may be many documents.
      const kept = await this.#keptReceipt(doc, root);
      if (kept?.kind === 'kept') receipt = kept.path;
      else if (kept === undefined || kept.refuted) {
        // Unless another document's receipt there carries the root's record (a run stopped while it wrote them).
        const found = await this.#rootRecordInReceipts(root, () => tree.entry.leaves.map((leaf) => leaf.sha256));
        if (found.record !== undefined)
          ({ receipt, receiptError } = await this.#receipt(plan, doc, found.record, proof));
        else if (found.receiptError !== undefined) receiptError = found.receiptError;
        else if (kept !== undefined) this.#options.io.warn(otherClaimWarning(kept, doc.sha256, root, this.#baseUrl));
        else this.#unrecordedRoots.add(root);
      }
    }
    const result = outcomeResult(doc.file, outcome, this.#baseUrl, { under, ...receiptDetails(receipt, receiptError) });
    this.#items.add(doc.index, result);
    this.#tally.add(doc.index, receiptError);
  }

  /**
   * The record of `root` as the receipts in --receipt-dir carry it
   * (RootRecordsInReceipts.of, over `digests`), or why it could not be read:
   * the document's receipt error, its result still said.
   */
  async #rootRecordInReceipts(
    root: string,
    digests?: () => Iterable<string>,
  ): Promise<{ record?: RootRecordKept; receiptError?: NotarizeError }> {
    try {
      const record = await this.#rootRecords?.of(root, digests);
      return record === undefined ? {} : { record };
    } catch (error) {
      return { receiptError: asNotarizeError(error) };
    }
  }

  /**
   * `entry`: the ledger's record, or a root's as the receipt `path` carries it
   * (RootRecordsInReceipts); `proof`: to the root the record is of; none for a
   * document registered on its own.
   */
  async #receipt(
    plan: ReceiptPlan,
    doc: Hashed,
    entry: { recordJson: string; completedAt: string; path?: string },
    proof?: InclusionProof,
  ): Promise<{ receipt?: string; receiptError?: NotarizeError }> {
    try {
      const { io } = this.#options;
      const { text, redacted } = redactedReceipt(
        receiptText({
          document: { name: plan.names[doc.index] ?? null, sha256: doc.sha256, size: doc.size },
          recordJson: entry.recordJson,
          baseUrl: this.#baseUrl,
          registeredAt: entry.completedAt,
          ...(proof ? { proof } : {}),
        }),
        doc.sha256,
        (raw) => io.redact(raw),
      );
      // Receipts are written several at once; a document named twice has one receipt path: its writes take turns.
      const path = receiptPath(plan, doc.index, doc.sha256);
      const before = this.#writing.get(path) ?? Promise.resolve();
      // A receipt there of a root the service said in this run it does not have is replaced (writeReceipt).
      const refuted = (claimed: string) => this.#asks.refutes(claimed);
      const write = before.then(() =>
        writeReceipt(plan, doc.index, doc.sha256, text, this.#options.force, entry.path, refuted),
      );
      const settled = write.then(
        () => {},
        () => {},
      );
      this.#writing.set(path, settled);
      // Forgotten once written, unless a later write of the path queued behind it: 100,000 receipts hold no map.
      void settled.then(() => {
        if (this.#writing.get(path) === settled) this.#writing.delete(path);
      });
      const written = await write;
      if ('other' in written) {
        // A receipt of another registration of it there: left as it is, nothing written over it, named by no result.
        io.warn(otherClaimWarning(written.other, doc.sha256, proof?.root ?? doc.sha256, this.#baseUrl, true));
        return {};
      }
      const receipt = written.path;
      // Written from a root's record another receipt carries: the run's warnings say which.
      if (entry.path !== undefined && proof !== undefined) this.#rootRecords?.wrote(proof.root);
      if (redacted) io.warn(redactedReceiptWarning(`receipt ${receipt}`, entry.path));
      return { receipt };
    } catch (error) {
      return { receiptError: asNotarizeError(error) };
    }
  }
}

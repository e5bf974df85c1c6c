/**
 * `notarize register <path...>`: hash locally, request the registration, save
 * the session, complete it; for one document or a whole batch. The flow is
 * core/notarize.ts; batching is core/batch.ts; inputs are core/inputs.ts.
 */
import { Option, type Command } from 'commander';
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { BLOCKCHAIN_TYPES } from '../api/schemas.js';
import type { Context } from '../context.js';
import { RETRY_HELP } from '../settings.js';
import { asNotarizeError, FailureTally, runAll, type Settled } from '../core/batch.js';
import { planReceiptsByDigest } from '../core/evidence.js';
import { hashFile, hashStream } from '../core/hash.js';
import { HashPool } from '../core/hash-pool.js';
import type { SkippedPath } from '../core/inputs.js';
import {
  custodyFailure,
  recordedOutcome,
  register,
  type FlowDeps,
  type Outcome,
  type RegisterInput,
} from '../core/notarize.js';
import { waitNotice } from '../store/lock.js';
import {
  checkBeforeSending,
  keptReceipt,
  otherClaimWarning,
  RootRecordsInReceipts,
  writeReceipt,
  type OtherReceipt,
  type ReceiptPlan,
} from '../core/receipts.js';
import { receiptText, redactedReceipt, redactedReceiptWarning } from '../core/receipt-format.js';
import { NotarizeError, sentAlready } from '../errors.js';
import { FILES_PER_WORKER, fitConcurrency, refusalAfterSending } from '../fd-shortage.js';
import type { Spinner } from '../output/io.js';
import {
  sentMetadata,
  showMetadataSent,
  type ItemsResult,
  type OutcomeResult,
  type RecordResult,
} from '../output/present.js';
import { formatBytes, someDocuments } from '../output/wording.js';
import {
  failedResult,
  itemResult,
  ItemResults,
  outcomeResult,
  receiptDetails,
  skippedResult,
  type ItemResult,
  type UnderRoot,
} from '../output/results.js';
import { escapeControls } from '../output/safe-text.js';
import { owingResult } from '../interrupt.js';
import type { LedgerEntry } from '../store/service-store.js';
import { finishItems, viewOf } from './action.js';
import { addInputOptions } from './input-options.js';
import { examples, outputOption, parseOptions } from './options.js';
import { Aggregator, checkAggregate } from './register-aggregate.js';
import { DocumentRoots } from './register-roots.js';
import { UnderRootSince } from '../core/trees-now.js';
import {
  checkOptions,
  displayName,
  firstOf,
  checkNameSent,
  listDocuments,
  optionsSchema,
  TITLE,
  withDescription,
  type Documents,
  type Item,
  type RegisterOptions,
  type RegisterRun,
} from './register-inputs.js';

export { optionsSchema, type RegisterFlags, type RegisterOptions } from './register-inputs.js';

/**
 * Whether a document can be run again from the start after it failed for
 * want of file descriptors (core/batch.ts runAgain): one already hashed by
 * --fail-fast's check, or read from a file, can; standard input, read once,
 * would be hashed again as empty (and that digest paid for).
 */
const readableTwice = (doc: Item | Checked): boolean => 'input' in doc || doc.kind !== 'stdin';

/**
 * Files held for each unit of -j: its connection, and its two documents'
 * locks; a document's file, a session's or a record's, a moment at a time
 * (peaks measured at 42, 60 and 111 open in all with -j 8, 16 and 32, 20 at
 * the start).
 */
const FILES_PER_REQUEST_SLOT = 3;

export function configure(command: Command, context: () => Context): void {
  addInputOptions(command.argument('[paths...]', "documents to notarize ('-' reads standard input)"))
    .option('--hash <hex>', 'register a precomputed SHA-256 digest instead of a file')
    .option(
      '-d, --description <text>',
      "description sent with the hash (default: the file's name); UTF-8, no control or format characters but tab",
    )
    .option(
      '--description-file <file|->',
      'read the description from a file (or standard input), up to 64 KiB; one final line break is dropped',
    )
    .option('--custody', 'ask the service to keep the file (metadata only: see below)')
    .option('--signed', 'mark the document as signed')
    .addOption(
      new Option('--blockchain <type>', 'blockchain to anchor on').choices(BLOCKCHAIN_TYPES).default('ALGORAND'),
    )
    .option('--no-complete', 'stop after saving the session; finish later with `notarize complete`')
    .option('--force', 'register again even if the ledger has the hash; overwrite receipts')
    .option('--wallet-name <name>', 'with --custody: the wallet name sent with the file metadata')
    .option(
      '-j, --concurrency <n>',
      'requests at the service at once (twice as many documents in flight, but with --fail-fast; lowered to fit ulimit -n)',
      '8',
    )
    .option(
      '--fail-fast',
      'check every document (readable, its receipt writable) before sending any; after the first failure, start no new one',
    )
    .addOption(
      outputOption(
        "one document named alone: its record, its session with --no-complete, or for a 409 with no record here notarize's own object; nothing on stdout when it fails",
      ),
    )
    .option(
      '--receipt-dir <dir>',
      'write <file name>.notarization.json (a v1 receipt) per document; checked before anything is sent',
    )
    .option('--aggregate', 'register all the documents as one: the root of a Merkle tree over them (see below)')
    .addHelpText(
      'after',
      `\nThe file's bytes never leave this machine: what is sent is its SHA-256 digest and the
description (by default the file's name); with --custody also the file metadata (name,
MIME type guessed from the name, size, modification time, the session's userId, and
--wallet-name). The session the service returns is saved
before anything else, so an interrupted run is finished with \`notarize complete <hash>\`.
Re-running is safe: a hash already in the ledger is printed, not registered again; so is a
document under a Merkle root this store registered (--aggregate), with its proof; one under
a root still pending completes that root (its saved session, one completion for all its
documents), and on a store without that tree, one whose receipt in --receipt-dir has a proof
to a root, or which a <root>.tree.json there lists, is already-registered under that root
when the service says it has it (a 409 to a request step);
an --aggregate run leaves out of its tree what this store registered one by one (--force:
again).
A 409 from the service is read as "it already has this hash": status already-registered,
exit 0, the ledger's record if any, else the public verification page. The service does
not document its status codes: this reading of 409 is an assumption. A session is completed
whatever its \`status\` says (every sample has "active"; what other values mean is undocumented).
A 2xx whose body cannot be read (stalled, cut off, not JSON) is exit 5 and is never sent
again on its own; \`notarize complete <hash>\` sends it again when you ask.

A walk (-r) passes over the receipts and tree manifests it finds (skipped results): verify -r
never checks one as a document (one of no document it checks is unknown: --exclude it);
named or listed, such a file is a document.

Several documents: one result per document; one failure does not stop the others,
even a document that cannot be read (it is a failed result). Exit 0 when all succeeded,
4 when every failure was transient (run it again), else the code of the first other
failure, except that once anything was sent a local failure gives 1, not 2 (2 means
nothing was sent). --json prints an array of results.

A description is stored on the record for good, so it is checked before anything is
sent: it must be valid UTF-8 with no control characters but tab (no line breaks) and no
format characters (bidi marks, zero-width spaces, soft hyphen; not the zero-width joiners),
else exit 2. A U+FFFD in -d is refused: it is what the bytes of a command line that are not
UTF-8 become; --description-file decodes strictly, and takes a real U+FFFD.

--aggregate registers one hash for all the documents: the root of an RFC 9162 Merkle tree
whose leaves are SHA-256(0x00 || document digest || random salt), in the order given. One
request step, one completion, whatever the number of documents. Each document's result and
receipt carry its inclusion proof (salt, index, audit path) to the registered root, and the
record is the root's; --receipt-dir also gets <root>.tree.json, the tree's manifest. The
tree is saved in the store before the root is sent, and its manifest written before the
root's completion is sent; a re-run
sends nothing for documents under a registered root, completes a pending root, and puts
only new documents in a new tree. On a store without their tree (a fresh CI runner), the
roots of the <root>.tree.json manifests already in --receipt-dir (every leaf a document of
this run) are asked about with a request step: a 409 is read as "the service has it" (an
assumption: its status codes are undocumented) and those documents are already-registered,
nothing paid; a session in answer is dropped unsaved, and the documents go into the new
tree; any other answer fails those documents. The root's description
is -d, else "Merkle root of N documents ...". Files only.

--custody sends the file's metadata (name, type, size, last modified). The service does
not document how file bytes are uploaded, so notarize does NOT upload the file. The metadata
is sent once the record is saved; if it is not taken, the registration stands, the document
fails with why (exit by its cause), and the same command (or complete) on the same store
sends it again; one the service refuses (4xx) is said once and not sent again. A hash the
service already has (409) gets no metadata from this run, whoever registered it: it says so.

${RETRY_HELP}
${examples([
  'notarize register contract.pdf',
  'notarize register contract.pdf --json > record.json',
  "cat report.pdf | notarize register - -d 'Q3 report'",
  'notarize register contract.pdf --description-file summary.txt',
  'notarize register --recursive dist/ --include "*.tar.gz" --output ndjson',
  'find dist -name "*.zip" -print0 | notarize register --files-from - -0 --json',
  '# CI: register every artifact, keep receipts; exit 4 (transient): the same command again is safe',
  'NOTARIZE_API_KEY=$KEY notarize register -r dist --receipt-dir receipts --quiet',
  '# one registration for a whole release, a receipt with its proof per artifact',
  'notarize register --aggregate -r dist --receipt-dir receipts',
])}`,
    )
    .action(async (paths: string[], raw: unknown) => {
      const ctx = context();
      const flags = parseOptions(optionsSchema, raw, command);
      const services = {
        io: ctx.io,
        baseUrl: () => ctx.baseUrl,
        api: () => ctx.api(),
        serviceStore: () => ctx.serviceStore,
        storeDir: ctx.store.dir,
        storeNamed: Boolean(ctx.env.NOTARIZE_CONFIG_DIR),
      };
      await finishItems(await viewOf(ctx, flags.output), (items) =>
        runRegister({ ...flags, paths, ...services }, items),
      );
    });
}

/**
 * Registers the documents named: one document alone gives its outcome;
 * several are a batch whose results go to `items` as they settle (with
 * NDJSON, one document alone too). Throws NotarizeError subclasses for a
 * problem found before anything is registered.
 */
export async function runRegister(
  options: RegisterOptions,
  items = new ItemResults(),
): Promise<OutcomeResult | RecordResult | ItemsResult> {
  const baseUrl = options.baseUrl(); // validated before anything is read or sent
  // The store's tokens are secrets already (Context), for the checks of the description and names below.
  const flags = await withDescription(options);
  const skip = (s: SkippedPath, warn = true) => {
    if (warn) options.io.warn(`skipped ${s.path}: ${s.reason}`);
    items.skip(skippedResult(s.path, s.reason));
  };
  if (flags.aggregate) checkAggregate(flags);
  const documents = await listDocuments(flags, skip);
  const run = { options: flags, documents, items, baseUrl, api: await options.api(), store: options.serviceStore() };
  if (flags.aggregate) return new Aggregator(run).run();
  const registrar = new Registrar(run);
  try {
    return documents.single && !items.streams ? await registrar.single() : await registrar.batch();
  } finally {
    await registrar.close();
  }
}

/** A document --fail-fast's first pass hashed and checked (Registrar.#checkAll), to be sent. */
interface Checked {
  item: Item;
  index: number;
  input: RegisterInput;
}

/** What registering one document gave: the flow's outcome, and its receipt or why it could not be written. */
interface Registered {
  outcome: Outcome;
  receipt?: string;
  /** The registration went through, but its receipt could not be written (exit 1). */
  receiptError?: NotarizeError;
  /**
   * The document is a leaf of a Merkle root this store registered, or had
   * pending and this run completed (`outcome` is the root's): its proof.
   */
  under?: UnderRoot;
}

/** Registers the documents of one run, one alone or as a batch, keeping what the results and exit code need. */
class Registrar {
  readonly #options: RegisterOptions;
  readonly #documents: Documents;
  readonly #items: ItemResults;
  readonly #baseUrl: string;
  readonly #deps: Pick<FlowDeps, 'api' | 'store' | 'lockTiming'>;
  readonly #pool: HashPool;
  readonly #spinner: Spinner;
  /** Hashes of items, known once hashed, so a failed item still reports its hash. */
  readonly #hashes = new Map<number, string>();
  #done = 0;
  /** Items known so far: a --files-from list is read as the batch goes. */
  #known = 0;
  #hashedBytes = 0;
  /** Documents registered this run whose custody metadata was sent (said once at the end). */
  #metadataSent = 0;
  /**
   * The documents whose completion was sent, until their result is out:
   * held with the flow's own (interrupt.ts), so that a signal's grace also
   * covers the receipt and the result line of a record saved in it.
   */
  readonly #reporting = new Map<number, () => void>();
  /** Documents the service says it has whose record this store lacks, so no receipt is written: told once (#noReceipts). */
  #unrecorded = { count: 0, first: '', ownLost: false };
  /** Where each document stands under the Merkle roots of the store, or of its receipt. */
  readonly #roots: DocumentRoots;
  /** The record of each root with none here, as the receipts in --receipt-dir carry it. */
  readonly #rootRecords: RootRecordsInReceipts | undefined;

  constructor({ options, documents, items, baseUrl, api, store }: RegisterRun) {
    this.#options = options;
    this.#documents = documents;
    this.#items = items;
    this.#baseUrl = baseUrl;
    this.#deps = { api, store, lockTiming: waitNotice((message) => options.io.info(message)) };
    this.#roots = new DocumentRoots({
      options,
      receipts: documents.receipts,
      baseUrl,
      deps: this.#deps,
    });
    const plan = documents.receipts;
    this.#rootRecords = plan && new RootRecordsInReceipts(baseUrl, () => planReceiptsByDigest(plan));
    this.#pool = new HashPool(documents.single ? 1 : undefined);
    this.#spinner = documents.single ? options.io.spinner('hashing') : { update() {}, stop() {} };
  }

  /** The one document's outcome; its failure is the run's, after its GitHub summary. */
  async single(): Promise<OutcomeResult | RecordResult> {
    try {
      return await this.#single();
    } finally {
      // Released as the result goes back to be printed: the exit of a signal waits for that turn.
      this.#reported(0);
    }
  }

  async #single(): Promise<OutcomeResult | RecordResult> {
    const item = await firstOf(this.#documents.items);
    const github = (result: ItemResult) => ({ title: TITLE, results: [result] });
    let registered: Registered;
    try {
      registered = await this.#one(item);
    } catch (error) {
      // Once a request left (a root asked about, a login), exit 2 would say nothing was sent.
      const honest = this.#deps.api.anythingSent ? sentAlready(error) : error;
      const failed = this.#result(item, 0, { ok: false, error: asNotarizeError(honest) });
      // The run ends with the error as it came: main() reports an unexpected one with its own hint.
      const failure = honest instanceof Error ? honest : asNotarizeError(honest);
      return { kind: 'outcome', baseUrl: this.#baseUrl, github: github(failed), failure };
    }
    this.#spinner.stop();
    const { outcome, receipt, receiptError, under } = registered;
    // Shown after the record. Once something was sent (a completion, a 409 heard, a root asked
    // about), never exit 2: a custody call refused before it went out says "was not sent" of itself,
    // not of the run, whose registration went through.
    const late = receiptError ?? custodyFailure(outcome);
    const failure =
      late !== undefined && this.#deps.api.anythingSent ? (sentAlready(late) as NotarizeError | Error) : late;
    const entry = outcome.kind === 'pending' ? undefined : outcome.entry;
    if (under && entry) {
      // The root's record, as verify shows a document under a root.
      const { proof } = under;
      const leaf = `leaf ${proof.leafIndex} under the Merkle root ${proof.root}`;
      const standing =
        outcome.kind === 'completed'
          ? `registered: ${leaf}, whose pending registration this run completed`
          : `already registered: ${leaf} (completed ${entry.completedAt}); use --force to register it on its own`;
      return {
        kind: 'record',
        hash: proof.root,
        recordJson: entry.recordJson,
        baseUrl: this.#baseUrl,
        note: `${under.sha256} is ${standing}` + (receipt ? `; receipt: ${receipt}` : ''),
        github: github(this.#result(item, 0, { ok: true, value: registered })),
        ...(failure ? { failure } : {}),
      };
    }
    // Under a root with no record here: the root's outcome, said to be the document's.
    const note = under && `${under.sha256} is leaf ${under.proof.leafIndex} under the Merkle root ${under.proof.root}`;
    return {
      kind: 'outcome',
      outcome,
      baseUrl: this.#baseUrl,
      github: github(this.#result(item, 0, { ok: true, value: registered })),
      ...(note ? { note } : {}),
      ...(receipt ? { receipt } : {}),
      ...(failure ? { failure } : {}),
    };
  }

  /**
   * Every document, a bounded number at once; each result goes to the items
   * as it settles. With --fail-fast every document is hashed and checked
   * first (readable, its receipt writable), as --aggregate does, and nothing
   * is sent unless all pass: lanes already sending could not be stopped.
   */
  async batch(): Promise<ItemsResult> {
    const tally = new FailureTally();
    const report = (index: number, settled: Settled<Registered>, item: Item) => {
      this.#known = Math.max(this.#known, index + 1);
      this.#done++;
      this.#showProgress();
      const result = this.#result(item, index, settled);
      this.#items.add(index, result);
      this.#reported(index);
      if (settled.ok) this.#noMetadataSent(result, settled.value.outcome);
      if (settled.ok && sentMetadata(settled.value.outcome)) this.#metadataSent++;
      const failure = settled.ok ? (settled.value.receiptError ?? custodyFailure(settled.value.outcome)) : undefined;
      tally.add(index, settled.ok ? failure : 'error' in settled ? settled.error : undefined);
    };
    const checked = this.#options.failFast ? await this.#checkAll(report) : undefined;
    let total = checked?.total ?? 0;
    if (checked === undefined || checked.ok) {
      // -j is the requests at the service at once; twice as many documents are in flight, so that while
      // one is hashed, locked or made durable another's request has the slot: the connections never wait
      // for the disk (api/slots.ts). Not with -j 1, which stays one document at a time from start to end
      // (its NDJSON lines in input order), nor with --fail-fast: a document waiting for its slot when
      // another fails would still open its session once it had one, and no new one may start then.
      const { failFast } = this.#options;
      const concurrency = this.#concurrencyThatFits();
      const documentsAtOnce = concurrency === 1 || failFast ? concurrency : 2 * concurrency;
      this.#deps.api.limitRequests(concurrency);
      const send = (doc: Item | Checked, index: number) =>
        'input' in doc ? this.#send(doc.input, doc.index) : this.#one(doc, index);
      const sendable = checked ? checked.documents : this.#documents.items;
      const sentTotal = await runAll<Item | Checked, Registered>(sendable, send, {
        concurrency: documentsAtOnce,
        failFast: this.#options.failFast,
        runAgain: readableTwice,
        onSettled: (index, settled, doc) => {
          if ('input' in doc) report(doc.index, settled, doc.item);
          else report(index, settled, doc);
        },
      });
      total = checked ? total : sentTotal;
    }
    this.#options.io.clearProgress();
    await this.#warnRootRecords();
    this.#noReceipts();
    showMetadataSent(this.#options.io, this.#metadataSent);
    const failure = tally.failure(this.#deps.api.anythingSent, total);
    return { kind: 'items', title: TITLE, items: this.#items, ...(failure ? { failure } : {}) };
  }

  /**
   * -j, lowered to what the open files allowed fit (fd-shortage.ts): each of
   * its requests holds a connection, and each of the (up to) two documents
   * in flight for it a lock and, a moment at a time, a file.
   */
  #concurrencyThatFits(): number {
    const { concurrency, warning } = fitConcurrency(
      this.#options.concurrency,
      FILES_PER_REQUEST_SLOT,
      this.#workerFiles(),
    );
    if (warning !== undefined) this.#options.io.warn(warning);
    return concurrency;
  }

  /**
   * The descriptors the hash pool's workers yet to start will hold (a file
   * over 64 KiB starts them); those started hold theirs already, counted in
   * what is left (--fail-fast's check pass starts them first).
   */
  #workerFiles(): number {
    return this.#pool.unstarted * FILES_PER_WORKER;
  }

  /**
   * --fail-fast's first pass: every document hashed and its receipt checked,
   * nothing sent. When one fails, it is reported and the others are skipped,
   * their hashes kept (`ok` false); else the documents to send, in order.
   */
  async #checkAll(
    report: (index: number, settled: Settled<Registered>, item: Item) => void,
  ): Promise<{ ok: boolean; total: number; documents: Checked[] }> {
    const documents: Checked[] = [];
    let ok = true;
    const total = await runAll(this.#documents.items, (item: Item, index) => this.#check(item, index), {
      // Each document in this pass holds its file open while it is hashed: as many as fit.
      concurrency: fitConcurrency(Math.max(this.#options.concurrency, this.#pool.size * 4), 1, this.#workerFiles())
        .concurrency,
      runAgain: readableTwice,
      onSettled: (index, settled, item) => {
        if (settled.ok) documents[index] = { item, index, input: settled.value };
        else {
          ok = false;
          report(index, settled, item);
        }
      },
    });
    if (!ok) {
      for (const doc of documents) {
        if (doc !== undefined) report(doc.index, { ok: false, cancelled: true }, doc.item);
      }
    }
    return { ok, total, documents: documents.filter((doc) => doc !== undefined) };
  }

  /**
   * A batch's results have no custody field: a registration the service
   * already had (409), or this store without custody, which gets no metadata
   * of this run and fails nothing,
   * is said on stderr (a `::warning::` in a workflow), as one document alone
   * says it (present.ts showCustody).
   */
  #noMetadataSent(result: ItemResult, outcome: Outcome): void {
    if (outcome.kind !== 'already-registered' || outcome.custody?.metadataSent !== false) return;
    if (outcome.custody.error !== undefined) return; // a failed result, its error says why
    const what = result.file ?? result.hash ?? 'a document';
    const why = outcome.service ? 'the service already had it (409)' : 'it was registered before without custody';
    this.#options.io.warn(
      `custody: ${what}: ${why}, so no file metadata was sent, and the file itself was NOT uploaded`,
    );
  }

  async close(): Promise<void> {
    this.#spinner.stop();
    await this.#pool.close();
    this.#roots.warnStaleManifests();
  }

  #showProgress(): void {
    this.#options.io.progress(`registered ${this.#done}/${this.#known}, hashed ${formatBytes(this.#hashedBytes)}`);
  }

  async #one(item: Item, index = 0): Promise<Registered> {
    return this.#send(await this.#check(item, index), index);
  }

  /** Hashes a document and checks that its receipt can be written: all that comes before sending. */
  async #check(item: Item, index: number): Promise<RegisterInput> {
    const options = this.#options;
    this.#known = Math.max(this.#known, index + 1);
    if (item.kind === 'unusable') throw item.error;
    if (item.kind === 'stdin') checkOptions(options, 'stdin');
    const input = await describe(options, item, this.#pool, (bytes) => {
      if (item.kind === 'file' && item.size > 64 * 1024 * 1024) {
        this.#spinner.update(`hashing ${formatBytes(bytes)} of ${formatBytes(item.size)}`);
      }
    });
    this.#hashes.set(index, input.hash);
    if (!this.#documents.single) {
      this.#hashedBytes += input.file?.size ?? 0;
      this.#showProgress();
    }
    const { receipts } = this.#documents;
    if (receipts) {
      await checkBeforeSending(receipts, index, input.hash, options.force, this.#baseUrl);
      await this.#roots.checkBeforeSending(input.hash);
    }
    return input;
  }

  /** Registers a document checked by #check (or finds it under a root of this store), and writes its receipt. */
  async #send(input: RegisterInput, index: number): Promise<Registered> {
    const options = this.#options;
    // With ndjson a line is printed per document: send no more while stdout is backed up.
    await this.#items.ready();
    const onStep = (step: string) => {
      this.#spinner.update(step);
      if (step === 'completing' && !this.#reporting.has(index)) this.#reporting.set(index, owingResult());
      // Its completion waits to be sent again (not processed): nothing of it is owed until it goes out.
      if (step === 'waiting') this.#reported(index);
    };
    const { receipts } = this.#documents;
    // Its record in the ledger, and nothing of a run left beside it: already registered, with no lock
    // taken (records are never removed), so a store on a read-only disk still answers a re-run.
    const recorded = this.#recordedOnly(input);
    // Under a root (of the store, or of its receipt): the root answers for it; else the flow registers it.
    let rooted = recorded ? undefined : await this.#roots.standing(input.hash, index, onStep);
    let outcome = recorded ?? rooted?.outcome;
    // Its lock taken, the trees are looked at again (beforeRequest): a root another process planted
    // over it meanwhile answers for it, and it is placed again (once: a second time, exit 4).
    const beforeRequest = (hash: string) => this.#roots.beforeRequest(hash);
    for (let placedAgain = false; outcome === undefined; placedAgain = true) {
      try {
        outcome = await register({ ...this.#deps, onStep, beforeRequest }, input);
      } catch (error) {
        if (!(error instanceof UnderRootSince) || placedAgain)
          throw await this.#unsavedRecordReceipt(error, input, index);
        rooted = await this.#roots.standing(input.hash, index, onStep);
        outcome = rooted?.outcome;
      }
    }
    const under = rooted?.under;
    const self = under === undefined ? {} : { under };
    if (!receipts) return { outcome, ...self };
    // Its receipt there led to a root the service has: it stands as it is (no record here to write a new one).
    if (rooted?.kept !== undefined) return { outcome, ...self, receipt: rooted.kept };
    if (outcome.kind === 'already-registered' && outcome.entry === undefined) {
      // Its receipt from an earlier run is there and holds: it answers for it, nothing to warn of.
      // Only one of the registration confirmed: the document's own, or the root it is under.
      const confirmed = under?.proof.root ?? input.hash;
      // After the service's 409: a folder unreadable for want of descriptors is exit 1, not 2 (r87).
      const kept = await keptReceipt(
        receipts,
        index,
        input.hash,
        confirmed,
        this.#baseUrl,
        () => planReceiptsByDigest(receipts),
        (claimed) => this.#roots.refutes(claimed),
        { redact: (raw) => options.io.redact(raw), warn: (message) => options.io.warn(message) },
      ).catch((error: unknown) => {
        throw refusalAfterSending(error);
      });
      if (kept?.kind === 'kept') return { outcome, ...self, receipt: kept.path };
      const leaveOther = (other: OtherReceipt) => {
        // One at its place claims another root: left as it is, nothing written over it, named by no result.
        options.io.warn(otherClaimWarning(other, input.hash, confirmed, this.#baseUrl));
        return { outcome, ...self };
      };
      // One the service said it does not have is written over when a record is found.
      if (kept?.kind === 'other' && !kept.refuted) return leaveOther(kept);
      // Under a root: another document's receipt there may carry its record (a run stopped while it wrote them).
      const record = under && (await this.#rootRecords?.of(under.proof.root));
      if (record === undefined && kept?.kind === 'other') return leaveOther(kept);
      if (record !== undefined) {
        const { recordJson, completedAt, path: recordFrom } = record;
        const entry = { hash: under!.proof.root, recordJson, completedAt, recordFrom };
        const written = await this.#receiptFor(receipts, index, entry, under, input.file?.size);
        if (written.receipt !== undefined) this.#rootRecords!.wrote(entry.hash);
        if (this.#documents.single) await this.#warnRootRecords();
        return { outcome, ...self, ...written };
      }
      this.#unrecorded.count++;
      // The document's digest, not its root's: the warning names documents.
      this.#unrecorded.first ||= under?.sha256 ?? outcome.hash;
      // Its own session was retired on that 409: the run that paid was this store's, its answer lost.
      this.#unrecorded.ownLost ||= outcome.service?.retiredSession !== undefined;
      // Receipts there that disagree on its root's record are named first: they are why none was written.
      if (this.#documents.single) {
        await this.#warnRootRecords();
        this.#noReceipts();
      }
      return { outcome, ...self };
    }
    const entry = outcome.kind === 'pending' ? undefined : outcome.entry;
    if (entry === undefined) return { outcome, ...self };
    const written = await this.#receiptFor(receipts, index, entry, under, input.file?.size);
    return { outcome, ...self, ...written };
  }

  /**
   * `error`, once the receipt of a record the store could not save (quoted in
   * it: the service sends it only once) is written, and said so in its hint.
   * The receipts folder is not the store: r108 saw a full or read-only ledger
   * leave a paid registration with no receipt, and a re-run gets a 409 and no record.
   */
  async #unsavedRecordReceipt(error: unknown, input: RegisterInput, index: number): Promise<unknown> {
    const { receipts } = this.#documents;
    if (!receipts || !(error instanceof NotarizeError) || error.unsaved?.what !== 'record') return error;
    const entry = {
      hash: input.hash,
      recordJson: error.unsaved.text,
      completedAt: new Date().toISOString(),
      ...(input.file ? { file: input.file } : {}),
    };
    const { receipt } = await this.#receiptFor(receipts, index, entry, undefined, input.file?.size);
    if (receipt !== undefined)
      error.hint = `its receipt, made from that record, is written: ${receipt}; ${error.hint!}`;
    return error;
  }

  /** receiptFor, with what this run learnt: a receipt there claiming a root the service does not have is replaced. */
  #receiptFor(
    plan: ReceiptPlan,
    index: number,
    entry: ReceiptEntry,
    under: UnderRoot | undefined,
    size: number | undefined,
  ): Promise<Pick<Registered, 'receipt' | 'receiptError'>> {
    const refuted = (claimed: string) => this.#roots.refutes(claimed);
    return receiptFor(this.#options, plan, index, entry, this.#baseUrl, under, size, refuted);
  }

  /**
   * The ledger's answer for `input`, when it has the record and nothing is
   * left to do for it: no session or lock of its hash, no custody metadata
   * owed (the flow sends that, under the lock).
   */
  #recordedOnly(input: RegisterInput): Outcome | undefined {
    if (input.force) return undefined;
    const { store } = this.#deps;
    try {
      const entry = store.readRecord(input.hash);
      // A session, or a lock (held, or left by a run that died: the flow takes it over and clears it), goes to the flow.
      if (
        entry === undefined ||
        existsSync(store.custodyFile(input.hash)) ||
        entry.custodyOwed !== undefined ||
        existsSync(store.pendingFile(input.hash)) ||
        store.hasLock(input.hash)
      )
        return undefined;
      return recordedOutcome(entry, input.custody);
    } catch {
      return undefined; // A damaged record: the flow says so.
    }
  }

  /** The result of document `index` is out: a signal's exit need not wait for it (see #reporting). */
  #reported(index: number): void {
    this.#reporting.get(index)?.();
    this.#reporting.delete(index);
  }

  /** Where the records of roots the store lacks were taken from for receipts (RootRecordsInReceipts), once. */
  async #warnRootRecords(): Promise<void> {
    for (const line of (await this.#rootRecords?.warnings()) ?? []) this.#options.io.warn(line);
  }

  /**
   * One warning for all the documents left without a receipt because the
   * service said it has them (a 409) and this store has no record: a CI
   * re-run on an empty store would otherwise print a line per document.
   */
  #noReceipts(): void {
    const { count, first, ownLost } = this.#unrecorded;
    if (count === 0) return;
    const dir = this.#documents.receipts?.dir ?? '';
    const which = someDocuments(count, first);
    // Said once: a single document says it as soon as it is known, and not again at the end.
    this.#unrecorded = { count: 0, first: '', ownLost: false };
    const why = ownLost
      ? 'a completion this store sent earlier went through but its answer was lost, and the service sends a record ' +
        'only once (docs/reliability.md, "Limits")'
      : // Another run paid (another store): whether it received the record is not known here.
        `the service sends a record once, to the run that paid: if that run received it, its store, or its receipts ` +
        `in ${dir}, have it; if its answer was lost, nothing has: docs/reliability.md, "Limits"`;
    this.#options.io.warn(
      `no receipt written for ${which}: the service says it is registered (a 409), but this store has no record ` +
        `to write one from (${why}); \`verify\` will not call it verified, and only its verification page can vouch for it`,
    );
  }

  /** The item's result, with its hash if it was hashed before it failed. */
  #result(item: Item, index: number, settled: Settled<Registered>): ItemResult {
    const result = toResult(item, this.#hashes.get(index), settled, this.#baseUrl);
    this.#hashes.delete(index);
    return result;
  }
}

/** The record a receipt is written from (receiptFor). */
type ReceiptEntry = Pick<LedgerEntry, 'hash' | 'recordJson' | 'completedAt'> & {
  file?: LedgerEntry['file'];
  recordFrom?: string;
};

/**
 * Writes the receipt of a registration from its record (`entry`: the
 * ledger's, or a root's as another receipt, `recordFrom`, carries it). A write failure is
 * returned, not thrown: the registration's result must still be shown. A
 * receipt of another registration of the document there is left as it is,
 * said so (writeReceipt, `refuted`).
 */
async function receiptFor(
  options: Pick<RegisterOptions, 'io' | 'force'>,
  plan: ReceiptPlan,
  index: number,
  entry: ReceiptEntry,
  baseUrl: string,
  under: UnderRoot | undefined,
  size: number | undefined,
  refuted?: (claimed: string) => boolean,
): Promise<Pick<Registered, 'receipt' | 'receiptError'>> {
  // Under a root: the document's own digest, and the proof from it to the root the record is of (whose
  // record holds no file): its size is the file's as hashed here, as `register --aggregate` writes it.
  const sha256 = under?.sha256 ?? entry.hash;
  try {
    const { text, redacted } = redactedReceipt(
      receiptText({
        document: { name: plan.names[index] ?? null, sha256, size: (under ? size : entry.file?.size) ?? null },
        recordJson: entry.recordJson,
        baseUrl,
        registeredAt: entry.completedAt,
        ...(under ? { proof: under.proof } : {}),
      }),
      sha256,
      (raw) => options.io.redact(raw),
    );
    const written = await writeReceipt(plan, index, sha256, text, options.force, entry.recordFrom, refuted);
    if ('other' in written) {
      // A receipt of another registration of it there: left as it is, nothing written over it, named by no result.
      options.io.warn(otherClaimWarning(written.other, sha256, under?.proof.root ?? sha256, baseUrl, true));
      return {};
    }
    const receipt = written.path;
    if (redacted) options.io.warn(redactedReceiptWarning(`receipt ${receipt}`, entry.recordFrom));
    return { receipt };
  } catch (error) {
    return { receiptError: asNotarizeError(error) };
  }
}

/** Hashes one item and builds the flow's input for it. */
async function describe(
  options: RegisterOptions,
  item: Item,
  pool: HashPool,
  onProgress: (bytes: number) => void,
): Promise<RegisterInput> {
  const common = {
    descriptionGiven: options.description !== undefined,
    custody: options.custody,
    signed: options.signed,
    blockchain: options.blockchain,
    complete: options.complete,
    force: options.force,
    ...(options.walletName === undefined ? {} : { walletName: options.walletName }),
  };
  if (item.kind === 'unusable') throw item.error;
  if (item.kind === 'hash') return { ...common, hash: item.hash, description: options.description ?? '' };
  if (item.kind === 'stdin') {
    return {
      ...common,
      hash: await hashStream(options.io.stdin, onProgress, true),
      description: options.description ?? '',
    };
  }
  const name = basename(item.path);
  checkNameSent(options, name, options.custody);
  // A name is not chosen as a description is: one holding controls (a line
  // break, an escape sequence) is sent escaped, never raw onto a permanent record.
  const description = options.description ?? escapeControls(name);
  // Size and mtime from the fstat the digest was checked against, not the
  // earlier stat of the walk: custody metadata describes the hashed bytes.
  const { hash, size, lastModified } =
    pool.size === 1 ? await hashFile(item.path, onProgress, item.listed) : await pool.hash(item.path, item.listed);
  return {
    ...common,
    hash,
    description,
    file: { name, size, lastModified },
  };
}

/** The JSON result of one item. */
function toResult(
  item: Item,
  knownHash: string | undefined,
  settled: Settled<Registered>,
  baseUrl: string,
): ItemResult {
  const file = displayName(item);
  if (!settled.ok) {
    if ('cancelled' in settled) {
      // Hashed already (--fail-fast's first pass): its hash is kept, and why it was not sent.
      if (knownHash === undefined) return skippedResult(file, 'not started (--fail-fast)');
      return itemResult(file, knownHash, 'skipped', {
        reason: 'not registered: another document failed (--fail-fast)',
      });
    }
    return failedResult(file, knownHash ?? null, settled.error);
  }
  const { outcome, receipt, receiptError, under } = settled.value;
  // Registered, but its receipt is missing: a failure for the run (exit 1).
  return outcomeResult(file, outcome, baseUrl, {
    ...receiptDetails(receipt, receiptError ?? custodyFailure(outcome)),
    ...(under ? { under } : {}),
  });
}

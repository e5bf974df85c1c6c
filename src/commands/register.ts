/**
 * `notarize register <path...>`: hash locally, request the registration, save
 * the session, complete it; for one document or a whole batch. The flow is
 * core/notarize.ts; batching is core/batch.ts; inputs are core/inputs.ts.
 */
import { Option, type Command } from 'commander';
import { basename, resolve, sep } from 'node:path';
import { z } from 'zod';
import { BLOCKCHAIN_TYPES } from '../api/schemas.js';
import type { Context } from '../context.js';
import { checkArgvDescription, readDescriptionFile } from '../core/description.js';
import { asNotarizeError, BatchError, FailureTally, runAll, type Settled } from '../core/batch.js';
import { hashFile, hashStream, normalizeHash } from '../core/hash.js';
import { HashPool } from '../core/hash-pool.js';
import { expandInputs, type InputItem, type SkippedPath } from '../core/inputs.js';
import { register, type Outcome, type RegisterInput } from '../core/notarize.js';
import {
  checkBeforeSending,
  planReceipts,
  writeReceipt,
  type ReceiptPlan,
  type ReceiptSubject,
} from '../core/receipts.js';
import { errorJson, UsageError, type NotarizeError } from '../errors.js';
import { inGitHubActions, reportToGitHub } from '../output/github.js';
import { showOutcome } from '../output/outcome.js';
import { forTerminal } from '../output/safe-text.js';
import { formatBytes } from '../output/render.js';
import {
  compact,
  embed,
  failedResult,
  itemResult,
  proofOf,
  renderResults,
  skippedResult,
  summarize,
  type ItemResult,
} from '../output/results.js';
import { addInputOptions, inputOptionsShape, toInputOptions } from './input-options.js';
import { examples, parseOptions } from './options.js';

const optionsSchema = z.object({
  ...inputOptionsShape,
  hash: z.string().optional(),
  description: z.string().optional(),
  descriptionFile: z.string().optional(),
  custody: z.boolean().default(false),
  signed: z.boolean().default(false),
  blockchain: z.enum(BLOCKCHAIN_TYPES).default('ALGORAND'),
  complete: z.boolean().default(true),
  force: z.boolean().default(false),
  walletName: z.string().optional(),
  concurrency: z.coerce.number().int().min(1).max(256).default(8),
  failFast: z.boolean().default(false),
  output: z.enum(['table', 'json', 'ndjson']).optional(),
  receiptDir: z.string().optional(),
});
export type RegisterOptions = z.infer<typeof optionsSchema>;

export function configure(command: Command, context: () => Context): void {
  addInputOptions(command.argument('[paths...]', "documents to notarize ('-' reads standard input)"))
    .option('--hash <hex>', 'register a precomputed SHA-256 digest instead of a file')
    .option(
      '-d, --description <text>',
      "description sent with the hash (default: the file's name); UTF-8, no control characters but tab",
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
    .option('-j, --concurrency <n>', 'documents in flight at once', '8')
    .option('--fail-fast', 'stop starting new documents after the first failure')
    .addOption(
      new Option('--output <format>', 'table, json (one array) or ndjson (a line per document as it finishes)').choices(
        ['table', 'json', 'ndjson'],
      ),
    )
    .option(
      '--receipt-dir <dir>',
      'write <file name>.notarization.json (the record) per document; checked before anything is sent',
    )
    .addHelpText(
      'after',
      `\nOnly SHA-256 digests leave this machine. The session the service returns is saved
before anything else, so an interrupted run is finished with \`notarize complete <hash>\`.
Re-running is safe: a hash already in the ledger is printed, not registered again.
A 409 from the service is read as "it already has this hash": status already-registered,
exit 0, the ledger's record if any, else the public verification page. The service does
not document its status codes: this reading of 409 is an assumption.
A 2xx whose body cannot be read (stalled, cut off, not JSON) is exit 5 and is never sent
again on its own; \`notarize complete <hash>\` sends it again when you ask.

Several documents: one result per document; one failure does not stop the others,
even a document that cannot be read (it is a failed result). Exit 0 when all succeeded,
4 when every failure was transient (run it again), else the code of the first other
failure, except that once anything was sent a local failure gives 1, not 2 (2 means
nothing was sent). --json prints an array of results.

A description is stored on the record for good, so it is checked before anything is
sent: it must be valid UTF-8 with no control characters but tab (no line breaks), else
exit 2. A U+FFFD in -d is refused: it is what the bytes of a command line that are not
UTF-8 become; --description-file decodes strictly, and takes a real U+FFFD.

--custody sends the file's metadata (name, type, size, last modified). The service does
not document how file bytes are uploaded, so notarize does NOT upload the file.
${examples([
  'notarize register contract.pdf',
  'notarize register contract.pdf --json > record.json',
  "cat report.pdf | notarize register - -d 'Q3 report'",
  'notarize register contract.pdf --description-file summary.txt',
  'notarize register --recursive dist/ --include "*.tar.gz" --output ndjson',
  'find dist -name "*.zip" -print0 | notarize register --files-from - -0 --json',
  '# CI: register every artifact, keep receipts, fail only on lasting errors',
  'NOTARIZE_API_KEY=$KEY notarize register -r dist --receipt-dir receipts --quiet || [ $? -eq 4 ]',
])}`,
    )
    .action(async (paths: string[], raw: unknown) => {
      await runRegister(context(), paths, parseOptions(optionsSchema, raw, command));
    });
}

/** A document to register: an input, or a digest given with --hash. */
type Item = InputItem | { kind: 'hash'; hash: string };

function displayName(item: Item): string | null {
  return item.kind === 'file' || item.kind === 'unusable' ? item.path : item.kind === 'stdin' ? '-' : null;
}

/** Runs `register`; throws NotarizeError subclasses for main() to map. */
export async function runRegister(ctx: Context, paths: string[], given: RegisterOptions): Promise<void> {
  const baseUrl = ctx.baseUrl; // validated before anything is read or sent
  const options = await withDescription(ctx, paths, given);
  const format = options.output ?? (ctx.globals.json ? 'json' : 'table');
  let items: Iterable<Item> | AsyncIterable<Item>;
  const skip = (s: SkippedPath) => {
    ctx.io.warn(`skipped ${s.path}: ${s.reason}`);
    const result = skippedResult(s.path, s.reason);
    if (format === 'ndjson') ctx.io.data(JSON.stringify(result));
    else skipped.push(result);
  };
  let single: boolean;
  // Paths passed over while walking: printed as met with ndjson, else held for the end.
  const skipped: ItemResult[] = [];
  if (options.hash !== undefined) {
    if (paths.length > 0 || options.filesFrom !== undefined)
      throw new UsageError('give either documents or --hash, not both');
    if (options.description === undefined) throw new UsageError('--hash needs --description or --description-file');
    items = [{ kind: 'hash', hash: normalizeHash(options.hash) }];
    single = true;
    checkOptions(ctx, 'hash', options);
  } else {
    const expansion = await expandInputs(paths, toInputOptions(options), ctx.io.stdin, skip);
    items = expansion.items;
    single = expansion.single;
    // Known up front for '-' on the command line; a '-' in a --files-from list is checked as it comes.
    if (expansion.stdinNamed) checkOptions(ctx, 'stdin', options);
  }
  // Receipts are checked before anything is sent (see core/receipts.ts). Their
  // names are chosen over the whole run (equal names keep their folders), so
  // the list is read first: a receipt per document is no list of millions.
  let receipts: ReceiptPlan | undefined;
  if (options.receiptDir !== undefined) {
    // The receipts of an earlier run are outputs, never documents: `register
    // -r dist --receipt-dir dist/receipts` run twice must not register them.
    const receiptDir = resolve(options.receiptDir);
    const all: Item[] = [];
    for await (const item of items) {
      if (item.kind === 'file' && resolve(item.path).startsWith(receiptDir + sep)) {
        skip({ path: item.path, reason: 'inside --receipt-dir (receipts are not registered)' });
      } else {
        all.push(item);
      }
    }
    if (single && all.length === 0) {
      throw new UsageError('nothing to register: the document named is inside --receipt-dir', {
        hint: 'receipts are outputs; name the document itself',
      });
    }
    items = all;
    receipts = await planReceipts(options.receiptDir, all.map(receiptSubject));
  }
  const api = await ctx.api();
  const store = ctx.ledger;
  const pool = new HashPool(single ? 1 : undefined);
  const spinner = single ? ctx.io.spinner('hashing') : { update() {}, stop() {} };

  // Hashes of items, known once hashed, so a failed item still reports its hash.
  const hashes = new Map<number, string>();
  let done = 0;
  // Items known so far: a --files-from list is read as the batch goes.
  let known = 0;
  let hashedBytes = 0;
  // Whether any item reached the service: from then on exit 2 ("nothing was sent") would lie.
  let sent = false;
  const showProgress = () => ctx.io.progress(`registered ${done}/${known}, hashed ${formatBytes(hashedBytes)}`);
  const registerOne = async (item: Item, index = 0): Promise<Registered> => {
    known = Math.max(known, index + 1);
    // With ndjson a line is printed per document: start no more while stdout is backed up.
    await ctx.io.drained();
    if (item.kind === 'unusable') throw item.error;
    if (item.kind === 'stdin') checkOptions(ctx, 'stdin', options);
    const input = await describe(ctx, item, options, pool, (bytes) => {
      if (item.kind === 'file' && item.size > 64 * 1024 * 1024) {
        spinner.update(`hashing ${formatBytes(bytes)} of ${formatBytes(item.size)}`);
      }
    });
    hashes.set(index, input.hash);
    if (!single) {
      hashedBytes += item.kind === 'file' ? item.size : 0;
      showProgress();
    }
    const onStep = (step: string) => {
      sent = true;
      spinner.update(step);
    };
    if (receipts) {
      const known = options.force ? undefined : store.readRecord(input.hash)?.recordJson;
      await checkBeforeSending(receipts, index, input.hash, known, options.force);
    }
    const outcome = await register({ api, store, onStep }, input);
    return { outcome, ...(receipts ? await receiptFor(ctx, receipts, index, outcome, options) : {}) };
  };

  try {
    if (single && format !== 'ndjson') {
      const item = await firstOf(items);
      let registered;
      try {
        registered = await registerOne(item);
      } catch (error) {
        const failed = toResult(item, hashes.get(0), { ok: false, error: asNotarizeError(error) }, baseUrl);
        reportToGitHub(ctx.io, ctx.env, 'notarize register', [failed]);
        throw error;
      }
      const { outcome, receipt, receiptError } = registered;
      spinner.stop();
      reportToGitHub(ctx.io, ctx.env, 'notarize register', [
        toResult(item, hashes.get(0), { ok: true, value: registered }, baseUrl),
      ]);
      showOutcome(ctx.io, outcome, { json: format === 'json', baseUrl });
      if (receipt) ctx.io.info(`receipt: ${receipt}`);
      // After the record is shown: the registration itself went through.
      if (receiptError) throw receiptError;
      if (outcome.kind === 'completed' && outcome.custody?.error) throw outcome.custody.error;
      return;
    }
    // Results held for the end, in input order: whole for --json; for the table (and, with
    // ndjson, only in GitHub Actions for its summary) without the records, so they stay small.
    const held: ItemResult[] = [];
    const hold = format !== 'ndjson' || inGitHubActions(ctx.env);
    const counts = new Map<ItemResult['status'], number>();
    const tally = new FailureTally();
    const total = await runAll(items, registerOne, {
      concurrency: options.concurrency,
      failFast: options.failFast,
      onSettled: (index, settled, item) => {
        known = Math.max(known, index + 1);
        done++;
        showProgress();
        const result = toResult(item, hashes.get(index), settled, baseUrl);
        hashes.delete(index);
        counts.set(result.status, (counts.get(result.status) ?? 0) + 1);
        tally.add(index, settled.ok ? settled.value.receiptError : 'error' in settled ? settled.error : undefined);
        if (format === 'ndjson') ctx.io.data(JSON.stringify(result));
        if (hold) held[index] = format === 'json' ? result : compact(result);
      },
    });
    ctx.io.clearProgress();
    const printed = [...held, ...skipped];
    if (format === 'json') ctx.io.dataJsonArray(printed);
    else if (format === 'table') ctx.io.data(renderResults(printed, ctx.io.colour));
    for (const result of skipped) counts.set(result.status, (counts.get(result.status) ?? 0) + 1);
    // From the held results when there are, so the statuses are listed in input order.
    ctx.io.info(summarize(hold ? printed : counts));
    if (hold) reportToGitHub(ctx.io, ctx.env, 'notarize register', printed);
    const code = tally.code(sent);
    if (code !== 0) throw new BatchError(tally.failed, total, code);
  } finally {
    spinner.stop();
    await pool.close();
  }
}

function receiptSubject(item: Item): ReceiptSubject {
  if (item.kind !== 'file' && item.kind !== 'unusable') return {};
  return { path: item.path, ...(item.kind === 'file' && item.relative ? { relative: item.relative } : {}) };
}

/** What registering one document gave: the flow's outcome, and its receipt or why it could not be written. */
interface Registered {
  outcome: Outcome;
  receipt?: string;
  /** The registration went through, but its receipt could not be written (exit 1). */
  receiptError?: NotarizeError;
}

/**
 * Writes the receipt of a registration that has a record; one without a
 * record gets none, and a warning. A write failure is returned, not thrown:
 * the registration's result must still be shown.
 */
async function receiptFor(
  ctx: Context,
  plan: ReceiptPlan,
  index: number,
  outcome: Outcome,
  options: RegisterOptions,
): Promise<Pick<Registered, 'receipt' | 'receiptError'>> {
  if (outcome.kind === 'pending') return {};
  const { entry } = outcome;
  if (entry === undefined) {
    ctx.io.warn(
      `no receipt for ${outcomeHash(outcome)}: the service says it is registered, but this store has no record of it`,
    );
    return {};
  }
  try {
    return { receipt: await writeReceipt(plan, index, entry.hash, entry.recordJson, options.force) };
  } catch (error) {
    return { receiptError: asNotarizeError(error) };
  }
}

/**
 * The options with the description checked (core/description.ts), read from
 * --description-file if given; before any input is read or anything sent.
 */
async function withDescription(ctx: Context, paths: string[], options: RegisterOptions): Promise<RegisterOptions> {
  const { description, descriptionFile } = options;
  if (descriptionFile === undefined) {
    return description === undefined ? options : { ...options, description: checkArgvDescription(description) };
  }
  if (description !== undefined) throw new UsageError('give either --description or --description-file, not both');
  if (descriptionFile === '-') {
    // Standard input can be read once: for the description, or for a document or the list of paths.
    if (paths.includes('-')) throw new UsageError(STDIN_TWICE);
    if (options.filesFrom === '-') throw new UsageError("'-' cannot be both --files-from and --description-file");
    if (ctx.io.stdinIsTTY) {
      throw new UsageError("--description-file '-' reads standard input, but it is a terminal", {
        hint: 'pipe the description in, or give a file',
      });
    }
  }
  return { ...options, description: await readDescriptionFile(descriptionFile, ctx.io.stdin) };
}

const STDIN_TWICE = "'-' cannot be both a document and --description-file";

/** Checks the options against an input that is not a file: up front when named, else as its item starts. */
function checkOptions(ctx: Context, kind: 'stdin' | 'hash', options: RegisterOptions): void {
  // A '-' in a --files-from list, once standard input gave the description.
  if (kind === 'stdin' && options.descriptionFile === '-') throw new UsageError(STDIN_TWICE);
  if (kind === 'stdin' && options.description === undefined)
    throw new UsageError("reading standard input ('-') needs --description or --description-file");
  if (kind === 'stdin' && ctx.io.stdinIsTTY)
    throw new UsageError("'-' reads standard input, but it is a terminal", { hint: 'pipe the document in' });
  if (options.custody) {
    throw new UsageError('--custody needs file paths (their metadata is sent), not --hash or standard input');
  }
}

/** The one item of a single-item run. */
async function firstOf<T>(items: Iterable<T> | AsyncIterable<T>): Promise<T> {
  for await (const item of items) return item;
  throw new Error('no item');
}

/** Hashes one item and builds the flow's input for it. */
async function describe(
  ctx: Context,
  item: Item,
  options: RegisterOptions,
  pool: HashPool,
  onProgress: (bytes: number) => void,
): Promise<RegisterInput> {
  const common = {
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
    return { ...common, hash: await hashStream(ctx.io.stdin, onProgress), description: options.description ?? '' };
  }
  const name = basename(item.path);
  // A name is not chosen as a description is: one holding controls (a line
  // break, an escape sequence) is sent escaped, never raw onto a permanent record.
  const description = options.description ?? forTerminal(name);
  // Size and mtime from the fstat the digest was checked against, not the
  // earlier stat of the walk: custody metadata describes the hashed bytes.
  const { hash, size, lastModified } =
    pool.size === 1 ? await hashFile(item.path, onProgress) : await pool.hash(item.path);
  return {
    ...common,
    hash,
    description,
    file: { name, size, lastModified },
  };
}

function outcomeHash(outcome: Outcome): string {
  return outcome.kind === 'already-registered' ? outcome.hash : outcome.entry.hash;
}

const STATUS_OF: Record<Outcome['kind'], ItemResult['status']> = {
  'already-registered': 'already-registered',
  pending: 'pending',
  completed: 'registered',
};

/** The JSON result of one item. */
function toResult(
  item: Item,
  knownHash: string | undefined,
  settled: Settled<Registered>,
  baseUrl: string,
): ItemResult {
  const file = displayName(item);
  if (!settled.ok) {
    if ('cancelled' in settled) return skippedResult(file, 'not started (--fail-fast)');
    return failedResult(file, knownHash ?? null, settled.error);
  }
  const { outcome, receipt, receiptError } = settled.value;
  const hash = outcomeHash(outcome);
  if (outcome.kind === 'pending')
    return itemResult(file, hash, 'pending', { session: embed(outcome.entry.sessionJson) });
  const said = outcome.kind === 'already-registered' ? outcome.service : undefined;
  // Registered, but its receipt is missing: a failure for the run (exit 1).
  return itemResult(file, hash, receiptError ? 'failed' : STATUS_OF[outcome.kind], {
    ...proofOf(baseUrl, hash, outcome.entry?.recordJson),
    ...(said ? { message: said.message ?? null } : {}),
    ...(receipt ? { receipt } : {}),
    ...(receiptError ? { error: errorJson(receiptError) } : {}),
  });
}

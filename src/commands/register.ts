/**
 * `notarize register <path...>`: hash locally, request the registration, save
 * the session, complete it; for one document or a whole batch. The flow is
 * core/notarize.ts; batching is core/batch.ts; inputs are core/inputs.ts.
 */
import { Option, type Command } from 'commander';
import { basename } from 'node:path';
import { z } from 'zod';
import { BLOCKCHAIN_TYPES } from '../api/schemas.js';
import type { Context } from '../context.js';
import { asNotarizeError, BatchError, batchExitCode, runAll, type Settled } from '../core/batch.js';
import { hashFile, hashStream, normalizeHash } from '../core/hash.js';
import { HashPool } from '../core/hash-pool.js';
import { expandInputs, type InputItem } from '../core/inputs.js';
import { register, type Outcome, type RegisterInput } from '../core/notarize.js';
import { writeReceipt } from '../core/receipts.js';
import { UsageError } from '../errors.js';
import { reportToGitHub } from '../output/github.js';
import { showOutcome } from '../output/outcome.js';
import { formatBytes } from '../output/render.js';
import { embed, errorJson, renderResults, skippedResult, summarize, type ItemResult } from '../output/results.js';
import { addInputOptions, inputOptionsShape, toInputOptions } from './input-options.js';
import { examples, parseOptions } from './options.js';

const optionsSchema = z.object({
  ...inputOptionsShape,
  hash: z.string().optional(),
  description: z.string().optional(),
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
    .option('-d, --description <text>', "description sent with the hash (default: the file's name)")
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
    .option('--receipt-dir <dir>', 'write <file name>.notarization.json (the record) per document')
    .addHelpText(
      'after',
      `\nOnly SHA-256 digests leave this machine. The session the service returns is saved
before anything else, so an interrupted run is finished with \`notarize complete <hash>\`.
Re-running is safe: a hash already in the ledger is printed, not registered again.

Several documents: one result per document; one failure does not stop the others.
Exit 0 when all succeeded, 4 when every failure was transient (run it again),
else the code of the first other failure. --json prints an array of results.

--custody sends the file's metadata (name, type, size, last modified). The service does
not document how file bytes are uploaded, so notarize does NOT upload the file.
${examples([
  'notarize register contract.pdf',
  'notarize register contract.pdf --json > record.json',
  "cat report.pdf | notarize register - -d 'Q3 report'",
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
  return item.kind === 'file' ? item.path : item.kind === 'stdin' ? '-' : null;
}

/** Runs `register`; throws NotarizeError subclasses for main() to map. */
export async function runRegister(ctx: Context, paths: string[], options: RegisterOptions): Promise<void> {
  const baseUrl = ctx.baseUrl; // validated before anything is read or sent
  const format = options.output ?? (ctx.globals.json ? 'json' : 'table');
  let items: Item[];
  let single: boolean;
  let skipped: ItemResult[] = [];
  if (options.hash !== undefined) {
    if (paths.length > 0 || options.filesFrom !== undefined)
      throw new UsageError('give either documents or --hash, not both');
    if (options.description === undefined) throw new UsageError('--hash needs --description');
    items = [{ kind: 'hash', hash: normalizeHash(options.hash) }];
    single = true;
  } else {
    const expansion = await expandInputs(paths, toInputOptions(options), ctx.io.stdin);
    for (const s of expansion.skipped) ctx.io.warn(`skipped ${s.path}: ${s.reason}`);
    skipped = expansion.skipped.map((s) => skippedResult(s.path, s.reason));
    items = expansion.items;
    single = expansion.single;
  }
  checkOptions(ctx, items, options);
  const api = await ctx.api();
  const store = ctx.ledger;
  const pool = new HashPool(single ? 1 : undefined);
  const spinner = single ? ctx.io.spinner('hashing') : { update() {}, stop() {} };

  // Hashes of items, known once hashed, so a failed item still reports its hash.
  const hashes = new Map<number, string>();
  let done = 0;
  let hashedBytes = 0;
  const showProgress = () => ctx.io.progress(`registered ${done}/${items.length}, hashed ${formatBytes(hashedBytes)}`);
  const registerOne = async (item: Item, index = 0): Promise<{ outcome: Outcome; receipt?: string }> => {
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
    const outcome = await register({ api, store, onStep: (step) => spinner.update(step) }, input);
    if (options.receiptDir === undefined || outcome.kind === 'pending') return { outcome };
    const name = item.kind === 'file' ? (item.relative ?? basename(item.path)) : input.hash;
    return { outcome, receipt: await writeReceipt(options.receiptDir, name, outcome.entry.recordJson, options.force) };
  };

  try {
    if (single && format !== 'ndjson') {
      const item = items[0]!;
      let registered;
      try {
        registered = await registerOne(item);
      } catch (error) {
        const failed = toResult(item, hashes.get(0), { ok: false, error: asNotarizeError(error) }, baseUrl);
        reportToGitHub(ctx.io, ctx.env, 'notarize register', [failed]);
        throw error;
      }
      const { outcome, receipt } = registered;
      spinner.stop();
      reportToGitHub(ctx.io, ctx.env, 'notarize register', [
        toResult(item, hashes.get(0), { ok: true, value: registered }, baseUrl),
      ]);
      showOutcome(ctx.io, outcome, { json: format === 'json', baseUrl });
      if (receipt) ctx.io.info(`receipt: ${receipt}`);
      if (outcome.kind === 'completed' && outcome.custody?.error) throw outcome.custody.error;
      return;
    }
    if (format === 'ndjson') for (const result of skipped) ctx.io.data(JSON.stringify(result));
    const results = await runAll(items, registerOne, {
      concurrency: options.concurrency,
      failFast: options.failFast,
      onSettled: (index, settled) => {
        done++;
        showProgress();
        if (format === 'ndjson')
          ctx.io.data(JSON.stringify(toResult(items[index]!, hashes.get(index), settled, baseUrl)));
      },
    });
    ctx.io.clearProgress();
    const printed = [...results.map((settled, i) => toResult(items[i]!, hashes.get(i), settled, baseUrl)), ...skipped];
    if (format === 'json') ctx.io.dataJsonArray(printed);
    else if (format === 'table') ctx.io.data(renderResults(printed, ctx.io.colour));
    ctx.io.info(summarize(printed));
    reportToGitHub(ctx.io, ctx.env, 'notarize register', printed);
    const errors = results.map((r) => (!r.ok && 'error' in r ? r.error : undefined));
    const code = batchExitCode(errors);
    if (code !== 0) throw new BatchError(errors.filter(Boolean).length, items.length, code);
  } finally {
    spinner.stop();
    await pool.close();
  }
}

function checkOptions(ctx: Context, items: Item[], options: RegisterOptions): void {
  const stdin = items.some((i) => i.kind === 'stdin');
  if (stdin && options.description === undefined)
    throw new UsageError("reading standard input ('-') needs --description");
  if (stdin && ctx.io.stdinIsTTY)
    throw new UsageError("'-' reads standard input, but it is a terminal", { hint: 'pipe the document in' });
  if (options.custody && items.some((i) => i.kind !== 'file')) {
    throw new UsageError('--custody needs file paths (their metadata is sent), not --hash or standard input');
  }
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
  if (item.kind === 'hash') return { ...common, hash: item.hash, description: options.description ?? '' };
  if (item.kind === 'stdin') {
    return { ...common, hash: await hashStream(ctx.io.stdin, onProgress), description: options.description ?? '' };
  }
  const hash = pool.size === 1 ? await hashFile(item.path, onProgress) : await pool.hash(item.path);
  const name = basename(item.path);
  return {
    ...common,
    hash,
    description: options.description ?? name,
    file: { name, size: item.size, lastModified: item.lastModified },
  };
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
  settled: Settled<{ outcome: Outcome; receipt?: string }>,
  baseUrl: string,
): ItemResult {
  const file = displayName(item);
  if (!settled.ok) {
    if ('cancelled' in settled) return skippedResult(file, 'not started (--fail-fast)');
    return { schemaVersion: 1, file, hash: knownHash ?? null, status: 'failed', error: errorJson(settled.error) };
  }
  const { outcome, receipt } = settled.value;
  const hash = outcome.entry.hash;
  const base = { schemaVersion: 1 as const, file, hash, status: STATUS_OF[outcome.kind] };
  if (outcome.kind === 'pending') return { ...base, session: embed(outcome.entry.sessionJson) };
  return {
    ...base,
    record: embed(outcome.entry.recordJson),
    verificationUrl: `${baseUrl}/verification/${hash}`,
    ...(receipt ? { receipt } : {}),
  };
}

/**
 * What `register` is given, and the documents it makes of it, shared by its
 * two ways of registering: one registration per document (register.ts) and
 * one for all of them (register-aggregate.ts, --aggregate).
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { ApiClient } from '../api/client.js';
import { BLOCKCHAIN_TYPES } from '../api/schemas.js';
import { checkArgvDescription, checkWalletName, readDescriptionFile } from '../core/description.js';
import { normalizeHash } from '../core/hash.js';
import { YOUR_SECRET } from '../secrets.js';
import { expandInputs, type InputItem, type SkippedPath } from '../core/inputs.js';
import { planReceipts, type ReceiptPlan, type ReceiptSubject } from '../core/receipts.js';
import { insideDir } from '../path-spelling.js';
import { UsageError } from '../errors.js';
import type { IO } from '../output/io.js';
import type { ItemResults } from '../output/results.js';
import type { ServiceStore } from '../store/service-store.js';
import { inputOptionsShape, toInputOptions } from './input-options.js';
import { onlyOutputsFound, outputKind } from './verify-outputs.js';
import { outputSchema } from './options.js';

export const TITLE = 'notarize register';

/** What either way of registering works with: the options, the documents, where results go, the service and its store. */
export interface RegisterRun {
  options: RegisterOptions;
  documents: Documents;
  items: ItemResults;
  baseUrl: string;
  api: ApiClient;
  store: ServiceStore;
}

const CONCURRENCY = 'expected a whole number from 1 to 256';

export const optionsSchema = z.object({
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
  // Digits only, as the settings' whole numbers (settings.ts): not '0x10', '1e2' or ' 8'.
  concurrency: z.coerce
    .string()
    .regex(/^[0-9]{1,3}$/, { error: CONCURRENCY })
    .transform(Number)
    .refine((n) => n >= 1 && n <= 256, { error: CONCURRENCY })
    .default(8),
  failFast: z.boolean().default(false),
  output: outputSchema,
  receiptDir: z.string().optional(),
  aggregate: z.boolean().default(false),
});
/** The flags of `register`, parsed. */
export type RegisterFlags = z.infer<typeof optionsSchema>;

/** What `register` uses: its arguments and flags, the terminal (standard input, prompts' checks, progress), and the service. */
export interface RegisterOptions extends RegisterFlags {
  paths: string[];
  io: IO;
  /** The service's base URL, resolved (and checked) when the run first needs it. */
  baseUrl: () => string;
  api: () => Promise<ApiClient>;
  /** The store of the service: its pending sessions, ledger, trees and locks. */
  serviceStore: () => ServiceStore;
  /** The store's folder, whose files are never documents (core/inputs.ts). */
  storeDir?: string;
  /** Whether NOTARIZE_CONFIG_DIR named that folder (else it is the platform's, under the home folder). */
  storeNamed?: boolean;
}

/** A document to register: an input, or a digest given with --hash. */
export type Item = InputItem | { kind: 'hash'; hash: string };

export function displayName(item: Item): string | null {
  return item.kind === 'file' || item.kind === 'unusable' ? item.path : item.kind === 'stdin' ? '-' : null;
}

/** The documents of a run, whether one was named alone, and the receipts to write (--receipt-dir). */
export interface Documents {
  items: Iterable<Item> | AsyncIterable<Item>;
  single: boolean;
  receipts?: ReceiptPlan;
}

/** The documents named (or the digest given), with their receipts planned; nothing is hashed yet. */
export async function listDocuments(
  options: RegisterOptions,
  skip: (s: SkippedPath, warn?: boolean) => void,
): Promise<Documents> {
  let documents: Documents;
  /** Receipts and tree manifests a walk found outside --receipt-dir (withoutOutputs), for the message below. */
  const outputsPassed = { count: 0 };
  if (options.hash !== undefined) {
    if (options.paths.length > 0 || options.filesFrom !== undefined)
      throw new UsageError('give either documents or --hash, not both');
    // They choose documents: with a digest alone they would do nothing, unsaid.
    if (options.recursive || options.include.length > 0 || options.exclude.length > 0 || options.null)
      throw new UsageError('-r, --include, --exclude and -0 choose documents: they do nothing with --hash', {
        hint: 'leave them out, or name the documents instead of --hash',
      });
    if (options.description === undefined) throw new UsageError('--hash needs --description or --description-file');
    documents = { items: [{ kind: 'hash', hash: normalizeHash(options.hash) }], single: true };
    checkOptions(options, 'hash');
  } else {
    const expansion = await expandInputs(options.paths, toInputOptions(options), options.io.stdin, skip);
    // Inside --receipt-dir, outputs are passed over below, with their own reason.
    const inReceiptDir = options.receiptDir === undefined ? undefined : insideDir(options.receiptDir);
    const items = withoutOutputs(expansion.items, skip, options.io, inReceiptDir, outputsPassed);
    documents = { items, single: expansion.single };
    // Known up front for '-' on the command line; a '-' in a --files-from list is checked as it comes.
    if (expansion.stdinNamed) checkOptions(options, 'stdin');
  }
  if (options.receiptDir === undefined) return documents;
  // Receipts are checked before anything is sent (see core/receipts.ts). Their
  // names are chosen over the whole run (equal names keep their folders), so
  // the list is read first: a receipt per document is no list of millions.
  // The receipts of an earlier run are outputs, never documents: `register
  // -r dist --receipt-dir dist/receipts` run twice must not register them.
  const inReceiptDir = insideDir(options.receiptDir);
  // Receipts travel (an artifact upload of the folder): the store's token would travel with them (r108:
  // the Action's receipt-dir set to RUNNER_TEMP, where it keeps the job's stores). The platform's store,
  // under the home folder, is in one only as large as that (`--receipt-dir .` at home, r109): said, not refused.
  if (options.storeDir !== undefined && inReceiptDir(join(options.storeDir, 'credentials.json'))) {
    const holds = `--receipt-dir ${options.receiptDir} holds the notarize store (${options.storeDir}), which holds your token`;
    if (options.storeNamed !== false) {
      throw new UsageError(`${holds}: it would travel with the receipts`, {
        code: 'store_inside',
        hint: 'give the receipts a folder of their own, and keep the store (NOTARIZE_CONFIG_DIR) outside it',
      });
    }
    options.io.warn(`${holds}: never ship or upload that folder whole; give the receipts a folder of their own`);
  }
  const all: Item[] = [];
  const inside: string[] = [];
  const reason = 'inside --receipt-dir (receipts are not registered)';
  for await (const item of documents.items) {
    if (item.kind === 'file' && inReceiptDir(item.path)) {
      inside.push(item.path);
      // Each is a skipped result; the warnings are said together below: a re-run of `register -r dist
      // --receipt-dir dist/receipts` meets every receipt of the last one.
      skip({ path: item.path, reason }, false);
    } else {
      all.push(item);
    }
  }
  const skippedInside = inside.length;
  if (skippedInside > MANY_INSIDE) {
    options.io.warn(`skipped ${skippedInside} files, ${inside[0]} and others: ${reason}`);
  } else {
    for (const path of inside) options.io.warn(`skipped ${path}: ${reason}`);
  }
  // Every document inside it (named, listed or found), or an output found by a walk: a run that
  // would register nothing and pass.
  if (all.length === 0 && skippedInside > 0) {
    throw new UsageError(
      documents.single
        ? 'nothing to register: the document named is inside --receipt-dir'
        : outputsPassed.count > 0
          ? 'nothing to register: every file named or found is inside --receipt-dir, or is a receipt or tree manifest found by a walk'
          : 'nothing to register: every document named or found is inside --receipt-dir',
      { hint: 'receipts are outputs; name the documents themselves, or another --receipt-dir' },
    );
  }
  return { ...documents, items: all, receipts: await planReceipts(options.receiptDir, all.map(receiptSubject)) };
}

/** Files met inside --receipt-dir past which they are warned about in one line, not one each. */
const MANY_INSIDE = 3;

/**
 * Not "name it to register it": a receipt of no document of the walk is `unknown` to verify -r
 * whether registered or not (r100: registering it paid, and verify still failed on it). Nor "of
 * a document it checks": verify passes over a receipt only where it looks for one (r102: an
 * older receipts folder of the very documents walked was `unknown`), verify-outputs.ts.
 */
const OUTPUT_REASON = {
  receipt:
    'a notarize receipt, found by a walk: not registered (verify -r passes over a receipt only where it looks for the receipt of a document it checks: beside it, or in the --receipt-dir given; a folder of receipts of the documents walked can be that --receipt-dir, any other receipt: --exclude it)',
  manifest:
    'a notarize tree manifest, found by a walk: not registered (verify -r passes over a manifest only when a document it checks is under its root: else --exclude it)',
};

/**
 * `items` without the receipts and tree manifests a walk finds (`register -r
 * dist` over receipts kept beside their documents, or an older receipts folder
 * under it): verify's walk never checks them as documents (verify-outputs.ts:
 * passed over when they are of a document it checks, else `unknown`), so
 * registering them paid for what nothing would verify (r97). Named or listed,
 * such a file is a document, as for verify. A walk of outputs alone has no
 * document: a UsageError, as an empty folder's.
 */
async function* withoutOutputs(
  items: Iterable<InputItem> | AsyncIterable<InputItem>,
  skip: (s: SkippedPath, warn?: boolean) => void,
  io: IO,
  inReceiptDir: ((path: string) => boolean) | undefined,
  passedOver: { count: number },
): AsyncGenerator<InputItem> {
  const passed: string[] = [];
  let documents = 0;
  for await (const item of items) {
    const walked = item.kind === 'file' && item.relative !== undefined && !inReceiptDir?.(item.path);
    const kind = walked ? await outputKind(item.path) : undefined;
    if (kind === undefined) {
      documents++;
      yield item;
      continue;
    }
    const { path } = item as Extract<InputItem, { kind: 'file' }>;
    // Each is a skipped result; the warning is said once, below: receipts kept beside documents are many.
    skip({ path, reason: OUTPUT_REASON[kind] }, false);
    passedOver.count++;
    if (passed.length <= MANY_INSIDE) passed.push(path);
  }
  if (passed.length > MANY_INSIDE) {
    io.warn(
      `skipped ${passed[0]} and other receipts or tree manifests a walk found: outputs are not registered (verify -r calls unknown those it does not look for: a folder of receipts of the documents walked can be its --receipt-dir, the others --exclude; each result's reason says more)`,
    );
  } else {
    for (const path of passed)
      io.warn(
        `skipped ${path}: a receipt or tree manifest (not registered; verify -r calls unknown one it does not look for: its folder, if it holds receipts of the documents walked, can be the --receipt-dir, else --exclude it)`,
      );
  }
  // (Files inside --receipt-dir count here: the check below says when they are all there is.)
  if (documents === 0 && passed.length > 0) {
    throw onlyOutputsFound();
  }
}

export function receiptSubject(item: Item): ReceiptSubject {
  if (item.kind !== 'file' && item.kind !== 'unusable') return {};
  return { path: item.path, ...(item.kind === 'file' && item.relative ? { relative: item.relative } : {}) };
}

/**
 * The options with the description checked (core/description.ts), read from
 * --description-file if given, and the wallet name checked; before any input
 * is read or anything sent.
 */
export async function withDescription(options: RegisterOptions): Promise<RegisterOptions> {
  const checked = await describedAs(options);
  // The description and wallet name go on a permanent record that other people read.
  for (const [what, text] of [
    ['the description', checked.description],
    ['--wallet-name', checked.walletName],
  ] as const) {
    if (text !== undefined && options.io.holdsSecret(text)) {
      throw new UsageError(`${what} holds ${YOUR_SECRET}: it would be kept by the service for good`, {
        hint: 'remove it; notarize never sends a secret anywhere but to log in',
      });
    }
  }
  return checked;
}

/**
 * Throws when a document's file name, about to be sent (as the description
 * when none is given, or as custody metadata), holds the API key or token:
 * as a description holding one is refused (withDescription).
 */
export function checkNameSent(options: RegisterOptions, name: string, custody: boolean): void {
  if ((options.description !== undefined && !custody) || !options.io.holdsSecret(name)) return;
  throw new UsageError(
    `the file name holds ${YOUR_SECRET}: it would be kept by the service for good as ${custody ? 'custody metadata' : 'the description'}`,
    { hint: custody ? 'rename the file' : 'rename the file, or give --description' },
  );
}

async function describedAs(options: RegisterOptions): Promise<RegisterOptions> {
  const { description, descriptionFile } = options;
  if (options.walletName !== undefined) {
    // Ignored, it would let a registration be paid for without the custody its wallet name asked for.
    if (!options.custody) {
      throw new UsageError(
        '--wallet-name goes with --custody: it is sent with the file metadata, which only --custody sends',
        {
          hint: 'add --custody, or leave --wallet-name out',
        },
      );
    }
    checkWalletName(options.walletName);
  }
  if (descriptionFile === undefined) {
    return description === undefined ? options : { ...options, description: checkArgvDescription(description) };
  }
  if (description !== undefined) throw new UsageError('give either --description or --description-file, not both');
  if (descriptionFile === '-') {
    // Standard input can be read once: for the description, or for a document or the list of paths.
    if (options.paths.includes('-')) throw new UsageError(STDIN_TWICE);
    if (options.filesFrom === '-') throw new UsageError("'-' cannot be both --files-from and --description-file");
    if (options.io.stdinIsTTY) {
      throw new UsageError("--description-file '-' reads standard input, but it is a terminal", {
        hint: 'pipe the description in, or give a file',
      });
    }
  }
  return { ...options, description: await readDescriptionFile(descriptionFile, options.io.stdin) };
}

const STDIN_TWICE = "'-' cannot be both a document and --description-file";

/** Checks the options against an input that is not a file: up front when named, else as its item starts. */
export function checkOptions(options: RegisterOptions, kind: 'stdin' | 'hash'): void {
  // A '-' in a --files-from list, once standard input gave the description.
  if (kind === 'stdin' && options.descriptionFile === '-') throw new UsageError(STDIN_TWICE);
  if (kind === 'stdin' && options.description === undefined)
    throw new UsageError("reading standard input ('-') needs --description or --description-file");
  if (kind === 'stdin' && options.io.stdinIsTTY)
    throw new UsageError("'-' reads standard input, but it is a terminal", { hint: 'pipe the document in' });
  if (options.custody) {
    throw new UsageError('--custody needs file paths (their metadata is sent), not --hash or standard input');
  }
}

/** The one item of a single-item run. */
export async function firstOf<T>(items: Iterable<T> | AsyncIterable<T>): Promise<T> {
  for await (const item of items) return item;
  throw new Error('no item');
}

/**
 * `notarize verify <file...>`: re-hash documents and check each digest
 * against its receipt, or else the local ledger (core/evidence.ts says in
 * which order), with no network, no credentials and no store needed. Exit 6
 * when a document is not verified.
 */
import type { Command } from 'commander';
import { statSync } from 'node:fs';
import { z } from 'zod';
import type { Context } from '../context.js';
import { runAll, type Settled } from '../core/batch.js';
import type { InclusionProof } from '../core/receipt-format.js';
import { Evidence, MAX_RECEIPT_BYTES, type Finding, type ReceiptSources } from '../core/evidence.js';
import { fileErrorReason, hashStream } from '../core/hash.js';
import { HashPool } from '../core/hash-pool.js';
import { expandInputs, itemName, type InputItem } from '../core/inputs.js';
import { LedgerIndex } from '../core/ledger.js';
import { readJsonInput } from '../core/read-input.js';
import { PARENT_AFTER_NAME, RECEIPT_SUFFIX, receiptNames } from '../core/receipts.js';
import { insideDir, parentAfterName } from '../path-spelling.js';
import { InputFileError, NotarizeError, NotNotarizedError, StoreError, UsageError } from '../errors.js';
import type { IO } from '../output/io.js';
import type { ItemsResult, RecordResult } from '../output/present.js';
import {
  failedResult,
  itemResult,
  ItemResults,
  proofOf,
  skippedResult,
  type ItemResult,
  type ItemStatus,
} from '../output/results.js';
import type { ServiceStore } from '../store/service-store.js';
import { finishItems, viewOf } from './action.js';
import { INSIDE_RECEIPT_DIR, WalkOutputs } from './verify-outputs.js';
import { addInputOptions, inputOptionsShape, toInputOptions } from './input-options.js';
import { examples, outputOption, outputSchema, parseOptions } from './options.js';

export const optionsSchema = z.object({
  ...inputOptionsShape,
  receipt: z.string().optional(),
  receiptDir: z.string().optional(),
  output: outputSchema,
});

/** What `verify` uses: the documents named, standard input, their receipts and the ledger (no network). */
export interface VerifyOptions extends z.infer<typeof optionsSchema> {
  paths: string[];
  /** Standard input, and warnings as they happen. */
  io: IO;
  baseUrl: () => string;
  /** The ledger of the current service; undefined when there is no usable store (receipts alone then). */
  serviceStore: () => ServiceStore | undefined;
  /** The store's folder, whose files are never documents (core/inputs.ts). */
  storeDir?: string;
  /** Given when the store cannot be used: only these entries of its folder are its own (core/inputs.ts). */
  storeEntries?: (name: string) => boolean;
}

export function configure(command: Command, context: () => Context): void {
  addInputOptions(command.argument('[paths...]', "documents to check ('-' reads standard input)"))
    .option('--receipt <file>', 'check the one document named against this receipt')
    .option('--receipt-dir <dir>', 'look for receipts where `register --receipt-dir <dir>` wrote them')
    .addOption(outputOption('one document named alone and verified: its record alone'))
    .addHelpText(
      'after',
      `
No network, no credentials, no store needed. Each document's digest is checked against the first of:
--receipt <file>; its receipt under --receipt-dir (named as register names them: of another
digest, it is modified, a receipt of its digest elsewhere named in the reason; of its digest
while one of another digest, registered later, is named after more of its path (a run that
had a namesake), modified too: it may be an older build; with none of
its name, any there of its digest (checked the same way against fuller names, whatever the
dates when its name is not the end of the document's path: a namesake's, or a digest), which says
the bytes were registered, not as which artifact: verify the folder register walked to
check that); without
--receipt-dir, <document>${RECEIPT_SUFFIX} beside it; else the local ledger of the current service.
verified: the digest is the one its receipt (or the ledger) is of; \`source\` says which.
modified: its receipt, or a ledger entry of this name, is of another digest.
Verified by the ledger by bytes it has under other names only, this name notarized with
other digests: said in its reason and a warning (another document's bytes copied over it, or
a copy of that document under this name; the ledger keeps one name a digest: receipts tell).
Verified by the ledger while its name was notarized later with another digest: said in its
reason and a warning (the ledger keeps names without their folders: an older build of it, or
a file of that name elsewhere; receipts tell them apart).
unknown: no receipt found and nothing in the ledger.
invalid: the receipt contradicts itself (its record is of another hash, its verification URL
names another hash, or it is malformed).
A receipt is evidence, not a signature: anyone can write one that holds together. It tells
which digest was registered and where the service shows it: open its verification URL to
confirm the registration itself (a warning names receipts of another service than the one
configured). Receipts written before format v1 (the bare record) are read: only the
service's record of a completed registration is one (not a saved register output line).
A document that cannot be read (missing, unreadable, not a regular file, a name not in
UTF-8), or a receipt found that cannot be (a symbolic link is not followed), is a failed result
and the others go on.
Exit 0 when every document is verified; 2 when one could not be checked (nothing is ever
sent); else 6. A --receipt-dir that is no folder is exit 2. A file a walk finds in --receipt-dir that is no receipt named *${RECEIPT_SUFFIX}, nor a
tree manifest with the bytes register wrote (CRLF line endings, a byte order mark, its final line break dropped or doubled allowed), is failed too: register passes such files
over, so they have none (but the temporary file of a receipt or manifest passed over,
.<name>.<pid>.<tag>.<n>.tmp, that a run stopped before renaming it left there, holding the
start of that file: passed over, and it can be removed; so named, anything else is unknown; and the
empty .notarize-probe-<pid>.<tag>.<n> register checks the folder with, left by a run killed then). Receipts and manifests met while walking a folder are passed over
only when they belong to a document checked: a receipt that was its evidence, or is at the
very path of its receipt (beside it, or in --receipt-dir as register names it there) and of
its digest; a manifest of the root a document was verified under. Any other is unknown: a
file nothing proves (the same name in another folder, or a folder of receipts walked without
naming it as --receipt-dir). What they say in free text is not checked: the service confirms. So is a
symbolic link or special file met under a folder walked: verify does not follow it, so what
it stands for is not checked (--exclude leaves it out on purpose).
${examples([
  'notarize verify contract.pdf',
  'notarize verify app.tar.gz --receipt app.tar.gz.notarization.json',
  'notarize verify -r dist --receipt-dir receipts --json',
  '# CI: before release, refuse artifacts whose receipts do not match',
  'notarize verify -r dist --receipt-dir receipts --quiet || { echo "unnotarized artifacts"; exit 1; }',
])}`,
    )
    .action(async (paths: string[], raw: unknown) => {
      const ctx = context();
      const flags = parseOptions(optionsSchema, raw, command);
      const services = { io: ctx.io, ...readOnlyStore(ctx) };
      await finishItems(await viewOf(ctx, flags.output), (items) => runVerify({ ...flags, paths, ...services }, items));
    });
}

const TITLE = 'notarize verify';

/**
 * The store as verify uses it: read if it is there, never made (verify
 * writes no file; as every command, it tightens the rights of the store's
 * folders, with a warning), and not needed. With no store directory, or one,
 * or a part of one, that cannot be used (not the user's, world-writable, a
 * link, config.json damaged: a warning says why), the
 * base URL is the flag's, the environment's or the default, and documents
 * are checked against their receipts only: a ledger left out can only
 * make fewer documents verified, never one more.
 */
function readOnlyStore(ctx: Context): Pick<VerifyOptions, 'baseUrl' | 'serviceStore' | 'storeDir' | 'storeEntries'> {
  // Named in NOTARIZE_CONFIG_DIR, it must be a folder notarize takes (not a relative path): refused,
  // exit 2, as by every command. It was passed over, its ledger unread, with no word of why.
  const named = ctx.env.NOTARIZE_CONFIG_DIR ? ctx.store.dir : undefined;
  let usable: boolean | undefined;
  /** Said once; a store error later (its config.json, its service's folders) makes it unusable too. */
  const unusable = (error: unknown): false => {
    if (!(error instanceof NotarizeError)) throw error;
    ctx.io.warn(`${error.message}: documents are checked against their receipts only`);
    return (usable = false);
  };
  const storeUsable = (): boolean => {
    if (usable !== undefined) return usable;
    if (!ctx.storeExists) return (usable = false);
    try {
      ctx.store.prepare();
      return (usable = true);
    } catch (error) {
      return unusable(error);
    }
  };
  // r108: config.json a link, a FIFO, another user's or damaged, or a service's folder a link or
  // world-writable, made verify exit 2 with a receipt that decides; only StoreErrors are the store's
  // (a bad --base-url or NOTARIZE_BASE_URL is refused again without it, as by every command).
  const fromStore = <T>(read: () => T, without: () => T): T => {
    if (storeUsable()) {
      try {
        return read();
      } catch (error) {
        if (!(error instanceof StoreError)) throw error;
        unusable(error);
      }
    }
    return without();
  };
  return {
    baseUrl: () =>
      fromStore(
        () => ctx.baseUrl,
        () => ctx.settingWithoutStore('baseUrl'),
      ),
    serviceStore: () =>
      fromStore<ServiceStore | undefined>(
        () => ctx.serviceStore,
        () => undefined,
      ),
    // Its files are never documents, usable or not; with none there, nothing to pass over. A folder
    // it cannot use holds none but what notarize keeps at its top: NOTARIZE_CONFIG_DIR=/tmp made every
    // document under /tmp the store's, and verify said "no documents" where it had promised receipts.
    ...(ctx.storeExists ? { storeDir: named ?? ctx.store.dir } : {}),
    ...(ctx.storeExists && !storeUsable() ? { storeEntries: (name: string) => ctx.store.ownsEntry(name) } : {}),
  };
}

/**
 * Verifies every input against its receipt or the ledger; see the module
 * comment. One document named alone and verified gives its record;
 * otherwise (one that cannot be read too) each result goes to `items` as it settles.
 */
export async function runVerify(
  options: VerifyOptions,
  items = new ItemResults(),
): Promise<RecordResult | ItemsResult> {
  const { io } = options;
  // A link or special file under a folder walked: not followed, so what it stands for goes
  // unchecked, and a release check must not pass over it (a link out of dist ships its target).
  let unfollowed = 0;
  const expansion = await expandInputs(options.paths, toInputOptions(options), io.stdin, (s) => {
    // The store met among what is checked ships with it, its token included: never a pass.
    if (s.ownStore) return items.addUnordered(failedResult(s.path, null, storeInside(s.path)));
    unfollowed++;
    items.addUnordered(failedResult(s.path, null, notFollowed(s.path, s.reason)));
  });
  const outputs = new WalkOutputs();
  const { documents, sources } = await receiptSources(options, expansion, outputs);
  const baseUrl = options.baseUrl();
  const ledger = options.serviceStore();
  const { index, problems } = ledger ? await LedgerIndex.load(ledger) : { index: new LedgerIndex([]), problems: [] };
  for (const problem of problems) io.warn(`${problem.message}; ${problem.hint ?? ''}`);
  const evidence = new Evidence(sources, index);
  const pool = new HashPool(expansion.single ? 1 : undefined);
  let only: Checked | undefined;
  const elsewhere = new ElsewhereReceipts(baseUrl);
  const namesakes = new LaterNamesakes();
  try {
    await runAll(
      documents,
      async (item, i): Promise<Checked> => {
        if (item.kind === 'unusable') throw item.error;
        // HashPool.hash already hashes in this thread for a pool of one.
        const hash =
          item.kind === 'stdin' ? await hashStream(io.stdin) : (await pool.hash(item.path, item.listed)).hash;
        return { hash, finding: await evidence.judge(item, i, hash) };
      },
      {
        concurrency: pool.size * 4,
        onSettled: (i, r, item) => {
          if (expansion.single && r.ok) only = r.value;
          if (r.ok) {
            elsewhere.add(r.value.finding);
            namesakes.add(item, r.value.finding);
            const { hash, finding } = r.value;
            outputs.checked(item, hash, finding, evidence.namedReceipt(item, i, hash), evidence.digestReceipt(hash));
          }
          items.add(i, toResult(item, r, baseUrl));
        },
      },
    );
  } finally {
    await pool.close();
  }
  // Passed over as expected (the receipts of the documents checked): said once, not a warning each.
  let passedOver = 0;
  // Receipts and manifests walked that no document checked is under: unknown, with a hint of their own.
  let strays = 0;
  outputs.settle(
    (path, reason) => {
      passedOver++;
      items.skip(skippedResult(path, reason));
    },
    (path, reason) => {
      strays++;
      items.addUnordered(itemResult(path, null, 'unknown', { reason }));
    },
  );
  if (passedOver > 0) {
    io.info(
      `passed over ${passedOver} receipt${passedOver === 1 ? ' or tree manifest' : 's and tree manifests'} of the documents checked (not documents)`,
    );
  }
  elsewhere.warn(io);
  namesakes.warn(io);
  // One document verified prints its record, unless results stream (NDJSON): then its line.
  if (expansion.single && !items.streams && only?.finding.status === 'verified') {
    const results = items.list();
    const { file, verificationUrl } = results[0]!;
    return {
      kind: 'record',
      // The registered digest: the document's, or the Merkle root's it is a leaf of.
      hash: only.finding.proof?.root ?? only.hash,
      recordJson: only.finding.recordJson!,
      baseUrl: only.finding.baseUrl ?? baseUrl,
      note:
        (only.finding.source === 'receipt'
          ? `verified: ${file} matches ${only.finding.byDigest ? `the receipt ${only.finding.receipt}, one of its digest` : 'its receipt'}; the receipt's record can be confirmed at ${verificationUrl}`
          : `verified: ${file} is notarized`) + underRoot(only.finding.proof, only.finding.source),
      github: { title: TITLE, results },
    };
  }
  const failure = verifyFailure(items.counts, {
    baseUrl,
    unfollowed,
    strays,
    receiptDir: options.receiptDir,
    ledgerSearched: ledger !== undefined,
  });
  return { kind: 'items', title: TITLE, items, ...(failure ? { failure } : {}) };
}

/**
 * Receipts that verified but name another service than the one configured:
 * anyone can write a receipt, so the page it sends the reader to confirm
 * the registration is the receipt writer's choice. Said once, after the run.
 */
class ElsewhereReceipts {
  readonly #baseUrl: string;
  #count = 0;
  #first = { service: '', receipt: '' };

  constructor(baseUrl: string) {
    this.#baseUrl = baseUrl;
  }

  add(finding: Finding): void {
    if (finding.status !== 'verified' || finding.source !== 'receipt' || finding.baseUrl === undefined) return;
    // Both without a final slash (readReceipt, parseBaseUrl).
    if (finding.baseUrl === this.#baseUrl) return;
    if (this.#count++ === 0) this.#first = { service: finding.baseUrl, receipt: finding.receipt ?? '' };
  }

  warn(io: IO): void {
    if (this.#count === 0) return;
    const { service, receipt } = this.#first;
    const which = this.#count === 1 ? `the receipt ${receipt}` : `${this.#count} receipts (among them ${receipt})`;
    io.warn(
      `${which} name${this.#count === 1 ? 's' : ''} the service ${service}, not ${this.#baseUrl}: a receipt is evidence, ` +
        'not a signature; confirm the registration at its verification page only if you trust that service',
    );
  }
}

/**
 * Documents verified by the ledger with a doubt it cannot settle
 * (LedgerIndex.verdict): their names notarized later with another digest
 * (an older build swapped in is among what they may be: r97), or their
 * bytes known under another name only while their names were notarized
 * with other digests (another document's bytes copied over them: r117).
 * Each result's reason says so; one warning of each after the run says it
 * where a script reading exit 0 looks.
 */
class LaterNamesakes {
  readonly #later = { count: 0, first: '' };
  readonly #otherwise = { count: 0, first: '' };

  add(item: InputItem, finding: Finding): void {
    if (finding.status !== 'verified') return;
    for (const [flag, tally] of [
      [finding.laterNamesake, this.#later],
      [finding.namedOtherwise, this.#otherwise],
    ] as const) {
      if (flag && tally.count++ === 0) tally.first = itemName(item);
    }
  }

  warn(io: IO): void {
    const which = ({ count, first }: { count: number; first: string }) =>
      count === 1 ? first : `${count} documents (among them ${first})`;
    const names = (count: number) => (count === 1 ? 'that name' : 'their names');
    if (this.#later.count > 0) {
      io.warn(
        `${which(this.#later)}: verified by the ledger, whose latest notarization of ${names(this.#later.count)} is of another digest: ` +
          'if of the same file, an older build was checked; the ledger keeps names without their folders and cannot tell: ' +
          'verify against the receipts register wrote (--receipt-dir)',
      );
    }
    if (this.#otherwise.count > 0) {
      io.warn(
        `${which(this.#otherwise)}: verified by the ledger, which has these bytes under another name only, while ` +
          `${names(this.#otherwise.count)} ${this.#otherwise.count === 1 ? 'was' : 'were'} notarized with other digests: ` +
          `if another document's bytes were copied over ${this.#otherwise.count === 1 ? 'it' : 'them'}, the ledger cannot ` +
          'tell that from a copy under this name: ' +
          'verify against the receipts register wrote (--receipt-dir)',
      );
    }
  }
}

/** The error of a path a walk met and did not follow (see runVerify). */
function notFollowed(path: string, reason: string): InputFileError {
  const why = `${reason}: verify does not follow it, so what it stands for is not checked`;
  return new InputFileError(path, why, {
    code: 'not_followed',
    message: `${path}: ${why}`,
    hint: 'verify what it points to by its own path, or leave it out with --exclude if it is not shipped',
  });
}

/** The error of the store's folder, or a file of it, met among the documents checked (core/inputs.ts storeDir). */
function storeInside(path: string): InputFileError {
  const why = 'part of the notarize store, which holds your token: it would ship with what is checked';
  return new InputFileError(path, why, {
    code: 'store_inside',
    message: `${path}: ${why}`,
    hint: 'keep the store (NOTARIZE_CONFIG_DIR) outside the folders you ship, e.g. under $RUNNER_TEMP',
  });
}

/** A document's digest and what it was found to be. */
interface Checked {
  hash: string;
  finding: Finding;
}

/**
 * The documents to check, and where their receipts are looked for. With
 * --receipt-dir the list is read first, as register does, so that each
 * document gets the receipt name register gave it (names are chosen over
 * the whole run); receipts found walking a directory are outputs, not
 * documents, and are passed over (verify-outputs.ts).
 */
async function receiptSources(
  options: VerifyOptions,
  expansion: Awaited<ReturnType<typeof expandInputs>>,
  outputs: WalkOutputs,
): Promise<{ documents: Iterable<InputItem> | AsyncIterable<InputItem>; sources: ReceiptSources }> {
  if (options.receipt !== undefined) {
    if (!expansion.single) {
      throw new UsageError('--receipt checks one document: name exactly one', {
        hint: 'for several documents use --receipt-dir, or keep each receipt beside its document',
      });
    }
    if (options.receipt === '-' && expansion.stdinNamed) {
      throw new UsageError('standard input cannot be both the document and its receipt', {
        hint: 'name the receipt file, or give the document as a file',
      });
    }
    const text = await readJsonInput(options.receipt, options.io.stdin, MAX_RECEIPT_BYTES, 'the receipt');
    return { documents: expansion.items, sources: { receipt: { path: options.receipt, text } } };
  }
  if (options.receiptDir !== undefined) checkReceiptDir(options.receiptDir);
  const inReceiptDir = options.receiptDir === undefined ? undefined : insideDir(options.receiptDir);
  const walked = expansion.single ? expansion.items : outputs.documents(expansion.items, inReceiptDir);
  if (options.receiptDir === undefined) return { documents: walked, sources: {} };
  const all: InputItem[] = [];
  for await (const item of walked) all.push(item);
  // Named as register named its documents: a file in --receipt-dir was none (register passed it over).
  const names = receiptNames(
    all.map((item) =>
      item.kind === 'stdin' || (item.kind === 'unusable' && item.error.code === INSIDE_RECEIPT_DIR)
        ? {}
        : { path: item.path, ...(item.kind === 'file' && item.relative ? { relative: item.relative } : {}) },
    ),
  );
  return { documents: all, sources: { receiptDir: { dir: options.receiptDir, names } } };
}

/**
 * A --receipt-dir that is no folder is a mistake to say, not an empty one:
 * the ledger alone would then decide, and a mistyped path pass on a machine
 * whose store has the documents.
 */
function checkReceiptDir(dir: string): void {
  let reason: string | undefined;
  if (parentAfterName(dir)) reason = PARENT_AFTER_NAME;
  else
    try {
      if (!statSync(dir).isDirectory()) reason = 'not a directory';
    } catch (error) {
      reason = fileErrorReason(error as NodeJS.ErrnoException);
    }
  if (reason === undefined) return;
  throw new UsageError(`cannot read receipts from --receipt-dir '${dir}': ${reason}`, {
    code: 'receipt_dir_unusable',
    hint: 'name the folder `register --receipt-dir` wrote the receipts to',
  });
}

/**
 * What ends a run whose documents are not all verified. Nothing is ever sent
 * by verify, so a document that cannot be read is exit 2 (it comes before 6).
 */
function verifyFailure(
  counts: ReadonlyMap<ItemStatus, number>,
  {
    baseUrl,
    unfollowed,
    strays,
    receiptDir,
    ledgerSearched,
  }: {
    baseUrl: string;
    unfollowed: number;
    /** Of the unknown, the receipts and tree manifests walked that belong to no document checked. */
    strays: number;
    receiptDir: string | undefined;
    ledgerSearched: boolean;
  },
): NotarizeError | undefined {
  // The paths not followed are among the failed (ItemResults.addUnordered).
  let checked = 0;
  for (const n of counts.values()) checked += n;
  const unreadable = counts.get('failed') ?? 0;
  if (unreadable > 0) {
    return new UsageError(`${unreadable} of ${checked} document${checked === 1 ? '' : 's'} could not be checked`, {
      code: 'batch_failed',
      ...(unfollowed > 0
        ? {
            hint: `${unfollowed} of them ${unfollowed === 1 ? 'is a link or special file' : 'are links or special files'} (not followed): verify their targets, or leave them out with --exclude`,
          }
        : {}),
    });
  }
  const bad = checked - (counts.get('verified') ?? 0);
  if (bad === 0) return undefined;
  const what = (['modified', 'invalid', 'unknown'] as const)
    .filter((status) => counts.has(status))
    .map((status) => `${counts.get(status)} ${status}`)
    .join(', ');
  // No usable store (none here, or one refused with a warning): receipts alone were searched.
  const noLedger = 'no ledger was searched (no usable store)';
  const hints = [
    ...(strays > 0 ? [straysHint(strays)] : []),
    ...((counts.get('unknown') ?? 0) > strays
      ? [
          receiptDir === undefined
            ? `unknown: give its receipt (--receipt, --receipt-dir, or <document>${RECEIPT_SUFFIX} beside it)` +
              (ledgerSearched ? `, or check --base-url (the ledger of ${baseUrl} was searched)` : `; ${noLedger}`)
            : `unknown: ${receiptDir} holds no receipt of it (with --receipt-dir, none beside a document is read) ` +
              (ledgerSearched
                ? `and the ledger of ${baseUrl} has none: check --receipt-dir and --base-url`
                : `and ${noLedger}: check --receipt-dir`) +
              ' (a document whose receipt was never written or not kept has none to find: the service sends a ' +
              'record once, to the run that paid)',
        ]
      : []),
    ...(counts.has('modified') || counts.has('invalid')
      ? ['modified or invalid: the document, or its receipt, is not what was registered']
      : []),
  ];
  return new NotNotarizedError(
    `${bad} of ${checked} document${checked === 1 ? ' is' : 's are'} not verified (${what})`,
    {
      hint: hints.join('; '),
    },
  );
}

/**
 * The hint for the receipts and manifests among the files checked that no
 * document checked is under. No claim that nothing proves them: a receipt
 * of a document renamed since proves that document, and one registered as a
 * document of its own is checked as one when named in a run of its own (r97:
 * named beside the walk that met it, it was both verified and unknown).
 */
function straysHint(strays: number): string {
  const [these, lines, them] =
    strays === 1
      ? ['a receipt or tree manifest', 'its line', 'it']
      : [`${strays} receipts or tree manifests`, 'their lines', 'them'];
  return (
    `unknown: ${these} among the files checked that no document checked is under (see ${lines}): a receipt of a ` +
    'document renamed since proves that document with --receipt; one registered as a document of its own (named ' +
    'or listed: a walk of register passes them over) is checked as one when named in a verify run of its own; ' +
    `else leave ${them} out of the files checked (--exclude)`
  );
}

/** What a note adds for a document verified as a leaf of a registered Merkle root. */
export function underRoot(proof: InclusionProof | undefined, source: Finding['source']): string {
  if (!proof) return '';
  // The ledger's own tree says where the leaf is. A receipt's proof binds the leaf, its path
  // and the root, not the (index, size) pair (docs/verify-by-hand.md): the index is its word.
  if (source === 'receipt')
    return ` (under the registered Merkle root ${proof.root}; the receipt puts it at leaf ${proof.leafIndex})`;
  return ` (leaf ${proof.leafIndex} under the registered Merkle root ${proof.root})`;
}

/** The JSON result of one document. */
function toResult(item: InputItem, r: Settled<Checked>, baseUrl: string): ItemResult {
  const file = itemName(item);
  if (!r.ok) return 'error' in r ? failedResult(file, null, r.error) : itemResult(file, null, 'failed');
  const { hash, finding } = r.value;
  const { status, source, receipt, reason, recordJson } = finding;
  return itemResult(file, hash, status, {
    ...(source ? { source } : {}),
    ...(status === 'verified' ? proofOf(finding.baseUrl ?? baseUrl, hash, recordJson, finding.proof) : {}),
    ...(receipt ? { receipt } : {}),
    ...(reason ? { reason } : {}),
  });
}

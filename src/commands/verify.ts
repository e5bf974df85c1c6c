/**
 * `notarize verify <file...>`: re-hash documents and look the digests up in
 * the local ledger, with no network at all. Exit 6 when a document is
 * unknown or was modified since it was notarized.
 */
import type { Command } from 'commander';
import { basename } from 'node:path';
import { z } from 'zod';
import type { Context } from '../context.js';
import { runAll, type Settled } from '../core/batch.js';
import { hashStream } from '../core/hash.js';
import { HashPool } from '../core/hash-pool.js';
import { expandInputs, itemName, type InputItem } from '../core/inputs.js';
import { LedgerIndex, type Verdict } from '../core/ledger.js';
import { NotNotarizedError, UsageError, type NotarizeError } from '../errors.js';
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
import { addInputOptions, inputOptionsShape, toInputOptions } from './input-options.js';
import { examples, parseOptions } from './options.js';

export const optionsSchema = z.object({ ...inputOptionsShape });

/** What `verify` uses: the documents named, standard input, and the ledger (no network). */
export interface VerifyOptions extends z.infer<typeof optionsSchema> {
  paths: string[];
  /** Standard input, and warnings as they happen. */
  io: IO;
  baseUrl: () => string;
  ledger: () => ServiceStore;
}

export function configure(command: Command, context: () => Context): void {
  addInputOptions(command.argument('[paths...]', "documents to check ('-' reads standard input)"))
    .addHelpText(
      'after',
      `\nNo network: the digest is looked up in the local ledger of the current service.
verified: the digest is in the ledger (the record and its public verification page are printed);
modified: a document of this name was notarized with another digest; unknown: not in the ledger.
A document that cannot be read (missing, unreadable, not a regular file) is a failed
result and the others go on. Exit 0 when every document is verified; 2 when one could not
be read (nothing is ever sent); else 6.
${examples([
  'notarize verify contract.pdf',
  'notarize verify -r dist --json',
  '# CI: before release, refuse artifacts that were not notarized at build time',
  'notarize verify -r dist --quiet || { echo "unnotarized artifacts"; exit 1; }',
])}`,
    )
    .action(async (paths: string[], raw: unknown) => {
      const ctx = context();
      const flags = parseOptions(optionsSchema, raw, command);
      const services = { io: ctx.io, baseUrl: () => ctx.baseUrl, ledger: () => ctx.ledger };
      await finishItems(viewOf(ctx), (items) => runVerify({ ...flags, paths, ...services }, items));
    });
}

function describeVerdict(verdict: Verdict): string | undefined {
  if (verdict.status === 'unknown')
    return verdict.damaged && `its ledger entry is no proof: ${verdict.damaged.message}`;
  if (verdict.status !== 'modified') return undefined;
  return `'${verdict.entry.file?.name}' was notarized with digest ${verdict.entry.hash} (${verdict.entry.completedAt})`;
}

const TITLE = 'notarize verify';

/**
 * Verifies every input against the ledger; see the module comment. One
 * document named alone and verified gives its record; otherwise each result
 * goes to `items` as it settles.
 */
export async function runVerify(
  options: VerifyOptions,
  items = new ItemResults(),
): Promise<RecordResult | ItemsResult> {
  const { io } = options;
  const expansion = await expandInputs(options.paths, toInputOptions(options), io.stdin, (s) => {
    io.warn(`skipped ${s.path}: ${s.reason}`);
    items.skip(skippedResult(s.path, s.reason));
  });
  const baseUrl = options.baseUrl();
  const { index, problems } = await LedgerIndex.load(options.ledger());
  for (const problem of problems) io.warn(`${problem.message}; ${problem.hint ?? ''}`);
  const pool = new HashPool(expansion.single ? 1 : undefined);
  let only: { hash: string; verdict: Verdict } | undefined;
  let singleError: NotarizeError | undefined;
  try {
    await runAll(
      expansion.items,
      async (item) => {
        if (item.kind === 'unusable') throw item.error;
        // HashPool.hash already hashes in this thread for a pool of one.
        const hash = item.kind === 'stdin' ? await hashStream(io.stdin) : (await pool.hash(item.path)).hash;
        return { hash, verdict: index.verdict(hash, item.kind === 'file' ? basename(item.path) : undefined) };
      },
      {
        concurrency: pool.size * 4,
        onSettled: (i, r, item) => {
          if (expansion.single) {
            if (r.ok) only = r.value;
            else if ('error' in r) singleError = r.error;
          }
          items.add(i, toResult(item, r, baseUrl));
        },
      },
    );
  } finally {
    await pool.close();
  }
  // One document named alone that cannot be read: the command's one-line error, as for any usage error.
  if (singleError) throw singleError;
  if (expansion.single && only?.verdict.status === 'verified') {
    const results = items.list();
    return {
      kind: 'record',
      hash: only.hash,
      recordJson: only.verdict.entry.recordJson,
      baseUrl,
      note: `verified: ${results[0]!.file} is notarized`,
      github: { title: TITLE, results },
    };
  }
  const failure = verifyFailure(items.counts, baseUrl);
  return { kind: 'items', title: TITLE, items, ...(failure ? { failure } : {}) };
}

/**
 * What ends a run whose documents are not all verified. Nothing is ever sent
 * by verify, so a document that cannot be read is exit 2 (it comes before 6).
 */
function verifyFailure(counts: ReadonlyMap<ItemStatus, number>, baseUrl: string): NotarizeError | undefined {
  let checked = 0;
  for (const n of counts.values()) checked += n;
  const unreadable = counts.get('failed') ?? 0;
  if (unreadable > 0) {
    return new UsageError(`${unreadable} of ${checked} document${checked === 1 ? '' : 's'} could not be read`, {
      code: 'batch_failed',
    });
  }
  const bad = checked - (counts.get('verified') ?? 0);
  if (bad === 0) return undefined;
  return new NotNotarizedError(
    `${bad} of ${checked} document${checked === 1 ? ' is' : 's are'} not notarized in the ledger of ${baseUrl}`,
    {
      hint:
        'register them with `notarize register`, or check --base-url; a document the service already had ' +
        '(409) has no record in this store: verify with the store that registered it',
    },
  );
}

/** The JSON result of one document. */
function toResult(item: InputItem, r: Settled<{ hash: string; verdict: Verdict }>, baseUrl: string): ItemResult {
  const file = itemName(item);
  if (!r.ok) return 'error' in r ? failedResult(file, null, r.error) : itemResult(file, null, 'failed');
  const { hash, verdict } = r.value;
  const reason = describeVerdict(verdict);
  return itemResult(file, hash, verdict.status, {
    ...(verdict.status === 'verified' ? proofOf(baseUrl, hash, verdict.entry.recordJson) : {}),
    ...(reason ? { reason } : {}),
  });
}

/**
 * The per-item results of batch commands (`register`, `verify` over several
 * inputs): the one builder of a result, and the collection a batch hands
 * each result to as it settles (present.ts decides what it prints and
 * keeps). The shape is documented in the README under "Batch output"; bump
 * RESULT_SCHEMA_VERSION on any incompatible change.
 */
import { verificationUrl } from '../api/pages.js';
import type { Outcome } from '../core/notarize.js';
import type { InclusionProof } from '../core/receipt-format.js';
import { errorJson, type ErrorJson, type NotarizeError } from '../errors.js';
import { ExactJson } from '../exact-json.js';

export const RESULT_SCHEMA_VERSION = 1;

export type ItemStatus =
  | 'registered'
  | 'already-registered'
  | 'pending'
  | 'verified'
  | 'modified'
  | 'unknown'
  | 'invalid'
  | 'failed'
  | 'skipped';

/** One input's result, as printed in JSON. */
export interface ItemResult {
  schemaVersion: typeof RESULT_SCHEMA_VERSION;
  /** The path as given or found; '-' for standard input; null for --hash. */
  file: string | null;
  hash: string | null;
  status: ItemStatus;
  /**
   * The notarization record, as the service sent it; null for a hash the
   * service says is registered (409) that this store has no record of.
   */
  record?: unknown;
  /** For `already-registered` on the service's word: what its answer said (null if nothing). */
  message?: string | null;
  /** For `pending`: the subscription session, as the service sent it. */
  session?: unknown;
  /** The public page of the registered digest: the document's, or the Merkle root's it is under. */
  verificationUrl?: string;
  /**
   * For a document registered under a Merkle root (register --aggregate):
   * its inclusion proof, as its receipt carries it; the record is the root's.
   */
  proof?: InclusionProof;
  /** For `verify`: what decided, a receipt or the ledger. */
  source?: 'receipt' | 'ledger';
  /** Where a receipt was written (register --receipt-dir), or the receipt `verify` checked against. */
  receipt?: string;
  /**
   * Why an item was skipped, or what is wrong for `modified`, `invalid` (and a
   * damaged ledger entry for `unknown`); for `already-registered` with no
   * record here, where the unreadable answer that may hold it is kept.
   */
  reason?: string;
  error?: ErrorJson;
}

/** What an item's result says besides its file, hash and status. */
export type ItemDetails = Omit<ItemResult, 'schemaVersion' | 'file' | 'hash' | 'status'>;

/** The one builder of an item's result: every result of every batch command is made here. */
export function itemResult(
  file: string | null,
  hash: string | null,
  status: ItemStatus,
  details: ItemDetails = {},
): ItemResult {
  return { schemaVersion: RESULT_SCHEMA_VERSION, file, hash, status, ...details };
}

/** The result of an input that was not processed, and why (a symbolic link, --fail-fast...). */
export function skippedResult(file: string | null, reason: string): ItemResult {
  return itemResult(file, null, 'skipped', { reason });
}

/** The digest a registration's outcome is about. */
function outcomeHash(outcome: Outcome): string {
  return outcome.kind === 'already-registered' ? outcome.hash : outcome.entry.hash;
}

const STATUS_OF: Record<Outcome['kind'], ItemStatus> = {
  'already-registered': 'already-registered',
  pending: 'pending',
  completed: 'registered',
};

/** A document registered under a Merkle root: its digest, and its proof to that root (whose record is the outcome's). */
export interface UnderRoot {
  sha256: string;
  proof: InclusionProof;
}

/**
 * The result of an item whose registration ended with `outcome` (register,
 * complete of several, register --aggregate): its session when left
 * pending, else the record and what the service said. `details` come after,
 * `status` overrides (a registration whose receipt could not be written is
 * `failed`). `under`: a document under a Merkle root, whose registration
 * `outcome` is; the result is the document's, with its proof to the root.
 */
export function outcomeResult(
  file: string | null,
  outcome: Outcome,
  baseUrl: string,
  { details = {}, status, under }: { details?: ItemDetails; status?: ItemStatus; under?: UnderRoot } = {},
): ItemResult {
  const hash = under?.sha256 ?? outcomeHash(outcome);
  if (outcome.kind === 'pending') {
    const session = embed(outcome.entry.sessionJson);
    return itemResult(file, hash, 'pending', under ? { session, proof: under.proof } : { session });
  }
  const said = outcome.kind === 'already-registered' ? outcome.service : undefined;
  return itemResult(file, hash, status ?? STATUS_OF[outcome.kind], {
    ...proofOf(baseUrl, hash, outcome.entry?.recordJson, under?.proof),
    ...(said ? { message: said.message ?? null } : {}),
    ...(said?.answerKeptAside ? { reason: keptAsideReason(said.answerKeptAside) } : {}),
    ...details,
  });
}

/** Why an already-registered result has no record: its completion's answer was not taken for one, and is in quarantine/. */
function keptAsideReason(file: string): string {
  return `no record here: the answer its completion got was not taken for its record, and is kept in ${file}, with why`;
}

/**
 * What outcomeResult adds for a registration's receipt (--receipt-dir): its
 * path, and what failed once the registration itself went through (the
 * receipt could not be written, or the custody metadata not sent), which
 * fails the result; the record is still in it.
 */
export function receiptDetails(
  receipt: string | undefined,
  failure: NotarizeError | undefined,
): { details: ItemDetails; status?: 'failed' } {
  return {
    details: { ...(receipt ? { receipt } : {}), ...(failure ? { error: errorJson(failure) } : {}) },
    ...(failure ? { status: 'failed' as const } : {}),
  };
}

/** The failed results that carry an answer of the service the store could not save (UnsavedAnswer). */
const CARRY_UNSAVED = new WeakSet<ItemResult>();

/**
 * The result of an input that failed, with the hash when it was known before
 * the failure; with the record or session the store could not save, exactly
 * as the service sent it (its only copy: ItemResults has it shown at once).
 */
export function failedResult(file: string | null, hash: string | null, error: NotarizeError): ItemResult {
  const { unsaved } = error;
  const result = itemResult(file, hash, 'failed', {
    ...(unsaved ? { [unsaved.what]: embed(unsaved.text) } : {}),
    error: errorJson(error),
  });
  if (unsaved) CARRY_UNSAVED.add(result);
  return result;
}

/**
 * What a result says of a hash the ledger (or the service) holds: the record
 * as the service sent it (null when this store has none) and its public page;
 * for a document under a Merkle root, the root's page and the proof to it.
 */
export function proofOf(
  baseUrl: string,
  hash: string,
  recordJson: string | undefined,
  inclusion?: InclusionProof,
): ItemDetails {
  return {
    record: recordJson === undefined ? null : embed(recordJson),
    verificationUrl: verificationUrl(baseUrl, inclusion?.root ?? hash),
    ...(inclusion ? { proof: inclusion } : {}),
  };
}

/**
 * A result without the service's record or session, nor a Merkle proof, for
 * batches that hold every result until the end only to print a table or a
 * summary: kept small however many documents there are.
 */
export function compact(result: ItemResult): ItemResult {
  const rest = { ...result };
  delete rest.record;
  delete rest.session;
  delete rest.proof;
  return rest;
}

/**
 * Stored service text for embedding in a result: written exactly as the
 * service sent it (exact-json.ts); text that is not JSON is embedded as a string.
 */
export function embed(text: string): ExactJson | string {
  return ExactJson.of(text) ?? text;
}

/** How much of each result a batch keeps until its end: all of it (--json), a compact copy (a table), or none. */
export type Keep = 'whole' | 'compact' | 'none';

export interface ItemResultsOptions {
  /** Default 'whole': everything a test or a JSON array needs. */
  keep?: Keep;
  /** Called with each result as it settles (and each path skipped as met): an NDJSON stream. */
  onResult?: (result: ItemResult) => void;
  /** Resolves when the output can take more; a batch awaits it before starting each item. */
  ready?: () => Promise<void>;
  /**
   * Called at once with each failed result carrying an answer the store
   * could not save (failedResult), unless results stream (onResult): a
   * table or a JSON array printed at the end must not be its only copy.
   */
  onUnsaved?: (result: ItemResult) => void;
}

/**
 * The results of a batch's items, handed in as they settle (in any order)
 * and kept in input order for the end, with the paths skipped while the
 * inputs were walked after them. Only what `keep` says is held, so a
 * streamed batch of millions holds nothing but counts.
 */
export class ItemResults {
  readonly keep: Keep;
  readonly #onResult: ((result: ItemResult) => void) | undefined;
  readonly #ready: () => Promise<void>;
  readonly #onUnsaved: ((result: ItemResult) => void) | undefined;
  readonly #held: ItemResult[] = [];
  readonly #skipped: ItemResult[] = [];
  /** By status, in the order statuses first settled: the summary of a batch that keeps nothing. */
  readonly #counts = new Map<ItemStatus, number>();
  /** The paths skipped while walking that were streamed, not kept: still in the summary (skip). */
  #skippedStreamed = 0;

  constructor(options: ItemResultsOptions = {}) {
    this.keep = options.keep ?? 'whole';
    this.#onResult = options.onResult;
    this.#ready = options.ready ?? (() => Promise.resolve());
    this.#onUnsaved = options.onResult ? undefined : options.onUnsaved;
  }

  /** True when each result is passed on as it settles. */
  get streams(): boolean {
    return this.#onResult !== undefined;
  }

  /** Takes the result of the item at `index` (input order). */
  add(index: number, result: ItemResult): void {
    this.#passOn(result);
    if (this.keep !== 'none') this.#held[index] = this.keep === 'whole' ? result : compact(result);
  }

  /** What every result taken gets, in or out of the input order: counted, streamed, its unsaved answer shown. */
  #passOn(result: ItemResult): void {
    this.#counts.set(result.status, (this.#counts.get(result.status) ?? 0) + 1);
    this.#onResult?.(result);
    if (CARRY_UNSAVED.has(result)) this.#onUnsaved?.(result);
  }

  /**
   * Takes the result of an item with no place in the input order (a path a
   * walk met and could not take, which still decides the run): counted,
   * streamed, and kept after the items, as add does with the others.
   */
  addUnordered(result: ItemResult): void {
    this.#passOn(result);
    if (this.keep !== 'none') this.#skipped.push(this.keep === 'whole' ? result : compact(result));
  }

  /**
   * Takes a path passed over while walking: streamed as met, else listed
   * after the items; in the summary either way (r101: NDJSON printed two
   * results, the summary said "1 item"), never in `counts`.
   */
  skip(result: ItemResult): void {
    if (this.#onResult) {
      this.#onResult(result);
      this.#skippedStreamed++;
    } else this.#skipped.push(result);
  }

  /** How many items settled with each status (the paths skipped while walking are not items). */
  get counts(): ReadonlyMap<ItemStatus, number> {
    return this.#counts;
  }

  /** See ItemResultsOptions.ready. */
  ready(): Promise<void> {
    return this.#ready();
  }

  /** What was kept: the items in input order, then the paths skipped. */
  list(): ItemResult[] {
    return [...this.#held, ...this.#skipped];
  }

  /**
   * One line: how many items, how many of each status (in input order when
   * kept, else as they settled); "0 items" alone for none (`complete --all`
   * with nothing pending).
   */
  summary(): string {
    const counts = new Map(this.keep === 'none' ? this.#counts : countStatuses(this.list()));
    if (this.#skippedStreamed > 0) counts.set('skipped', (counts.get('skipped') ?? 0) + this.#skippedStreamed);
    let total = 0;
    for (const n of counts.values()) total += n;
    if (total === 0) return '0 items';
    const parts = [...counts].map(([status, n]) => `${n} ${status}`);
    return `${total} item${total === 1 ? '' : 's'}: ${parts.join(', ')}`;
  }
}

/** How many results have each status, in the order statuses first appear. */
export function countStatuses(results: readonly ItemResult[]): Map<ItemStatus, number> {
  const counts = new Map<ItemStatus, number>();
  for (const r of results) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
  return counts;
}

/** A digest of `hash`, or why its input could not be hashed. */
export type Checksum = { file: string; hash: string } | { file: string; error: NotarizeError };

export interface ChecksumsOptions {
  /** Default true: every checksum is kept for the end (a JSON array, a test). */
  keep?: boolean;
  /** Called with each checksum as it comes, in input order: sha256sum lines. */
  onChecksum?: (checksum: Checksum) => void;
  /** Resolves when the output can take more; `hash` awaits it before starting each input. */
  ready?: () => Promise<void>;
}

/** The checksums of `hash`, handed in input order: passed on as they come, and kept if asked. */
export class Checksums {
  readonly #keep: boolean;
  readonly #onChecksum: ((checksum: Checksum) => void) | undefined;
  readonly #ready: () => Promise<void>;
  readonly #kept: Checksum[] = [];

  constructor(options: ChecksumsOptions = {}) {
    this.#keep = options.keep ?? true;
    this.#onChecksum = options.onChecksum;
    this.#ready = options.ready ?? (() => Promise.resolve());
  }

  /** Takes the next checksum in input order. */
  add(checksum: Checksum): void {
    this.#onChecksum?.(checksum);
    if (this.#keep) this.#kept.push(checksum);
  }

  /** See ChecksumsOptions.ready. */
  ready(): Promise<void> {
    return this.#ready();
  }

  /** What was kept, in input order. */
  list(): readonly Checksum[] {
    return this.#kept;
  }
}

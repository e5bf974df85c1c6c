/**
 * The per-item result objects of batch commands (`register`, `verify` over
 * several inputs) and their three renderings: a JSON array (--json), one
 * object per line as items finish (--output ndjson), and a table. The shape
 * is documented in the README under "Batch output"; bump
 * RESULT_SCHEMA_VERSION on any incompatible change.
 */
import { verificationUrl } from '../api/pages.js';
import { errorJson, type ErrorJson, type NotarizeError } from '../errors.js';
import { renderTable } from './render.js';

export const RESULT_SCHEMA_VERSION = 1;

export type ItemStatus =
  'registered' | 'already-registered' | 'pending' | 'verified' | 'modified' | 'unknown' | 'failed' | 'skipped';

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
  verificationUrl?: string;
  /** Where a receipt was written (--receipt-dir). */
  receipt?: string;
  /** Why an item was skipped, or what differs for `modified`. */
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

/** The result of an input that failed, with the hash when it was known before the failure. */
export function failedResult(file: string | null, hash: string | null, error: NotarizeError): ItemResult {
  return itemResult(file, hash, 'failed', { error: errorJson(error) });
}

/**
 * What a result says of a hash the ledger (or the service) holds: the record
 * as the service sent it (null when this store has none) and its public page.
 */
export function proofOf(baseUrl: string, hash: string, recordJson: string | undefined): ItemDetails {
  return {
    record: recordJson === undefined ? null : embed(recordJson),
    verificationUrl: verificationUrl(baseUrl, hash),
  };
}

/**
 * A result without the service's record or session, for batches that hold
 * every result until the end only to print a table or a summary: kept small
 * however many documents there are.
 */
export function compact(result: ItemResult): ItemResult {
  const rest = { ...result };
  delete rest.record;
  delete rest.session;
  return rest;
}

/** Parses stored service text for embedding; text that is not JSON is embedded as a string. */
export function embed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * A one-line summary of what happened to the items, from the results or
 * from counts by status (in the order statuses first appeared).
 */
export function summarize(results: readonly ItemResult[] | ReadonlyMap<ItemStatus, number>): string {
  let counts: ReadonlyMap<ItemStatus, number>;
  if (results instanceof Map) counts = results;
  else {
    const counted = new Map<ItemStatus, number>();
    for (const r of results as readonly ItemResult[]) counted.set(r.status, (counted.get(r.status) ?? 0) + 1);
    counts = counted;
  }
  let total = 0;
  for (const n of counts.values()) total += n;
  const parts = [...counts].map(([status, n]) => `${n} ${status}`);
  return `${total} item${total === 1 ? '' : 's'}: ${parts.join(', ')}`;
}

/** The table of results: file, status, hash, and the error message of failures. */
export function renderResults(results: readonly ItemResult[], colour: boolean): string {
  return renderTable(
    ['STATUS', 'HASH', 'FILE', 'DETAIL'],
    results.map((r) => [r.status, r.hash ?? '-', r.file ?? '-', r.error?.message ?? r.reason ?? r.receipt ?? '']),
    colour,
  );
}

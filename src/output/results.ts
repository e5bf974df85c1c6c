/**
 * The per-item result objects of batch commands (`register`, `verify` over
 * several inputs) and their three renderings: a JSON array (--json), one
 * object per line as items finish (--output ndjson), and a table. The shape
 * is documented in the README under "Batch output"; bump
 * RESULT_SCHEMA_VERSION on any incompatible change.
 */
import type { NotarizeError } from '../errors.js';
import { renderTable } from './render.js';

export const RESULT_SCHEMA_VERSION = 1;

export type ItemStatus =
  'registered' | 'already-registered' | 'pending' | 'verified' | 'modified' | 'unknown' | 'failed' | 'skipped';

export interface ErrorJson {
  code: string;
  exitCode: number;
  message: string;
  hint?: string;
}

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

/** The result of an input that was not processed, and why (a symbolic link, --fail-fast...). */
export function skippedResult(file: string | null, reason: string): ItemResult {
  return { schemaVersion: RESULT_SCHEMA_VERSION, file, hash: null, status: 'skipped', reason };
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

/** The JSON form of an error. */
export function errorJson(error: NotarizeError): ErrorJson {
  return {
    code: error.code,
    exitCode: error.exitCode,
    message: error.message,
    ...(error.hint ? { hint: error.hint } : {}),
  };
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

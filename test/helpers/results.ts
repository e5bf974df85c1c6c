/**
 * Parsing what the batch commands print with --json and --output ndjson: the
 * per-item results on stdout and the one JSON error line on stderr.
 */
import type { InclusionProof } from '../../src/core/receipt-format.js';
import type { JsonError } from './assert.js';

/** The JSON result of one item, as register/verify print it. */
export interface ItemResult {
  schemaVersion: number;
  file: string | null;
  hash: string | null;
  status: string;
  record?: Record<string, unknown>;
  session?: Record<string, unknown>;
  verificationUrl?: string;
  proof?: InclusionProof;
  source?: 'receipt' | 'ledger';
  receipt?: string;
  reason?: string;
  error?: JsonError['error'];
}

/** Parses a --json array of results. */
export function parseResults(stdout: string): ItemResult[] {
  const value: unknown = JSON.parse(stdout);
  if (!Array.isArray(value)) throw new Error(`expected a JSON array, got: ${stdout.slice(0, 200)}`);
  return value as ItemResult[];
}

/** Parses NDJSON: every line must be a JSON object, and the output must end with a newline. */
export function parseNdjson(stdout: string): ItemResult[] {
  if (stdout !== '' && !stdout.endsWith('\n')) throw new Error('NDJSON output does not end with a newline');
  return stdout
    .split('\n')
    .slice(0, -1)
    .map((line) => JSON.parse(line) as ItemResult);
}

/** The one JSON error line --json prints on stderr (the last line). */
export function jsonError(stderr: string): JsonError['error'] {
  const lines = stderr.trimEnd().split('\n');
  return (JSON.parse(lines[lines.length - 1]!) as JsonError).error;
}

/** Counts results by status. */
export function countStatuses(results: readonly ItemResult[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of results) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
}

/** The exact result of a named document that does not exist: failed, no hash, exit code 2 ("nothing sent") of its own. */
export function missingFileResult(path: string): ItemResult {
  return {
    schemaVersion: 1,
    file: path,
    hash: null,
    status: 'failed',
    error: {
      code: 'unreadable_file',
      exitCode: 2,
      message: `cannot read '${path}': no such file or directory`,
    },
  };
}

/**
 * What a command's results become on GitHub Actions, as text: the markdown
 * table present.ts appends to $GITHUB_STEP_SUMMARY, and the `::error`
 * annotations of failed items it writes to stderr (workflow commands,
 * escaped as github.ts escapes them).
 */
import { RECEIPT_SUFFIX } from '../core/receipts.js';
import { escapeData, escapeProperty, type Redact } from './github.js';
import { countStatuses, type ItemResult } from './results.js';
import { forTerminal } from './safe-text.js';

/**
 * A markdown table cell, shown as the text it is: escaped as for a terminal
 * (no line breaks, no bidi overrides), then every character markdown or
 * HTML could act on backslash-escaped (GitHub renders both in a summary,
 * and a file name or a receipt's URL is anyone's to write).
 */
function cell(text: string, redact: Redact): string {
  return forTerminal(redact(text)).replace(/[\\`*_{}[\]<>()!|~&]/g, '\\$&');
}

/**
 * A markdown link to `url` that cannot end its cell or its row: an http(s)
 * URL with every character markdown could read (brackets, parentheses,
 * pipes, quotes, spaces...) percent-encoded. A verification URL may come
 * from a receipt, which anyone can write; one that is no http(s) URL is
 * shown as text.
 */
function link(label: string, url: string, redact: Redact): string {
  let parsed: URL;
  try {
    parsed = new URL(redact(url));
  } catch {
    return cell(url, redact);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return cell(url, redact);
  // href is ASCII: the WHATWG serializer percent-encodes the rest.
  const target = parsed.href.replace(
    /[^A-Za-z0-9\-._~:/?#@!$&'*+,;=%]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`,
  );
  return `[${label}](${target})`;
}

/**
 * Why a result is what it is, in its own words: its error's message, else
 * its reason, else what its status means. A bare `unknown` (verify found no
 * receipt and no ledger entry) carries neither: it says so, and what to do,
 * as `notarize verify`'s hint does.
 */
export function resultDetail(r: ItemResult): string {
  return r.error?.message ?? r.reason ?? STATUS_MEANING[r.status] ?? '';
}

const STATUS_MEANING: Partial<Record<ItemResult['status'], string>> = {
  unknown:
    // Whether a ledger was searched at all (no store on a fresh runner), and which, the run's last line says.
    'not verified: no receipt of it was found, nor an entry in a ledger, where one was searched: give its receipt ' +
    `(--receipt, --receipt-dir, or <document>${RECEIPT_SUFFIX} beside it); ` +
    'a document never registered, or whose receipt was not kept, has none to find',
};

/**
 * The markdown summary of a command's results. A row's Detail is its
 * verification link, and for a result that did not end well (a failed
 * registration can have a record and a link too), or one verified with a
 * reason, its detail first: the link never hides why.
 */
export function markdownSummary(
  title: string,
  results: readonly ItemResult[],
  redact: Redact,
  maxBytes = SUMMARY_MAX_BYTES,
): string {
  const row = (r: ItemResult) => {
    // A verified one with a reason (the ledger's doubt, a receipt found by its digest) says it too (r119).
    const said = ANNOTATED.has(r.status) || !r.verificationUrl || (r.status === 'verified' && r.reason !== undefined);
    const shown = said ? cell(resultDetail(r), redact) : '';
    const url = r.verificationUrl ? link('verify', r.verificationUrl, redact) : '';
    const detail = [shown, url].filter((part) => part !== '').join(' ');
    return `| ${cell(r.file ?? '-', redact)} | ${r.status} | ${r.hash ? `\`${r.hash}\`` : '-'} | ${detail} |`;
  };
  const head = [`### ${title}`, '', '| File | Status | SHA-256 | Detail |', '|---|---|---|---|'];
  // Redacted again whole: a secret met as it is, in what was not outside text, is gone too.
  const text = (lines: string[]) => redact([...head, ...lines, ''].join('\n') + '\n');
  const rows = results.map(row);
  const whole = text(rows);
  if (Buffer.byteLength(whole) <= maxBytes) return whole;
  // GitHub refuses a step's summary over 1 MiB whole, table and all: the rows that fit, those that did
  // not end well first, and a line saying how many are left out and where they all are.
  const order = results.map((_, i) => i).sort((a, b) => rank(results[a]!) - rank(results[b]!) || a - b);
  const kept: number[] = [];
  let bytes = Buffer.byteLength(text([])) + SUMMARY_NOTE_BYTES;
  for (const i of order) {
    bytes += Buffer.byteLength(rows[i]!) + 1;
    if (bytes > maxBytes) break;
    kept.push(i);
  }
  kept.sort((a, b) => a - b);
  const tally = [...countStatuses(results)].map(([status, n]) => `${n} ${status}`).join(', ');
  const note =
    `${results.length - kept.length} more results are not shown (GitHub takes at most 1 MiB of summary per step; ` +
    `all ${results.length}: ${tally}); every result is in notarize's output (the action's \`results\` file)`;
  return text([...kept.map((i) => rows[i]!), '', note]);
}

/** GitHub refuses the whole summary of a step past this (table and all, every run of the step). */
export const STEP_SUMMARY_LIMIT = 1024 * 1024;

/**
 * How much of a step's summary one table may take at most: half, so that a
 * step that runs notarize more than once (a retry loop) keeps room for the
 * table of its last run; and never more than the step has left
 * (summaryRoom).
 */
const SUMMARY_MAX_BYTES = 512 * 1024;
/** Room kept for the line that says what was left out. */
const SUMMARY_NOTE_BYTES = 512;
/** Less room than this left in the step's summary, no table at all: its head and note alone take about that. */
export const SUMMARY_MIN_BYTES = 2 * 1024;

/**
 * How many bytes this run's table may take, when the step's summary already
 * holds `written`: the docs' retry loop runs notarize three times in one
 * step, and three tables of 512 KiB made GitHub drop the step's summary whole.
 */
export function summaryRoom(written: number): number {
  return Math.min(SUMMARY_MAX_BYTES, STEP_SUMMARY_LIMIT - written - SUMMARY_NOTE_BYTES);
}

/** Results that did not end well first (0), when not all rows fit. */
function rank(result: ItemResult): number {
  return ANNOTATED.has(result.status) ? 0 : 1;
}

/** Statuses that fail a run: a document not processed, or not verified. */
const ANNOTATED = new Set<ItemResult['status']>(['failed', 'modified', 'unknown', 'invalid']);

/** The `::error` annotations of the results that failed or were not verified, one line each. */
export function annotations(results: readonly ItemResult[], redact: Redact): string[] {
  const lines: string[] = [];
  for (const r of results) {
    if (!ANNOTATED.has(r.status)) continue;
    const file = r.file && r.file !== '-' ? `file=${escapeProperty(r.file, redact)},` : '';
    const message = resultDetail(r) || r.status;
    lines.push(
      `::error ${file}title=${escapeProperty(`notarize: ${r.status}`, redact)}::${escapeData(message, redact)}`,
    );
  }
  return lines;
}

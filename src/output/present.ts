/**
 * The one renderer of command results. A run function returns data (and
 * hands a batch's items over as they settle); this module alone turns it
 * into output: data on stdout (a table, JSON exactly as the service sent
 * it, a JSON array, an NDJSON stream, sha256sum lines), messages on stderr,
 * and in GitHub Actions a step summary and `::error` annotations.
 */
import { appendFileSync, statSync } from 'node:fs';
import { verificationUrl } from '../api/pages.js';
import type { CustodyOutcome, Outcome } from '../core/notarize.js';
import { errorJson, InputFileError, NotarizeError, TransientError } from '../errors.js';
import { inGitHubActions } from './github.js';
import { annotations, markdownSummary, SUMMARY_MIN_BYTES, summaryRoom } from './github-results.js';
import { ExactJson, memberText, stringifyExact } from '../exact-json.js';
import type { IO } from './io.js';
import type * as RenderModule from './render.js';
import { Checksums, ItemResults, type Checksum, type ItemResult } from './results.js';
import { forTerminal } from './safe-text.js';
import { checksumLine } from './wording.js';

/** How data is printed: --json (or --output json), --output ndjson, or the default table. */
export type Format = 'table' | 'json' | 'ndjson';

/** Where and how a run's results are shown. */
export interface View {
  io: IO;
  /** For GitHub Actions (GITHUB_ACTIONS, GITHUB_STEP_SUMMARY). */
  env: NodeJS.ProcessEnv;
  format: Format;
}

/** The tables and record views of render.ts. */
type Render = typeof RenderModule;

/** render.ts once loaded (loadRender). */
let loadedRender: Render | undefined;

/**
 * Loads render.ts, whose width and colour packages cost a run tens of
 * milliseconds, which a run printing JSON or NDJSON (most CI runs) has no
 * use for. A command's view loads it before the run when the run will print
 * a table (commands/action.ts viewOf): a signal's exit, once the completions
 * under way are recorded, leaves the turn the results are printed in and no
 * more, and a module read from disk then would come after it, its table never
 * shown. present() loads it itself only for a view made otherwise.
 */
export async function loadRender(): Promise<Render> {
  loadedRender ??= await import('./render.js');
  return loadedRender;
}

/** A GitHub Actions step summary: a command's item results under a title. */
export interface GitHubReport {
  title: string;
  results: readonly ItemResult[];
}

interface Ending {
  /**
   * What the run ends with once its output is shown: an error (a batch's
   * BatchError, a receipt not written...) whose exit code is the run's.
   * Thrown to main(), which maps it; absent when the run succeeded.
   */
  failure?: Error;
}

/** register (one document) and complete: what the flow did, or only the failure of the one document. */
export interface OutcomeResult extends Ending {
  kind: 'outcome';
  outcome?: Outcome;
  /** The service's, for the verification page of the hash. */
  baseUrl: string;
  /** Where the receipt was written (--receipt-dir). */
  receipt?: string;
  /** A message shown before the outcome. */
  note?: string;
  github?: GitHubReport;
}

/** show, and verify of one document: a record of the ledger. */
export interface RecordResult extends Ending {
  kind: 'record';
  hash: string;
  recordJson: string;
  /** The service's, for the verification page of the hash. */
  baseUrl: string;
  /** A message shown before the record. */
  note?: string;
  github?: GitHubReport;
}

/** register and verify of several documents. */
export interface ItemsResult extends Ending {
  kind: 'items';
  /** The GitHub step summary's title, e.g. 'notarize register'. */
  title: string;
  items: ItemResults;
}

/** hash: its checksums were printed as they came; with --json, the array. */
export interface ChecksumsResult extends Ending {
  kind: 'checksums';
  checksums: Checksums;
}

/** list, pending, config list: rows, as a JSON array or a table. */
export interface RowsResult<R = unknown> extends Ending {
  kind: 'rows';
  rows: readonly R[];
  headers: readonly string[];
  /** A row's table cells (a method: a list of any rows is a RowsResult). */
  cells(row: R): string[];
  /** The message instead of an empty table (an empty JSON array is still printed). */
  empty?: string;
  /** Shown before the rows (damaged files passed over). */
  warnings?: readonly string[];
}

/** Everything else: a value as one line of JSON with --json, else text; and messages. */
export interface ValueResult extends Ending {
  kind: 'value';
  /** With --json: printed as one line of JSON, in place of `text`. */
  json?: unknown;
  /** Without --json (or with it when there is no `json`): data on stdout, then messages. */
  text?: { data?: string; info?: readonly string[] };
  /** Messages shown in every format. */
  info?: readonly string[];
  warnings?: readonly string[];
}

export type CommandResult = OutcomeResult | RecordResult | ItemsResult | ChecksumsResult | RowsResult | ValueResult;

/**
 * Where a batch hands its item results: with NDJSON each is printed as it
 * settles; the rest is kept in input order for the end (whole for a JSON
 * array, compact for a table or a GitHub summary, nothing else).
 */
export function itemResultsFor(view: View): ItemResults {
  const { io, format } = view;
  return new ItemResults({
    keep: format === 'json' ? 'whole' : format === 'table' || inGitHubActions(view.env) ? 'compact' : 'none',
    ready: () => io.drained(),
    // Queued, written with the lines of the same turn: an aggregate settles a
    // thousand documents at once, and a write per line was a system call each.
    ...(format === 'ndjson' ? { onResult: (result: ItemResult) => io.dataJsonSoon(stringifyExact(result)) } : {}),
    onUnsaved: (result) => io.warn(unsavedLine(result)),
  });
}

/** A failed result's record or session the store could not save, whole, on one line: its only copy until the end. */
function unsavedLine(result: ItemResult): string {
  const [what, answer] = result.record !== undefined ? ['record', result.record] : ['session', result.session];
  const text = answer instanceof ExactJson ? answer.text : String(answer);
  return `${result.file ?? result.hash}: the ${what} the service sent could not be saved; keep it (it is sent only once): ${text}`;
}

/**
 * Where `hash` hands its checksums, in input order: a digest is printed at
 * as a sha256sum line (queued, written with the lines of the same turn; or
 * kept for the JSON array), an input that could
 * not be hashed is reported on stderr at once, as sha256sum does.
 */
export function checksumsFor(view: View): Checksums {
  const { io } = view;
  const json = view.format === 'json';
  return new Checksums({
    keep: json,
    ready: () => io.drained(),
    onChecksum: (checksum) => {
      // With --json every line on stderr is a JSON error, as --json promises: this one names its file.
      if ('error' in checksum && json)
        io.error(JSON.stringify({ error: { ...errorJson(checksum.error), file: checksum.file } }));
      else if ('error' in checksum) io.error(failureLine(checksum));
      else if (!json) io.dataSoon(checksumLine(checksum.hash, checksum.file));
    },
  });
}

/**
 * How an input `hash` could not read is reported: like sha256sum,
 * `notarize: <path>: <reason>`, on one line whatever the name holds
 * (io.error keeps line feeds, for help and stack traces).
 */
function failureLine({ file, error }: Extract<Checksum, { error: unknown }>): string {
  // With what to do, as --json's error object has it (r115: a name not UTF-8 said why, not what to do).
  const hint = error.hint ? ` (${error.hint})` : '';
  return forTerminal(
    error instanceof InputFileError
      ? `notarize: ${error.path}: ${error.reason}${hint}`
      : `notarize: ${file}: ${error.message}${hint}`,
  );
}

/**
 * Shows a run's result; see the module comment. Its failure is the caller's
 * to throw. Asynchronous only to load render.ts for a table when the view
 * did not (loadRender): once loaded, it waits on no I/O, only on promises
 * already settled, which run before a signal's exit can.
 */
export async function present(view: View, result: CommandResult): Promise<void> {
  const { io } = view;
  const json = view.format === 'json';
  // Where a record or a table is shown, instead of JSON: the renderer.
  const tables = async () => (json ? undefined : await loadRender());
  switch (result.kind) {
    case 'outcome':
      if (result.note) io.info(result.note);
      if (result.outcome) showOutcome(io, result.outcome, result.baseUrl, await tables());
      if (result.receipt) io.info(`receipt: ${result.receipt}`);
      break;
    case 'record':
      if (result.note) io.info(result.note);
      showRecord(io, result.recordJson, verificationUrl(result.baseUrl, result.hash), await tables());
      break;
    case 'items': {
      const { items } = result;
      const results = items.list();
      if (view.format === 'json') io.dataJsonArray(results);
      // No rows, no table: a header alone says nothing the summary does not.
      else if (view.format === 'table' && results.length > 0)
        io.dataLines((await loadRender()).resultLines(results, io.colour));
      io.info(items.summary());
      break;
    }
    case 'checksums':
      // The last sha256sum lines, queued as they came (checksumsFor), are written before anything else.
      io.flush();
      if (json) {
        const digests = result.checksums.list().flatMap((c) => ('hash' in c ? [{ file: c.file, hash: c.hash }] : []));
        io.dataJsonArray(digests);
      }
      break;
    case 'rows':
      for (const warning of result.warnings ?? []) io.warn(warning);
      if (json) io.dataJsonArray(result.rows);
      else if (result.rows.length === 0 && result.empty !== undefined) io.info(result.empty);
      else
        io.dataLines(
          (await loadRender()).tableLines(
            [...result.headers],
            result.rows.map((row) => result.cells(row)),
            io.colour,
          ),
        );
      break;
    case 'value':
      if (json && result.json !== undefined) io.dataJson(JSON.stringify(result.json));
      else {
        if (result.text?.data !== undefined) io.data(result.text.data);
        for (const line of result.text?.info ?? []) io.info(line);
      }
      for (const line of result.info ?? []) io.info(line);
      for (const warning of result.warnings ?? []) io.warn(warning);
      break;
  }
  const github = githubReportOf(result);
  if (github) reportToGitHub(view, github);
}

/** What a result tells GitHub Actions, if anything: one registration or lookup, or a batch's held results. */
function githubReportOf(result: CommandResult): GitHubReport | undefined {
  if (result.kind === 'outcome' || result.kind === 'record') return result.github;
  if (result.kind === 'items' && result.items.keep !== 'none')
    return { title: result.title, results: result.items.list() };
  return undefined;
}

/** The size of the step's summary so far (none yet: 0). */
function summaryBytes(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** Writes the step summary and the annotations when in GitHub Actions; does nothing elsewhere. */
function reportToGitHub(view: View, report: GitHubReport): void {
  const { io, env } = view;
  if (!inGitHubActions(env)) return;
  // Secrets are removed from each field as it is, before it is %-encoded or escaped for markdown.
  const redact = (text: string) => io.redact(text);
  for (const line of annotations(report.results, redact)) io.error(line);
  const summaryFile = env.GITHUB_STEP_SUMMARY;
  if (!summaryFile) return;
  try {
    const room = summaryRoom(summaryBytes(summaryFile));
    if (room < SUMMARY_MIN_BYTES) {
      io.warn(
        `no table in the step summary: this step's summary is near the 1 MiB GitHub takes, whole or not at all ` +
          `(earlier runs in the step); every result is in notarize's output`,
      );
      return;
    }
    appendFileSync(summaryFile, markdownSummary(report.title, report.results, redact, room));
  } catch (error) {
    io.warn(`could not append to GITHUB_STEP_SUMMARY (${summaryFile}): ${(error as Error).message}`);
  }
}

/**
 * The members of the service's JSON object `text`, for a table: strings and
 * nulls as parsed, any other value as its exact text (ExactJson), since
 * JSON.parse would show an asset id above 2^53, or `1.50`, as another number.
 */
function parsedObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      return Object.fromEntries(
        Object.entries(value).map(([key, member]) => [
          key,
          typeof member === 'string' || member === null ? member : ExactJson.of(memberText(text, key)!),
        ]),
      );
    }
  } catch {
    // Stored text that is not an object is shown raw below.
  }
  return { answer: text };
}

/** A completed record: as a table with `render`, else (--json) the service's exact text. */
function showRecord(io: IO, recordJson: string, verification: string, render: Render | undefined): void {
  if (render) io.data(render.renderRecord(parsedObject(recordJson), { verification }, io.colour));
  else io.dataJson(recordJson);
}

/**
 * The outcome of register or complete: the record (or, for a registration
 * left pending, the session) on stdout, exactly as the service sent it with
 * --json, as a table otherwise; what happened on stderr.
 */
function showOutcome(io: IO, outcome: Outcome, baseUrl: string, render: Render | undefined): void {
  switch (outcome.kind) {
    case 'already-registered':
      showAlreadyRegistered(io, outcome, verificationUrl(baseUrl, outcome.hash), render);
      return;
    case 'pending': {
      const { entry } = outcome;
      io.info(
        `${outcome.reused ? 'a session was already pending' : 'session saved'} for ${entry.hash}; ` +
          `complete it with: notarize complete ${entry.hash} (or the same register command without --no-complete, ` +
          'which also writes its receipt with --receipt-dir)',
      );
      if (!render) io.dataJson(entry.sessionJson);
      else {
        const session = parsedObject(entry.sessionJson);
        io.data(
          render.renderRecord(
            { hash: entry.hash, description: entry.description, savedAt: entry.savedAt, ...session },
            {},
            io.colour,
          ),
        );
      }
      return;
    }
    case 'completed':
      io.info(`registered ${outcome.entry.hash}${outcome.reusedSession ? ' (with the pending session)' : ''}`);
      showRecord(io, outcome.entry.recordJson, verificationUrl(baseUrl, outcome.entry.hash), render);
      showCustody(io, outcome.custody);
      return;
  }
}

/**
 * How a batch says, once at its end, that it sent the custody metadata of
 * `count` documents (registered, or owed by an earlier run) and uploaded no
 * file, as showCustody says it of one document alone; nothing when none.
 */
export function showMetadataSent(io: IO, count: number): void {
  if (count === 0) return;
  const which = count === 1 ? 'one document' : `${count} documents`;
  io.info(
    `custody: the file metadata of ${which} was sent. The files themselves were NOT uploaded: the service does not document how to upload file bytes.`,
  );
}

/** Whether `outcome` sent custody metadata this run (its registration's, or one an earlier run owed). */
export function sentMetadata(outcome: Outcome): boolean {
  return outcome.kind !== 'pending' && outcome.custody?.metadataSent === true;
}

/** What became of the custody metadata, when this run sent (or tried to send) it. */
function showCustody(io: IO, custody: CustodyOutcome | undefined): void {
  if (!custody) return;
  // A call that failed after an attempt that may have been processed (its answer lost: r84), or one a
  // signal cut short, which cannot tell whether it went out (r87): not "was sent", not "could not be".
  const { error } = custody;
  const perhapsTaken =
    (error instanceof TransientError && !error.notProcessed && !error.tokenRefusedFirst) ||
    // Refused (a 401, a 400) after an attempt whose answer was lost (r119).
    (error instanceof NotarizeError && error.earlierAttemptMaybeProcessed);
  io.info(
    custody.metadataSent
      ? 'custody: the file metadata was sent. The file itself was NOT uploaded: the service does not document how to upload file bytes.'
      : perhapsTaken
        ? 'custody: the file metadata may have been taken but is not confirmed, and the file itself was NOT uploaded.'
        : 'custody: the file metadata could not be sent, and the file itself was NOT uploaded.',
  );
}

/**
 * A hash the ledger or the service (a 409) says is registered: the ledger's
 * record when this store has one; otherwise the service's words, no record,
 * and the public verification page.
 */
function showAlreadyRegistered(
  io: IO,
  outcome: Extract<Outcome, { kind: 'already-registered' }>,
  verification: string,
  render: Render | undefined,
): void {
  const { hash, entry, service } = outcome;
  const said = service ? `the service says so (409${service.message ? `: ${service.message}` : ''})` : undefined;
  if (service?.retiredSession) io.info(`its pending session was moved aside to ${service.retiredSession}`);
  if (entry) {
    io.info(
      // Asked the service with a record here (--force): it said it has it, so --force is no way to register again.
      `${hash} is already registered (completed ${entry.completedAt}${said ? `; ${said}` : ''})` +
        (said ? '' : '; `notarize register --force` registers it again'),
    );
    showRecord(io, entry.recordJson, verification, render);
    showCustody(io, outcome.custody);
    return;
  }
  const kept = service?.answerKeptAside;
  io.info(
    `${hash} is already registered: ${said ?? 'the service says so'}; this store has no record of it` +
      (kept ? ` (the answer its completion got, not taken for its record, is kept in ${kept}, with why)` : '') +
      `, see ${verification}`,
  );
  showCustody(io, outcome.custody);
  if (!render) {
    const summary = {
      hash,
      status: 'already-registered',
      record: null,
      verificationUrl: verification,
      message: service?.message ?? null,
      ...(kept ? { answerKeptAside: kept } : {}),
    };
    io.dataJson(JSON.stringify(summary, null, 2));
  } else {
    io.data(
      render.renderRecord(
        {
          hash,
          status: 'already registered (the service says so; no local record)',
          message: service?.message ?? null,
          // On stdout as in the JSON: -q silences the line above, and this may be the record's only copy.
          ...(kept ? { answerKeptAside: kept } : {}),
        },
        { verification },
        io.colour,
      ),
    );
  }
}

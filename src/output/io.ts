/**
 * The IO object: the one way commands reach the terminal. Data goes to
 * stdout; messages, warnings, spinners and request logs go to stderr.
 * Tests build one over string buffers (see `bufferIO`) and read them back.
 *
 * Messages embed outside text (file names, the service's words), so every
 * message is escaped for the terminal here (output/safe-text.ts), whatever
 * its caller did: info, warn and debug are one line each, so a line break in
 * them is escaped too; error keeps line feeds (help, stack traces). Data is
 * written as given: JSON is exact, tables are escaped by their renderers,
 * and `hash` lines keep sha256sum's format.
 */
import type { Readable } from 'node:stream';
import { warningCommand } from './github.js';
import { forTerminal, forTerminalLines, jsonForTerminal, lineStart } from './safe-text.js';
import { stringifyExact } from '../exact-json.js';
import { keyTrace, keysIn, REDACTED, replaceSecrets, secretParts, type KeyTrace } from '../secrets.js';

/** A JSON string as it appears in JSON text (no raw line break inside). */
const JSON_STRING = /"(?:[^"\\\n]|\\.)*"/g;
export interface Sink {
  /** False when the text was only queued (a full pipe): see `IO.drained`. */
  write(text: string): unknown;
  /** A stream's events, to wait for 'drain' (or 'close') after a write returned false. */
  once?(event: 'drain' | 'close', listener: () => void): unknown;
  off?(event: 'drain' | 'close', listener: () => void): unknown;
  /**
   * Resolves once what was written has reached the system, with the first
   * error a write met (a full disk, an I/O error), if any: a reader that
   * went away early (`| head`) is none.
   */
  settled?(): Promise<Error | undefined>;
}

export interface Spinner {
  /** Changes the text shown. */
  update(text: string): void;
  /** Stops and clears the spinner. */
  stop(): void;
}

export interface IOOptions {
  stdout: Sink;
  stderr: Sink;
  stdin: Readable;
  stdinIsTTY: boolean;
  stderrIsTTY: boolean;
  /** Whether standard output is a terminal (a person reads it, not a program); false by default. */
  stdoutIsTTY?: boolean;
  colour: boolean;
  quiet?: boolean;
  verbose?: boolean;
  /** Starts a spinner on stderr; only called when stderr is a terminal. */
  startSpinner?: (text: string) => Spinner;
  /** The width of the terminal stderr is, when it says one: a progress line is kept within it. */
  stderrColumns?: () => number | undefined;
  /** Warnings as GitHub Actions `::warning::` commands (GITHUB_ACTIONS=true), so that the run's page shows them. */
  warningAnnotations?: boolean;
}

/**
 * A JWT, as the service's tokens are (a JSON header and payload, so both
 * base64url starting `eyJ`, and a signature), standing alone: never printed,
 * whoever's. Not inside a longer run of base64url or after an escape's hex
 * digit (`\u001eyJ...` is no token): a JSON string spelling one with escapes
 * is read and searched as it reads (redact).
 */
const JWT_SHAPE = /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}(?![A-Za-z0-9_-])/g;

/**
 * A line drawn for the while on a terminal `columns` wide (a progress line,
 * a spinner's text after `before` columns of its own), cut with '…' to fit
 * one row with room to spare for the ^C a Ctrl-C echoes after it: a line
 * that wraps, or whose ^C wraps, is cleared only on its last row, and the
 * rest stayed above what came next. ASCII text (counts and sizes).
 */
export function withinWidth(text: string, columns: number | undefined, before = 0): string {
  // The '^C' echo, and the column the cursor takes after it.
  const room = columns === undefined ? Infinity : columns - before - 3;
  if (text.length <= room) return text;
  return room < 2 ? text.slice(0, Math.max(0, room)) : `${text.slice(0, room - 1)}…`;
}

/** `text` ending with a line feed. */
function asLine(text: string): string {
  return text.endsWith('\n') ? text : `${text}\n`;
}

/** Characters `dataSoon` queues at most before writing them (a few hundred lines of `hash`). */
const QUEUED_MAX_CHARS = 64 * 1024;

const NO_SPINNER: Spinner = { update() {}, stop() {} };

/** Terminal access for commands; see the module comment. */
export class IO {
  readonly stdin: Readable;
  readonly stdinIsTTY: boolean;
  readonly stderrIsTTY: boolean;
  readonly stdoutIsTTY: boolean;
  readonly #annotate: boolean;
  readonly colour: boolean;
  quiet: boolean;
  verbose: boolean;
  readonly #stdout: Sink;
  readonly #stderr: Sink;
  readonly #startSpinner: ((text: string) => Spinner) | undefined;
  readonly #stderrColumns: (() => number | undefined) | undefined;
  readonly #secrets = new Set<string>();
  /** The secrets addSecret was given: a batch hands in the same token before every call. */
  readonly #added = new Set<string>();
  /** #secrets longest first, so a secret containing another is removed whole; kept, as every line is scrubbed. */
  #longestFirst: string[] = [];
  /** The API keys known by their trace alone (addKeyTrace). */
  readonly #keyTraces: KeyTrace[] = [];
  /** The traces of secrets known (addSecret) that a URL may spell otherwise: searched in text holding a `%`. */
  readonly #spelledTraces: KeyTrace[] = [];
  readonly #warnedShort = new Set<string>();
  #progressShown = false;
  /** Whether a secret was taken out of the data on stdout, said once (#redactData). */
  #dataRedacted = false;
  /** Set from a write stdout queued until it drains (or closes); resolved then. */
  #draining: Promise<void> | undefined;
  /** Data lines taken by `dataSoon`, not written yet. */
  #queued = '';
  #queuedFlush: NodeJS.Immediate | undefined;

  constructor(options: IOOptions) {
    this.#stdout = options.stdout;
    this.#stderr = options.stderr;
    this.stdin = options.stdin;
    this.stdinIsTTY = options.stdinIsTTY;
    this.stderrIsTTY = options.stderrIsTTY;
    this.stdoutIsTTY = options.stdoutIsTTY ?? false;
    this.colour = options.colour;
    this.quiet = options.quiet ?? false;
    this.verbose = options.verbose ?? false;
    this.#startSpinner = options.startSpinner;
    this.#stderrColumns = options.stderrColumns;
    this.#annotate = options.warningAnnotations ?? false;
  }

  /**
   * Registers a secret (token, API key) that must never be printed. Every
   * line written is scrubbed of registered secrets, as a last line of defence
   * behind code that never puts them in messages in the first place.
   */
  addSecret(secret: string | undefined, name?: string): void {
    if (secret === undefined || secret.trim() === '' || this.#added.has(secret)) return;
    // Said once for a secret, by the first name it came with: NOTARIZE_TOKEN is the token used too.
    this.#added.add(secret);
    if (secret.length < 8) {
      if (name !== undefined) this.#warnShortSecret(name);
      return;
    }
    for (const part of secretParts(secret)) this.#secrets.add(part);
    this.#longestFirst = [...this.#secrets].sort((a, b) => b.length - a.length);
    // A URL may write any of its characters %XX, in either case: found by its trace (keysIn).
    const trace = keyTrace(secret);
    if (!this.#spelledTraces.some((known) => known.digest === trace.digest)) this.#spelledTraces.push(trace);
  }

  /**
   * Registers the trace of an API key this run does not have (the key a
   * stored token was logged in with, `notarize login`): text that is that
   * key is scrubbed as a secret is (keysIn), though only its trace is known.
   */
  addKeyTrace(trace: KeyTrace): void {
    this.#keyTraces.push(trace);
  }

  /**
   * A secret so short it would match ordinary text cannot be scrubbed: said
   * once for each that `name`s it (a variable, the key given), not silently
   * left. (A proxy setting may hold no password at all: not named, not said.)
   */
  #warnShortSecret(name: string): void {
    if (this.#warnedShort.has(name)) return;
    this.#warnedShort.add(name);
    this.warn(
      `${name} is shorter than 8 characters: notarize cannot tell it from ordinary text, ` +
        'so it is not kept out of what is printed, sent or written; use a longer one',
    );
  }

  /** Whether `text` holds a secret registered so far (addSecret, addKeyTrace): such text must not leave the machine either. */
  holdsSecret(text: string): boolean {
    return this.#longestFirst.some((secret) => text.includes(secret)) || this.#tracedKeysIn(text).length > 0;
  }

  /** Writes data (the command's result) to stdout. */
  data(text: string): void {
    this.#writeNow(this.#redactData(asLine(text)));
  }

  /**
   * Writes JSON data: exactly as given into a pipe or file; on a terminal,
   * the same JSON value with what could act on the terminal escaped
   * (jsonForTerminal).
   */
  dataJson(text: string): void {
    this.#writeNow(this.#jsonShown(asLine(text)));
  }

  /** Writes text ready to write, after what was queued before it. */
  #writeNow(shown: string): void {
    this.clearProgress();
    this.flush();
    this.#writeOut(shown);
  }

  /** dataSoon for a line of JSON (NDJSON), as dataJson shows it. */
  dataJsonSoon(text: string): void {
    this.#queue(this.#jsonShown(asLine(text)));
  }

  /** JSON text redacted and, on a terminal, shown safely; redacted first: a secret is searched for as it was. */
  #jsonShown(text: string): string {
    const redacted = this.#redactData(text);
    return this.stdoutIsTTY ? jsonForTerminal(redacted) : redacted;
  }

  /**
   * Writes data like `data`, for one line of thousands in a row (`hash`
   * over a long list): lines are queued and written together at the end of
   * this turn of the event loop, or once QUEUED_MAX_CHARS pile up. One write
   * for many lines instead of one each: a system call per line, and a read
   * per line for whoever reads the pipe, were most of the cost of hashing a
   * list of small files. Any other output writes the queue first, so
   * everything still comes out in the order it was written.
   */
  dataSoon(text: string): void {
    this.#queue(this.#redactData(asLine(text)));
  }

  /** Queues text ready to write (see dataSoon). */
  #queue(shown: string): void {
    this.clearProgress();
    this.#queued += shown;
    if (this.#queued.length >= QUEUED_MAX_CHARS) this.flush();
    else this.#queuedFlush ??= setImmediate(() => this.flush());
  }

  /** Once what was written to stdout has reached the system: the error that kept some of it out, if any. */
  async outputFailure(): Promise<Error | undefined> {
    this.flush();
    return this.#stdout.settled?.();
  }

  /** Writes what `dataSoon` queued, now; main() calls it before it returns. */
  flush(): void {
    if (this.#queuedFlush !== undefined) clearImmediate(this.#queuedFlush);
    this.#queuedFlush = undefined;
    if (this.#queued === '') return;
    const text = this.#queued;
    this.#queued = '';
    this.#writeOut(text);
  }

  /** Writes scrubbed data. */
  #writeOut(text: string): void {
    if (this.#stdout.write(text) === false) this.#awaitDrain();
  }

  /**
   * Listens for stdout's 'drain' from the write that was queued on, not from
   * when someone waits: a drain that came in between would otherwise be
   * missed, and the wait for the next one, which only a further write
   * brings, would never end (the run then died with Node's exit 13, its
   * results and receipts unwritten).
   */
  #awaitDrain(): void {
    const sink = this.#stdout;
    if (this.#draining !== undefined || !sink.once || !sink.off) return;
    this.#draining = new Promise<void>((resolve) => {
      const done = () => {
        sink.off!('drain', done);
        sink.off!('close', done);
        this.#draining = undefined;
        resolve();
      };
      // 'close' too: a stream that went away will never drain.
      sink.once!('drain', done);
      sink.once!('close', done);
    });
  }

  /**
   * Resolves once stdout has taken what was written: at once, unless a write
   * was queued (a pipe whose reader is slower than us) and has not drained
   * since. A command printing a line per document awaits it before starting
   * more, so the queue, and memory, stay bounded however many documents
   * there are.
   */
  drained(): Promise<void> {
    return this.#draining ?? Promise.resolve();
  }

  /**
   * Writes lines (none holding a line break) as `data(lines.join('\n'))`
   * would, in pieces of about QUEUED_MAX_CHARS: a table of 200,000 rows never
   * becomes one string (nor its scrubbed copy), which past V8's longest
   * (512 MiB) could not be made at all. A piece ends with a line, and no
   * secret spans two, so each is scrubbed on its own.
   */
  dataLines(lines: readonly string[]): void {
    this.clearProgress();
    this.flush();
    let piece = '';
    for (const line of lines) {
      piece += `${line}\n`;
      if (piece.length >= QUEUED_MAX_CHARS) {
        this.#writeOut(this.#redactData(piece));
        piece = '';
      }
    }
    if (piece !== '') this.#writeOut(this.#redactData(piece));
  }

  /**
   * Writes an array to stdout exactly as `data(stringifyExact(items, 2))`
   * would, one element at a time: a batch's results (kilobytes each, 10,000
   * documents or more) then never become one string of tens of megabytes,
   * nor its scrubbed copy. Writes to files, and to pipes on Linux, are
   * synchronous, so nothing piles up behind them either.
   */
  dataJsonArray(items: readonly unknown[]): void {
    if (items.length === 0) return this.data('[]');
    this.clearProgress();
    this.flush();
    const last = items.length - 1;
    items.forEach((item, index) => {
      // JSON escapes newlines inside strings, so every newline here is layout: indent it one level.
      const element = (stringifyExact(item, 2) ?? 'null').replace(/\n/g, '\n  ');
      this.#stdout.write(this.#jsonShown(`${index === 0 ? '[\n' : ''}  ${element}${index === last ? '\n]\n' : ',\n'}`));
    });
  }

  /** A message for the person at the terminal; silenced by --quiet. */
  info(text: string): void {
    this.clearProgress();
    // It may begin with a file name: no line of it may pass for a workflow command.
    if (!this.quiet) this.#writeErr(`${lineStart(this.redact(text))}\n`);
  }

  /** A warning: shown even with --quiet, since it says something went wrong. */
  warn(text: string): void {
    this.clearProgress();
    const line = this.#annotate
      ? warningCommand(text, (raw) => this.redact(raw))
      : `warning: ${forTerminal(this.redact(text))}`;
    this.#writeErr(`${line}\n`);
  }

  /** An error line, written by main() only (and help, and GitHub annotations); may be several lines. */
  error(text: string): void {
    this.clearProgress();
    this.#writeErr(`${forTerminalLines(this.redact(text))}\n`);
  }

  /** A --verbose diagnostic line. */
  debug(text: string): void {
    if (this.verbose) this.#writeErr(`[notarize] ${forTerminal(this.redact(text))}\n`);
  }

  /** Writes to stderr after the data queued before it, so the two streams keep their order. */
  #writeErr(text: string): void {
    this.flush();
    this.#stderr.write(text);
  }

  /**
   * `text` with every secret registered so far (addSecret) replaced by
   * `[redacted]`: what is written anywhere else than the terminal (GitHub's
   * annotations, job summary and outputs, a receipt) goes through it too.
   * Apply it to text as it is, before escaping or encoding it, never after:
   * a secret is searched for as it was, not as shown.
   */
  redact(text: string): string {
    const out = this.#redactPlain(text);
    // A JSON string can spell a secret with escapes the service chose (`\/`, `\u00e9`), which no search
    // of the text finds: such a string is read, searched as it reads, and written anew without it.
    return out.includes('\\') ? out.replace(JSON_STRING, (token) => this.#redactJsonString(token)) : out;
  }

  /**
   * `text`, data for stdout, redacted; the first time that takes a secret out,
   * a warning says so (r101: a file named with the API key was printed by
   * `hash` as `[redacted]`, silently, and `sha256sum -c` then failed on it).
   */
  #redactData(text: string): string {
    const out = this.redact(text);
    if (out !== text && !this.#dataRedacted) {
      this.#dataRedacted = true;
      this.warn(
        `a secret of yours (the API key or a token) was in what notarize printed, in a file name or a text: ` +
          `it is printed as ${REDACTED}, so that line does not name its file exactly (rename the file)`,
      );
    }
    return out;
  }

  #redactPlain(text: string): string {
    let out = replaceSecrets(text, this.#longestFirst);
    for (const key of this.#tracedKeysIn(out)) out = out.replaceAll(key, REDACTED);
    // Any JWT too, not only the tokens known now: one the store held before (replaced by a later
    // login, or logged out) is still valid for hours, and a service may echo one in what it sends.
    return out.includes('eyJ') ? out.replace(JWT_SHAPE, REDACTED) : out;
  }

  /** The secrets found in `text` by their traces: the stored keys' anywhere, the others' as a URL spells them. */
  #tracedKeysIn(text: string): string[] {
    const traces = text.includes('%') ? [...this.#keyTraces, ...this.#spelledTraces] : this.#keyTraces;
    return traces.length === 0 ? [] : keysIn(text, traces);
  }

  /** `token`, a JSON string with escapes, as it is unless what it reads as holds a secret. */
  #redactJsonString(token: string): string {
    if (!token.includes('\\')) return token;
    let value: unknown;
    try {
      value = JSON.parse(token);
    } catch {
      return token; // Quotes in plain text, not a JSON string.
    }
    if (typeof value !== 'string') return token;
    const clean = this.#redactPlain(value);
    return clean === value ? token : JSON.stringify(clean);
  }

  /** Whether progress lines are shown: stderr is a terminal, not CI, not --quiet/--verbose. */
  get showsProgress(): boolean {
    return this.stderrIsTTY && !this.quiet && !this.verbose;
  }

  /** Replaces the progress line on stderr (terminal only; see showsProgress). */
  progress(text: string): void {
    if (!this.showsProgress) return;
    this.#writeErr(`\r\u001b[K${withinWidth(text, this.#stderrColumns?.())}`);
    this.#progressShown = true;
  }

  /** Clears the progress line, if one is shown, so other lines never land after it. */
  clearProgress(): void {
    if (!this.#progressShown) return;
    this.#writeErr('\r\u001b[K');
    this.#progressShown = false;
  }

  /** A spinner on stderr, only on a terminal and not with --quiet/--verbose. */
  spinner(text: string): Spinner {
    if (this.quiet || this.verbose || !this.stderrIsTTY || !this.#startSpinner) return NO_SPINNER;
    return this.#startSpinner(text);
  }
}

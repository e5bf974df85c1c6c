/**
 * Renderers: turn data into the tables commands print. Pure functions of their
 * input, so tests can assert on them without a terminal. Every cell is
 * escaped with `forTerminal` (see safe-text.ts) before it is measured and
 * styled: the data, never our own colours. Measuring and styling take
 * packages that cost a run tens of milliseconds to load (string-width builds
 * an Intl.Segmenter and Unicode property regexes, chalk probes the terminal):
 * present.ts loads this module only when it draws a table, never for JSON or
 * NDJSON; plain-text lines that need neither are wording.ts's.
 */
import { Chalk } from 'chalk';
import { eastAsianWidth } from 'get-east-asian-width';
import stringWidth from 'string-width';
import { ExactJson, stringifyExact } from '../exact-json.js';
import type { ItemResult } from './results.js';
import { forTerminal, lineStart } from './safe-text.js';

/** A two-column "field  value" table of every field of a record, unknown ones included. */
export function renderRecord(record: Record<string, unknown>, extra: Record<string, string>, colour: boolean): string {
  const chalk = new Chalk({ level: colour ? 1 : 0 });
  // The service names the fields too: keys are as untrusted as values.
  const rows: [string, string][] = [
    ...Object.entries(record).map(([key, value]): [string, string] => [key, formatValue(key, value)]),
    ...Object.entries(extra),
  ].map(([key, value]) => startingLine([forTerminal(key), forTerminal(value)]) as [string, string]);
  // A loop, not a spread: a record may have more fields than V8 takes arguments.
  const width = rows.reduce((widest, [key]) => Math.max(widest, terminalColumns(key)), 0);
  return rows.map(([key, value]) => `${chalk.bold(padToColumns(key, width))}  ${value}`).join('\n');
}

/** A value on one line; an ExactJson (a number or object the service sent) as its exact text. */
function formatValue(key: string, value: unknown): string {
  if (value === null) return '-';
  if (typeof value === 'string') return value;
  const shown = stringifyExact(value);
  const parsed = value instanceof ExactJson ? value.parsed() : value;
  if (key === 'creationDate' && typeof parsed === 'number') return `${shown} (${isoOrRaw(parsed)})`;
  return shown;
}

function isoOrRaw(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? String(ms) : date.toISOString();
}

/**
 * A plain column table with a header row, as its lines (none holds a line
 * break); no borders, easy to read and to grep. Lines, not one string, and
 * widths found by a loop, not by spreading a column into Math.max: `list`
 * of 200,000 records overflowed the stack, and one of large descriptions
 * passed the longest string V8 makes (512 MiB), each an "unexpected error"
 * with nothing printed.
 */
export function tableLines(headers: string[], rows: string[][], colour: boolean): string[] {
  const chalk = new Chalk({ level: colour ? 1 : 0 });
  // Escaped first, so a line break cannot split a row and widths count what is shown;
  // each cell measured once, in terminal columns (padToColumns).
  const shown = rows.map((row) => startingLine(row.map(forTerminal)));
  const columnsOf = (cells: string[]) => cells.map(terminalColumns);
  const headerColumns = columnsOf(headers);
  const shownColumns = shown.map(columnsOf);
  const widths = [...headerColumns];
  for (const row of shownColumns) {
    for (let i = 0; i < widths.length; i++) widths[i] = Math.max(widths[i]!, row[i] ?? 0);
  }
  const line = (cells: string[], columns: number[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : padToColumns(cell, widths[i]!, columns[i])))
      .join('  ')
      .trimEnd();
  return [chalk.bold(line(headers, headerColumns)), ...shown.map((row, i) => line(row, shownColumns[i]!))];
}

/**
 * `text` followed by spaces up to `columns` columns of a terminal: counted as
 * a terminal shows them (string-width: a CJK character or an emoji takes two,
 * a combining mark none), not in UTF-16 units as `padEnd` counts, so columns
 * of names in any script line up. `used`: the columns `text` takes, when
 * already measured.
 */
function padToColumns(text: string, columns: number, used = terminalColumns(text)): string {
  return text + ' '.repeat(Math.max(0, columns - used));
}

/**
 * Characters whose width depends on their neighbours (marks, joiners,
 * variation selectors, emoji, regional indicators, Hangul jamo, other
 * default-ignorables): text holding one is measured by string-width, which
 * segments it into graphemes (about 40 µs for a short CJK name: `list` of
 * 200,000 records took 60 % longer when every cell went through it).
 */
const CLUSTERED =
  /[\p{M}\p{Default_Ignorable_Code_Point}\p{Extended_Pictographic}\p{Regional_Indicator}\u1100-\u11ff\ua960-\ua97f\ud7b0-\ud7ff]/u;

/** The columns a terminal gives `text` (escaped already: no control character in it). */
function terminalColumns(text: string): number {
  if (/^[\x20-\x7e]*$/.test(text)) return text.length;
  if (CLUSTERED.test(text)) return stringWidth(text);
  // One code point, one cell of East Asian Width: wide and fullwidth take two.
  let columns = 0;
  for (const char of text) columns += eastAsianWidth(char.codePointAt(0)!);
  return columns;
}

/**
 * The escaped cells of one line, with what begins the line passed through
 * `lineStart`: the first cell, and the next ones while those before are only
 * spaces (an empty field name, an empty cell padded), since a runner looks
 * for `::` after the spaces a line starts with.
 */
function startingLine(cells: string[]): string[] {
  const out = [...cells];
  for (let i = 0; i < out.length; i++) {
    out[i] = lineStart(out[i]!);
    if (!/^\p{Zs}*$/u.test(out[i]!)) break;
  }
  return out;
}

/** The table of results, as its lines: file, status, hash, and the error message of failures. */
export function resultLines(results: readonly ItemResult[], colour: boolean): string[] {
  return tableLines(
    ['STATUS', 'HASH', 'FILE', 'DETAIL'],
    results.map((r) => [r.status, r.hash ?? '-', r.file ?? '-', r.error?.message ?? r.reason ?? r.receipt ?? '']),
    colour,
  );
}

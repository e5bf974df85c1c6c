/**
 * Making text from outside (the service's answers, file names, descriptions)
 * safe to show on a terminal. Such text may hold escape sequences that
 * recolour, move the cursor, retitle the window or ring the bell; line breaks
 * that forge lines or break a table; or bidirectional overrides that show
 * text in another order than it is (U+202E "evil.exe" shown as "exe.live").
 *
 * The scheme, documented in the README ("Terminal safety"):
 *
 * - LF, CR and TAB are shown as `\n`, `\r`, `\t`;
 * - every other character escaped is shown as `\uXXXX` (lowercase hex, one
 *   per UTF-16 unit, so a character beyond U+FFFF is a surrogate pair);
 * - a backslash is left as it is.
 *
 * Escaped: control characters (C0, DEL, C1: \p{Cc}); format characters
 * (\p{Cf}: the bidi embeddings, overrides, isolates and marks, zero-width
 * spaces, the BOM, soft hyphen, tag characters) except ZWNJ and ZWJ, which
 * are needed to write Persian, Indic scripts and emoji and reorder nothing;
 * the line and paragraph separators U+2028/U+2029; and lone surrogates.
 *
 * Workflow commands: a GitHub runner reads `##[command]data` anywhere in a
 * line of a step's output (its legacy form) and `::command::data` at a
 * line's start (after any spaces), from any program. Text from outside must
 * form neither: the `#` before `#[` is escaped (`\u0023`) wherever it is,
 * and a line that would start with `::` has its first `:` escaped
 * (`\u003a`) by `lineStart`, which renderers call on what begins a line
 * (not here: our own annotations are lines that start with `::`).
 *
 * Why this form: every escape is also a JSON escape for the same character,
 * so escaping a line of JSON (an error printed with --json) leaves it valid
 * JSON of the same value. Why the backslash is left alone: Windows paths stay
 * readable, and escaping is idempotent, so text escaped where it is embedded
 * can go through the IO object's own escaping again unchanged. The price is
 * that a name really spelled `a\u001bb` shows the same as `a<ESC>b`: the
 * terminal form is for people; --json output redirected is exact.
 */

// With the `u` flag a well-formed surrogate pair is one character, so \p{Cs} matches lone surrogates only.
const UNSAFE = /[\p{Cc}\p{Zl}\p{Zp}\p{Cs}]|(?![\u200c\u200d])\p{Cf}/gu;

const SHORT: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeOne(char: string): string {
  const short = SHORT[char];
  if (short !== undefined) return short;
  let out = '';
  for (let i = 0; i < char.length; i++) out += `\\u${char.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}

/** The `#` that makes `##[` with the text after it: escaped, no runner reads a command there. */
const LEGACY_COMMAND = /#(?=#\[)/g;

/** `text` with every unsafe character escaped (see the module comment); one line whatever it held. */
export function forTerminal(text: string): string {
  return escapeControls(text).replace(LEGACY_COMMAND, '\\u0023');
}

/**
 * `text` with its control and format characters escaped as forTerminal
 * escapes them, and nothing else: a file's name made a description, which
 * the record keeps for good (a `##[` there is the name's own; forTerminal
 * escapes it wherever the description is shown).
 */
export function escapeControls(text: string): string {
  return text.replace(UNSAFE, escapeOne);
}

/** Whether jsonForTerminal has anything to change (a line feed or tab is JSON's own layout): its fast path. */
const UNSAFE_TEST = /(?![\n\t])[\p{Cc}\p{Zl}\p{Zp}\p{Cs}]|(?![\u200c\u200d])\p{Cf}|##\[/u;
/** A JSON text's strings, and what lies between them. */
const JSON_PIECES = /"(?:[^"\\]|\\[\s\S])*"|[^"]+/g;

/**
 * JSON text (`--json` data, a receipt) as a terminal shows it, of the same
 * JSON value: in its strings, what forTerminal escapes is written as the
 * JSON escape of the same character (the bidi overrides and C1 controls a
 * service may send raw, the `#` of `##[`); between values, a CR, which JSON
 * allows as white space but which sends a terminal back to the line's start
 * for what follows to overwrite, is dropped before a line feed and a space
 * elsewhere. Redirected, the text is printed as it is (io.ts).
 */
export function jsonForTerminal(text: string): string {
  if (!UNSAFE_TEST.test(text)) return text;
  return text.replace(JSON_PIECES, (piece) =>
    piece.startsWith('"') ? forTerminal(piece) : piece.replace(/\r\n?/g, (cr) => (cr === '\r\n' ? '\n' : ' ')),
  );
}

/** Spaces a runner trims before looking for `::` (.NET's TrimStart: forTerminal escapes the other white space). */
const WORKFLOW_COMMAND_START = /^(\p{Zs}*):(?=:)/u;

/**
 * `forTerminal` for text that begins a line of output (a table's row, a
 * record's field name): one starting with `::`, spaces before it or not,
 * has that `:` escaped, so no runner reads the line as a workflow command.
 */
export function lineStart(text: string): string {
  return forTerminal(text).replace(WORKFLOW_COMMAND_START, '$1\\u003a');
}

/**
 * Like `forTerminal`, but line feeds are kept: for output that is several
 * lines on purpose (help, a stack trace, pretty JSON) whose lines hold
 * outside text that must not control the terminal. A CR is still escaped,
 * since it would let the rest of a line overwrite its start.
 */
export function forTerminalLines(text: string): string {
  return text.split('\n').map(forTerminal).join('\n');
}

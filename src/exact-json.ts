/**
 * The service's JSON (a record, a session) inside notarize's own JSON
 * output, written exactly as the service sent it. JSON.parse and
 * JSON.stringify would change it: an integer above 2^53 (an Algorand asset
 * id is a uint64) loses digits, `1.50` becomes `1.5`, `1E400` becomes null,
 * and of two equal keys one is lost. So a result holds the text
 * (ExactJson), and stringifyExact writes that text in its place, changing
 * only the whitespace between tokens: one line for NDJSON, indented like
 * the rest for a pretty array.
 */
import { randomBytes } from 'node:crypto';

/**
 * A tag no string of a value holds by chance (random, drawn once), which
 * stringifyExact's slots start with: `"<tag><n>"` stands for the n-th text.
 */
const TAG = `exact-json-slot-${randomBytes(12).toString('hex')}-`;

/** The texts of the ExactJson met by the stringifyExact under way, in order; undefined outside one. */
let slotted: string[] | undefined;

/** The last text ExactJson.of found to be JSON: an aggregate embeds its root's record once per document. */
let lastChecked: string | undefined;

/** JSON text to be written as it is (see the module comment). */
export class ExactJson {
  readonly text: string;

  /** `text` must be JSON (see ExactJson.of). */
  private constructor(text: string) {
    this.text = text;
  }

  /** The text as an ExactJson, or undefined when it is not JSON. */
  static of(text: string): ExactJson | undefined {
    if (text !== lastChecked) {
      try {
        JSON.parse(text);
      } catch {
        return undefined;
      }
      lastChecked = text;
    }
    return new ExactJson(text);
  }

  /** The value as JSON.parse reads it (numbers as doubles, the last of equal keys). */
  parsed(): unknown {
    return JSON.parse(this.text);
  }

  /**
   * Within stringifyExact, a slot for the text (JSON.stringify calls this
   * for every ExactJson it meets, with no replacer to slow every other
   * value); for any other writer, the parsed value.
   */
  toJSON(): unknown {
    if (slotted === undefined) return this.parsed();
    slotted.push(this.text);
    return `${TAG}${slotted.length - 1}`;
  }
}

/**
 * JSON.stringify(value, null, indent), with each ExactJson inside written
 * as its own text (its tokens unchanged, its whitespace laid out as the
 * rest). Without `indent`, one line.
 */
export function stringifyExact(value: unknown, indent = 0): string {
  const outer = slotted;
  const texts: string[] = (slotted = []);
  let text: string;
  try {
    text = JSON.stringify(value, null, indent);
  } finally {
    slotted = outer;
  }
  // No ExactJson met (undefined too, for a value JSON.stringify writes as nothing).
  if (texts.length === 0) return text;
  // Each slot in turn (indexOf: cheaper than a regular expression over every line).
  const open = `"${TAG}`;
  let out = '';
  let from = 0;
  for (let at = text.indexOf(open); at !== -1; at = text.indexOf(open, from)) {
    const close = text.indexOf('"', at + open.length);
    const json = texts[Number(text.slice(at + open.length, close))]!;
    let laid: string;
    if (indent === 0) laid = compact(json);
    else {
      const lineStart = text.lastIndexOf('\n', at) + 1;
      laid = relaid(json, indent, /^ */.exec(text.slice(lineStart, at))![0].length);
    }
    out += text.slice(from, at) + laid;
    from = close + 1;
  }
  return out + text.slice(from);
}

/** The last text compact() laid out, and how: an aggregate writes its root's record once per document. */
let lastCompact: { json: string; compact: string } | undefined;

/** `json` on one line (relaid with no indent). */
function compact(json: string): string {
  if (lastCompact?.json !== json) lastCompact = { json, compact: /\s/.test(json) ? relaid(json, 0) : json };
  return lastCompact.compact;
}

/**
 * The levels of nesting that `relaid` lays out on lines of their own,
 * counted from the left margin; deeper, a value stays on one line. A
 * service's answer nested thousands deep (a session has no depth limit)
 * would otherwise print a line per level, each indented by its depth:
 * output growing with the square of the depth, out of memory at 20,000.
 * Records and sessions nest a few levels; only the layout changes, never a token.
 */
export const MAX_LAID_LEVELS = 10;

/**
 * JSON text with its whitespace between tokens laid out again: none with
 * indent 0, else as JSON.stringify would with `indent`, nested `depth`
 * spaces deep, down to MAX_LAID_LEVELS. Strings and numbers are copied as they are.
 */
export function relaid(json: string, indent: number, depth = 0): string {
  let out = '';
  let level = 0;
  /** Whether what is inside a container opened at `inner` levels goes on lines of its own. */
  const laidOut = (inner: number): boolean => indent !== 0 && depth / indent + inner <= MAX_LAID_LEVELS;
  const newline = (at: number): string => `\n${' '.repeat(depth + at * indent)}`;
  for (let i = 0; i < json.length; i++) {
    const char = json[i]!;
    if (char === '"') {
      // A string, escapes included, up to its closing quote.
      const end = stringEnd(json, i);
      out += json.slice(i, end + 1);
      i = end;
    } else if (char === '{' || char === '[') {
      const close = char === '{' ? '}' : ']';
      const next = nextToken(json, i + 1);
      if (json[next] === close) {
        out += char + close;
        i = next;
      } else {
        level++;
        out += char + (laidOut(level) ? newline(level) : '');
      }
    } else if (char === '}' || char === ']') {
      out += (laidOut(level) ? newline(level - 1) : '') + char;
      level--;
    } else if (char === ',') {
      out += char + (laidOut(level) ? newline(level) : '');
    } else if (char === ':') {
      out += indent === 0 ? ':' : ': ';
    } else if (!isJsonSpace(char)) {
      out += char;
    }
  }
  return out;
}

function nextToken(json: string, from: number): number {
  let i = from;
  while (i < json.length && isJsonSpace(json[i]!)) i++;
  return i;
}

function isJsonSpace(char: string): boolean {
  return char === ' ' || char === '\t' || char === '\n' || char === '\r';
}

/** How deep arrays and objects nest in the JSON text `json` (0 for a scalar). */
export function jsonDepth(json: string): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < json.length; i++) {
    const char = json[i]!;
    if (char === '"') i = stringEnd(json, i);
    else if (char === '{' || char === '[') deepest = Math.max(deepest, ++depth);
    else if (char === '}' || char === ']') depth--;
  }
  return deepest;
}

/**
 * Whether an object of the JSON text `json` has a key twice (compared as
 * JSON.parse reads them, escapes undone). JSON.parse keeps the last of the
 * two, other readers the first: a receipt that says two things is refused
 * (receipt-format.ts). `json` must be JSON.
 */
export function hasKeyTwice(json: string): boolean {
  // One entry per open object (its keys so far) or array (undefined).
  const open: (Set<string> | undefined)[] = [];
  let atKey = false;
  for (let i = 0; i < json.length; i++) {
    const char = json[i]!;
    if (char === '"') {
      const end = stringEnd(json, i);
      const keys = open.at(-1);
      if (keys !== undefined && atKey) {
        const name = JSON.parse(json.slice(i, end + 1)) as string;
        if (keys.has(name)) return true;
        keys.add(name);
        atKey = false;
      }
      i = end;
    } else if (char === '{') {
      open.push(new Set());
      atKey = true;
    } else if (char === '[') {
      open.push(undefined);
    } else if (char === '}' || char === ']') {
      open.pop();
      atKey = false;
    } else if (char === ',') {
      atKey = open.at(-1) !== undefined;
    }
  }
  return false;
}

/**
 * The text of the member `key` of the JSON object `json` (the last one, as
 * JSON.parse keeps the last of equal keys), exactly as written; undefined
 * when `json` is not an object or has no such member. `json` must be JSON.
 */
export function memberText(json: string, key: string): string | undefined {
  let i = nextToken(json, 0);
  if (json[i] !== '{') return undefined;
  let found: string | undefined;
  i = nextToken(json, i + 1);
  while (json[i] === '"') {
    const keyEnd = stringEnd(json, i);
    const name = JSON.parse(json.slice(i, keyEnd + 1)) as string;
    const start = nextToken(json, nextToken(json, keyEnd + 1) + 1); // past the colon
    const end = valueEnd(json, start);
    if (name === key) found = json.slice(start, end);
    i = nextToken(json, end);
    if (json[i] === ',') i = nextToken(json, i + 1);
  }
  return found;
}

/** The index of the closing quote of the string that opens at `start`. */
function stringEnd(json: string, start: number): number {
  let end = start + 1;
  while (json[end] !== '"') end += json[end] === '\\' ? 2 : 1;
  return end;
}

/** The index just past the value that starts at `start`. */
function valueEnd(json: string, start: number): number {
  const first = json[start];
  if (first === '"') return stringEnd(json, start) + 1;
  if (first !== '{' && first !== '[') {
    let end = start;
    while (end < json.length && !',}] \t\n\r'.includes(json[end]!)) end++;
    return end;
  }
  let depth = 0;
  for (let i = start; i < json.length; i++) {
    const char = json[i]!;
    if (char === '"') i = stringEnd(json, i);
    else if (char === '{' || char === '[') depth++;
    else if ((char === '}' || char === ']') && --depth === 0) return i + 1;
  }
  return json.length;
}

/**
 * A JSON text without the byte order mark an editor may put at its start
 * (Windows Notepad): no part of the text, and RFC 8259 section 8.1 lets a
 * reader ignore it. One mark, at the start only.
 */
export function withoutByteOrderMark(text: string): string {
  return text.startsWith('\uFEFF') ? text.slice(1) : text;
}

/**
 * Secrets as they arrive from outside: NOTARIZE_TOKEN, NOTARIZE_API_KEY, the
 * key on standard input or at the prompt, the token in the store. Every one
 * goes through `cleanSecret`, so they are all read the same way: `$(cat
 * file)` keeps no trailing newline in a variable, but a secret pasted into a
 * CI settings page or saved by a Windows editor often ends in "\n", "\r\n"
 * or starts with a byte-order mark, and none of that is part of the secret.
 */
import { createHash } from 'node:crypto';
import { AuthError } from './errors.js';

/**
 * What the store keeps of the API key a token was logged in with, never the
 * key: its keyDigest (which key it was), and the length and rolling print
 * of its UTF-8 bytes, so that text can be searched for the key, as it is or
 * as a URL spells it, in one pass (keysIn below). A print is 32 bits of a
 * polynomial hash: it tells a search where to look, the digest decides.
 */
export interface KeyTrace {
  digest: string;
  /**
   * `<length>:<print>` of the key's UTF-8 bytes (stored as `<digest>:<length>:<print>`);
   * none in a store written before they were kept, or by another login.
   */
  prints: string[];
}

/** What stands for a secret in anything notarize writes out. */
export const REDACTED = '[redacted]';

/** How a refusal names the secrets it guards (IO.holdsSecret): the environment's, the store's, a proxy's. */
export const YOUR_SECRET = 'a secret of yours (an API key, a token or a proxy password)';

/**
 * `text` with every one of `secrets` replaced by REDACTED, in the order
 * given: longest first, so that a secret inside a longer one leaves none of
 * the longer one behind. Each is searched before it is replaced: most text
 * holds none, and a search alone allocates nothing.
 */
export function replaceSecrets(text: string, longestFirst: readonly string[]): string {
  let out = text;
  for (const secret of longestFirst) if (out.includes(secret)) out = out.replaceAll(secret, REDACTED);
  return out;
}

/** The secret without surrounding whitespace (spaces, tabs, CR, LF, BOM); undefined when nothing is left. */
export function cleanSecret(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

/**
 * What the store keeps beside a token to say which API key it was logged in
 * with: 16 hex digits of the key's SHA-256, which tell keys apart and say
 * nothing of them. A key set in the environment is used only with a token
 * of that very key: one stored by another key is another account's.
 */
export function keyDigest(apiKey: string): string {
  return createHash('sha256').update(apiKey.trim()).digest('hex').slice(0, 16);
}

/**
 * True when a token can be sent as `Authorization: Bearer <token>`: visible
 * ASCII only. (undici refuses control characters and anything above U+00FF
 * in a header, and a JWT never holds a space or a non-ASCII character.)
 */
export function isSendableToken(token: string): boolean {
  return /^[\x21-\x7e]+$/.test(token);
}

/**
 * Returns `token` when it can be sent; otherwise an AuthError (exit 3, never
 * retried) that names where it came from, and never quotes it.
 */
export function sendableToken(token: string, source: string, hint: string): string {
  if (isSendableToken(token)) return token;
  throw new AuthError(
    `the token in ${source} cannot be used: it contains spaces, control or non-ASCII characters, which an HTTP header cannot carry`,
    { hint },
  );
}

/**
 * What to scrub from output for `secret`: the secret itself and, for a JWT,
 * its payload and signature each on their own (a service that echoes them
 * split, reordered or quoted apart must not print them either). Not the
 * header: it names only the algorithm, and is the same for every token.
 * Parts shorter than 16 characters are left (they could match anything).
 */
export function secretParts(secret: string): string[] {
  const segments = secret.split('.');
  const parts =
    segments.length !== 3 || !segments.every((s) => /^[A-Za-z0-9_-]+$/.test(s))
      ? [secret]
      : [secret, ...segments.slice(1).filter((segment) => segment.length >= 16)];
  // As JSON text spells them too (a key holding `"` or `\`): an error body
  // before it is parsed, and every --json line, carry that form. And as a URL
  // spells them (`%2F`, either case): a service may echo a key in a query.
  return [...new Set(parts.flatMap((part) => [part, JSON.stringify(part).slice(1, -1), ...urlSpellings(part)]))];
}

/** `text` as a URL spells it: its %XX escapes in upper case (encodeURIComponent's), and in lower case. */
function urlSpellings(text: string): string[] {
  const inUrl = encodeURIComponent(text);
  return [inUrl, inUrl.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase())];
}

/** The KeyTrace of `apiKey` (trimmed, as every key is used): its digest, and the length and print of its UTF-8 bytes. */
export function keyTrace(apiKey: string): KeyTrace {
  const key = apiKey.trim();
  const bytes = Buffer.from(key, 'utf8');
  let print = 0;
  for (const byte of bytes) print = (Math.imul(print, PRINT_BASE) + byte) >>> 0;
  const shape = `${bytes.length}:${print}`;
  return { digest: keyDigest(key), prints: [`${shape}:${printCheck(shape)}`] };
}

/** The rolling hash's base: an odd multiplier spreads the bytes over 32 bits. */
const PRINT_BASE = 0x01000193;
/** The longest key a print is looked for (a damaged store could name any length). */
const MAX_KEY_BYTES = 4096;

/**
 * The strings in `text` that are an API key of `traces`: the key of a
 * stored token, which notarize knows by its trace alone (no
 * NOTARIZE_API_KEY in this run), when a service echoes it or a name or
 * description holds it; or a known secret as a URL may spell it. A key of
 * known length and print is found wherever it stands, as it is or with any
 * of its bytes written %XX, in either case (Rabin-Karp over the text's bytes
 * as a URL decoder reads them: one pass, each window whose print matches
 * confirmed by the key's digest). A trace without a usable print (a store
 * from before prints were kept, or a damaged one) is looked for as a run of
 * key characters, whole or between separators (`apiKey=<key>&`, `/<key>/`).
 */
export function keysIn(text: string, traces: readonly KeyTrace[]): string[] {
  const found = new Set<string>();
  // %XX read as a URL decoder reads it, and, where the text has one, as written too (a key may hold "%41").
  const readings = text.includes('%') ? [true, false] : [true];
  let bytes: Buffer | undefined; // the text's, made once for every print and reading
  for (const trace of traces) {
    const isKey = (candidate: string) =>
      keyDigest(candidate) === trace.digest || keyDigest(urlDecoded(candidate)) === trace.digest;
    const prints = usablePrints(trace);
    const candidates =
      prints.length === 0
        ? separatedCandidates(text)
        : prints.flatMap(({ length, print }) =>
            readings.flatMap((decoding) => [
              ...windowsPrinted((bytes ??= Buffer.from(text, 'utf8')), length, print, decoding),
            ]),
          );
    for (const candidate of candidates) if (isKey(candidate)) found.add(candidate);
  }
  // Longest first, so a key containing another is removed whole.
  return [...found].sort((a, b) => b.length - a.length);
}

/** Each trace's usable prints, parsed (and checked) once: keysIn runs on every line written. */
const parsedPrints = new WeakMap<KeyTrace, { length: number; print: number }[]>();

function usablePrints(trace: KeyTrace): { length: number; print: number }[] {
  let prints = parsedPrints.get(trace);
  if (prints === undefined) parsedPrints.set(trace, (prints = trace.prints.flatMap(parsePrint)));
  return prints;
}

/**
 * A print `<length>:<print>:<check>` as numbers, or none when it is not one
 * keysIn can use: malformed, out of range, or failing its check (damaged),
 * when the key is looked for without it.
 */
function parsePrint(shape: string): { length: number; print: number }[] {
  const match = /^(\d{1,5}):(\d{1,10}):([0-9a-f]{8})$/.exec(shape);
  if (!match || printCheck(`${match[1]}:${match[2]}`) !== match[3]) return [];
  const [length, print] = [Number(match[1]), Number(match[2])];
  return length >= 8 && length <= MAX_KEY_BYTES && print < 2 ** 32 ? [{ length, print }] : [];
}

/** What a print is checked by: a store file damaged (or edited) in it does not pass for a key's print. */
function printCheck(shape: string): string {
  return createHash('sha256').update(`notarize key print ${shape}`).digest('hex').slice(0, 8);
}

const PERCENT = 0x25;

/** The value of the hex digit `byte`, or -1. */
function hexValue(byte: number | undefined): number {
  if (byte === undefined) return -1;
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  const lower = byte | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

/** The byte the %XX escape at `at` stands for, or -1 when none starts there (a `%` not followed by two hex digits). */
function escapedByte(bytes: Buffer, at: number): number {
  if (bytes[at] !== PERCENT) return -1;
  const high = hexValue(bytes[at + 1]);
  const low = high < 0 ? -1 : hexValue(bytes[at + 2]);
  return low < 0 ? -1 : high * 16 + low;
}

/**
 * Every stretch of `bytes` (a text's) that reads as `length` bytes whose rolling print
 * is `print`; `decoding`: a %XX escape read as the byte it stands for (as a
 * URL decoder reads it), which finds any spelling of the key in a URL.
 */
function* windowsPrinted(bytes: Buffer, length: number, print: number, decoding: boolean): Generator<string> {
  if (bytes.length < length) return;
  let top = 1; // PRINT_BASE ** (length - 1), modulo 2^32: the weight of the byte leaving the window
  for (let i = 1; i < length; i++) top = Math.imul(top, PRINT_BASE) >>> 0;
  // The window's bytes as read, and where each began in `bytes`: rings of `length`.
  const values = new Uint8Array(length);
  const starts = new Uint32Array(length);
  let rolling = 0;
  let count = 0;
  for (let at = 0; at < bytes.length;) {
    const escaped = decoding ? escapedByte(bytes, at) : -1;
    const value = escaped >= 0 ? escaped : bytes[at]!;
    const slot = count % length;
    if (count >= length) rolling = (rolling - Math.imul(values[slot]!, top)) >>> 0;
    rolling = (Math.imul(rolling, PRINT_BASE) + value) >>> 0;
    values[slot] = value;
    starts[slot] = at;
    at += escaped >= 0 ? 3 : 1;
    count++;
    if (count >= length && rolling === print) {
      yield bytes.subarray(starts[count % length], at).toString('utf8');
    }
  }
}

/** What may be a key in text: a run of anything but white space, quotes, a backslash and angle brackets. */
const KEY_RUN = /[^\s"\\<>]{8,}/gu;
/** Where in a run a key may begin (after one of these) or end (before one). */
const KEY_STARTS_AFTER = new Set(['=', ':', '/', '?', '&', '@', '#', ',', ';', '(', '[', '{', "'"]);
const KEY_ENDS_BEFORE = new Set(['.', ':', '/', '?', '&', '#', '!', ',', ';', ')', ']', '}', "'"]);
/** Bounds per run, so that a long run of separators costs little: a key is found at its ends or at a separator. */
const MAX_BOUNDS = 8;

/** keysIn's candidates for a key of unknown length: whole runs of key characters, or their parts between separators. */
function* separatedCandidates(text: string): Generator<string> {
  for (const [run] of text.matchAll(KEY_RUN)) {
    const starts = [0];
    const ends = [run.length];
    for (let i = 0; i < run.length; i++) {
      if (KEY_STARTS_AFTER.has(run[i]!) && starts.length < MAX_BOUNDS) starts.push(i + 1);
      if (KEY_ENDS_BEFORE.has(run[i]!) && ends.length < MAX_BOUNDS) ends.push(i);
    }
    for (const start of starts) {
      for (const end of ends) if (end - start >= 8) yield run.slice(start, end);
    }
  }
}

/**
 * `text` with its %XX escapes read as the bytes they stand for, as keysIn's
 * windows read them: one not followed by two hex digits stays as it is.
 */
function urlDecoded(text: string): string {
  if (!text.includes('%')) return text;
  const bytes = Buffer.from(text, 'utf8');
  const out = Buffer.alloc(bytes.length);
  let length = 0;
  for (let at = 0; at < bytes.length;) {
    const escaped = escapedByte(bytes, at);
    out[length++] = escaped >= 0 ? escaped : bytes[at]!;
    at += escaped >= 0 ? 3 : 1;
  }
  return out.subarray(0, length).toString('utf8');
}

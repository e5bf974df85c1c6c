/**
 * Secrets as they arrive from outside: NOTARIZE_TOKEN, NOTARIZE_API_KEY, the
 * key on standard input or at the prompt, the token in the store. Every one
 * goes through `cleanSecret`, so they are all read the same way: `$(cat
 * file)` keeps no trailing newline in a variable, but a secret pasted into a
 * CI settings page or saved by a Windows editor often ends in "\n", "\r\n"
 * or starts with a byte-order mark, and none of that is part of the secret.
 */
import { createHash } from 'node:crypto';
import { AuthError } from '../errors.js';
import type { KeyTrace } from '../store/store.js';

export type { KeyTrace };

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

/** The KeyTrace of `apiKey` (trimmed, as every key is used). */
export function keyTrace(apiKey: string): KeyTrace {
  const key = apiKey.trim();
  const spellings = new Set([key, ...urlSpellings(key)]);
  return {
    digest: keyDigest(key),
    prints: [...spellings].map((spelt) => `${spelt.length}:${rollingPrint(spelt, 0, spelt.length)}`),
  };
}

/** The rolling hash's base: any odd multiplier spreads the UTF-16 units over 32 bits. */
const PRINT_BASE = 0x01000193;

/** The polynomial hash of text.slice(from, to), modulo 2^32. */
function rollingPrint(text: string, from: number, to: number): number {
  let print = 0;
  for (let i = from; i < to; i++) print = (Math.imul(print, PRINT_BASE) + text.charCodeAt(i)) >>> 0;
  return print;
}

/**
 * The strings in `text` that are an API key of `traces`: the key of a
 * stored token, which notarize knows by its trace alone (no
 * NOTARIZE_API_KEY in this run), when a service echoes it or a name or
 * description holds it. Each spelling of known length and print is found
 * wherever it stands (Rabin-Karp: one pass, each window whose print matches
 * confirmed by the key's digest). A trace without prints (a store from
 * before they were kept) is looked for as a run of key characters, whole
 * or between separators (`apiKey=<key>&`, `/<key>/`).
 */
export function keysIn(text: string, traces: readonly KeyTrace[]): string[] {
  const found = new Set<string>();
  for (const trace of traces) {
    const isKey = (candidate: string) =>
      keyDigest(candidate) === trace.digest || keyDigest(urlDecoded(candidate)) === trace.digest;
    if (trace.prints.length === 0) {
      for (const candidate of separatedCandidates(text)) if (isKey(candidate)) found.add(candidate);
      continue;
    }
    for (const shape of trace.prints) {
      const [length, print] = shape.split(':').map(Number) as [number, number];
      for (const candidate of windowsPrinted(text, length, print)) if (isKey(candidate)) found.add(candidate);
    }
  }
  // Longest first, so a key containing another is removed whole.
  return [...found].sort((a, b) => b.length - a.length);
}

/** Every window of `length` units of `text` whose rolling print is `print`. */
function* windowsPrinted(text: string, length: number, print: number): Generator<string> {
  if (!Number.isInteger(length) || length < 8 || length > text.length) return;
  let top = 1; // PRINT_BASE ** (length - 1), modulo 2^32: the weight of the unit leaving the window
  for (let i = 1; i < length; i++) top = Math.imul(top, PRINT_BASE) >>> 0;
  let rolling = rollingPrint(text, 0, length);
  for (let at = 0; ; at++) {
    if (rolling === print) yield text.slice(at, at + length);
    if (at + length >= text.length) return;
    const out = Math.imul(text.charCodeAt(at), top) >>> 0;
    rolling = (Math.imul((rolling - out) >>> 0, PRINT_BASE) + text.charCodeAt(at + length)) >>> 0;
  }
}

/** What may be a key in text: a run of the characters keys and the URLs or fields around them are made of. */
const KEY_RUN = /[A-Za-z0-9_\-.~+/=:?&@#%!$*]{8,}/g;
/** Where in a run a key may begin (after one of these) or end (before one). */
const KEY_STARTS_AFTER = new Set(['=', ':', '/', '?', '&', '@', '#']);
const KEY_ENDS_BEFORE = new Set(['.', ':', '/', '?', '&', '#', '!']);
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

/** `text` with its %XX escapes read (as a URL spells a key), or as it is when it has none or they are malformed. */
function urlDecoded(text: string): string {
  if (!text.includes('%')) return text;
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

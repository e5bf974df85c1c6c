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
  return [
    ...new Set(
      parts.flatMap((part) => {
        const inUrl = encodeURIComponent(part);
        return [part, JSON.stringify(part).slice(1, -1), inUrl, inUrl.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase())];
      }),
    ),
  ];
}

/** What may be a key in text: a run of the characters keys and the URLs or fields around them are made of. */
const KEY_RUN = /[A-Za-z0-9_\-.~+/=:?&@#%!$*]{8,}/g;
/** Where in a run a key may begin (after one of these) or end (before one). */
const KEY_STARTS_AFTER = new Set(['=', ':', '/', '?', '&', '@', '#']);
const KEY_ENDS_BEFORE = new Set(['.', ':', '/', '?', '&', '#', '!']);
/** Bounds per run, so that a long run of separators costs little: a key is found at its ends or at a separator. */
const MAX_BOUNDS = 8;

/**
 * The strings in `text` that are an API key whose keyDigest is among
 * `digests`: the key of a stored token, which notarize knows by its digest
 * alone (no NOTARIZE_API_KEY in this run), when a service echoes it. A key
 * is looked for as a whole run of key characters, or as the part of one
 * between separators (`apiKey=<key>&`, `/<key>/`); each candidate of 8
 * characters or more is hashed, so only text that is the key matches.
 */
export function keysIn(text: string, digests: ReadonlySet<string>): string[] {
  const found = new Set<string>();
  for (const [run] of text.matchAll(KEY_RUN)) {
    const starts = [0];
    const ends = [run.length];
    for (let i = 0; i < run.length; i++) {
      if (KEY_STARTS_AFTER.has(run[i]!) && starts.length < MAX_BOUNDS) starts.push(i + 1);
      if (KEY_ENDS_BEFORE.has(run[i]!) && ends.length < MAX_BOUNDS) ends.push(i);
    }
    for (const start of starts) {
      for (const end of ends) {
        if (end - start < 8) continue;
        const candidate = run.slice(start, end);
        if (digests.has(keyDigest(candidate)) || digests.has(keyDigest(urlDecoded(candidate)))) found.add(candidate);
      }
    }
  }
  // Longest first, so a key containing another is removed whole.
  return [...found].sort((a, b) => b.length - a.length);
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

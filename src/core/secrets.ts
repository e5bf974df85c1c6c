/**
 * Secrets as they arrive from outside: NOTARIZE_TOKEN, NOTARIZE_API_KEY, the
 * key on standard input or at the prompt, the token in the store. Every one
 * goes through `cleanSecret`, so they are all read the same way: `$(cat
 * file)` keeps no trailing newline in a variable, but a secret pasted into a
 * CI settings page or saved by a Windows editor often ends in "\n", "\r\n"
 * or starts with a byte-order mark, and none of that is part of the secret.
 */
import { AuthError } from '../errors.js';

/** The secret without surrounding whitespace (spaces, tabs, CR, LF, BOM); undefined when nothing is left. */
export function cleanSecret(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
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

/**
 * Reading the service's JWT without verifying it: notarize only needs `exp`
 * (not to send an expired token) and `email`/`userId` (to say who is logged
 * in). The token itself is a secret and never leaves this module in output.
 */
import { tokenClaimsSchema, type TokenClaims } from '../api/schemas.js';

/** Tokens this close to expiry count as expired, so a request does not race the clock. */
const EXPIRY_MARGIN_SECONDS = 30;

/** The claims of a JWT, or undefined when it is not a readable JWT. */
export function readClaims(token: string): TokenClaims | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const parsed = tokenClaimsSchema.safeParse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The `exp` claim of a token (seconds since the epoch), or undefined when it
 * has none or is no readable JWT. Decoded afresh on each call: the one that
 * asks for every request (core/credentials.ts) keeps its current token's
 * expiry beside the token instead.
 */
export function expiryOf(token: string): number | undefined {
  return readClaims(token)?.exp;
}

/** True when a token whose `exp` is `exp` counts as expired at `nowMs` (no `exp`: never). */
export function hasExpired(exp: number | undefined, nowMs = Date.now()): boolean {
  return exp !== undefined && exp - EXPIRY_MARGIN_SECONDS <= nowMs / 1000;
}

/** True when the token says it has expired (a token without `exp` is taken as valid). */
export function isExpired(token: string, nowMs = Date.now()): boolean {
  return hasExpired(expiryOf(token), nowMs);
}

/**
 * `exp` (Unix seconds) as ISO 8601, or undefined past the dates JavaScript
 * can write (±275,760 years): a token that says 1e13 is valid for good, not
 * an error after the login that stored it.
 */
export function expiryIso(exp: number): string | undefined {
  const date = new Date(exp * 1000);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** "user@example (user 12), valid until <ISO>" for messages; never the token. */
export function describeToken(token: string): string {
  const claims = readClaims(token);
  if (!claims) return 'an opaque token (no readable claims)';
  const who = [claims.email, claims.userId === undefined ? undefined : `user ${claims.userId}`].filter(Boolean);
  const iso = claims.exp === undefined ? undefined : expiryIso(claims.exp);
  const until =
    claims.exp === undefined ? 'no expiry given' : iso === undefined ? 'valid past any date' : `valid until ${iso}`;
  return `${who.length > 0 ? who.join(', ') : 'unknown user'}; ${until}`;
}

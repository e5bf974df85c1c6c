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
 * `exp` by token text (null: none readable). Every request asks whether its
 * token has expired, and decoding and validating the same JWT for each of a
 * batch's thousands of requests is CPU taken from the requests. A run sees
 * one or two tokens, so the map stays tiny; it is bounded all the same.
 */
const expiries = new Map<string, number | null>();
const MAX_CACHED_EXPIRIES = 16;

function expiryOf(token: string): number | undefined {
  let exp = expiries.get(token);
  if (exp === undefined) {
    exp = readClaims(token)?.exp ?? null;
    if (expiries.size >= MAX_CACHED_EXPIRIES) expiries.clear();
    expiries.set(token, exp);
  }
  return exp ?? undefined;
}

/** True when the token says it has expired (a token without `exp` is taken as valid). */
export function isExpired(token: string, nowMs = Date.now()): boolean {
  const exp = expiryOf(token);
  return exp !== undefined && exp - EXPIRY_MARGIN_SECONDS <= nowMs / 1000;
}

/** "user@example (user 12), valid until <ISO>" for messages; never the token. */
export function describeToken(token: string): string {
  const claims = readClaims(token);
  if (!claims) return 'an opaque token (no readable claims)';
  const who = [claims.email, claims.userId === undefined ? undefined : `user ${claims.userId}`].filter(Boolean);
  const until =
    claims.exp === undefined ? 'no expiry given' : `valid until ${new Date(claims.exp * 1000).toISOString()}`;
  return `${who.length > 0 ? who.join(', ') : 'unknown user'}; ${until}`;
}

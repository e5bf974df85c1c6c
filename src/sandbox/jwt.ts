/**
 * Minimal HS256 JSON Web Tokens, enough for the sandbox to issue tokens shaped
 * like the real service's and to check the ones clients send back.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The claims the sandbox puts in its tokens, as the real service documents them. */
export interface SandboxClaims {
  userId: number;
  email: string;
  iat: number;
  nbf: number;
  exp: number;
  iss: string;
}

/** The outcome of checking a token: its claims, or why it was refused. */
export type JwtCheck = { ok: true; claims: Record<string, unknown> } | { ok: false; reason: string };

const HEADER = base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));

function base64url(text: string | Buffer): string {
  return Buffer.from(text).toString('base64url');
}

function sign(input: string, secret: Buffer): Buffer {
  return createHmac('sha256', secret).update(input).digest();
}

/** Signs `claims` with HS256 under `secret` and returns the compact token. */
export function signJwt(claims: SandboxClaims, secret: Buffer): string {
  const input = `${HEADER}.${base64url(JSON.stringify(claims))}`;
  return `${input}.${sign(input, secret).toString('base64url')}`;
}

function decodeJson(part: string): unknown {
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Checks a token's form, HS256 signature, `nbf` and `exp` against `nowSeconds`; never throws. */
export function verifyJwt(token: string, secret: Buffer, nowSeconds: number): JwtCheck {
  const parts = token.split('.');
  if (parts.length !== 3) return { ok: false, reason: 'the token is not a JWT' };
  const [header = '', payload = '', signature = ''] = parts;
  const head = decodeJson(header);
  if (!isRecord(head) || head.alg !== 'HS256') return { ok: false, reason: 'the token is not an HS256 JWT' };
  const expected = sign(`${header}.${payload}`, secret);
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { ok: false, reason: 'the token signature is not valid' };
  }
  const claims = decodeJson(payload);
  if (!isRecord(claims)) return { ok: false, reason: 'the token claims are not a JSON object' };
  if (typeof claims.exp !== 'number' || claims.exp <= nowSeconds) return { ok: false, reason: 'the token has expired' };
  if (typeof claims.nbf === 'number' && claims.nbf > nowSeconds)
    return { ok: false, reason: 'the token is not valid yet' };
  return { ok: true, claims };
}

import { describe, expect, it } from 'vitest';
import { describeToken, expiryOf, hasExpired, isExpired, readClaims } from '../../src/core/token.js';

/** An unsigned JWT-shaped token with the given claims (the client never verifies the signature). */
function jwt(claims: unknown): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'HS256', typ: 'JWT' })}.${part(claims)}.c2lnbmF0dXJl`;
}

const NOW_MS = Date.UTC(2024, 0, 1, 12, 0, 0);
const NOW_S = NOW_MS / 1000;

describe('readClaims', () => {
  it('reads the documented claims of a hand-built token', () => {
    const claims = { userId: 1098, email: 'a@example.com', iat: NOW_S, nbf: NOW_S, exp: NOW_S + 36_000, iss: 'dedit' };
    expect(readClaims(jwt(claims))).toEqual(claims);
  });

  it('keeps claims it does not know', () => {
    expect(readClaims(jwt({ exp: NOW_S, role: 'user' }))).toEqual({ exp: NOW_S, role: 'user' });
  });

  it('reads a payload whose base64url uses - and _ (no padding)', () => {
    // '>>>' and '???' encode to base64url with '-' and '_' in them.
    const token = jwt({ email: '>>>???@example.com', exp: NOW_S });
    expect(token.split('.')[1]).toMatch(/[-_]/);
    expect(readClaims(token)?.email).toBe('>>>???@example.com');
  });

  it.each([
    ['an opaque token', 'not-a-jwt'],
    ['an empty string', ''],
    ['a payload that is not base64 JSON', 'aaa.%%%.bbb'],
    ['a payload that is a JSON number', `x.${Buffer.from('42').toString('base64url')}.y`],
  ])('gives undefined for %s', (_label, token) => {
    expect(readClaims(token)).toBeUndefined();
  });

  it('reads a claim of another type as absent, and every other claim still: exp outlives a userId sent as a string', () => {
    expect(readClaims(jwt({ exp: 'tomorrow', userId: 7 }))).toMatchObject({ exp: undefined, userId: 7 });
    for (const odd of [{ userId: 'u1' }, { email: null }, { iss: 42 }, { iat: '1' }, { nbf: [] }]) {
      expect(readClaims(jwt({ ...odd, exp: NOW_S - 3600 }))?.exp).toBe(NOW_S - 3600);
      expect(isExpired(jwt({ ...odd, exp: NOW_S - 3600 }), NOW_MS)).toBe(true);
    }
  });
});

describe('isExpired', () => {
  it('is true for a token whose exp is in the past', () => {
    expect(isExpired(jwt({ exp: NOW_S - 3600 }), NOW_MS)).toBe(true);
  });

  it('is false for a token whose exp is well in the future', () => {
    expect(isExpired(jwt({ exp: NOW_S + 3600 }), NOW_MS)).toBe(false);
  });

  it('counts a token within 30 seconds of its exp as expired', () => {
    expect(isExpired(jwt({ exp: NOW_S + 29 }), NOW_MS)).toBe(true);
    expect(isExpired(jwt({ exp: NOW_S + 30 }), NOW_MS)).toBe(true);
    expect(isExpired(jwt({ exp: NOW_S + 31 }), NOW_MS)).toBe(false);
  });

  it('takes a token without exp, or an unreadable one, as not expired', () => {
    expect(isExpired(jwt({ userId: 1 }), NOW_MS)).toBe(false);
    expect(isExpired('garbage', NOW_MS)).toBe(false);
    expect(readClaims('garbage')).toBeUndefined();
  });

  it('judges the same token against the time of each call', () => {
    const token = jwt({ exp: NOW_S + 3600 });
    expect(isExpired(token, NOW_MS)).toBe(false);
    expect(isExpired(token, NOW_MS + 3600_000)).toBe(true);
    expect(isExpired(token, NOW_MS)).toBe(false);
    expect(isExpired(jwt({ userId: 1 }), NOW_MS + 3600_000)).toBe(false);
  });

  it('answers right for many distinct tokens in turn', () => {
    for (let i = 0; i < 50; i++) {
      expect(isExpired(jwt({ exp: NOW_S + 3600, n: i }), NOW_MS)).toBe(false);
      expect(isExpired(jwt({ exp: NOW_S - 1, n: i }), NOW_MS)).toBe(true);
    }
  });
});

describe('expiryOf and hasExpired', () => {
  it('read exp in seconds, and judge it with the same 30-second margin as isExpired', () => {
    expect(expiryOf(jwt({ exp: NOW_S + 31 }))).toBe(NOW_S + 31);
    expect(hasExpired(NOW_S + 31, NOW_MS)).toBe(false);
    expect(hasExpired(NOW_S + 30, NOW_MS)).toBe(true);
    expect(hasExpired(NOW_S - 1, NOW_MS)).toBe(true);
  });

  it('no exp, or no readable token: no expiry, never expired', () => {
    expect(expiryOf(jwt({ userId: 1 }))).toBeUndefined();
    expect(expiryOf('opaque')).toBeUndefined();
    expect(hasExpired(undefined, NOW_MS)).toBe(false);
  });
});

describe('describeToken', () => {
  it('says who and until when, never the token', () => {
    const token = jwt({ userId: 12, email: 'u@example.com', exp: NOW_S });
    const text = describeToken(token);
    expect(text).toBe('u@example.com, user 12; valid until 2024-01-01T12:00:00.000Z');
    expect(text).not.toContain(token.split('.')[1]);
  });

  it('says so for an opaque token', () => {
    expect(describeToken('opaque-secret-token')).toBe('an opaque token (no readable claims)');
  });
});

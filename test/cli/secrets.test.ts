/** Secrets as they arrive from outside (src/secrets.ts): one way to clean them, one test of what a header can carry. */
import { describe, expect, it } from 'vitest';
import { cleanSecret, isSendableToken, secretParts, sendableToken } from '../../src/secrets.js';
import { AuthError } from '../../src/errors.js';
import { thrownOf } from '../helpers/catch.js';

const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJ1c2VySWQiOjEzOTB9.c2lnbmF0dXJl-_';

describe('cleanSecret', () => {
  it.each([
    ['a trailing LF', `${JWT}\n`],
    ['a trailing CRLF', `${JWT}\r\n`],
    ['a BOM and spaces', `\ufeff  ${JWT}\t`],
  ])('drops %s', (_, raw) => {
    expect(cleanSecret(raw)).toBe(JWT);
  });

  it('keeps what is inside unchanged', () => {
    expect(cleanSecret(' a b ')).toBe('a b');
  });

  it.each([undefined, '', ' \r\n', '\ufeff'])('is undefined when nothing is left (%j)', (raw) => {
    expect(cleanSecret(raw)).toBeUndefined();
  });
});

describe('isSendableToken', () => {
  it('is true for visible ASCII, as every JWT is', () => {
    expect(isSendableToken(JWT)).toBe(true);
    expect(isSendableToken('!~')).toBe(true);
  });

  it.each(['', 'a b', 'a\tb', 'tok\u00e9n', 'a\u007f', 'a\nb', 'emoji😀'])('is false for %j', (token) => {
    expect(isSendableToken(token)).toBe(false);
  });
});

describe('sendableToken', () => {
  it('returns a sendable token', () => {
    expect(sendableToken(JWT, 'NOTARIZE_TOKEN', 'hint')).toBe(JWT);
  });

  it('refuses another with exit 3, naming where it came from and never quoting it', () => {
    const token = 'secret value with spaces';
    const error = thrownOf(() => sendableToken(token, 'NOTARIZE_TOKEN', 'set it again'), AuthError);
    expect(error).toMatchObject({ exitCode: 3, hint: 'set it again' });
    expect(error.message).toMatch(/^the token in NOTARIZE_TOKEN cannot be used: /);
    expect(error.message).not.toContain('secret');
  });
});

describe('secretParts', () => {
  const SIGNED = 'eyJhbGciOiJIUzI1NiJ9.eyJ1c2VySWQiOjEzOTAsImV4cCI6MTd9.1FEf6qdwXkZ4gq7sR0Xy1bKqhE';
  it("a JWT's payload and signature are scrubbed on their own too, not its header", () => {
    const [, payload, signature] = SIGNED.split('.');
    expect(secretParts(SIGNED)).toEqual([SIGNED, payload, signature]);
  });
  it('anything else, and segments under 16 characters, only whole', () => {
    expect(secretParts('ak_live_0123456789abcdef')).toEqual(['ak_live_0123456789abcdef']);
    expect(secretParts(JWT)).toEqual(
      [JWT, 'eyJ1c2VySWQiOjEzOTB9', 'c2lnbmF0dXJl-_'].filter((p) => p.length >= 16 || p === JWT),
    );
    expect(secretParts('a.b c.d')).toEqual(['a.b c.d', 'a.b%20c.d']);
  });
  it('a secret JSON text spells otherwise (a quote, a backslash, a control character) also in that spelling', () => {
    expect(secretParts('my"key\\x\t1')).toEqual([
      'my"key\\x\t1',
      'my\\"key\\\\x\\t1',
      'my%22key%5Cx%091',
      'my%22key%5cx%091',
    ]);
  });
  it('and as a URL spells it, its escapes in either case', () => {
    expect(secretParts('sk_live_Zq9xW2/Lm+Vb7Rt4Ka==')).toEqual([
      'sk_live_Zq9xW2/Lm+Vb7Rt4Ka==',
      'sk_live_Zq9xW2%2FLm%2BVb7Rt4Ka%3D%3D',
      'sk_live_Zq9xW2%2fLm%2bVb7Rt4Ka%3d%3d',
    ]);
  });
});

import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { parseBaseUrl, settingDefinition } from '../../src/settings.js';
import { thrown } from '../helpers/catch.js';

function refusal(value: string): UsageError {
  const error = thrown(() => parseBaseUrl(value));
  expect(error).toBeInstanceOf(UsageError);
  expect(error).toMatchObject({ exitCode: 2 });
  return error as UsageError;
}

describe('parseBaseUrl', () => {
  it('accepts https and leaves the URL otherwise as given', () => {
    expect(parseBaseUrl('https://app.dedit.io')).toBe('https://app.dedit.io');
    expect(parseBaseUrl('https://app.dedit.io:8443')).toBe('https://app.dedit.io:8443');
  });

  it('removes a trailing slash, after the host or after a path', () => {
    expect(parseBaseUrl('https://app.dedit.io/')).toBe('https://app.dedit.io');
    expect(parseBaseUrl('https://example.com/notary/')).toBe('https://example.com/notary');
  });

  it.each(['http://127.0.0.1:8080', 'http://localhost:3000', 'http://[::1]:9000', 'http://127.0.0.2'])(
    'accepts plain http to the loopback address %s',
    (value) => {
      expect(parseBaseUrl(value)).toBe(value);
    },
  );

  it('refuses plain http to a non-loopback host (exit 2, code unsafe_base_url)', () => {
    const error = refusal('http://example.com');
    expect(error.code).toBe('unsafe_base_url');
    expect(error.message).toContain('example.com');
  });

  it.each([
    'http://localhost.example.com',
    'http://127.0.0.1.example.com',
    'http://10.0.0.1',
    // Resolved like any name (a resolver or hosts file may send it anywhere), not loopback by itself.
    'http://foo.localhost',
    'http://a.b.localhost:8080',
  ])('refuses plain http to %s, which only looks local', (value) => {
    refusal(value);
  });

  it.each(['http://127.0.0.1:0', 'https://app.dedit.io:0', 'http://[::1]:00'])(
    'refuses %s: port 0 cannot be connected to, and "try again later" would never end (r98)',
    (value) => {
      const error = refusal(value);
      expect(error.code).toBe('unsafe_base_url');
      expect(error.message).toMatch(/port 0 cannot be connected to$/);
    },
  );

  it.each(['ftp://app.dedit.io', 'file:///etc/passwd', 'javascript:alert(1)'])('refuses the scheme of %s', (value) => {
    expect(refusal(value).code).toBe('unsafe_base_url');
  });

  it.each(['not a url', '', 'app.dedit.io'])('refuses %j, which is not a URL', (value) => {
    refusal(value);
  });

  it("takes a path of RFC 3986's characters, '@' included, and refuses one the URL parser keeps but a receipt may not name", () => {
    expect(parseBaseUrl('https://app.example/a@b/c:d')).toBe('https://app.example/a@b/c:d');
    // RFC 3986 host names take '_' and '~' (unreserved) too.
    expect(parseBaseUrl('https://notary_svc.example')).toBe('https://notary_svc.example');
    expect(parseBaseUrl('https://h~x.example:8443/api')).toBe('https://h~x.example:8443/api');
    for (const value of ['https://app.example/a|b', 'https://app.example/a[b]', 'https://a{b.example']) {
      const error = refusal(value);
      expect(error.code).toBe('unsafe_base_url');
      expect(error.message).toContain('a character a plain URL may not');
    }
  });

  it('refuses credentials in the URL', () => {
    refusal('https://user:pass@app.dedit.io');
    refusal('https://user@app.dedit.io');
    refusal('http://user:pass@127.0.0.1:8080');
  });

  it('refuses a query or a fragment', () => {
    refusal('https://app.dedit.io/?x=1');
    refusal('https://app.dedit.io/#top');
  });

  it('does not repeat a password given in the URL in its error message', () => {
    // The message is printed on stderr and may end up in CI logs.
    const error = refusal('https://alice:s3cr3t-passw0rd@app.dedit.io');
    expect(error.message).not.toContain('s3cr3t-passw0rd');
  });

  it.each([
    'ftp://alice:s3cr3t-passw0rd@127.0.0.1/',
    'file://alice:s3cr3t-passw0rd@host/etc/passwd',
    'http://alice:s3cr3t-passw0rd@example.com/',
    'https://alice:s3cr3t-passw0rd@app.dedit.io/a|b',
    'https://alice:s3cr3t-passw0rd@app.dedit.io/?q=1',
  ])('never repeats the password of %s, whatever it is refused for', (value) => {
    const error = refusal(value);
    expect(`${error.message} ${error.hint ?? ''}`).not.toContain('s3cr3t-passw0rd');
    expect(`${error.message} ${error.hint ?? ''}`).not.toContain('alice');
  });

  it('names only the scheme of a URL that is not http(s)', () => {
    expect(refusal('ftp://alice:pw@127.0.0.1/').message).toBe(
      'invalid base URL: its scheme is ftp, and only http and https are supported',
    );
  });
});

describe('settingDefinition', () => {
  it('finds a known setting and validates its values', () => {
    const timeout = settingDefinition('timeout');
    expect(timeout.parse('1000')).toBe('1000');
    expect(refusalOf(() => timeout.parse('-1'))).toMatchObject({ exitCode: 2 });
    expect(refusalOf(() => timeout.parse('1.5'))).toMatchObject({ exitCode: 2 });
    expect(settingDefinition('baseUrl').parse('https://x.example/')).toBe('https://x.example');
  });

  it('refuses an unknown key, listing the known ones', () => {
    const error = refusalOf(() => settingDefinition('colour'));
    expect(error.hint).toContain('baseUrl');
  });
});

function refusalOf(fn: () => unknown): UsageError {
  const error = thrown(fn);
  expect(error).toBeInstanceOf(UsageError);
  return error as UsageError;
}

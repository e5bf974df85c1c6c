/**
 * Secrets from the environment and from outside in general (NOTARIZE_TOKEN,
 * NOTARIZE_API_KEY, the key on standard input, the stored token): what
 * `$(cat file)`, a CI secret pasted with a newline or a Windows editor give.
 * Surrounding whitespace is trimmed everywhere the same way; a token that
 * still cannot be a header value is exit 3 naming where it came from, never
 * 4 (never retried) and never quoted. In-process through `main()`, against
 * the bed's sandbox.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { Agent } from 'undici';
import { describe, expect, it } from 'vitest';
import { HttpTransport } from '../../src/api/http.js';
import { loginResponseSchema } from '../../src/api/schemas.js';
import { cleanSecret } from '../../src/secrets.js';
import { AuthError, EXIT, TransientError, UsageError } from '../../src/errors.js';
import { expectFailure, expectJsonError } from '../helpers/assert.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { routes } from '../helpers/sandbox.js';
import { sha256 } from '../helpers/documents.js';
import { spawnCli } from '../helpers/cli.js';

let bed: Bed;
useBed((created) => (bed = created));

/** What untidy secrets look like around the real value. */
const WRAPPINGS: [string, (s: string) => string][] = [
  ['a trailing newline', (s) => `${s}\n`],
  ['a trailing CRLF', (s) => `${s}\r\n`],
  ['spaces and a tab around', (s) => `  ${s}\t `],
  ['a byte-order mark before', (s) => `\uFEFF${s}`],
];

/** Quick retries, so a test that wrongly retried would still end fast, and show it in the call log. */
const FAST = { NOTARIZE_RETRIES: '3', NOTARIZE_RETRY_DELAY_MS: '1' };

async function document(name: string): Promise<{ path: string; hash: string }> {
  const content = `${name} ${Math.random()}`;
  return { path: await bed.file(name, content), hash: sha256(content) };
}

describe('cleanSecret: the one reading of every secret', () => {
  it('trims surrounding whitespace, keeps the inside, and reads blank as absent', () => {
    for (const [, wrap] of WRAPPINGS) expect(cleanSecret(wrap('abc.def'))).toBe('abc.def');
    expect(cleanSecret('a b')).toBe('a b');
    expect(cleanSecret(' \r\n')).toBeUndefined();
    expect(cleanSecret('')).toBeUndefined();
    expect(cleanSecret(undefined)).toBeUndefined();
  });
});

describe('NOTARIZE_TOKEN', () => {
  it.each(WRAPPINGS)('with %s is trimmed: register succeeds', async (_what, wrap) => {
    const token = await bed.directLogin();
    const doc = await document('token.txt');
    const run = await bed.main(['register', doc.path], { env: { ...FAST, NOTARIZE_TOKEN: wrap(token) } });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(doc.hash);
    expect(routes(bed.sandbox.calls)).toEqual(['login', 'request', 'forfait']); // the login is directLogin's
  });

  it.each([
    ['a control character inside', (t: string) => `${t.slice(0, 20)}\u0001${t.slice(20)}`],
    ['a newline inside', (t: string) => `${t.slice(0, 20)}\n${t.slice(20)}`],
    ['a space inside', (t: string) => `${t.slice(0, 20)} ${t.slice(20)}`],
    ['a non-ASCII letter', (t: string) => `${t}é`],
    ['a character undici refuses (above U+00FF)', (t: string) => `${t}\u2603`],
  ])('with %s: exit 3 naming NOTARIZE_TOKEN, nothing sent, nothing retried', async (_what, spoil) => {
    const token = spoil(await bed.directLogin());
    bed.addSecret(token);
    const doc = await document('bad-token.txt');
    const mark = bed.mark();
    const run = await bed.main(['register', doc.path], { env: { ...FAST, NOTARIZE_TOKEN: token } });
    expectFailure(run, EXIT.auth, /the token in NOTARIZE_TOKEN cannot be used/);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).not.toMatch(/UND_ERR|try again later|redacted/);
    expect(bed.callsSince(mark)).toEqual([]);

    const json = expectJsonError(
      await bed.main(['--json', 'register', doc.path], { env: { ...FAST, NOTARIZE_TOKEN: token } }),
      EXIT.auth,
    );
    expect(json.code).toBe('auth');
    expect(json.message).toContain('NOTARIZE_TOKEN');
  });

  it('a blank NOTARIZE_TOKEN counts as unset, for register and for logout', async () => {
    const doc = await document('blank.txt');
    const run = await bed.main(['register', doc.path], { env: { NOTARIZE_TOKEN: ' \r\n' } });
    expectFailure(run, EXIT.auth, /not logged in/);
    const logout = await bed.main(['logout'], { env: { NOTARIZE_TOKEN: '\n' } });
    expect(logout.code).toBe(0);
    expect(logout.stderr).not.toMatch(/warning/);
  });
});

describe('NOTARIZE_API_KEY and the key on standard input', () => {
  it.each(WRAPPINGS)('with %s: register logs in on the fly with the trimmed key', async (_what, wrap) => {
    const doc = await document('key.txt');
    const run = await bed.main(['register', doc.path], {
      env: { ...FAST, NOTARIZE_API_KEY: wrap(bed.sandbox.apiKey) },
    });
    expect(run.code, run.stderr).toBe(0);
    expect(routes(bed.sandbox.calls)).toEqual(['login', 'request', 'forfait']);
    expect(JSON.parse(bed.sandbox.calls[0]!.body)).toEqual({ apiKey: bed.sandbox.apiKey });
  });

  it('login reads the key the same way from NOTARIZE_API_KEY and from --api-key-stdin', async () => {
    const fromEnv = await bed.main(['login'], { env: { NOTARIZE_API_KEY: `${bed.sandbox.apiKey}\r\n` } });
    expect(fromEnv.code, fromEnv.stderr).toBe(0);
    const fromStdin = await bed.main(['login', '--api-key-stdin'], { input: `\uFEFF${bed.sandbox.apiKey}\r\n` });
    expect(fromStdin.code, fromStdin.stderr).toBe(0);
    const sent = bed.sandbox.calls.map((c) => (JSON.parse(c.body) as { apiKey: string }).apiKey);
    expect(sent).toEqual([bed.sandbox.apiKey, bed.sandbox.apiKey]);
  });

  it('typed as an option no command takes, the key in NOTARIZE_API_KEY is scrubbed from the parse error', async () => {
    const key = bed.sandbox.apiKey;
    for (const args of [
      ['login', `--api-key=${key}`],
      ['register', '--api-key', key, 'doc.txt'],
      ['--json', `--token=${key}`],
    ]) {
      const run = await bed.main(args, { env: { NOTARIZE_API_KEY: key } });
      expect(run.code, run.stderr).toBe(2);
      // An `--option=value` is named without its value; a value of its own is not quoted at all.
      if (args.some((arg) => arg.endsWith(`=${key}`))) expect(run.stderr).toMatch(/unknown option '--(api-key|token)'/);
      expect(run.stderr).not.toContain(key);
    }
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('a blank key on standard input is no credentials (exit 3, as a blank NOTARIZE_API_KEY), nothing sent', async () => {
    // login --help's CI example with a secret this job cannot see (a fork's pull request).
    for (const input of [' \r\n', '']) {
      const run = await bed.main(['login', '--api-key-stdin'], { input });
      expectFailure(run, EXIT.auth, /the API key is empty/);
      const json = await bed.main(['login', '--api-key-stdin', '--json'], { input });
      expectJsonError(json, EXIT.auth);
    }
    expect(bed.sandbox.calls).toEqual([]);
  });
});

describe('NOTARIZE_SANDBOX_API_KEY', () => {
  it('is trimmed the same way, and the sandbox still prints it (its own key, shown on purpose)', async () => {
    const sandbox = spawnCli(
      ['sandbox', '--port', '0', '--json'],
      { ...bed.env(), NOTARIZE_SANDBOX_API_KEY: 'sandbox_0123456789abcdef\r\n' },
      { cwd: bed.workDir },
    );
    let first: string;
    try {
      first = await sandbox.firstLine;
    } finally {
      sandbox.child.kill('SIGTERM');
    }
    bed.record(await sandbox.done);
    expect(JSON.parse(first)).toMatchObject({ apiKey: 'sandbox_0123456789abcdef' });
  });
});

describe('the stored token', () => {
  async function storeToken(token: string): Promise<void> {
    await mkdir(bed.storeDir, { recursive: true, mode: 0o700 });
    await writeFile(bed.credentialsFile, JSON.stringify({ tokens: { [bed.url]: token } }), { mode: 0o600 });
  }

  it('with a trailing newline (a hand-edited credentials.json) is trimmed', async () => {
    await storeToken(`${await bed.directLogin()}\r\n`);
    const doc = await document('stored.txt');
    const run = await bed.main(['register', doc.path], { env: FAST });
    expect(run.code, run.stderr).toBe(0);
  });

  it('that cannot be sent is exit 3 naming the store; with a key at hand it is replaced by a login', async () => {
    const token = await bed.directLogin();
    const spoiled = `${token.slice(0, 20)}\u0007${token.slice(20)}`;
    bed.addSecret(spoiled);
    await storeToken(spoiled);
    const doc = await document('stored-bad.txt');
    const mark = bed.mark();
    const run = await bed.main(['register', doc.path], { env: FAST });
    expectFailure(
      run,
      EXIT.auth,
      /the token in the store \(credentials\.json, for http:\/\/127\.0\.0\.1:\d+\) cannot be used/,
    );
    expect(run.stderr).toMatch(/notarize login/);
    expect(bed.callsSince(mark)).toEqual([]);

    const withKey = await bed.main(['register', doc.path], { env: { ...FAST, ...bed.withKey() } });
    expect(withKey.code, withKey.stderr).toBe(0);
    expect(routes(bed.callsSince(mark))).toEqual(['login', 'request', 'forfait']);
  });
});

describe('the HTTP choke point never takes a local argument error for a network failure', () => {
  it('a token that cannot be a header value is an AuthError, and nothing reaches the server', async () => {
    const agent = new Agent();
    try {
      const transport = new HttpTransport({ baseUrl: bed.url, timeoutMs: 5000, userAgent: 'test', dispatcher: agent });
      const mark = bed.mark();
      for (const token of ['abc\ndef', 'abc\rdef', 'abc\u0000def', 'abc\u2603def', 'abcdéf']) {
        const error = await transport.send({ method: 'GET', path: '/api/v2/payment/subscription/active', token }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error, JSON.stringify(token)).toBeInstanceOf(AuthError);
        expect(error).not.toBeInstanceOf(TransientError);
        expect((error as Error).message).not.toContain('abc');
      }
      expect(bed.callsSince(mark)).toEqual([]);
    } finally {
      await agent.destroy();
    }
  });

  it('any other argument undici refuses (here a user agent with a newline) is a usage error, not transient', async () => {
    const agent = new Agent();
    try {
      const transport = new HttpTransport({ baseUrl: bed.url, timeoutMs: 5000, userAgent: 'a\nb', dispatcher: agent });
      const mark = bed.mark();
      const error = await transport.send({ method: 'GET', path: '/api/v2/payment/subscription/active' }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(UsageError);
      expect(error).toMatchObject({ exitCode: EXIT.usage, code: 'invalid_request' });
      expect((error as Error).message).toMatch(/was not sent: .*UND_ERR_INVALID_ARG/);
      expect(bed.callsSince(mark)).toEqual([]);
    } finally {
      await agent.destroy();
    }
  });

  it('a login answer whose token could not be sent back is not a token (exit 5 when read)', () => {
    expect(loginResponseSchema.safeParse({ token: 'eyJ.eyJ.sig' }).success).toBe(true);
    expect(loginResponseSchema.safeParse({ token: 'eyJ.eyJ.sig\n' }).success).toBe(false);
    expect(loginResponseSchema.safeParse({ token: 'eyJ.eyJ.sïg' }).success).toBe(false);
  });
});

describe('a file named with a secret', () => {
  it('hash prints it redacted, and says so once: that line does not name its file exactly (r101)', async () => {
    const key = bed.sandbox.apiKey;
    const named = await bed.file(`${key}.txt`, 'named with the key\n');
    const other = await bed.file(`more-${key}.txt`, 'also named with the key\n');
    const run = await bed.main(['hash', named, other], { env: bed.withKey() });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout + run.stderr).not.toContain(key);
    expect(run.stdout).toContain(`${sha256('named with the key\n')}  `);
    expect(run.stdout.match(/\[redacted\]\.txt/g)).toHaveLength(2);
    expect(
      run.stderr.match(/warning: a secret of yours \(the API key or a token\) was in what notarize printed/g),
    ).toHaveLength(1);
  });
});

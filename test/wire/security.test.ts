/**
 * Issue 3, "Security": the token and the API key never appear in any output
 * (every run of this file is audited, failures, --verbose and --json
 * included); the hash in a path is validated before any URL is built; the
 * base URL must be http(s), plain http only to loopback. (The store's own
 * privacy is in test/store/privacy.test.ts.)
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HttpTransport } from '../../src/api/http.js';
import { createDispatcher } from '../../src/api/dispatcher.js';
import { auditSecrets } from '../helpers/audit.js';
import { mapLimit, runCli, describeRun } from '../helpers/cli.js';
import { makeDocument } from '../helpers/documents.js';
import { cliEnv, NO_REMOTE_TRAFFIC } from '../helpers/env.js';
import { startFakeService } from '../helpers/local-server.js';
import { runMain } from '../helpers/main.js';
import { handMadeJwt, useSandboxes } from '../helpers/sandbox.js';
import { storedTokens, storePaths } from '../helpers/store.js';
import { useTempDirs } from '../helpers/temp-dirs.js';
import { readFixture } from '../helpers/fixtures.js';

const audit = auditSecrets();
const tempDir = useTempDirs();
const newSandbox = useSandboxes();
const HEX = 'ab'.repeat(32);
const SESSION = readFixture('session-free-plan.json');

describe('secrets never appear in any output', () => {
  it('a battery of commands, successes and failures, --verbose and --json: all audited at the end of the file', async () => {
    const sandbox = await newSandbox();
    const faulty = await newSandbox({
      faults: [
        { route: 'request', kind: 'status', value: 401, count: 2 },
        { route: 'forfait', kind: 'status', value: 503, count: 1 },
        { route: 'forfait', kind: 'html', count: 1 },
        { route: 'login', kind: 'status', value: 500, count: 1 },
      ],
    });
    const configDir = tempDir();
    const docs = tempDir();
    const a = makeDocument(docs, 'a.txt');
    const b = makeDocument(docs, 'b.txt');
    const key = { NOTARIZE_API_KEY: sandbox.apiKey };
    const runs: [string[], Record<string, string | undefined>, string?][] = [];
    for (const flags of [[], ['--verbose'], ['--json'], ['--json', '--verbose']]) {
      runs.push(
        [['login', ...flags], { NOTARIZE_BASE_URL: sandbox.url, ...key }],
        [['login', '--api-key-stdin', ...flags], { NOTARIZE_BASE_URL: sandbox.url }, sandbox.apiKey],
        [
          ['login', '--api-key-stdin', ...flags],
          { NOTARIZE_BASE_URL: sandbox.url },
          'sandbox_ffffffffffffffffffffffffffffffff',
        ],
        [['register', a.path, ...flags], { NOTARIZE_BASE_URL: sandbox.url, ...key }],
        [
          ['register', b.path, '--no-complete', ...flags],
          { NOTARIZE_BASE_URL: faulty.url, NOTARIZE_API_KEY: faulty.apiKey },
        ],
        [['complete', b.hash, ...flags], { NOTARIZE_BASE_URL: faulty.url, NOTARIZE_API_KEY: faulty.apiKey }],
        [['register', a.path, ...flags], { NOTARIZE_BASE_URL: 'http://127.0.0.1:9', ...key }],
        [
          ['register', a.path, ...flags],
          { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_TOKEN: handMadeJwt(Date.now() / 1000 + 3600) },
        ],
        [['register', a.path, '--force', ...flags], { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_TOKEN: handMadeJwt(1) }],
        [['pending', ...flags], { NOTARIZE_BASE_URL: faulty.url }],
        [['config', 'list', ...flags], { NOTARIZE_BASE_URL: sandbox.url, ...key }],
        [['logout', ...flags], { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_TOKEN: handMadeJwt(1) }],
        [['complete', 'nothex', ...flags], { NOTARIZE_BASE_URL: sandbox.url, ...key }],
        // A session for a hash the service never saw: refused (exit 1).
        [['complete', HEX, '--session', '-', ...flags], { NOTARIZE_BASE_URL: sandbox.url, ...key }, SESSION],
      );
    }
    // Real processes for plain and --json --verbose runs, in-process for the others: the same code prints both.
    const results = await mapLimit(runs, 4, ([args, env, stdin]) => {
      const spawn = !args.includes('--verbose') === !args.includes('--json');
      const options = stdin === undefined ? {} : { input: stdin };
      return spawn ? runCli(args, cliEnv(configDir, env), options) : runMain(args, cliEnv(configDir, env), options);
    });
    expect(new Set(results.map((r) => r.code))).toEqual(new Set([0, 1, 2, 3, 4, 5]));
    expect(results).toHaveLength(runs.length);
    expect(audit.size().secrets).toBeGreaterThanOrEqual(4);
  }, 120_000);

  it('a service that echoes the token and the API key in its error bodies: they are not repeated', async () => {
    const apiKey = 'sandbox_0123456789abcdef0123456789abcdef';
    const stored = handMadeJwt(Date.now() / 1000 + 3600);
    const fake = await startFakeService((route, req) => {
      const echo = `you sent ${req.body} with ${req.url}`;
      if (route === 'login') return { status: 400, body: JSON.stringify({ message: echo }) };
      return { status: 401, body: JSON.stringify({ message: `token ${stored} is not valid; ${echo}` }) };
    });
    try {
      const configDir = tempDir();
      mkdirSync(configDir, { recursive: true, mode: 0o700 });
      writeFileSync(join(configDir, 'credentials.json'), JSON.stringify({ tokens: { [fake.url]: stored } }));
      const doc = makeDocument(tempDir(), 'echo.txt');
      // The stored token is not in the environment: only the transport can keep it out of the message.
      const viaStore = await runMain(
        ['register', doc.path, '--verbose'],
        cliEnv(configDir, { NOTARIZE_BASE_URL: fake.url }),
      );
      expect(viaStore.code, describeRun(viaStore)).toBe(3);
      expect(viaStore.stderr).toContain('[redacted]');
      const viaKey = await runMain(
        ['login', '--json'],
        cliEnv(tempDir(), { NOTARIZE_BASE_URL: fake.url, NOTARIZE_API_KEY: apiKey }),
      );
      // A login refused, whatever its status: no usable credentials.
      expect(viaKey.code, describeRun(viaKey)).toBe(3);
      expect(viaKey.stderr).toContain('[redacted]');
    } finally {
      await fake.close();
    }
  });

  it('a token a service echoed into a record or a session: no command that prints the store shows it', async () => {
    const sandbox = await newSandbox();
    const configDir = tempDir();
    const doc = makeDocument(tempDir(), 'echoed.txt');
    const pendingDoc = makeDocument(tempDir(), 'echoed-pending.txt');
    const env = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey });
    for (const args of [
      ['register', doc.path, '-d', 'ECHO-HERE'],
      ['register', pendingDoc.path, '-d', 'ECHO-HERE', '--no-complete'],
    ]) {
      const run = await runMain(args, env);
      expect(run.code, describeRun(run)).toBe(0);
    }
    // What a service echoing the token would have put there: the store keeps answers as they came.
    const token = Object.values(storedTokens(configDir))[0]!;
    const paths = storePaths(configDir, sandbox.url);
    for (const file of [paths.ledger(doc.hash), paths.pending(pendingDoc.hash)]) {
      writeFileSync(file, readFileSync(file, 'utf8').replaceAll('ECHO-HERE', `echo ${token}`));
    }
    // Without the key in the environment: the stored token is known from the store alone.
    const noKey = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url });
    for (const args of [
      ['show', doc.hash],
      ['show', doc.hash, '--json'],
      ['list'],
      ['list', '--json'],
      ['receipt', doc.hash],
      ['verify', doc.path, '--json'],
      ['pending'],
      ['pending', '--json'],
    ]) {
      const run = await runMain(args, noKey);
      expect(run.code, describeRun(run)).toBe(0);
      expect(run.stdout + run.stderr, args.join(' ')).toContain('[redacted]');
      expect(run.stdout + run.stderr, args.join(' ')).not.toContain(token.split('.')[2]);
    }
    // Logged out (or replaced by another login), the token is still valid for hours: never printed either.
    const logout = await runMain(['logout'], noKey);
    expect(logout.code, describeRun(logout)).toBe(0);
    expect(storedTokens(configDir)).toEqual({});
    for (const args of [['show', doc.hash, '--json'], ['list'], ['receipt', doc.hash], ['pending', '--json']]) {
      const run = await runMain(args, noKey);
      expect(run.code, describeRun(run)).toBe(0);
      expect(run.stdout + run.stderr, args.join(' ')).not.toContain(token.split('.')[2]);
    }
  });

  it('a key echoed into a record after `notarize login` (known by its digest alone): no command, receipt or spelling shows it', async () => {
    const apiKey = 'sk_live_Zq9xW2/Lm+Vb7Rt4Ka==';
    const sandbox = await newSandbox({ apiKey });
    const configDir = tempDir();
    const doc = makeDocument(tempDir(), 'echoed-key.txt');
    const env = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url });
    const login = await runMain(['login', '--api-key-stdin'], env, { input: apiKey });
    expect(login.code, describeRun(login)).toBe(0);
    const registered = await runMain(['register', doc.path, '-d', 'ECHO-HERE'], env);
    expect(registered.code, describeRun(registered)).toBe(0);
    // What a service echoing the key would have put there: plain, in a URL's query, and as a path segment.
    const echo = `key ${apiKey}, callback?apiKey=${encodeURIComponent(apiKey)}&x=1, /keys/${apiKey}/`;
    const ledger = storePaths(configDir, sandbox.url).ledger(doc.hash);
    writeFileSync(ledger, readFileSync(ledger, 'utf8').replaceAll('ECHO-HERE', echo));
    const receipts = tempDir();
    for (const args of [
      ['show', doc.hash],
      ['show', doc.hash, '--json'],
      ['list', '--json'],
      ['receipt', doc.hash],
      ['receipt', doc.hash, '-o', join(receipts, 'r.json')],
      ['verify', doc.path, '--json'],
    ]) {
      const run = await runMain(args, env);
      expect(run.code, describeRun(run)).toBe(0);
      const shown = run.stdout + run.stderr;
      expect(shown, args.join(' ')).toContain('[redacted]');
      for (const form of [apiKey, encodeURIComponent(apiKey), 'Zq9xW2'])
        expect(shown, args.join(' ')).not.toContain(form);
    }
    expect(readFileSync(join(receipts, 'r.json'), 'utf8')).not.toContain('Zq9xW2');
    // And a description holding the key is refused before it is sent, as with the key in the environment.
    const other = makeDocument(tempDir(), 'described.txt');
    const refused = await runMain(['register', other.path, '-d', `note ${apiKey}`], env);
    expect(refused.code, describeRun(refused)).toBe(2);
    expect(refused.stderr).toContain('holds a secret of yours (an API key, a token or a proxy password)');
  });

  it('a long message without a space is cut, not lost: its start is shown, then an ellipsis', async () => {
    const fake = await startFakeService(() => ({ status: 400, body: JSON.stringify({ message: 'y'.repeat(400) }) }));
    try {
      const run = await runMain(
        ['login'],
        cliEnv(tempDir(), { NOTARIZE_BASE_URL: fake.url, NOTARIZE_API_KEY: 'sk_live_a_key_long_enough' }),
      );
      expect(run.code, describeRun(run)).toBe(3);
      expect(run.stderr).toMatch(/answered 400: y{44}…/);
    } finally {
      await fake.close();
    }
  });

  it('a logged-in key a service echoes where its long message is cut: not even its first characters', async () => {
    const apiKey = 'sk_live_Zq9xW2Lm7Rt4KaPQ';
    const token = handMadeJwt(Math.floor(Date.now() / 1000) + 3600);
    const fake = await startFakeService((route) =>
      route === 'login'
        ? { status: 200, body: JSON.stringify({ token }) }
        : { status: 400, body: JSON.stringify({ message: `${'x'.repeat(277)} ${apiKey}` }) },
    );
    try {
      const env = cliEnv(tempDir(), { NOTARIZE_BASE_URL: fake.url });
      const login = await runMain(['login', '--api-key-stdin'], env, { input: apiKey });
      expect(login.code, describeRun(login)).toBe(0);
      const doc = makeDocument(tempDir(), 'cut.txt');
      for (const flags of [[], ['--json']]) {
        const run = await runMain(['register', doc.path, '-d', 'plain', ...flags], env);
        expect(run.code, describeRun(run)).toBe(1);
        expect(run.stderr).toContain('x'.repeat(50));
        expect(run.stderr).not.toContain('sk_live_Zq');
      }
    } finally {
      await fake.close();
    }
  });

  it('a key echoed with `\\/` for its slash across the cut of a long message: not even its first characters', async () => {
    const apiKey = 'sk_live/ABCDEFGHIJ0123456789';
    const body = `{"message":"${'x'.repeat(275)} key sk_live\\/ABCDEFGHIJ0123456789"}`;
    const fake = await startFakeService(() => ({ status: 401, body }));
    try {
      const run = await runMain(
        ['login', '--json'],
        cliEnv(tempDir(), { NOTARIZE_BASE_URL: fake.url, NOTARIZE_API_KEY: apiKey }),
      );
      expect(run.code, describeRun(run)).toBe(3);
      expect(run.stderr).toContain('[redacted]');
      expect(run.stderr).not.toContain('ABCDEFGHIJ');
    } finally {
      await fake.close();
    }
  });

  it('a key holding a quote or a backslash, echoed however JSON spells it, is redacted in text and --json', async () => {
    const apiKey = 'my"secret\\key12345';
    // The same key three ways: JSON.stringify's escapes, `\u0022` for the quote, and the key inside the raw text.
    const spellings = [JSON.stringify(apiKey), `"my\\u0022secret\\\\key12345"`, JSON.stringify(`bad: ${apiKey}`)];
    for (const spelled of spellings) {
      const fake = await startFakeService(() => ({ status: 400, body: `{"message":${spelled}}` }));
      try {
        for (const flags of [[], ['--json']]) {
          const run = await runMain(
            ['login', ...flags],
            cliEnv(tempDir(), { NOTARIZE_BASE_URL: fake.url, NOTARIZE_API_KEY: apiKey }),
          );
          expect(run.code, describeRun(run)).toBe(3);
          expect(run.stderr).toContain('[redacted]');
          for (const form of ['secret', JSON.stringify(apiKey).slice(1, -1)]) {
            expect(run.stderr + run.stdout, `${spelled} ${flags.join(' ')}`).not.toContain(form);
          }
        }
      } finally {
        await fake.close();
      }
    }
  });
});

describe('the hash in a path is validated before any URL is built', () => {
  it.each([
    ['complete', '../../x'],
    ['complete', `${HEX}/../../auth/login`],
    ['complete', HEX.slice(0, 63)],
    ['complete', `${HEX}0`],
    ['complete', `${HEX.slice(0, 62)}zz`],
    ['register', '--hash', '../../../etc/passwd', '-d', 'x'],
    ['register', '--hash', `${HEX}%2f..`, '-d', 'x'],
  ])('%s %s: exit 2, nothing sent', async (...args) => {
    const sandbox = await newSandbox();
    const result = await runMain(
      args,
      cliEnv(tempDir(), { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey }),
    );
    expect(result.code, describeRun(result)).toBe(2);
    expect(result.stderr).toMatch(/invalid hash/);
    expect(sandbox.calls).toEqual([]);
  });

  it('a pending file whose hash field is not a hash is damaged: exit 2, nothing sent', async () => {
    const sandbox = await newSandbox();
    const configDir = tempDir();
    const paths = storePaths(configDir, sandbox.url);
    mkdirSync(paths.pendingDir, { recursive: true, mode: 0o700 });
    writeFileSync(
      paths.pending(HEX),
      JSON.stringify({
        schemaVersion: 1,
        hash: '../../x',
        description: '',
        custody: false,
        savedAt: '',
        sessionJson: '{}',
      }),
    );
    const result = await runMain(
      ['complete', HEX],
      cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey }),
    );
    expect(result.code, describeRun(result)).toBe(2);
    expect(result.stderr).toContain('is damaged');
    expect(sandbox.calls).toEqual([]);
  });

  it('the transport itself refuses a path with a dot segment or odd characters, before connecting', async () => {
    const fake = await startFakeService(() => ({ status: 200, body: '{}' }));
    const dispatcher = createDispatcher({});
    try {
      const transport = new HttpTransport({ baseUrl: fake.url, timeoutMs: 2000, userAgent: 'test', dispatcher });
      for (const path of [
        '/api/v2/registration/../auth/login',
        '/api/v2/file/./x',
        '/api/v2/file/a b',
        '/api/v2/x\r\nHost: evil',
        '/etc/passwd',
      ]) {
        await expect(transport.send({ method: 'POST', path, body: '{}' })).rejects.toMatchObject({
          exitCode: 2,
          code: 'unsafe_path',
        });
      }
      expect(fake.received).toEqual([]);
      expect(
        (await transport.send({ method: 'POST', path: '/api/v2/registration/?subscription=true', body: '{}' })).status,
      ).toBe(200);
    } finally {
      await dispatcher.destroy();
      await fake.close();
    }
  });
});

describe('the base URL must be http(s), and plain http only to loopback', () => {
  it.each([
    ['ftp://127.0.0.1/', /only http and https/],
    ['file:///etc/passwd', /only http and https/],
    ['http://example.com', /plain http/],
    ['http://10.1.2.3:8787', /plain http/],
    ['http://127.0.0.1.example.com', /plain http/],
    ['https://user:s3cr3t-passw0rd@app.dedit.io', /no credentials/],
    ['not a url', /invalid base URL: it holds a space/],
    ['notaurl', /invalid base URL: it is not a URL/],
    // What the URL parser would repair without a word: an ESC at the end, a tab inside, a bidi override.
    ['https://app.dedit.io/\u001b', /invalid base URL: it holds a space, control or invisible format character/],
    ['https://app.de\tdit.io', /control/],
    ['https://app.dedit.io/\u202e', /invisible format character/],
    ['https://u:s3cr3t-passw0rd@app.dedit.io/ x', /invalid base URL/],
  ])('%s: exit 2, by flag and by environment', async (url, message) => {
    const doc = makeDocument(tempDir(), 'u.txt');
    for (const [args, env] of [
      [['register', doc.path, '--base-url', url], {}],
      [['register', doc.path], { NOTARIZE_BASE_URL: url }],
      [['complete', HEX, '--json'], { NOTARIZE_BASE_URL: url }],
    ] as const) {
      const result = await runMain(
        [...args],
        cliEnv(tempDir(), {
          ...env,
          ...NO_REMOTE_TRAFFIC,
          NOTARIZE_API_KEY: 'sandbox_00000000000000000000000000000000',
        }),
        { noBaseUrlCheck: true },
      );
      expect(result.code, describeRun(result)).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).not.toContain('s3cr3t-passw0rd');
    }
  });

  it.each(['http://127.0.0.1', 'http://localhost'])('%s:<port> is accepted (loopback)', async (host) => {
    const sandbox = await newSandbox();
    const port = new URL(sandbox.url).port;
    const doc = makeDocument(tempDir(), 'l.txt');
    const result = await runMain(
      ['register', doc.path, '--base-url', `${host}:${port}`],
      cliEnv(tempDir(), { NOTARIZE_API_KEY: sandbox.apiKey }),
    );
    expect(result.code, describeRun(result)).toBe(0);
  });
});

/**
 * Issue 3, "Token expiry": `exp` is read and an expired token is never sent
 * (the sandbox's call log records whether each call carried an Authorization
 * header, never its value); with NOTARIZE_API_KEY a login happens instead.
 * On a 401 with NOTARIZE_API_KEY: exactly one new login and one retry.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditSecrets } from '../helpers/audit.js';
import { describeRun } from '../helpers/cli.js';
import { makeDocument } from '../helpers/documents.js';
import { cliEnv, type EnvVars } from '../helpers/env.js';
import { runMain } from '../helpers/main.js';
import { parseFaults } from '../../src/sandbox/server.js';
import { handMadeJwt, startTestSandbox, useSandboxes, type TestSandbox } from '../helpers/sandbox.js';
import { ledgerHashes, readJson } from '../helpers/store.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const audit = auditSecrets();
const tempDir = useTempDirs();
const newSandbox = useSandboxes();
const PAST = Math.floor(Date.now() / 1000) - 3600;

function routes(sandbox: TestSandbox): string[] {
  return sandbox.calls.map((c) => `${c.route}:${c.status}`);
}

function storeToken(configDir: string, baseUrl: string, token: string): void {
  mkdirSync(configDir, { recursive: true, mode: 0o700 });
  writeFileSync(join(configDir, 'credentials.json'), JSON.stringify({ tokens: { [baseUrl]: token } }), {
    mode: 0o600,
  });
}

function storedTokens(configDir: string): Record<string, string> {
  return (readJson(join(configDir, 'credentials.json')) as { tokens?: Record<string, string> }).tokens ?? {};
}

describe('an expired token is never sent', () => {
  it('the service issues already-expired tokens: the login happens, the token is neither sent nor stored, exit 3', async () => {
    const sandbox = await newSandbox({ tokenTtlSeconds: -100 });
    const configDir = tempDir();
    const doc = makeDocument(tempDir(), 'a.txt');
    const env = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey });
    const result = await runMain(['register', doc.path, '--verbose'], env);
    expect(result.code, describeRun(result)).toBe(3);
    expect(result.stderr).toMatch(/already expired/);
    expect(routes(sandbox)).toEqual(['login:200']);
    expect(sandbox.calls.filter((c) => c.authorized)).toEqual([]);
    expect(existsSync(join(configDir, 'credentials.json')) ? storedTokens(configDir) : {}).toEqual({});
  });

  it('NOTARIZE_TOKEN with a past exp and no API key: exit 3, nothing at all is sent', async () => {
    const sandbox = await newSandbox();
    const doc = makeDocument(tempDir(), 'b.txt');
    const env = cliEnv(tempDir(), { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_TOKEN: handMadeJwt(PAST) });
    for (const args of [
      ['register', doc.path],
      ['register', doc.path, '--json', '--verbose'],
    ]) {
      const result = await runMain(args, env);
      expect(result.code, describeRun(result)).toBe(3);
      expect(result.stderr).toMatch(/NOTARIZE_TOKEN has expired/);
    }
    expect(sandbox.calls).toEqual([]);
  });

  it('NOTARIZE_TOKEN with a past exp and an API key: a login replaces it; no call is refused', async () => {
    const sandbox = await newSandbox();
    const configDir = tempDir();
    const doc = makeDocument(tempDir(), 'c.txt');
    const env = cliEnv(configDir, {
      NOTARIZE_BASE_URL: sandbox.url,
      NOTARIZE_TOKEN: handMadeJwt(PAST),
      NOTARIZE_API_KEY: sandbox.apiKey,
    });
    const result = await runMain(['register', doc.path, '--verbose'], env);
    expect(result.code, describeRun(result)).toBe(0);
    // The hand-made token is signed with a key the sandbox does not know: had it
    // been sent, the sandbox would have answered 401.
    expect(routes(sandbox)).toEqual(['login:200', 'request:200', 'forfait:200']);
    expect(sandbox.calls.map((c) => c.authorized)).toEqual([false, true, true]);
  });

  it('a stored token with a past exp: exit 3 without an API key (nothing sent), a login with one', async () => {
    const sandbox = await newSandbox();
    const configDir = tempDir();
    const doc = makeDocument(tempDir(), 'd.txt');
    const expired = handMadeJwt(PAST);
    storeToken(configDir, sandbox.url, expired);
    const without = await runMain(['register', doc.path], cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url }));
    expect(without.code, describeRun(without)).toBe(3);
    expect(without.stderr).toMatch(/stored token for .* has expired/);
    expect(sandbox.calls).toEqual([]);

    const env = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey });
    const withKey = await runMain(['register', doc.path], env);
    expect(withKey.code, describeRun(withKey)).toBe(0);
    expect(routes(sandbox)).toEqual(['login:200', 'request:200', 'forfait:200']);
    expect(storedTokens(configDir)[sandbox.url]).not.toBe(expired);
  });
});

describe('a token that expires while a call waits to be sent again (Retry-After) is not sent', () => {
  // Tokens of 34 s: past 4 s they count as expired (the 30 s margin). The request step is answered 503
  // with Retry-After 3 twice, so one of its attempts comes after those 4 s, whenever the first went.
  const slowly = { tokenTtlSeconds: 34, faults: parseFaults('request:status=503@3*2') };

  it('a stored token, no API key: exit 3 saying so, the expired token never sent', async () => {
    const sandbox = await newSandbox(slowly);
    const configDir = tempDir();
    const login = await runMain(['login', '--api-key-stdin'], cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url }), {
      input: sandbox.apiKey,
    });
    expect(login.code, describeRun(login)).toBe(0);
    const doc = makeDocument(tempDir(), 'slow.txt');
    const run = await runMain(['register', doc.path], cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url }));
    expect(run.code, describeRun(run)).toBe(3);
    expect(run.stderr).toContain(`the stored token for ${sandbox.url} has expired`);
    expect(routes(sandbox).filter((r) => r.endsWith(':401'))).toEqual([]);
    expect(routes(sandbox)).not.toContain('forfait:200');
  });

  /** One document registered with NOTARIZE_API_KEY against `sandbox`: exit 0, in the ledger; the sandbox's logins. */
  async function registeredWithKey(sandbox: TestSandbox, name: string, extra: EnvVars = {}): Promise<string[]> {
    const configDir = tempDir();
    const doc = makeDocument(tempDir(), name);
    const env = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey, ...extra });
    const run = await runMain(['register', doc.path], env);
    expect(run.code, describeRun(run)).toBe(0);
    expect(ledgerHashes(configDir, sandbox.url)).toEqual([doc.hash]);
    expect(routes(sandbox).filter((r) => r.endsWith(':401') && !r.startsWith('request:'))).toEqual([]);
    return routes(sandbox).filter((r) => r.startsWith('login:'));
  }

  it('with NOTARIZE_API_KEY: a new login instead, and the document registered', async () => {
    const sandbox = await newSandbox(slowly);
    expect(await registeredWithKey(sandbox, 'slow-with-key.txt')).toEqual(['login:200', 'login:200']);
    expect(routes(sandbox).filter((r) => r.endsWith(':401'))).toEqual([]);
  });

  it('with NOTARIZE_API_KEY, after the one re-login a 401 earns: that token too is replaced once it expires', async () => {
    const sandbox = await newSandbox({
      tokenTtlSeconds: 34,
      faults: parseFaults('request:status=401*1,request:status=503@3*2'),
    });
    expect(await registeredWithKey(sandbox, 'renewed-then-expired.txt')).toEqual([
      'login:200',
      'login:200',
      'login:200',
    ]);
  });

  it('a 401 then 503s: the resend after the re-login has all of --retries, as before (exit 0)', async () => {
    const sandbox = await newSandbox({ faults: parseFaults('request:status=401*1,request:status=503*3') });
    expect(await registeredWithKey(sandbox, 'renewed-then-busy.txt', { NOTARIZE_RETRY_DELAY_MS: '20' })).toEqual([
      'login:200',
      'login:200',
    ]);
    expect(routes(sandbox).filter((r) => r.startsWith('request:'))).toEqual([
      'request:401',
      'request:503',
      'request:503',
      'request:503',
      'request:200',
    ]);
  });

  it('a service failing all along: the call still ends after --retries attempts, tokens replaced or not (exit 4)', async () => {
    const sandbox = await newSandbox({ tokenTtlSeconds: 32, faults: parseFaults('request:status=503@3') });
    const configDir = tempDir();
    const doc = makeDocument(tempDir(), 'never-answered.txt');
    const env = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey });
    const run = await runMain(['register', doc.path, '--retries', '2'], env);
    expect(run.code, describeRun(run)).toBe(4);
    expect(routes(sandbox).filter((r) => r.startsWith('request:'))).toEqual([
      'request:503',
      'request:503',
      'request:503',
    ]);
    expect(routes(sandbox).filter((r) => r.startsWith('login:')).length).toBeLessThanOrEqual(3);
  });
});

describe('a 401 with NOTARIZE_API_KEY: one new login, one retry', () => {
  it('the sandbox restarted (the stored token has a bad signature): re-login once, retry once, exit 0', async () => {
    const first = await startTestSandbox();
    const configDir = tempDir();
    const url = first.url;
    const login = await runMain(
      ['login'],
      cliEnv(configDir, { NOTARIZE_BASE_URL: url, NOTARIZE_API_KEY: first.apiKey }),
    );
    expect(login.code, describeRun(login)).toBe(0);
    const oldToken = storedTokens(configDir)[url]!;
    await first.close();
    // Same address and key, new signing secret: the stored token is now refused.
    const second = await newSandbox({ port: Number(new URL(url).port), apiKey: first.apiKey });
    expect(second.url).toBe(url);

    const doc = makeDocument(tempDir(), 'e.txt');
    const noKey = await runMain(['register', doc.path], cliEnv(configDir, { NOTARIZE_BASE_URL: url }));
    expect(noKey.code, describeRun(noKey)).toBe(3);
    expect(noKey.stderr).toMatch(/401/);
    expect(routes(second)).toEqual(['request:401']);

    const env = cliEnv(configDir, { NOTARIZE_BASE_URL: url, NOTARIZE_API_KEY: first.apiKey });
    const result = await runMain(['register', doc.path, '--verbose'], env);
    expect(result.code, describeRun(result)).toBe(0);
    expect(routes(second)).toEqual(['request:401', 'request:401', 'login:200', 'request:200', 'forfait:200']);
    expect(storedTokens(configDir)[url]).not.toBe(oldToken);
    expect(ledgerHashes(configDir, url)).toEqual([doc.hash]);
  });

  it('401 on every request step: exactly one re-login and one retry, then exit 3', async () => {
    const sandbox = await newSandbox({ faults: [{ route: 'request', kind: 'status', value: 401 }] });
    const doc = makeDocument(tempDir(), 'f.txt');
    const env = cliEnv(tempDir(), { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey });
    const result = await runMain(['register', doc.path, '--retries', '5'], env);
    expect(result.code, describeRun(result)).toBe(3);
    expect(routes(sandbox)).toEqual(['login:200', 'request:401', 'login:200', 'request:401']);
  });

  it('401 on forfait: one re-login, the completion retried once and done', async () => {
    const sandbox = await newSandbox({ faults: [{ route: 'forfait', kind: 'status', value: 401, count: 1 }] });
    const configDir = tempDir();
    const doc = makeDocument(tempDir(), 'g.txt');
    const env = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey });
    const result = await runMain(['register', doc.path], env);
    expect(result.code, describeRun(result)).toBe(0);
    expect(routes(sandbox)).toEqual(['login:200', 'request:200', 'forfait:401', 'login:200', 'forfait:200']);
  });

  it('a wrong API key is tried once: one login call, exit 3', async () => {
    const sandbox = await newSandbox();
    const wrongKey = 'sandbox_0123456789abcdef0123456789abcdef';
    audit.add(wrongKey);
    const doc = makeDocument(tempDir(), 'h.txt');
    const env = cliEnv(tempDir(), { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: wrongKey });
    const result = await runMain(['register', doc.path, '--verbose'], env);
    expect(result.code, describeRun(result)).toBe(3);
    expect(routes(sandbox)).toEqual(['login:401']);
  });
});

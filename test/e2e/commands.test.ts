/**
 * e2e: pending, logout, config, secrets and file rights, and the `sandbox`
 * command itself, with the spawned bin against sandboxes on 127.0.0.1.
 */
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { DEFAULT_BASE_URL } from '../../src/settings.js';
import { expectFailure } from '../helpers/assert.js';
import { SecretAudit } from '../helpers/audit.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { routes } from '../helpers/sandbox.js';
import { sha256 } from '../helpers/documents.js';
import { STACK_LINE, spawnCli } from '../helpers/cli.js';

let bed: Bed;
useBed((created) => (bed = created));

const mode = (path: string) => statSync(path).mode & 0o777;

describe('pending and logout', () => {
  it('pending lists the sessions saved and not completed, as a table and as JSON', async () => {
    const empty = await bed.run(['pending']);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toBe('');
    expect(empty.stderr).toMatch(/no pending registrations/);

    const a = await bed.file('alpha.txt', 'alpha');
    const first = await bed.run(['register', a, '--no-complete', '--json'], { env: bed.withKey() });
    expect(first.code, first.stderr).toBe(0);
    const b = await bed.file('beta.txt', 'beta');
    const second = await bed.run(['register', b, '--no-complete', '-d', 'the beta document']);
    expect(second.code, second.stderr).toBe(0);

    const table = await bed.run(['pending']);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^HASH +DESCRIPTION +PLAN +SAVED +STATE$/);
    expect(lines).toHaveLength(3);
    const rowOf = (hash: string) => lines.find((line) => line.startsWith(hash));
    expect(rowOf(sha256('alpha'))).toMatch(/^[0-9a-f]{64} +alpha\.txt +FREE +\d{4}-\d\d-\d\dT[\d:.]+Z +ready$/);
    expect(rowOf(sha256('beta'))).toMatch(/^[0-9a-f]{64} +the beta document +FREE +\d{4}-\d\d-\d\dT[\d:.]+Z +ready$/);
    expect(table.stdout).toContain(sha256('alpha'));
    expect(table.stdout).toContain(sha256('beta'));

    const json = await bed.run(['pending', '--json']);
    expect(json.code).toBe(0);
    const rows = JSON.parse(json.stdout) as {
      hash: string;
      description: string;
      plan: string;
      savedAt: string;
      session: unknown;
    }[];
    expect(rows.map((r) => r.hash).sort()).toEqual([sha256('alpha'), sha256('beta')].sort());
    const alpha = rows.find((r) => r.hash === sha256('alpha'))!;
    expect(alpha).toMatchObject({ description: 'alpha.txt', plan: 'FREE' });
    expect(Number.isNaN(Date.parse(alpha.savedAt))).toBe(false);
    expect(alpha.session).toEqual(JSON.parse(first.stdout));
  });

  it('logout forgets the token: the next register exits 3 without sending anything', async () => {
    const login = await bed.run(['login', '--api-key-stdin'], { input: bed.sandbox.apiKey });
    expect(login.code, login.stderr).toBe(0);
    expect(Object.keys(bed.storedTokens())).toEqual([bed.sandbox.url]);

    const logout = await bed.run(['logout']);
    expect(logout.code, logout.stderr).toBe(0);
    expect(logout.stdout).toBe('');
    expect(logout.stderr).toContain(`logged out of ${bed.sandbox.url}`);
    expect(bed.storedTokens()).toEqual({});

    const doc = await bed.file('after-logout.txt', 'after logout');
    const mark = bed.mark();
    const register = await bed.run(['register', doc]);
    expectFailure(register, 3, /not logged in/);
    expect(bed.callsSince(mark)).toEqual([]);

    const again = await bed.run(['logout']);
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/no token was stored/);
  });
});

describe('config', () => {
  it('set, get, list, unset and path', async () => {
    const offline = { env: { NOTARIZE_BASE_URL: undefined }, noBaseUrlCheck: true };
    const path = await bed.run(['config', 'path'], offline);
    expect(path.code, path.stderr).toBe(0);
    expect(path.stdout).toBe(`${bed.storeDir}\n`);

    // The parent's NOTARIZE_* variables never reach the spawned bin.
    const parent = process.env.NOTARIZE_BASE_URL;
    process.env.NOTARIZE_BASE_URL = 'https://parent-environment.invalid';
    let unset;
    try {
      unset = await bed.run(['config', 'get', 'baseUrl', '--json'], offline);
    } finally {
      if (parent === undefined) delete process.env.NOTARIZE_BASE_URL;
      else process.env.NOTARIZE_BASE_URL = parent;
    }
    expect(unset.code).toBe(0);
    expect(JSON.parse(unset.stdout)).toEqual({ key: 'baseUrl', value: DEFAULT_BASE_URL, source: 'default' });

    const set = await bed.run(['config', 'set', 'baseUrl', `${bed.sandbox.url}/`], offline);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toBe('');
    expect(set.stderr).toContain(`baseUrl = ${bed.sandbox.url}`);

    const get = await bed.run(['config', 'get', 'baseUrl'], offline);
    expect(get.code, get.stderr).toBe(0);
    expect(get.stdout).toBe(`${bed.sandbox.url}\n`);

    const list = await bed.run(['config', 'list'], offline);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^KEY +VALUE +SOURCE +ENV$/m);
    expect(list.stdout).toMatch(new RegExp(`^baseUrl +${bed.sandbox.url} +store +NOTARIZE_BASE_URL$`, 'm'));
    expect(list.stdout).toMatch(/^timeout +30000 +default +NOTARIZE_TIMEOUT$/m);
    const listJson = await bed.run(['config', 'list', '--json'], offline);
    expect(JSON.parse(listJson.stdout)).toContainEqual(
      expect.objectContaining({ key: 'baseUrl', value: bed.sandbox.url, source: 'store' }),
    );

    const removed = await bed.run(['config', 'unset', 'baseUrl'], offline);
    expect(removed.code).toBe(0);
    expect(removed.stderr).toMatch(/baseUrl unset/);
    const back = await bed.run(['config', 'get', 'baseUrl'], offline);
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdout).toBe(`${DEFAULT_BASE_URL}\n`);

    const unsafe = await bed.run(['config', 'set', 'baseUrl', 'http://example.com'], offline);
    expectFailure(unsafe, 2, /plain http to 'example\.com'/);
    const unknown = await bed.run(['config', 'get', 'colour'], offline);
    expectFailure(unknown, 2, /unknown setting 'colour'/);
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('precedence: --base-url > NOTARIZE_BASE_URL > stored setting > default, for real requests', async () => {
    const storeSandbox = bed.sandbox;
    const envSandbox = await bed.extraSandbox({ apiKey: storeSandbox.apiKey });
    const flagSandbox = await bed.extraSandbox({ apiKey: storeSandbox.apiKey });
    const fromStore = { env: { ...bed.withKey(), NOTARIZE_BASE_URL: undefined }, noBaseUrlCheck: true };
    const set = await bed.run(['config', 'set', 'baseUrl', storeSandbox.url], fromStore);
    expect(set.code).toBe(0);

    const d1 = await bed.file('store.txt', 'via store');
    const viaStore = await bed.run(['register', d1], fromStore);
    expect(viaStore.code, viaStore.stderr).toBe(0);
    expect(viaStore.stdout).toContain(`${storeSandbox.url}/verification/${sha256('via store')}`);
    expect(routes(storeSandbox.calls)).toEqual(['login', 'request', 'forfait']);

    const d2 = await bed.file('env.txt', 'via env');
    const fromEnv = { env: { ...bed.withKey(), NOTARIZE_BASE_URL: envSandbox.url } };
    const viaEnv = await bed.run(['register', d2], fromEnv);
    expect(viaEnv.code, viaEnv.stderr).toBe(0);
    expect(routes(envSandbox.calls)).toEqual(['login', 'request', 'forfait']);
    const getEnv = await bed.run(['config', 'get', 'baseUrl', '--json'], fromEnv);
    expect(JSON.parse(getEnv.stdout)).toEqual({ key: 'baseUrl', value: envSandbox.url, source: 'env' });

    const d3 = await bed.file('flag.txt', 'via flag');
    const viaFlag = await bed.run(['register', d3, '--base-url', flagSandbox.url], fromEnv);
    expect(viaFlag.code, viaFlag.stderr).toBe(0);
    expect(routes(flagSandbox.calls)).toEqual(['login', 'request', 'forfait']);
    const getFlag = await bed.run(['config', 'get', 'baseUrl', '--json', '--base-url', flagSandbox.url], fromEnv);
    expect(JSON.parse(getFlag.stdout)).toEqual({ key: 'baseUrl', value: flagSandbox.url, source: 'flag' });

    // Each went only where it should.
    expect(storeSandbox.calls).toHaveLength(3);
    expect(envSandbox.calls).toHaveLength(3);
    expect(flagSandbox.records.has(sha256('via flag'))).toBe(true);
    expect(envSandbox.records.has(sha256('via flag'))).toBe(false);
  });
});

describe('secrets and file rights', () => {
  it('never prints the API key or a token, even with --verbose or when failing; credentials 0600, store 0700', async () => {
    const login = await bed.run(['login', '--api-key-stdin', '--verbose'], { input: bed.sandbox.apiKey });
    expect(login.code, login.stderr).toBe(0);
    expect(login.stderr).toMatch(/\[notarize\] POST .*\/api\/v2\/auth\/login -> 200 in \d+ ms/);
    const token = Object.values(bed.storedTokens())[0]!;
    expect(token.split('.')).toHaveLength(3);

    const doc = await bed.file('secret.txt', 'secret test');
    const verbose = await bed.run(['register', doc, '--verbose', '--json']);
    expect(verbose.code, verbose.stderr).toBe(0);
    expect(verbose.stderr).toMatch(/\[notarize\] POST .*\/forfait -> 200 in \d+ ms/);

    const envToken = await bed.directLogin();
    const doc2 = await bed.file('secret2.txt', 'secret env token');
    const viaEnv = await bed.run(['register', doc2, '--verbose'], { env: { NOTARIZE_TOKEN: envToken } });
    expect(viaEnv.code, viaEnv.stderr).toBe(0);

    bed.sandbox.addFaults([{ route: 'forfait', kind: 'status', value: 503, count: 1 }]);
    const doc3 = await bed.file('secret3.txt', 'secret failure');
    const failing = await bed.run(['register', doc3, '--verbose', '--retries', '0'], { env: bed.withKey() });
    expect(failing.code).toBe(4);
    expect(failing.stderr).toMatch(STACK_LINE);

    const foreign = await bed.extraSandbox();
    const foreignToken = await bed.directLogin(foreign);
    const refused = await bed.run(['register', doc3, '--verbose', '--json'], { env: { NOTARIZE_TOKEN: foreignToken } });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/\/forfait -> 401 in \d+ ms/);

    const wrongKey = 'sandbox_00112233445566778899aabbccddeeff';
    bed.addSecret(wrongKey);
    const badLogin = await bed.run(['login', '--api-key-stdin', '--verbose'], { input: wrongKey });
    expect(badLogin.code).toBe(3);

    // Every run of this test (and of every other e2e test, in Bed.finish) is
    // searched for every secret seen: the sandboxes' keys, the wrong key, the
    // stored and direct tokens and their signatures.
    expect(bed.audit.size().outputs).toBeGreaterThanOrEqual(6);
    expect(bed.secrets()).toEqual(
      expect.arrayContaining([bed.sandbox.apiKey, token, envToken, foreignToken, wrongKey]),
    );
    expect(bed.leaks()).toEqual([]);
    // The detector itself finds a token, or only its signature, when one is printed.
    const planted = new SecretAudit();
    for (const secret of bed.secrets()) planted.add(secret);
    const printed = { args: ['planted'], code: 0, signal: null, ms: 0 };
    planted.record({ ...printed, stdout: `token: ${token}`, stderr: '' });
    planted.record({ ...printed, stdout: '', stderr: `sig ${token.split('.')[2]!}` });
    expect(planted.leaks()).toHaveLength(3);

    // The store: directory 0700, credentials and entries 0600.
    expect(mode(bed.storeDir)).toBe(0o700);
    expect(mode(bed.credentialsFile)).toBe(0o600);
    const service = bed.serviceDir();
    for (const dir of [join(bed.storeDir, 'services'), service, join(service, 'pending'), join(service, 'ledger')]) {
      expect(mode(dir), dir).toBe(0o700);
    }
    for (const kind of ['pending', 'ledger']) {
      const names = readdirSync(join(service, kind));
      expect(names.length).toBeGreaterThan(0);
      for (const name of names) expect(mode(join(service, kind, name)), name).toBe(0o600);
    }
  });

  it('tightens a store directory readable by others to 0700 before writing the token', async () => {
    mkdirSync(bed.storeDir, { mode: 0o755 });
    expect(mode(bed.storeDir)).toBe(0o755);
    const login = await bed.run(['login', '--api-key-stdin'], { input: bed.sandbox.apiKey });
    expect(login.code, login.stderr).toBe(0);
    expect(mode(bed.storeDir)).toBe(0o700);
    expect(mode(bed.credentialsFile)).toBe(0o600);
  });
});

describe('notarize sandbox', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`prints {"url","apiKey"} on its first line, serves a login, and exits 0 on ${signal}`, async () => {
      const sandbox = spawnCli(
        ['sandbox', '--port', '0', '--json'],
        { NOTARIZE_CONFIG_DIR: bed.storeDir },
        { noBaseUrlCheck: true, timeoutMs: 15_000 },
      );
      try {
        const first = JSON.parse(await sandbox.firstLine) as { url: string; apiKey: string };
        expect(Object.keys(first).sort()).toEqual(['apiKey', 'url']);
        expect(first.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
        expect(first.apiKey).not.toBe('');

        const answer = await request(`${first.url}/api/v2/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ apiKey: first.apiKey }),
          signal: AbortSignal.timeout(5000),
        });
        const text = await answer.body.text();
        expect(answer.statusCode).toBe(200);
        const { token } = JSON.parse(text) as { token: string };
        bed.addSecret(token);
        expect(token.split('.')).toHaveLength(3);

        if (signal === 'SIGTERM') {
          // The CLI itself works against it.
          const login = await bed.run(['login', '--api-key-stdin'], {
            input: first.apiKey,
            env: { NOTARIZE_BASE_URL: first.url },
          });
          expect(login.code, login.stderr).toBe(0);
          expect(login.stderr).toContain(`logged in to ${first.url}`);
        }
      } finally {
        sandbox.child.kill(signal);
      }
      const exited = await sandbox.done;
      expect(exited.signal).toBeNull();
      expect(exited.code, exited.stderr).toBe(0);
      expect(exited.stdout.trimEnd().split('\n')).toHaveLength(1);
      expect(exited.stderr).toMatch(/sandbox stopped/);
      expect(exited.stderr).not.toMatch(STACK_LINE);
    });
  }
});

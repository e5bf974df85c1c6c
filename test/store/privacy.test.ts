/**
 * The store keeps secrets, so it is private: directories 0700 and files 0600
 * however they were made (umask 000 included), an existing wider store
 * tightened with a warning, and no secret in any output on the way, with
 * --verbose or when failing. Spawned only under `umask 000`: a umask is the
 * process's.
 */
import { chmodSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditSecrets, SecretAudit } from '../helpers/audit.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { describeRun, runCli, STACK_LINE } from '../helpers/cli.js';
import { runMain } from '../helpers/main.js';
import { makeDocument } from '../helpers/documents.js';
import { cliEnv } from '../helpers/env.js';
import { useSandboxes } from '../helpers/sandbox.js';
import { listTree, storePaths } from '../helpers/store.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

auditSecrets();
const tempDir = useTempDirs();
const newSandbox = useSandboxes();
const mode = (path: string) => statSync(path).mode & 0o777;

describe('secrets and file rights', () => {
  let bed: Bed;
  useBed((created) => (bed = created));

  it('a command that only reads (config path, config get) changes no rights of the store or its credentials', async () => {
    const login = await bed.main(['login', '--api-key-stdin', '-q'], { input: bed.sandbox.apiKey });
    expect(login.code, describeRun(login)).toBe(0);
    chmodSync(bed.storeDir, 0o755);
    chmodSync(bed.credentialsFile, 0o644);
    for (const args of [
      ['config', 'path'],
      ['config', 'get', 'baseUrl'],
    ]) {
      const run = await bed.main(args);
      expect(run.code, describeRun(run)).toBe(0);
      expect(run.stderr, args.join(' ')).toBe('');
    }
    expect([mode(bed.storeDir), mode(bed.credentialsFile)]).toEqual([0o755, 0o644]);
    // A command that uses the store tightens it, with a warning, as before (the file when it is read).
    const list = await bed.main(['list']);
    expect(list.stderr).toMatch(/tightened the rights of/);
    expect(mode(bed.storeDir)).toBe(0o700);
  });

  it('never prints the API key or a token, even with --verbose or when failing; credentials 0600, store 0700', async () => {
    const login = await bed.main(['login', '--api-key-stdin', '--verbose'], { input: bed.sandbox.apiKey });
    expect(login.code, login.stderr).toBe(0);
    expect(login.stderr).toMatch(/\[notarize\] POST .*\/api\/v2\/auth\/login -> 200 in \d+ ms/);
    const token = Object.values(bed.storedTokens())[0]!;
    expect(token.split('.')).toHaveLength(3);

    const doc = await bed.file('secret.txt', 'secret test');
    const verbose = await bed.main(['register', doc, '--verbose', '--json']);
    expect(verbose.code, verbose.stderr).toBe(0);
    expect(verbose.stderr).toMatch(/\[notarize\] POST .*\/forfait -> 200 in \d+ ms/);

    const envToken = await bed.directLogin();
    const doc2 = await bed.file('secret2.txt', 'secret env token');
    const viaEnv = await bed.main(['register', doc2, '--verbose'], { env: { NOTARIZE_TOKEN: envToken } });
    expect(viaEnv.code, viaEnv.stderr).toBe(0);

    bed.sandbox.addFaults([{ route: 'forfait', kind: 'status', value: 503, count: 1 }]);
    const doc3 = await bed.file('secret3.txt', 'secret failure');
    const failing = await bed.main(['register', doc3, '--verbose', '--retries', '0'], { env: bed.withKey() });
    expect(failing.code).toBe(4);
    expect(failing.stderr).toMatch(STACK_LINE);

    const foreign = await bed.extraSandbox();
    const foreignToken = await bed.directLogin(foreign);
    const refused = await bed.main(['register', doc3, '--verbose', '--json'], {
      env: { NOTARIZE_TOKEN: foreignToken },
    });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/\/forfait -> 401 in \d+ ms/);

    const wrongKey = 'sandbox_00112233445566778899aabbccddeeff';
    bed.addSecret(wrongKey);
    const badLogin = await bed.main(['login', '--api-key-stdin', '--verbose'], { input: wrongKey });
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
    const login = await bed.main(['login', '--api-key-stdin'], { input: bed.sandbox.apiKey });
    expect(login.code, login.stderr).toBe(0);
    expect(mode(bed.storeDir)).toBe(0o700);
    expect(mode(bed.credentialsFile)).toBe(0o600);
  });
});

describe('store directories and files are private', () => {
  function expectPrivate(configDir: string): void {
    expect(statSync(configDir).mode & 0o777).toBe(0o700);
    for (const entry of listTree(configDir)) {
      expect([entry.path, entry.mode.toString(8)]).toEqual([entry.path, entry.isDir ? '700' : '600']);
    }
  }

  it('created 0700/0600, even under umask 000', async () => {
    const sandbox = await newSandbox();
    const configDir = join(tempDir(), 'store');
    const docs = tempDir();
    const env = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey });
    for (const args of [
      ['login'],
      ['config', 'set', 'retries', '2'],
      ['register', makeDocument(docs, 'p.txt').path, '--no-complete'],
      ['register', makeDocument(docs, 'q.txt').path],
    ]) {
      const result = await runCli(args, env, { shell: 'umask 000' });
      expect(result.code, describeRun(result)).toBe(0);
    }
    const names = listTree(configDir).map((e) => e.path);
    expect(names).toEqual(
      expect.arrayContaining([
        'config.json',
        'credentials.json',
        expect.stringMatching(/pending\/[0-9a-f]{64}\.json$/),
        expect.stringMatching(/ledger\/[0-9a-f]{64}\.json$/),
      ]),
    );
    expectPrivate(configDir);
  });

  it('an existing store with wider rights is tightened, with a warning on stderr naming each path', async () => {
    const sandbox = await newSandbox();
    const configDir = tempDir();
    const env = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey });
    const doc = makeDocument(tempDir(), 'w.txt');
    const first = await runMain(['register', doc.path, '--no-complete'], env);
    expect(first.code, describeRun(first)).toBe(0);
    const paths = storePaths(configDir, sandbox.url);
    chmodSync(configDir, 0o755);
    chmodSync(paths.pendingDir, 0o775);
    chmodSync(join(configDir, 'credentials.json'), 0o644);
    const result = await runMain(['complete', doc.hash, '--quiet'], env);
    expect(result.code, describeRun(result)).toBe(0);
    expect(result.stderr).toContain(`warning: tightened the rights of ${configDir} to owner-only (0700)`);
    expect(result.stderr).toContain(`warning: tightened the rights of ${paths.pendingDir} to owner-only (0700)`);
    expect(result.stderr).toContain(
      `warning: tightened the rights of ${join(configDir, 'credentials.json')} to owner-only (0600)`,
    );
    expectPrivate(configDir);
    // Once tight, no more warnings.
    const again = await runMain(['pending'], env);
    expect(again.stderr).not.toMatch(/tightened/);
  });
});

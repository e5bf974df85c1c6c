/** runLogin and runLogout in process against a sandbox on port 0: the token stored and forgotten, as data. */
import { execFileSync } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runLogin, type LoginOptions } from '../../src/commands/login.js';
import { runLogout } from '../../src/commands/logout.js';
import { parseFaults, SANDBOX_USER, type SandboxCall } from '../../src/sandbox/server.js';
import { present } from '../../src/output/present.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { contextFor, type TestContext } from '../helpers/context.js';
import { BIN, describeRun, runProcess } from '../helpers/cli.js';
import { cliEnv } from '../helpers/env.js';
import { startFakeService } from '../helpers/local-server.js';
import { runMain } from '../helpers/main.js';
import { handMadeJwt } from '../helpers/sandbox.js';

let bed: Bed;
/** Called with every sandbox call once answered (set by a test, reset before each). */
let onCall: ((call: SandboxCall) => void) | undefined;
useBed(
  (created) => {
    bed = created;
    onCall = undefined;
  },
  { sandbox: { onCall: (call) => onCall?.(call) } },
);

function options(t: TestContext, overrides: Partial<LoginOptions> = {}): LoginOptions {
  const { ctx } = t;
  return {
    apiKeyStdin: false,
    io: ctx.io,
    envApiKey: undefined,
    ci: false,
    baseUrl: () => ctx.baseUrl,
    store: () => ctx.store,
    api: () => ctx.api(),
    ...overrides,
  };
}

describe('runLogin and runLogout', () => {
  it('logs in with the key on standard input: the token stored, who and until when as data', async () => {
    const t = contextFor(bed, { stdin: `${bed.sandbox.apiKey}\n` });
    const result = await runLogin(options(t, { apiKeyStdin: true }));
    const tokens = bed.storedTokens();
    expect(Object.keys(tokens)).toEqual([bed.url]);
    expect(result.json).toEqual({
      baseUrl: bed.url,
      email: SANDBOX_USER.email,
      userId: SANDBOX_USER.userId,
      expiresAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(result.text?.info).toEqual([expect.stringMatching(new RegExp(`^logged in to ${bed.url} as `))]);
    await present({ io: t.io, env: {}, format: 'json' }, result);
    expect(JSON.parse(t.stdout())).toEqual(result.json);
    expect(t.stderr()).toBe('');
  });

  it('a token valid past any date JavaScript can write (exp 1e13): logged in, exit 0, expiresAt null', async () => {
    for (const exp of [1e13, 1e300]) {
      const fake = await startFakeService(() => ({ status: 200, body: JSON.stringify({ token: handMadeJwt(exp) }) }));
      try {
        const env = cliEnv(bed.path(`far-${exp}`), {
          NOTARIZE_BASE_URL: fake.url,
          NOTARIZE_API_KEY: 'k_far_future_key',
        });
        const json = await runMain(['login', '--json'], env);
        expect(json.code, describeRun(json)).toBe(0);
        expect(JSON.parse(json.stdout)).toMatchObject({ baseUrl: fake.url, expiresAt: null });
        const text = await runMain(['login'], env);
        expect(text.code, describeRun(text)).toBe(0);
        expect(text.stderr).toMatch(/; valid past any date\n$/);
      } finally {
        await fake.close();
      }
    }
  });

  it('a base URL that already ends in /api (its login a 404): exit 3, login and register both say to check the base URL', async () => {
    const env = cliEnv(bed.path('api-suffix'), {
      NOTARIZE_BASE_URL: `${bed.url}/api`,
      NOTARIZE_API_KEY: bed.sandbox.apiKey,
    });
    for (const args of [['login'], ['register', '--hash', 'ab'.repeat(32), '--description', 'x']]) {
      const run = await runMain(args, env);
      expect(run.code, describeRun(run)).toBe(3);
      expect(run.stderr).toMatch(
        /answered 404.*\(no login at that address: check the base URL \(--base-url, NOTARIZE_BASE_URL/,
      );
    }
    // One login each, to the path the base URL made; nothing else.
    expect(bed.sandbox.calls.map((call) => call.path)).toEqual(Array(2).fill('/api/api/v2/auth/login'));
  });

  it('a key the service refuses (401): exit 3, saying to check the key, not to log in again', async () => {
    const env = cliEnv(bed.path('refused-key'), { NOTARIZE_BASE_URL: bed.url, NOTARIZE_API_KEY: 'k_not_the_key_1234' });
    const run = await runMain(['login'], env);
    expect(run.code, describeRun(run)).toBe(3);
    expect(run.stderr).toMatch(/^notarize: the login was refused: POST \S+ answered 401\b.* \(check the API key\)\n$/);
    expect(run.stderr).not.toContain('log in again');
  });

  it('no key and standard input not a terminal: exit 3, nothing sent', async () => {
    await expect(runLogin(options(contextFor(bed)))).rejects.toMatchObject({ exitCode: 3 });
    expect(bed.sandbox.calls).toEqual([]);
  });

  it.each([
    [400, /^check the API key$/],
    [404, /^no login at that address: check the base URL .*; else check the API key$/],
    [405, /^no login at that address: check the base URL .*; else check the API key$/],
    [422, /^check the API key$/],
  ])(
    'a login refused with %i is no usable credentials: exit 3, nothing stored, the hint fit for the status',
    async (status, hint) => {
      bed.sandbox.addFaults(parseFaults(`login:status=${status}*1`));
      const t = contextFor(bed);
      await expect(runLogin(options(t, { envApiKey: bed.sandbox.apiKey }))).rejects.toMatchObject({
        exitCode: 3,
        message: expect.stringMatching(new RegExp(`^the login was refused: .*${status}`)),
        hint: expect.stringMatching(hint),
      });
      expect(bed.storedTokens()).toEqual({});
    },
  );

  it('a lock of the token that is a link, a FIFO or a folder: refused before the login is sent, exit 2 (r108)', async () => {
    const locks = join(bed.storeDir, 'locks');
    mkdirSync(locks, { recursive: true, mode: 0o700 });
    const lock = join(locks, 'credentials.lock');
    const plants: [string, () => void][] = [
      ['it is a symbolic link', () => symlinkSync(join(bed.root, 'elsewhere'), lock)],
      ['it is not a regular file', () => execFileSync('mkfifo', [lock])],
      ['it is not a regular file', () => mkdirSync(lock)],
    ];
    for (const [why, plant] of plants) {
      plant();
      // It was found once the login had gone through: exit 1, the token unsaved, and so on every run.
      await expect(runLogin(options(contextFor(bed), { envApiKey: bed.sandbox.apiKey }))).rejects.toMatchObject({
        exitCode: 2,
        message: `lock file ${lock} is not a lock: ${why}`,
      });
      rmSync(lock, { recursive: true });
    }
    expect(bed.sandbox.calls).toEqual([]);
    expect(existsSync(join(bed.root, 'elsewhere'))).toBe(false);
  });

  it('a token that cannot be stored once the login was sent (its lock made a link meanwhile): exit 1, never 2', async () => {
    const locks = join(bed.storeDir, 'locks');
    mkdirSync(locks, { recursive: true, mode: 0o700 });
    onCall = (call) => {
      if (call.route === 'login') symlinkSync(join(bed.root, 'elsewhere'), join(locks, 'credentials.lock'));
    };
    await expect(runLogin(options(contextFor(bed), { envApiKey: bed.sandbox.apiKey }))).rejects.toMatchObject({
      exitCode: 1,
      message: expect.stringMatching(/^the login went through, but its token was not stored: .*symbolic link/),
    });
    expect(bed.sandbox.calls.map((call) => call.route)).toEqual(['login']);
    expect(existsSync(join(bed.root, 'elsewhere'))).toBe(false);
  });

  it('logout forgets the token; says so, and warns while NOTARIZE_TOKEN is still set', async () => {
    const t = contextFor(bed);
    await runLogin(options(t, { envApiKey: bed.sandbox.apiKey }));
    const logout = { baseUrl: () => t.ctx.baseUrl, store: () => t.ctx.store };
    expect(await runLogout({ ...logout, envToken: undefined })).toEqual({
      kind: 'value',
      info: [`logged out of ${bed.url}`],
    });
    expect(bed.storedTokens()).toEqual({});
    expect(await runLogout({ ...logout, envToken: 'a-token-from-ci' })).toEqual({
      kind: 'value',
      info: [`no token was stored for ${bed.url}`],
      warnings: ['NOTARIZE_TOKEN is set in the environment and is still used'],
    });
  });
});

describe('credentials.json with another name (a hard link, made by a backup tool or by hand)', () => {
  it('is never written through; logout says the old file, token and all, lives on there, and how to find it', async () => {
    const t = contextFor(bed);
    await runLogin(options(t, { envApiKey: bed.sandbox.apiKey }));
    const token = bed.storedTokens()[bed.url]!;
    const other = join(bed.root, 'backup-credentials.json');
    linkSync(bed.credentialsFile, other);
    const inode = statSync(other).ino;

    // A login again rewrites credentials.json as a new file: the other name keeps the old one, said so
    // (r108: only a logout said it, once the other name no longer shared the file).
    const before = t.stderr().length;
    await runLogin(options(t, { envApiKey: bed.sandbox.apiKey }));
    expect(statSync(bed.credentialsFile).ino).not.toBe(inode);
    expect(readFileSync(other, 'utf8')).toContain(token);
    expect(t.stderr().slice(before)).toContain(
      `warning: ${bed.credentialsFile} had another name (a hard link), where every token it held before this login ` +
        `is still stored: find it with \`find <mount point> -xdev -inum ${inode}\` on the file system holding it, and delete it`,
    );
    const second = bed.storedTokens()[bed.url]!;
    linkSync(bed.credentialsFile, join(bed.root, 'backup-2.json'));
    const linked = statSync(bed.credentialsFile).ino;

    const logout = { baseUrl: () => t.ctx.baseUrl, store: () => t.ctx.store, envToken: undefined };
    expect(await runLogout(logout)).toEqual({
      kind: 'value',
      info: [`logged out of ${bed.url}`],
      warnings: [
        `${bed.credentialsFile} had another name (a hard link), where this token, and every other it held then, is still stored: find it with ` +
          `\`find <mount point> -xdev -inum ${linked}\` on the file system holding it, and delete it`,
      ],
    });
    expect(bed.storedTokens()).toEqual({});
    expect(readFileSync(join(bed.root, 'backup-2.json'), 'utf8')).toContain(second);
    // Nothing was stored any more: no warning, whatever the links.
    expect(await runLogout(logout)).toEqual({ kind: 'value', info: [`no token was stored for ${bed.url}`] });
  });
});

describe('the hidden prompt, on a real terminal (script(1) gives the bin a pseudo-terminal)', () => {
  /** `notarize login` on a terminal, `keys` typed once the prompt is up (after a second, in raw mode). */
  async function typed(keys: string) {
    const command = `(sleep 1; printf '${keys}') | script -q -e -c "'${process.execPath}' '${BIN}' login" /dev/null`;
    const env = { ...bed.env(), NOTARIZE_API_KEY: '' };
    const run = await runProcess('bash', ['-c', command], env, { cwd: bed.workDir, timeoutMs: 20_000 });
    bed.record(run);
    return run;
  }

  it('Enter alone is no key: exit 3 (no credentials), said for the prompt, not for CI; nothing sent', async () => {
    const run = await typed('\\r');
    expect(run.code, describeRun(run)).toBe(3);
    expect(run.stdout).toContain(
      'no API key was typed (run `notarize login` again and type or paste the key at the prompt, which does not show it)',
    );
    expect(run.stdout).not.toContain('CI');
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('Ctrl-U starts the line over, as at a password prompt: the key typed after it logs in', async () => {
    const run = await typed(`sk_oops\\025${bed.sandbox.apiKey}\\r`);
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stdout).toContain(`logged in to ${bed.url}`);
  });

  it('Ctrl-C is an interruption, as anywhere else: exit 130, one line, nothing sent', async () => {
    const run = await typed('abc\\003');
    expect(run.code, describeRun(run)).toBe(130);
    expect(run.stdout).toContain('interrupted (SIGINT)');
    expect(run.stdout).not.toContain('login cancelled');
    expect(bed.sandbox.calls).toEqual([]);
  });
});

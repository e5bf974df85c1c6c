/**
 * The flows of every command through `main()` against a sandbox on 127.0.0.1
 * port 0, quickly: login, register, complete (standard input, --session,
 * --use-active-subscription, --custody), pending, logout and config; usage
 * errors that send nothing; retries; --quiet and --verbose.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectFailure, expectJsonError } from '../helpers/assert.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { routes } from '../helpers/sandbox.js';
import { sha256 } from '../helpers/documents.js';
import { STACK_LINE } from '../helpers/cli.js';

let bed: Bed;
useBed((created) => (bed = created));

describe('flows', () => {
  it('login from standard input, register, and --json prints the service text exactly', async () => {
    const login = await bed.main(['login', '--api-key-stdin'], { input: `${bed.sandbox.apiKey}\n` });
    expect(login.code, login.stderr).toBe(0);
    // A message on stderr (silenced by --quiet); no data without --json.
    expect(login.stdout).toBe('');
    expect(login.stderr).toMatch(
      /^logged in to http:\/\/127\.0\.0\.1:\d+ as sandbox@example\.invalid, user 1390; valid until /,
    );
    const loginJson = await bed.main(['login', '--api-key-stdin', '--json'], { input: bed.sandbox.apiKey });
    expect(loginJson.code).toBe(0);
    expect(JSON.parse(loginJson.stdout)).toEqual({
      baseUrl: bed.sandbox.url,
      email: 'sandbox@example.invalid',
      userId: 1390,
      expiresAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT[\d:.]+Z$/),
    });

    const doc = await bed.file('in-process.txt', 'in process');
    const hash = sha256('in process');
    const result = await bed.main(['register', doc, '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(`${JSON.stringify(bed.sandbox.records.get(hash))}\n`);
    expect(result.stderr).toBe(`registered ${hash}\n`);

    const table = await bed.main(['register', doc]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(new RegExp(`^verification +${bed.sandbox.url}/verification/${hash}$`, 'm'));
    expect(table.stderr).toMatch(/already registered/);
  });

  it('--no-complete then complete: the forfait body is the request answer byte for byte', async () => {
    const doc = await bed.file('split.txt', 'split');
    const hash = sha256('split');
    const first = await bed.main(['register', doc, '--no-complete', '--json'], { env: bed.withKey() });
    expect(first.code, first.stderr).toBe(0);
    const second = await bed.main(['complete', hash, '--json']);
    expect(second.code, second.stderr).toBe(0);
    const forfait = bed.sandbox.calls.filter((c) => c.route === 'forfait');
    expect(forfait).toHaveLength(1);
    expect(`${forfait[0]!.body}\n`).toBe(first.stdout);
    expect(JSON.parse(second.stdout)).toEqual(bed.sandbox.records.get(hash));

    // Completing a completed hash says so and sends nothing.
    const mark = bed.mark();
    const again = await bed.main(['complete', hash]);
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/already registered/);
    expect(bed.callsSince(mark)).toEqual([]);
  });

  it('complete --session - sends the session read from standard input exactly as given', async () => {
    const doc = await bed.file('stdin-session.txt', 'stdin session');
    const hash = sha256('stdin session');
    const first = await bed.main(['register', doc, '--no-complete', '--json'], { env: bed.withKey() });
    expect(first.code, first.stderr).toBe(0);
    // Same value, other bytes: what a user might paste after passing it through jq.
    const given = `${JSON.stringify(JSON.parse(first.stdout), null, 2)}\n`;
    const result = await bed.main(['complete', hash, '--session', '-'], { input: given });
    expect(result.code, result.stderr).toBe(0);
    const forfait = bed.sandbox.calls.filter((c) => c.route === 'forfait');
    expect(forfait.map((c) => c.body)).toEqual([given]);
    expect(result.stdout).toMatch(new RegExp(`^hash +${hash}$`, 'm'));

    const invalid = await bed.main(['complete', sha256('other'), '--session', '-'], { input: '{"sessionId": 5}' });
    expectFailure(invalid, 2, /invalid --session/);
    expect(bed.sandbox.calls.filter((c) => c.route === 'forfait')).toHaveLength(1);
  });

  it('complete --use-active-subscription completes a pending registration with the active subscription', async () => {
    const doc = await bed.file('active.txt', 'active');
    const hash = sha256('active');
    const first = await bed.main(['register', doc, '--no-complete'], { env: bed.withKey() });
    expect(first.code, first.stderr).toBe(0);
    const result = await bed.main(['complete', hash, '--use-active-subscription']);
    const active = bed.sandbox.calls.filter((c) => c.route === 'active');
    expect(active).toHaveLength(1);
    expect(active[0]!.method).toBe('GET');
    expect(active[0]!.path).toBe('/api/v2/payment/subscription/active');
    expect(result.code, result.stderr).toBe(0);
    expect(bed.sandbox.records.has(hash)).toBe(true);
  });

  it('register --custody --no-complete, then complete: the file metadata is still sent', async () => {
    // The pending entry keeps `custody: true` and the file facts, so the split flow sends what register would.
    const doc = await bed.file('split-custody.pdf', 'split custody');
    const hash = sha256('split custody');
    const first = await bed.main(['register', doc, '--custody', '--no-complete'], { env: bed.withKey() });
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(bed.sandbox.calls.find((c) => c.route === 'request')!.body)).toMatchObject({ custody: true });
    const second = await bed.main(['complete', hash]);
    expect(second.code, second.stderr).toBe(0);
    expect(routes(bed.sandbox.calls)).toEqual(['login', 'request', 'forfait', 'file']);
    expect(bed.sandbox.files.get(hash)).toMatchObject({
      name: 'split-custody.pdf',
      type: 'application/pdf',
      userId: 1390,
    });
    expect(second.stderr).toMatch(/NOT uploaded/);
  });

  it('--quiet silences the chatter but not the data', async () => {
    const doc = await bed.file('quiet.txt', 'quiet');
    const result = await bed.main(['register', doc, '--quiet'], { env: bed.withKey() });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(new RegExp(`^hash +${sha256('quiet')}$`, 'm'));
  });

  it('pending, logout and config, quickly', async () => {
    const doc = await bed.file('p.txt', 'p');
    expect((await bed.main(['register', doc, '--no-complete'], { env: bed.withKey() })).code).toBe(0);
    const pending = await bed.main(['pending', '--json']);
    expect(pending.code).toBe(0);
    expect(JSON.parse(pending.stdout)).toEqual([
      expect.objectContaining({ hash: sha256('p'), description: 'p.txt', plan: 'FREE' }),
    ]);
    const logout = await bed.main(['logout']);
    expect(logout.code).toBe(0);
    expect(logout.stderr).toBe(`logged out of ${bed.sandbox.url}\n`);
    const after = await bed.main(['complete', sha256('p')]);
    expectFailure(after, 3, /not logged in/);
    expect(existsSync(bed.pendingFile(sha256('p')))).toBe(true);

    const path = await bed.main(['config', 'path']);
    expect(path.stdout).toBe(`${bed.storeDir}\n`);
    const get = await bed.main(['config', 'get', 'retries', '--json'], { env: { NOTARIZE_RETRIES: '7' } });
    expect(JSON.parse(get.stdout)).toEqual({ key: 'retries', value: '7', source: 'env' });
    const flag = await bed.main(['config', 'get', 'retries', '--retries', '2'], { env: { NOTARIZE_RETRIES: '7' } });
    expect(flag.stdout).toBe('2\n');
  });
});

describe('usage errors send nothing', () => {
  const cases = [
    {
      name: 'register without input',
      argv: () => ['register'],
      message: /missing the file to register|no input given/,
    },
    {
      name: 'complete with an invalid hash',
      argv: () => ['complete', 'not-a-hash'],
      message: /invalid hash 'not-a-hash'/,
    },
    {
      name: 'complete without a pending session',
      argv: () => ['complete', sha256('nothing')],
      message: /no pending session for [0-9a-f]{64}/,
    },
    {
      name: 'an invalid --timeout',
      argv: () => ['register', '--hash', sha256('t'), '-d', 't', '--timeout', 'soon'],
      message: /invalid timeout 'soon'/,
    },
    {
      name: 'an invalid NOTARIZE_RETRIES',
      argv: () => ['register', '--hash', sha256('r'), '-d', 'r'],
      env: { NOTARIZE_RETRIES: '-1' },
      message: /invalid retries '-1'/,
    },
    {
      name: '--hash and a file',
      argv: () => ['register', join(bed.workDir, 'x.txt'), '--hash', sha256('x'), '-d', 'x'],
      message: /give either .* or --hash/,
    },
    {
      name: '--custody with --hash',
      argv: () => ['register', '--hash', sha256('c'), '-d', 'c', '--custody'],
      message: /--custody needs (a )?file path/,
    },
    {
      name: 'a base URL with credentials in it',
      argv: () => ['register', '--hash', sha256('u'), '-d', 'u', '--base-url', 'https://user:pw@127.0.0.1:1'],
      message: /no credentials, query or fragment/,
    },
    {
      name: 'an unknown blockchain',
      argv: () => ['register', '--hash', sha256('b'), '-d', 'b', '--blockchain', 'ETHEREUM'],
      message: /ETHEREUM/,
    },
  ];

  it.each(cases)('$name', async ({ argv, env, message }) => {
    await bed.file('x.txt', 'x');
    const result = await bed.main(argv(), { env: { ...bed.withKey(), ...env } });
    expectFailure(result, 2, message);
    expect(bed.sandbox.calls).toEqual([]);
    const json = await bed.main([...argv(), '--json'], { env: { ...bed.withKey(), ...env } });
    expectJsonError(json, 2);
    expect(bed.sandbox.calls).toEqual([]);
  });
});

describe('retries', () => {
  it('the request step is retried after 503s and then succeeds', async () => {
    bed.sandbox.addFaults([{ route: 'request', kind: 'status', value: 503, count: 2 }]);
    const doc = await bed.file('retry.txt', 'retry');
    const result = await bed.main(['register', doc, '--retries', '3'], {
      env: { ...bed.withKey(), NOTARIZE_RETRY_DELAY_MS: '0' },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(bed.sandbox.calls.map((c) => [c.route, c.status])).toEqual([
      ['login', 200],
      ['request', 503],
      ['request', 503],
      ['request', 200],
      ['forfait', 200],
    ]);
  });

  it('forfait is not retried after a 503 that may have been processed, and is retried after one with Retry-After', async () => {
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'status', value: 503, count: 1 }]);
    const doc = await bed.file('once.txt', 'once');
    const hash = sha256('once');
    const failed = await bed.main(['register', doc, '--json'], {
      env: { ...bed.withKey(), NOTARIZE_RETRY_DELAY_MS: '0' },
    });
    const error = expectJsonError(failed, 4);
    expect(error.hint).toContain(`notarize complete ${hash}`);
    expect(bed.sandbox.calls.filter((c) => c.route === 'forfait')).toHaveLength(1);
    expect(existsSync(bed.pendingFile(hash))).toBe(true);

    bed.sandbox.addFaults([{ route: 'forfait', kind: 'status', value: 503, retryAfter: 0, count: 1 }]);
    const finished = await bed.main(['complete', hash], { env: { NOTARIZE_RETRY_DELAY_MS: '0' } });
    expect(finished.code, finished.stderr).toBe(0);
    expect(bed.sandbox.calls.filter((c) => c.route === 'forfait').map((c) => c.status)).toEqual([503, 503, 200]);
    expect(existsSync(bed.pendingFile(hash))).toBe(false);
  });
});

describe('--verbose', () => {
  it('logs each request as "METHOD URL -> STATUS in N ms", never the token or the key', async () => {
    const doc = await bed.file('verbose.txt', 'verbose');
    const hash = sha256('verbose');
    const result = await bed.main(['register', doc, '--verbose'], { env: bed.withKey() });
    expect(result.code, result.stderr).toBe(0);
    const url = bed.sandbox.url.replace(/\./g, '\\.');
    const lines = result.stderr.split('\n').filter((line) => line.startsWith('[notarize] '));
    const requests = lines.filter((line) => / -> /.test(line));
    expect(requests).toEqual([
      expect.stringMatching(new RegExp(`^\\[notarize\\] POST ${url}/api/v2/auth/login -> 200 in \\d+ ms$`)),
      expect.stringMatching(
        new RegExp(`^\\[notarize\\] POST ${url}/api/v2/registration/\\?subscription=true -> 200 in \\d+ ms$`),
      ),
      expect.stringMatching(
        new RegExp(`^\\[notarize\\] POST ${url}/api/v2/registration/${hash}/forfait -> 200 in \\d+ ms$`),
      ),
    ]);
    const token = bed.storedTokens()[bed.sandbox.url]!;
    expect(token).toBeDefined();
    expect(result.stderr).not.toContain(token);
    expect(result.stderr).not.toContain(token.split('.')[2]!);
    expect(result.stderr).not.toContain(bed.sandbox.apiKey);
    expect(result.stderr).not.toMatch(/authorization|bearer/i);

    // With the stored token only (no key in the environment to redact).
    const second = await bed.file('verbose2.txt', 'verbose 2');
    const stored = await bed.main(['register', second, '--verbose', '--json']);
    expect(stored.code, stored.stderr).toBe(0);
    expect(stored.stderr).toMatch(/-> 200 in \d+ ms/);
    expect(stored.stderr).not.toContain(token);
    expect(stored.stdout).not.toContain(token);
  });

  it('a failing run logs the status and shows the stack trace only with --verbose', async () => {
    bed.sandbox.addFaults([{ route: 'request', kind: 'status', value: 500, count: 2 }]);
    const doc = await bed.file('fail.txt', 'fail');
    const quiet = await bed.main(['register', doc, '--retries', '0'], { env: bed.withKey() });
    expectFailure(quiet, 4, /answered 500/);
    expect(quiet.stderr).not.toMatch(/\[notarize\]/);
    const verbose = await bed.main(['register', doc, '--retries', '0', '--verbose']);
    expect(verbose.code).toBe(4);
    expect(verbose.stderr).toMatch(/\[notarize\] POST .*\/api\/v2\/registration\/\?subscription=true -> 500 in \d+ ms/);
    expect(verbose.stderr).toMatch(STACK_LINE);
    expect(routes(bed.sandbox.calls)).toEqual(['login', 'request', 'request']);
  });
});

describe('pending and logout', () => {
  it('pending lists the sessions saved and not completed, as a table and as JSON', async () => {
    const empty = await bed.main(['pending']);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toBe('');
    expect(empty.stderr).toMatch(/no pending registrations/);

    const a = await bed.file('alpha.txt', 'alpha');
    const first = await bed.main(['register', a, '--no-complete', '--json'], { env: bed.withKey() });
    expect(first.code, first.stderr).toBe(0);
    const b = await bed.file('beta.txt', 'beta');
    const second = await bed.main(['register', b, '--no-complete', '-d', 'the beta document']);
    expect(second.code, second.stderr).toBe(0);

    const table = await bed.main(['pending']);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^HASH +DESCRIPTION +PLAN +SAVED +STATE$/);
    expect(lines).toHaveLength(3);
    const rowOf = (hash: string) => lines.find((line) => line.startsWith(hash));
    expect(rowOf(sha256('alpha'))).toMatch(/^[0-9a-f]{64} +alpha\.txt +FREE +\d{4}-\d\d-\d\dT[\d:.]+Z +ready$/);
    expect(rowOf(sha256('beta'))).toMatch(/^[0-9a-f]{64} +the beta document +FREE +\d{4}-\d\d-\d\dT[\d:.]+Z +ready$/);
    expect(table.stdout).toContain(sha256('alpha'));
    expect(table.stdout).toContain(sha256('beta'));

    const json = await bed.main(['pending', '--json']);
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
    const login = await bed.main(['login', '--api-key-stdin'], { input: bed.sandbox.apiKey });
    expect(login.code, login.stderr).toBe(0);
    expect(Object.keys(bed.storedTokens())).toEqual([bed.sandbox.url]);

    const logout = await bed.main(['logout']);
    expect(logout.code, logout.stderr).toBe(0);
    expect(logout.stdout).toBe('');
    expect(logout.stderr).toContain(`logged out of ${bed.sandbox.url}`);
    expect(bed.storedTokens()).toEqual({});

    const doc = await bed.file('after-logout.txt', 'after logout');
    const mark = bed.mark();
    const register = await bed.main(['register', doc]);
    expectFailure(register, 3, /not logged in/);
    expect(bed.callsSince(mark)).toEqual([]);

    const again = await bed.main(['logout']);
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/no token was stored/);
  });
});

/**
 * Every documented exit code against a sandbox on 127.0.0.1 port 0, with the
 * message on stderr, nothing on stdout, no stack trace (unless --verbose)
 * and, for --json, one JSON error line. One case per code runs the built bin
 * (`bed.run`), so the code is seen as a parent process sees it; the others
 * call `main()`.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/commands/registry.js';
import { expectFailure, expectJsonError } from '../helpers/assert.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { routes } from '../helpers/sandbox.js';
import { sha256 } from '../helpers/documents.js';
import { STACK_LINE } from '../helpers/cli.js';

let bed: Bed;
useBed((created) => (bed = created));

/** A document of `content` registered with --no-complete: its hash, and the session issued (the JSON printed). */
async function issuedSession(name: string, content: string): Promise<{ hash: string; issued: string }> {
  const doc = await bed.file(name, content);
  const first = await bed.main(['register', doc, '--no-complete', '--json'], { env: bed.withKey() });
  expect(first.code, first.stderr).toBe(0);
  return { hash: sha256(content), issued: first.stdout.replace(/\n$/, '') };
}

describe('exit 0', () => {
  it('--help lists the commands and the exit codes on stdout; --version prints the version', async () => {
    const help = await bed.run(['--help'], { env: { NOTARIZE_BASE_URL: undefined }, noBaseUrlCheck: true });
    expect(help.code).toBe(0);
    expect(help.stderr).toBe('');
    for (const command of COMMANDS) expect(help.stdout).toMatch(new RegExp(`^  ${command.name}\\b`, 'm'));
    for (const code of [0, 1, 2, 3, 4, 5]) expect(help.stdout).toMatch(new RegExp(`^  ${code}  \\S`, 'm'));
    const version = await bed.run(['--version'], { env: { NOTARIZE_BASE_URL: undefined }, noBaseUrlCheck: true });
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
    expect(version.stderr).toBe('');
  });
});

describe('complete --session', () => {
  it('a session file an editor saved with a byte order mark: sent without the mark, registered', async () => {
    const { hash, issued } = await issuedSession('bom-session.txt', 'session saved by an editor');
    const sessionFile = await bed.file('bom-session.json', `\ufeff${issued}`);
    const mark = bed.mark();
    const result = await bed.main(['complete', hash, '--session', sessionFile]);
    expect(result.code, result.stderr).toBe(0);
    expect(routes(bed.callsSince(mark))).toEqual(['forfait']);
    expect(bed.callsSince(mark)[0]!.body).toBe(issued);
    expect(bed.sandbox.records.has(hash)).toBe(true);
  });
});

describe('exit 1: the service refused the operation', () => {
  it('complete --session with a well-formed session the service did not issue (400); the issued session is kept', async () => {
    const { hash, issued } = await issuedSession('refused.txt', 'refused');
    const forged = { ...(JSON.parse(issued) as Record<string, unknown>), sessionId: '1683554257039' };
    const sessionFile = await bed.file('forged-session.json', JSON.stringify(forged));

    const mark = bed.mark();
    const result = await bed.main(['complete', hash, '--session', sessionFile]);
    expectFailure(result, 1, /answered 400/);
    expect(routes(bed.callsSince(mark))).toEqual(['forfait']);
    expect(bed.callsSince(mark)[0]!.body).toBe(JSON.stringify(forged));
    expect(bed.sandbox.records.has(hash)).toBe(false);

    const json = await bed.main(['complete', hash, '--session', sessionFile, '--json']);
    const error = expectJsonError(json, 1);
    expect(error.code).toBe('refused');
    expect(error.message).toMatch(/400/);

    // The refused session must not have replaced the one the service issued
    // (it did in src/core/notarize.ts complete() at the time of writing: the
    // given session was saved over the pending one, and lost it for good).
    const retryMark = bed.mark();
    const retried = await bed.main(['complete', hash]);
    expect(bed.callsSince(retryMark).map((c) => c.body)).toEqual([issued]);
    expect(retried.code, retried.stderr).toBe(0);
    expect(bed.sandbox.records.has(hash)).toBe(true);
  });

  it('an injected 422 on the request step', async () => {
    bed.sandbox.addFaults([{ route: 'request', kind: 'status', value: 422, count: 1 }]);
    const doc = await bed.file('conflict.txt', 'conflict');
    const result = await bed.run(['register', doc], { env: bed.withKey() });
    expectFailure(result, 1, /answered 422/);
    expect(routes(bed.sandbox.calls)).toEqual(['login', 'request']);
    expect(existsSync(bed.pendingFile(sha256('conflict')))).toBe(false);
  });
});

describe('exit 2: usage or local input error, nothing sent', () => {
  const cases: { name: string; args: (dir: string) => string[]; message: RegExp; setup?: () => Promise<void> }[] = [
    {
      name: 'an unknown option',
      args: (d) => ['register', join(d, 'doc.txt'), '--bogus'],
      message: /unknown option '--bogus'/,
    },
    { name: 'an unknown command', args: () => ['frobnicate'], message: /unknown command 'frobnicate'/ },
    {
      name: 'a missing file',
      args: (d) => ['register', join(d, 'missing.txt')],
      message: /cannot read '.*missing\.txt': no such file/,
    },
    { name: 'a directory', args: (d) => ['register', d], message: /is a directory/ },
    { name: 'an invalid --hash', args: () => ['register', '--hash', 'xyz', '-d', 'x'], message: /invalid hash 'xyz'/ },
    {
      name: 'plain http to a non-loopback --base-url',
      args: (d) => ['register', join(d, 'doc.txt'), '--base-url', 'http://example.com'],
      message: /invalid base URL: plain http to 'example\.com', which is not a loopback address/,
    },
    {
      // r92: it said "refusing to send credentials", of a command that sends nothing.
      name: 'plain http to a non-loopback --base-url, for verify',
      args: (d) => ['verify', join(d, 'doc.txt'), '--base-url', 'http://example.com'],
      message:
        /invalid base URL: plain http to 'example\.com', which is not a loopback address \(given with --base-url; notarize sends its credentials to the service, never in clear/,
    },
    {
      name: 'a corrupt credentials file',
      args: (d) => ['register', join(d, 'doc.txt')],
      message: /store file .*credentials\.json is damaged/,
      setup: async () => {
        await mkdir(bed.storeDir, { recursive: true, mode: 0o700 });
        await writeFile(bed.credentialsFile, '{"tokens": {', { mode: 0o600 });
      },
    },
  ];

  it.each(cases)('$name', async ({ args, message, setup }) => {
    await bed.file('doc.txt', 'the document');
    const storeFiles = [bed.credentialsFile, bed.ledgerFile(sha256('the document'))];
    await setup?.();
    const before = storeFiles.map((f) => (existsSync(f) ? readFileSync(f) : undefined));
    // With an API key at hand, anything sent by mistake would reach the sandbox and show in its log.
    const result = await bed.main(args(bed.workDir), { env: bed.withKey() });
    expectFailure(result, 2, message);
    expect(bed.sandbox.calls).toEqual([]);
    // A hint that names a command (e.g. `notarize hash <file>`) names one that exists.
    const known = COMMANDS.map((c) => c.name);
    for (const [, name] of result.stderr.matchAll(/`notarize ([a-z][a-z-]*)/g)) {
      expect(known, `the message names \`notarize ${name}\``).toContain(name);
    }
    // A damaged store file is reported, never rewritten or wiped.
    expect(storeFiles.map((f) => (existsSync(f) ? readFileSync(f) : undefined))).toEqual(before);
  });

  it('NOTARIZE_BASE_URL with plain http to a non-loopback host, with --json', async () => {
    const doc = await bed.file('doc.txt', 'env url');
    const result = await bed.main(['register', doc, '--json'], {
      env: { ...bed.withKey(), NOTARIZE_BASE_URL: 'http://example.com' },
      noBaseUrlCheck: true,
    });
    const error = expectJsonError(result, 2);
    expect(error.code).toBe('unsafe_base_url');
    expect(error.message).toMatch(/plain http to 'example\.com'/);
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('an unknown option with --json gives a JSON usage error', async () => {
    const result = await bed.run(['register', '--json', '--bogus'], { env: bed.withKey() });
    const error = expectJsonError(result, 2);
    expect(error.code).toBe('usage');
    expect(error.message).toMatch(/unknown option '--bogus'/);
    expect(bed.sandbox.calls).toEqual([]);
  });
});

describe('exit 3: authentication', () => {
  it('no credentials at all: nothing is sent', async () => {
    const doc = await bed.file('nocreds.txt', 'no credentials');
    const result = await bed.run(['register', doc]);
    expectFailure(result, 3, new RegExp(`not logged in to ${bed.sandbox.url}`));
    expect(result.stderr).toMatch(/notarize login/);
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('a wrong API key, given to login or in NOTARIZE_API_KEY', async () => {
    const wrongKey = 'sandbox_0123456789abcdef0123456789abcdef';
    bed.addSecret(wrongKey);
    const login = await bed.main(['login', '--api-key-stdin'], { input: wrongKey });
    expectFailure(login, 3, /answered 401/);
    expect(routes(bed.sandbox.calls)).toEqual(['login']);
    expect(bed.sandbox.calls[0]!.status).toBe(401);
    expect(bed.storedTokens()).toEqual({});

    const doc = await bed.file('wrongkey.txt', 'wrong key');
    const mark = bed.mark();
    const register = await bed.main(['register', doc], { env: { NOTARIZE_API_KEY: wrongKey } });
    expectFailure(register, 3, /logging in with NOTARIZE_API_KEY failed: .*answered 401/);
    // The hint names the key that was refused, not "set NOTARIZE_API_KEY": it is set.
    expect(register.stderr).toContain('check NOTARIZE_API_KEY, or log in with `notarize login`');
    expect(register.stderr).not.toContain('or set NOTARIZE_API_KEY');
    expect(new Set(routes(bed.callsSince(mark)))).toEqual(new Set(['login']));
    expect(bed.storedTokens()).toEqual({});
  });

  it("an API key too large for --api-key-stdin is refused naming that flag, not a '-' nobody typed", async () => {
    const login = await bed.main(['login', '--api-key-stdin'], { input: 'k'.repeat(70_000) });
    expectFailure(login, 2, /the API key with --api-key-stdin is larger than 65536 bytes/);
    expect(login.stderr).toContain('(check that what goes to --api-key-stdin is the API key)');
    expect(login.stderr).not.toContain("'-'");
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('an API key saved as UTF-16, or not UTF-8, is said so for --api-key-stdin, and not sent garbled', async () => {
    const key = bed.sandbox.apiKey;
    const cases: [Buffer, string][] = [
      // PowerShell 5's `>`, with its mark, and iconv's UTF-16LE, without.
      [Buffer.concat([Buffer.of(0xff, 0xfe), Buffer.from(`${key}\r\n`, 'utf16le')]), 'is UTF-16, not UTF-8'],
      [Buffer.from(key, 'utf16le'), 'is UTF-16LE, not UTF-8'],
      [Buffer.concat([Buffer.from(key), Buffer.of(0xe9)]), 'is not valid UTF-8'],
    ];
    for (const [input, said] of cases) {
      const login = await bed.main(['login', '--api-key-stdin'], { input });
      expectFailure(login, 2, new RegExp(`^notarize: the API key with --api-key-stdin ${said} \\(`));
      expect(login.stderr).toContain('UTF-8');
    }
    expect(bed.sandbox.calls).toEqual([]);
    expect(bed.storedTokens()).toEqual({});
  });

  it('an API key holding a control character is refused before it is sent: stdin, environment (r86)', async () => {
    const key = bed.sandbox.apiKey;
    for (const [input, at] of [
      [`${key}\0`, `U+0000 at character ${key.length + 1}`],
      [`\0${key}`, 'U+0000 at character 1'],
      [`${key.slice(0, 3)}\u001b${key.slice(3)}`, 'U+001B at character 4'],
    ] as const) {
      const login = await bed.main(['login', '--api-key-stdin'], { input });
      expectFailure(
        login,
        2,
        new RegExp(
          `^notarize: the API key holds a control character \\(${at.replace('+', '\\+')}\\); nothing was sent`,
        ),
      );
    }
    const register = await bed.main(['register', '--hash', 'a'.repeat(64), '-d', 'a key with a control character'], {
      env: { NOTARIZE_API_KEY: `${key.slice(0, 3)}\u0001${key.slice(3)}` },
    });
    expectFailure(register, 2, /the API key holds a control character \(U\+0001 at character 4\)/);
    expect(bed.sandbox.calls).toEqual([]);
    expect(bed.storedTokens()).toEqual({});

    // Reached only after a call went out with NOTARIZE_TOKEN and came back 401: that 401 is the failure,
    // exit 3, never the key's "nothing was sent" (r87).
    const foreignToken = await bed.directLogin(await bed.extraSandbox());
    const afterSending = await bed.main(['register', '--hash', 'b'.repeat(64), '-d', 'token refused, key unusable'], {
      env: { NOTARIZE_TOKEN: foreignToken, NOTARIZE_API_KEY: `${key.slice(0, 3)}\u001b${key.slice(3)}` },
    });
    expectFailure(afterSending, 3, /answered 401/);
    expect(afterSending.stderr).not.toContain('nothing was sent');
    expect(afterSending.stderr).toContain('the API key could not log in again (it holds a control character)');
    expect(bed.sandbox.calls.map((c) => [c.route, c.status])).toEqual([['request', 401]]);
  });

  it('a wrong NOTARIZE_API_KEY is tried once, not twice', async () => {
    // The 401 of the on-the-fly login refuses the key, not a request: logging in again with it cannot help.
    const wrongKey = 'sandbox_fedcba9876543210fedcba9876543210';
    bed.addSecret(wrongKey);
    const doc = await bed.file('wrongkey.txt', 'wrong key once');
    const register = await bed.main(['register', doc], { env: { NOTARIZE_API_KEY: wrongKey } });
    expectFailure(register, 3, /answered 401/);
    expect(bed.sandbox.calls.map((c) => [c.route, c.status])).toEqual([['login', 401]]);
  });

  it('an expired stored token is not sent', async () => {
    await bed.replaceSandbox({ tokenTtlSeconds: -100 });
    // login refuses to store a token that is already expired (exit 3)...
    const login = await bed.main(['login', '--api-key-stdin'], { input: bed.sandbox.apiKey });
    expectFailure(login, 3, /already expired; it was not stored/);
    expect(bed.storedTokens()).toEqual({});
    // ...so plant one, as a token stored yesterday would be.
    mkdirSync(bed.storeDir, { recursive: true, mode: 0o700 });
    writeFileSync(bed.credentialsFile, JSON.stringify({ tokens: { [bed.sandbox.url]: await bed.directLogin() } }), {
      mode: 0o600,
    });
    expect(Object.keys(bed.storedTokens())).toEqual([bed.sandbox.url]);

    const doc = await bed.file('expired.txt', 'expired');
    const mark = bed.mark();
    const result = await bed.main(['register', doc]);
    expectFailure(result, 3, /the stored token for .* has expired/);
    expect(bed.callsSince(mark)).toEqual([]);

    const envToken = await bed.directLogin();
    const afterLogin = bed.mark();
    const viaEnv = await bed.main(['register', doc, '--json'], { env: { NOTARIZE_TOKEN: envToken } });
    const error = expectJsonError(viaEnv, 3);
    expect(error.message).toMatch(/NOTARIZE_TOKEN has expired/);
    expect(bed.callsSince(afterLogin)).toEqual([]);
  });

  it('a token the service rejects (401), and a 403', async () => {
    const foreign = await bed.extraSandbox();
    const foreignToken = await bed.directLogin(foreign);
    const doc = await bed.file('foreign.txt', 'foreign token');
    const result = await bed.main(['register', doc], { env: { NOTARIZE_TOKEN: foreignToken } });
    expectFailure(result, 3, /answered 401/);
    expect(bed.sandbox.calls.map((c) => [c.route, c.status])).toEqual([['request', 401]]);

    bed.sandbox.addFaults([{ route: 'request', kind: 'status', value: 403, count: 1 }]);
    const forbidden = await bed.main(['register', doc], { env: bed.withKey() });
    expectFailure(forbidden, 3, /answered 403/);
  });
});

describe('exit 4: transient, safe to retry', () => {
  it('the service cannot be reached (connection refused)', async () => {
    const token = await bed.directLogin();
    await bed.sandbox.close();
    const doc = await bed.file('down.txt', 'service down');
    const result = await bed.run(['register', doc, '--retries', '0'], { env: { NOTARIZE_TOKEN: token } });
    expectFailure(result, 4, /ECONNREFUSED|could not be reached/);
  });

  it('a 503 on forfait keeps the pending session and says how to finish; complete then finishes it', async () => {
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'status', value: 503, count: 1 }]);
    const content = 'unavailable';
    const doc = await bed.file('unavailable.txt', content);
    const hash = sha256(content);
    const result = await bed.main(['register', doc, '--retries', '0'], { env: bed.withKey() });
    expectFailure(result, 4, /answered 503/);
    expect(result.stderr).toContain(`notarize complete ${hash}`);
    expect(existsSync(bed.pendingFile(hash))).toBe(true);
    const failedForfait = bed.sandbox.calls.find((c) => c.route === 'forfait')!;
    expect(failedForfait.status).toBe(503);

    const pending = await bed.main(['pending', '--json']);
    expect(pending.code).toBe(0);
    expect((JSON.parse(pending.stdout) as { hash: string }[]).map((p) => p.hash)).toEqual([hash]);

    const mark = bed.mark();
    const finished = await bed.main(['complete', hash]);
    expect(finished.code, finished.stderr).toBe(0);
    const calls = bed.callsSince(mark);
    expect(routes(calls)).toEqual(['forfait']);
    expect(calls[0]!.body).toBe(failedForfait.body);
    expect(existsSync(bed.pendingFile(hash))).toBe(false);
  });

  it('a 429 on the request step, and a request that times out, with --json', async () => {
    bed.sandbox.addFaults([{ route: 'request', kind: 'status', value: 429, count: 1 }]);
    const doc = await bed.file('busy.txt', 'busy');
    const busy = await bed.main(['register', doc, '--json', '--retries', '0'], { env: bed.withKey() });
    const error = expectJsonError(busy, 4);
    expect(error.message).toMatch(/429/);

    bed.sandbox.addFaults([{ route: 'request', kind: 'hang', count: 1 }]);
    const slow = await bed.main(['register', doc, '--timeout', '300', '--retries', '0']);
    expectFailure(slow, 4, /timed out/);
  });
});

describe('exit 5: an answer of the wrong shape', () => {
  it('wrong-shape forfait answer: exit 5, kept aside (not in the ledger), never re-sent by a re-run', async () => {
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'wrong-shape', count: 1 }]);
    const content = 'wrong shape';
    const doc = await bed.file('shape.txt', content);
    const hash = sha256(content);
    const result = await bed.main(['register', doc], { env: bed.withKey() });
    expectFailure(result, 5, /does not match the documented shape: creationDate/);
    expect(result.stderr).toMatch(/kept aside in .*quarantine/);
    expect(bed.sandbox.records.has(hash)).toBe(true);
    expect(existsSync(bed.ledgerFile(hash))).toBe(false);
    // The service did complete it: a re-run must not complete it a second time.
    const mark = bed.mark();
    const again = await bed.main(['register', doc]);
    expectFailure(again, 5, /does not send it again on its own/);
    expect(bed.callsSince(mark)).toEqual([]);
    // Asked explicitly, complete sends it; the service's 409 ends it well.
    const completed = await bed.main(['complete', hash]);
    expect(completed.code, completed.stderr).toBe(0);
    expect(completed.stderr).toMatch(/already registered/);
  });

  it('wrong-shape request answer: exit 5, and the answer is kept as pending', async () => {
    bed.sandbox.addFaults([{ route: 'request', kind: 'wrong-shape', count: 1 }]);
    const content = 'wrong shape request';
    const doc = await bed.file('shape-request.txt', content);
    const result = await bed.run(['register', doc, '--json'], { env: bed.withKey() });
    const error = expectJsonError(result, 5);
    expect(error.code).toBe('protocol');
    expect(error.message).toMatch(/userId/);
    expect(existsSync(bed.pendingFile(sha256(content)))).toBe(true);
    expect(routes(bed.sandbox.calls)).toEqual(['login', 'request']);
  });

  it('an HTML page instead of JSON, on the request step and on forfait', async () => {
    bed.sandbox.addFaults([{ route: 'request', kind: 'html', count: 1 }]);
    const content = 'html answer';
    const doc = await bed.file('html.txt', content);
    const hash = sha256(content);
    const result = await bed.main(['register', doc], { env: bed.withKey() });
    expectFailure(result, 5, /is not JSON/);
    expect(existsSync(bed.pendingFile(hash))).toBe(false);

    bed.sandbox.addFaults([{ route: 'forfait', kind: 'html', count: 1 }]);
    // --force: after an unread request step, only an explicit choice requests again.
    const second = await bed.main(['register', doc, '--force', '--verbose']);
    expect(second.code).toBe(5);
    expect(second.stdout).toBe('');
    expect(second.stderr).toMatch(/is not JSON/);
    expect(existsSync(bed.pendingFile(hash))).toBe(true);
    // --verbose shows the stack trace that is otherwise hidden.
    expect(second.stderr).toMatch(STACK_LINE);
  });
});

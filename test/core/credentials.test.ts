/**
 * core/credentials.ts, the one owner of the token: where a token comes from
 * (NOTARIZE_TOKEN, the store, a login on the fly with the key), a 401 to a
 * request renewed once for the run, a 401 to the login told apart from a 401
 * to the request. Against the real sandbox on 127.0.0.1 and a real store in a
 * temporary directory; the request sent under the token is the sandbox's
 * `GET /api/v2/payment/subscription/active`, which checks the token.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent } from 'undici';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { logIn } from '../../src/api/client.js';
import { HttpTransport } from '../../src/api/http.js';
import { Outage, OUTAGE_HOLD_MS, withRetries, type RetryPolicy } from '../../src/api/retry.js';
import { TokenCredentials, type CredentialSources } from '../../src/core/credentials.js';
import { keyDigest, keyTrace } from '../../src/secrets.js';
import { AuthError, HeldBackError, ProtocolError, TransientError } from '../../src/errors.js';
import { startSandbox, type Fault, type Sandbox, type SandboxOptions } from '../../src/sandbox/server.js';
import { Store } from '../../src/store/store.js';
import { rejection } from '../helpers/catch.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

/** An unsigned JWT-shaped token with the given claims: never accepted by the sandbox, read fine by notarize. */
function jwt(claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'HS256', typ: 'JWT' })}.${part(claims)}.c2lnbmF0dXJl`;
}

const EXPIRED = jwt({ userId: 1, exp: Math.floor(Date.now() / 1000) - 3600 });
const NO_RETRIES: RetryPolicy = { retries: 0, baseDelayMs: 1, maxDelayMs: 1 };

const tempDir = useTempDirs('notarize-credentials-');
let sandbox: Sandbox;
let agent: Agent;
let store: Store;
let transport: HttpTransport;
/** What the credentials told (on the fly logins, tokens to scrub), in order. */
let told: string[];

async function useSandbox(options: SandboxOptions = {}): Promise<void> {
  await sandbox?.close();
  sandbox = await startSandbox(options);
  transport = new HttpTransport({ baseUrl: sandbox.url, timeoutMs: 5000, userAgent: 'test', dispatcher: agent });
}

beforeEach(async () => {
  agent = new Agent();
  store = new Store(tempDir());
  told = [];
  await useSandbox();
});

afterEach(async () => {
  vi.useRealTimers();
  await sandbox.close();
  await agent.close();
});

function credentials(sources: Partial<CredentialSources> = {}): TokenCredentials {
  return new TokenCredentials({
    baseUrl: sandbox.url,
    store,
    envToken: undefined,
    apiKey: undefined,
    login: (apiKey) => logIn(transport, NO_RETRIES, apiKey),
    onLogin: (reason) => told.push(`login: ${reason}`),
    onToken: (token) => told.push(`token: ${token === EXPIRED ? 'expired' : token.slice(-6)}`),
    ...sources,
  });
}

/** The tokens `send` was called with. */
let sent: string[];
beforeEach(() => {
  sent = [];
});

/** The request made under the token: the sandbox answers 401 to a token it did not issue. */
async function send(token: string): Promise<string> {
  sent.push(token);
  return (await transport.send({ method: 'GET', path: '/api/v2/payment/subscription/active', token })).text;
}

/** A token issued by the sandbox, as `notarize login` would get. */
function issuedToken(): Promise<string> {
  return logIn(transport, NO_RETRIES, sandbox.apiKey);
}

/** The sandbox's calls as `route status`, without the ones made to set the test up. */
function calls(since = 0): string[] {
  return sandbox.calls.slice(since).map((c) => `${c.route} ${c.status}`);
}

async function failure(promise: Promise<unknown>): Promise<AuthError> {
  const error = await promise.catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(AuthError);
  return error as AuthError;
}

describe('a stored token and a key in the environment', () => {
  it('a token another key logged in for is not used: the key logs in, its token replaces it', async () => {
    const other = jwt({ userId: 2, exp: Math.floor(Date.now() / 1000) + 3600 });
    await store.setToken(sandbox.url, other, keyTrace('another_account_key_0123456789'));
    const owner = credentials({ apiKey: sandbox.apiKey });
    const since = sandbox.calls.length;
    const token = await owner.token();
    expect(token).not.toBe(other);
    expect(calls(since)).toEqual(['login 200']);
    expect(store.getToken(sandbox.url)).toBe(token);
    expect(store.getTokenKey(sandbox.url)).toBe(keyDigest(sandbox.apiKey));
    // The same key next time: its own stored token, no login.
    const again = credentials({ apiKey: sandbox.apiKey });
    expect(await again.token()).toBe(token);
    expect(calls(since)).toEqual(['login 200']);
  });

  it("a token an older notarize stored over this key's (tokens replaced, tokenKeys left) is not used", async () => {
    const own = await credentials({ apiKey: sandbox.apiKey }).token();
    // What a notarize from before tokenKeys were kept does at its login with another key, on a shared store.
    const other = jwt({ userId: 2, exp: Math.floor(Date.now() / 1000) + 3600 });
    const file = join(store.dir, 'credentials.json');
    const data = JSON.parse(readFileSync(file, 'utf8')) as { tokens: Record<string, string> };
    expect(data.tokens[sandbox.url]).toBe(own);
    data.tokens[sandbox.url] = other;
    writeFileSync(file, JSON.stringify(data), { mode: 0o600 });
    expect(store.getTokenKey(sandbox.url)).toBeUndefined();
    const since = sandbox.calls.length;
    const token = await credentials({ apiKey: sandbox.apiKey }).token();
    expect(token).not.toBe(other);
    expect(calls(since)).toEqual(['login 200']);
    expect(store.getTokenKey(sandbox.url)).toBe(keyDigest(sandbox.apiKey));
  });
});

describe('where the token comes from', () => {
  it('the stored token of this service, read once for the run', async () => {
    const token = await issuedToken();
    await store.setToken(sandbox.url, `${token}\n`, keyTrace(sandbox.apiKey));
    const owner = credentials();
    await owner.authorize(send);
    // Another process changing the store meanwhile does not change the token of this run.
    await store.setToken(sandbox.url, EXPIRED, keyTrace(sandbox.apiKey));
    await owner.authorize(send);
    expect(sent).toEqual([token, token]);
    expect(calls(1)).toEqual(['active 200', 'active 200']);
  });

  it("judges the run's token against the clock at each request", async () => {
    // Unsigned, so the sandbox refuses it; only its expiry matters here.
    const token = jwt({ userId: 1, exp: Math.floor(Date.now() / 1000) + 3600 });
    await store.setToken(sandbox.url, token, keyTrace(sandbox.apiKey));
    const owner = credentials();
    await failure(owner.authorize(send));
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 2 * 3600_000);
    const error = await failure(owner.authorize(send));
    expect(error.message).toBe(`the stored token for ${sandbox.url} has expired`);
    expect(sent).toEqual([token]);
  });

  it('NOTARIZE_TOKEN before the stored token', async () => {
    const token = await issuedToken();
    await store.setToken(sandbox.url, EXPIRED, keyTrace(sandbox.apiKey));
    await credentials({ envToken: token }).authorize(send);
    expect(sent).toEqual([token]);
  });

  it('NOTARIZE_TOKEN refused (401) with no key: the hint names it, not `notarize login`, which it outranks', async () => {
    await store.setToken(sandbox.url, await issuedToken(), keyTrace(sandbox.apiKey));
    const error = await failure(
      credentials({ envToken: jwt({ userId: 1, exp: Math.floor(Date.now() / 1000) + 3600 }) }).authorize(send),
    );
    expect(error.status).toBe(401);
    expect(error.hint).toBe(
      'the token in NOTARIZE_TOKEN was refused: unset it (a stored token or the API key is then used), or set a valid one',
    );
  });

  it('neither, and no key: not logged in, nothing sent', async () => {
    const error = await failure(credentials().authorize(send));
    expect(error.message).toBe(`not logged in to ${sandbox.url}`);
    expect(error.hint).toBe('run `notarize login`, or set NOTARIZE_API_KEY (or NOTARIZE_TOKEN)');
    expect(sent).toEqual([]);
    expect(sandbox.calls).toEqual([]);
  });

  it('an expired stored token is never sent', async () => {
    await store.setToken(sandbox.url, EXPIRED, keyTrace(sandbox.apiKey));
    const error = await failure(credentials().authorize(send));
    expect(error.message).toBe(`the stored token for ${sandbox.url} has expired`);
    expect(sent).toEqual([]);
  });

  it('an expired NOTARIZE_TOKEN is never sent, and says where it came from', async () => {
    const error = await failure(credentials({ envToken: EXPIRED }).authorize(send));
    expect(error.message).toBe('the token in NOTARIZE_TOKEN has expired');
    expect(error.hint).toBe('get a new one with `notarize login`, or set NOTARIZE_API_KEY');
    expect(sent).toEqual([]);
  });

  it('a NOTARIZE_TOKEN no header can carry is refused before anything is sent, and not quoted', async () => {
    const error = await failure(credentials({ envToken: 'two words', apiKey: sandbox.apiKey }).authorize(send));
    expect(error.message).toContain('the token in NOTARIZE_TOKEN cannot be used');
    expect(error.message).not.toContain('two words');
    expect(sandbox.calls).toEqual([]);
  });

  it('a damaged stored token: refused without a key, replaced by a login with one', async () => {
    await store.setToken(sandbox.url, 'two words', keyTrace(sandbox.apiKey));
    const error = await failure(credentials().authorize(send));
    expect(error.message).toContain(`the token in the store (credentials.json, for ${sandbox.url}) cannot be used`);
    expect(sandbox.calls).toEqual([]);

    await credentials({ apiKey: sandbox.apiKey }).authorize(send);
    expect(calls()).toEqual(['login 200', 'active 200']);
    expect(store.getToken(sandbox.url)).toBe(sent[0]);
  });
});

describe('a login on the fly with the API key', () => {
  it('happens when no token is usable, is stored, and is told', async () => {
    await store.setToken(sandbox.url, EXPIRED, keyTrace(sandbox.apiKey));
    const owner = credentials({ apiKey: sandbox.apiKey });
    expect(await owner.authorize(send)).toContain('sessionId');
    const [token] = sent;
    expect(store.getToken(sandbox.url)).toBe(token);
    expect(calls()).toEqual(['login 200', 'active 200']);
    expect(told).toEqual(['login: no usable token', `token: ${token!.slice(-6)}`]);
  });

  it('is shared by concurrent requests: one login for all of them', async () => {
    const owner = credentials({ apiKey: sandbox.apiKey });
    await Promise.all([1, 2, 3, 4].map(() => owner.authorize(send)));
    expect(calls().filter((c) => c.startsWith('login'))).toEqual(['login 200']);
    expect(new Set(sent).size).toBe(1);
  });

  it('with a refused key: the login 401 is reported, the key tried once, nothing sent', async () => {
    const owner = credentials({ apiKey: 'sandbox_0123456789abcdef0123456789abcdef' });
    const error = await failure(owner.authorize(send));
    expect(error.status).toBe(401);
    expect(error.message).toContain('answered 401');
    expect(sent).toEqual([]);
    expect(calls()).toEqual(['login 401']);
    expect(told).toEqual(['login: no usable token']);
    expect(store.getToken(sandbox.url)).toBeUndefined();
  });

  it.each([
    { failure: 'a refused key', key: () => 'sandbox_0123456789abcdef0123456789abcdef', faults: [] },
    { failure: 'no answer', key: () => sandbox.apiKey, faults: [{ route: 'login', kind: 'drop' } satisfies Fault] },
    {
      failure: 'a 503',
      key: () => sandbox.apiKey,
      faults: [{ route: 'login', kind: 'status', value: 503 } satisfies Fault],
    },
  ])('that failed ($failure) is the run’s answer: later requests get that error, no second login', async (c) => {
    sandbox.addFaults(c.faults);
    const owner = credentials({ apiKey: c.key() });
    const first = await owner.authorize(send).catch((caught: unknown) => caught);
    expect(first).toBeInstanceOf(Error);
    const later = await Promise.all([1, 2, 3].map(() => owner.authorize(send).catch((caught: unknown) => caught)));
    expect(later).toEqual([first, first, first]);
    // Each its own copy: a document's flow adds its `notarize complete <hash>` to the hint.
    expect(new Set([first, ...later]).size).toBe(4);
    expect(sandbox.calls.filter((call) => call.route === 'login')).toHaveLength(1);
    expect(sent).toEqual([]);
  });

  it('that failed for a reason a later login may not meet: tried again after OUTAGE_HOLD_MS', async () => {
    const clock = { now: 1_000_000 };
    sandbox.addFaults([{ route: 'login', kind: 'status', value: 503, count: 1 } satisfies Fault]);
    const owner = credentials({ apiKey: sandbox.apiKey, now: () => clock.now });
    await rejection(owner.authorize(send));
    clock.now += OUTAGE_HOLD_MS - 1;
    await rejection(owner.authorize(send));
    expect(sandbox.calls.filter((call) => call.route === 'login')).toHaveLength(1);
    clock.now += 1;
    expect(await owner.authorize(send)).toContain('sessionId');
    expect(calls().filter((call) => call.startsWith('login'))).toEqual(['login 503', 'login 200']);
  });

  it('with a refused key: kept for the whole run, however long', async () => {
    const clock = { now: 1_000_000 };
    const owner = credentials({ apiKey: 'sandbox_0123456789abcdef0123456789abcdef', now: () => clock.now });
    await failure(owner.authorize(send));
    clock.now += 24 * 3600_000;
    await failure(owner.authorize(send));
    expect(calls()).toEqual(['login 401']);
  });

  it('held back by the run’s outage: not kept, so the login goes out as soon as the outage ends', async () => {
    // No wait: a call held back fails at once (after the one let through at once).
    const outage = new Outage({ timing: { holdMs: 60_000, probeMs: 60_000, waitMs: 0 } });
    const policy: RetryPolicy = { ...NO_RETRIES, outage };
    const owner = credentials({ apiKey: sandbox.apiKey, login: (apiKey) => logIn(transport, policy, apiKey) });
    // Two logins of the run in a row got no answer: the outage holds logins, and nothing is in flight.
    const noAnswer = () => Promise.reject(new TransientError('x failed: ECONNREFUSED'));
    await rejection(withRetries(noAnswer, 'safe', policy, { route: 'login' }));
    await rejection(withRetries(noAnswer, 'safe', policy, { route: 'login' }));
    await rejection(withRetries(noAnswer, 'safe', policy, { route: 'login' })); // let through, and still down
    expect(await rejection(owner.authorize(send))).toBeInstanceOf(HeldBackError);
    expect(calls()).toEqual([]);
    // A login that worked ends the outage: the next request logs in at once.
    outage.attemptEnded('login', outage.begin('login'), undefined, { final: true, probe: undefined });
    expect(await owner.authorize(send)).toContain('sessionId');
    expect(calls()).toEqual(['login 200', 'active 200']);
  });

  it('answered by a refusal other than 401: a credentials problem, not the request answering', async () => {
    sandbox.addFaults([{ route: 'login', kind: 'status', value: 409 } satisfies Fault]);
    const error = await failure(credentials({ apiKey: sandbox.apiKey }).authorize(send));
    expect(error.message).toMatch(/^logging in with NOTARIZE_API_KEY failed: .*409/);
    expect(error.status).toBe(409);
    expect(error.hint).toBe('check NOTARIZE_API_KEY, or log in with `notarize login`');
    expect(sent).toEqual([]);
  });

  it.each(['html', 'wrong-shape'] as const)('answered with %s: a protocol error (exit 5)', async (kind) => {
    sandbox.addFaults([{ route: 'login', kind }]);
    const error = await credentials({ apiKey: sandbox.apiKey })
      .authorize(send)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as ProtocolError).exitCode).toBe(5);
    expect((error as ProtocolError).message).toContain('login answer');
    expect(sent).toEqual([]);
  });

  it('that issues an already expired token: said so, not stored, not sent', async () => {
    await useSandbox({ tokenTtlSeconds: -100 });
    const error = await failure(credentials({ apiKey: sandbox.apiKey }).authorize(send));
    expect(error.message).toBe(`the service at ${sandbox.url} issued a token that has already expired`);
    expect(error.hint).toContain("check this machine's clock");
    expect(sent).toEqual([]);
    expect(store.getToken(sandbox.url)).toBeUndefined();
  });
});

describe('a 401 to the request', () => {
  /** A token the sandbox did not issue (another instance's), stored as if from an earlier login. */
  /** A token of another service stored as if `key` had logged in for this one (a 401 here). */
  async function storeForeignToken(key = sandbox.apiKey): Promise<string> {
    const other = await startSandbox();
    try {
      const foreign = await logIn(
        new HttpTransport({ baseUrl: other.url, timeoutMs: 5000, userAgent: 'test', dispatcher: agent }),
        NO_RETRIES,
        other.apiKey,
      );
      await store.setToken(sandbox.url, foreign, keyTrace(key));
      return foreign;
    } finally {
      await other.close();
    }
  }

  it('without a key: the request’s own 401, sent once', async () => {
    await storeForeignToken();
    const error = await failure(credentials().authorize(send));
    expect(error.status).toBe(401);
    expect(sent).toHaveLength(1);
    expect(calls()).toEqual(['active 401']);
    // Logging in again is the way out, and the hint says what a fresh refusal would mean (no loop).
    expect(error.hint).toBe(
      "log in again with `notarize login` (or set NOTARIZE_API_KEY); if a fresh login is refused the same way, the key's account may not do this",
    );
  });

  it('with a key, when the renewal fails for a reason a later login may not meet: kept OUTAGE_HOLD_MS, then tried again', async () => {
    await storeForeignToken();
    const clock = { now: 1_000_000 };
    sandbox.addFaults([{ route: 'login', kind: 'status', value: 503, count: 1 } satisfies Fault]);
    const owner = credentials({ apiKey: sandbox.apiKey, now: () => clock.now });
    const first = await rejection(owner.authorize(send));
    expect((first as Error).message).toMatch(/answered 503/);
    const second = await rejection(owner.authorize(send));
    expect(second).toEqual(first);
    expect(second).not.toBe(first);
    expect(calls().filter((c) => c.startsWith('login'))).toEqual(['login 503']);
    clock.now += OUTAGE_HOLD_MS;
    expect(await owner.authorize(send)).toContain('sessionId');
    expect(calls().filter((c) => c.startsWith('login'))).toEqual(['login 503', 'login 200']);
  });

  it('with a key: one login for the run, the request sent again once, the new token stored', async () => {
    const foreign = await storeForeignToken();
    const owner = credentials({ apiKey: sandbox.apiKey });
    await owner.authorize(send);
    const fresh = sent[1]!;
    expect(sent).toEqual([foreign, fresh]);
    expect(calls()).toEqual(['active 401', 'login 200', 'active 200']);
    expect(store.getToken(sandbox.url)).toBe(fresh);
    expect(told).toEqual([
      `token: ${foreign.slice(-6)}`,
      'login: the service answered 401',
      `token: ${fresh.slice(-6)}`,
    ]);
    // The renewed token is the one of the run from now on.
    await owner.authorize(send);
    expect(sent[2]).toBe(fresh);
  });

  it('met by concurrent requests: one renewal shared by all', async () => {
    await storeForeignToken();
    const owner = credentials({ apiKey: sandbox.apiKey });
    await Promise.all([1, 2, 3].map(() => owner.authorize(send)));
    expect(calls().filter((c) => c.startsWith('login'))).toEqual(['login 200']);
    expect(calls().filter((c) => c === 'active 401')).toHaveLength(3);
  });

  it('again after the renewal: that 401 is final, no second login', async () => {
    await storeForeignToken();
    sandbox.addFaults([{ route: 'active', kind: 'status', value: 401 }]);
    const owner = credentials({ apiKey: sandbox.apiKey });
    const error = await failure(owner.authorize(send));
    expect(error.status).toBe(401);
    expect(calls()).toEqual(['active 401', 'login 200', 'active 401']);
    // Not "log in again": that is what was just done (the hints review found the loop).
    expect(error.hint).toBe(
      "the service refused a token it had just given for the API key: logging in again cannot help; check that the key's account may do this",
    );
    // A later request meeting a 401 gets the same renewed token, and no new login.
    await failure(owner.authorize(send));
    expect(calls().filter((c) => c.startsWith('login'))).toEqual(['login 200']);
  });

  it('when the renewal itself is refused: the login’s 401, not the request’s', async () => {
    await storeForeignToken('sandbox_fedcba9876543210fedcba9876543210');
    const owner = credentials({ apiKey: 'sandbox_fedcba9876543210fedcba9876543210' });
    const error = await failure(owner.authorize(send));
    expect(error.message).toContain('answered 401');
    expect(calls()).toEqual(['active 401', 'login 401']);
    expect(sent).toHaveLength(1);
  });

  it('after a refused login on the fly, met by a request sent earlier: final, the key not tried again', async () => {
    // The first request goes with the stored token; before its answer, that
    // token expires and a second request logs in on the fly, refused.
    const token = jwt({ userId: 1, exp: Math.floor(Date.now() / 1000) + 3600 });
    await store.setToken(sandbox.url, token, keyTrace('sandbox_0123456789abcdef0123456789abcdef'));
    const owner = credentials({ apiKey: 'sandbox_0123456789abcdef0123456789abcdef' });
    let started!: () => void;
    let answer!: () => void;
    const startedSending = new Promise<void>((resolve) => (started = resolve));
    const mayAnswer = new Promise<void>((resolve) => (answer = resolve));
    const first = owner.authorize(async (sending) => {
      started();
      await mayAnswer;
      return send(sending);
    });
    await startedSending;
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 2 * 3600_000);
    expect((await failure(owner.authorize(send))).message).toContain('answered 401');
    answer();
    const error = await failure(first);
    expect(error.message).not.toContain('API key');
    expect(calls()).toEqual(['login 401', 'active 401']);
  });

  it('other refusals of the request are passed on untouched, without a login', async () => {
    await store.setToken(sandbox.url, await issuedToken(), keyTrace(sandbox.apiKey));
    sandbox.addFaults([{ route: 'active', kind: 'status', value: 403, count: 1 }]);
    const error = await failure(credentials({ apiKey: sandbox.apiKey }).authorize(send));
    expect(error.status).toBe(403);
    expect(calls(1)).toEqual(['active 403']);
    expect(error.hint).toBe(
      "the service refuses this account this call (403): check the rights of the key's account, or log in with another key (`notarize login`)",
    );
  });
});

describe('a token that expires while its call waits to be sent again', () => {
  it('is replaced by a login with the key, a few times at most for one call, then the call fails exit 3', async () => {
    // Tokens that count as expired a second after they are issued (the 30 s margin), a call that
    // waits longer than that before each attempt.
    let logins = 0;
    const shortLived = () => {
      logins++;
      return Promise.resolve(jwt({ userId: 1, exp: Math.floor(Date.now() / 1000) + 31 }));
    };
    const creds = credentials({ apiKey: sandbox.apiKey, login: shortLived });
    const attempts: string[] = [];
    const error = await failure(
      creds.authorize(async (token) => {
        await new Promise((resolve) => setTimeout(resolve, 1100));
        creds.checkUnexpired(token);
        attempts.push(token);
        return 'sent';
      }),
    );
    expect(error.exitCode).toBe(3);
    expect(error.message).toBe('the token expired while a call waited to be sent again, more than once');
    expect(attempts).toEqual([]);
    expect(logins).toBe(4);
  });
});

/**
 * Messages that must not mislead or leak: an unparsable login answer is
 * described, never quoted (it may be a token in plain text); a 407 to a
 * plain request is an authentication problem naming the proxy variable,
 * not retried. Fake services on 127.0.0.1 choose the answers.
 */
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/api/client.js';
import { HttpTransport } from '../../src/api/http.js';
import { AuthError } from '../../src/errors.js';
import { startFakeService, type FakeService } from '../helpers/local-server.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { describeRun } from '../helpers/cli.js';

let bed: Bed;
useBed((created) => (bed = created));

const services: FakeService[] = [];
afterEach(async () => {
  await Promise.all(services.splice(0).map((s) => s.close()));
});

async function fake(answer: FakeService['answer']): Promise<FakeService> {
  const service = await startFakeService(answer);
  services.push(service);
  return service;
}

describe('a login answer that is not JSON is never quoted', () => {
  // What a service (or a misconfigured gateway) might send: the token itself, as plain text.
  const PLAIN_TOKEN = 'eyJhbGciOiJIUzI1NiJ9.eyJ1c2VySWQiOjEzOTB9.c2lnbmF0dXJlLW9mLWEtcGxhaW4tdGV4dC10b2tlbg';
  const KEY = 'fake-service-api-key-0123456789';

  it.each([
    ['notarize login', ['login']],
    ['a login on the fly (register)', ['register', '--hash', 'ab'.repeat(32), '--description', 'd']],
  ])('%s: exit 5, the answer described by its size, no part of it printed', async (_name, argv) => {
    bed.addSecret(PLAIN_TOKEN);
    bed.addSecret(KEY);
    const service = await fake(() => ({ status: 200, body: PLAIN_TOKEN, headers: { 'content-type': 'text/plain' } }));
    for (const json of [false, true]) {
      const run = await bed.main([...argv, ...(json ? ['--json'] : [])], {
        env: { NOTARIZE_BASE_URL: service.url, NOTARIZE_API_KEY: KEY },
      });
      expect(run.code, describeRun(run)).toBe(5);
      expect(run.stderr).toContain('login answer is not JSON');
      expect(run.stderr).toContain(`${PLAIN_TOKEN.length} bytes`);
      // Not even a prefix: the first characters of a JWT are its (guessable) header, the next its claims.
      expect(run.stderr).not.toContain(PLAIN_TOKEN.slice(0, 12));
      expect(run.stdout).not.toContain(PLAIN_TOKEN.slice(0, 12));
    }
    expect(service.received.filter((r) => r.route === 'login')).toHaveLength(2);
    expect(service.received.filter((r) => r.route !== 'login')).toEqual([]);
    expect(bed.storedTokens()).toEqual({});
  });
});

describe('a 407 to a plain request', () => {
  const transport = (service: FakeService, proxyVariable?: string) =>
    new HttpTransport({
      baseUrl: service.url,
      timeoutMs: 2000,
      userAgent: 'test',
      dispatcher: new Agent(),
      ...(proxyVariable === undefined ? {} : { proxyVariable }),
    });

  it('is an AuthError (exit 3) naming the proxy variable, sent once whatever the retries', async () => {
    const service = await fake(() => ({
      status: 407,
      body: 'proxy says no',
      headers: { 'proxy-authenticate': 'Basic realm="p"' },
    }));
    const api = new ApiClient(
      transport(service, 'HTTP_PROXY'),
      { retries: 3, baseDelayMs: 1, maxDelayMs: 10 },
      { authorize: (send) => send('t'.repeat(20)) },
    );
    const error = await api.login('k'.repeat(20)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AuthError);
    expect((error as AuthError).exitCode).toBe(3);
    expect((error as AuthError).message).toContain('answered 407 (proxy authentication required)');
    expect((error as AuthError).hint).toContain('HTTP_PROXY');
    expect(service.received).toHaveLength(1);
  });

  it('without a proxy set, still exit 3, saying none is set', async () => {
    const service = await fake(() => ({ status: 407, body: '' }));
    const error = await transport(service)
      .send({ method: 'GET', path: '/api/v2/payment/subscription/active' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AuthError);
    expect((error as AuthError).message).toContain('no proxy is set for this service');
  });
});

describe('no room for the HTTP parser (ulimit -v)', () => {
  it('is exit 2 at once, nothing sent, never "try again later", saying what to change; the way out it names works', async () => {
    // undici's parser is WebAssembly, placed in a region of about 10 GB of address space. Node 24
    // finds the limit and does without that room; Node 20 (and the 10 GB) cannot.
    const doc = await bed.file('limited.txt');
    const limited = { shell: 'ulimit -v 4000000', env: bed.withKey() };
    const run = await bed.run(['register', doc, '--verbose'], limited);
    if (run.code === 0 && Number(process.versions.node.split('.')[0]) > 20) {
      expect(bed.ledgerHashes()).toHaveLength(1);
      return;
    }
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).toContain(
      '/api/v2/auth/login was not sent: no memory for the HTTP parser (WebAssembly) (a limit on virtual memory ' +
        '(ulimit -v) leaves it no room: lift the limit, or run with NODE_OPTIONS=--disable-wasm-trap-handler',
    );
    expect(run.stderr).not.toMatch(/\[notarize\] retry|try again later/);
    expect(bed.sandbox.calls).toEqual([]);
    const fixed = await bed.run(['register', doc], {
      ...limited,
      env: { ...limited.env, NODE_OPTIONS: '--disable-wasm-trap-handler' },
    });
    expect(fixed.code, describeRun(fixed)).toBe(0);
    expect(bed.ledgerHashes()).toHaveLength(1);
  });

  it('with that way out, a batch of files over 64 KiB is hashed on this thread: a worker thread there aborted Node', async () => {
    // A worker reserves room for its code when it starts; under ulimit -v 2 GB V8 aborted the whole
    // process (exit 133, "Fatal process OOM ... CodeRange") in the middle of a batch that had paid.
    const docs = await Promise.all(
      Array.from({ length: 6 }, (_, i) => bed.write(`large-limited/doc-${i}.bin`, Buffer.alloc(100_000, i + 1))),
    );
    const run = await bed.run(['register', '-r', bed.path('large-limited'), '--output', 'ndjson'], {
      shell: 'ulimit -v 2000000',
      env: { ...bed.withKey(), NODE_OPTIONS: '--disable-wasm-trap-handler' },
    });
    expect(run.code, describeRun(run)).toBe(0);
    expect(bed.ledgerHashes()).toEqual(expect.arrayContaining(docs));
  });
});

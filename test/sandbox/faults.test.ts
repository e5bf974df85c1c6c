import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { loginResponseSchema, notarizationRecordSchema, subscriptionSessionSchema } from '../../src/api/schemas.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { sha256 } from '../helpers/documents.js';
import { errorBody, login, requestStep, send, useLoggedInSandbox } from '../helpers/sandbox.js';

const ACTIVE = '/api/v2/payment/subscription/active';
const forfaitPath = (hash: string): string => `/api/v2/registration/${hash}/forfait`;

/** Waits (bounded) until the sandbox has logged `count` calls. */
async function waitForCalls(sandbox: Sandbox, count: number): Promise<void> {
  for (let i = 0; i < 200 && sandbox.calls.length < count; i += 1) await sleep(5);
  expect(sandbox.calls.length).toBeGreaterThanOrEqual(count);
}

describe('sandbox fault injection', () => {
  let sandbox: Sandbox;
  let token: string;
  useLoggedInSandbox((started, loggedIn) => {
    sandbox = started;
    token = loggedIn;
  });

  it('latency delays the answer, then answers normally', async () => {
    sandbox.addFaults([{ route: 'active', kind: 'latency', value: 150, count: 1 }]);
    const started = performance.now();
    const reply = await send(sandbox, 'GET', ACTIVE, { token });
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    expect(reply.status).toBe(200);
    subscriptionSessionSchema.parse(reply.json());
  });

  it('status answers the given code with a JSON error and Retry-After, without processing', async () => {
    const hash = sha256('status-fault');
    sandbox.addFaults([{ route: 'request', kind: 'status', value: 429, retryAfter: 2, count: 1 }]);
    const reply = await requestStep(sandbox, token, hash);
    expect(reply.status).toBe(429);
    expect(reply.headers['retry-after']).toBe('2');
    expect(errorBody(reply)).toMatchObject({ status: 429, error: 'too_many_requests' });
    expect(sandbox.calls.at(-1)?.fault).toBe('status');
    // Not processed: the hash was never requested.
    expect((await send(sandbox, 'POST', forfaitPath(hash), { token, body: {} })).status).toBe(404);
  });

  it('count limits a rule, rules apply in order, and latency combines with another fault', async () => {
    sandbox.addFaults([
      { route: 'active', kind: 'status', value: 500, count: 1 },
      { route: '*', kind: 'latency', value: 80, count: 2 },
      { route: 'active', kind: 'status', value: 502, count: 1 },
    ]);
    const started = performance.now();
    expect((await send(sandbox, 'GET', ACTIVE, { token })).status).toBe(500);
    expect((await send(sandbox, 'GET', ACTIVE, { token })).status).toBe(502);
    expect(performance.now() - started).toBeGreaterThanOrEqual(150);
    expect((await send(sandbox, 'GET', ACTIVE, { token })).status).toBe(200);
  });

  it('a * rule matches every route', async () => {
    sandbox.addFaults([{ route: '*', kind: 'status', value: 503, count: 2 }]);
    expect((await send(sandbox, 'POST', '/api/v2/auth/login', { body: { apiKey: sandbox.apiKey } })).status).toBe(503);
    expect((await send(sandbox, 'GET', `/verification/${sha256('x')}`)).status).toBe(503);
    expect((await send(sandbox, 'GET', ACTIVE, { token })).status).toBe(200);
  });

  it('drop closes the connection without answering or processing', async () => {
    const hash = sha256('drop');
    sandbox.addFaults([{ route: 'request', kind: 'drop', count: 1 }]);
    await expect(requestStep(sandbox, token, hash)).rejects.toThrow();
    const call = sandbox.calls.at(-1);
    expect(call).toMatchObject({ route: 'request', status: 0, fault: 'drop' });
    expect((await send(sandbox, 'POST', forfaitPath(hash), { token, body: {} })).status).toBe(404);
  });

  it('drop-after completes the forfait, then loses the answer', async () => {
    const hash = sha256('drop-after');
    const session = await requestStep(sandbox, token, hash);
    sandbox.addFaults([{ route: 'forfait', kind: 'drop-after', count: 1 }]);
    await expect(send(sandbox, 'POST', forfaitPath(hash), { token, body: session.text })).rejects.toThrow();
    expect(sandbox.records.has(hash)).toBe(true);
    const retry = await send(sandbox, 'POST', forfaitPath(hash), { token, body: session.text });
    expect(retry.status).toBe(409);
  });

  it('html answers 200 with an HTML page, without processing', async () => {
    const hash = sha256('html');
    sandbox.addFaults([{ route: 'request', kind: 'html', count: 1 }]);
    const reply = await requestStep(sandbox, token, hash);
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toMatch(/^text\/html/);
    expect(reply.text).toMatch(/^<!doctype html>/);
    expect(() => reply.json()).toThrow();
    expect((await send(sandbox, 'POST', forfaitPath(hash), { token, body: {} })).status).toBe(404);
  });

  it('truncated processes the request, then answers half of the JSON body', async () => {
    sandbox.addFaults([{ route: 'request', kind: 'truncated', count: 1 }]);
    const reply = await requestStep(sandbox, token, sha256('truncated'));
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/json');
    expect(() => reply.json()).toThrow(SyntaxError);
    // The first half still holds the sessionId, and the session really was issued.
    const sessionId = /"sessionId":"(\d+)"/.exec(reply.text)?.[1] ?? '';
    expect((await send(sandbox, 'GET', `/api/v2/subscription/${sessionId}`, { token })).status).toBe(200);
  });

  it('wrong-shape answers valid JSON that the schemas refuse', async () => {
    sandbox.addFaults([
      { route: 'login', kind: 'wrong-shape', count: 1 },
      { route: 'request', kind: 'wrong-shape', count: 1 },
      { route: 'forfait', kind: 'wrong-shape', count: 1 },
      { route: 'file', kind: 'wrong-shape', count: 1 },
    ]);
    const loginReply = await send(sandbox, 'POST', '/api/v2/auth/login', { body: { apiKey: sandbox.apiKey } });
    expect(loginReply.status).toBe(200);
    expect(loginResponseSchema.safeParse(loginReply.json()).success).toBe(false);

    const hash = sha256('wrong-shape');
    const requested = await requestStep(sandbox, token, hash);
    const session = requested.json() as Record<string, unknown>;
    expect(typeof session.userId).toBe('string');
    expect(subscriptionSessionSchema.safeParse(session).success).toBe(false);

    const fixed = JSON.stringify({ ...session, userId: Number(session.userId) });
    const forfait = await send(sandbox, 'POST', forfaitPath(hash), { token, body: fixed });
    expect(forfait.status).toBe(200);
    expect(typeof (forfait.json() as Record<string, unknown>).creationDate).toBe('string');
    expect(notarizationRecordSchema.safeParse(forfait.json()).success).toBe(false);
    expect(sandbox.records.has(hash)).toBe(true);

    const metadata = { hash, name: 'a', type: 'text/plain', size: 1, lastModified: 1, userId: 1390 };
    const file = await send(sandbox, 'PUT', `/api/v2/file/${hash}`, { token, body: metadata });
    expect(file.json()).toEqual([]);
  });

  it('huge streams a JSON-looking body until the client gives up', async () => {
    sandbox.addFaults([{ route: 'active', kind: 'huge', count: 1 }]);
    const controller = new AbortController();
    const answer = await request(`${sandbox.url}${ACTIVE}`, {
      headers: { authorization: `Bearer ${token}` },
      signal: controller.signal,
    });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toBe('application/json');
    let received = 0;
    let head = '';
    try {
      for await (const chunk of answer.body) {
        if (head === '') head = (chunk as Buffer).subarray(0, 12).toString();
        received += (chunk as Buffer).length;
        if (received >= 2 * 1024 * 1024) controller.abort();
      }
    } catch {
      // The abort ends the iteration with an error.
    }
    expect(head).toBe('{"padding":"');
    expect(received).toBeGreaterThanOrEqual(2 * 1024 * 1024);
    expect(received).toBeLessThan(64 * 1024 * 1024);
    // The sandbox noticed the disconnect and keeps serving.
    expect((await send(sandbox, 'GET', ACTIVE, { token })).status).toBe(200);
  });

  it('huge with a byte cap ends with a complete (if useless) JSON body', async () => {
    sandbox.addFaults([{ route: 'active', kind: 'huge', value: 200_000, count: 1 }]);
    const reply = await send(sandbox, 'GET', ACTIVE, { token });
    expect(reply.text.length).toBe(200_000 + '{"padding":""}'.length);
    expect(reply.json()).toEqual({ padding: 'a'.repeat(200_000) });
  });

  it('refuses invalid rules from addFaults, adding none', () => {
    const before = sandbox.calls.length;
    expect(() =>
      sandbox.addFaults([
        { route: 'active', kind: 'status', value: 503 },
        { route: 'active', kind: 'status', value: 200 },
      ]),
    ).toThrow(/status must be 400-599/);
    expect(sandbox.calls.length).toBe(before);
    expect(() => sandbox.addFaults([{ route: 'nope' as 'login', kind: 'drop' }])).toThrow(/unknown route/);
  });

  it('does not inject faults into unknown paths', async () => {
    sandbox.addFaults([{ route: '*', kind: 'drop', count: 1 }]);
    expect((await send(sandbox, 'GET', '/nothing-here')).status).toBe(404);
    await expect(send(sandbox, 'GET', ACTIVE, { token })).rejects.toThrow();
  });
});

describe('sandbox hang fault and close()', () => {
  it('hang never answers; the client times out and close() still resolves promptly', async () => {
    const sandbox = await startSandbox({ faults: [{ route: 'login', kind: 'hang' }] });
    try {
      const body = { apiKey: sandbox.apiKey };
      await expect(send(sandbox, 'POST', '/api/v2/auth/login', { body, timeoutMs: 200 })).rejects.toThrow();
      const pending = send(sandbox, 'POST', '/api/v2/auth/login', { body, timeoutMs: 10_000 }).then(
        () => 'answered',
        () => 'failed',
      );
      await waitForCalls(sandbox, 2);
      expect(sandbox.calls.every((c) => c.fault === 'hang' && c.status === 0)).toBe(true);
      const started = performance.now();
      await sandbox.close();
      expect(performance.now() - started).toBeLessThan(1000);
      expect(await pending).toBe('failed');
    } finally {
      await sandbox.close();
    }
  });

  it('close() also cuts pending latency and endless bodies short', async () => {
    const sandbox = await startSandbox({
      faults: [
        { route: 'login', kind: 'latency', value: 60_000 },
        { route: 'verification', kind: 'huge' },
      ],
    });
    const slow = send(sandbox, 'POST', '/api/v2/auth/login', { body: { apiKey: sandbox.apiKey } }).catch(
      () => 'failed',
    );
    const endless = await request(`${sandbox.url}/verification/${sha256('x')}`);
    await waitForCalls(sandbox, 2);
    const started = performance.now();
    await sandbox.close();
    expect(performance.now() - started).toBeLessThan(1000);
    expect(await slow).toBe('failed');
    await expect(endless.body.text()).rejects.toThrow();
  });

  it('reports each call once to onCall, and rejects invalid fault options at start', async () => {
    const seen: string[] = [];
    const sandbox = await startSandbox({
      onCall: (call) => seen.push(`${call.route ?? '-'} ${call.status}`),
      faults: [{ route: 'active', kind: 'drop', count: 1 }],
    });
    try {
      await login(sandbox);
      await send(sandbox, 'GET', ACTIVE).catch(() => undefined);
      await send(sandbox, 'GET', '/unknown');
      for (let i = 0; i < 100 && seen.length < 3; i += 1) await sleep(5);
      expect(seen).toEqual(['login 200', 'active 0', '- 404']);
    } finally {
      await sandbox.close();
    }
    await expect(startSandbox({ faults: [{ route: 'login', kind: 'latency' }] })).rejects.toThrow(/needs a value/);
  });
});

import { describe, expect, it } from 'vitest';
import { notarizationRecordSchema, subscriptionSessionSchema } from '../../src/api/schemas.js';
import { type Sandbox } from '../../src/sandbox/server.js';
import { sha256 } from '../helpers/documents.js';
import { REQUEST_PATH, errorBody, requestStep, send, useLoggedInSandbox } from '../helpers/sandbox.js';

const RECORD_KEYS = [
  'hash',
  'description',
  'custody',
  'signed',
  'signer',
  'signature',
  'txHash',
  'status',
  'blockchainType',
  'holder',
  'txId',
  'assetId',
  'tags',
  'paymentId',
  'creationDate',
  'payload',
  'userId',
];

const forfaitPath = (hash: string): string => `/api/v2/registration/${hash}/forfait`;

describe('sandbox registration flow', () => {
  let sandbox: Sandbox;
  let token: string;
  useLoggedInSandbox((started, loggedIn) => {
    sandbox = started;
    token = loggedIn;
  });

  it('answers the request step with a free-plan session that parses with the schema', async () => {
    const reply = await requestStep(sandbox, token, sha256('request-step'));
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/json');
    const session = subscriptionSessionSchema.parse(reply.json());
    expect(session).toMatchObject({ id: null, userId: 1390, planNickname: 'FREE', status: 'active', canceledAt: 0 });
    expect(session.sessionId).toMatch(/^\d{13,}$/);
    expect(session.planId).toMatch(/^price_/);
    expect(session).toMatchObject({ customer: null, defaultPaymentMethod: null, latestInvoice: null });
    expect(session.currentPeriodEnd - session.currentPeriodStart).toBe(864_000);
    expect(reply.text).toContain('"canceledAt":0');
  });

  it('issues a unique sessionId per request', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 5; i += 1) {
      const reply = await requestStep(sandbox, token, sha256(`unique-${i}`));
      ids.add((reply.json() as { sessionId: string }).sessionId);
    }
    expect(ids.size).toBe(5);
  });

  it('accepts real booleans as well as the strings "true"/"false"', async () => {
    const asBooleans = await requestStep(sandbox, token, sha256('booleans'), { custody: false, signed: true });
    expect(asBooleans.status).toBe(200);
    const asStrings = await requestStep(sandbox, token, sha256('strings'), { custody: 'true', signed: 'false' });
    expect(asStrings.status).toBe(200);
  });

  it('answers 400 JSON errors for malformed or wrongly shaped request bodies', async () => {
    const notJson = await send(sandbox, 'POST', REQUEST_PATH, { token, body: '{"hash": ' });
    expect(notJson.status).toBe(400);
    expect(errorBody(notJson)).toMatchObject({ status: 400, error: 'bad_request' });
    const badHash = await requestStep(sandbox, token, 'ABC');
    expect(badHash.status).toBe(400);
    expect(errorBody(badHash).message).toMatch(/hash/);
    const badBool = await requestStep(sandbox, token, sha256('bad-bool'), { custody: 'no' });
    expect(badBool.status).toBe(400);
    const badChain = await requestStep(sandbox, token, sha256('bad-chain'), { blockchainType: 'ETHEREUM' });
    expect(badChain.status).toBe(400);
  });

  it('requires the documented path: trailing slash and ?subscription=true', async () => {
    const body = { blockchainType: 'ALGORAND', custody: false, description: 'x', hash: sha256('path'), signed: false };
    const noSlash = await send(sandbox, 'POST', '/api/v2/registration?subscription=true', { token, body });
    expect(noSlash.status).toBe(404);
    const noQuery = await send(sandbox, 'POST', '/api/v2/registration/', { token, body });
    expect(noQuery.status).toBe(400);
  });

  it('answers 404 for forfait of a hash that was never requested, 400 for a bad hash', async () => {
    const unknown = await send(sandbox, 'POST', forfaitPath(sha256('never')), { token, body: {} });
    expect(unknown.status).toBe(404);
    expect(errorBody(unknown)).toMatchObject({ status: 404, error: 'not_found' });
    const bad = await send(sandbox, 'POST', forfaitPath('xyz'), { token, body: {} });
    expect(bad.status).toBe(400);
  });

  it('refuses a forfait whose session differs from the one issued', async () => {
    const hash = sha256('modified');
    const session = (await requestStep(sandbox, token, hash)).json() as Record<string, unknown>;
    const changes: Record<string, unknown>[] = [
      { ...session, canceledAt: false },
      { ...session, userId: String(session.userId) },
      { ...session, extra: 1 },
    ];
    const withoutCustomer = { ...session };
    delete withoutCustomer.customer;
    changes.push(withoutCustomer);
    for (const body of changes) {
      const reply = await send(sandbox, 'POST', forfaitPath(hash), { token, body });
      expect(reply.status).toBe(400);
      expect(errorBody(reply).message).toMatch(/session does not match/);
    }
    const notJson = await send(sandbox, 'POST', forfaitPath(hash), { token, body: 'nope' });
    expect(notJson.status).toBe(400);
  });

  it('completes a registration with the session sent back as received', async () => {
    const hash = sha256('happy');
    const requested = await requestStep(sandbox, token, hash, { description: 'TEST happy', custody: 'true' });
    const reply = await send(sandbox, 'POST', forfaitPath(hash), { token, body: requested.text });
    expect(reply.status).toBe(200);
    const record = notarizationRecordSchema.parse(reply.json());
    expect(Object.keys(reply.json() as object)).toEqual(RECORD_KEYS);
    expect(record).toMatchObject({
      hash,
      description: 'TEST happy',
      custody: true,
      signed: false,
      status: 'registered',
      blockchainType: 'ALGORAND',
      tags: [],
      userId: 1390,
    });
    expect(record.paymentId).toMatch(/^sub_sandbox_/);
    expect(Math.abs(record.creationDate - Date.now())).toBeLessThan(60_000);
    for (const key of ['signer', 'signature', 'txHash', 'holder', 'txId', 'assetId', 'payload'] as const) {
      expect(record[key]).toBeNull();
    }
    expect(sandbox.records.get(hash)).toEqual(record);
    const call = sandbox.calls.findLast((c) => c.route === 'forfait');
    expect(call?.body).toBe(requested.text);
    expect(call?.status).toBe(200);
  });

  it('accepts a session whose key order differs from the issued one', async () => {
    const hash = sha256('reordered');
    const session = (await requestStep(sandbox, token, hash)).json() as object;
    const reordered = JSON.stringify(Object.fromEntries(Object.entries(session).reverse()));
    expect((await send(sandbox, 'POST', forfaitPath(hash), { token, body: reordered })).status).toBe(200);
  });

  it('answers 409 to a second forfait and to a new request for a completed hash', async () => {
    const hash = sha256('twice');
    const session = await requestStep(sandbox, token, hash);
    expect((await send(sandbox, 'POST', forfaitPath(hash), { token, body: session.text })).status).toBe(200);
    const second = await send(sandbox, 'POST', forfaitPath(hash), { token, body: session.text });
    expect(second.status).toBe(409);
    expect(errorBody(second)).toMatchObject({ status: 409, error: 'conflict' });
    const again = await requestStep(sandbox, token, hash);
    expect(again.status).toBe(409);
  });

  it('replaces the session of a pending hash on a repeated request', async () => {
    const hash = sha256('repeated');
    const first = await requestStep(sandbox, token, hash);
    const second = await requestStep(sandbox, token, hash);
    expect(second.status).toBe(200);
    expect(second.json()).not.toEqual(first.json());
    expect((await send(sandbox, 'POST', forfaitPath(hash), { token, body: first.text })).status).toBe(400);
    expect((await send(sandbox, 'POST', forfaitPath(hash), { token, body: second.text })).status).toBe(200);
  });

  it('stores file metadata for a requested hash', async () => {
    const hash = sha256('file');
    await requestStep(sandbox, token, hash, { custody: true });
    const metadata = {
      hash,
      name: 'contract.pdf',
      type: 'application/pdf',
      size: 1234,
      lastModified: 1_700_000_000_000,
      userId: 1390,
      walletName: `label--2024-01-01T00:00:00.000Z--${sha256('wallet')}`,
    };
    const reply = await send(sandbox, 'PUT', `/api/v2/file/${hash}`, { token, body: metadata });
    expect(reply.status).toBe(200);
    expect(reply.json()).toEqual({});
    expect(sandbox.files.get(hash)).toEqual(metadata);
  });

  it('refuses file metadata for an unknown hash or of the wrong shape', async () => {
    const unknown = sha256('file-unknown');
    const base = { hash: unknown, name: 'a', type: 'text/plain', size: 1, lastModified: 1, userId: 1390 };
    expect((await send(sandbox, 'PUT', `/api/v2/file/${unknown}`, { token, body: base })).status).toBe(404);
    const hash = sha256('file-shape');
    await requestStep(sandbox, token, hash);
    const wrongSize = await send(sandbox, 'PUT', `/api/v2/file/${hash}`, { token, body: { ...base, hash, size: '1' } });
    expect(wrongSize.status).toBe(400);
    expect(errorBody(wrongSize).message).toMatch(/size/);
    const otherHash = await send(sandbox, 'PUT', `/api/v2/file/${hash}`, { token, body: base });
    expect(otherHash.status).toBe(400);
    expect((await send(sandbox, 'PUT', `/api/v2/file/${hash}`, { token })).status).toBe(400);
  });

  it('keeps returning the same active subscription', async () => {
    const first = await send(sandbox, 'GET', '/api/v2/payment/subscription/active', { token });
    const second = await send(sandbox, 'GET', '/api/v2/payment/subscription/active', { token });
    expect(first.status).toBe(200);
    expect(subscriptionSessionSchema.parse(first.json())).toMatchObject({ planNickname: 'FREE', canceledAt: 0 });
    expect(second.text).toBe(first.text);
  });

  it('returns any issued session by id, and 404 for others', async () => {
    const session = (await requestStep(sandbox, token, sha256('by-id'))).json() as { sessionId: string };
    const found = await send(sandbox, 'GET', `/api/v2/subscription/${session.sessionId}`, { token });
    expect(found.status).toBe(200);
    expect(found.json()).toEqual(session);
    const missing = await send(sandbox, 'GET', '/api/v2/subscription/123', { token });
    expect(missing.status).toBe(404);
    expect(errorBody(missing).error).toBe('not_found');
  });

  it('serves an HTML verification page: 200 once registered, 404 before', async () => {
    const hash = sha256('verify');
    const session = await requestStep(sandbox, token, hash, { description: '<b>tag</b>' });
    const pending = await send(sandbox, 'GET', `/verification/${hash}`);
    expect(pending.status).toBe(404);
    expect(pending.text).toMatch(/not registered/);
    await send(sandbox, 'POST', forfaitPath(hash), { token, body: session.text });
    const done = await send(sandbox, 'GET', `/verification/${hash}`);
    expect(done.status).toBe(200);
    expect(done.headers['content-type']).toMatch(/^text\/html/);
    expect(done.text).toContain(hash);
    expect(done.text).toContain('&lt;b&gt;tag&lt;/b&gt;');
    expect(done.text).toMatch(/is registered/);
  });

  it('answers 404 for unknown paths and 405 for wrong methods, as JSON', async () => {
    const unknown = await send(sandbox, 'GET', '/api/v2/notarizations', { token });
    expect(unknown.status).toBe(404);
    expect(errorBody(unknown)).toMatchObject({ status: 404, error: 'not_found' });
    const wrongMethod = await send(sandbox, 'GET', '/api/v2/auth/login');
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.allow).toBe('POST');
    expect(errorBody(wrongMethod)).toMatchObject({ status: 405, error: 'method_not_allowed' });
    expect(sandbox.calls.find((c) => c.path === '/api/v2/notarizations')?.route).toBeNull();
  });

  it('answers 413 for bodies over 1 MiB', async () => {
    const big = JSON.stringify({ apiKey: 'x'.repeat(1024 * 1024) });
    const reply = await send(sandbox, 'POST', '/api/v2/auth/login', { body: big });
    expect(reply.status).toBe(413);
    expect(errorBody(reply)).toMatchObject({ status: 413, error: 'payload_too_large' });
    expect((await send(sandbox, 'GET', '/api/v2/payment/subscription/active', { token })).status).toBe(200);
  });

  it('logs every call in order with its raw body', () => {
    const paths = sandbox.calls.map((c) => c.path);
    expect(paths[0]).toBe('/api/v2/auth/login');
    expect(sandbox.calls[0]?.body).toBe(JSON.stringify({ apiKey: sandbox.apiKey }));
    expect(paths).toContain(REQUEST_PATH);
    expect(sandbox.calls.every((c) => c.status > 0)).toBe(true);
  });
});

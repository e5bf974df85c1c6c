import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginResponseSchema, tokenClaimsSchema } from '../../src/api/schemas.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { errorBody, login, send } from '../helpers/sandbox.js';

const ACTIVE = '/api/v2/payment/subscription/active';

function decodeClaims(token: string): Record<string, unknown> {
  const payload = token.split('.')[1] ?? '';
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
}

describe('sandbox authentication', () => {
  let sandbox: Sandbox;
  let expired: Sandbox;

  beforeAll(async () => {
    sandbox = await startSandbox();
    expired = await startSandbox({ apiKey: 'sandbox_expired', tokenTtlSeconds: -10 });
  });
  afterAll(async () => {
    await Promise.all([sandbox.close(), expired.close()]);
  });

  it('generates a random API key and listens on 127.0.0.1', () => {
    expect(sandbox.apiKey).toMatch(/^sandbox_[0-9a-f]{32}$/);
    expect(sandbox.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('logs in with the right key and issues an HS256 JWT with the documented claims', async () => {
    const reply = await send(sandbox, 'POST', '/api/v2/auth/login', { body: { apiKey: sandbox.apiKey } });
    expect(reply.status).toBe(200);
    const { token } = loginResponseSchema.parse(reply.json());
    const [header = ''] = token.split('.');
    expect(JSON.parse(Buffer.from(header, 'base64url').toString('utf8'))).toEqual({ alg: 'HS256', typ: 'JWT' });
    const claims = tokenClaimsSchema.parse(decodeClaims(token));
    expect(claims).toMatchObject({ userId: 1390, email: 'sandbox@example.invalid', iss: 'notarize-sandbox' });
    const now = Math.floor(Date.now() / 1000);
    expect(claims.iat).toBeGreaterThanOrEqual(now - 5);
    expect(claims.nbf).toBe(claims.iat);
    expect(claims.exp).toBe((claims.iat ?? 0) + 36_000);
  });

  it('answers 401 with a JSON error for a wrong key', async () => {
    const reply = await send(sandbox, 'POST', '/api/v2/auth/login', { body: { apiKey: 'sandbox_wrong' } });
    expect(reply.status).toBe(401);
    expect(errorBody(reply)).toMatchObject({ status: 401, error: 'unauthorized' });
  });

  it('answers 400 for a login body that is not JSON or lacks apiKey', async () => {
    const notJson = await send(sandbox, 'POST', '/api/v2/auth/login', { body: '{apiKey:' });
    expect(notJson.status).toBe(400);
    expect(errorBody(notJson).error).toBe('bad_request');
    const noKey = await send(sandbox, 'POST', '/api/v2/auth/login', { body: { key: sandbox.apiKey } });
    expect(noKey.status).toBe(400);
  });

  it('accepts a valid token on protected routes', async () => {
    const token = await login(sandbox);
    expect((await send(sandbox, 'GET', ACTIVE, { token })).status).toBe(200);
    expect((await send(sandbox, 'GET', ACTIVE, { headers: { authorization: `bearer ${token}` } })).status).toBe(200);
  });

  it('answers 401 without a token', async () => {
    const reply = await send(sandbox, 'GET', ACTIVE);
    expect(reply.status).toBe(401);
    expect(errorBody(reply)).toMatchObject({ status: 401, error: 'unauthorized' });
  });

  it('answers 401 for a token with a bad signature', async () => {
    const token = await login(sandbox);
    const [header, payload] = token.split('.');
    const forged = `${header}.${payload}.${createHmac('sha256', 'guess').update(`${header}.${payload}`).digest('base64url')}`;
    const reply = await send(sandbox, 'GET', ACTIVE, { token: forged });
    expect(reply.status).toBe(401);
    expect(errorBody(reply).message).toMatch(/signature/);
  });

  it('answers 401 for a token with tampered claims', async () => {
    const token = await login(sandbox);
    const [header, , signature] = token.split('.');
    const claims = { ...decodeClaims(token), userId: 1 };
    const tampered = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
    expect((await send(sandbox, 'GET', ACTIVE, { token: tampered })).status).toBe(401);
  });

  it('answers 401 for a token from another sandbox instance', async () => {
    const other = await login(expired);
    expect((await send(sandbox, 'GET', ACTIVE, { token: other })).status).toBe(401);
  });

  it('answers 401 for garbage in place of a token', async () => {
    expect((await send(sandbox, 'GET', ACTIVE, { token: 'not-a-jwt' })).status).toBe(401);
  });

  it('answers 401 for an expired token', async () => {
    const token = await login(expired);
    expect(decodeClaims(token).exp).toBeLessThan(Math.floor(Date.now() / 1000));
    const reply = await send(expired, 'GET', ACTIVE, { token });
    expect(reply.status).toBe(401);
    expect(errorBody(reply).message).toMatch(/expired/);
  });

  it('needs no token for the verification page', async () => {
    const reply = await send(sandbox, 'GET', `/verification/${'0'.repeat(64)}`);
    expect(reply.status).toBe(404);
    expect(reply.headers['content-type']).toMatch(/^text\/html/);
  });
});

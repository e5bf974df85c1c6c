/**
 * The hand-written wire samples from shared/service-api.md, checked against
 * the schemas and against the sandbox's answers: a schema bug cannot then
 * hide in both the client and the emulator at once.
 */
import { describe, expect, it } from 'vitest';
import { notarizationRecordSchema, subscriptionSessionSchema } from '../../src/api/schemas.js';
import { type Sandbox } from '../../src/sandbox/server.js';
import { sha256 } from '../helpers/documents.js';
import { requestStep, send, useLoggedInSandbox } from '../helpers/sandbox.js';
import { fixtureObject } from '../helpers/fixtures.js';

const freePlan = fixtureObject('session-free-plan.json');
const quirks = fixtureObject('session-quirks.json');
const record = fixtureObject('record.json');

describe('wire fixtures', () => {
  it('the free-plan session sample parses with the session schema', () => {
    expect(subscriptionSessionSchema.parse(freePlan)).toMatchObject({ sessionId: '1683554257039', canceledAt: 0 });
  });

  it('the quirky session (custumer, canceledAt false, unknown field) parses too', () => {
    expect(quirks).not.toHaveProperty('customer');
    const parsed = subscriptionSessionSchema.parse(quirks);
    expect(parsed).toMatchObject({ custumer: null, canceledAt: false, futureField: { x: 1 } });
  });

  it('the record sample parses with the record schema', () => {
    expect(notarizationRecordSchema.parse(record)).toMatchObject({ creationDate: 1649855665000, userId: 1098 });
  });
});

describe('sandbox answers against the fixtures', () => {
  let sandbox: Sandbox;
  let token: string;
  useLoggedInSandbox((started, loggedIn) => {
    sandbox = started;
    token = loggedIn;
  });

  it('a request-step session has exactly the sample session keys, in order, with the same types', async () => {
    const session = (await requestStep(sandbox, token, sha256('fixture-session'))).json() as Record<string, unknown>;
    expect(Object.keys(session)).toEqual(Object.keys(freePlan));
    for (const [key, value] of Object.entries(freePlan)) expect(typeof session[key], key).toBe(typeof value);
  });

  it('the active subscription has the sample session keys', async () => {
    const active = (await send(sandbox, 'GET', '/api/v2/payment/subscription/active', { token })).json() as object;
    expect(Object.keys(active)).toEqual(Object.keys(freePlan));
  });

  it('a forfait record has exactly the sample record keys, in order, with the same types', async () => {
    const hash = sha256('fixture-record');
    const session = await requestStep(sandbox, token, hash);
    const reply = await send(sandbox, 'POST', `/api/v2/registration/${hash}/forfait`, { token, body: session.text });
    const answer = reply.json() as Record<string, unknown>;
    expect(Object.keys(answer)).toEqual(Object.keys(record));
    for (const [key, value] of Object.entries(record)) expect(typeof answer[key], key).toBe(typeof value);
  });
});

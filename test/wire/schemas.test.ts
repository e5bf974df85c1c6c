import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  fileMetadataSchema,
  notarizationRecordSchema,
  registrationRequestSchema,
  subscriptionSessionSchema,
} from '../../src/api/schemas.js';
import { describeZodError } from '../../src/validation.js';
import { fixtureObject } from '../helpers/fixtures.js';

const HASH = '905d4f33b218427e8371341674a913db02402f648fef6cdf47c16f65d2dd3001';

/** The first problem zod finds, as describeZodError words it. */
function problem(schema: z.ZodType, value: unknown): string {
  const parsed = schema.safeParse(value);
  if (parsed.success) throw new Error(`expected ${JSON.stringify(value)} to be rejected`);
  return describeZodError(parsed.error);
}

function without(object: Record<string, unknown>, key: string): Record<string, unknown> {
  const copy = { ...object };
  delete copy[key];
  return copy;
}

describe('the documented samples', () => {
  it('the free-plan session parses, with canceledAt 0 and customer null', () => {
    const parsed = subscriptionSessionSchema.parse(fixtureObject('session-free-plan.json'));
    expect(parsed).toEqual(fixtureObject('session-free-plan.json'));
    expect(parsed.canceledAt).toBe(0);
    expect(parsed.customer).toBeNull();
    expect(parsed.id).toBeNull();
  });

  it('the record parses, every field kept as sent', () => {
    const record = fixtureObject('record.json');
    expect(notarizationRecordSchema.parse(record)).toEqual(record);
  });

  it('the quirky session parses: custumer spelling, canceledAt false, unknown field kept', () => {
    const quirks = fixtureObject('session-quirks.json');
    const parsed = subscriptionSessionSchema.parse(quirks);
    expect(parsed).toEqual(quirks);
    expect(parsed).toMatchObject({ custumer: null, canceledAt: false, futureField: { x: 1 } });
    expect(parsed).not.toHaveProperty('customer');
  });
});

describe('subscriptionSessionSchema quirks', () => {
  const base = fixtureObject('session-free-plan.json');

  it.each([0, 1683554257, false, true, null])('accepts canceledAt %s', (canceledAt) => {
    expect(subscriptionSessionSchema.parse({ ...base, canceledAt }).canceledAt).toBe(canceledAt);
  });

  it('accepts a session without canceledAt at all', () => {
    expect(subscriptionSessionSchema.safeParse(without(base, 'canceledAt')).success).toBe(true);
  });

  it.each(['0', 1.5, {}])('rejects canceledAt %j and names the field', (canceledAt) => {
    expect(problem(subscriptionSessionSchema, { ...base, canceledAt })).toMatch(/^canceledAt: /);
  });

  it('accepts either spelling of customer, as a string or null', () => {
    const misspelt = { ...without(base, 'customer'), custumer: 'cus_123' };
    expect(subscriptionSessionSchema.parse(misspelt)).toMatchObject({ custumer: 'cus_123' });
    expect(subscriptionSessionSchema.parse({ ...base, customer: 'cus_456' })).toMatchObject({ customer: 'cus_456' });
  });

  it('accepts a paid-plan session with a subscription id and string fields filled', () => {
    const paid = {
      ...base,
      sessionId: 'cs_live_a1b2',
      id: 'sub_1KeRbLGkccccU17KjvhTH',
      planNickname: 'Pro',
      defaultPaymentMethod: 'pm_1',
      latestInvoice: 'in_1',
    };
    expect(subscriptionSessionSchema.parse(paid)).toEqual(paid);
  });

  it('keeps unknown fields of any type (looseObject)', () => {
    const extra = { ...base, plan: { amount: 0, currency: 'eur' }, trialEnd: null, flags: [1, 'a'] };
    expect(subscriptionSessionSchema.parse(extra)).toEqual(extra);
  });

  it.each(['sessionId', 'userId', 'planId', 'planNickname', 'status', 'created', 'currentPeriodEnd'])(
    'rejects a session missing %s and names it',
    (field) => {
      expect(problem(subscriptionSessionSchema, without(base, field))).toMatch(new RegExp(`^${field}: `));
    },
  );

  it.each([
    ['userId', '1390'],
    ['userId', 1390.5],
    ['created', 1683554257.5],
    ['created', -1],
    ['currentPeriodStart', '1683554257'],
    ['sessionId', 1683554257039],
    ['sessionId', ''],
    ['id', 5],
    ['customer', 7],
    ['latestInvoice', false],
  ])('rejects %s = %j and names the field', (field, value) => {
    expect(problem(subscriptionSessionSchema, { ...base, [field]: value })).toMatch(new RegExp(`^${field}: `));
  });

  it('rejects a body that is not an object, naming the body', () => {
    expect(problem(subscriptionSessionSchema, [])).toMatch(/^\(body\): /);
    expect(problem(subscriptionSessionSchema, null)).toMatch(/^\(body\): /);
  });
});

describe('registrationRequestSchema', () => {
  const documented = {
    blockchainType: 'ALGORAND',
    custody: 'false',
    description: 'TEST 13-04-2022',
    hash: HASH,
    signed: 'false',
    status: 'not_registered',
  };

  it('accepts the docs\' sample with "false" strings and reads them as booleans', () => {
    expect(registrationRequestSchema.parse(documented)).toMatchObject({ custody: false, signed: false });
  });

  it('reads "true" as true and accepts real booleans', () => {
    expect(registrationRequestSchema.parse({ ...documented, custody: 'true', signed: true })).toMatchObject({
      custody: true,
      signed: true,
    });
  });

  it.each(['FALSE', 'no', '0', 0, null])('rejects custody %j', (custody) => {
    expect(problem(registrationRequestSchema, { ...documented, custody })).toMatch(/^custody: /);
  });

  it('rejects an uppercase or short hash, another chain and an unknown status', () => {
    expect(problem(registrationRequestSchema, { ...documented, hash: HASH.toUpperCase() })).toMatch(/^hash: /);
    expect(problem(registrationRequestSchema, { ...documented, hash: HASH.slice(1) })).toMatch(/^hash: /);
    expect(problem(registrationRequestSchema, { ...documented, blockchainType: 'ETHEREUM' })).toMatch(
      /^blockchainType: /,
    );
    expect(problem(registrationRequestSchema, { ...documented, status: 'pending' })).toMatch(/^status: /);
  });

  it('keeps unknown extra fields', () => {
    expect(registrationRequestSchema.parse({ ...documented, note: 'x' })).toMatchObject({ note: 'x' });
  });
});

describe('notarizationRecordSchema', () => {
  const record = fixtureObject('record.json');

  it('accepts the chain fields once filled, whatever their type, and keeps unknown fields', () => {
    const filled = {
      ...record,
      txId: 'ABCDEF234567',
      assetId: 123456789,
      txHash: 'aa',
      signer: { name: 'x' },
      payload: [1],
      receiptUrl: 'https://example.invalid/r',
    };
    expect(notarizationRecordSchema.parse(filled)).toEqual(filled);
  });

  it.each(['hash', 'description', 'custody', 'signed', 'status', 'creationDate', 'userId'])(
    'rejects a record missing %s and names it',
    (field) => {
      expect(problem(notarizationRecordSchema, without(record, field))).toMatch(new RegExp(`^${field}: `));
    },
  );

  it.each([
    ['custody', 'false'],
    ['creationDate', '1649855665000'],
    ['creationDate', 1.5],
    ['userId', null],
    ['hash', 'abc'],
    ['tags', 'none'],
  ])('rejects %s = %j and names the field', (field, value) => {
    expect(problem(notarizationRecordSchema, { ...record, [field]: value })).toMatch(new RegExp(`^${field}: `));
  });
});

describe('fileMetadataSchema', () => {
  it('accepts the documented metadata body', () => {
    const body = {
      hash: HASH,
      name: 'contract.pdf',
      type: 'application/pdf',
      size: 1024,
      lastModified: 1649855665000,
      userId: 1098,
      walletName: `label--2022-04-13T13:14:25.000Z--${HASH}`,
    };
    expect(fileMetadataSchema.parse(body)).toEqual(body);
  });
});

describe('describeZodError', () => {
  it('names a nested field with a dotted path', () => {
    const schema = z.object({ plan: z.object({ items: z.array(z.object({ amount: z.int() })) }) });
    const parsed = schema.safeParse({ plan: { items: [{ amount: 1 }, { amount: 'x' }] } });
    expect(parsed.success).toBe(false);
    if (!parsed.success) expect(describeZodError(parsed.error)).toMatch(/^plan\.items\.1\.amount: .+/);
  });

  it('falls back to a generic text for an error without issues', () => {
    expect(describeZodError(new z.ZodError([]))).toBe('invalid value');
  });
});

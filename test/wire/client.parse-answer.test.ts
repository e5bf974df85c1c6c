import { describe, expect, it } from 'vitest';
import { parseAnswer } from '../../src/api/client.js';
import { notarizationRecordSchema, subscriptionSessionSchema } from '../../src/api/schemas.js';
import { InvalidAnswerError, ProtocolError } from '../../src/errors.js';
import { thrown } from '../helpers/catch.js';
import { readFixture } from '../helpers/fixtures.js';

describe('parseAnswer', () => {
  it("rejects non-JSON (e.g. a proxy's HTML page) with a ProtocolError, exit 5", () => {
    const error = thrown(() =>
      parseAnswer('<html><body>Bad gateway</body></html>', subscriptionSessionSchema, 'answer'),
    );
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).not.toBeInstanceOf(InvalidAnswerError);
    expect(error).toMatchObject({ exitCode: 5, code: 'protocol' });
    expect((error as ProtocolError).message).toContain('not JSON');
  });

  it('rejects an empty body as not JSON', () => {
    const error = thrown(() => parseAnswer('', subscriptionSessionSchema, 'answer'));
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).toMatchObject({ exitCode: 5 });
  });

  it('rejects JSON of the wrong shape with an InvalidAnswerError keeping the raw text exactly', () => {
    const raw = ' { "sessionId" : "1",\n  "userId": "not a number" }  ';
    const error = thrown(() => parseAnswer(raw, subscriptionSessionSchema, 'answer to the registration request'));
    expect(error).toBeInstanceOf(InvalidAnswerError);
    const invalid = error as InvalidAnswerError;
    expect(invalid.exitCode).toBe(5);
    expect(invalid.raw).toBe(raw);
    expect(invalid.json).toEqual({ sessionId: '1', userId: 'not a number' });
    expect(invalid.message).toContain('answer to the registration request');
  });

  it('names the offending field in the message of an InvalidAnswerError', () => {
    const raw = readFixture('record.json').replace('"creationDate": 1649855665000', '"creationDate": "yesterday"');
    const error = thrown(() => parseAnswer(raw, notarizationRecordSchema, 'record'));
    expect(error).toBeInstanceOf(InvalidAnswerError);
    expect((error as InvalidAnswerError).message).toContain('creationDate');
    expect((error as InvalidAnswerError).raw).toBe(raw);
  });

  it('returns the input text itself as raw, not a re-serialised copy', () => {
    // Odd spacing, key order and a key the schema does not know must survive:
    // this text is what gets stored and sent back to forfait.
    const raw =
      '{ "userId" :1390,"sessionId":"1683554257039",  "id":null,"planId":"price_1","planNickname":"FREE",' +
      '"status":"active","created":1683554257,"currentPeriodStart":1683554257,"currentPeriodEnd":1684418257,' +
      '"canceledAt":0,"custumer":null,"zzz":{"b":2,"a":1}}\n';
    const answer = parseAnswer(raw, subscriptionSessionSchema, 'answer');
    expect(answer.raw).toBe(raw);
    expect(answer.raw).not.toBe(JSON.stringify(answer.value));
    expect(answer.value).toMatchObject({ userId: 1390, custumer: null, zzz: { b: 2, a: 1 } });
  });

  it("returns the fixtures' text unchanged", () => {
    for (const [name, schema] of [
      ['session-free-plan.json', subscriptionSessionSchema],
      ['session-quirks.json', subscriptionSessionSchema],
      ['record.json', notarizationRecordSchema],
    ] as const) {
      const raw = readFixture(name);
      expect(parseAnswer(raw, schema, name).raw).toBe(raw);
    }
  });
});

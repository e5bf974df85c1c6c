import { describe, expect, it } from 'vitest';
import { FAULT_KINDS, FAULT_SPEC_HELP, parseFaults, ROUTE_NAMES } from '../../src/sandbox/server.js';

describe('parseFaults', () => {
  it('parses the documented example', () => {
    expect(parseFaults('forfait:status=503@2*3,request:drop*1,*:latency=50,login:hang*1')).toEqual([
      { route: 'forfait', kind: 'status', value: 503, retryAfter: 2, count: 3 },
      { route: 'request', kind: 'drop', count: 1 },
      { route: '*', kind: 'latency', value: 50 },
      { route: 'login', kind: 'hang', count: 1 },
    ]);
  });

  it('accepts every kind, spaces around rules, and an empty spec', () => {
    const spec = FAULT_KINDS.map((kind) =>
      kind === 'latency' ? 'active:latency=0' : kind === 'status' ? ' file:status=500 ' : `verification:${kind}*2`,
    ).join(',');
    expect(parseFaults(spec).map((f) => f.kind)).toEqual([...FAULT_KINDS]);
    expect(parseFaults('subscription:huge=4096')).toEqual([{ route: 'subscription', kind: 'huge', value: 4096 }]);
    expect(parseFaults('')).toEqual([]);
    expect(parseFaults('   ')).toEqual([]);
  });

  it.each([
    ['forfait', 'expected route:kind'],
    ['nope:drop', 'unknown route "nope"'],
    ['forfait:explode', 'unknown kind "explode"'],
    ['forfait:status', 'status needs a value'],
    ['forfait:latency', 'latency needs a value'],
    ['forfait:status=200', 'status must be 400-599'],
    ['forfait:status=600', 'status must be 400-599'],
    ['forfait:latency=999999', 'latency must be'],
    ['forfait:latency=-1', 'expected route:kind'],
    ['forfait:drop=5', 'drop takes no value'],
    ['forfait:huge=0', 'huge needs a positive byte cap'],
    ['forfait:latency=50@2', '@retryAfter only goes with status'],
    ['forfait:drop*0', 'count must be 1 or more'],
    ['login:hang*x', 'expected route:kind'],
    ['Login:drop', 'expected route:kind'],
  ])('rejects %j', (spec, why) => {
    expect(() => parseFaults(spec)).toThrow(`invalid fault rule "${spec}": ${why}`);
  });

  it('names the bad rule in a one-line message', () => {
    let message = '';
    try {
      parseFaults('login:drop*1,,active:hang');
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toBe('invalid fault rule "": expected route:kind[=value][@retryAfter][*count]');
    expect(() => parseFaults('login:drop,active:oops\nmore')).toThrow('invalid fault rule "active:oops\\nmore"');
  });

  it('documents the syntax, every kind and every route', () => {
    expect(FAULT_SPEC_HELP).toContain('route:kind[=value][@retryAfter][*count]');
    for (const word of [...FAULT_KINDS, ...ROUTE_NAMES]) expect(FAULT_SPEC_HELP).toContain(word);
  });
});

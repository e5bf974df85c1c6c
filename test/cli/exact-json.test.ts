/**
 * The service's JSON inside notarize's JSON output, exactly as sent
 * (src/exact-json.ts): tokens copied as they are, whitespace laid
 * out as JSON.stringify would lay out the parsed value.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExactJson, jsonDepth, MAX_LAID_LEVELS, memberText, relaid, stringifyExact } from '../../src/exact-json.js';

const RECORD = '{"hash":"ab","assetId":12345678901234567890123,"fee":1.50,"big":1E400,"k":1,"k":2,"nested":{"a":[ ]}}';

describe('stringifyExact', () => {
  it('writes the text of an ExactJson as it is: big integers, trailing zeros, exponents, equal keys', () => {
    const line = stringifyExact({ status: 'registered', record: ExactJson.of(RECORD) });
    expect(line).toBe(
      '{"status":"registered","record":{"hash":"ab","assetId":12345678901234567890123,"fee":1.50,"big":1E400,"k":1,"k":2,"nested":{"a":[]}}}',
    );
    // What JSON.parse and JSON.stringify alone made of it.
    expect(JSON.stringify({ record: ExactJson.of(RECORD) })).toContain(
      '"assetId":1.2345678901234568e+22,"fee":1.5,"big":null',
    );
  });

  it('lays a pretty array out as JSON.stringify does, the text indented where it sits', () => {
    const text = '{ "a" : [1.0, {"b":null}],\n  "c":{} }';
    const value = [{ file: 'x', record: ExactJson.of(text), after: [1] }];
    expect(stringifyExact(value, 2)).toBe(
      JSON.stringify([{ file: 'x', record: JSON.parse(text), after: [1] }], null, 2).replace('1,\n', '1.0,\n'),
    );
  });

  it('strings keep their escapes and spaces; text that is not JSON is no ExactJson', () => {
    const text = '{"s":"a \\" , : { [ \\\\ \\u0041  b","t":[]}';
    expect(stringifyExact({ r: ExactJson.of(text) })).toBe(`{"r":${text}}`);
    expect(ExactJson.of('<html>')).toBeUndefined();
    expect(ExactJson.of('{"a":1}')!.parsed()).toEqual({ a: 1 });
  });

  it('for any JSON value, relaid text parses to the same value, and matches JSON.stringify where the tokens are its own', () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: MAX_LAID_LEVELS }),
        fc.constantFrom(0, 2, 4),
        fc.nat(6),
        (value, indent, depth) => {
          const compact = JSON.stringify(value);
          const pretty = JSON.stringify(value, null, 2);
          expect(relaid(pretty, 0)).toBe(compact);
          const laid = relaid(compact, indent, depth);
          expect(JSON.parse(laid)).toEqual(JSON.parse(compact));
          if (depth === 0) expect(laid).toBe(JSON.stringify(value, null, indent));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('deeper than MAX_LAID_LEVELS a value stays on one line: 20,000 levels print about their own size, not its square', () => {
    const levels = 20_000;
    const deep = `{"sessionId":"1","x":${'['.repeat(levels)}${']'.repeat(levels)}}`;
    const laid = stringifyExact([{ session: ExactJson.of(deep) }], 2);
    expect(laid.length).toBeLessThan(deep.length + 1_000);
    // The same tokens (a value this deep is compared as text: a recursive comparison overflows the stack).
    expect(relaid(laid, 0)).toBe(`[{"session":${deep}}]`);
    // Down to the limit, JSON.stringify's layout; below it, none.
    const lines = laid.split('\n');
    expect(Math.max(...lines.map((line) => /^ */.exec(line)![0].length))).toBe(2 * MAX_LAID_LEVELS);
    // Many values at the deepest laid level: a line each, indented at most 2 × MAX_LAID_LEVELS.
    const wide = `${'['.repeat(MAX_LAID_LEVELS + 5)}${Array(10_000).fill(0).join(',')}${']'.repeat(MAX_LAID_LEVELS + 5)}`;
    const wideLaid = relaid(wide, 2);
    expect(JSON.parse(wideLaid)).toEqual(JSON.parse(wide));
    expect(wideLaid.length).toBeLessThan(wide.length + 2 * MAX_LAID_LEVELS ** 2 + 100);
  });
});

describe('memberText and jsonDepth', () => {
  it('the text of a member as written, the last of equal keys, whatever its value', () => {
    const text = ' { "a" : 1.50 , "r":{"x":"}\\"]","y":[1,{}]}, "r" : [ 2E3 ] ,"s":"t" } ';
    expect(memberText(text, 'a')).toBe('1.50');
    expect(memberText(text, 'r')).toBe('[ 2E3 ]');
    expect(memberText(text, 's')).toBe('"t"');
    expect(memberText(text, 'x')).toBeUndefined();
    expect(memberText('[1]', 'a')).toBeUndefined();
    expect(memberText('{"\\u0061":true}', 'a')).toBe('true');
  });

  it('for any object, each member text parses to what JSON.parse gave that member', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (object) => {
        const text = JSON.stringify(object, null, 1);
        for (const key of Object.keys(object)) {
          expect(JSON.parse(memberText(text, key)!)).toEqual(JSON.parse(JSON.stringify(object[key])));
        }
      }),
      { numRuns: 200 },
    );
  });

  it('depth counts brackets outside strings', () => {
    expect(jsonDepth('1')).toBe(0);
    expect(jsonDepth('{"a":[[{}]],"b":"[[[["}')).toBe(4);
  });
});

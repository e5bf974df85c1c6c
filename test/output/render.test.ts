import { describe, expect, it } from 'vitest';
import { renderRecord, resultLines, tableLines } from '../../src/output/render.js';
import { itemResult } from '../../src/output/results.js';
import { fixtureObject } from '../helpers/fixtures.js';

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[/;

/** The lines of an uncoloured record as [field, value] pairs (the field, the gutter, the value). */
function rows(text: string): [string, string][] {
  return text.split('\n').map((line) => {
    const match = /^(\S+) {2,}(.*)$/.exec(line);
    if (!match) throw new Error(`unexpected line ${JSON.stringify(line)}`);
    return [match[1]!, match[2]!];
  });
}

describe('renderRecord', () => {
  const record = fixtureObject('record.json');

  it('prints every field of the record in order, then the extra rows', () => {
    const text = renderRecord(record, { verification: 'https://app.dedit.io/verification/905d' }, false);
    const fields = rows(text).map(([field]) => field);
    expect(fields).toEqual([...Object.keys(record), 'verification']);
  });

  it('prints null as -, strings as they are, arrays and booleans as JSON', () => {
    const values = Object.fromEntries(rows(renderRecord(record, {}, false)));
    expect(values.txId).toBe('-');
    expect(values.payload).toBe('-');
    expect(values.description).toBe('TEST 13-04-2022');
    expect(values.custody).toBe('false');
    expect(values.tags).toBe('[]');
    expect(values.userId).toBe('1098');
  });

  it('prints creationDate with its ISO form', () => {
    const values = Object.fromEntries(rows(renderRecord(record, {}, false)));
    expect(values.creationDate).toBe('1649855665000 (2022-04-13T13:14:25.000Z)');
  });

  it('prints fields it does not know, including nested values', () => {
    const text = renderRecord({ ...record, receipt: { url: 'https://r.example/1' }, anchoredAt: 12 }, {}, false);
    const values = Object.fromEntries(rows(text));
    expect(values.receipt).toBe('{"url":"https://r.example/1"}');
    expect(values.anchoredAt).toBe('12');
  });

  it('aligns the values in one column', () => {
    const lines = renderRecord({ a: 1, longFieldName: 2 }, { mid: 'x' }, false).split('\n');
    expect(lines).toEqual(['a              1', 'longFieldName  2', 'mid            x']);
  });

  it('has no ANSI codes without colour, and bold field names with it', () => {
    expect(renderRecord(record, { extra: 'x' }, false)).not.toMatch(ANSI);
    const coloured = renderRecord({ a: 1 }, {}, true);
    expect(coloured).toMatch(ANSI);
    expect(coloured).toBe('\u001b[1ma\u001b[22m  1');
  });
});

describe('renderRecord, field names in any script', () => {
  it('lines values up after field names of wide characters (a service may name its fields in any script)', () => {
    expect(renderRecord({ 名前: 'a', hash: 'b' }, {}, false).split('\n')).toEqual(['名前  a', 'hash  b']);
  });
});

describe('tableLines', () => {
  it('aligns columns to the widest cell, header included, without trailing spaces', () => {
    const text = tableLines(
      ['HASH', 'DESCRIPTION', 'SAVED'],
      [
        ['905d4f33', 'contract', '2024-01-01'],
        ['ab', 'a much longer description', '2024-01-02'],
      ],
      false,
    ).join('\n');
    expect(text.split('\n')).toEqual([
      'HASH      DESCRIPTION                SAVED',
      '905d4f33  contract                   2024-01-01',
      'ab        a much longer description  2024-01-02',
    ]);
  });

  it('a table of 300,000 rows: one line each, aligned (the widths spread into Math.max overflowed the stack)', () => {
    const rows = Array.from({ length: 300_000 }, (_, i) => [String(i), 'x']);
    const lines = tableLines(['N', 'X'], rows, false);
    expect(lines).toHaveLength(300_001);
    expect(lines[0]).toBe('N       X');
    expect(lines.at(-1)).toBe('299999  x');
  });

  it('pads by the columns a terminal shows: wide CJK and emoji take two, combining marks none', () => {
    // East Asian wide characters and emoji take two columns, a combining acute
    // accent none: padEnd counted UTF-16 units and shifted every later column.
    const lines = tableLines(
      ['NAME', 'STATUS'],
      [
        ['契約書.pdf', 'verified'],
        ['📄.pdf', 'verified'],
        ['re\u0301sume\u0301.txt', 'verified'],
        ['plain.txt', 'modified'],
      ],
      false,
    );
    expect(lines).toEqual([
      'NAME        STATUS',
      '契約書.pdf  verified',
      '📄.pdf      verified',
      're\u0301sume\u0301.txt  verified',
      'plain.txt   modified',
    ]);
  });

  it('fills missing cells with blanks and trims the line end', () => {
    const text = tableLines(['A', 'B', 'C'], [['1'], ['22', '333']], false).join('\n');
    expect(text.split('\n')).toEqual(['A   B    C', '1', '22  333']);
  });

  it('prints only the header for no rows', () => {
    expect(tableLines(['HASH', 'STATUS'], [], false).join('\n')).toBe('HASH  STATUS');
  });

  it('has no ANSI codes without colour; with colour only the header is bold and alignment is kept', () => {
    const rowsIn = [['x', 'y']];
    const plain = tableLines(['H1', 'H2'], rowsIn, false).join('\n');
    expect(plain).not.toMatch(ANSI);
    const coloured = tableLines(['H1', 'H2'], rowsIn, true).join('\n');
    const [header, row] = coloured.split('\n');
    expect(header).toBe('\u001b[1mH1  H2\u001b[22m');
    expect(row).toBe('x   y');
  });
});

describe('resultLines', () => {
  const HASH = 'ab'.repeat(32);

  it('the table: status, hash, file, and the error, reason or receipt', () => {
    const table = resultLines(
      [
        itemResult('a', HASH, 'registered', { receipt: 'a.json' }),
        itemResult(null, null, 'failed', { error: { code: 'x', exitCode: 1, message: 'went wrong' } }),
      ],
      false,
    ).join('\n');
    expect(table.split('\n')).toEqual([
      expect.stringMatching(/^STATUS +HASH +FILE +DETAIL$/),
      expect.stringMatching(new RegExp(`^registered +${HASH} +a +a\\.json$`)),
      expect.stringMatching(/^failed +- +- +went wrong$/),
    ]);
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { renderRecord, tableLines } from '../../src/output/render.js';
import { forTerminal, forTerminalLines, jsonForTerminal, lineStart } from '../../src/output/safe-text.js';
import { bufferIO } from '../helpers/io.js';

/** Characters a terminal acts on or that reorder what is shown; none may survive forTerminal. */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]/;

/** What a GitHub runner reads as a workflow command in a line (actions/runner ActionCommand.cs: TryParseV2, TryParse). */
function runnerCommand(line: string): boolean {
  return /^[\s\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]*::[^:]+::/u.test(line) || /##\[[^\]]*\]/.test(line);
}

describe('workflow commands', () => {
  it('forTerminal escapes the # of any ##[ (the runner finds that form anywhere in a line)', () => {
    expect(forTerminal('x ##[error]forged')).toBe('x \\u0023#[error]forged');
    expect(forTerminal('###[add-mask]x')).toBe('#\\u0023#[add-mask]x');
    expect(runnerCommand(forTerminal('a ##[warning]b ##[error]c'))).toBe(false);
    // Idempotent, as the rest of forTerminal.
    expect(forTerminal(forTerminal('##[error]x'))).toBe(forTerminal('##[error]x'));
  });

  it('lineStart escapes the first : of a line that would start with ::, spaces before it or not', () => {
    expect(lineStart('::stop-commands::pwn')).toBe('\\u003a:stop-commands::pwn');
    expect(lineStart(' \u00a0\u3000::error::x')).toBe(' \u00a0\u3000\\u003a:error::x');
    // Not at the start, or one colon: as it is.
    for (const text of ['a::b', ':x', 'http://[::1]:80', '']) expect(lineStart(text)).toBe(text);
    expect(lineStart(lineStart('::x::y'))).toBe(lineStart('::x::y'));
  });

  it('no escaped text starting a line, any text at all, is a workflow command', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (a, b) => {
        const text = `${a}::${b}##[${a}]`;
        expect(runnerCommand(lineStart(text))).toBe(false);
        expect(runnerCommand(lineStart(`::${b}::${a}`))).toBe(false);
      }),
    );
  });

  it('renderRecord and renderTable: a field name or cell cannot start a line with ::, nor a value after an empty one', () => {
    const record = renderRecord({ '::stop-commands::pwn': 1, '': '::error::forged', a: '##[error]x' }, {}, false);
    const table = tableLines(
      ['A', 'B'],
      [
        ['::warning::x', 'y'],
        ['', '  ::error::z'],
      ],
      false,
    ).join('\n');
    for (const line of [...record.split('\n'), ...table.split('\n')]) expect(runnerCommand(line), line).toBe(false);
    expect(record).toContain('\\u003a:stop-commands::pwn');
  });
});

describe('jsonForTerminal', () => {
  it('escapes in strings what forTerminal escapes, drops or spaces a CR between values: the same JSON value', () => {
    // A CR between values would send the cursor back for the spaces after it to hide "MALLORY".
    const hidden = '{"signer":"MALLORY"\r' + ' '.repeat(20) + ',"d":"a\u202eb"}\r\n';
    expect(jsonForTerminal(hidden)).toBe('{"signer":"MALLORY" ' + ' '.repeat(20) + ',"d":"a\\u202eb"}\n');
    expect(jsonForTerminal('{"a":"y\u009b31m","b":"##[error]"}')).toBe('{"a":"y\\u009b31m","b":"\\u0023#[error]"}');
    // Pretty-printed JSON of safe text is left as it is (line feeds and tabs are its layout).
    expect(jsonForTerminal('{\n\t"a": [1, "b\\n"]\n}')).toBe('{\n\t"a": [1, "b\\n"]\n}');
  });

  it('any JSON value, spelled with raw CRs between its tokens: no character a terminal acts on, the same value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom('\r', '\r\n', ' \r '), (value, cr) => {
        const text = (JSON.stringify(value, null, 1) ?? 'null').replace(/\n/g, `${cr}\n`);
        // JSON.stringify leaves U+2028, bidi and C1 characters raw in strings, as a service may send them.
        const shown = jsonForTerminal(text);
        expect(shown.replace(/[\n\t]/g, '')).not.toMatch(UNSAFE);
        expect(JSON.parse(shown)).toEqual(JSON.parse(text));
      }),
    );
  });
});

describe('forTerminal', () => {
  it('shows LF, CR and TAB as \\n, \\r, \\t and other controls as \\uXXXX', () => {
    expect(forTerminal('a\nb\rc\td')).toBe('a\\nb\\rc\\td');
    expect(forTerminal('\u001b[31mred\u0007')).toBe('\\u001b[31mred\\u0007');
    expect(forTerminal('\u0000\u007f\u0085\u009f')).toBe('\\u0000\\u007f\\u0085\\u009f');
  });

  it('escapes bidi overrides, isolates and marks, line separators, BOM and zero-width spaces', () => {
    expect(forTerminal('\u202egnp.exe')).toBe('\\u202egnp.exe');
    expect(forTerminal('\u2066\u2067\u2068\u2069\u200e\u200f\u061c')).toBe(
      '\\u2066\\u2067\\u2068\\u2069\\u200e\\u200f\\u061c',
    );
    expect(forTerminal('a\u2028b\u2029c\ufeffd\u200be')).toBe('a\\u2028b\\u2029c\\ufeffd\\u200be');
  });

  it('escapes lone surrogates and astral format characters (as a surrogate pair), not emoji', () => {
    expect(forTerminal('x\ud800y\udc00')).toBe('x\\ud800y\\udc00');
    expect(forTerminal('\u{e0067}')).toBe('\\udb40\\udc67');
    expect(forTerminal('😀 👨\u200d👩 می\u200cخواهم')).toBe('😀 👨\u200d👩 می\u200cخواهم');
  });

  it('leaves text without such characters (backslashes and U+FFFD included) as it is', () => {
    for (const text of ['contract.pdf', 'C:\\docs\\a.pdf', 'Überweisung €5', '日本語', '\ufffd', '']) {
      expect(forTerminal(text)).toBe(text);
    }
  });

  it('is idempotent, and its output is one line with nothing unsafe', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const once = forTerminal(text);
        expect(forTerminal(once)).toBe(once);
        expect(once).not.toMatch(UNSAFE);
      }),
    );
  });

  it('uses JSON escapes: an escaped JSON text is the same JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: 'binary' }), (value, extra) => {
        const json = JSON.stringify({ value, extra });
        expect(JSON.parse(forTerminal(json))).toEqual(JSON.parse(json));
      }),
    );
  });
});

describe('forTerminalLines', () => {
  it('keeps line feeds and escapes the rest, CR included', () => {
    expect(forTerminalLines('one\ntwo\u001b[2J\r\nthree')).toBe('one\ntwo\\u001b[2J\\r\nthree');
  });
});

describe('renderers escape the data, not their own styling', () => {
  it('renderTable keeps one line per row and aligns on the escaped text', () => {
    const text = tableLines(
      ['A', 'B'],
      [
        ['x\ny', '1'],
        ['\u001b[31m', '2'],
      ],
      false,
    ).join('\n');
    expect(text.split('\n')).toEqual(['A           B', 'x\\ny        1', '\\u001b[31m  2']);
  });

  it('renderRecord escapes keys, values (nested ones too) and extras; colour still works', () => {
    const text = renderRecord(
      { 'k\u001b': 'v\r\nw', nested: { note: '\u202e\u0085' } },
      { verification: 'u\u0007' },
      true,
    );
    expect(text).toBe(
      [
        '\u001b[1mk\\u001b     \u001b[22m  v\\r\\nw',
        '\u001b[1mnested      \u001b[22m  {"note":"\\u202e\\u0085"}',
        '\u001b[1mverification\u001b[22m  u\\u0007',
      ].join('\n'),
    );
  });
});

describe('the IO object escapes every message', () => {
  it('info, warn and debug are one line; error keeps line feeds; data is written as given', () => {
    const buffers = bufferIO();
    const { io } = buffers;
    io.verbose = true;
    io.info('registered a\nb\u001b[31m');
    io.warn('skipped x\ry: \u202e');
    io.debug('GET /\u0007');
    io.error('first\u001b]0;title\u0007\nsecond');
    io.data('{"description":"\u202e"}');
    expect(buffers.stderr()).toBe(
      [
        'registered a\\nb\\u001b[31m',
        'warning: skipped x\\ry: \\u202e',
        '[notarize] GET /\\u0007',
        'first\\u001b]0;title\\u0007',
        'second',
        '',
      ].join('\n'),
    );
    expect(buffers.stdout()).toBe('{"description":"\u202e"}\n');
  });

  it('scrubs a secret before escaping, so one holding a control character is still removed', () => {
    const buffers = bufferIO();
    const { io } = buffers;
    io.addSecret('secret\u0007value');
    io.info('token secret\u0007value');
    expect(buffers.stderr()).toBe('token [redacted]\n');
  });
});

/**
 * Small inputs read from a file or standard input with a size bound
 * (src/core/read-input.ts): a wrong argument fails at once, naming what was
 * expected, instead of blocking or filling memory.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { decodeJsonText, decodeUtf8, readBytesInput, readJsonInput } from '../../src/core/read-input.js';
import { UsageError } from '../../src/errors.js';
import { useTempDirs } from '../helpers/temp-dirs.js';
import { rejectionOf } from '../helpers/catch.js';

const tempDir = useTempDirs('notarize-read-input-');
const hasIconv = (() => {
  try {
    execFileSync('iconv', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
const noStdin = Readable.from([]);

describe('readJsonInput', () => {
  it('reads a file exactly, up to and including the limit', async () => {
    const file = join(tempDir(), 'session.json');
    writeFileSync(file, '{"a": 1}\n');
    expect(await readJsonInput(file, noStdin, 9, 'the session')).toBe('{"a": 1}\n');
  });

  it('refuses a file one byte over the limit, naming what it should hold', async () => {
    const file = join(tempDir(), 'big.json');
    writeFileSync(file, 'x'.repeat(10));
    const error = await rejectionOf(readJsonInput(file, noStdin, 9, 'the session'), UsageError);
    expect(error.message).toBe(`the session from '${file}' is larger than 9 bytes`);
    expect(error.hint).toBe(`check that '${file}' holds the session`);
  });

  it('reads standard input for -, in chunks', async () => {
    expect(await readJsonInput('-', Readable.from(['ab', Buffer.from('cd')]), 10, 'the key')).toBe('abcd');
    const error = await rejectionOf(readJsonInput('-', Readable.from(['abc', 'def']), 5, 'the key'), UsageError);
    expect(error.message).toBe(`the key from '-' is larger than 5 bytes`);
  });

  it('says "no such file" for a missing one', async () => {
    const missing = join(tempDir(), 'missing.json');
    const error = await rejectionOf(readJsonInput(missing, noStdin, 10, 'the session'), UsageError);
    expect(error.message).toBe(`cannot read the session from '${missing}': no such file`);
  });

  it('refuses a directory as not a regular file', async () => {
    const dir = join(tempDir(), 'folder');
    mkdirSync(dir);
    const error = await rejectionOf(readJsonInput(dir, noStdin, 10, 'the session'), UsageError);
    expect(error.message).toBe(`cannot read the session from '${dir}': not a regular file`);
  });

  it.runIf(process.platform !== 'win32')('refuses a FIFO without opening it (which would block)', async () => {
    const fifo = join(tempDir(), 'pipe');
    execFileSync('mkfifo', [fifo]);
    const error = await rejectionOf(readJsonInput(fifo, noStdin, 10, 'the list'), UsageError);
    expect(error.message).toBe(`cannot read the list from '${fifo}': not a regular file`);
  });
});

describe('decodeJsonText', () => {
  // Encoded here, code point by code point, not by the code under test.
  const points = (text: string) => [...text].map((c) => c.codePointAt(0)!);
  const utf16 = (text: string, little: boolean) => {
    const units = Buffer.from(text, 'utf16le');
    return little ? units : Buffer.from(units).swap16();
  };
  const utf32 = (text: string, little: boolean) => {
    const out = Buffer.alloc(points(text).length * 4);
    points(text).forEach((p, i) => (little ? out.writeUInt32LE(p, i * 4) : out.writeUInt32BE(p, i * 4)));
    return out;
  };
  const json = '{"name": "Café 📄 契約", "hash": "ab"}\n';

  it.each([
    ['UTF-16LE with its mark (PowerShell 5)', utf16(`\uFEFF${json}`, true), `\uFEFF${json}`],
    ['UTF-16BE with its mark', utf16(`\uFEFF${json}`, false), `\uFEFF${json}`],
    ['UTF-16LE without a mark', utf16(json, true), json],
    ['UTF-16BE without a mark', utf16(json, false), json],
    ['UTF-32LE with its mark', utf32(`\uFEFF${json}`, true), `\uFEFF${json}`],
    ['UTF-32BE with its mark', utf32(`\uFEFF${json}`, false), `\uFEFF${json}`],
    ['UTF-32LE without a mark', utf32(json, true), json],
    ['UTF-32BE without a mark', utf32(json, false), json],
  ])('reads JSON saved as %s, a mark kept as in UTF-8 (readReceipt drops one)', (_, bytes, text) => {
    expect(decodeJsonText(bytes)).toBe(text);
  });

  it('keeps a second mark, so that a receipt with two is invalid in every encoding (r93)', () => {
    expect(decodeJsonText(utf16(`\uFEFF\uFEFF${json}`, true))).toBe(`\uFEFF\uFEFF${json}`);
    expect(decodeJsonText(utf32(`\uFEFF\uFEFF${json}`, false))).toBe(`\uFEFF\uFEFF${json}`);
  });

  it('reads UTF-8 as before: its mark kept (readReceipt drops it), a byte not UTF-8 as U+FFFD', () => {
    expect(decodeJsonText(Buffer.from(`\uFEFF${json}`))).toBe(`\uFEFF${json}`);
    expect(decodeJsonText(Buffer.from([0x7b, 0xff, 0x7d]))).toBe('{\uFFFD}');
  });

  it('turns units that are no Unicode into U+FFFD, never into other text', () => {
    expect(decodeJsonText(Buffer.concat([utf16(`\uFEFF{}`, true), Buffer.of(0x7b)]))).toBe('\uFEFF{}\uFFFD');
    const beyond = Buffer.concat([utf32('\uFEFF{"a"', true), Buffer.from([0, 0, 0x11, 0]), utf32('}', true)]);
    expect(decodeJsonText(beyond)).toBe('\uFEFF{"a"\uFFFD}');
    const surrogate = Buffer.concat([utf32('\uFEFF{"a"', false), Buffer.from([0, 0, 0xd8, 0]), utf32('}', false)]);
    expect(decodeJsonText(surrogate)).toBe('\uFEFF{"a"\uFFFD}');
  });
});

describe('readBytesInput', () => {
  it('returns the bytes undecoded, so a caller can refuse what is not UTF-8', async () => {
    const file = join(tempDir(), 'latin1.txt');
    const bytes = Buffer.from([0x66, 0xfc, 0x72, 0x0a]);
    writeFileSync(file, bytes);
    expect((await readBytesInput(file, noStdin, 10, 'the description')).equals(bytes)).toBe(true);
  });
});

describe('decodeUtf8', () => {
  const decode = (bytes: Buffer) => decodeUtf8(bytes, 'the text');
  const refusal = (bytes: Buffer) => {
    try {
      decode(bytes);
    } catch (error) {
      if (error instanceof UsageError) return error;
      throw error;
    }
    throw new Error('not refused');
  };

  it('decodes UTF-8 as it is, telling and dropping one byte order mark', () => {
    expect(decode(Buffer.from('grüße'))).toEqual({ text: 'grüße', marked: false });
    expect(decode(Buffer.from('\ufeffgrüße'))).toEqual({ text: 'grüße', marked: true });
    expect(decode(Buffer.from('\ufeff\ufeffx'))).toEqual({ text: '\ufeffx', marked: true });
    expect(decode(Buffer.alloc(0))).toEqual({ text: '', marked: false });
    // One byte: too short to be told for UTF-16.
    expect(decode(Buffer.from('a'))).toEqual({ text: 'a', marked: false });
    // A NUL that does not follow or lead an ASCII character first is UTF-8 as it is (a caller refuses it).
    expect(decode(Buffer.from('ab\0'))).toEqual({ text: 'ab\0', marked: false });
    // Nor is one beside ASCII in text whose second character does not follow suit (a key typed after a NUL).
    expect(decode(Buffer.from('\0k_key0'))).toEqual({ text: '\0k_key0', marked: false });
    expect(decode(Buffer.from('k\0key'))).toEqual({ text: 'k\0key', marked: false });
  });

  it('names no byte order from one character: 00 4E is "N" in UTF-16BE and U+4E00 in UTF-16LE (r84)', () => {
    // Followed, `iconv -f UTF-16BE` made other text of it, valid UTF-8, which was registered.
    // Nor from two: 00 C8 00 AC is "È¬" in UTF-16BE and "저가" in UTF-16LE (r86).
    // Nor from two or three characters in all: 00 4E 00 52 is "NR" or "一刀" (r87).
    for (const text of ['一二三 report', '저가 판매 계약', '一开 x', '一刀', '一刀开']) {
      for (const bytes of [Buffer.from(text, 'utf16le'), Buffer.from(text, 'utf16le').swap16()]) {
        // No encoding named (one with the wrong order is other text, valid UTF-8), so no iconv to follow.
        expect(() => decode(bytes), text).not.toThrow(/ is UTF-(16|32)/);
      }
    }
    for (const bytes of [Buffer.from('一二三 report', 'utf16le'), Buffer.from('一二三 report', 'utf16le').swap16()]) {
      expect(refusal(bytes).message).not.toMatch(/ is UTF-(16|32)/);
      expect(refusal(bytes).hint).not.toMatch(/iconv -f UTF-(16|32)(LE|BE)? /);
    }
    // UTF-32LE of the same: no UTF-16 named either.
    const utf32 = Buffer.alloc(12);
    [...'一二三'].forEach((c, i) => utf32.writeUInt32LE(c.codePointAt(0)!, i * 4));
    expect(() => decode(utf32)).not.toThrow(/ is UTF-16/);
    // A UTF-16LE key followed by the newline `echo` adds in one byte (odd length): still told (r84).
    const key = Buffer.concat([Buffer.from('k_key_0123', 'utf16le'), Buffer.from('\n')]);
    expect(refusal(key).message).toBe('the text is UTF-16LE, not UTF-8');
  });

  it.each([
    ['UTF-16LE with its mark', Buffer.of(0xff, 0xfe, 0x7b, 0), 'UTF-16'],
    ['UTF-16BE with its mark', Buffer.of(0xfe, 0xff, 0, 0x7b), 'UTF-16'],
    ['UTF-16LE, no mark', Buffer.from('{""}', 'utf16le'), 'UTF-16LE'],
    ['UTF-16BE, no mark', Buffer.from('{""}', 'utf16le').swap16(), 'UTF-16BE'],
    ['UTF-16LE, no mark, a key and the newline echo adds', Buffer.from('k_key\n', 'utf16le'), 'UTF-16LE'],
    ["UTF-32LE with its mark (which begins as UTF-16LE's)", Buffer.of(0xff, 0xfe, 0, 0, 0x7b, 0, 0, 0), 'UTF-32'],
    ['UTF-32BE with its mark', Buffer.of(0, 0, 0xfe, 0xff, 0, 0, 0, 0x7b), 'UTF-32'],
    ['UTF-32LE, no mark', Buffer.of(0x7b, 0, 0, 0, 0x22, 0, 0, 0, 0x22, 0, 0, 0, 0x7d, 0, 0, 0), 'UTF-32LE'],
    ['UTF-32BE, no mark', Buffer.of(0, 0, 0, 0x7b, 0, 0, 0, 0x22, 0, 0, 0, 0x22, 0, 0, 0, 0x7d), 'UTF-32BE'],
  ])('says %s is not UTF-8, and how to convert it, byte order included', (_, bytes, encoding) => {
    const error = refusal(bytes);
    expect(error.message).toBe(`the text is ${encoding}, not UTF-8`);
    expect(error.hint).toContain(`iconv -f ${encoding} -t UTF-8`);
    expect(error.exitCode).toBe(2);
  });

  it.runIf(hasIconv)('the conversion its hint gives turns the text back into what was written (r81)', () => {
    // Without a mark, `iconv -f UTF-16` guesses the order, and a wrong guess is other text, valid UTF-8.
    const text = 'A new Über signed copy\n';
    const utf32 = (big: boolean) => {
      const points = [...text].map((c) => c.codePointAt(0)!);
      const out = Buffer.alloc(points.length * 4);
      points.forEach((point, i) => (big ? out.writeUInt32BE(point, i * 4) : out.writeUInt32LE(point, i * 4)));
      return out;
    };
    const saved = [
      Buffer.concat([Buffer.of(0xff, 0xfe), Buffer.from(text, 'utf16le')]),
      Buffer.concat([Buffer.of(0xfe, 0xff), Buffer.from(text, 'utf16le').swap16()]),
      Buffer.from(text, 'utf16le'),
      Buffer.from(text, 'utf16le').swap16(),
      utf32(false),
      utf32(true),
      Buffer.concat([Buffer.of(0, 0, 0xfe, 0xff), utf32(true)]),
    ];
    for (const bytes of saved) {
      const command = /iconv -f (\S+) -t UTF-8/.exec(refusal(bytes).hint ?? '')!;
      expect(execFileSync('iconv', ['-f', command[1]!, '-t', 'UTF-8'], { input: bytes }).toString()).toBe(text);
    }
  });

  it('names no Latin-1 for text with zero bytes that is not UTF-8: UTF-16 or UTF-32 not told (r87)', () => {
    const error = refusal(Buffer.from('Éléonore Dupont, contrat signé', 'utf16le'));
    expect(error.message).toBe('the text is not valid UTF-8: it holds zero bytes, as UTF-16 or UTF-32 text does');
    expect(error.hint).not.toContain('LATIN1');
  });

  it('refuses a byte that is not UTF-8 instead of reading U+FFFD, with the hint the caller gives', () => {
    const error = refusal(Buffer.from([0x66, 0xfc, 0x72]));
    expect(error.message).toBe('the text is not valid UTF-8');
    expect(error.hint).toContain('iconv -f LATIN1 -t UTF-8');
    const told = (() => {
      try {
        decodeUtf8(Buffer.of(0xc3), 'the key', (encoding) => `told ${encoding}`);
      } catch (error) {
        return error as UsageError;
      }
    })();
    expect(told?.hint).toBe('told undefined');
  });
});

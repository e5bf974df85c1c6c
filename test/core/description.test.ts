/**
 * The description sent with a hash (src/core/description.ts): what -d and
 * --description-file accept unchanged, and what they refuse with exit 2
 * before anything is sent.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  checkArgvDescription,
  DESCRIPTION_FILE_LIMIT,
  isSendableDescription,
  readDescriptionFile,
} from '../../src/core/description.js';
import { UsageError } from '../../src/errors.js';
import { useTempDirs } from '../helpers/temp-dirs.js';
import { rejectionOf, thrownOf } from '../helpers/catch.js';

const tempDir = useTempDirs('notarize-description-');
const noStdin = Readable.from([]);

/** The usage error (exit 2) `fn` throws. */
function refusal(fn: () => unknown): UsageError {
  const error = thrownOf(fn, UsageError);
  expect(error.exitCode).toBe(2);
  return error;
}

/** The description read from a file holding `bytes`. */
function fromFile(bytes: string | Buffer): Promise<string> {
  const file = join(tempDir(), 'description.txt');
  writeFileSync(file, bytes);
  return readDescriptionFile(file, noStdin);
}

describe('checkArgvDescription (-d)', () => {
  it.each([
    ['words', 'Contract 2024, signed'],
    ['a tab', 'name\tvalue'],
    ['joiners emoji need', 'family 👨\u200d👩\u200d👧 and ZWNJ \u200c'],
    ['other scripts', 'Vertrag über Grundstück; 契約書'],
  ])('takes %s unchanged', (_, text) => {
    expect(checkArgvDescription(text)).toBe(text);
  });

  it('refuses U+FFFD as bytes that were not UTF-8, counting characters, not UTF-16 units', () => {
    const error = refusal(() => checkArgvDescription('😀a\ufffdb'));
    expect(error.message).toBe('--description is not valid UTF-8: byte(s) at character 3 could not be decoded');
    expect(error.hint).toContain('--description-file');
  });

  it.each(['', '   ', '\t'])('refuses an empty description (%j)', (text) => {
    expect(refusal(() => checkArgvDescription(text)).message).toBe('--description is empty');
  });

  it.each([
    ['a line feed', 'one\ntwo', 'U+000A at character 4', 'a description is one line'],
    ['a carriage return', 'one\rtwo', 'U+000D at character 4', 'a description is one line'],
    ['a line separator', 'a\u2028b', 'U+2028 at character 2', 'a description is one line'],
    ['a bidi override', '😀\u202eexe.pdf', 'U+202E at character 2', 'remove it'],
    ['a zero-width space', 'a\u200bb', 'U+200B at character 2', 'remove it'],
    ['an escape', 'a\u001b[31m', 'U+001B at character 2', 'remove it'],
    ['DEL', 'a\u007f', 'U+007F at character 2', 'remove it'],
  ])('refuses %s, naming it and where it is', (_, text, where, hint) => {
    const error = refusal(() => checkArgvDescription(text));
    expect(error.message).toBe(`--description holds a control or format character (${where}); only tab is allowed`);
    expect(error.hint).toContain(hint);
  });
});

describe('isSendableDescription (a description from a receipt)', () => {
  it('passes what -d takes and fails what -d refuses for its characters', () => {
    for (const text of ['Release 1.2\tfinal', 'Merkle root of 3 documents', 'नमस्ते \u200d', '…ü']) {
      expect(isSendableDescription(text), text).toBe(true);
      expect(checkArgvDescription(text)).toBe(text);
    }
    for (const text of [
      '',
      '  ',
      'evil\u001b]0;pwned\u0007',
      'two\nlines',
      'a\u2028b',
      'bidi \u202e',
      '\u007f',
      '\u0085',
    ]) {
      expect(isSendableDescription(text), JSON.stringify(text)).toBe(false);
      expect(() => checkArgvDescription(text), JSON.stringify(text)).toThrow(UsageError);
    }
    // No larger than --description-file takes.
    expect(isSendableDescription('é'.repeat(DESCRIPTION_FILE_LIMIT / 2))).toBe(true);
    expect(isSendableDescription(`${'é'.repeat(DESCRIPTION_FILE_LIMIT / 2)}x`)).toBe(false);
  });
});

describe('readDescriptionFile (--description-file)', () => {
  it('drops the one final line break a file ends with (LF or CRLF), and a BOM', async () => {
    expect(await fromFile('signed copy\n')).toBe('signed copy');
    expect(await fromFile('signed copy\r\n')).toBe('signed copy');
    expect(await fromFile('\ufeffsigned copy')).toBe('signed copy');
  });

  it('refuses a second final line break: a description is one line', async () => {
    await expect(fromFile('signed copy\n\n')).rejects.toThrow(
      /holds a control or format character \(U\+000A at character 12\)/,
    );
  });

  it('takes a real U+FFFD, which only -d cannot tell from a decoding failure', async () => {
    expect(await fromFile('replacement \ufffd here')).toBe('replacement \ufffd here');
  });

  it('refuses bytes that are not UTF-8 instead of replacing them', async () => {
    const file = join(tempDir(), 'latin1.txt');
    writeFileSync(file, Buffer.from([0x56, 0x65, 0x72, 0x74, 0x72, 0x61, 0x67, 0x20, 0xfc]));
    const error = await rejectionOf(readDescriptionFile(file, noStdin), UsageError);
    expect(error.message).toBe(`the description in '${file}' is not valid UTF-8`);
    expect(error.hint).toContain('iconv');
  });

  it('says a file saved as UTF-16 or UTF-32 is so, with or without a byte order mark, and how to convert it', async () => {
    const text = 'signed copy\r\n';
    const cases: [Buffer, string][] = [
      // Notepad's "Unicode" and PowerShell 5's `>`: UTF-16LE with its mark.
      [Buffer.concat([Buffer.of(0xff, 0xfe), Buffer.from(text, 'utf16le')]), 'UTF-16'],
      // Without a mark, named with the byte order, which iconv would otherwise guess (r81).
      [Buffer.from(text, 'utf16le'), 'UTF-16LE'],
      [Buffer.from(text, 'utf16le').swap16(), 'UTF-16BE'],
      [Buffer.concat([Buffer.of(0xff, 0xfe, 0, 0), Buffer.from('s\0\0\0', 'latin1')]), 'UTF-32'],
      [Buffer.from('\0\0\0s\0\0\0i\0\0\0g\0\0\0n', 'latin1'), 'UTF-32BE'],
    ];
    for (const [i, [bytes, encoding]] of cases.entries()) {
      const file = join(tempDir(), `wide-${i}.txt`);
      writeFileSync(file, bytes);
      const error = await rejectionOf(readDescriptionFile(file, noStdin), UsageError);
      expect(error.message).toBe(`the description in '${file}' is ${encoding}, not UTF-8`);
      expect(error.hint).toContain(`iconv -f ${encoding} -t UTF-8`);
    }
  });

  it('names the file in the refusal of a control character', async () => {
    const file = join(tempDir(), 'bell.txt');
    writeFileSync(file, 'ding\u0007');
    await expect(readDescriptionFile(file, noStdin)).rejects.toThrow(
      `the description in '${file}' holds a control or format character (U+0007 at character 5)`,
    );
  });

  it('reads standard input for -', async () => {
    expect(await readDescriptionFile('-', Readable.from([Buffer.from('from '), Buffer.from('a pipe\n')]))).toBe(
      'from a pipe',
    );
  });

  it('reads at most DESCRIPTION_FILE_LIMIT bytes', async () => {
    expect(await fromFile('a'.repeat(DESCRIPTION_FILE_LIMIT))).toHaveLength(DESCRIPTION_FILE_LIMIT);
    for (const over of [
      'a'.repeat(DESCRIPTION_FILE_LIMIT + 1),
      `${'a'.repeat(DESCRIPTION_FILE_LIMIT + 1)}\n`,
      'a'.repeat(DESCRIPTION_FILE_LIMIT + 3),
    ])
      await expect(fromFile(over)).rejects.toThrow(`is larger than ${DESCRIPTION_FILE_LIMIT} bytes`);
  });

  it("the limit is the description's: one of DESCRIPTION_FILE_LIMIT bytes saved by an editor (a final LF or CRLF, a BOM) is read", async () => {
    const full = 'b'.repeat(DESCRIPTION_FILE_LIMIT);
    expect(await fromFile(`${full}\n`)).toBe(full);
    expect(await fromFile(`${full}\r\n`)).toBe(full);
    // Notepad's way: a byte-order mark first.
    expect(await fromFile(`\uFEFF${full}\r\n`)).toBe(full);
    await expect(fromFile(`\uFEFF${full}x\r\n`)).rejects.toThrow(`is larger than ${DESCRIPTION_FILE_LIMIT} bytes`);
  });
});

/**
 * Reading small text inputs (a session, an API key, a description, a receipt) from a
 * file or standard input with a size bound, so that a wrong argument such as
 * /dev/zero or a huge file fails at once instead of filling memory.
 */
import { createReadStream, fstatSync, statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { InputFileError, UsageError } from '../errors.js';
import { withoutByteOrderMark } from '../exact-json.js';
import { readBoundedBytes } from '../read-bounded.js';

/**
 * The JSON text (a receipt) of `source` ('-' for standard input, else a
 * regular file), at most `limit` bytes, as decodeJsonText reads it: a byte
 * that is not UTF-8 read as U+FFFD (a receipt's hex fields decide, and
 * verify-receipt.py reads it the same way; text that is sent or registered
 * goes through decodeUtf8). Throws UsageError naming `what` when it cannot
 * be read or is larger. `flag`: the option that reads standard input with no
 * '-' typed (`login --api-key-stdin`), which the messages name instead.
 */
export async function readJsonInput(
  source: string,
  stdin: Readable,
  limit: number,
  what: string,
  flag?: string,
): Promise<string> {
  return decodeJsonText(await readBytesInput(source, stdin, limit, what, 0, flag));
}

/**
 * The bytes of `source`, as `readJsonInput` reads them, for a caller that
 * decodes them itself; `slack` more than `limit` are read, for what the
 * caller drops before it checks `limit` itself (a final line break).
 * `flag`: as for readJsonInput.
 */
export async function readBytesInput(
  source: string,
  stdin: Readable,
  limit: number,
  what: string,
  slack = 0,
  flag?: string,
): Promise<Buffer> {
  let bytes: Buffer | undefined;
  if (source === '-') checkStandardInput(stdin, what, true, flag);
  try {
    if (source === '-') {
      bytes = await readBoundedBytes(stdin, limit + slack);
    } else {
      if (!(await stat(source)).isFile()) throw new Error('not a regular file');
      bytes = await readBoundedBytes(createReadStream(source), limit + slack);
    }
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message;
    throw new UsageError(`cannot read ${what} ${sourceWords(source, flag)}: ${reason}`, { cause: error });
  }
  if (bytes === undefined) throw tooLarge(source, limit, what, flag);
  return bytes;
}

/**
 * The encoding other than UTF-8 that `bytes` are in, as iconv names it:
 * told by its byte order mark (UTF-16, UTF-32: iconv reads the order from
 * the mark), or without one as RFC 4627 (section 3) tells JSON's, by the
 * zero bytes of its first characters when they are printable ASCII
 * (UTF-16LE, UTF-16BE, UTF-32LE, UTF-32BE: named with their order, which
 * iconv would otherwise guess, and a wrong guess is other text, valid
 * UTF-8). Four of them are looked at, no fewer: 00 4E is "N" in UTF-16BE
 * and U+4E00 in UTF-16LE (r84), 00 C8 00 AC is "È¬" or "저가" (r86), and
 * 00 4E 00 52 "NR" or "一刀" (r87); four CJK characters each a multiple of
 * 256 are no text anyone writes. Undefined when none is told: such text
 * saved without a mark may pass for UTF-8, or be refused as not UTF-8. A
 * zero byte there is never UTF-8 text anyone meant (U+0000). UTF-32's
 * patterns are looked for first: they begin as UTF-16's.
 */
function otherEncoding(bytes: Buffer): string | undefined {
  const at = (...expected: number[]) => expected.every((byte, i) => bytes[i] === byte);
  if (at(0xff, 0xfe, 0, 0) || at(0, 0, 0xfe, 0xff)) return 'UTF-32';
  if (at(0xff, 0xfe) || at(0xfe, 0xff)) return 'UTF-16';
  if (unitsAre(bytes, 4, 0)) return 'UTF-32LE';
  if (unitsAre(bytes, 4, 3)) return 'UTF-32BE';
  if (unitsAre(bytes, 2, 0)) return 'UTF-16LE';
  if (unitsAre(bytes, 2, 1)) return 'UTF-16BE';
  return undefined;
}

/**
 * Whether the first four code units of `size` bytes each hold a printable
 * ASCII character at byte `at` and zeros elsewhere. A shorter text is not
 * told: 00 4E 00 52 is "NR" in UTF-16BE and "一刀" in UTF-16LE (r87).
 */
function unitsAre(bytes: Buffer, size: number, at: number): boolean {
  const units = 4;
  if (bytes.length < units * size) return false;
  for (let unit = 0; unit < units; unit++) {
    for (let i = 0; i < size; i++) {
      const byte = bytes[unit * size + i]!;
      if (i === at ? !isPrintableAscii(byte) : byte !== 0) return false;
    }
  }
  return true;
}

/** Tab, LF, CR, or a printable ASCII character. */
function isPrintableAscii(byte: number): boolean {
  return byte === 0x09 || byte === 0x0a || byte === 0x0d || (byte >= 0x20 && byte < 0x7f);
}

/**
 * `bytes` decoded as UTF-8, strictly: a byte that is not UTF-8 is refused,
 * not turned into U+FFFD (what would be sent or registered would not be what
 * was written), and a file saved as UTF-16 or UTF-32 (PowerShell 5's `>`,
 * Notepad's "Unicode") is said to be so, instead of being taken for text
 * that is not UTF-8, not JSON, or a key the service refuses. A UTF-8 byte
 * order mark (an editor's) is not part of `text`; `marked` says there was
 * one. Throws UsageError "<subject> is UTF-16, not UTF-8" or "<subject> is
 * not valid UTF-8", with `hint(encoding)` (undefined: not UTF-8 nor any
 * other encoding told).
 */
export function decodeUtf8(
  bytes: Buffer,
  subject: string,
  hint: (encoding: string | undefined) => string = convertHint,
): { text: string; marked: boolean } {
  const other = otherEncoding(bytes);
  if (other !== undefined) throw new UsageError(`${subject} is ${other}, not UTF-8`, { hint: hint(other) });
  let text: string;
  try {
    // fatal: a byte that is not UTF-8 is an error, not U+FFFD. ignoreBOM: the mark is kept, to be told.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch (error) {
    // Zero bytes are no 8-bit text (Latin-1's hint made NULs of it, r87): UTF-16 or UTF-32 not told above.
    if (bytes.subarray(0, 64).includes(0)) {
      throw new UsageError(`${subject} is not valid UTF-8: it holds zero bytes, as UTF-16 or UTF-32 text does`, {
        hint: 'save it as UTF-8 (in PowerShell Out-File -Encoding utf8), or iconv -f <its encoding: UTF-16LE, UTF-16BE...> -t UTF-8',
        cause: error,
      });
    }
    throw new UsageError(`${subject} is not valid UTF-8`, { hint: hint(undefined), cause: error });
  }
  const unmarked = withoutByteOrderMark(text);
  return { text: unmarked, marked: unmarked !== text };
}

/**
 * JSON text (a receipt) as read, in UTF-8 or in the UTF-16 or UTF-32 that
 * otherEncoding tells (PowerShell 5's `notarize receipt <hash> > file`
 * writes UTF-16LE with a mark). RFC 8259 (section 8.1) asks UTF-8 of JSON
 * exchanged, but a receipt saved in another Unicode encoding is the same
 * evidence: refused, it was `invalid` to verify and "not a receipt of" its
 * document to register, whose way out (--force) paid again (r92). A mark is
 * kept, as U+FEFF, in every encoding: readReceipt drops one, so that a second
 * mark is invalid whatever the encoding, as for verify-receipt.py (r93: one
 * dropped here and one there passed a UTF-16 receipt with two). UTF-8 is
 * decoded as before (a byte not UTF-8 as U+FFFD), as are units that are not
 * Unicode.
 */
export function decodeJsonText(bytes: Buffer): string {
  const encoding = otherEncoding(bytes);
  if (encoding === undefined) return bytes.toString('utf8');
  const marked = encoding === 'UTF-16' || encoding === 'UTF-32';
  const size = encoding.startsWith('UTF-32') ? 4 : 2;
  // A mark says the order: FF FE (00 00) is little-endian; otherwise the name does.
  const little = marked ? bytes[0] === 0xff : encoding.endsWith('LE');
  if (size === 2) {
    const even = Buffer.from(bytes.subarray(0, bytes.length - (bytes.length % 2)));
    if (!little) even.swap16();
    // ignoreBOM: the mark is kept as U+FEFF, not dropped by the decoder.
    return new TextDecoder('utf-16le', { ignoreBOM: true }).decode(even) + (bytes.length % 2 === 1 ? '\uFFFD' : '');
  }
  let text = '';
  for (let at = 0; at + 4 <= bytes.length; at += 4) {
    const point = little ? bytes.readUInt32LE(at) : bytes.readUInt32BE(at);
    text += point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff) ? '\uFFFD' : String.fromCodePoint(point);
  }
  return bytes.length % 4 === 0 ? text : `${text}\uFFFD`;
}

/** How to turn a file in `encoding` (undefined: an unknown 8-bit one, most often Latin-1) into UTF-8. */
export function convertHint(encoding: string | undefined): string {
  if (encoding === undefined) return 'convert it to UTF-8, e.g. iconv -f LATIN1 -t UTF-8';
  return `save it as UTF-8: iconv -f ${encoding} -t UTF-8, or in PowerShell Out-File -Encoding utf8`;
}

/** The error for `what` from `source` over `limit` bytes; `flag` as for readJsonInput. */
export function tooLarge(source: string, limit: number, what: string, flag?: string): UsageError {
  return new UsageError(`${what} ${sourceWords(source, flag)} is larger than ${limit} bytes`, {
    hint: flag === undefined ? `check that '${source}' holds ${what}` : `check that what goes to ${flag} is ${what}`,
  });
}

/** "from '<source>'", or "with <flag>" when the user typed a flag, not '-'. */
function sourceWords(source: string, flag: string | undefined): string {
  return flag === undefined ? `from '${source}'` : `with ${flag}`;
}

/**
 * Throws when the process's standard input, as `-`, is a directory (`< .`):
 * Node reads one as empty, so the digest of zero bytes (registered and paid
 * for), or an empty description, would be taken for what was meant
 * (`sha256sum - < .` fails the same way). With `refuseNull`, /dev/null too,
 * which is also what a closed standard input becomes (Node opens it in its
 * place at start): a cron job, `ssh -n` or a CI step with no input attached,
 * or a pipe left out, registered the empty document (`register /dev/null`
 * was refused all along). `hash -` and `verify -` read it, as sha256sum
 * does (register also refuses a pipe that gives no byte: core/hash.ts). A document's
 * read fails alone (InputFileError); the read of `what` (a description, a
 * list: never meant empty) stops the run (UsageError), both exit 2. Any
 * other stream (a test's) is taken as it is.
 */
export function checkStandardInput(
  stdin: Readable,
  what?: string,
  refuseNull = what !== undefined,
  flag?: string,
): void {
  if (stdin !== process.stdin) return;
  let reason: string | undefined;
  try {
    const input = fstatSync(0);
    if (input.isDirectory()) reason = 'a directory';
    else if (refuseNull && input.isCharacterDevice() && input.rdev === statSync('/dev/null').rdev) {
      reason = '/dev/null (or closed)';
    }
  } catch {
    return; // Unknown: read it as it comes.
  }
  if (reason === undefined) return;
  if (flag !== undefined) {
    throw new UsageError(`cannot read ${what} with ${flag}: standard input is ${reason}`, {
      hint: `pipe it in, or redirect a file to it (\`< file\`)`,
    });
  }
  const hint = "give '-' a file (`< file`) or a pipe, or name a file instead of '-'";
  if (what !== undefined) throw new UsageError(`cannot read ${what} from '-': standard input is ${reason}`, { hint });
  throw new InputFileError('-', `standard input is ${reason}`, {
    code: reason === 'a directory' ? 'is_directory' : 'no_input',
    message: `standard input ('-') is ${reason}`,
    hint,
  });
}

/**
 * The description sent with a hash. It ends up on a permanent record that
 * other people read (the verification page, `notarize show`), so it is
 * checked before anything is sent: valid UTF-8, and no control characters
 * but tab. Nothing is repaired or stripped silently (except the one final
 * line break a file ends with): a description that would not be registered
 * exactly as written is refused, exit 2.
 *
 * From the command line (`-d`): Node decodes argv as UTF-8 and turns every
 * byte that is not UTF-8 (a Latin-1 shell, a file name pasted from an old
 * archive) into U+FFFD, the replacement character, with no way to tell
 * afterwards. So a U+FFFD in `-d` is taken as a decoding failure and refused.
 * A real U+FFFD typed on purpose is rare; it can be given with
 * --description-file, whose bytes are decoded strictly.
 */
import type { Readable } from 'node:stream';
import { characterWhere } from '../characters.js';
import { UsageError } from '../errors.js';
import { decodeUtf8, readBytesInput, tooLarge } from './read-input.js';

/** The most --description-file reads: far more than a description needs, far less than a mistake can hold. */
export const DESCRIPTION_FILE_LIMIT = 64 * 1024;

/** The UTF-8 byte-order mark's length (EF BB BF), which the decoder drops. */
const BOM_BYTES = 3;

/**
 * Control characters (C0, DEL, C1) other than tab, and the characters that
 * act like them: line and paragraph separators (U+2028/U+2029) and invisible
 * format characters (bidi overrides and isolates, zero-width spaces, BOM;
 * not the joiners U+200C/U+200D that scripts and emoji need), the same set
 * output/safe-text.ts escapes. None belongs on a permanent record.
 */
const CONTROL = /[\p{Cc}\p{Zl}\p{Zp}\p{Cs}]|(?![\u200c\u200d])\p{Cf}/u;

/**
 * Whether `text` passes the checks of this module a description given here
 * passes (not empty, no control character but tab, no larger than
 * --description-file takes): for one taken from elsewhere (a receipt's
 * record), which is sent only if so (r88: an escape sequence and a line
 * break in a forged receipt went into a request step as they were). The
 * caller checks for secrets too (IO.holdsSecret), as withDescription does.
 */
export function isSendableDescription(text: string): boolean {
  return (
    text.trim() !== '' &&
    !CONTROL.test(text.replaceAll('\t', ' ')) &&
    Buffer.byteLength(text, 'utf8') <= DESCRIPTION_FILE_LIMIT
  );
}

/** Refuses a description holding a control character other than tab; `what` names where it came from. */
function checkControls(text: string, what: string): void {
  if (text.trim() === '') {
    throw new UsageError(`${what} is empty`, { hint: 'give a description with words in it, or leave it out' });
  }
  // Tab is the one control allowed; replaced by a space of the same length so that positions hold.
  const match = CONTROL.exec(text.replaceAll('\t', ' '));
  if (!match) return;
  const lineBreak = ['\n', '\r', '\u2028', '\u2029'].includes(match[0]);
  throw new UsageError(
    `${what} holds a control or format character (${characterWhere(text, match)}); only tab is allowed`,
    {
      hint: lineBreak
        ? 'a description is one line: put the text on one line (a file may end with one line break)'
        : 'remove it: it would be stored on the record for good',
    },
  );
}

/**
 * Checks --wallet-name (sent with the file metadata and kept by the
 * service): no control characters, as for a description; returns it unchanged.
 */
export function checkWalletName(name: string): string {
  const match = CONTROL.exec(name);
  if (!match) return name;
  throw new UsageError(`--wallet-name holds a control or format character (${characterWhere(name, match)})`, {
    hint: 'remove it: the service keeps the wallet name with the file metadata',
  });
}

/** Checks a description given with -d/--description; returns it unchanged. */
export function checkArgvDescription(text: string): string {
  const bad = text.indexOf('\ufffd');
  if (bad !== -1) {
    throw new UsageError(
      `--description is not valid UTF-8: byte(s) at character ${[...text.slice(0, bad)].length + 1} could not be decoded`,
      {
        hint: 'give it in UTF-8 (check the locale of the shell), or with --description-file (which also takes a real U+FFFD)',
      },
    );
  }
  checkControls(text, '--description');
  return text;
}

/**
 * Reads --description-file (a file, or '-' for standard input): at most
 * DESCRIPTION_FILE_LIMIT bytes, strict UTF-8 (read-input.ts: decodeUtf8), a
 * byte order mark and one final LF or CRLF dropped (editors add them), then
 * checked like -d.
 */
export async function readDescriptionFile(source: string, stdin: Readable): Promise<string> {
  const what = 'the description';
  // Room for what an editor adds, a byte-order mark before and a line break after, both dropped
  // below: the limit is the description's.
  const bytes = await readBytesInput(source, stdin, DESCRIPTION_FILE_LIMIT, what, BOM_BYTES + '\r\n'.length);
  let { text } = decodeUtf8(bytes, `the description in '${source}'`);
  text = text.replace(/\r?\n$/, '');
  if (Buffer.byteLength(text) > DESCRIPTION_FILE_LIMIT) throw tooLarge(source, DESCRIPTION_FILE_LIMIT, what);
  checkControls(text, `the description in '${source}'`);
  return text;
}

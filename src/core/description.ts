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
import { UsageError } from '../errors.js';
import { readBytesInput } from './read-input.js';

/** The most --description-file reads: far more than a description needs, far less than a mistake can hold. */
export const DESCRIPTION_FILE_LIMIT = 64 * 1024;

/** Control characters (C0, DEL, C1) other than tab. */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/u;

function codePoint(char: string): string {
  return `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** Refuses a description holding a control character other than tab; `what` names where it came from. */
function checkControls(text: string, what: string): void {
  const match = CONTROL.exec(text);
  if (!match) return;
  const position = [...text.slice(0, match.index)].length + 1;
  const lineBreak = match[0] === '\n' || match[0] === '\r';
  throw new UsageError(
    `${what} holds a control character (${codePoint(match[0])} at character ${position}); only tab is allowed`,
    {
      hint: lineBreak
        ? 'a description is one line: put the text on one line (a file may end with one line break)'
        : 'remove it: it would be stored on the record for good',
    },
  );
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
 * Checks a file name about to become a document's description (no -d given):
 * the same rule, so a name with a control character is not stored on a
 * permanent record; returns it unchanged.
 */
export function checkNameAsDescription(name: string): string {
  checkControls(name, `the file name used as description`);
  if (name.includes('\ufffd')) {
    throw new UsageError('the file name used as description is not valid UTF-8', {
      hint: 'give a description with -d or --description-file',
    });
  }
  return name;
}

/**
 * Reads --description-file (a file, or '-' for standard input): at most
 * DESCRIPTION_FILE_LIMIT bytes, strict UTF-8, one final LF or CRLF dropped
 * (editors add one), then checked like -d.
 */
export async function readDescriptionFile(source: string, stdin: Readable): Promise<string> {
  const what = 'the description';
  const bytes = await readBytesInput(source, stdin, DESCRIPTION_FILE_LIMIT, what);
  let text: string;
  try {
    // fatal: a byte that is not UTF-8 is an error, not U+FFFD. ignoreBOM false: a leading BOM is dropped.
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (error) {
    throw new UsageError(`the description in '${source}' is not valid UTF-8`, {
      hint: 'convert it, e.g. iconv -f LATIN1 -t UTF-8',
      cause: error,
    });
  }
  text = text.replace(/\r?\n$/, '');
  checkControls(text, `the description in '${source}'`);
  return text;
}

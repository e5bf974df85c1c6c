/**
 * A hidden prompt on the terminal, for the API key: nothing typed is echoed.
 * Callers check first that standard input is a terminal and CI is not set.
 */
import type { Readable } from 'node:stream';
import type { Sink } from './io.js';

interface RawStream extends Readable {
  setRawMode?(mode: boolean): unknown;
}

/** Asks `question` on `output` and reads a line from `input` without echo. */
export function promptHidden(question: string, input: RawStream, output: Sink): Promise<string> {
  return new Promise((resolve, reject) => {
    output.write(question);
    input.setRawMode?.(true);
    input.setEncoding('utf8');
    input.resume();
    let answer = '';
    const finish = (error?: Error) => {
      input.setRawMode?.(false);
      input.pause();
      input.off('data', onData);
      output.write('\n');
      if (error) reject(error);
      else resolve(answer);
    };
    // Raw mode reads every key as it is: the line editing a terminal does for a password prompt
    // (sudo's, ssh's) is done here, and no control character or key sequence becomes part of the key.
    let escape: 'none' | 'started' | 'sequence' = 'none';
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (escape !== 'none') {
          // ESC [ ... final byte, or ESC O x (arrows, Home, F-keys), or ESC x (Alt-x): skipped whole.
          if (escape === 'started' && (char === '[' || char === 'O')) escape = 'sequence';
          else if (escape === 'started' || (char >= '@' && char <= '~')) escape = 'none';
          continue;
        }
        if (char === '\r' || char === '\n') return finish();
        // Ctrl-D ends only an empty line (no key: the caller says so), as at a terminal's own prompt.
        if (char === '\u0004') {
          if (answer === '') return finish();
          continue;
        }
        if (char === '\u0003') return finish(new Error('cancelled'));
        if (char === '\u007f' || char === '\b') answer = answer.slice(0, -1);
        // Ctrl-U: start the line over; Ctrl-W: take back the last word.
        else if (char === '\u0015') answer = '';
        else if (char === '\u0017') answer = answer.replace(/\S*\s*$/, '');
        else if (char === '\u001b') escape = 'started';
        else if (char >= ' ') answer += char;
      }
    };
    input.on('data', onData);
  });
}

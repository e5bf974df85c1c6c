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
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n' || char === '\u0004') return finish();
        if (char === '\u0003') return finish(new Error('cancelled'));
        if (char === '\u007f' || char === '\b') answer = answer.slice(0, -1);
        else answer += char;
      }
    };
    input.on('data', onData);
  });
}

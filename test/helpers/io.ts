/**
 * An IO over string buffers, for calling `main()` in-process: stdout and
 * stderr are collected, standard input is a given string (never a terminal
 * unless asked).
 */
import { Readable } from 'node:stream';
import { IO } from '../../src/output/io.js';

export interface BufferIOOptions {
  /** What standard input holds; empty when absent. */
  stdin?: string | Buffer;
  /** Pretend standard input is a terminal (default false). */
  stdinIsTTY?: boolean;
  /** Pretend standard output is a terminal (default false). */
  stdoutIsTTY?: boolean;
  /** Called with each piece of stderr as it is written. */
  onStderr?: (text: string) => void;
}

export interface BufferIO {
  io: IO;
  stdout(): string;
  stderr(): string;
}

/** Builds an IO whose output the test reads back with `stdout()` and `stderr()`. */
export function bufferIO(options: BufferIOOptions = {}): BufferIO {
  let out = '';
  let err = '';
  const input = options.stdin === undefined || options.stdin.length === 0 ? [] : [Buffer.from(options.stdin)];
  const io = new IO({
    stdout: {
      write: (text: string) => {
        out += text;
        return true;
      },
    },
    stderr: {
      write: (text: string) => {
        err += text;
        options.onStderr?.(text);
        return true;
      },
    },
    stdin: Readable.from(input),
    stdinIsTTY: options.stdinIsTTY ?? false,
    stderrIsTTY: false,
    stdoutIsTTY: options.stdoutIsTTY ?? false,
    colour: false,
  });
  return { io, stdout: () => out, stderr: () => err };
}

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
import { readBytesInput, readTextInput } from '../../src/core/read-input.js';
import { UsageError } from '../../src/errors.js';
import { useTempDirs } from '../helpers/temp-dirs.js';
import { rejectionOf } from '../helpers/catch.js';

const tempDir = useTempDirs('notarize-read-input-');
const noStdin = Readable.from([]);

describe('readTextInput', () => {
  it('reads a file exactly, up to and including the limit', async () => {
    const file = join(tempDir(), 'session.json');
    writeFileSync(file, '{"a": 1}\n');
    expect(await readTextInput(file, noStdin, 9, 'the session')).toBe('{"a": 1}\n');
  });

  it('refuses a file one byte over the limit, naming what it should hold', async () => {
    const file = join(tempDir(), 'big.json');
    writeFileSync(file, 'x'.repeat(10));
    const error = await rejectionOf(readTextInput(file, noStdin, 9, 'the session'), UsageError);
    expect(error.message).toBe(`the session from '${file}' is larger than 9 bytes`);
    expect(error.hint).toBe(`check that '${file}' holds the session`);
  });

  it('reads standard input for -, in chunks', async () => {
    expect(await readTextInput('-', Readable.from(['ab', Buffer.from('cd')]), 10, 'the key')).toBe('abcd');
    const error = await rejectionOf(readTextInput('-', Readable.from(['abc', 'def']), 5, 'the key'), UsageError);
    expect(error.message).toBe(`the key from '-' is larger than 5 bytes`);
  });

  it('says "no such file" for a missing one', async () => {
    const missing = join(tempDir(), 'missing.json');
    const error = await rejectionOf(readTextInput(missing, noStdin, 10, 'the session'), UsageError);
    expect(error.message).toBe(`cannot read the session from '${missing}': no such file`);
  });

  it('refuses a directory as not a regular file', async () => {
    const dir = join(tempDir(), 'folder');
    mkdirSync(dir);
    const error = await rejectionOf(readTextInput(dir, noStdin, 10, 'the session'), UsageError);
    expect(error.message).toBe(`cannot read the session from '${dir}': not a regular file`);
  });

  it.runIf(process.platform !== 'win32')('refuses a FIFO without opening it (which would block)', async () => {
    const fifo = join(tempDir(), 'pipe');
    execFileSync('mkfifo', [fifo]);
    const error = await rejectionOf(readTextInput(fifo, noStdin, 10, 'the list'), UsageError);
    expect(error.message).toBe(`cannot read the list from '${fifo}': not a regular file`);
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

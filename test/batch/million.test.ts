/**
 * Issue 9: `--files-from` with a million paths, through the real process.
 * The old code read the list into one string and spread it into a call
 * (`named.push(...list)`): past ~125,000 paths it crashed with "Maximum call
 * stack size exceeded", and even without the spread it held every path and
 * item at once. Now the list is streamed and the items flow through runAll,
 * so the run passes under a V8 heap cap far below what holding a million
 * items takes (the old code fails under it; see the commit message for the
 * figures).
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sha256 } from '../helpers/documents.js';
import { useTempDir } from '../helpers/temp-dirs.js';
import { BIN } from '../helpers/cli.js';
import { cleanEnv } from '../helpers/env.js';

const LINES = 1_000_000;
/** Every this many lines, a path that does not exist: a failed item, reported and passed over. */
const MISSING_EVERY = 100_000;
/** MB of V8 old space: the streaming run needs under 16; a million held items need far more. */
const HEAP_CAP_MB = 32;

let dir: string;
useTempDir('notarize-million-', (created) => (dir = created));

describe('--files-from with a million paths', () => {
  it(`hashes them in input order under a ${HEAP_CAP_MB} MB heap, without crashing`, { timeout: 170_000 }, async () => {
    const names = ['f0.txt', 'f1.txt', 'f2.txt', 'f3.txt'];
    const expected: string[] = [];
    for (const name of names) {
      await writeFile(join(dir, name), `document ${name}\n`);
      expected.push(`${sha256(`document ${name}\n`)}  ${name}`);
    }
    const list: string[] = [];
    for (let i = 0; i < LINES; i++) list.push(i % MISSING_EVERY === 1 ? `missing-${i}.txt` : names[i % 4]!);
    await writeFile(join(dir, 'list.txt'), `${list.join('\n')}\n`);

    const child = spawn(
      process.execPath,
      [`--max-old-space-size=${HEAP_CAP_MB}`, BIN, 'hash', '--files-from', 'list.txt'],
      { cwd: dir, env: cleanEnv({ NOTARIZE_CONFIG_DIR: join(dir, '.store') }, { noBaseUrlCheck: true }) },
    );
    // stdout is checked line by line as it comes, never kept whole.
    let carry = '';
    let line = 0;
    let wrong: string | undefined;
    const check = (text: string) => {
      // The line printed for input line `line`, skipping the missing ones.
      while (line % MISSING_EVERY === 1) line++;
      if (wrong === undefined && text !== expected[line % 4]) wrong = `line for input ${line}: ${text}`;
      line++;
    };
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      const parts = (carry + chunk).split('\n');
      carry = parts.pop()!;
      for (const part of parts) check(part);
    });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < 100_000) stderr += chunk;
    });
    // A bound, not a speed test: about 40 s alone here, twice that on two cores shared with the other files.
    const timer = setTimeout(() => child.kill('SIGKILL'), 160_000);
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
      child.on('close', (c, s) => resolve([c, s])),
    );
    clearTimeout(timer);

    const missing = LINES / MISSING_EVERY;
    expect(signal, stderr.slice(0, 2000)).toBeNull();
    expect(stderr).not.toMatch(/Maximum call stack|heap out of memory|FATAL/);
    expect(code, stderr.slice(0, 2000)).toBe(2);
    expect(carry).toBe('');
    expect(wrong).toBeUndefined();
    expect(line).toBe(LINES);
    expect(stderr.trimEnd().split('\n')).toEqual([
      ...Array.from(
        { length: missing },
        (_, k) => `notarize: missing-${k * MISSING_EVERY + 1}.txt: no such file or directory`,
      ),
      `notarize: ${missing} of ${LINES} files could not be read`,
    ]);
  });
});

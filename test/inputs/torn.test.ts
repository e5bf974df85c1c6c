/**
 * Issue 10, finding 6: a file that changes while it is hashed. Appending to
 * or patching a large file during `hash`/`register` used to give a digest of
 * neither version, registered with exit 0. Now the document fails with exit
 * 2 ("changed while it was being hashed"), nothing is sent for it, and the
 * other documents of a batch go on.
 *
 * The writer is another process that keeps writing (every 2 ms) from before
 * notarize starts until it has exited, so the change falls inside the
 * hashing of a 400 MB sparse file (hundreds of ms) on every run: no timing
 * luck involved.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { hashFile } from '../../src/core/hash.js';
import type { Bed } from '../helpers/bed.js';
import { useBed } from '../helpers/bed.js';
import { sha256 } from '../helpers/documents.js';
import { useTempDir } from '../helpers/temp-dirs.js';
import { BIN, describeRun, runCli, runProcess } from '../helpers/cli.js';

const BIG_BYTES = 400 * 1024 * 1024;
const CHANGED = /changed while it was being hashed; hash it again when it is stable/;

const writers: ChildProcess[] = [];
afterEach(() => {
  for (const writer of writers.splice(0)) writer.kill('SIGKILL');
});

/**
 * Starts a process writing to `file` every 2 ms, appending a byte or
 * rewriting its first 16 bytes in place (same size, new mtime), and resolves
 * once its first write is done.
 */
async function startWriter(file: string, how: 'append' | 'patch'): Promise<void> {
  const script =
    how === 'append'
      ? `const fs = require('fs'); const fd = fs.openSync(process.argv[1], 'a');
         setInterval(() => fs.writeSync(fd, 'x'), 2); fs.writeSync(fd, 'x'); console.log('writing');`
      : `const fs = require('fs'); const fd = fs.openSync(process.argv[1], 'r+'); let i = 0;
         const patch = () => fs.writeSync(fd, Buffer.alloc(16, i++ % 251), 0, 16, 0);
         setInterval(patch, 2); patch(); console.log('writing');`;
  const writer = spawn(process.execPath, ['-e', script, file], { stdio: ['ignore', 'pipe', 'inherit'] });
  writers.push(writer);
  await new Promise<void>((resolve, reject) => {
    writer.stdout.once('data', () => resolve());
    writer.once('exit', (code) => reject(new Error(`the writer exited (${code}) before writing`)));
  });
}

function bigSparseFile(dir: string, name = 'big.bin'): string {
  const path = join(dir, name);
  writeFileSync(path, '');
  truncateSync(path, BIG_BYTES);
  return path;
}

describe('hash: a file written to while it is hashed', () => {
  let dir: string;
  useTempDir('notarize-torn-', (made) => (dir = made));
  const env = () => ({ NOTARIZE_CONFIG_DIR: join(dir, 'store') });

  for (const how of ['append', 'patch'] as const) {
    it(
      `${how === 'append' ? 'an append' : 'a patch in place'} during hashing: exit 2, its line naming the file, no digest`,
      { timeout: 30_000 },
      async () => {
        const big = bigSparseFile(dir);
        await startWriter(big, how);
        const run = await runCli(['hash', big], env(), { noBaseUrlCheck: true });
        expect(run.code, describeRun(run)).toBe(2);
        expect(run.stdout).toBe('');
        expect(run.stderr.trimEnd().split('\n')).toEqual([
          `notarize: ${big}: changed while it was being hashed; hash it again when it is stable`,
          'notarize: 1 of 1 file could not be read',
        ]);
      },
    );
  }

  it(
    'in a batch (the worker pool) the changing file fails alone; the stable one is hashed',
    { timeout: 30_000 },
    async () => {
      const big = bigSparseFile(dir, 'a-big.bin');
      const stable = join(dir, 'b-stable.txt');
      writeFileSync(stable, 'stable\n');
      await startWriter(big, 'append');
      const run = await runCli(['hash', big, stable], env(), { noBaseUrlCheck: true });
      expect(run.code, describeRun(run)).toBe(2);
      expect(run.stdout).toBe(`${sha256('stable\n')}  ${stable}\n`);
      expect(run.stderr).toMatch(new RegExp(`^notarize: ${big}: ${CHANGED.source}\n`));
    },
  );

  it(
    'standard input redirected from a file written to meanwhile (`hash - < file`): exit 2, no digest',
    { timeout: 30_000 },
    async () => {
      // Read through the descriptor with no fstat around the reads, it gave digests of versions that
      // never were on disk, and register registered one.
      const big = bigSparseFile(dir);
      await startWriter(big, 'patch');
      const run = await runProcess('bash', ['-c', '"$NODE" "$BIN" hash - < "$BIG"'], {
        NODE: process.execPath,
        BIN,
        BIG: big,
        PATH: process.env.PATH,
        ...env(),
      });
      expect(run.code, describeRun(run)).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain('notarize: -: changed while it was being hashed; hash it again when it is stable');
      // A stable one is hashed as ever, from where the shell left the descriptor.
      const stable = join(dir, 'stable.txt');
      writeFileSync(stable, 'head:stable\n');
      const partly = await runProcess('bash', ['-c', '{ head -c 5 >/dev/null; "$NODE" "$BIN" hash -; } < "$F"'], {
        NODE: process.execPath,
        BIN,
        F: stable,
        PATH: process.env.PATH,
        ...env(),
      });
      expect(partly.code, describeRun(partly)).toBe(0);
      expect(partly.stdout).toBe(`${sha256('stable\n')}  -\n`);
    },
  );

  it('hashFile (the streaming path) refuses a file appended to meanwhile, and gives the facts of what it hashed', async () => {
    const big = bigSparseFile(dir);
    await expect(hashFile(big)).resolves.toMatchObject({
      size: BIG_BYTES,
      lastModified: Math.floor(statSync(big).mtimeMs),
    });
    await startWriter(big, 'append');
    await expect(hashFile(big)).rejects.toThrow(CHANGED);
  });
});

describe('register: a file written to while it is hashed', () => {
  let bed: Bed;
  useBed((b) => (bed = b), { keyInEnv: true });

  it('exit 2, and nothing at all reaches the service', { timeout: 30_000 }, async () => {
    const big = bigSparseFile(bed.workDir);
    await startWriter(big, 'append');
    const run = await bed.run(['register', big]);
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).toMatch(CHANGED);
    expect(bed.calls('request')).toBe(0);
    expect(bed.sandbox.calls.filter((c) => c.route !== 'login')).toEqual([]);
    // Once the file is left alone, the same command registers it.
    for (const writer of writers.splice(0)) writer.kill('SIGKILL');
    await sleep(50);
    const again = await bed.run(['register', big, '--json']);
    expect(again.code, describeRun(again)).toBe(0);
    expect(bed.calls('request')).toBe(1);
  });
});

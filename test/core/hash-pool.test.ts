/**
 * The worker pool against real files: digests equal to a one-shot hash at the
 * sizes where its code paths change (inline below INLINE_MAX_BYTES, one and
 * several read blocks above), unreadable inputs as usage errors, and close()
 * rejecting work instead of leaving it hanging.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HashPool, INLINE_MAX_BYTES } from '../../src/core/hash-pool.js';
import { UsageError } from '../../src/errors.js';
import { rejection } from '../helpers/catch.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const tempDir = useTempDirs('notarize-pool-');
const pools: HashPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

function pool(size?: number): HashPool {
  const made = new HashPool(size);
  pools.push(made);
  return made;
}

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

describe('HashPool', () => {
  it('hashes files of every size class on two workers like a one-shot hash', async () => {
    const dir = tempDir();
    const sizes = [
      0,
      1,
      INLINE_MAX_BYTES - 1,
      INLINE_MAX_BYTES,
      INLINE_MAX_BYTES + 1,
      2 * 1024 * 1024,
      5 * 1024 * 1024 + 3,
    ];
    const files = sizes.map((size, i) => {
      const data = randomBytes(size);
      const path = join(dir, `f${i}.bin`);
      writeFileSync(path, data);
      return { path, expected: sha256(data) };
    });
    const hashes = await Promise.all(files.map(async (f) => (await pool(2).hash(f.path)).hash));
    expect(hashes).toEqual(files.map((f) => f.expected));
  });

  it('runs more jobs than workers, each answer going to its own file', async () => {
    const dir = tempDir();
    const hashing = pool(2);
    const files = Array.from({ length: 25 }, (_, i) => {
      const data = Buffer.from(`document ${i}\n`.repeat(i * 5000));
      const path = join(dir, `d${i}.txt`);
      writeFileSync(path, data);
      return { path, expected: sha256(data) };
    });
    expect(await Promise.all(files.map(async (f) => (await hashing.hash(f.path)).hash))).toEqual(
      files.map((f) => f.expected),
    );
  });

  it('rejects a missing file and a directory with a usage error naming the path', async () => {
    const dir = tempDir();
    const hashing = pool(2);
    const missing = await rejection(hashing.hash(join(dir, 'nope.bin')));
    expect(missing).toBeInstanceOf(UsageError);
    expect((missing as UsageError).exitCode).toBe(2);
    expect((missing as UsageError).message).toContain('nope.bin');
    const sub = join(dir, 'sub');
    mkdirSync(sub);
    const directory = await rejection(hashing.hash(sub));
    expect(directory).toBeInstanceOf(UsageError);
    expect((directory as UsageError).message).toContain('sub');
  });

  it('close() rejects work still queued, and later calls', async () => {
    const dir = tempDir();
    const hashing = new HashPool(2);
    const path = join(dir, 'big.bin');
    writeFileSync(path, randomBytes(8 * 1024 * 1024));
    const jobs = Array.from({ length: 6 }, () =>
      hashing.hash(path).then(
        ({ hash }) => ({ hash }),
        (error: Error) => ({ error }),
      ),
    );
    await hashing.close();
    const settled = await Promise.all(jobs);
    // Whatever was still queued or running when the pool closed was rejected, not left hanging.
    expect(settled.some((s) => 'error' in s)).toBe(true);
    for (const s of settled) if ('hash' in s) expect(s.hash).toMatch(/^[0-9a-f]{64}$/);
    await expect(hashing.hash(path)).rejects.toThrow(/closed/);
  });

  it.skipIf(process.platform === 'win32')(
    'refuses a FIFO at once, as not a regular file, without waiting for a writer',
    async () => {
      const fifo = join(tempDir(), 'pipe');
      execFileSync('mkfifo', [fifo]);
      // Had the open blocked this thread (or a read waited for a writer), the test would time out.
      const error = await rejection(pool(2).hash(fifo));
      expect(error).toBeInstanceOf(UsageError);
      expect((error as UsageError).message).toBe(`'${fifo}' is not a regular file`);
    },
  );
});

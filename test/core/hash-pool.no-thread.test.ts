/**
 * The pool when the system gives no thread (`ulimit -u`, a container's
 * pids.max): `new Worker` throws at once (EAGAIN, ERR_WORKER_INIT_FAILED),
 * which escaped the pool and crashed a run that had paid, with a stack
 * trace. Node's Worker is made to throw after `threads.allowed` starts (a
 * real limit on threads depends on how many Node itself runs, which differs
 * by version); the files are real, and each digest is checked.
 */
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as WorkerThreads from 'node:worker_threads';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HashPool } from '../../src/core/hash-pool.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const threads = vi.hoisted(() => ({ allowed: 0, refused: 0 }));

vi.mock('node:worker_threads', async (importOriginal) => {
  const real = await importOriginal<typeof WorkerThreads>();
  class Worker extends real.Worker {
    constructor(...args: ConstructorParameters<typeof real.Worker>) {
      if (threads.allowed <= 0) {
        threads.refused++;
        throw Object.assign(new Error('EAGAIN'), { code: 'ERR_WORKER_INIT_FAILED' });
      }
      threads.allowed--;
      super(...args);
    }
  }
  return { ...real, Worker };
});

const tempDir = useTempDirs('notarize-pool-no-thread-');
const pools: HashPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

async function hashAll(allowed: number): Promise<void> {
  threads.allowed = allowed;
  threads.refused = 0;
  const dir = tempDir();
  const files = Array.from({ length: 6 }, (_, i) => {
    const data = randomBytes(200_000 + i);
    const path = join(dir, `f${i}.bin`);
    writeFileSync(path, data);
    return { path, digest: createHash('sha256').update(data).digest('hex') };
  });
  const pool = new HashPool(4);
  pools.push(pool);
  const hashed = await Promise.all(files.map((file) => pool.hash(file.path)));
  expect(hashed.map((h) => h.hash)).toEqual(files.map((file) => file.digest));
  expect(threads.refused).toBeGreaterThan(0);
}

describe('HashPool when no thread can be made', () => {
  it('one worker started, the next refused: every file hashed, by it or on this thread', async () => {
    await hashAll(1);
  });

  it('none started: every file hashed on this thread, none tried again per file', async () => {
    await hashAll(0);
    expect(threads.refused).toBe(1);
  });
});

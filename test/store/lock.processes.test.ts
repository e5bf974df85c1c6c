/**
 * The per-hash lock (src/store/lock.ts) across real processes: mutual
 * exclusion holds while locks of dead owners keep appearing and many waiters
 * race to take them over (the stale-lock takeover race).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { lockText } from '../../src/store/lock.js';
import { DIST } from '../helpers/cli.js';
import { LOCK_PROCESS, RACE_THREAD } from '../helpers/lock-programs.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const tempDir = useTempDirs();
const RACE_THREAD_URL = new URL(`data:text/javascript,${encodeURIComponent(RACE_THREAD)}`);

function deadPid(): string {
  return spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
}

function runWorker(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', LOCK_PROCESS, '--', ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stderr }));
  });
}

describe('the per-hash lock across processes', () => {
  const WORKERS = Number(process.env.LOCK_WORKERS ?? 6);
  const ITERATIONS = Number(process.env.LOCK_ITERATIONS ?? 150);

  it(`${WORKERS} processes x ${ITERATIONS} critical sections, with dead owners' locks planted throughout: no overlap`, async () => {
    const dir = tempDir();
    const lock = join(dir, 'h.lock');
    const counter = join(dir, 'counter');
    const holder = join(dir, 'holder');
    const violations = join(dir, 'violations');
    writeFileSync(counter, '0');
    const common = [DIST, lock, counter, holder, violations, String(ITERATIONS)];
    const results = await Promise.all([
      ...Array.from({ length: WORKERS }, () => runWorker([...common, 'worker'])),
      runWorker([DIST, lock, counter, holder, violations, String(ITERATIONS * 2), 'poisoner', deadPid()]),
    ]);
    for (const result of results) expect(result.code, result.stderr).toBe(0);
    expect(existsSync(violations) ? readFileSync(violations, 'utf8').length : 0).toBe(0);
    expect(Number(readFileSync(counter, 'utf8'))).toBe(WORKERS * ITERATIONS);
    // Nothing is left but, possibly, the poisoner's last dead lock: no claims, no temporaries.
    const left = readdirSync(dir).filter((n) => !['counter', 'h.lock'].includes(n));
    expect(left).toEqual([]);
  }, 120_000);
});

describe('the stale-lock takeover race', () => {
  const THREADS = 4;
  const ROUNDS = Number(process.env.LOCK_ROUNDS ?? 100);

  it(`${ROUNDS} rounds: a dead owner's lock, ${THREADS} waiters released at the same instant, one holder at a time`, async () => {
    const dir = tempDir();
    const lockFile = join(dir, 'h.lock');
    const shared = new SharedArrayBuffer(16);
    const state = new Int32Array(shared);
    const threads = Array.from(
      { length: THREADS },
      () => new Worker(RACE_THREAD_URL, { workerData: { distDir: DIST, lockFile, shared, rounds: ROUNDS } }),
    );
    const exited = threads.map(
      (thread) =>
        new Promise<number>((resolve, reject) => {
          thread.once('error', reject);
          thread.once('exit', resolve);
        }),
    );
    const dead = deadPid();
    for (let round = 1; round <= ROUNDS; round += 1) {
      writeFileSync(lockFile, lockText(Number(dead), `dead-${round}`));
      Atomics.store(state, 0, round);
      Atomics.notify(state, 0);
      while (Atomics.load(state, 3) < round * THREADS) await sleep(1);
    }
    expect(await Promise.all(exited)).toEqual(Array(THREADS).fill(0));
    expect(Atomics.load(state, 2)).toBe(0);
    expect(readdirSync(dir)).toEqual([]);
  }, 120_000);
});

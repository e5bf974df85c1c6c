/**
 * The programs of the lock tests (test/store/lock.processes.test.ts), as source text: each runs in
 * its own process or thread and drives src/store/lock.ts from the build
 * (dist/), the code that notarize processes really run.
 */

/**
 * A process. As a "worker" it takes the lock ITERATIONS times and, holding
 * it, increments a counter file with a non-atomic read-modify-write and marks
 * itself as the holder: two holders at once show up as a lost increment or a
 * violation mark. As a "poisoner" it plays processes killed while holding the
 * lock: whenever the lock is free it leaves one that belongs to a dead pid,
 * which the workers must take over (written as a notarize of this PID
 * namespace writes it, so its death is provable and it is taken over at once).
 * argv: distDir lockFile counterFile holderFile violationsFile iterations role [deadPid]
 */
export const LOCK_PROCESS = `
import { appendFileSync, closeSync, openSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';

const [distDir, lockFile, counterFile, holderFile, violationsFile, iterations, role, deadPid] =
  process.argv.slice(1);
const { lockText, withLock } = await import(pathToFileURL(distDir + '/store/lock.js').href);

if (role === 'poisoner') {
  for (let i = 0; i < Number(iterations); i += 1) {
    try {
      writeFileSync(lockFile, lockText(Number(deadPid), 'dead' + i), { flag: 'wx' });
    } catch {
      // Held right now: try again shortly.
    }
    await sleep(Math.random() * 4);
  }
} else {
  for (let i = 0; i < Number(iterations); i += 1) {
    // Waiters look again every 2 ms, not 25: the same race, more often, and sooner done.
    await withLock(lockFile, 60_000, async () => {
      let mine = true;
      try {
        closeSync(openSync(holderFile, 'wx'));
      } catch {
        mine = false;
        appendFileSync(violationsFile, 'x');
      }
      const n = Number(readFileSync(counterFile, 'utf8') || '0');
      await new Promise((resolve) => setImmediate(resolve));
      writeFileSync(counterFile, String(n + 1));
      if (mine) unlinkSync(holderFile);
    }, { pollMs: 2 });
  }
}
`;

/**
 * A thread. Each round the main thread plants a lock owned by a dead pid and
 * releases every thread at the same instant (Atomics); each thread then takes
 * the lock, counting how many hold it at once. Threads are used here, besides
 * processes, because they can be released together to the microsecond, which
 * is where the takeover race lives. workerData: { distDir, lockFile, shared, rounds }.
 */
export const RACE_THREAD = `
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { workerData } from 'node:worker_threads';

const { distDir, lockFile, shared, rounds } = workerData;
const { withLock } = await import(pathToFileURL(distDir + '/store/lock.js').href);
const state = new Int32Array(shared); // [round, holders, violations, done]

for (let round = 1; round <= rounds; round += 1) {
  while (Atomics.load(state, 0) < round) Atomics.wait(state, 0, round - 1, 1000);
  // Waiters look again every 2 ms, not 25: the same race, sooner done.
  await withLock(lockFile, 30_000, async () => {
    if (Atomics.add(state, 1, 1) > 0) Atomics.add(state, 2, 1);
    await sleep(1);
    Atomics.sub(state, 1, 1);
  }, { pollMs: 2 });
  Atomics.add(state, 3, 1);
}
`;

/**
 * A process running notarize's `complete` flow (core/notarize.ts, from the
 * build) on one hash with the session from the store, as `notarize complete
 * <hash>` does, but with a lock lease of `leaseMs` instead of LEASE_MS, so a
 * test can outlast the lease in seconds. Its environment is the CLI's (base
 * URL, API key, config directory). Exits 0 once completed; a failure leaves
 * a stack on stderr and exit 1. argv: distDir hash leaseMs
 */
export const COMPLETE_PROCESS = `
import { pathToFileURL } from 'node:url';

const [distDir, hash, leaseMs] = process.argv.slice(1);
const load = (module) => import(pathToFileURL(distDir + '/' + module).href);
const { Context } = await load('context.js');
const { processIO } = await load('cli.js');
const { complete } = await load('core/notarize.js');
const storeModule = await load('store/store.js');

const ctx = new Context(processIO(process.env), process.env, {}, storeModule);
try {
  await complete({ api: await ctx.api(), store: ctx.serviceStore, lockTiming: { leaseMs: Number(leaseMs) } }, hash, { kind: 'store' });
} finally {
  await ctx.close();
}
`;

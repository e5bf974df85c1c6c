/**
 * Issue 3, "Crashes": notarize processes killed with SIGKILL at many points
 * (the sandbox delays its answers to widen every window; each kill is timed
 * at random inside its window) leave a store that loads, in which every
 * session whose request step was answered is pending or completed; then
 * `complete` or a new `register` finishes them, taking over the locks the
 * killed processes left behind.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditSecrets } from '../helpers/audit.js';
import { describeRun as show, mapLimit, spawnCli as start } from '../helpers/cli.js';
import { makeDocument } from '../helpers/documents.js';
import { runMain } from '../helpers/main.js';
import { callsTo, forfaitHash, requestedHash, useSandboxes } from '../helpers/sandbox.js';
import { ledgerHashes, pendingHashes } from '../helpers/store.js';
import { useTempDirs } from '../helpers/temp-dirs.js';
import {
  expectNoLocksLeft,
  expectCompletedOnce,
  expectStoreLoads,
  forfaitsSent,
  KILL_TARGETS,
  killMoment,
  LATENCY_MS,
  SAVE_GRACE_MS,
  slowSandboxAndStore,
  type KillTarget,
  type VictimCalls,
} from '../helpers/crash.js';

auditSecrets();
const tempDir = useTempDirs();
const newSandbox = useSandboxes();

const KILLS = Number(process.env.CRASH_KILLS ?? 40);
const PARALLEL = 8;
/** Recoveries mostly wait on the sandbox's latency: more of them at once cost no CPU. */
const RECOVERY_PARALLEL = 10;

/** The calls of the victim registering `hash`. */
function callsOf(hash: string): VictimCalls {
  return {
    isRequest: (c) => c.route === 'request' && requestedHash(c) === hash,
    isForfait: (c) => c.route === 'forfait' && forfaitHash(c) === hash,
  };
}

type Phase =
  | 'exited before the kill'
  | 'before the request step'
  | 'request step in flight'
  | 'request answered, forfait not yet sent'
  | 'forfait in flight'
  | 'forfait processed by the service';

describe(`${KILLS} notarize processes killed with SIGKILL at many points`, () => {
  it('leave a store that loads, lose no answered session, and are finished by complete/register', async () => {
    const configDir = tempDir();
    const docs = tempDir();
    const { sandbox, env, paths } = await slowSandboxAndStore(newSandbox, configDir, LATENCY_MS);

    const phases = new Map<Phase, number>();
    const aimed = new Map<KillTarget, number>();
    const victims: { path: string; hash: string; complete: boolean }[] = [];
    const inFlightLost: number[] = [];
    let locksLeft = 0;

    for (let batch = 0; batch * PARALLEL < KILLS; batch += 1) {
      const size = Math.min(PARALLEL, KILLS - batch * PARALLEL);
      const outcomes = await Promise.all(
        Array.from({ length: size }, async (_, i) => {
          const n = batch * PARALLEL + i;
          const target = KILL_TARGETS[n % KILL_TARGETS.length]!;
          aimed.set(target, (aimed.get(target) ?? 0) + 1);
          // A 2 MiB document: hashing it is one of the windows of the first target.
          const doc = makeDocument(docs, `victim-${n}.bin`, 2 * 1024 * 1024);
          // Some stop after saving the session: the window after the answer is then the save and the exit.
          const complete = !(target.startsWith('just after the request') && n % 2 === 0);
          victims.push({ ...doc, complete });
          const running = start(['register', doc.path, '--quiet', ...(complete ? [] : ['--no-complete'])], env);
          const stop = new AbortController();
          let killedAt = Infinity;
          void killMoment(sandbox, target, callsOf(doc.hash), LATENCY_MS, stop.signal).then(
            () => {
              killedAt = performance.now();
              running.child.kill('SIGKILL');
            },
            () => {},
          );
          const result = await running.done;
          stop.abort();
          return { doc, complete, result, killedAt };
        }),
      );

      // After every batch of kills the store loads, with no damaged file.
      await expectStoreLoads(env);

      const pending = new Set(pendingHashes(configDir, sandbox.url));
      const ledger = new Set(ledgerHashes(configDir, sandbox.url));
      for (const { doc, complete, result, killedAt } of outcomes) {
        const kept = pending.has(doc.hash) || ledger.has(doc.hash);
        const answered = sandbox.answered.find(
          (a) => a.call.route === 'request' && a.call.status === 200 && requestedHash(a.call) === doc.hash,
        );
        let phase: Phase;
        if (result.signal === null) {
          phase = 'exited before the kill';
          expect(result.code, show(result)).toBe(0);
          expect(complete ? ledger.has(doc.hash) : pending.has(doc.hash)).toBe(true);
        } else if (sandbox.records.has(doc.hash)) {
          phase = 'forfait processed by the service';
          expect(kept).toBe(true);
        } else if (callsTo(sandbox.calls, 'forfait', doc.hash).length > 0) {
          // forfait is only sent once the session is on disk.
          phase = 'forfait in flight';
          expect(kept).toBe(true);
        } else if (answered) {
          phase = 'request answered, forfait not yet sent';
          // The one window no client can close: the answer is on the wire, or
          // read but not yet on disk. Past a grace period it must be saved.
          if (!kept) {
            expect(killedAt - answered.answeredAt).toBeLessThan(SAVE_GRACE_MS);
            inFlightLost.push(Math.round(killedAt - answered.answeredAt));
          }
        } else {
          phase =
            callsTo(sandbox.calls, 'request', doc.hash).length > 0
              ? 'request step in flight'
              : 'before the request step';
        }
        phases.set(phase, (phases.get(phase) ?? 0) + 1);
        if (existsSync(paths.lock(doc.hash))) locksLeft += 1;
      }
    }

    // Everything left is finished by the documented commands, taking over the
    // locks of the killed processes.
    // In this process: what matters here is the store and the locks the
    // killed processes left, not the recovering run's process boundary.
    const hashes = victims.map((v) => v.hash);
    const sentBefore = forfaitsSent(sandbox, hashes);
    // No killed process sent a completion twice.
    for (const [hash, sent] of sentBefore) expect(sent, hash).toBeLessThanOrEqual(1);
    const recorded = new Set(hashes.filter((hash) => existsSync(paths.ledger(hash))));
    const recoveries = await mapLimit(victims, RECOVERY_PARALLEL, async (v) => {
      const pendingNow = existsSync(paths.pending(v.hash));
      const processed = sandbox.records.has(v.hash);
      const result = pendingNow
        ? await runMain(['complete', v.hash, '--quiet'], env)
        : await runMain(['register', v.path, '--quiet'], env);
      return { v, pendingNow, processed, result };
    });
    let alreadyRegistered = 0;
    for (const { v, pendingNow, processed, result } of recoveries) {
      // A stale lock never blocks: waiting on it would take the full 60 s, then exit 4.
      expect(result.ms).toBeLessThan(45_000);
      if (pendingNow && processed && !existsSync(paths.ledger(v.hash))) {
        // The service completed it but the killed process never got the record:
        // the 409 on the second completion ends the run well (exit 0), and
        // the session is retired (kept aside), not left pending nor deleted.
        expect(result.code, show(result)).toBe(0);
        expect(result.stdout).toMatch(/already registered \(the service says so/);
        expect(existsSync(paths.pending(v.hash))).toBe(false);
        expect(readdirSync(join(paths.pending(v.hash), '..', '..', 'retired')).some((n) => n.startsWith(v.hash))).toBe(
          true,
        );
        alreadyRegistered += 1;
      } else {
        expect(result.code, show(result)).toBe(0);
        expect(existsSync(paths.ledger(v.hash))).toBe(true);
        expect(existsSync(paths.pending(v.hash))).toBe(false);
      }
    }
    expectCompletedOnce(sentBefore, forfaitsSent(sandbox, hashes), recorded);
    expectNoLocksLeft(paths.locksDir);

    const killed = victims.length - (phases.get('exited before the kill') ?? 0);
    console.log(
      `crash test: ${victims.length} processes, ${killed} killed with SIGKILL; aimed at ${JSON.stringify(Object.fromEntries(aimed))}; ` +
        `killed in: ${JSON.stringify(Object.fromEntries(phases))}; ` +
        `answered but not yet saved when killed: ${inFlightLost.length} (killed ${JSON.stringify(inFlightLost)} ms after the answer); ` +
        `locks left by killed processes: ${locksLeft}; ` +
        `slowest recovery run: ${Math.round(Math.max(...recoveries.map((r) => r.result.ms)))} ms; ` +
        `completed by the service, record never received (retired after the 409 on complete): ${alreadyRegistered}`,
    );
    expect(killed).toBeGreaterThanOrEqual(KILLS * 0.75);
    expect(locksLeft).toBeGreaterThan(0);
  }, 240_000);
});

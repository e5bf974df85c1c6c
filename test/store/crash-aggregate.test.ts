/**
 * Issue 13: an aggregate run (`register --aggregate`) killed with SIGKILL at
 * any point (hashing, the tree being saved, the request step in flight or
 * just answered, forfait in flight or just answered) leaves a store from
 * which `register --aggregate` over the same documents, `complete <root>`,
 * or `register` of them one by one finishes without a second paid
 * registration: across every root of a victim's documents, the service
 * completes exactly one (one by one: each document is covered by exactly
 * one, its own or its root's).
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SandboxCall } from '../../src/sandbox/server.js';
import { auditSecrets } from '../helpers/audit.js';
import { describeRun as show, mapLimit, spawnCli as start } from '../helpers/cli.js';
import { makeDocument } from '../helpers/documents.js';
import { runMain } from '../helpers/main.js';
import { forfaitHash, requestedHash, useSandboxes, type TestSandbox } from '../helpers/sandbox.js';
import { ledgerHashes, pendingHashes } from '../helpers/store.js';
import { useTempDirs } from '../helpers/temp-dirs.js';
import {
  expectNoLocksLeft,
  expectStoreLoads,
  KILL_TARGETS,
  killMoment,
  LATENCY_MS,
  slowSandboxAndStore,
  type KillTarget,
  type VictimCalls,
} from '../helpers/crash.js';

auditSecrets();
const tempDir = useTempDirs();
const newSandbox = useSandboxes();

const VICTIMS = Number(process.env.CRASH_AGGREGATE_KILLS ?? 18);
const PARALLEL = 6;
const DOCUMENTS = 12;

/** The description each victim gives its root, by which its calls are told apart. */
const label = (n: number) => `victim ${n}`;

function descriptionOf(call: SandboxCall): string | undefined {
  try {
    return (JSON.parse(call.body) as { description?: string }).description;
  } catch {
    return undefined;
  }
}

/** The calls of victim `n`: its request step by its description, its forfait by the root requested. */
function callsOf(sandbox: TestSandbox, n: number): VictimCalls {
  const isRequest = (c: SandboxCall) => c.route === 'request' && descriptionOf(c) === label(n);
  return {
    isRequest,
    isForfait: (c) => {
      // A forfait comes after its request: once one of the root is seen, the request is in the log.
      const request = sandbox.calls.find(isRequest);
      return c.route === 'forfait' && request !== undefined && forfaitHash(c) === requestedHash(request);
    },
  };
}

describe(`${VICTIMS} aggregate runs killed with SIGKILL at any point`, () => {
  it('leave a store from which register --aggregate, complete or per-document register finishes, with one paid registration each', async () => {
    const configDir = tempDir();
    const { sandbox, env, paths } = await slowSandboxAndStore(newSandbox, configDir, LATENCY_MS);

    const victims = Array.from({ length: VICTIMS }, (_, n) => {
      const dir = tempDir();
      // One document of 2 MiB: hashing is one of the windows of the first target.
      const docs = Array.from({ length: DOCUMENTS }, (_, i) =>
        makeDocument(dir, `doc-${i}.bin`, i === 0 ? 2 * 1024 * 1024 : 100),
      );
      return { n, dir, docs, target: KILL_TARGETS[n % KILL_TARGETS.length]! };
    });
    const killed = new Map<KillTarget, number>();
    await mapLimit(victims, PARALLEL, async (v) => {
      const running = start(['register', '--aggregate', '-r', v.dir, '-d', label(v.n), '--quiet'], env);
      const stop = new AbortController();
      void killMoment(sandbox, v.target, callsOf(sandbox, v.n), LATENCY_MS, stop.signal).then(
        () => running.child.kill('SIGKILL'),
        () => {},
      );
      const result = await running.done;
      stop.abort();
      if (result.signal === 'SIGKILL') killed.set(v.target, (killed.get(v.target) ?? 0) + 1);
      else expect(result.code, show(result)).toBe(0);
    });

    // The store loads with nothing damaged.
    await expectStoreLoads(env);

    // Recovery: a pending root of an even victim by `complete <root>`, everything else by running the same command again.
    const pendingRoots = new Set(pendingHashes(configDir, sandbox.url));
    const byComplete: number[] = [];
    const byOneByOne: number[] = [];
    for (const v of victims) {
      const request = sandbox.calls.find((c) => c.route === 'request' && descriptionOf(c) === label(v.n));
      const first = request ? requestedHash(request) : undefined;
      if (first && pendingRoots.has(first) && v.n % 2 === 0) {
        const completed = await runMain(['complete', first, '--quiet'], env);
        expect(completed.code, show(completed)).toBe(0);
        byComplete.push(v.n);
      }
      if (v.n % 3 === 1) {
        await finishOneByOne(v);
        continue;
      }
      const again = await runMain(['register', '--aggregate', '-r', v.dir, '-d', label(v.n), '--json'], env);
      expect(again.code, show(again)).toBe(0);
      const results = JSON.parse(again.stdout) as { status: string; record: unknown; proof: { root: string } }[];
      expect(results).toHaveLength(DOCUMENTS);
      expect(new Set(results.map((r) => r.proof.root)).size).toBe(1);
      expect(results.every((r) => r.status === 'already-registered' || r.status === 'registered')).toBe(true);

      // Exactly one completion reached the service among every root this victim's documents were put under.
      const roots = sandbox.calls
        .filter((c) => c.route === 'request' && descriptionOf(c) === label(v.n))
        .map(requestedHash);
      // A forfait cut off by the kill may have been processed (its status unanswered): the service's records tell.
      const paid = [...new Set(roots)].filter((r) => sandbox.records.has(r));
      expect(paid, `victim ${v.n} (${v.target})`).toHaveLength(1);
      const root = results[0]!.proof.root;
      if (ledgerHashes(configDir, sandbox.url).includes(root)) {
        // Every document verifies from the ledger.
        const verify = await runMain(['verify', '-r', v.dir, '--quiet'], env);
        expect(verify.code, show(verify)).toBe(0);
      } else {
        // The service completed it but the killed process never got the record: the 409 on the next
        // forfait retired the session; no document has a record here, and none was paid twice.
        expect(results.every((r) => r.status === 'already-registered' && r.record === null)).toBe(true);
        expect(readdirSync(join(paths.pending(root), '..', '..', 'retired')).some((f) => f.startsWith(root))).toBe(
          true,
        );
      }
      expect(existsSync(paths.pending(root))).toBe(false);
    }
    /**
     * Recovery by per-document register of the victim's documents: a root
     * left pending is completed (never a document paid beside it), one
     * registered answers for them, one only planned (never answered) leaves
     * them to be paid one by one. Each document ends covered by exactly one
     * paid registration, its own or its root's.
     */
    async function finishOneByOne(v: (typeof victims)[number]) {
      const run = await runMain(['register', '-r', v.dir, '--json'], env);
      expect(run.code, show(run)).toBe(0);
      const results = JSON.parse(run.stdout) as { status: string; hash: string }[];
      expect(results).toHaveLength(DOCUMENTS);
      expect(results.every((r) => r.status === 'already-registered' || r.status === 'registered')).toBe(true);
      const roots = sandbox.calls
        .filter((c) => c.route === 'request' && descriptionOf(c) === label(v.n))
        .map(requestedHash);
      const paidRoots = [...new Set(roots)].filter((r) => sandbox.records.has(r));
      for (const { hash } of results) {
        const paid = paidRoots.length + (sandbox.records.has(hash) ? 1 : 0);
        expect(paid, `victim ${v.n} (${v.target}), document ${hash}`).toBe(1);
      }
      byOneByOne.push(v.n);
    }
    expectNoLocksLeft(paths.locksDir);
    const total = [...killed.values()].reduce((a, b) => a + b, 0);
    console.log(
      `aggregate crash test: ${VICTIMS} runs of ${DOCUMENTS} documents, ${total} killed with SIGKILL: ` +
        `${JSON.stringify(Object.fromEntries(killed))}; pending roots finished by complete: ${byComplete.length}; ` +
        `victims finished by per-document register: ${byOneByOne.length}`,
    );
    expect(total).toBeGreaterThanOrEqual(VICTIMS * 0.6);
  }, 120_000);
});

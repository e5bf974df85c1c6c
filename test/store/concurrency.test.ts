/**
 * Issue 3, "Concurrent processes": many `notarize register` processes at once
 * on one store directory lose, duplicate and corrupt nothing, and leave no
 * temporary or lock files behind; on one hash, exactly one completes it.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { lockText } from '../../src/store/lock.js';
import { auditSecrets } from '../helpers/audit.js';
import { describeRun as show, runCli as run, type Run as RunResult } from '../helpers/cli.js';
import { makeDocument } from '../helpers/documents.js';
import { cliEnv } from '../helpers/env.js';
import { runMain } from '../helpers/main.js';
import { callsTo, useSandboxes } from '../helpers/sandbox.js';
import { ledgerHashes, listTree, pendingHashes, readJson, storePaths } from '../helpers/store.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

auditSecrets();
const tempDir = useTempDirs();
const newSandbox = useSandboxes();
const PROCESSES = 32;

/** Files other than settled pending/ledger entries and the conf files: temporaries and locks. */
function leftovers(configDir: string): string[] {
  return listTree(configDir)
    .filter((f) => !f.isDir)
    .map((f) => f.path)
    .filter((p) => !/^(config|credentials)\.json$/.test(p))
    .filter((p) => !/^services\/[^/]+\/(pending|ledger)\/[0-9a-f]{64}\.json$/.test(p));
}

async function registerAll(files: string[], env: NodeJS.ProcessEnv, extra: string[]): Promise<RunResult[]> {
  return Promise.all(files.map((file) => run(['register', file, '--quiet', ...extra], env, { timeoutMs: 60_000 })));
}

describe(`${PROCESSES} register processes at once on one store`, () => {
  it.each([
    { mode: '--no-complete', complete: false },
    { mode: 'complete', complete: true },
  ])(
    'leave $mode: one entry per file, nothing lost, duplicated or corrupt, no leftovers',
    async ({ complete }) => {
      const sandbox = await newSandbox({ faults: [{ route: '*', kind: 'latency', value: 20 }] });
      const configDir = tempDir();
      const docs = tempDir();
      const files = Array.from({ length: PROCESSES }, (_, i) => makeDocument(docs, `doc-${i}.txt`));
      // Each process logs in on its own with the API key, so credentials.json is written concurrently too.
      const env = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey });
      const results = await registerAll(
        files.map((f) => f.path),
        env,
        complete ? [] : ['--no-complete'],
      );
      for (const result of results) expect(result.code, show(result)).toBe(0);

      const expected = files.map((f) => f.hash).sort();
      const paths = storePaths(configDir, sandbox.url);
      const pending = pendingHashes(configDir, sandbox.url);
      const ledger = ledgerHashes(configDir, sandbox.url);
      if (complete) {
        expect(ledger).toEqual(expected);
        expect(pending).toEqual([]);
        expect(callsTo(sandbox.calls, 'forfait')).toHaveLength(PROCESSES);
        for (const hash of expected) {
          const entry = readJson(paths.ledger(hash)) as { hash: string; recordJson: string };
          expect(entry.hash).toBe(hash);
          expect(JSON.parse(entry.recordJson)).toEqual(JSON.parse(JSON.stringify(sandbox.records.get(hash))));
        }
      } else {
        expect(pending).toEqual(expected);
        expect(ledger).toEqual([]);
        expect(callsTo(sandbox.calls, 'forfait')).toHaveLength(0);
        for (const hash of expected) {
          const entry = readJson(paths.pending(hash)) as { hash: string; sessionJson: string };
          expect(entry.hash).toBe(hash);
          // The session kept is the one the service answered for that hash, byte for byte.
          const answers = callsTo(sandbox.calls, 'request', hash);
          expect(answers).toHaveLength(1);
          expect(JSON.parse(entry.sessionJson)).toHaveProperty('sessionId');
        }
      }
      expect(leftovers(configDir)).toEqual([]);
      // notarize itself loads the store with no warning.
      const listing = await runMain(['pending', '--json'], env);
      expect(listing.code, show(listing)).toBe(0);
      expect(listing.stderr).toBe('');
      expect((JSON.parse(listing.stdout) as unknown[]).length).toBe(complete ? 0 : PROCESSES);
      if (!complete) {
        // And every one of them can be completed afterwards, all at once.
        const completions = await Promise.all(
          expected.map((hash) => run(['complete', hash, '--quiet'], env, { timeoutMs: 60_000 })),
        );
        for (const result of completions) expect(result.code, show(result)).toBe(0);
        expect(ledgerHashes(configDir, sandbox.url)).toEqual(expected);
        expect(pendingHashes(configDir, sandbox.url)).toEqual([]);
        expect(leftovers(configDir)).toEqual([]);
      }
    },
    120_000,
  );
});

describe('many processes on the same file at once', () => {
  const SAME = 12;

  async function sameFile(plantStaleLock: boolean): Promise<void> {
    const sandbox = await newSandbox({ faults: [{ route: 'forfait', kind: 'latency', value: 50 }] });
    const configDir = tempDir();
    const doc = makeDocument(tempDir(), 'same.txt');
    const env = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey });
    const paths = storePaths(configDir, sandbox.url);
    if (plantStaleLock) {
      // A lock left by a process of this PID namespace that died (SIGKILL):
      // its pid is no longer alive, which here proves it dead.
      const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
        encoding: 'utf8',
      });
      mkdirSync(paths.locksDir, { recursive: true, mode: 0o700 });
      writeFileSync(paths.lock(doc.hash), lockText(Number(dead.stdout), 'killed'), { mode: 0o600 });
    }
    const results = await Promise.all(
      Array.from({ length: SAME }, () => run(['register', doc.path, '--json'], env, { timeoutMs: 60_000 })),
    );
    for (const result of results) expect(result.code, show(result)).toBe(0);
    // Exactly one process completed it; the others printed the same record from the ledger.
    expect(callsTo(sandbox.calls, 'forfait', doc.hash)).toHaveLength(1);
    expect(callsTo(sandbox.calls, 'request', doc.hash)).toHaveLength(1);
    const printed = new Set(results.map((r) => r.stdout.trim()));
    expect(printed.size).toBe(1);
    expect(ledgerHashes(configDir, sandbox.url)).toEqual([doc.hash]);
    expect(pendingHashes(configDir, sandbox.url)).toEqual([]);
    expect(leftovers(configDir)).toEqual([]);
  }

  it(`${SAME} processes: exactly one forfait reaches the service, all exit 0`, () => sameFile(false), 60_000);

  it.each([1, 2])(
    `${SAME} processes racing to take over a stale lock (round %i): still exactly one forfait`,
    () => sameFile(true),
    60_000,
  );
});

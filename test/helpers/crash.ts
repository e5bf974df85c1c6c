/**
 * What the crash tests (store/crash*.test.ts) share: a sandbox that answers
 * the request step and forfait after `latencyMs` (the windows the kills aim
 * at), a store logged in to it by a real notarize process, and where and
 * when a kill is aimed.
 */
import { existsSync, readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import type { SandboxCall, SandboxOptions } from '../../src/sandbox/server.js';
import { describeRun, runCli } from './cli.js';
import { cliEnv, type EnvVars } from './env.js';
import { runMain } from './main.js';
import { callsTo, type TestSandbox } from './sandbox.js';
import { storePaths } from './store.js';

/** How long the crash tests' sandbox waits before answering the request step and forfait: the windows kills aim at. */
export const LATENCY_MS = 150;

/** Past this long after the service answered, a living process has certainly saved the session. */
export const SAVE_GRACE_MS = 1000;

/** Where a kill is aimed; each kill is timed at random inside its window. */
export const KILL_TARGETS = [
  'start-up and hashing (0-400 ms after spawn)',
  'request step in flight',
  'just after the request step was answered (0-30 ms)',
  'forfait in flight',
  'just after forfait was answered: writing the store (0-30 ms)',
] as const;
export type KillTarget = (typeof KILL_TARGETS)[number];

/** How the calls of one victim are told apart from the others'. */
export interface VictimCalls {
  isRequest: (call: SandboxCall) => boolean;
  isForfait: (call: SandboxCall) => boolean;
}

/**
 * Waits for the moment a kill aimed at `target` should happen for the victim
 * whose calls `calls` recognises, against a sandbox answering after `latencyMs`.
 */
export async function killMoment(
  sandbox: TestSandbox,
  target: KillTarget,
  calls: VictimCalls,
  latencyMs: number,
  signal: AbortSignal,
): Promise<void> {
  const random = (maxMs: number) => sleep(Math.random() * maxMs, undefined, { signal });
  switch (target) {
    case 'start-up and hashing (0-400 ms after spawn)':
      return random(400);
    case 'request step in flight':
      await sandbox.arrival(calls.isRequest, signal);
      return random(latencyMs - 10);
    case 'just after the request step was answered (0-30 ms)':
      await sandbox.answer(calls.isRequest, signal);
      return random(30);
    case 'forfait in flight':
      await sandbox.arrival(calls.isForfait, signal);
      return random(latencyMs - 10);
    case 'just after forfait was answered: writing the store (0-30 ms)':
      await sandbox.answer(calls.isForfait, signal);
      return random(30);
  }
}

export async function slowSandboxAndStore(
  newSandbox: (options?: SandboxOptions) => Promise<TestSandbox>,
  configDir: string,
  latencyMs: number,
) {
  const sandbox = await newSandbox({
    faults: [
      { route: 'request', kind: 'latency', value: latencyMs },
      { route: 'forfait', kind: 'latency', value: latencyMs },
    ],
  });
  const env = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey });
  const login = await runCli(['login'], env);
  expect(login.code, describeRun(login)).toBe(0);
  return { sandbox, env, paths: storePaths(configDir, sandbox.url) };
}

/** After kills: the store loads (`pending --json` gives a list), with no file reported damaged. */
export async function expectStoreLoads(env: EnvVars): Promise<void> {
  const listing = await runMain(['pending', '--json'], env);
  expect(listing.code, describeRun(listing)).toBe(0);
  expect(Array.isArray(JSON.parse(listing.stdout))).toBe(true);
  expect(listing.stderr).not.toMatch(/damaged/);
}

/** After recovery: no lock, claim or run file is left in `locksDir` (store/lock.ts). */
export function expectNoLocksLeft(locksDir: string): void {
  const names = existsSync(locksDir) ? readdirSync(locksDir) : [];
  expect(
    names.filter((n) => /\.(lock|claim|run)$/.test(n)),
    names.join(' '),
  ).toEqual([]);
}

/** How many forfaits (completions: what is paid for) of each of `hashes` the sandbox has received so far. */
export function forfaitsSent(sandbox: TestSandbox, hashes: Iterable<string>): Map<string, number> {
  return new Map([...hashes].map((hash) => [hash, callsTo(sandbox.calls, 'forfait', hash).length]));
}

/**
 * Each document completed once by the recovery that ran between `before`
 * and `after` (forfaitsSent): none sent for a document whose record the
 * store held when it began (`recorded`), at most one for any other (a
 * killed run's completion may never have had its answer read: the second
 * gets the service's 409). Counted as sent, not as answered 200: the
 * sandbox answers every completion of a recorded hash 409, so a 200 twice
 * cannot happen whatever the client does.
 */
export function expectCompletedOnce(
  before: Map<string, number>,
  after: Map<string, number>,
  recorded: Set<string>,
): void {
  for (const [hash, sent] of after) {
    const again = sent - (before.get(hash) ?? 0);
    expect(again, `forfaits of ${hash} in the recovery`).toBeLessThanOrEqual(recorded.has(hash) ? 0 : 1);
  }
}

/**
 * Issue 3, "The wire": retries with backoff and jitter honouring Retry-After,
 * bounded by --retries and --timeout (and their environment variables);
 * login and the request step retried on network errors, 5xx and 429;
 * forfait retried only when the failure proves the service did not process
 * it, otherwise exit 4 with the session pending and `notarize complete
 * <hash>` in the message. All against the sandbox's injected faults.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Fault } from '../../src/sandbox/server.js';
import { auditSecrets } from '../helpers/audit.js';
import { describeRun as show, runCli as run, type Run as RunResult } from '../helpers/cli.js';
import { makeDocument } from '../helpers/documents.js';
import { cliEnv } from '../helpers/env.js';
import { runMain as exec } from '../helpers/main.js';
import { startRelay } from '../helpers/relay.js';
import { callsTo, useSandboxes, type TestSandbox } from '../helpers/sandbox.js';
import { ledgerHashes, pendingHashes } from '../helpers/store.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

auditSecrets();
// The cases wait (Retry-After seconds, hung steps, backoff) far more than
// they compute, and each has its own sandbox and directories: they run
// concurrently, so the directories go when the file ends, not after each case.
const tempDir = useTempDirs('notarize-test-', afterAll);
const newSandbox = useSandboxes();

interface Setup {
  sandbox: TestSandbox;
  env: NodeJS.ProcessEnv;
  file: string;
  hash: string;
  configDir: string;
}

async function setup(faults: Fault[], extraEnv: Record<string, string | undefined> = {}): Promise<Setup> {
  const sandbox = await newSandbox({ faults });
  const configDir = tempDir();
  const doc = makeDocument(tempDir(), 'doc.txt');
  const env = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey, ...extraEnv });
  return { sandbox, env, file: doc.path, hash: doc.hash, configDir };
}

function routesOf(sandbox: TestSandbox): string[] {
  return sandbox.calls.map((c) => `${c.route}:${c.status}`);
}

/** Milliseconds between the answers to the first two calls of a route. */
function gapMs(sandbox: TestSandbox, route: string): number {
  const times = sandbox.answered.filter((a) => a.call.route === route).map((a) => a.answeredAt);
  return (times[1] ?? NaN) - (times[0] ?? NaN);
}

function expectPendingKept(s: Setup, result: RunResult): void {
  expect(result.code, show(result)).toBe(4);
  expect(pendingHashes(s.configDir, s.sandbox.url)).toEqual([s.hash]);
  expect(ledgerHashes(s.configDir, s.sandbox.url)).toEqual([]);
  expect(result.stderr).toContain(`notarize complete ${s.hash}`);
}

describe.concurrent('login and the request step are retried on network errors, 5xx and 429, then succeed', () => {
  it.each([
    {
      name: 'login: drop, 502, 429 (with Retry-After), 500',
      route: 'login',
      specs: ['drop', 'status=502', 'status=429@1', 'status=500'],
    },
    {
      name: 'request: drop, 500, 429, 503, hang',
      route: 'request',
      specs: ['drop', 'status=500', 'status=429', 'status=503', 'hang'],
    },
    {
      name: 'request: processed but the answer dropped (drop-after), twice',
      route: 'request',
      specs: ['drop-after', 'drop-after'],
    },
  ])(
    '$name',
    async ({ route, specs }) => {
      const faults = specs.map((spec) => {
        const [kind, rest] = spec.split('=');
        const [value, retryAfter] = (rest ?? '').split('@');
        return {
          route,
          kind,
          count: 1,
          ...(value ? { value: Number(value) } : {}),
          ...(retryAfter ? { retryAfter: Number(retryAfter) } : {}),
        } as Fault;
      });
      // Rules apply in order, each to one call: the first attempts meet them one after the other.
      const s = await setup(faults);
      const result = await exec(['register', s.file, '--retries', String(specs.length), '--timeout', '1500'], s.env);
      expect(result.code, show(result)).toBe(0);
      expect(callsTo(s.sandbox.calls, route as 'login')).toHaveLength(specs.length + 1);
      expect(callsTo(s.sandbox.calls, 'forfait')).toHaveLength(1);
      expect(ledgerHashes(s.configDir, s.sandbox.url)).toEqual([s.hash]);
    },
    30_000,
  );

  it('Retry-After is honoured: the retry waits the seconds asked, not the (20 ms) backoff', async () => {
    const s = await setup([{ route: 'request', kind: 'status', value: 503, retryAfter: 1, count: 1 }]);
    const result = await exec(['register', s.file], s.env);
    expect(result.code, show(result)).toBe(0);
    expect(gapMs(s.sandbox, 'request')).toBeGreaterThanOrEqual(950);
  });

  it('a Retry-After longer than notarize will wait (30 s) ends the retries at once: exit 4', async () => {
    const s = await setup([{ route: 'request', kind: 'status', value: 503, retryAfter: 120 }]);
    const result = await exec(['register', s.file], s.env);
    expect(result.code, show(result)).toBe(4);
    expect(callsTo(s.sandbox.calls, 'request')).toHaveLength(1);
    expect(result.ms).toBeLessThan(10_000);
  });

  it('backoff grows exponentially with jitter: waits stay within base x 2^(n-1)', async () => {
    const s = await setup([{ route: 'request', kind: 'status', value: 500, count: 4 }], {
      NOTARIZE_RETRY_DELAY_MS: '100',
    });
    const result = await exec(['register', s.file, '--verbose', '--retries', '4'], s.env);
    expect(result.code, show(result)).toBe(0);
    const waits = [...result.stderr.matchAll(/retry (\d+) in (\d+) ms/g)].map((m) => [Number(m[1]), Number(m[2])]);
    expect(waits.map(([attempt]) => attempt)).toEqual([1, 2, 3, 4]);
    for (const [attempt, wait] of waits) expect(wait).toBeLessThanOrEqual(100 * 2 ** (attempt! - 1));
  });
});

describe.concurrent('retries are bounded by --retries and --timeout, and their environment variables', () => {
  it.each([
    { how: '--retries 2', args: ['--retries', '2'], env: {}, calls: 3 },
    { how: 'NOTARIZE_RETRIES=1', args: [], env: { NOTARIZE_RETRIES: '1' }, calls: 2 },
    { how: '--retries 0', args: ['--retries', '0'], env: { NOTARIZE_RETRIES: '5' }, calls: 1 },
  ])('503 on every request step, $how: $calls attempts, then exit 4', async ({ args, env, calls }) => {
    const s = await setup([{ route: 'request', kind: 'status', value: 503 }], env);
    const result = await exec(['register', s.file, ...args], s.env);
    expect(result.code, show(result)).toBe(4);
    expect(callsTo(s.sandbox.calls, 'request')).toHaveLength(calls);
    expect(pendingHashes(s.configDir, s.sandbox.url)).toEqual([]);
  });

  it.each([
    { how: '--timeout 400', args: ['--timeout', '400'], env: {} },
    { how: 'NOTARIZE_TIMEOUT=400', args: [], env: { NOTARIZE_TIMEOUT: '400' } },
  ])('a hung request step, $how, --retries 2: 3 attempts of 400 ms, exit 4', async ({ args, env }) => {
    const s = await setup([{ route: 'request', kind: 'hang' }], env);
    const result = await exec(['register', s.file, '--retries', '2', ...args], s.env);
    expect(result.code, show(result)).toBe(4);
    expect(callsTo(s.sandbox.calls, 'request')).toHaveLength(3);
    expect(result.stderr).toMatch(/timed out/);
    expect(result.ms).toBeLessThan(8_000);
  });
});

describe.concurrent('forfait is retried only when the service provably did not process it', () => {
  it.each([500, 502, 503, 504])(
    'forfait %i without Retry-After: not retried, exit 4, session pending, told to run `notarize complete <hash>`',
    async (status) => {
      const s = await setup([{ route: 'forfait', kind: 'status', value: status, count: 1 }]);
      const result = await exec(['register', s.file], s.env);
      expectPendingKept(s, result);
      expect(callsTo(s.sandbox.calls, 'forfait')).toHaveLength(1);
      const finish = await exec(['complete', s.hash], s.env);
      expect(finish.code, show(finish)).toBe(0);
      expect(ledgerHashes(s.configDir, s.sandbox.url)).toEqual([s.hash]);
      expect(pendingHashes(s.configDir, s.sandbox.url)).toEqual([]);
    },
  );

  it.each([
    { name: '503 with Retry-After: 1', fault: { kind: 'status', value: 503, retryAfter: 1 }, minGap: 950 },
    { name: '429', fault: { kind: 'status', value: 429 }, minGap: 0 },
    { name: '429 with Retry-After: 1', fault: { kind: 'status', value: 429, retryAfter: 1 }, minGap: 950 },
  ])('forfait $name: retried, then completed once', async ({ fault, minGap }) => {
    const s = await setup([{ route: 'forfait', count: 1, ...fault } as Fault]);
    const result = await exec(['register', s.file], s.env);
    expect(result.code, show(result)).toBe(0);
    const forfaits = callsTo(s.sandbox.calls, 'forfait');
    expect(forfaits.map((c) => c.status)).toEqual([fault.value, 200]);
    expect(gapMs(s.sandbox, 'forfait')).toBeGreaterThanOrEqual(minGap);
    expect(ledgerHashes(s.configDir, s.sandbox.url)).toEqual([s.hash]);
  });

  it('forfait 503 with Retry-After on every call is bounded by --retries: 3 attempts, exit 4, pending', async () => {
    const s = await setup([{ route: 'forfait', kind: 'status', value: 503, retryAfter: 0 }]);
    const result = await exec(['register', s.file, '--retries', '2'], s.env);
    expectPendingKept(s, result);
    expect(callsTo(s.sandbox.calls, 'forfait')).toHaveLength(3);
  });

  it.each([
    { kind: 'drop', processed: false, args: [] },
    { kind: 'drop-after', processed: true, args: [] },
    { kind: 'hang', processed: false, args: ['--timeout', '800'] },
  ])('forfait $kind: never retried (one forfait call), exit 4, session pending', async ({ kind, processed, args }) => {
    const s = await setup([{ route: 'forfait', kind, count: 1 } as Fault]);
    const result = await run(['register', s.file, '--retries', '5', ...args], s.env);
    expectPendingKept(s, result);
    expect(callsTo(s.sandbox.calls, 'forfait')).toHaveLength(1);
    expect(s.sandbox.records.has(s.hash)).toBe(processed);
    const again = await run(['complete', s.hash], s.env);
    if (processed) {
      // The service completed it but the answer was lost: the 409 on the next
      // completion means it went through (exit 0), the verification page is
      // named, and the session is retired, not left pending for ever.
      expect(again.code, show(again)).toBe(0);
      expect(again.stderr).toMatch(/already registered/);
      expect(again.stderr).toContain(`/verification/${s.hash}`);
      expect(pendingHashes(s.configDir, s.sandbox.url)).toEqual([]);
    } else {
      expect(again.code, show(again)).toBe(0);
      expect(ledgerHashes(s.configDir, s.sandbox.url)).toEqual([s.hash]);
    }
    // Never two forfait calls that the service processed.
    expect(callsTo(s.sandbox.calls, 'forfait').filter((c) => c.status === 200)).toHaveLength(processed ? 0 : 1);
  });

  it('a connection refused before anything was sent is retried, and the completion goes through once', async () => {
    const sandbox = await newSandbox();
    const relay = await startRelay(sandbox.url);
    try {
      const configDir = tempDir();
      const doc = makeDocument(tempDir(), 'refused.txt');
      const env = cliEnv(configDir, {
        NOTARIZE_BASE_URL: relay.url,
        NOTARIZE_API_KEY: sandbox.apiKey,
        NOTARIZE_RETRY_DELAY_MS: '400',
      });
      const first = await exec(['register', doc.path, '--no-complete'], env);
      expect(first.code, show(first)).toBe(0);
      await relay.stop();
      let resumed: Promise<void> | undefined;
      const result = await exec(['complete', doc.hash, '--verbose', '--retries', '5'], env, {
        onStderr: (text) => {
          // The first attempt was refused: let the service be reachable again.
          if (!resumed && /retry 1 in/.test(text)) resumed = relay.resume();
        },
      });
      await resumed;
      expect(result.code, show(result)).toBe(0);
      expect(result.stderr).toMatch(/retry 1 in \d+ ms after: .*ECONNREFUSED/);
      expect(callsTo(sandbox.calls, 'forfait', doc.hash)).toHaveLength(1);
      expect(ledgerHashes(configDir, relay.url)).toEqual([doc.hash]);
    } finally {
      await relay.close();
    }
  });
});

describe.concurrent('one client run never completes a registration twice', () => {
  it('a mix of faults on every route: at most one processed forfait per run, and none after a processed one', async () => {
    const s = await setup([
      { route: 'login', kind: 'status', value: 502, count: 1 },
      { route: 'request', kind: 'drop-after', count: 1 },
      { route: 'forfait', kind: 'status', value: 429, count: 1 },
      { route: 'forfait', kind: 'status', value: 503, retryAfter: 0, count: 1 },
      { route: 'forfait', kind: 'drop-after', count: 1 },
    ]);
    const result = await exec(['register', s.file, '--retries', '6'], s.env);
    expectPendingKept(s, result);
    expect(routesOf(s.sandbox)).toEqual([
      'login:502',
      'login:200',
      'request:0',
      'request:200',
      'forfait:429',
      'forfait:503',
      'forfait:0',
    ]);
  });
});

/**
 * What the crash tests (store/crash*.test.ts) start from: a sandbox that
 * answers the request step and forfait after `latencyMs` (the windows the
 * kills aim at), and a store logged in to it by a real notarize process.
 */
import { expect } from 'vitest';
import type { SandboxOptions } from '../../src/sandbox/server.js';
import { describeRun, runCli } from './cli.js';
import { cliEnv } from './env.js';
import type { TestSandbox } from './sandbox.js';
import { storePaths } from './store.js';

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

/**
 * The sandbox as a child process on 127.0.0.1, port 0, exactly as a user
 * starts it (`notarize sandbox --port 0 --json`); its first stdout line is
 * {"url","apiKey"}. Stopped with SIGTERM, then SIGKILL if it lingers.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { BIN } from './paths.js';
import { track } from './proc.js';

/**
 * Starts a sandbox and resolves with { url, apiKey, pid, stop() }; `faults`
 * is its fault book (`notarize sandbox --faults`, e.g. '*:latency=20').
 */
export async function startSandbox({ faults = '' } = {}) {
  const apiKey = `bench_${randomBytes(12).toString('hex')}`;
  const child = spawn(process.execPath, [BIN, 'sandbox', '--port', '0', '--host', '127.0.0.1', '--json'], {
    env: { ...process.env, NOTARIZE_SANDBOX_API_KEY: apiKey, NOTARIZE_SANDBOX_FAULTS: faults },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  track(child);
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const lines = createInterface({ input: child.stdout });
  const first = await Promise.race([
    once(lines, 'line').then(([line]) => line),
    once(child, 'exit').then(() => {
      throw new Error(`the sandbox exited before printing its address: ${stderr.trim()}`);
    }),
    new Promise((_, reject) => setTimeout(() => reject(new Error('the sandbox did not start in 20 s')), 20_000)),
  ]);
  const { url } = JSON.parse(first);
  if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(url)) throw new Error(`unexpected sandbox URL ${url}`);
  // Keep reading so a chatty sandbox never blocks on a full pipe.
  lines.on('line', () => {});
  return {
    url,
    apiKey,
    pid: child.pid,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    },
  };
}

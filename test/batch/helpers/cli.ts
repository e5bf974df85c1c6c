/**
 * Spawning the built `notarize` bin for the batch tests: `process.execPath`
 * (so the suite runs under whichever Node runs vitest), a clean environment
 * built from nothing (PATH, HOME, NO_COLOR=1 and what the test sets: no
 * NOTARIZE_*, CI, GITHUB_* or *_PROXY variable leaks from the parent), a
 * bounded run time, and a guard that every URL handed to the child is on
 * 127.0.0.1.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
export const BIN = join(REPO_ROOT, 'bin', 'notarize.js');

/** What a finished process produced. */
export interface Run {
  args: string[];
  /** The exit code; null when a signal ended the process. */
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Variables for the child on top of PATH, HOME and NO_COLOR=1; undefined values are dropped. */
  env?: Record<string, string | undefined>;
  /** Written to standard input, which is then closed (empty when absent). */
  input?: string | Buffer;
  cwd?: string;
  /** The child is killed and the run rejected after this long (default 30 s). */
  timeoutMs?: number;
}

const LOCAL_URL = /^http:\/\/127\.0\.0\.1:\d+\/?$/;
const URL_VARIABLES = ['NOTARIZE_BASE_URL', 'HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy'];

/** The child's whole environment: PATH, HOME, NO_COLOR=1 and `extra`. Nothing else is inherited. */
export function cleanEnv(extra: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string> = { NO_COLOR: '1' };
  if (process.env.PATH !== undefined) env.PATH = process.env.PATH;
  if (process.env.HOME !== undefined) env.HOME = process.env.HOME;
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) env[key] = value;
  for (const key of URL_VARIABLES) {
    const value = env[key];
    if (value !== undefined && value !== '' && !LOCAL_URL.test(value)) {
      throw new Error(`refusing ${key}=${value}: batch tests talk to servers on 127.0.0.1 only`);
    }
  }
  return env;
}

/** Runs `command args` to completion with a clean environment; rejects only on timeout or spawn failure. */
export function runProcess(command: string, args: string[], options: RunOptions = {}): Promise<Run> {
  const env = cleanEnv(options.env);
  const child = spawn(command, args, { cwd: options.cwd ?? REPO_ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  child.stdin.on('error', () => {
    // The child may exit before reading its input (a usage error): not the test's concern.
  });
  child.stdin.end(options.input ?? '');
  const timeoutMs = options.timeoutMs ?? 30_000;
  return new Promise<Run>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `${command} ${args.join(' ')} did not finish within ${timeoutMs} ms\nstdout: ${Buffer.concat(out).toString()}\nstderr: ${Buffer.concat(err).toString()}`,
        ),
      );
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ args, code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}

/** Runs `notarize ...args` (the built bin under process.execPath). */
export function runNotarize(args: string[], options: RunOptions = {}): Promise<Run> {
  if (!existsSync(join(REPO_ROOT, 'dist', 'cli.js'))) throw new Error('dist/cli.js is missing: run `npm run build`');
  return runProcess(process.execPath, [BIN, ...args], options).then((run) => ({ ...run, args }));
}

/** A message for expect(): the run's output, so a failed assertion shows what happened. */
export function describeRun(run: Run): string {
  return `notarize ${run.args.join(' ')} exited ${run.code}\nstdout: ${run.stdout.slice(0, 4000)}\nstderr: ${run.stderr.slice(0, 4000)}`;
}

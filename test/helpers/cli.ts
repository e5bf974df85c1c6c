/**
 * Spawning the built `notarize` bin (bin/notarize.js -> dist/cli.js) for the
 * e2e tests, with a clean environment: PATH, HOME, NO_COLOR and the NOTARIZE_*
 * variables a test sets, nothing inherited from the parent's NOTARIZE_* vars.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = join(REPO_ROOT, 'bin', 'notarize.js');

/** What a finished run of the bin produced. */
export interface CliResult {
  args: string[];
  /** The exit code; null when a signal ended the process. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** NOTARIZE_* (and other) variables for the child; NOTARIZE_CONFIG_DIR is required. */
  env: Record<string, string | undefined>;
  /** Written to the child's standard input, which is then closed (empty when absent). */
  input?: string | Buffer;
  cwd?: string;
  /** The run is killed (and the promise rejected) after this long; default 20 s. */
  timeoutMs?: number;
  /**
   * NOTARIZE_BASE_URL must be a 127.0.0.1 sandbox, so that no test reaches the
   * real service by forgetting it, unless the test says it knows better: a
   * command that sends nothing (config, --help, usage errors), or a base URL
   * taken from the store or --base-url, which the test set to its sandbox.
   */
  noBaseUrlCheck?: boolean;
}

const LOOPBACK_URL = /^http:\/\/127\.0\.0\.1:\d+$/;

/** The child's environment: PATH, HOME, NO_COLOR=1 and `extra` (undefined values dropped). */
export function cliEnv(extra: Record<string, string | undefined>): Record<string, string> {
  const env: Record<string, string> = { NO_COLOR: '1' };
  if (process.env.PATH !== undefined) env.PATH = process.env.PATH;
  if (process.env.HOME !== undefined) env.HOME = process.env.HOME;
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) env[key] = value;
  return env;
}

function checkEnv(options: RunOptions): Record<string, string> {
  const env = cliEnv(options.env);
  if (!env.NOTARIZE_CONFIG_DIR) throw new Error('runCli: every run needs its own NOTARIZE_CONFIG_DIR');
  const base = env.NOTARIZE_BASE_URL;
  if (base !== undefined && base !== '' && !LOOPBACK_URL.test(base) && !options.noBaseUrlCheck) {
    throw new Error(`runCli: refusing NOTARIZE_BASE_URL=${base}: tests talk to their own 127.0.0.1 sandbox only`);
  }
  if ((base === undefined || base === '') && !options.noBaseUrlCheck) {
    throw new Error(
      'runCli: set NOTARIZE_BASE_URL to the sandbox, or pass noBaseUrlCheck: true when the test sets it otherwise',
    );
  }
  return env;
}

// Two cores: at most two notarize processes per test worker at a time.
const MAX_CONCURRENT = 2;
let running = 0;
const waiting: (() => void)[] = [];

async function slot(): Promise<() => void> {
  if (running >= MAX_CONCURRENT) await new Promise<void>((resolve) => waiting.push(resolve));
  running += 1;
  return () => {
    running -= 1;
    waiting.shift()?.();
  };
}

/** A spawned bin that keeps running (e.g. `notarize sandbox`). */
export interface CliProcess {
  child: ChildProcessWithoutNullStreams;
  /** Resolves with the first complete line of stdout; rejects if the process ends first. */
  firstLine: Promise<string>;
  /** Resolves when the process has exited and its streams are closed. */
  exited: Promise<CliResult>;
}

/** Spawns `node bin/notarize.js ...args`; the caller must make it end (it is killed after timeoutMs). */
export function spawnCli(args: string[], options: RunOptions): CliProcess {
  if (!existsSync(join(REPO_ROOT, 'dist', 'cli.js')))
    throw new Error('dist/cli.js is missing: run `npm run build` first');
  const env = checkEnv(options);
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  let lineResolve: (line: string) => void = () => {};
  let lineReject: (error: Error) => void = () => {};
  const firstLine = new Promise<string>((resolve, reject) => {
    lineResolve = resolve;
    lineReject = reject;
  });
  child.stdout.on('data', (chunk: string) => {
    stdout += chunk;
    const end = stdout.indexOf('\n');
    if (end !== -1) lineResolve(stdout.slice(0, end));
  });
  child.stderr.on('data', (chunk: string) => {
    stderr += chunk;
  });
  child.stdin.on('error', () => {
    // The child may exit before reading its input (e.g. a usage error): not the test's concern.
  });
  child.stdin.end(options.input ?? '');
  const timeoutMs = options.timeoutMs ?? 20_000;
  const exited = new Promise<CliResult>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `notarize ${args.join(' ')} did not finish within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`,
        ),
      );
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      lineReject(new Error(`notarize ended before printing a line; stderr: ${stderr}`));
      resolve({ args, code, signal, stdout, stderr });
    });
  });
  // firstLine may be left unobserved by callers that only await `exited`.
  firstLine.catch(() => undefined);
  return { child, firstLine, exited };
}

/** Runs `node bin/notarize.js ...args` to completion and returns its exit code and output. */
export async function runCli(args: string[], options: RunOptions): Promise<CliResult> {
  const release = await slot();
  try {
    return await spawnCli(args, options).exited;
  } finally {
    release();
  }
}

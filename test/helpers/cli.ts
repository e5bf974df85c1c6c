/**
 * Spawning processes for the e2e and batch tests: the built `notarize` bin
 * (bin/notarize.js -> dist/bundle/cli.js) and the tools it is compared with or run
 * by (sha256sum, bash, script, npm).
 *
 * Every child gets a clean environment built from nothing: PATH, HOME,
 * NO_COLOR=1 and what the test sets, so no NOTARIZE_*, CI, GITHUB_* or
 * *_PROXY variable of the parent (a developer's shell, a CI runner) can
 * change what a test sees. Every URL handed to a child must be on 127.0.0.1,
 * so that no test reaches the real service or a real proxy by mistake. Every
 * run is bounded in time and killed when it overruns.
 *
 * The bin runs under `process.execPath`, not whatever `node` is on PATH, so
 * the suite can be run under another Node binary.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = join(REPO_ROOT, 'bin', 'notarize.js');

/** Any output a run produced, whichever way it was run (spawned, or `main()` in-process). */
export interface Output {
  args: string[];
  /** The exit code; null when a signal ended the process. */
  code: number | null;
  stdout: string;
  stderr: string;
}

/** What a finished process produced. */
export interface Run extends Output {
  signal: NodeJS.Signals | null;
}

export interface RunOptions {
  /** Variables for the child on top of PATH, HOME and NO_COLOR=1; undefined values are dropped. */
  env?: Record<string, string | undefined>;
  /** Written to the child's standard input, which is then closed (empty when absent). */
  input?: string | Buffer;
  /** Default: the repository root. */
  cwd?: string;
  /**
   * The child is killed (and the run rejected, with the output so far) after
   * this long; default 20 s, below vitest's 30 s test timeout, so a hung run is
   * reported with its output rather than as a bare test timeout.
   */
  timeoutMs?: number;
  /**
   * NOTARIZE_BASE_URL must be a 127.0.0.1 server, and a run of the bin must
   * set it, so that no test reaches the real service by forgetting it, unless
   * the test says it knows better: a command that sends nothing (config,
   * hash, completion, --help, usage errors), or a base URL taken from the
   * store or --base-url, which the test set to its sandbox. The *_PROXY
   * variables are checked all the same.
   */
  noBaseUrlCheck?: boolean;
}

const DEFAULT_TIMEOUT_MS = 20_000;
// The loopback range: a proxy on 127.0.0.3 is told apart from the service on 127.0.0.1.
const LOCAL_URL = /^http:\/\/127\.\d{1,3}\.\d{1,3}\.\d{1,3}:\d+\/?$/;
const PROXY_VARIABLES = ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy'];

/**
 * The child's whole environment: PATH, HOME, NO_COLOR=1 and `extra`
 * (undefined values dropped). Nothing else is inherited. Throws when a URL
 * variable (NOTARIZE_BASE_URL, unless `noBaseUrlCheck`, and the proxy
 * variables) points anywhere but 127.0.0.0/8.
 */
export function cleanEnv(
  extra: Record<string, string | undefined> = {},
  options: Pick<RunOptions, 'noBaseUrlCheck'> = {},
): Record<string, string> {
  const env: Record<string, string> = { NO_COLOR: '1' };
  if (process.env.PATH !== undefined) env.PATH = process.env.PATH;
  if (process.env.HOME !== undefined) env.HOME = process.env.HOME;
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) env[key] = value;
  const urlVariables = options.noBaseUrlCheck ? PROXY_VARIABLES : ['NOTARIZE_BASE_URL', ...PROXY_VARIABLES];
  for (const key of urlVariables) {
    const value = env[key];
    if (value !== undefined && value !== '' && !LOCAL_URL.test(value)) {
      throw new Error(`refusing ${key}=${value}: tests talk to servers on 127.0.0.0/8 only`);
    }
  }
  return env;
}

/** The environment of a run of the bin: its own store, and a 127.0.0.1 base URL unless the test knows better. */
function binEnv(options: RunOptions): Record<string, string> {
  const env = cleanEnv(options.env, options);
  if (!env.NOTARIZE_CONFIG_DIR) throw new Error('runCli: every run needs its own NOTARIZE_CONFIG_DIR');
  if (!env.NOTARIZE_BASE_URL && !options.noBaseUrlCheck) {
    throw new Error(
      'runCli: set NOTARIZE_BASE_URL to the sandbox, or pass noBaseUrlCheck: true when the test sets it otherwise',
    );
  }
  return env;
}

// Two cores: at most two processes run to completion per test worker at a time.
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

/** A spawned process that may keep running (e.g. `notarize sandbox`). */
export interface SpawnedProcess {
  child: ChildProcessWithoutNullStreams;
  /** Resolves with the first complete line of stdout; rejects if the process ends first. */
  firstLine: Promise<string>;
  /** Resolves when the process has exited and its streams are closed. */
  exited: Promise<Run>;
}

/**
 * Spawns `command ...argv` with `env`; the result reports `name` and `args`
 * (for the bin: 'notarize' and its arguments, without the script path).
 */
function spawnChild(
  command: string,
  argv: string[],
  env: Record<string, string>,
  options: RunOptions,
  name: string,
  args: string[],
): SpawnedProcess {
  const child = spawn(command, argv, { cwd: options.cwd ?? REPO_ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
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
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const exited = new Promise<Run>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `${name} ${args.join(' ')} did not finish within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`,
        ),
      );
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      lineReject(new Error(`${name} ended before printing a line; stderr: ${stderr}`));
      resolve({ args, code, signal, stdout, stderr });
    });
  });
  // firstLine may be left unobserved by callers that only await `exited`.
  firstLine.catch(() => undefined);
  return { child, firstLine, exited };
}

/** Runs `command ...args` to completion with a clean environment; rejects only on timeout or spawn failure. */
export async function runProcess(command: string, args: string[], options: RunOptions = {}): Promise<Run> {
  const env = cleanEnv(options.env, options);
  const release = await slot();
  try {
    return await spawnChild(command, args, env, options, command, args).exited;
  } finally {
    release();
  }
}

/** Spawns `notarize ...args` (the built bin under process.execPath); the caller must make it end. */
export function spawnCli(args: string[], options: RunOptions): SpawnedProcess {
  if (!existsSync(join(REPO_ROOT, 'dist', 'bundle', 'cli.js'))) {
    throw new Error('dist/bundle/cli.js is missing: run `npm run build` first');
  }
  return spawnChild(process.execPath, [BIN, ...args], binEnv(options), options, 'notarize', args);
}

/** Runs `notarize ...args` to completion and returns its exit code and output. */
export async function runCli(args: string[], options: RunOptions): Promise<Run> {
  const release = await slot();
  try {
    return await spawnCli(args, options).exited;
  } finally {
    release();
  }
}

/** A message for expect(): the run's output, so a failed assertion shows what happened. */
export function describeRun(run: Output): string {
  return `notarize ${run.args.join(' ')} exited ${run.code}\nstdout: ${run.stdout.slice(0, 4000)}\nstderr: ${run.stderr.slice(0, 4000)}`;
}

/**
 * A copy of the built CLI (bin/, dist/bundle/, package.json) under `dir`,
 * made readable by every user, for tests that run notarize as another user:
 * the checkout itself may sit below a private directory (a fresh clone under
 * `mktemp -d`, as in CI) that such a user cannot traverse. The bundle is
 * self-contained, so the copy runs on its own. Returns the copy's bin path.
 */
export function cliCopyForOtherUsers(dir: string): string {
  const app = join(dir, 'notarize-cli');
  mkdirSync(join(app, 'dist'), { recursive: true });
  cpSync(join(REPO_ROOT, 'bin'), join(app, 'bin'), { recursive: true });
  cpSync(join(REPO_ROOT, 'dist', 'bundle'), join(app, 'dist', 'bundle'), { recursive: true });
  cpSync(join(REPO_ROOT, 'package.json'), join(app, 'package.json'));
  chmodSync(dir, 0o755);
  chmodSync(app, 0o755);
  return join(app, 'bin', 'notarize.js');
}

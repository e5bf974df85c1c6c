/**
 * Spawning processes: the built `notarize` bin (bin/notarize.js ->
 * dist/bundle/cli.js; run `npm run build` first) and the tools it is compared
 * with or run by (sha256sum, bash, script, npm). Spawn only where the process
 * boundary is what a test is about; everything else calls `runMain` (main.ts),
 * which gives the same `Run`.
 *
 * Every child gets the environment of env.ts (nothing inherited), and every
 * run is bounded in time and killed when it overruns. The bin runs under
 * `process.execPath`, not whatever `node` is on PATH, so the suite can be run
 * under another Node binary.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { currentFileAudit } from './audit.js';
import { cleanEnv, notarizeEnv, type EnvOptions, type EnvVars } from './env.js';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
/**
 * The notarize executable. NOTARIZE_TEST_BIN may point at another build of
 * it (e.g. one made to a private directory while dist/ is being rebuilt by
 * someone else); by default, this repository's bin/notarize.js.
 */
export const BIN = process.env.NOTARIZE_TEST_BIN ?? join(REPO_ROOT, 'bin', 'notarize.js');
/** The build the executable runs (dist/ beside bin/), for tests that drive one module across processes. */
export const DIST = join(dirname(BIN), '..', 'dist');

/**
 * The bundle's chunk of one module (`store` -> dist/bundle/store-<hash>.js),
 * for a test program that drives that module across processes: the code the
 * bin runs, loaded as fast as the bin loads it (tsc's dist/store/store.js
 * loads zod as a few hundred files: 110 ms a process against 70).
 */
export function bundleChunk(name: string): string {
  const dir = join(DIST, 'bundle');
  const found = readdirSync(dir).filter((file) => file.startsWith(`${name}-`) && /^[\w]+-[\w-]{8}\.js$/.test(file));
  if (found.length !== 1) throw new Error(`expected one ${name}-<hash>.js in ${dir}, found ${JSON.stringify(found)}`);
  return join(dir, found[0]!);
}

/** A stack trace line as Node prints them ("\n    at fn (file:line:col)"). */
export const STACK_LINE = /\n\s+at /;

/** What a run of notarize (spawned, or `main()` in-process) or of another program produced. */
export interface Run {
  args: string[];
  /** The exit code; null when a signal ended the process. */
  code: number | null;
  /** The signal that ended the process; always null in-process. */
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** How long the run took, in milliseconds. */
  ms: number;
}

export interface RunOptions extends EnvOptions {
  /** Written to standard input, which is then closed (empty when absent). */
  input?: string | Buffer;
  /** Called with each piece of stderr as it is written. */
  onStderr?: (text: string) => void;
  /** Spawned runs only: the working directory (default: the repository root). */
  cwd?: string;
  /**
   * Spawned runs only: the child is killed (and the run rejected, with the
   * output so far) after this long; default 20 s, below vitest's 30 s test
   * timeout, so a hung run is reported with its output rather than as a bare
   * test timeout.
   */
  timeoutMs?: number;
  /** Spawned runs of notarize only: shell commands run by bash before it in the same process, e.g. `ulimit -f 2`. */
  shell?: string;
}

const DEFAULT_TIMEOUT_MS = 20_000;

/** A spawned process that may keep running (e.g. `notarize sandbox`). */
export interface SpawnedProcess {
  child: ChildProcessWithoutNullStreams;
  /** Resolves with the first complete line of stdout; rejects if the process ends first. */
  firstLine: Promise<string>;
  /** Resolves with the run when the process has exited and its streams are closed. */
  done: Promise<Run>;
}

/** Spawns `command ...argv` with `env`; the run reports `name` and `args` (for the bin, its arguments only). */
function spawnChild(
  command: string,
  argv: string[],
  env: Record<string, string>,
  options: RunOptions,
  name: string,
  args: string[],
): SpawnedProcess {
  const started = performance.now();
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
    options.onStderr?.(chunk);
  });
  child.stdin.on('error', () => {
    // The child may exit before reading its input (e.g. a usage error): not the test's concern.
  });
  child.stdin.end(options.input ?? '');
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const done = new Promise<Run>((resolve, reject) => {
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
      resolve({ args, code, signal, stdout, stderr, ms: performance.now() - started });
    });
  });
  // firstLine may be left unobserved by callers that only await `done`.
  firstLine.catch(() => undefined);
  return { child, firstLine, done };
}

/** Runs `command ...args` (not notarize: see `runCli`) to completion with `cleanEnv(env)`; rejects only on timeout or spawn failure. */
export function runProcess(command: string, args: string[], env: EnvVars = {}, options: RunOptions = {}): Promise<Run> {
  return spawnChild(command, args, cleanEnv(env, options), options, command, args).done;
}

/**
 * Spawns `notarize ...args` (the built bin under process.execPath) with
 * `notarizeEnv(env)`; the caller must make it end or wait for `done`. The run
 * is recorded for the file's secret audit, when there is one.
 */
export function spawnCli(args: string[], env: EnvVars, options: RunOptions = {}): SpawnedProcess {
  if (!existsSync(join(DIST, 'bundle', 'cli.js'))) {
    throw new Error('dist/bundle/cli.js is missing: run `npm run build` first');
  }
  const childEnv = notarizeEnv(env, options);
  const [command, argv] =
    options.shell === undefined
      ? [process.execPath, [BIN, ...args]]
      : ['bash', ['-c', `${options.shell}; exec "$0" "$@"`, process.execPath, BIN, ...args]];
  const spawned = spawnChild(command, argv, childEnv, options, 'notarize', args);
  spawned.done.then((run) => auditRun(run, childEnv)).catch(() => undefined);
  return spawned;
}

/** Runs `notarize ...args` as a process to completion and returns its exit code and output. */
export function runCli(args: string[], env: EnvVars, options: RunOptions = {}): Promise<Run> {
  return spawnCli(args, env, options).done;
}

/** Records a run of notarize in the file's secret audit (when there is one), with the secrets its environment and store held. */
export function auditRun(run: Run, env: Record<string, string>): void {
  const audit = currentFileAudit();
  if (audit === undefined) return;
  audit.add(env.NOTARIZE_API_KEY);
  audit.add(env.NOTARIZE_TOKEN);
  audit.addStoredTokens(env.NOTARIZE_CONFIG_DIR);
  audit.record(run);
}

/** A message for expect(): the run's output, so a failed assertion shows what happened. */
export function describeRun(run: Run): string {
  return `notarize ${run.args.join(' ')} exited ${run.code ?? run.signal}\nstdout: ${run.stdout.slice(0, 4000)}\nstderr: ${run.stderr.slice(0, 4000)}`;
}

/** Maps `items` through `fn` with at most `limit` running at once (process-spawning tests share 2 cores). */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
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

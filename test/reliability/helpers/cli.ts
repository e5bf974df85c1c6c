/**
 * Running notarize for the reliability suite: as a real process (`node
 * bin/notarize.js`, which imports dist/: run `npm run build` first), or
 * in-process through `main()` with an IO over string buffers when a test
 * needs hundreds of runs. Every output is recorded for the secret audit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { main } from '../../../src/cli.js';
import { IO } from '../../../src/output/io.js';
import { collectStoredTokens, recordOutput, registerSecret } from './audit.js';

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/**
 * The notarize executable. NOTARIZE_TEST_BIN may point at another build of
 * it (e.g. one made to a private directory while dist/ is being rebuilt by
 * someone else); by default, this repository's bin/notarize.js.
 */
const BIN = process.env.NOTARIZE_TEST_BIN ?? fileURLToPath(new URL('../../../bin/notarize.js', import.meta.url));

/** The build the executable runs (dist/ beside bin/), for tests that drive one module across processes. */
export const DIST = join(dirname(BIN), '..', 'dist');

/** The exit codes notarize documents (src/errors.ts EXIT). */
export const DOCUMENTED_EXIT_CODES = [0, 1, 2, 3, 4, 5];

/** A stack trace line, as printed by an uncaught error. */
export const STACK_TRACE = /\n\s+at /;

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * The environment of a run: nothing inherited but PATH, so a developer's own
 * NOTARIZE_* settings or store never leak into a test; HOME points into the
 * store directory so nothing outside it is touched.
 */
export function cliEnv(configDir: string, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: configDir,
    NO_COLOR: '1',
    NOTARIZE_CONFIG_DIR: configDir,
    NOTARIZE_RETRY_DELAY_MS: '20',
    // A closed loopback port unless a test says where the service is: no run may reach the real one.
    NOTARIZE_BASE_URL: 'http://127.0.0.1:9',
  };
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  registerSecret(env.NOTARIZE_API_KEY);
  registerSecret(env.NOTARIZE_TOKEN);
  return env;
}

/**
 * For runs whose base URL may fall back to a default or point off this
 * machine (the very thing under test): any https or non-loopback traffic goes
 * to a closed local proxy port, so even a bug cannot reach the real service.
 */
export const NO_REMOTE_TRAFFIC = {
  HTTPS_PROXY: 'http://127.0.0.1:9',
  HTTP_PROXY: 'http://127.0.0.1:9',
  NO_PROXY: '127.0.0.1,localhost',
};

export interface SpawnOptions {
  stdin?: string;
  /** Kills the process (SIGKILL) if it runs longer; the result then has signal SIGKILL. */
  timeoutMs?: number;
  /** Called with each chunk of stderr as it arrives. */
  onStderr?: (text: string) => void;
  /** Shell commands run (by bash) before notarize in the same process, e.g. `ulimit -f 2` or `umask 000`. */
  shell?: string;
}

/** A started process and the promise of its result. */
export interface Running {
  child: ChildProcess;
  done: Promise<RunResult>;
}

/** Starts `node bin/notarize.js args…`; see `run` to wait for it. */
export function start(args: string[], env: NodeJS.ProcessEnv, options: SpawnOptions = {}): Running {
  const started = performance.now();
  const [command, argv] =
    options.shell === undefined
      ? [process.execPath, [BIN, ...args]]
      : ['bash', ['-c', `${options.shell}; exec "$0" "$@"`, process.execPath, BIN, ...args]];
  const child = spawn(command, argv, { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    stderr += text;
    options.onStderr?.(text);
  });
  child.stdin.on('error', () => {});
  child.stdin.end(options.stdin ?? '');
  const timer =
    options.timeoutMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
  const done = new Promise<RunResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      const result = { code, signal, stdout, stderr, ms: performance.now() - started };
      recordOutput(`notarize ${args.join(' ')}`, stdout, stderr);
      collectStoredTokens(env.NOTARIZE_CONFIG_DIR);
      resolve(result);
    });
  });
  return { child, done };
}

/**
 * How a test runs notarize when the process boundary is not what it tests:
 * in-process by default (fast), as a real process when RELIABILITY_SPAWN=1
 * (slower; the same assertions then hold for the built executable).
 */
export function exec(args: string[], env: NodeJS.ProcessEnv, options: SpawnOptions = {}): Promise<RunResult> {
  if (process.env.RELIABILITY_SPAWN === '1') return run(args, env, options);
  return runMain(args, env, options.stdin ?? '', options.onStderr);
}

/** Runs `node bin/notarize.js args…` to the end. */
export function run(args: string[], env: NodeJS.ProcessEnv, options: SpawnOptions = {}): Promise<RunResult> {
  return start(args, env, { timeoutMs: 25_000, ...options }).done;
}

/** Runs `main()` in this process, with an IO over string buffers and `stdin` as standard input. */
export async function runMain(
  argv: string[],
  env: NodeJS.ProcessEnv,
  stdin: string | Buffer = '',
  onStderr?: (text: string) => void,
): Promise<RunResult> {
  let stdout = '';
  let stderr = '';
  const io = new IO({
    stdout: { write: (text: string) => (stdout += text) },
    stderr: {
      write: (text: string) => {
        stderr += text;
        onStderr?.(text);
      },
    },
    stdin: Readable.from(stdin.length === 0 ? [] : [Buffer.from(stdin)]),
    stdinIsTTY: false,
    stderrIsTTY: false,
    colour: false,
  });
  const started = performance.now();
  const code = await main({ argv, env, io });
  recordOutput(`main ${JSON.stringify(argv)}`, stdout, stderr);
  collectStoredTokens(env.NOTARIZE_CONFIG_DIR);
  return { code, signal: null, stdout, stderr, ms: performance.now() - started };
}

/** A readable description of a result, for assertion messages. */
export function show(result: RunResult): string {
  return `exit ${result.code ?? result.signal}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`;
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

/**
 * Calling `main()` from src/cli.ts in this process, with a buffer IO: the
 * default way to run a command in a test. It gives the same `Run` as a
 * spawned run (cli.ts), so switching between the two is one word.
 *
 * The run shares this process: its environment is the one given (built by
 * env.ts, never process.env, which no test may change), its standard input
 * is `options.input`, and relative paths resolve against the repository root,
 * so tests hand it absolute paths.
 */
import { main } from '../../src/cli.js';
import { auditRun, type Run, type RunOptions } from './cli.js';
import { notarizeEnv, type EnvVars } from './env.js';
import { bufferIO } from './io.js';

/** What an in-process run can be given (no cwd, no timeout, no shell: those need a process). */
export type MainOptions = Pick<RunOptions, 'input' | 'onStderr' | 'noBaseUrlCheck' | 'noProxyCheck'> & {
  /** Pretend standard input is a terminal (default false). */
  stdinIsTTY?: boolean;
  /** Pretend standard output is a terminal (default false). */
  stdoutIsTTY?: boolean;
};

/** Runs `notarize ...args` through `main()` with `notarizeEnv(env)`; recorded for the file's secret audit, when there is one. */
export async function runMain(args: string[], env: EnvVars, options: MainOptions = {}): Promise<Run> {
  const childEnv = notarizeEnv(env, options);
  const buffers = bufferIO({
    stdin: options.input,
    stdinIsTTY: options.stdinIsTTY,
    stdoutIsTTY: options.stdoutIsTTY,
    onStderr: options.onStderr,
  });
  const started = performance.now();
  const code = await main({ argv: [...args], env: childEnv, io: buffers.io });
  const run: Run = {
    args,
    code,
    signal: null,
    stdout: buffers.stdout(),
    stderr: buffers.stderr(),
    ms: performance.now() - started,
  };
  auditRun(run, childEnv);
  return run;
}

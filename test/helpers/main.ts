/**
 * Calling `main()` from src/cli.ts in-process, with a buffer IO and a clean
 * environment (this bed's store and sandbox plus what the test adds; nothing
 * from the parent's NOTARIZE_* variables).
 */
import { main } from '../../src/cli.js';
import type { Bed } from './bed.js';
import type { Output } from './cli.js';
import { bufferIO } from './io.js';

export interface MainRun {
  env?: Record<string, string | undefined>;
  stdin?: string | Buffer;
}

/** Runs `notarize ...argv` in this process and returns its exit code and output (also recorded in the bed). */
export async function runMain(bed: Bed, argv: string[], options: MainRun = {}): Promise<Output> {
  const buffers = bufferIO(options.stdin === undefined ? {} : { stdin: options.stdin });
  const env: NodeJS.ProcessEnv = { NO_COLOR: '1' };
  for (const [key, value] of Object.entries(bed.env(options.env))) if (value !== undefined) env[key] = value;
  const code = await main({ argv, env, io: buffers.io });
  const output = { args: argv, code, stdout: buffers.stdout(), stderr: buffers.stderr() };
  bed.record(output);
  return output;
}

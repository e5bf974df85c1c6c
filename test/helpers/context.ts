/**
 * The real Context (store, settings, API client, ledger) over a buffer IO,
 * for calling a command's run function in process against a bed's sandbox
 * and store: tests build the run's small options object from it, as the
 * command's action does, and read what was printed from the buffers.
 */
import { onTestFinished } from 'vitest';
import { Context } from '../../src/context.js';
import * as storeModule from '../../src/store/store.js';
import type { Bed } from './bed.js';
import { bufferIO, type BufferIO, type BufferIOOptions } from './io.js';

export interface TestContext extends BufferIO {
  ctx: Context;
}

/**
 * A context for the bed's store and sandbox (plus `env`), closed after the
 * test. Its outputs are recorded in the bed when read with `record()`.
 */
export function contextFor(
  bed: Bed,
  options: BufferIOOptions & { env?: Record<string, string | undefined>; json?: boolean } = {},
): TestContext {
  const buffers = bufferIO(options);
  const env: NodeJS.ProcessEnv = { NO_COLOR: '1' };
  for (const [key, value] of Object.entries(bed.env(options.env))) if (value !== undefined) env[key] = value;
  const ctx = new Context(buffers.io, env, options.json ? { json: true } : {}, storeModule);
  // Closed by the test that made it: a hook at this module's top level would
  // belong only to the first file that loads it when files share modules.
  onTestFinished(() => ctx.close());
  return { ...buffers, ctx };
}

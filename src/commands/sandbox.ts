/**
 * `notarize sandbox`: runs the local emulator of the service in the
 * foreground until SIGINT/SIGTERM. It is how a newcomer tries notarize
 * without an account, and the server the tests and the README demo use.
 */
import type { Command } from 'commander';
import { once } from 'node:events';
import { z } from 'zod';
import type { Context } from '../context.js';
import { cleanSecret } from '../secrets.js';
import { isLoopbackHost } from '../settings.js';
import { UsageError } from '../errors.js';
import { handleSignalsInCommand } from '../interrupt.js';
import { present, type ValueResult } from '../output/present.js';
import { FAULT_SPEC_HELP, parseFaults } from '../sandbox/faults.js';
import { startSandbox } from '../sandbox/server.js';
import { finish, viewWithoutTables } from './action.js';
import { examples, parseOptions } from './options.js';

const optionsSchema = z.object({
  // Plain digits only: coercion would read '' as 0 (a random port) and 0x50 as 80.
  port: z
    .string()
    .trim()
    .refine((v) => /^\d{1,5}$/.test(v) && Number(v) <= 65535, 'expected a port number from 0 to 65535 (0: a free one)')
    .transform(Number)
    .default(8787),
  host: z.string().default('127.0.0.1'),
  faults: z.string().optional(),
});

/** What `sandbox` uses: where to listen, the faults to inject, and the key to accept. */
export interface SandboxOptions extends z.infer<typeof optionsSchema> {
  /** NOTARIZE_SANDBOX_FAULTS: the faults when --faults is not given. */
  envFaults: string | undefined;
  /** NOTARIZE_SANDBOX_API_KEY, raw: the key to accept (default: a random one). */
  envApiKey: string | undefined;
  /** Called once the sandbox listens, with its URL and key: shown while it runs. */
  onListening: (result: ValueResult) => Promise<void> | void;
  /** Resolves when the sandbox should stop; default: SIGINT or SIGTERM. */
  stopped?: Promise<unknown>;
}

export function configure(command: Command, context: () => Context): void {
  command
    .option('-p, --port <n>', 'port to listen on (0 picks a free one)', '8787')
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('--faults <rules>', 'inject faults (see below; also NOTARIZE_SANDBOX_FAULTS)')
    .addHelpText(
      'after',
      `\nImplements every documented endpoint with the documented shapes and quirks, in memory.
It prints its URL and an API key that works with it (NOTARIZE_SANDBOX_API_KEY sets the key;
one equal to NOTARIZE_API_KEY is printed [redacted], as every secret of yours is: unset it);
with --json, one JSON line {"url","apiKey"}. It runs until SIGINT or SIGTERM, then stops
and exits 0: a stop asked for, so \`kill %1; wait\` in a script under \`set -e\` goes on.

${FAULT_SPEC_HELP}
${examples([
  'notarize sandbox',
  'notarize sandbox --port 0 --json',
  "notarize sandbox --faults 'forfait:status=503@1*2,*:latency=100'",
  '# CI: rehearse the pipeline against a sandbox in the background',
  'notarize sandbox --port 0 --json > sandbox.json & sleep 1',
])}`,
    )
    .action(async (raw: unknown) => {
      const ctx = context();
      const flags = parseOptions(optionsSchema, raw, command);
      const view = await viewWithoutTables(ctx);
      const result = await runSandbox({
        ...flags,
        envFaults: ctx.env.NOTARIZE_SANDBOX_FAULTS,
        envApiKey: ctx.env.NOTARIZE_SANDBOX_API_KEY,
        onListening: (listening) => present(view, listening),
      });
      await finish(view, result);
    });
}

/**
 * The line that shows how to use the sandbox, with a base URL notarize
 * accepts: plain http goes to a loopback address only (settings.ts), so a
 * sandbox on every address (0.0.0.0, ::) is named by its loopback one, and
 * one on another address is said to be out of notarize's reach.
 */
export function tryLine(url: string): string {
  const listening = new URL(url);
  if (!isLoopbackHost(listening.hostname)) {
    if (listening.hostname !== '0.0.0.0' && listening.hostname !== '[::]') {
      return `notarize sends credentials over plain http to a loopback address only: this sandbox, on ${listening.hostname}, is for other clients`;
    }
    listening.hostname = listening.hostname === '0.0.0.0' ? '127.0.0.1' : '[::1]';
  }
  const base = listening.origin;
  return `try: NOTARIZE_BASE_URL=${base} NOTARIZE_API_KEY=<the key> notarize register <file>`;
}

/** Serves until a signal arrives (or `stopped` resolves), then closes cleanly. */
export async function runSandbox(options: SandboxOptions): Promise<ValueResult> {
  const spec = options.faults ?? options.envFaults;
  let faults;
  try {
    faults = spec ? parseFaults(spec) : [];
  } catch (error) {
    throw new UsageError((error as Error).message, { hint: 'see `notarize sandbox --help` for the fault syntax' });
  }
  const apiKey = cleanSecret(options.envApiKey);
  let sandbox;
  try {
    sandbox = await startSandbox({
      host: options.host,
      port: options.port,
      faults,
      ...(apiKey === undefined ? {} : { apiKey }),
    });
  } catch (error) {
    throw listenError(error, options.host, options.port);
  }
  // Listen for the signals before printing the URL: a supervisor may stop us
  // as soon as it has read it, and must get a clean stop, not a killed process.
  const stop = new AbortController();
  const stopped = options.stopped ?? signalled(stop.signal);
  const { url } = sandbox;
  await options.onListening({
    kind: 'value',
    json: { url, apiKey: sandbox.apiKey },
    text: {
      data: `notarize sandbox listening on ${url}\nAPI key: ${sandbox.apiKey}`,
      info: [tryLine(url)],
    },
    ...(faults.length > 0 ? { info: [`injecting ${faults.length} fault rule(s)`] } : {}),
  });
  await stopped;
  stop.abort();
  await sandbox.close();
  return { kind: 'value', info: ['sandbox stopped'] };
}

/** Resolves on the first SIGINT or SIGTERM, handled by this command instead of the entry point. */
function signalled(abort: AbortSignal): Promise<unknown> {
  // The entry point's handlers would end the process at once (interrupt.ts): this command stops itself.
  handleSignalsInCommand();
  const signals = ['SIGINT', 'SIGTERM'] as const;
  return Promise.race(signals.map((signal) => once(process, signal, { signal: abort }).catch(() => undefined)));
}

/**
 * What the user can do about a failure to listen: the address is the user's
 * choice (--host, --port), so these are usage errors (exit 2), one line each.
 */
export function listenError(error: unknown, host: string, port: number): unknown {
  const code = (error as { code?: unknown }).code;
  const address = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const other = 'choose another with --port, or --port 0 for a free one';
  switch (code) {
    case 'EADDRINUSE':
      return new UsageError(`cannot listen on ${address}: port ${port} is already in use`, {
        code: 'listen',
        hint: `another sandbox may be running; ${other}`,
        cause: error,
      });
    case 'EACCES':
    case 'EPERM':
      return new UsageError(`cannot listen on ${address}: permission denied`, {
        code: 'listen',
        hint: `ports below 1024 usually need privileges; ${other}`,
        cause: error,
      });
    case 'EADDRNOTAVAIL':
      return new UsageError(`cannot listen on ${address}: ${host} is not an address of this machine`, {
        code: 'listen',
        hint: 'use --host 127.0.0.1 (the default)',
        cause: error,
      });
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return new UsageError(`cannot listen on ${address}: unknown host ${host}`, {
        code: 'listen',
        hint: 'use --host 127.0.0.1 (the default)',
        cause: error,
      });
    default:
      if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) {
        return new UsageError(`cannot listen on ${address}: ${code}`, {
          code: 'listen',
          hint: `check --host and --port; ${other}`,
          cause: error,
        });
      }
      return error;
  }
}

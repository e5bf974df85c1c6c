/**
 * `notarize complete <hash>`: forfait for a pending registration, with the
 * session from the store, from --session, or the active subscription.
 */
import type { Command } from 'commander';
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { parseAnswer, type ApiClient } from '../api/client.js';
import { subscriptionSessionSchema } from '../api/schemas.js';
import type { Context } from '../context.js';
import { normalizeHash } from '../core/hash.js';
import { complete, type SessionSource } from '../core/notarize.js';
import { readTextInput } from '../core/read-input.js';
import { NotarizeError, UsageError } from '../errors.js';
import type { IO } from '../output/io.js';
import type { OutcomeResult } from '../output/present.js';
import type { ServiceStore } from '../store/service-store.js';
import { finish, viewOf } from './action.js';
import { examples, parseOptions } from './options.js';

export const optionsSchema = z.object({
  session: z.string().optional(),
  useActiveSubscription: z.boolean().default(false),
  description: z.string().optional(),
});

/** What `complete` uses: the hash, where the session comes from, and the service. */
export interface CompleteOptions extends z.infer<typeof optionsSchema> {
  /** The digest as given (checked by the run). */
  hash: string;
  /** Standard input (--session -), and the spinner. */
  io: IO;
  baseUrl: () => string;
  api: () => Promise<ApiClient>;
  ledger: () => ServiceStore;
}

export function configure(command: Command, context: () => Context): void {
  command
    .argument('<hash>', 'SHA-256 digest of the registration to complete (64 hex digits)')
    .option('--session <file|->', 'take the subscription session JSON from a file or standard input')
    .option(
      '--use-active-subscription',
      'use the active subscription (GET /api/v2/payment/subscription/active) as the session',
    )
    .addHelpText(
      'after',
      `\nThe session is sent to the service exactly as it was received (or given), byte for byte.
A 409 is read as "the service already has this hash" (an assumption: its status codes are
undocumented): exit 0, already-registered, and the pending session is retired (kept aside
in the store's retired/ folder, never sent again). A session given with --session or
--use-active-subscription is not kept when the service answers 404 (it does not know the hash).
${examples([
  'notarize complete 905d4f33b218427e8371341674a913db02402f648fef6cdf47c16f65d2dd3001',
  'notarize complete <hash> --session session.json --json',
  '# CI: finish every registration left pending by an earlier job',
  "notarize pending --json | jq -r '.[].hash' | xargs -n1 notarize complete --quiet",
])}`,
    )
    .action(async (hash: string, raw: unknown) => {
      const ctx = context();
      const flags = parseOptions(optionsSchema, raw, command);
      const result = await runComplete({
        ...flags,
        hash,
        io: ctx.io,
        baseUrl: () => ctx.baseUrl,
        api: () => ctx.api(),
        ledger: () => ctx.ledger,
      });
      finish(viewOf(ctx), result);
    });
}

async function readSession(from: string, stdin: Readable): Promise<string> {
  // No session comes near 1 MiB; anything larger is not one.
  const json = await readTextInput(from, stdin, 1024 * 1024, 'the session');
  try {
    parseAnswer(json, subscriptionSessionSchema, 'session');
  } catch (error) {
    // A session given by hand is local input: a bad one is a usage error.
    if (error instanceof NotarizeError) throw new UsageError(`invalid --session: ${error.message}`, { cause: error });
    throw error;
  }
  return json;
}

/** Completes a pending registration and returns what the flow did; throws NotarizeError subclasses for main() to map. */
export async function runComplete(options: CompleteOptions): Promise<OutcomeResult> {
  const hash = normalizeHash(options.hash);
  if (options.session !== undefined && options.useActiveSubscription) {
    throw new UsageError('give either --session or --use-active-subscription, not both');
  }
  const baseUrl = options.baseUrl();
  let source: SessionSource = { kind: 'store' };
  if (options.session !== undefined)
    source = { kind: 'given', json: await readSession(options.session, options.io.stdin) };
  else if (options.useActiveSubscription) source = { kind: 'active-subscription' };
  const spinner = options.io.spinner('completing');
  try {
    const outcome = await complete({ api: await options.api(), store: options.ledger() }, hash, source);
    return { kind: 'outcome', outcome, baseUrl };
  } finally {
    spinner.stop();
  }
}

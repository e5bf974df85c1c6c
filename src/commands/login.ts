/**
 * `notarize login`: exchange an API key for a token and store it (0600).
 * The key comes from NOTARIZE_API_KEY, standard input, or a hidden prompt,
 * never from argv, where other users of the machine could read it.
 */
import type { Command } from 'commander';
import { z } from 'zod';
import type { Context } from '../context.js';
import { readTextInput } from '../core/read-input.js';
import { cleanSecret } from '../core/secrets.js';
import { describeToken, isExpired, readClaims } from '../core/token.js';
import { AuthError, UsageError } from '../errors.js';
import { promptHidden } from '../output/prompt.js';
import { examples, parseOptions } from './options.js';

const optionsSchema = z.object({ apiKeyStdin: z.boolean().default(false) });

export function configure(command: Command, context: () => Context): void {
  command
    .option('--api-key-stdin', 'read the API key from standard input')
    .addHelpText(
      'after',
      `\nThe API key is read from NOTARIZE_API_KEY, from standard input (--api-key-stdin), or
from a hidden prompt on a terminal; never from the command line. The token is stored in
credentials.json (mode 0600) in the store directory (see \`notarize config path\`).
${examples([
  'notarize login',
  '# CI: the key from a secret, on standard input (never as an argument)',
  'printf %s "$NOTARIZE_KEY" | notarize login --api-key-stdin',
])}`,
    )
    .action(async (raw: unknown) => {
      await runLogin(context(), parseOptions(optionsSchema, raw, command));
    });
}

async function obtainKey(ctx: Context, fromStdin: boolean): Promise<string> {
  if (fromStdin) {
    if (ctx.io.stdinIsTTY)
      throw new UsageError('--api-key-stdin reads standard input, but it is a terminal', { hint: 'pipe the key in' });
    return cleanSecret(await readTextInput('-', ctx.io.stdin, 64 * 1024, 'the API key')) ?? '';
  }
  const fromEnv = cleanSecret(ctx.env.NOTARIZE_API_KEY);
  if (fromEnv !== undefined) return fromEnv;
  if (!ctx.io.stdinIsTTY || ctx.env.CI) {
    const why = ctx.io.stdinIsTTY ? 'CI is set' : 'standard input is not a terminal';
    throw new AuthError(`no API key: ${why}, so notarize will not prompt`, {
      hint: 'set NOTARIZE_API_KEY, or pipe the key into `notarize login --api-key-stdin`',
    });
  }
  try {
    return cleanSecret(await promptHidden('API key: ', ctx.io.stdin, process.stderr)) ?? '';
  } catch {
    throw new UsageError('login cancelled');
  }
}

/** Logs in and stores the token; prints who is logged in and until when. */
export async function runLogin(ctx: Context, options: z.infer<typeof optionsSchema>): Promise<void> {
  const baseUrl = ctx.baseUrl;
  // Open the credentials file first: a damaged one must stop us before the
  // key is sent, not after (the token would be thrown away).
  ctx.store.getToken(baseUrl);
  const apiKey = await obtainKey(ctx, options.apiKeyStdin);
  if (apiKey === '') throw new UsageError('the API key is empty');
  ctx.io.addSecret(apiKey);
  const token = await (await ctx.api()).login(apiKey);
  ctx.io.addSecret(token);
  if (isExpired(token)) {
    throw new AuthError('the service answered with a token that has already expired; it was not stored', {
      hint: "check this machine's clock, then log in again",
    });
  }
  await ctx.store.setToken(baseUrl, token);
  const claims = readClaims(token);

  if (ctx.globals.json) {
    ctx.io.data(
      JSON.stringify({
        baseUrl,
        email: claims?.email ?? null,
        userId: claims?.userId ?? null,
        expiresAt: claims?.exp === undefined ? null : new Date(claims.exp * 1000).toISOString(),
      }),
    );
    return;
  }
  // A message, not data: --quiet silences it (--json gives the same as data).
  ctx.io.info(`logged in to ${baseUrl} as ${describeToken(token)}`);
}

/** `notarize logout`: forget the token stored for the current service. */
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { cleanSecret } from '../core/secrets.js';
import { examples } from './options.js';

export function configure(command: Command, context: () => Context): void {
  command.addHelpText(
    'after',
    examples(['notarize logout', '# CI: leave no token behind on a shared runner', 'notarize logout --quiet']),
  );
  command.action(async () => {
    await runLogout(context());
  });
}

export async function runLogout(ctx: Context): Promise<void> {
  const baseUrl = ctx.baseUrl;
  const had = await ctx.store.deleteToken(baseUrl);
  ctx.io.info(had ? `logged out of ${baseUrl}` : `no token was stored for ${baseUrl}`);
  if (cleanSecret(ctx.env.NOTARIZE_TOKEN) !== undefined)
    ctx.io.warn('NOTARIZE_TOKEN is set in the environment and is still used');
}

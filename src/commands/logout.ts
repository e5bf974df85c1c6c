/** `notarize logout`: forget the token stored for the current service. */
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { cleanSecret } from '../secrets.js';
import type { ValueResult } from '../output/present.js';
import { otherNamesWarning, type Store } from '../store/store.js';
import { finish, viewWithoutTables } from './action.js';
import { examples } from './options.js';

/** What `logout` uses: the store and the service the token is for, and NOTARIZE_TOKEN (still used when set). */
export interface LogoutOptions {
  baseUrl: () => string;
  store: () => Store;
  /** NOTARIZE_TOKEN, raw. */
  envToken: string | undefined;
}

export function configure(command: Command, context: () => Context): void {
  command.addHelpText(
    'after',
    '\nIt forgets the token of the current service only: a store logged in to several keeps the others (log out of each).\n' +
      'No logout is sent: the service documents none, so the token still works there until it expires\n' +
      '(its exp, about 10 hours after the login): a copy of it elsewhere stays usable until then.',
  );
  command.addHelpText(
    'after',
    examples(['notarize logout', '# CI: leave no token behind on a shared runner', 'notarize logout --quiet']),
  );
  command.action(async () => {
    const ctx = context();
    const options = { baseUrl: () => ctx.baseUrl, store: () => ctx.store, envToken: ctx.env.NOTARIZE_TOKEN };
    await finish(await viewWithoutTables(ctx), await runLogout(options));
  });
}

/** Forgets the stored token of the service, and says whether there was one. */
export async function runLogout(options: LogoutOptions): Promise<ValueResult> {
  const baseUrl = options.baseUrl();
  const store = options.store();
  // Counted before the rewrite, which leaves the old file (the token in it) to its other names.
  const otherNames = store.credentialsOtherNames();
  const had = await store.deleteToken(baseUrl);
  const warnings = [
    ...(cleanSecret(options.envToken) === undefined
      ? []
      : ['NOTARIZE_TOKEN is set in the environment and is still used']),
    ...(had && otherNames !== undefined
      ? [otherNamesWarning(store.credentialsPath, otherNames, 'this token, and every other it held then,')]
      : []),
  ];
  return {
    kind: 'value',
    info: [had ? `logged out of ${baseUrl}` : `no token was stored for ${baseUrl}`],
    ...(warnings.length === 0 ? {} : { warnings }),
  };
}

/**
 * `notarize login`: exchange an API key for a token and store it (0600).
 * The key comes from NOTARIZE_API_KEY, standard input, or a hidden prompt,
 * never from argv, where other users of the machine could read it.
 */
import type { Command } from 'commander';
import { z } from 'zod';
import type { ApiClient } from '../api/client.js';
import type { Context } from '../context.js';
import { loginRefusedHint } from '../core/credentials.js';
import { inCI } from '../environment.js';
import { decodeUtf8, readBytesInput } from '../core/read-input.js';
import { cleanSecret, keyTrace } from '../secrets.js';
import { describeToken, expiryIso, isExpired, readClaims } from '../core/token.js';
import { AuthError, ServiceRefusedError, UsageError } from '../errors.js';
import type { IO } from '../output/io.js';
import type { ValueResult } from '../output/present.js';
import { promptHidden } from '../output/prompt.js';
import type { Store } from '../store/store.js';
import { finish, viewWithoutTables } from './action.js';
import { examples, parseOptions } from './options.js';

const optionsSchema = z.object({ apiKeyStdin: z.boolean().default(false) });

/** What `login` uses: where the key may come from, and the service and store the token is for. */
export interface LoginOptions extends z.infer<typeof optionsSchema> {
  /** Standard input and the prompt, and the secrets never to print. */
  io: IO;
  /** NOTARIZE_API_KEY, raw. */
  envApiKey: string | undefined;
  /** Whether CI is set: no prompt then, even on a terminal. */
  ci: boolean;
  baseUrl: () => string;
  store: () => Store;
  api: () => Promise<ApiClient>;
}

export function configure(command: Command, context: () => Context): void {
  command
    .option('--api-key-stdin', 'read the API key from standard input')
    .addHelpText(
      'after',
      `\nThe API key is read from NOTARIZE_API_KEY, from standard input (--api-key-stdin), or
from a hidden prompt on a terminal; never from the command line. The token is stored in
credentials.json (mode 0600) in the store directory (see \`notarize config path\`).
A refused login is exit 3 whatever its status; a 404 or 405 is read as no login at the
base URL (an assumption: the service documents no status), and the hint says to check it.
A key holding a control character (a NUL, an escape) is refused before it is sent, exit 2:
the service documents no key format, but no key holds one (an assumption).
${examples([
  'notarize login',
  '# CI: the key from a secret, on standard input (never as an argument)',
  'printf %s "$NOTARIZE_KEY" | notarize login --api-key-stdin',
])}`,
    )
    .action(async (raw: unknown) => {
      const ctx = context();
      const flags = parseOptions(optionsSchema, raw, command);
      const result = await runLogin({
        ...flags,
        io: ctx.io,
        envApiKey: ctx.env.NOTARIZE_API_KEY,
        ci: inCI(ctx.env),
        baseUrl: () => ctx.baseUrl,
        store: () => ctx.store,
        api: () => ctx.api(),
      });
      await finish(await viewWithoutTables(ctx), result);
    });
}

async function obtainKey(options: LoginOptions): Promise<string> {
  const { io } = options;
  if (options.apiKeyStdin) {
    if (io.stdinIsTTY)
      throw new UsageError('--api-key-stdin reads standard input, but it is a terminal', { hint: 'pipe the key in' });
    const bytes = await readBytesInput('-', io.stdin, 64 * 1024, 'the API key', 0, '--api-key-stdin');
    // Strict: a key saved as UTF-16, or with a byte that is not UTF-8, would be sent garbled and
    // refused as "not valid" by the service, where the fault is the file's.
    return cleanSecret(decodeUtf8(bytes, 'the API key with --api-key-stdin').text) ?? '';
  }
  const fromEnv = cleanSecret(options.envApiKey);
  if (fromEnv !== undefined) return fromEnv;
  if (!io.stdinIsTTY || options.ci) {
    const why = io.stdinIsTTY ? 'CI is set' : 'standard input is not a terminal';
    throw new AuthError(`no API key: ${why}, so notarize will not prompt`, {
      hint: 'set NOTARIZE_API_KEY, or pipe the key into `notarize login --api-key-stdin`',
    });
  }
  let typed: string;
  try {
    typed = await promptHidden('API key: ', io.stdin, process.stderr);
  } catch {
    // Ctrl-C at the prompt (raw mode: a character, not a signal) ends the run as Ctrl-C does
    // anywhere else: the signal's own way out (exit 130, one line), when the CLI listens for it.
    if (process.listenerCount('SIGINT') > 0) {
      process.kill(process.pid, 'SIGINT');
      // The signal is handled on a later turn of the event loop, which this timer keeps going.
      await new Promise((resolve) => setTimeout(resolve, 10_000));
    }
    throw new UsageError('login cancelled');
  }
  const key = cleanSecret(typed);
  // Said for the terminal it was typed at, not as for an empty CI secret (runLogin).
  if (key === undefined) {
    throw new AuthError('no API key was typed', {
      hint: 'run `notarize login` again and type or paste the key at the prompt, which does not show it',
    });
  }
  return key;
}

/**
 * The token the service gives for `apiKey`. A refusal of any status is no
 * usable credentials (exit 3), said as the key refused (not a proxy's 407,
 * whose own error names what to fix), as when a command logs in on the fly
 * (core/credentials.ts): the service documents none of its statuses, and a
 * bad key may well earn a 400.
 */
async function loginWith(api: ApiClient, apiKey: string): Promise<string> {
  try {
    return await api.login(apiKey);
  } catch (error) {
    // A 401 or 403 is the key refused here, not a token to renew: its own hint ("log in again") would
    // send the user round to the very command that failed.
    if (!(error instanceof ServiceRefusedError || (error instanceof AuthError && error.status !== 407))) throw error;
    throw new AuthError(`the login was refused: ${error.message}`, {
      ...(error.status === undefined ? {} : { status: error.status }),
      hint: loginRefusedHint(error.status, 'check the API key'),
      cause: error,
    });
  }
}

/** Logs in and stores the token; returns who is logged in and until when. */
export async function runLogin(options: LoginOptions): Promise<ValueResult> {
  const { io } = options;
  const baseUrl = options.baseUrl();
  const store = options.store();
  // Open the credentials file first: a damaged one must stop us before the
  // key is sent, not after (the token would be thrown away).
  store.getToken(baseUrl);
  const apiKey = await obtainKey(options);
  // No key is no credentials (exit 3), as a blank NOTARIZE_API_KEY is: most often a CI secret this
  // job cannot see (a fork's pull request), piped in as the login's --help shows.
  if (apiKey === '') {
    throw new AuthError('the API key is empty', {
      hint: 'give the key (a CI secret may be unavailable to this job, e.g. on a pull request from a fork)',
    });
  }
  io.addSecret(apiKey, 'the API key given');
  const token = await loginWith(await options.api(), apiKey);
  io.addSecret(token, 'the token the service sent');
  if (isExpired(token)) {
    throw new AuthError('the service answered with a token that has already expired; it was not stored', {
      hint: "check this machine's clock, then log in again",
    });
  }
  await store.setToken(baseUrl, token, keyTrace(apiKey));
  const claims = readClaims(token);
  return {
    kind: 'value',
    json: {
      baseUrl,
      email: claims?.email ?? null,
      userId: claims?.userId ?? null,
      expiresAt: claims?.exp === undefined ? null : (expiryIso(claims.exp) ?? null),
    },
    // A message, not data: --quiet silences it (--json gives the same as data).
    text: { info: [`logged in to ${baseUrl} as ${describeToken(token)}`] },
  };
}

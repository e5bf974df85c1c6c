/**
 * The GitHub Action (action.yml at the repository root): the runner's
 * inputs become a notarize command line, run in this process by main(), and
 * its results become the step's outputs. Bundled into action/index.mjs,
 * which is committed, so that a workflow runs it with the runner's own Node
 * and no install or build step (.ci/run checks that it matches the sources).
 *
 * The API key goes from the `api-key` input to main()'s environment
 * (NOTARIZE_API_KEY), never onto a command line (there is no child
 * process); given from a secret, the runner masks it in the log. Results
 * are written as NDJSON to a file named by the `results` output; the job
 * summary and the annotations of failed documents are notarize's own
 * (GITHUB_ACTIONS=true, output/github.ts).
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, closeSync, mkdtempSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { insideDir } from './path-spelling.js';
import { addEnvironmentSecrets, main, processIO } from './cli.js';
import { proxySecrets } from './api/proxy-env.js';
import { keyDigest } from './secrets.js';
import { KEY_REFUSED, NO_LOGIN_THERE } from './core/credentials.js';
import { EXIT, type ErrorJson, type ExitCode } from './errors.js';
import { errorCommand, type Redact } from './output/github.js';

export const ACTION_COMMANDS = ['register', 'verify'] as const;

/** An input as the runner passes it: INPUT_<NAME>, upper-cased, spaces as '_', hyphens kept; trimmed. */
export function input(env: NodeJS.ProcessEnv, name: string): string {
  return (env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] ?? '').trim();
}

/** The notarize arguments for the action's inputs; throws Error with a one-line message for bad inputs. */
export function actionArgv(env: NodeJS.ProcessEnv): string[] {
  const command = input(env, 'command');
  if (!(ACTION_COMMANDS as readonly string[]).includes(command)) {
    throw new Error(`input command must be register or verify, not '${command}'`);
  }
  // One path a line, so that names with spaces need no quoting. A path is a file's name, never
  // standard input: notarize reads `-` as stdin even after `--`, so a file named `-` is given as `./-`.
  const paths = input(env, 'paths')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .map((line) => (line === '-' ? './-' : line));
  if (paths.length === 0) throw new Error('input paths names no document: give one path a line');
  const holding = paths.find((path) => insideDir(path)(join(runnerTemp(env), 'notarize-')));
  if (holding !== undefined) {
    throw new Error(
      `input paths names ${holding}, which holds the runner's temporary folder (RUNNER_TEMP), where the action keeps ` +
        "its results, the job's stores (the token among them) and the runner its output files, none of them a " +
        'document: put the documents in a folder of their own (such as `${{ runner.temp }}/dist`) and name that',
    );
  }
  const argv = [command, '--recursive', '--output', 'ndjson'];
  // Each value in the word of its option: whatever it holds (`--base-url=...`, `-V`) is that value.
  const description = input(env, 'description');
  if (description !== '' && command === 'register') argv.push(`--description=${description}`);
  const receiptDir = input(env, 'receipt-dir');
  // The job's stores are there unless the workflow names its own (the CLI refuses a receipt folder holding that).
  if (receiptDir !== '' && !env.NOTARIZE_CONFIG_DIR && insideDir(receiptDir)(join(runnerTemp(env), 'notarize-'))) {
    // Receipts travel (an artifact upload of the folder), and the token would travel with them (r108).
    throw new Error(
      `input receipt-dir ${receiptDir} holds the runner's temporary folder (RUNNER_TEMP), where the action keeps ` +
        "the job's stores (the token among them), which would travel with the receipts: give the receipts a folder " +
        'of their own (such as `${{ runner.temp }}/receipts`)',
    );
  }
  if (receiptDir !== '') argv.push(`--receipt-dir=${receiptDir}`);
  const baseUrl = input(env, 'base-url');
  if (baseUrl !== '') argv.push(`--base-url=${baseUrl}`);
  // Split on white space, never through a shell: nothing in it is expanded or run.
  const extra = input(env, 'args');
  const words = extra === '' ? [] : extra.split(/\s+/);
  for (const word of words) {
    // Short flags may come together (-qh): each letter is one.
    const flags = /^-[A-Za-z0-9]{2,}$/.test(word) ? [...word.slice(1)].map((letter) => `-${letter}`) : [word];
    for (const flag of flags) {
      const refused = REFUSED_ARGS.find(([name]) => flag === name || flag.startsWith(`${name}=`));
      if (refused) throw new Error(`input args cannot hold ${refused[0]}: ${refused[1]}`);
    }
  }
  return [...argv, ...words, '--', ...paths];
}

/** Where the help is: notarize is no npm package, a `run:` step installs it as docs/ci.md does. */
const HELP_IS_NO_RUN =
  'help is not a run; see `notarize register --help` in a `run:` step (docs/ci.md installs notarize there)';

/**
 * Arguments the action cannot pass on, each with why: the step's outputs
 * are read from notarize's NDJSON (another format, or help text, would
 * leave a run that registered and paid with no outputs and a failed step),
 * and a job cannot run `notarize complete` afterwards (sessions left
 * pending would die with the runner's store). Refused before anything runs.
 */
const REFUSED_ARGS: readonly (readonly [string, string])[] = [
  ['--output', 'the action reads its outputs from NDJSON, and its results file holds them (the `results` output)'],
  ['--json', 'the action reads its outputs from NDJSON, and its results file holds them (the `results` output)'],
  ['--no-complete', 'the action cannot complete sessions later; run notarize in a `run:` step for that'],
  ['--help', HELP_IS_NO_RUN],
  ['-h', HELP_IS_NO_RUN],
  ['--version', 'the version is not a run'],
  ['-V', 'the version is not a run'],
];

/** Each line of notarize's NDJSON results, parsed once (a run may give 100,000); NOT_JSON for a line that is not JSON. */
export function resultLines(ndjson: string): unknown[] {
  return ndjson
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as unknown;
      } catch {
        return NOT_JSON;
      }
    });
}

const NOT_JSON = Symbol('not JSON');

/** The results that are documents: not the paths skipped before any (a link, say). */
function documentResults(lines: unknown[]): { status: string; verificationUrl?: string }[] {
  return lines
    .map((value): { status: string; verificationUrl?: string } => {
      // Never a crash after a run that may have paid: a line that is not a result counts as a failure.
      if (typeof value === 'object' && value !== null && typeof (value as { status?: unknown }).status === 'string') {
        return value as { status: string; verificationUrl?: string };
      }
      return { status: 'failed' };
    })
    .filter((r) => r.status !== 'skipped');
}

/** The step's outputs from the results (resultLines). */
export function actionOutputs(lines: unknown[], resultsPath: string): Record<string, string> {
  const documents = documentResults(lines);
  const count = (...statuses: string[]) => String(documents.filter((r) => statuses.includes(r.status)).length);
  const one = documents.length === 1 ? documents[0]!.verificationUrl : undefined;
  return {
    results: resultsPath,
    registered: count('registered', 'already-registered'),
    verified: count('verified'),
    failed: count('failed', 'modified', 'unknown', 'invalid'),
    'verification-url': one ?? '',
  };
}

/**
 * Appends outputs to $GITHUB_OUTPUT in the runner's multi-line form, with a
 * delimiter no value contains; each value redacted of the run's secrets.
 */
export function writeOutputs(file: string, outputs: Record<string, string>, redact: Redact): void {
  for (const [name, value] of Object.entries(outputs)) {
    const delimiter = `notarize_${randomBytes(16).toString('hex')}`;
    appendFileSync(file, `${name}<<${delimiter}\n${redact(value)}\n${delimiter}\n`);
  }
}

const STORE_NAME = 'notarize-store';

/** A name storeName gives a key's store: the digest's length taken from keyDigest, not spelled again. */
const KEYED_STORE_NAME = new RegExp(`^${STORE_NAME}-[0-9a-f]{${keyDigest('').length}}$`);

/**
 * The job's store for a step with `apiKey`: one per key, so that a step
 * with another key (another account) never completes on the token a step
 * before it stored; named by the key's digest (keyDigest, the one credentials.json keeps beside a
 * token), which says nothing of it.
 */
export function storeName(apiKey: string): string {
  return apiKey === '' ? STORE_NAME : `${STORE_NAME}-${keyDigest(apiKey)}`;
}

/**
 * The job's store a step uses (see storeName), and, when it cannot tell
 * which, what to say. A `verify` step needs no key (it sends nothing), but
 * the ledger it falls back on is in the store of the key the job's
 * `register` step had: without a key of its own it reads that store when
 * the job has one keyed store (before, it read the keyless one, empty, and
 * a document registered a step earlier was `unknown`).
 */
export function jobStore(runnerTemp: string, key: string, command: string): { dir: string; warning?: string } {
  const own = { dir: join(runnerTemp, storeName(key)) };
  if (key !== '' || command !== 'verify') return own;
  let keyed: string[];
  try {
    keyed = readdirSync(runnerTemp).filter((name) => KEYED_STORE_NAME.test(name));
  } catch {
    return own;
  }
  if (keyed.length === 1) return { dir: join(runnerTemp, keyed[0]!) };
  if (keyed.length === 0) return own;
  return {
    ...own,
    warning:
      `this job has ${keyed.length} stores (one per api-key of its register steps), and this verify step no api-key ` +
      'to choose: give it the api-key of the register step whose ledger it should read (verify sends nothing)',
  };
}

/** The runner's temporary folder, where the action keeps its files (the system's outside a runner). */
function runnerTemp(env: NodeJS.ProcessEnv): string {
  return env.RUNNER_TEMP || tmpdir();
}

/** Runs the action: the exit code is notarize's (2 for inputs it cannot use). */
export async function runAction(env: NodeJS.ProcessEnv = process.env): Promise<ExitCode> {
  const apiKey = input(env, 'api-key');
  const temp = runnerTemp(env);
  const store = env.NOTARIZE_CONFIG_DIR
    ? undefined
    : jobStore(temp, apiKey || (env.NOTARIZE_API_KEY ?? '').trim(), input(env, 'command'));
  const notarizeEnv = {
    ...env,
    ...(apiKey !== '' ? { NOTARIZE_API_KEY: apiKey } : {}),
    // The job's own store (sessions, ledger, token) in the runner's temporary folder, which the
    // runner empties after each job: never ~/.config, which a self-hosted runner keeps for the
    // next job of any repository. One path for the whole job and key, so that a step run again
    // after a failure finds the sessions and trees the first try left (a second try of --aggregate
    // would otherwise plant and pay a new root). A workflow that sets NOTARIZE_CONFIG_DIR chooses its own.
    // The key is the input's, else the workflow's NOTARIZE_API_KEY: either way, one store per key.
    ...(store ? { NOTARIZE_CONFIG_DIR: store.dir } : {}),
  };
  // notarize's IO, made first: its secrets (the key, a proxy's password, and the token once it
  // logs in) are scrubbed from every line the action writes too, as it is, before %-encoding.
  let results: number | undefined;
  const io = processIO(notarizeEnv, {
    stdout: { write: (text: string) => (results === undefined ? true : writeSync(results, text)) },
  });
  addEnvironmentSecrets(io, notarizeEnv);
  for (const { secret, name } of proxySecrets(notarizeEnv)) io.addSecret(secret, name);
  const redact: Redact = (text) => io.redact(text);
  const fail = (message: string) => process.stderr.write(`${errorCommand(`notarize action: ${message}`, redact)}\n`);
  if (store?.warning !== undefined) io.warn(`notarize action: ${store.warning}`);
  let argv: string[];
  try {
    argv = actionArgv(env);
  } catch (error) {
    fail((error as Error).message);
    return EXIT.usage;
  }
  let resultsPath: string;
  try {
    resultsPath = join(mkdtempSync(join(temp, 'notarize-')), 'results.ndjson');
    results = openSync(resultsPath, 'w', 0o600);
  } catch (error) {
    // Before anything is sent: no stack trace, one line saying what to fix.
    fail(
      `cannot create its results file under RUNNER_TEMP (${temp}): ${errnoOf(error)}; nothing was sent: ` +
        'run it as a step of a GitHub Actions job, or set RUNNER_TEMP to a directory that exists and can be written',
    );
    return EXIT.usage;
  }
  const code = await main({ argv, env: notarizeEnv, io });
  closeSync(results);
  const lines = resultLines(readFileSync(resultsPath, 'utf8'));
  if (code === EXIT.auth) {
    const keyFrom = apiKey !== '' ? 'input' : (env.NOTARIZE_API_KEY ?? '').trim() !== '' ? 'environment' : undefined;
    const advice = authAdvice(lines, { keyFrom, tokenSet: (env.NOTARIZE_TOKEN ?? '').trim() !== '' });
    if (advice !== undefined) fail(advice);
  }
  if (code === EXIT.protocol && argv[0] === 'register' && namesLaterCommands(lines)) {
    // notarize's hint names `notarize complete` or `pending drop`, which the action does not run, on a
    // store whose path it chose: where that store is, for a later `run:` step of the job.
    const where = notarizeEnv.NOTARIZE_CONFIG_DIR;
    fail(
      'an answer of the service could not be used (exit 5): the action runs register and verify only, and running ' +
        'this step again does not send that session again on its own; the commands notarize names above ' +
        `(\`notarize complete\`, \`notarize pending drop\`) finish it from a later \`run:\` step of this job with ` +
        `NOTARIZE_CONFIG_DIR=${where ?? '<the store the workflow set>'} (the job's store), notarize installed ` +
        'in that step as docs/ci.md shows (the action brings none to `run:` steps)',
    );
  }
  if (code !== EXIT.ok && documentResults(lines).length === 0) {
    // Stopped before any document (notarize refused an input, a setting or the store; paths skipped
    // before it, links say, are no documents): as for the action's own inputs, one ::error:: line on
    // the run's page and no outputs, never `failed=0`.
    if (code !== EXIT.auth) fail(`notarize stopped before any document, exit ${code}: see its message above`);
    return code;
  }
  const outputs = actionOutputs(lines, resultsPath);
  if (!env.GITHUB_OUTPUT) return code;
  try {
    writeOutputs(env.GITHUB_OUTPUT, outputs, redact);
  } catch (error) {
    // After the run, which may have registered and paid: what it did is kept, and said, on one line.
    const receiptDir = input(env, 'receipt-dir');
    const done =
      argv[0] === 'register'
        ? `notarize ended with exit ${code}, ${outputs.registered} registered and ${outputs.failed} failed (registrations done are kept: ` +
          `the results are in ${resultsPath}${receiptDir !== '' ? `, the receipts in ${receiptDir}` : ''})`
        : `notarize ended with exit ${code}, ${outputs.verified} verified and ${outputs.failed} failed (the results are in ${resultsPath})`;
    fail(
      `${done}, but the step's outputs could not be written to GITHUB_OUTPUT (${env.GITHUB_OUTPUT}): ${errnoOf(error)}; ` +
        'check that GITHUB_OUTPUT names a file the step can append to',
    );
    // The documented exit 1 (something was sent, or done, and did not end well locally), unless notarize's says worse.
    return code === EXIT.ok ? EXIT.failed : code;
  }
  return code;
}

/**
 * Whether a failed result's hint names a command the action does not run
 * (`notarize complete`, `notarize pending drop`): a session or request step
 * kept that a later run of the step does not send again. Not, say, a login
 * answered unreadably, after which nothing is kept and the step run again
 * does it all.
 */
function namesLaterCommands(lines: unknown[]): boolean {
  return errorsIn(lines).some((error) =>
    /`notarize (complete|pending drop)\b/.test(`${error.message} ${error.hint ?? ''}`),
  );
}

/** The errors of notarize's failed results (resultLines); a line that is no result, actionOutputs counts as failed. */
function errorsIn(lines: unknown[]): ErrorJson[] {
  const errors: ErrorJson[] = [];
  for (const value of lines) {
    const error = typeof value === 'object' && value !== null ? (value as { error?: ErrorJson }).error : undefined;
    if (typeof error === 'object' && error !== null && typeof error.message === 'string') errors.push(error);
  }
  return errors;
}

/**
 * The action's own line after notarize's exit 3, or undefined when it has
 * nothing to add. notarize's hints name its own ways to give a key
 * (NOTARIZE_API_KEY, `notarize login`), which in a workflow are the
 * `api-key` input: that is said, from the exit-3 errors notarize put in the
 * results (`lines`: resultLines), only when one of them is about the key (the key
 * refused, or none given where one was needed). Any other (a NOTARIZE_TOKEN
 * that cannot be used, a proxy that wants credentials, a clock that makes
 * tokens expire) is notarize's to explain, in its message and annotations,
 * and is never blamed on the input. `keyFrom`: where the run's key came
 * from, if it had one; `tokenSet`: NOTARIZE_TOKEN is set (notarize uses it
 * before the key, so a token the service refuses may be that one).
 */
export function authAdvice(
  lines: unknown[],
  { keyFrom, tokenSet }: { keyFrom: 'input' | 'environment' | undefined; tokenSet: boolean },
): string | undefined {
  const errors = errorsIn(lines).filter((error) => error.exitCode === EXIT.auth);
  const where =
    keyFrom === 'environment'
      ? 'check the NOTARIZE_API_KEY the workflow sets, or give the `api-key` input (from a secret)'
      : 'check the `api-key` input (from a secret)';
  const noLogin = '`notarize login` does not apply to an action';
  if (errors.length === 0) {
    // Stopped before any document: notarize's own message, above, says what failed.
    return `notarize could not authenticate (exit 3), see its message above; in a workflow the API key is the \`api-key\` input (from a secret), and ${noLogin}`;
  }
  const refused = errors.filter((e) => e.message.startsWith(KEY_REFUSED));
  // A login answered 404 or 405: most likely no login at the base URL, which the key would not mend.
  if (refused.some((e) => e.hint?.startsWith(NO_LOGIN_THERE))) {
    return "the service has no login at the base URL: check the `base-url` input (the service's address without /api/v2/)";
  }
  if (refused.length > 0) return `the API key was refused: ${where}; ${noLogin}`;
  const namesKey = (e: ErrorJson) => /NOTARIZE_API_KEY|`notarize login`/.test(`${e.message} ${e.hint ?? ''}`);
  if (!errors.some(namesKey)) return undefined;
  return keyFrom === undefined
    ? `no API key was given: set the \`api-key\` input (from a secret; ${noLogin})`
    : `the service refused the run's credentials (see notarize's message above): ` +
        `${tokenSet ? 'NOTARIZE_TOKEN is set and is used before the API key: check it or unset it, else ' : ''}${where}; ${noLogin}`;
}

/** A file system error's code (ENOENT...), else its message: one line, no stack. */
function errnoOf(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
}

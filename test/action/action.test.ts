/**
 * The GitHub Action (action.yml, src/github-action.ts, the committed
 * action/index.mjs) run as the runner runs it (test/action/runner.ts):
 * register then verify against the sandbox through the action's own steps,
 * its outputs and job summary, and the API key nowhere but in its input.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginRefusedHint } from '../../src/core/credentials.js';
import {
  ACTION_COMMANDS,
  actionArgv,
  actionOutputs,
  authAdvice,
  resultLines,
  storeName,
} from '../../src/github-action.js';
import { Bed } from '../helpers/bed.js';
import { describeRun, REPO_ROOT, STACK_LINE } from '../helpers/cli.js';
import { parseNdjson } from '../helpers/results.js';
import { ACTION, runActionStep, type StepRun } from './runner.js';

let bed: Bed;
let url = '';
let apiKey = '';
const hashes: Record<string, string> = {};
let registered: StepRun;

beforeAll(async () => {
  bed = await Bed.create();
  url = bed.sandbox.url;
  apiKey = bed.sandbox.apiKey;
  for (const name of ['app.tar.gz', 'notes.txt']) hashes[name] = await bed.write(`dist/${name}`, `artifact ${name}\n`);
  registered = await runActionStep(
    bed.workDir,
    { command: 'register', paths: 'dist', 'receipt-dir': 'receipts', 'base-url': url, 'api-key': apiKey },
    { NOTARIZE_CONFIG_DIR: bed.path('build-store') },
  );
});
afterAll(async () => {
  await bed?.finish();
});

/** Everything a step left that someone could read: its output streams, outputs, summary and results. */
function everythingPrinted(step: StepRun): string {
  const results =
    step.outputs.results && existsSync(step.outputs.results) ? readFileSync(step.outputs.results, 'utf8') : '';
  return [step.run.stdout, step.run.stderr, JSON.stringify(step.outputs), step.summary, results].join('\n');
}

describe('action.yml', () => {
  it('is a JavaScript action on Node 24 whose main file is committed, with the inputs and outputs its code uses', () => {
    expect(ACTION.runs.using).toBe('node24');
    expect(existsSync(join(REPO_ROOT, ACTION.runs.main))).toBe(true);
    const source = readFileSync(join(REPO_ROOT, 'src', 'github-action.ts'), 'utf8');
    const read = [...source.matchAll(/input\(env, '([a-z-]+)'\)/g)].map((m) => m[1]);
    expect([...new Set(read)].sort()).toEqual(Object.keys(ACTION.inputs).sort());
    expect(Object.keys(actionOutputs([], 'r')).sort()).toEqual(Object.keys(ACTION.outputs).sort());
    expect(ACTION.inputs.command!.default).toBe('register');
    expect(ACTION_COMMANDS).toEqual(['register', 'verify']);
  });

  it('turns inputs into one notarize command line, never through a shell', () => {
    const env = {
      INPUT_COMMAND: 'register',
      INPUT_PATHS: ' dist \n\n my file.pdf\n',
      INPUT_DESCRIPTION: 'release 1.2',
      'INPUT_RECEIPT-DIR': 'receipts',
      'INPUT_BASE-URL': 'http://127.0.0.1:9',
      INPUT_ARGS: '--concurrency 4  $(rm -rf ~)',
      'INPUT_API-KEY': 'never-in-argv',
    };
    expect(actionArgv(env)).toEqual([
      'register',
      '--recursive',
      '--output',
      'ndjson',
      '--description=release 1.2',
      '--receipt-dir=receipts',
      '--base-url=http://127.0.0.1:9',
      '--concurrency',
      '4',
      '$(rm',
      '-rf',
      '~)',
      '--',
      'dist',
      'my file.pdf',
    ]);
    expect(() => actionArgv({ ...env, INPUT_COMMAND: 'deploy' })).toThrow(
      "input command must be register or verify, not 'deploy'",
    );
    expect(() => actionArgv({ ...env, INPUT_PATHS: '\n' })).toThrow('input paths names no document');
    // A path names a file, never standard input (which notarize reads `-` as, after `--` too).
    expect(actionArgv({ ...env, INPUT_PATHS: '-\n./-\n-x' }).slice(-3)).toEqual(['./-', './-', '-x']);
  });
});

// Before the block below, which stops the sandbox.
describe('the action: what it refuses, where it keeps its store', () => {
  it('args the outputs or the job cannot live with: refused, exit 2, nothing sent', async () => {
    for (const args of ['--output json', '--output=table', '--json', '--concurrency 2 --no-complete', '-h', '-qh', '-0h', '-qV', '--version']) {
      expect(() => actionArgv({ INPUT_COMMAND: 'register', INPUT_PATHS: 'dist', INPUT_ARGS: args }), args).toThrow(
        /^input args cannot hold (--output|--json|--no-complete|-h|-V|--version): /,
      );
    }
    // Outputs never crash on a line that is no result (it counts as failed).
    expect(actionOutputs(resultLines('{"status":"registered"}\nUsage: notarize\n[1]\n'), 'r')).toMatchObject({ registered: '1', failed: '2' });
    // A word that only starts like one is passed on (it is notarize's to judge).
    expect(actionArgv({ INPUT_COMMAND: 'register', INPUT_PATHS: 'dist', INPUT_ARGS: '--jsonx' })).toContain('--jsonx');
    const before = bed.mark();
    const step = await runActionStep(
      bed.workDir,
      { command: 'register', paths: 'dist', 'base-url': url, 'api-key': apiKey, args: '--output json' },
      { NOTARIZE_CONFIG_DIR: bed.path('args-store') },
    );
    expect(step.run.code, describeRun(step.run)).toBe(2);
    expect(step.run.stderr).toMatch(/^::error::notarize action: input args cannot hold --output: [^\n]*\n$/);
    expect(step.outputs).toEqual({});
    expect(bed.callsSince(before)).toEqual([]);
  });

  it('with no NOTARIZE_CONFIG_DIR, keeps its store (token included) under RUNNER_TEMP, never in HOME', async () => {
    const home = bed.path('runner-home');
    mkdirSync(home);
    await bed.write('home-run/doc.txt', 'a document of the job with no store set\n');
    const step = await runActionStep(
      bed.path('home-run'),
      { command: 'register', paths: 'doc.txt', 'base-url': url, 'api-key': apiKey },
      { HOME: home },
    );
    expect(step.run.code, describeRun(step.run)).toBe(0);
    expect(step.outputs.registered).toBe('1');
    expect(readdirSync(home)).toEqual([]);
    // One path for the job and key: a step run again finds what the first try left; a step with
    // another key (another account) never uses the token this one stored.
    expect(existsSync(join(step.runnerTemp, storeName(apiKey), 'credentials.json'))).toBe(true);
    expect(storeName(apiKey)).toMatch(/^notarize-store-[0-9a-f]{16}$/);
    expect(storeName(`${apiKey}x`)).not.toBe(storeName(apiKey));
    expect(storeName('')).toBe('notarize-store');
    expect(readdirSync(step.runnerTemp).join(' ')).not.toContain(apiKey);
    // The key from the workflow's env: (no input) names the store the same way.
    await bed.write('home-run/env.txt', 'a document of a step whose key is in env\n');
    const fromEnv = await runActionStep(
      bed.path('home-run'),
      { command: 'register', paths: 'env.txt', 'base-url': url },
      { HOME: home, NOTARIZE_API_KEY: apiKey },
    );
    expect(fromEnv.run.code, describeRun(fromEnv.run)).toBe(0);
    expect(existsSync(join(fromEnv.runnerTemp, storeName(apiKey), 'credentials.json'))).toBe(true);
  });

  it("verify with no api-key reads the ledger of the job's register step; with two keys' stores, says which to give", async () => {
    const home = bed.path('job-home');
    const temp = bed.path('job-runner-temp');
    mkdirSync(home);
    mkdirSync(temp);
    await bed.write('job/dist/s.txt', 'registered, then verified in the same job\n');
    const job = { HOME: home, RUNNER_TEMP: temp };
    const register = await runActionStep(
      bed.path('job'),
      { command: 'register', paths: 'dist', 'base-url': url, 'api-key': apiKey },
      job,
    );
    expect(register.run.code, describeRun(register.run)).toBe(0);
    const verify = () => runActionStep(bed.path('job'), { command: 'verify', paths: 'dist', 'base-url': url }, job);
    const verified = await verify();
    expect(verified.run.code, describeRun(verified.run)).toBe(0);
    expect(verified.outputs.verified).toBe('1');
    // A second key's store in the job (another account): which ledger is not guessed.
    mkdirSync(join(temp, storeName(`${apiKey}-other`)));
    const ambiguous = await verify();
    expect(ambiguous.run.code, describeRun(ambiguous.run)).toBe(6);
    expect(ambiguous.run.stderr).toContain(
      'notarize action: this job has 2 stores (one per api-key of its register steps), and this verify step no api-key to choose',
    );
  });

  it('exit 5: says where the job\'s store is, for the commands notarize names, which the action does not run', async () => {
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'wrong-shape', count: 1 }]);
    await bed.write('shape/odd.txt', 'a document whose completion is answered oddly\n');
    const store = bed.path('odd-store');
    const step = await runActionStep(
      bed.path('shape'),
      { command: 'register', paths: 'odd.txt', 'base-url': url, 'api-key': apiKey },
      { NOTARIZE_CONFIG_DIR: store },
    );
    expect(step.run.code, describeRun(step.run)).toBe(5);
    expect(step.run.stderr).toContain(
      '::error::notarize action: an answer of the service could not be used (exit 5): the action runs register and verify only',
    );
    expect(step.run.stderr).toContain(
      `later \`run:\` step of this job with NOTARIZE_CONFIG_DIR=${store} (the job's store), notarize installed in ` +
        'that step as docs/ci.md shows (the action brings none to `run:` steps)',
    );
  });

  it("paths holding RUNNER_TEMP (the action's results, the job's stores, the runner's files): exit 2, nothing sent", async () => {
    // As on a runner whose artifacts are built in runner.temp: walked, its results file and
    // stores were registered and paid for, and their receipts failed every run after.
    await bed.write('temp-job/_temp/dist/app.tar.gz', 'built into the runner temp folder\n');
    const job = { NOTARIZE_CONFIG_DIR: bed.path('temp-job-store'), RUNNER_TEMP: bed.path('temp-job/_temp') };
    for (const paths of ['_temp', '.', `${bed.path('temp-job')}/./_temp/`, '/']) {
      const before = bed.mark();
      const step = await runActionStep(
        bed.path('temp-job'),
        { command: 'register', paths, 'base-url': url, 'api-key': apiKey, 'receipt-dir': 'receipts' },
        job,
      );
      expect(step.run.code, describeRun(step.run)).toBe(2);
      expect(step.run.stderr).toMatch(
        /^::error::notarize action: input paths names [^\n]*, which holds the runner's temporary folder \(RUNNER_TEMP\)[^\n]*name that\n$/,
      );
      expect(step.outputs).toEqual({});
      expect(bed.callsSince(before)).toEqual([]);
    }
    // A folder of its own inside it: registered, as any.
    const own = await runActionStep(
      bed.path('temp-job'),
      { command: 'register', paths: '_temp/dist', 'base-url': url, 'api-key': apiKey },
      job,
    );
    expect(own.run.code, describeRun(own.run)).toBe(0);
    expect(own.outputs.registered).toBe('1');
  });

  it("receipt-dir holding RUNNER_TEMP (the job's stores, the token among them): exit 2, nothing sent", async () => {
    // r108: receipt-dir set to runner.temp put the receipts beside the job's store, and an upload of them shipped the token.
    await bed.write('rt-receipts/dist/app.tar.gz', 'receipts asked for in the runner temp folder\n');
    const job = { RUNNER_TEMP: bed.path('rt-receipts/_temp'), HOME: bed.path('rt-receipts') };
    mkdirSync(bed.path('rt-receipts/_temp'));
    for (const receiptDir of ['_temp', '.', bed.path('rt-receipts/_temp')]) {
      const before = bed.mark();
      const step = await runActionStep(
        bed.path('rt-receipts'),
        { command: 'register', paths: 'dist', 'base-url': url, 'api-key': apiKey, 'receipt-dir': receiptDir },
        job,
      );
      expect(step.run.code, describeRun(step.run)).toBe(2);
      expect(step.run.stderr).toMatch(
        /^::error::notarize action: input receipt-dir [^\n]* holds the runner's temporary folder \(RUNNER_TEMP\)[^\n]*\n$/,
      );
      expect(step.outputs).toEqual({});
      expect(bed.callsSince(before)).toEqual([]);
    }
    // A folder of its own inside it: written, as any.
    const own = await runActionStep(
      bed.path('rt-receipts'),
      { command: 'register', paths: 'dist', 'base-url': url, 'api-key': apiKey, 'receipt-dir': '_temp/receipts' },
      job,
    );
    expect(own.run.code, describeRun(own.run)).toBe(0);
    expect(readdirSync(bed.path('rt-receipts/_temp/receipts'))).toEqual(['app.tar.gz.notarization.json']);
    // The workflow's own store elsewhere (NOTARIZE_CONFIG_DIR): no store of the job's is there (r109).
    await bed.write('rt-receipts/dist2/lib.tar.gz', 'receipts in the runner temp folder, the store elsewhere\n');
    const named = await runActionStep(
      bed.path('rt-receipts'),
      { command: 'register', paths: 'dist2', 'base-url': url, 'api-key': apiKey, 'receipt-dir': '_temp' },
      { ...job, NOTARIZE_CONFIG_DIR: bed.path('rt-receipts-store') },
    );
    expect(named.run.code, describeRun(named.run)).toBe(0);
    expect(readdirSync(bed.path('rt-receipts/_temp'))).toContain('lib.tar.gz.notarization.json');
  });

  it('exit 5 with nothing kept (a login answered unreadably): no line saying a re-run does not help; the re-run does it', async () => {
    bed.sandbox.addFaults([{ route: 'login', kind: 'truncated', count: 1 }]);
    await bed.write('cut/doc.txt', 'a document whose login answer is cut short\n');
    const runStep = () =>
      runActionStep(
        bed.path('cut'),
        { command: 'register', paths: 'doc.txt', 'base-url': url, 'api-key': apiKey },
        { NOTARIZE_CONFIG_DIR: bed.path('cut-store') },
      );
    const step = await runStep();
    expect(step.run.code, describeRun(step.run)).toBe(5);
    expect(step.run.stderr).not.toContain('running this step again does not send');
    const again = await runStep();
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.outputs.registered).toBe('1');
  });

  it('refused for want of a key: says to give the api-key input', async () => {
    const step = await runActionStep(
      bed.workDir,
      { command: 'register', paths: 'dist', 'base-url': url },
      { NOTARIZE_CONFIG_DIR: bed.path('keyless-store') },
    );
    expect(step.run.code, describeRun(step.run)).toBe(3);
    expect(step.run.stderr).toContain(
      '::error::notarize action: no API key was given: set the `api-key` input (from a secret; `notarize login` does not apply to an action)',
    );
  });

  it('a refused key: says the key was refused, and to check the api-key input', async () => {
    const step = await runActionStep(
      bed.workDir,
      { command: 'register', paths: 'dist', 'base-url': url, 'api-key': 'sandbox_0123456789abcdef0123456789abcdef' },
      { NOTARIZE_CONFIG_DIR: bed.path('refused-key-store') },
    );
    expect(step.run.code, describeRun(step.run)).toBe(3);
    expect(step.run.stderr).toContain(
      '::error::notarize action: the API key was refused: check the `api-key` input (from a secret); `notarize login` does not apply to an action',
    );
  });

  it('a NOTARIZE_TOKEN it cannot use, with a good key: notarize says so, and the key is not blamed', async () => {
    const step = await runActionStep(
      bed.workDir,
      { command: 'register', paths: 'dist', 'base-url': url, 'api-key': apiKey },
      { NOTARIZE_CONFIG_DIR: bed.path('bad-token-store'), NOTARIZE_TOKEN: 'abc def' },
    );
    expect(step.run.code, describeRun(step.run)).toBe(3);
    expect(step.run.stderr).toMatch(/^::error file=dist\/[^\n]*::the token in NOTARIZE_TOKEN cannot be used/m);
    expect(step.run.stderr).not.toMatch(/api-key|API key/);
    expect(step.run.stderr).not.toContain('notarize action:');
  });

  it('its line after exit 3 follows the errors notarize gave, never guessing the key', () => {
    const results = (...errors: { message: string; hint?: string }[]) =>
      resultLines(
        errors.map((e) => JSON.stringify({ status: 'failed', error: { code: 'auth', exitCode: 3, ...e } })).join('\n'),
      );
    const key = { keyFrom: 'input' as const, tokenSet: false };
    // Not about the key: notarize's message and annotations say it all.
    for (const error of [
      { message: 'the token in NOTARIZE_TOKEN cannot be used: it contains spaces', hint: 'set it to the token alone' },
      { message: 'GET x answered 407 (proxy authentication required)', hint: 'give the proxy\'s user and password in HTTPS_PROXY' },
      { message: 'the service at x issued a token that has already expired', hint: "check this machine's clock" },
    ]) {
      expect(authAdvice(results(error), key)).toBeUndefined();
      expect(authAdvice(results(error), { keyFrom: undefined, tokenSet: true })).toBeUndefined();
    }
    expect(
      authAdvice(results({ message: 'logging in with NOTARIZE_API_KEY failed: POST x answered 401', hint: 'check NOTARIZE_API_KEY' }), key),
    ).toMatch(/^the API key was refused: check the `api-key` input/);
    // A login answered 404: the base URL, not the key (core/credentials.ts loginRefusedHint).
    const notFound = { message: 'logging in with NOTARIZE_API_KEY failed: POST x answered 404', hint: loginRefusedHint(404, 'check NOTARIZE_API_KEY') };
    expect(authAdvice(results(notFound), key)).toMatch(/^the service has no login at the base URL: check the `base-url` input/);
    expect(
      authAdvice(results({ message: 'logging in with NOTARIZE_API_KEY failed: 401' }), { keyFrom: 'environment', tokenSet: false }),
    ).toMatch(/^the API key was refused: check the NOTARIZE_API_KEY the workflow sets/);
    const forbidden = {
      message: 'POST x answered 403',
      hint: "the service refuses this account this call (403): check the rights of the key's account, or log in with another key (`notarize login`)",
    };
    expect(authAdvice(results(forbidden), { keyFrom: undefined, tokenSet: true })).toMatch(/^no API key was given/);
    expect(authAdvice(results(forbidden), { keyFrom: 'input', tokenSet: true })).toMatch(
      /^the service refused the run's credentials .*NOTARIZE_TOKEN is set and is used before the API key/,
    );
    expect(authAdvice(results(forbidden), key)).not.toContain('NOTARIZE_TOKEN');
    // No result holds an error of exit 3: notarize's message above says what failed.
    expect(authAdvice([], key)).toMatch(/^notarize could not authenticate \(exit 3\), see its message above/);
  });
});

describe('the action against the sandbox', () => {
  it('register: exit 0, receipts written, outputs counted, the summary table, the key nowhere', () => {
    const { run, outputs, summary } = registered;
    expect(run.code, describeRun(run)).toBe(0);
    expect(outputs).toMatchObject({ registered: '2', verified: '0', failed: '0', 'verification-url': '' });
    const results = parseNdjson(readFileSync(outputs.results!, 'utf8'));
    // NDJSON lines come as documents finish, in any order.
    expect(results.map((r) => [r.file, r.status, r.hash]).sort()).toEqual([
      ['dist/app.tar.gz', 'registered', hashes['app.tar.gz']],
      ['dist/notes.txt', 'registered', hashes['notes.txt']],
    ]);
    expect(existsSync(bed.path('receipts/app.tar.gz.notarization.json'))).toBe(true);
    expect(summary).toContain('notarize register');
    expect(summary).toContain('dist/app.tar.gz');
    expect(everythingPrinted(registered)).not.toContain(apiKey);
  });

  it('a file named `-` in paths: that file is registered, not standard input', async () => {
    const hash = await bed.write('-', 'a file named dash\n');
    const step = await runActionStep(
      bed.workDir,
      { command: 'register', paths: '-', 'base-url': url, 'api-key': apiKey },
      { NOTARIZE_CONFIG_DIR: bed.path('dash-store') },
    );
    expect(step.run.code, describeRun(step.run)).toBe(0);
    expect(parseNdjson(readFileSync(step.outputs.results!, 'utf8')).map((r) => [r.file, r.hash])).toEqual([
      ['./-', hash],
    ]);
  });

  it('verify with the receipts on an empty store, no key, the service stopped: exit 0, all verified', async () => {
    await bed.sandbox.close();
    const step = await runActionStep(
      bed.workDir,
      { command: 'verify', paths: 'dist', 'receipt-dir': 'receipts', 'base-url': url },
      { NOTARIZE_CONFIG_DIR: bed.path('release-store') },
    );
    expect(step.run.code, describeRun(step.run)).toBe(0);
    expect(step.outputs).toMatchObject({ verified: '2', failed: '0', registered: '0' });
    expect(parseNdjson(readFileSync(step.outputs.results!, 'utf8')).map((r) => r.source)).toEqual([
      'receipt',
      'receipt',
    ]);
    expect(step.summary).toContain('notarize verify');

    const one = await runActionStep(
      bed.workDir,
      { command: 'verify', paths: 'dist/app.tar.gz', 'receipt-dir': 'receipts', 'base-url': url },
      { NOTARIZE_CONFIG_DIR: bed.path('release-store') },
    );
    expect(one.run.code, describeRun(one.run)).toBe(0);
    expect(one.outputs['verification-url']).toBe(`${url}/verification/${hashes['app.tar.gz']}`);

    const originalNotes = readFileSync(bed.path('dist/notes.txt'));
    writeFileSync(bed.path('dist/notes.txt'), 'changed after the build\n');
    const changed = await runActionStep(
      bed.workDir,
      { command: 'verify', paths: 'dist', 'receipt-dir': 'receipts', 'base-url': url },
      { NOTARIZE_CONFIG_DIR: bed.path('release-store') },
    );
    expect(changed.run.code, describeRun(changed.run)).toBe(6);
    expect(changed.outputs).toMatchObject({ verified: '1', failed: '1' });
    expect(changed.run.stderr).toMatch(/^::error .*dist\/notes\.txt/m);

    // A link in dist is not followed: it fails the step, with its row in the summary and an annotation.
    writeFileSync(bed.path('dist/notes.txt'), originalNotes);
    symlinkSync(bed.path('receipts'), bed.path('dist/linked'));
    try {
      const linked = await runActionStep(
        bed.workDir,
        { command: 'verify', paths: 'dist', 'receipt-dir': 'receipts', 'base-url': url },
        { NOTARIZE_CONFIG_DIR: bed.path('release-store') },
      );
      expect(linked.run.code, describeRun(linked.run)).toBe(2);
      expect(linked.outputs).toMatchObject({ verified: '2', failed: '1' });
      expect(linked.run.stderr).toMatch(/^::error .*dist\/linked/m);
      expect(linked.summary).toContain('dist/linked');
      expect(linked.run.stderr).toContain('3 items: 2 verified, 1 failed');
    } finally {
      rmSync(bed.path('dist/linked'));
    }
  });

  it('an input it cannot use: exit 2 with one ::error:: line, nothing run', async () => {
    const step = await runActionStep(
      bed.workDir,
      { command: 'publish', paths: 'dist', 'base-url': url },
      { NOTARIZE_CONFIG_DIR: bed.path('bad-store') },
    );
    expect(step.run.code).toBe(2);
    expect(step.run.stderr).toBe("::error::notarize action: input command must be register or verify, not 'publish'\n");
    expect(step.outputs).toEqual({});
  });

  it('notarize refusing an input before any document: one ::error:: line, no outputs (never failed=0)', async () => {
    const step = await runActionStep(
      bed.workDir,
      { command: 'register', paths: 'dist', 'base-url': url, description: 'line1\n::error::FORGED' },
      { NOTARIZE_CONFIG_DIR: bed.path('refused-store') },
    );
    expect(step.run.code).toBe(2);
    const lines = step.run.stderr.split('\n').filter(Boolean);
    expect(lines.filter((line) => line.startsWith('::'))).toEqual([
      '::error::notarize action: notarize stopped before any document, exit 2: see its message above',
    ]);
    expect(step.run.stderr).toMatch(/^notarize: --description holds a control or format character/m);
    expect(step.outputs).toEqual({});
  });

  it('paths that are only links notarize skips: exit 2, one ::error:: line, no outputs (never failed=0)', async () => {
    mkdirSync(bed.path('links-only'));
    symlinkSync(bed.path('dist/notes.txt'), bed.path('links-only/notes.txt'));
    const step = await runActionStep(
      bed.workDir,
      { command: 'register', paths: 'links-only', 'base-url': url, 'api-key': apiKey },
      { NOTARIZE_CONFIG_DIR: bed.path('links-store') },
    );
    expect(step.run.code, describeRun(step.run)).toBe(2);
    expect(step.run.stderr.split('\n').filter((line) => line.startsWith('::error'))).toEqual([
      '::error::notarize action: notarize stopped before any document, exit 2: see its message above',
    ]);
    expect(step.outputs).toEqual({});
  });

  it('an input quoted in the ::error:: line is data: line breaks and % encoded, no forged workflow command', async () => {
    const step = await runActionStep(
      bed.workDir,
      { command: 'reg\n::add-mask::secret\n::warning::FORGED%0Ax', paths: 'dist', 'base-url': url },
      { NOTARIZE_CONFIG_DIR: bed.path('bad-store') },
    );
    expect(step.run.code).toBe(2);
    expect(step.run.stderr).toBe(
      "::error::notarize action: input command must be register or verify, not 'reg\\n::add-mask::secret\\n::warning::FORGED%250Ax'\n",
    );
  });
});

describe('the action: no secret in anything it writes, no stack trace', () => {
  let own: Bed;
  beforeAll(async () => {
    own = await Bed.create();
  });
  afterAll(async () => {
    await own?.finish();
  });

  /** The forms a secret takes once %-encoded for a workflow command, or escaped for markdown. */
  function encodedForms(secret: string): string[] {
    return [
      secret,
      secret.replace(/%/g, '%25').replace(/:/g, '%3A').replace(/,/g, '%2C'),
      secret.replace(/_/g, '\\_'),
      secret.slice(-12),
    ];
  }

  it('a key in a file name is in no annotation, summary or output, encoded or escaped', async () => {
    const key = 'Secr3t_Key%with:colon,1234';
    await own.write('kd/kd/report-' + key + '.txt', 'a document named with the key\n');
    const step = await runActionStep(
      own.path('kd'),
      { command: 'verify', paths: 'kd', 'base-url': own.url, 'api-key': key },
      { NOTARIZE_CONFIG_DIR: own.path('kd-store') },
    );
    expect(step.run.code, describeRun(step.run)).toBe(6);
    expect(step.run.stderr).toMatch(/^::error file=kd\/report-\[redacted\]\.txt,title=notarize%3A unknown::/m);
    expect(step.summary).toContain('kd/report-\\[redacted\\].txt');
    const printed = everythingPrinted(step);
    for (const form of encodedForms(key)) expect(printed).not.toContain(form);
  });

  it("register: the key in a file name is kept out of the summary, markdown's `\\_` included", async () => {
    const key = own.sandbox.apiKey;
    await own.write(`named/notes-${key}.txt`, 'a document named with the real key\n');
    const step = await runActionStep(
      own.path('named'),
      { command: 'register', paths: '.', 'base-url': own.url, 'api-key': key },
      { NOTARIZE_CONFIG_DIR: own.path('named-store') },
    );
    // Refused before it is sent: the name would be the description, kept by the service for good.
    expect(step.run.code, describeRun(step.run)).not.toBe(0);
    expect(step.summary).toContain('notes-\\[redacted\\].txt');
    const printed = everythingPrinted(step);
    for (const form of encodedForms(key)) expect(printed).not.toContain(form);
  });

  it('RUNNER_TEMP missing: one ::error:: line saying what to do, exit 2, nothing sent, no stack trace', async () => {
    await own.write('rt/doc.txt', 'a document of a job with no RUNNER_TEMP\n');
    const before = own.mark();
    const step = await runActionStep(
      own.path('rt'),
      { command: 'register', paths: 'doc.txt', 'base-url': own.url, 'api-key': own.sandbox.apiKey },
      { NOTARIZE_CONFIG_DIR: own.path('rt-store'), RUNNER_TEMP: own.path('no-such-runner-temp') },
    );
    expect(step.run.code, describeRun(step.run)).toBe(2);
    expect(step.run.stderr).toMatch(
      /^::error::notarize action: cannot create its results file under RUNNER_TEMP \([^\n]*no-such-runner-temp\): ENOENT; nothing was sent: [^\n]*RUNNER_TEMP[^\n]*\n$/,
    );
    expect(step.run.stderr).not.toMatch(STACK_LINE);
    expect(step.outputs).toEqual({});
    expect(own.callsSince(before)).toEqual([]);
  });

  it('GITHUB_OUTPUT not writable after a paid registration: says it is done and where, exit 1, no stack trace', async () => {
    await own.write('out/doc.txt', 'a document registered before the outputs failed\n');
    const outputDir = own.path('output-is-a-directory');
    mkdirSync(outputDir);
    const step = await runActionStep(
      own.path('out'),
      { command: 'register', paths: 'doc.txt', 'receipt-dir': 'receipts', 'base-url': own.url, 'api-key': own.sandbox.apiKey },
      { NOTARIZE_CONFIG_DIR: own.path('out-store'), GITHUB_OUTPUT: outputDir },
    );
    expect(step.run.code, describeRun(step.run)).toBe(1);
    expect(step.run.stderr).not.toMatch(STACK_LINE);
    const last = step.run.stderr.trimEnd().split('\n').at(-1)!;
    expect(last).toMatch(
      /^::error::notarize action: notarize ended with exit 0, 1 registered and 0 failed \(registrations done are kept: the results are in [^\n]*results\.ndjson, the receipts in receipts\), but the step's outputs could not be written to GITHUB_OUTPUT \([^\n]*\): EISDIR; /,
    );
    expect(existsSync(own.path('out/receipts/doc.txt.notarization.json'))).toBe(true);
    expect(own.sandbox.records.size).toBeGreaterThan(0);
  });
});

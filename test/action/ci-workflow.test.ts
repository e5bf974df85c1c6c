/**
 * The workflow of docs/ci.md, run step by step as a runner would, against
 * the sandbox standing in for the service: every `run:` step with bash -e
 * exactly as written (`npm` and `make` are stubs on PATH: installing and
 * building are the reader's; `notarize` is this build), the artifact
 * actions as copies between jobs. Each job has its own workspace, HOME and
 * RUNNER_TEMP: no store is shared, and the release job verifies with the
 * receipts alone after the service has stopped.
 */
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain JavaScript script without types; it lends only this function.
import { workflowBlocks } from '../../scripts/check-workflows.js';
import { Bed } from '../helpers/bed.js';
import { BIN, describeRun, REPO_ROOT, runProcess, type Run } from '../helpers/cli.js';
import { listTree } from '../helpers/store.js';

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  env?: Record<string, string>;
  with?: Record<string, string | number | boolean>;
  if?: string;
}
interface Workflow {
  jobs: Record<string, { needs?: string; steps: Step[] }>;
}

const markdown = readFileSync(join(REPO_ROOT, 'docs', 'ci.md'), 'utf8');
const blocks = (workflowBlocks as (text: string) => { text: string }[])(markdown);
const workflow = parse(blocks[0]!.text) as Workflow;

let bed: Bed;
let stubs = '';
let artifacts = '';
/** The cache action's store: a folder per key, and the keys in the order they were saved. */
let caches = '';
const savedKeys: string[] = [];

beforeAll(async () => {
  bed = await Bed.create();
  stubs = join(bed.root, 'stubs');
  mkdirSync(stubs);
  const stub = (name: string, body: string) => {
    writeFileSync(join(stubs, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(stubs, name), 0o755);
  };
  stub('notarize', `exec "${process.execPath}" "${BIN}" "$@"`);
  stub('npm', 'echo "npm $*" >> "$RUNNER_TEMP/npm.log"');
  // The same bytes for every attempt of one run (BUILD, a reproducible build), new ones per run.
  stub('make', 'mkdir -p dist && echo "app of $BUILD" > dist/app.tar.gz && echo "notes of $BUILD" > dist/notes.txt');
  artifacts = join(bed.root, 'artifacts');
  mkdirSync(artifacts);
  caches = join(bed.root, 'caches');
  mkdirSync(caches);
});
afterAll(async () => {
  await bed?.finish();
});

/** A job's runner: a fresh workspace, HOME and RUNNER_TEMP. */
function newRunner(job: string) {
  const root = mkdtempSync(join(bed.root, `${job}-`));
  const dirs = { workspace: join(root, 'workspace'), home: join(root, 'home'), temp: join(root, 'temp') };
  for (const dir of Object.values(dirs)) mkdirSync(dir);
  return dirs;
}

/** A workflow run, and which attempt of it ("Re-run failed jobs" makes the next). */
interface Attempt {
  runId: string;
  attempt: number;
}

/** `${{ ... }}` in a step, for the contexts the workflow uses; anything else is a test failure. */
function expand(text: string, runner: ReturnType<typeof newRunner>, at: Attempt): string {
  return text.replace(/\$\{\{\s*([^}]+?)\s*\}\}/g, (_, expression: string) => {
    if (expression === 'secrets.NOTARIZE_API_KEY') return bed.sandbox.apiKey;
    if (expression === 'runner.temp') return runner.temp;
    if (expression === 'github.run_id') return at.runId;
    if (expression === 'github.run_attempt') return String(at.attempt);
    throw new Error(`the test does not know the expression ${expression}`);
  });
}

/**
 * actions/cache/restore: the cache of `key`, else the newest saved under one
 * of `restore-keys` as a prefix (GitHub's matching), copied to `path`.
 */
function restoreCache(step: Step, runner: ReturnType<typeof newRunner>, at: Attempt): void {
  const key = expand(String(step.with!.key), runner, at);
  const prefixes = String(step.with!['restore-keys'] ?? '')
    .split('\n')
    .filter(Boolean)
    .map((prefix) => expand(prefix, runner, at));
  const hit = savedKeys.includes(key) ? key : savedKeys.findLast((k) => prefixes.some((p) => k.startsWith(p)));
  if (hit !== undefined) cpSync(join(caches, hit), join(runner.workspace, String(step.with!.path)), { recursive: true });
}

/** actions/cache/save: `path` kept under `key`, which is never written twice (caches are immutable). */
function saveCache(step: Step, runner: ReturnType<typeof newRunner>, at: Attempt): void {
  const key = expand(String(step.with!.key), runner, at);
  const path = join(runner.workspace, String(step.with!.path));
  if (savedKeys.includes(key) || !existsSync(path)) return;
  cpSync(path, join(caches, key), { recursive: true });
  savedKeys.push(key);
}

/**
 * Runs every step of `job` (as attempt `at` of its run, the build's bytes
 * those of `build`, by default new for each runner); returns the runs of its `run:` steps. `failingAt`: the action
 * at which the job fails (an upload refused, say), so no later step runs.
 */
async function runJob(
  job: string,
  { at = { runId: '1', attempt: 1 }, build, failingAt }: { at?: Attempt; build?: string; failingAt?: string } = {},
  runner = newRunner(job),
): Promise<{ runs: Run[]; runner: typeof runner }> {
  const runs: Run[] = [];
  for (const step of workflow.jobs[job]!.steps) {
    const action = step.uses?.split('@')[0];
    if (action !== undefined && action === failingAt) break;
    if (action === 'actions/checkout' || action === 'actions/setup-node') continue;
    if (action === 'actions/cache/restore') {
      restoreCache(step, runner, at);
      continue;
    }
    if (action === 'actions/cache/save') {
      // Saved even after a failed step (`if: always()`): a failure here ends the job before it anyway.
      saveCache(step, runner, at);
      continue;
    }
    if (action === 'actions/upload-artifact') {
      const into = join(artifacts, String(step.with!.name));
      // Since v4.4.0, hidden files and folders are left out unless include-hidden-files is true.
      const hidden = step.with!['include-hidden-files'] === true ? () => false : (name: string) => name.startsWith('.');
      for (const path of String(step.with!.path).split('\n').filter(Boolean)) {
        cpSync(join(runner.workspace, path), join(into, path), {
          recursive: true,
          filter: (source) => !hidden(basename(source)),
        });
      }
      continue;
    }
    if (action === 'actions/download-artifact') {
      cpSync(join(artifacts, String(step.with!.name)), runner.workspace, { recursive: true });
      continue;
    }
    if (step.uses !== undefined) throw new Error(`the test does not run ${step.uses}`);
    const env: Record<string, string> = {
      PATH: `${stubs}:${process.env.PATH}`,
      HOME: runner.home,
      RUNNER_TEMP: runner.temp,
      GITHUB_WORKSPACE: runner.workspace,
      GITHUB_ACTIONS: 'true',
      GITHUB_STEP_SUMMARY: join(runner.temp, 'summary.md'),
      CI: 'true',
      BUILD: build ?? runner.workspace,
      // The service: the sandbox stands in for it.
      NOTARIZE_BASE_URL: bed.sandbox.url,
    };
    for (const [key, value] of Object.entries(step.env ?? {})) env[key] = expand(value, runner, at);
    // GitHub's default for bash steps: bash --noprofile --norc -eo pipefail {0}.
    const run = await runProcess('bash', ['--noprofile', '--norc', '-eo', 'pipefail', '-c', expand(step.run!, runner, at)], env, {
      cwd: runner.workspace,
      timeoutMs: 60_000,
    });
    expect(run.code, `${job}: ${step.name ?? step.run}\n${describeRun(run)}`).toBe(0);
    runs.push(run);
  }
  return { runs, runner };
}

describe('docs/ci.md: the workflow', () => {
  it('a build job that registered, then failed at a later step, re-run on a cold runner: its receipts come back', async () => {
    const run = { runId: 'rerun', attempt: 1 };
    // Attempt 1 registers and writes the receipts, then its upload fails: no artifact.
    const first = await runJob('build', { at: run, build: 'rerun', failingAt: 'actions/upload-artifact' });
    expect(readdirSync(join(first.runner.workspace, 'receipts')).sort()).toEqual([
      'app.tar.gz.notarization.json',
      'notes.txt.notarization.json',
    ]);
    expect(existsSync(join(artifacts, 'release'))).toBe(false);
    // Attempt 2: a fresh runner and an empty store; the service answers 409 for both.
    const forfaits = bed.calls('forfait');
    const second = await runJob('build', { at: { ...run, attempt: 2 }, build: 'rerun' });
    expect(bed.calls('forfait')).toBe(forfaits);
    const statuses = readFileSync(join(second.runner.workspace, 'registrations.ndjson'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { status: string }).status);
    expect(statuses).toEqual(['already-registered', 'already-registered']);
    const release = await runJob('release');
    expect(release.runs.at(-1)!.stderr).toContain('2 items: 2 verified');
    rmSync(join(artifacts, 'release'), { recursive: true });

    // A build that is not reproducible: attempt 4 makes other bytes. The receipts restored for the old
    // ones are dropped first (register would refuse to replace them: exit 2 on every re-run).
    const paid = bed.calls('forfait');
    const rebuilt = await runJob('build', { at: { ...run, attempt: 4 }, build: 'rerun, built again' });
    expect(bed.calls('forfait')).toBe(paid + 2);
    // Its look at the old receipts finds both `modified`, as expected: no error annotation on the run's page (r105).
    const moveAside = workflow.jobs.build!.steps.filter((step) => step.run).findIndex((step) => step.name?.startsWith('Move aside'));
    expect(moveAside).toBeGreaterThan(-1);
    const look = rebuilt.runs[moveAside]!;
    expect(readFileSync(join(rebuilt.runner.workspace, 'earlier.ndjson'), 'utf8')).toContain('"modified"');
    expect(look.stdout + look.stderr).not.toContain('::error');
    const again = readFileSync(join(rebuilt.runner.workspace, 'registrations.ndjson'), 'utf8');
    expect(again.trim().split('\n').map((line) => (JSON.parse(line) as { status: string }).status)).toEqual([
      'registered',
      'registered',
    ]);
    const releaseAgain = await runJob('release');
    expect(releaseAgain.runs.at(-1)!.stderr).toContain('2 items: 2 verified');
    rmSync(join(artifacts, 'release'), { recursive: true });

    // Attempt 5 makes the first bytes again: their receipts, moved aside at attempt 4, not deleted, are
    // found by digest; nothing is paid, and the release verifies both.
    const back = await runJob('build', { at: { ...run, attempt: 5 }, build: 'rerun' });
    expect(bed.calls('forfait')).toBe(paid + 2);
    expect(readFileSync(join(back.runner.workspace, 'registrations.ndjson'), 'utf8')).toContain('already-registered');
    // Each artifact has its receipt under its own name again, made from the one moved aside (r105: with
    // none, the release gate took any registered bytes at that name, another artifact's swapped in).
    expect(existsSync(join(back.runner.workspace, 'receipts', 'app.tar.gz.notarization.json'))).toBe(true);
    const releaseBack = await runJob('release');
    expect(releaseBack.runs.at(-1)!.stderr).toContain('2 items: 2 verified');
    const dist = join(releaseBack.runner.workspace, 'dist');
    writeFileSync(join(dist, 'app.tar.gz'), readFileSync(join(dist, 'notes.txt')));
    const swapped = await runProcess(
      'bash',
      ['-eo', 'pipefail', '-c', workflow.jobs.release!.steps.at(-1)!.run!],
      { PATH: `${stubs}:${process.env.PATH}`, HOME: releaseBack.runner.home, NOTARIZE_BASE_URL: bed.sandbox.url },
      { cwd: releaseBack.runner.workspace },
    );
    expect(swapped.code, describeRun(swapped)).toBe(6);
    rmSync(join(artifacts, 'release'), { recursive: true });

    // Without the restore step, the same re-run writes no receipt, and the release gate fails on every re-run.
    const restore = workflow.jobs.build!.steps.findIndex((step) => step.uses?.startsWith('actions/cache/restore'));
    expect(restore).toBeGreaterThan(-1);
    const [restoreStep] = workflow.jobs.build!.steps.splice(restore, 1);
    try {
      await runJob('build', { at: { ...run, attempt: 6 }, build: 'rerun' });
    } finally {
      workflow.jobs.build!.steps.splice(restore, 0, restoreStep!);
    }
    const uploaded = listTree(join(artifacts, 'release')).filter((f) => !f.isDir);
    expect(uploaded.map((f) => f.path).filter((path) => path.startsWith('receipts/'))).toEqual([]);
    rmSync(join(artifacts, 'release'), { recursive: true });
  });

  it("the plain shell script: its release check holds to receipts/, though this machine's store has the artifact (r105)", async () => {
    const section = markdown.slice(markdown.indexOf('## A plain shell script'));
    const script = /```sh\n([\s\S]*?)```/.exec(section)![1]!;
    const work = mkdtempSync(join(bed.root, 'plain-'));
    writeFileSync(join(work, 'key'), `${bed.sandbox.apiKey}\n`, { mode: 0o600 });
    const local = script
      .replace('/var/lib/ci/notarize', join(work, 'store'))
      .replace('/run/secrets/notarize_key', join(work, 'key'));
    mkdirSync(join(work, 'dist'));
    for (const name of ['a.bin', 'b.bin']) writeFileSync(join(work, 'dist', name), `plain ${name}\n`);
    const env = { PATH: `${stubs}:${process.env.PATH}`, HOME: work, NOTARIZE_BASE_URL: bed.sandbox.url };
    const whole = await runProcess('sh', ['-c', local], env, { cwd: work });
    expect(whole.code, describeRun(whole)).toBe(0);
    // A receipt not kept: the release check alone (the script's exports, then its last step) fails,
    // though the store the script exported has b.bin in its ledger (r105: it passed).
    rmSync(join(work, 'receipts', 'b.bin.notarization.json'));
    const check = local.slice(0, local.indexOf('# Build:')) + local.slice(local.indexOf('# Before release'));
    const gate = await runProcess('sh', ['-c', check], env, { cwd: work });
    expect(gate.code, describeRun(gate)).toBe(1);
    expect(gate.stderr).toContain('unnotarized artifacts');
  });

  it('build registers with receipts in its own store outside the checkout; release verifies with the receipts alone', async () => {
    const build = await runJob('build');
    const registrations = readFileSync(join(build.runner.workspace, 'registrations.ndjson'), 'utf8');
    expect(registrations.trim().split('\n').map((l) => (JSON.parse(l) as { status: string }).status)).toEqual([
      'registered',
      'registered',
    ]);
    // The store is the job's own, under RUNNER_TEMP: nothing of it in the checkout or the artifact.
    expect(existsSync(join(build.runner.temp, 'notarize-store', 'credentials.json'))).toBe(true);
    const uploaded = listTree(join(artifacts, 'release')).filter((f) => !f.isDir);
    expect(uploaded.map((f) => f.path).sort()).toEqual([
      'dist/app.tar.gz',
      'dist/notes.txt',
      'receipts/app.tar.gz.notarization.json',
      'receipts/notes.txt.notarization.json',
    ]);
    expect(listTree(build.runner.workspace).map((f) => f.path)).not.toContain('credentials.json');
    expect(readFileSync(join(build.runner.temp, 'npm.log'), 'utf8')).toContain('install -g');

    // The release job: no secret, no store given, and the service is gone.
    await bed.sandbox.close();
    const releaseSteps = workflow.jobs.release!.steps;
    expect(JSON.stringify(releaseSteps)).not.toMatch(/secrets\.|NOTARIZE_CONFIG_DIR/);
    const release = await runJob('release');
    const verify = release.runs.at(-1)!;
    expect(verify.stderr).toContain('2 items: 2 verified');
    expect(readFileSync(join(release.runner.temp, 'summary.md'), 'utf8')).toContain('notarize verify');

    // The gate holds: one changed artifact fails the verify step (exit 6).
    writeFileSync(join(release.runner.workspace, 'dist', 'app.tar.gz'), 'tampered\n');
    const gate = await runProcess('bash', ['-eo', 'pipefail', '-c', releaseSteps.at(-1)!.run!], {
      PATH: `${stubs}:${process.env.PATH}`,
      HOME: release.runner.home,
      NOTARIZE_BASE_URL: bed.sandbox.url,
    }, { cwd: release.runner.workspace });
    expect(gate.code, describeRun(gate)).toBe(6);
  });

  it('no documentation puts the store inside the checkout or hands it between jobs', () => {
    for (const doc of ['README.md', 'docs/ci.md', 'docs/verify-by-hand.md']) {
      const text = readFileSync(join(REPO_ROOT, doc), 'utf8');
      expect(text, doc).not.toMatch(/NOTARIZE_CONFIG_DIR:?\s*=?\s*\$\{\{\s*github\.workspace/);
      expect(text, doc).not.toMatch(/\.notarize\/services/);
    }
    expect(readdirSync(join(REPO_ROOT, 'docs'))).toContain('verify-by-hand.md');
  });
});

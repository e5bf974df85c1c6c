/**
 * What a CI engineer meets around the batch commands: never being prompted
 * (exit 3 with a hint instead), and `--help` of every command showing
 * examples, one of them for CI. Also checks that the test runner's own
 * environment cannot leak into the spawned CLI. Shell completion is tested in
 * the real shells, in completion.test.ts.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Bed, useBed } from '../helpers/bed.js';
import { useTempDir } from '../helpers/temp-dirs.js';
import { BIN, describeRun, runProcess } from '../helpers/cli.js';
import { runMain } from '../helpers/main.js';
import { cleanEnv } from '../helpers/env.js';

const COMMANDS = [
  'register',
  'complete',
  'pending',
  'hash',
  'verify',
  'list',
  'show',
  'receipt',
  'login',
  'logout',
  'config',
  'sandbox',
  'completion',
];

let dir: string;
let env: Record<string, string>;
useTempDir('notarize-batch-cli-', (created) => {
  dir = created;
  env = { NOTARIZE_CONFIG_DIR: join(dir, 'store') };
});

describe('the clean environment of spawned runs', () => {
  it('passes only PATH, HOME, NO_COLOR and what the test sets', () => {
    const saved = { ...process.env };
    try {
      Object.assign(process.env, {
        NOTARIZE_BASE_URL: 'https://example.invalid',
        NOTARIZE_API_KEY: 'leaked',
        CI: 'true',
        GITHUB_ACTIONS: 'true',
        HTTPS_PROXY: 'http://10.0.0.1:3128',
        no_proxy: '*',
      });
      const childEnv = cleanEnv({ NOTARIZE_CONFIG_DIR: '/tmp/x', GONE: undefined });
      const expected = ['NOTARIZE_CONFIG_DIR', 'NO_COLOR', 'PATH', ...(saved.HOME === undefined ? [] : ['HOME'])];
      expect(Object.keys(childEnv).sort()).toEqual(expected.sort());
      expect(() => cleanEnv({ HTTP_PROXY: 'http://10.0.0.1:3128' })).toThrow(/127\.0\.0\.0\/8 only/);
    } finally {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
    }
  });
});

describe('never prompting', () => {
  let bed: Bed;
  useBed((created) => (bed = created), { keyInEnv: true });

  it('login with standard input not a terminal and no key: exit 3 with a hint, nothing sent', async () => {
    const run = await bed.main(['login'], { env: { NOTARIZE_API_KEY: undefined } });
    expect(run.code, describeRun(run)).toBe(3);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^notarize: .*will not prompt.*NOTARIZE_API_KEY.*--api-key-stdin/);
    const json = await bed.main(['login', '--json'], { env: { NOTARIZE_API_KEY: undefined } });
    expect(json.code).toBe(3);
    const error = (JSON.parse(json.stderr) as { error: { code: string; exitCode: number; hint: string } }).error;
    expect(error).toMatchObject({ code: 'auth', exitCode: 3 });
    expect(error.hint).toMatch(/NOTARIZE_API_KEY/);
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('login with CI=true: exit 3 with a hint, even when standard input is a terminal', async () => {
    const piped = await bed.main(['login'], { env: { NOTARIZE_API_KEY: undefined, CI: 'true' } });
    expect(piped.code, describeRun(piped)).toBe(3);
    expect(piped.stderr).toMatch(/NOTARIZE_API_KEY/);

    // script(1) gives the child a pseudo-terminal: without CI it would prompt
    // (and this run would time out); with CI it must refuse at once.
    const command = `'${process.execPath}' '${BIN}' login`;
    const tty = await runProcess(
      'script',
      ['-q', '-e', '-c', command, '/dev/null'],
      { ...bed.env({ NOTARIZE_API_KEY: undefined }), CI: 'true' },
      { cwd: dir, timeoutMs: 15_000 },
    );
    expect(tty.code, `${tty.stdout}${tty.stderr}`).toBe(3);
    expect(tty.stdout).toMatch(/NOTARIZE_API_KEY/);
    expect(tty.stdout).not.toMatch(/^API key: /m);
    expect(bed.sandbox.calls).toEqual([]);
  });
});

describe('--help', () => {
  it.each(COMMANDS)('notarize %s --help shows examples, one for CI', async (command) => {
    const run = await runMain([command, '--help'], env, { noBaseUrlCheck: true });
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout).toMatch(new RegExp(`^Usage: notarize ${command}`, 'm'));
    expect(run.stdout).toMatch(/^Examples:$/m);
    const examples = run.stdout.slice(run.stdout.indexOf('Examples:'));
    expect(examples).toMatch(/^.*\bCI\b.*$/m);
  });

  it('notarize --help lists the exit codes and a CI example', async () => {
    const run = await runMain(['--help'], env, { noBaseUrlCheck: true });
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stdout).toMatch(/^Examples:$/m);
    expect(run.stdout).toMatch(/^ +# CI: /m);
    expect(run.stdout).toMatch(/^ +4 +transient/m);
    expect(run.stdout).toMatch(/^ +6 +verify\/show/m);
  });
});

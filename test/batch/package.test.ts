/**
 * The packed package installs globally and runs: `npm pack`, then
 * `npm install -g --prefix <tmp> --offline` of the tarball (npm's cache holds
 * every dependency after `npm ci`), then the installed `notarize`.
 *
 * `npm pack` runs with --ignore-scripts: its `prepack` script rebuilds dist/,
 * which would rewrite the files the other test files' CLI runs are loading
 * at that moment. The suite runs after `npm run build`, so dist/ is current.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../helpers/bed.js';
import { REPO_ROOT, runProcess, type Run } from '../helpers/cli.js';

const VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
// The Node running this suite comes first, so npm and the installed bin's `#!/usr/bin/env node` use it.
const PATH = [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter);

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'notarize-batch-pack-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function show(run: Run): string {
  return `exit ${run.code}\nstdout: ${run.stdout.slice(-3000)}\nstderr: ${run.stderr.slice(-3000)}`;
}

describe('the packed package', () => {
  it('packs, installs globally offline, and runs --version and hash', { timeout: 120_000 }, async () => {
    const npmEnv = { PATH, NOTARIZE_CONFIG_DIR: join(dir, 'store') };
    const pack = await runProcess('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], {
      cwd: REPO_ROOT,
      env: npmEnv,
      timeoutMs: 60_000,
    });
    expect(pack.code, show(pack)).toBe(0);
    const [packed] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
    const files = packed!.files.map((f) => f.path);
    expect(files).toContain('bin/notarize.js');
    expect(files).toContain('dist/bundle/cli.js');
    // The bundle is what runs: tsc's per-module output (for tests) is not shipped.
    expect(files.filter((f) => f.startsWith('dist/') && !f.startsWith('dist/bundle/'))).toEqual([]);
    expect(files).toContain('package.json');
    expect(files.filter((f) => f.startsWith('src/') || f.startsWith('test/'))).toEqual([]);
    const tarballs = (await readdir(dir)).filter((name) => /^notarize-.*\.tgz$/.test(name));
    expect(tarballs).toEqual([`notarize-${VERSION}.tgz`]);

    const prefix = join(dir, 'global');
    const install = await runProcess(
      'npm',
      ['install', '-g', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', join(dir, tarballs[0]!)],
      { cwd: dir, env: npmEnv, timeoutMs: 100_000 },
    );
    expect(install.code, `npm install --offline failed (is npm's cache filled by npm ci?)\n${show(install)}`).toBe(0);

    const bin = join(prefix, 'bin', 'notarize');
    const version = await runProcess(bin, ['--version'], { cwd: dir, env: npmEnv });
    expect(version.code, show(version)).toBe(0);
    expect(version.stdout).toBe(`${VERSION}\n`);
    expect(version.stderr).toBe('');

    const document = join(dir, 'artifact.bin');
    await writeFile(document, 'an artifact hashed by the installed package\n');
    const hash = await runProcess(bin, ['hash', 'artifact.bin'], { cwd: dir, env: npmEnv });
    expect(hash.code, show(hash)).toBe(0);
    expect(hash.stdout).toBe(`${sha256('an artifact hashed by the installed package\n')}  artifact.bin\n`);
  });
});

/**
 * The packed package installs globally and runs on a cold machine: `npm pack`,
 * then `npm install -g --prefix <tmp> --offline` of the tarball with npm's
 * cache pointing at a new, empty directory. That works only because the
 * package has no runtime dependencies (the bundle in dist/bundle/ holds
 * them), which is what a CI runner with an empty cache needs.
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
import { sha256 } from '../helpers/documents.js';
import { startSandbox } from '../../src/sandbox/server.js';
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
  it(
    'packs, installs globally offline with an empty npm cache and no dependency, and runs --version, hash and register',
    { timeout: 120_000 },
    async () => {
      // An empty cache: nothing may come from a registry or an earlier install.
      const npmEnv = { PATH, NOTARIZE_CONFIG_DIR: join(dir, 'store'), npm_config_cache: join(dir, 'empty-npm-cache') };
      const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
        dependencies?: Record<string, string>;
      };
      expect(manifest.dependencies ?? {}).toEqual({});
      const pack = await runProcess('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], npmEnv, {
        cwd: REPO_ROOT,
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
      // What verify --help and receipt --help point to travels with the package.
      expect(files).toEqual(expect.arrayContaining(['docs/verify-by-hand.md', 'contrib/verify-receipt.py']));
      // So does every document a message of the bundle, or the README shipped, sends its reader to
      // (a warning that a record may be lost named docs/reliability.md, which was not shipped).
      const pointedTo = new Set<string>();
      for (const file of files.filter((f) => f.startsWith('dist/bundle/') || f === 'README.md')) {
        for (const [doc] of readFileSync(join(REPO_ROOT, file), 'utf8').matchAll(/\bdocs\/[\w-]+\.md\b/g))
          pointedTo.add(doc);
      }
      expect([...pointedTo].sort()).toEqual(expect.arrayContaining(['docs/ci.md', 'docs/reliability.md']));
      expect(files).toEqual(expect.arrayContaining([...pointedTo]));
      expect(files).toContain('LICENSE');
      // The JSON Schemas of the receipt and result formats ship with the package.
      expect(files).toEqual(
        expect.arrayContaining(['schemas/receipt-v1.schema.json', 'schemas/result-v1.schema.json']),
      );
      expect(files.filter((f) => f.startsWith('src/') || f.startsWith('test/'))).toEqual([]);
      const tarballs = (await readdir(dir)).filter((name) => /^notarize-.*\.tgz$/.test(name));
      expect(tarballs).toEqual([`notarize-${VERSION}.tgz`]);

      const prefix = join(dir, 'global');
      const install = await runProcess(
        'npm',
        ['install', '-g', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', join(dir, tarballs[0]!)],
        npmEnv,
        { cwd: dir, timeoutMs: 100_000 },
      );
      expect(install.code, `npm install --offline with an empty cache failed\n${show(install)}`).toBe(0);
      // Zero dependencies installed: the package's folder holds only what it ships.
      const installed = join(prefix, 'lib', 'node_modules');
      expect(await readdir(installed)).toEqual(['notarize']);
      expect((await readdir(join(installed, 'notarize'))).sort()).toEqual([
        'LICENSE',
        'README.md',
        'bin',
        'contrib',
        'dist',
        'docs',
        'package.json',
        'schemas',
      ]);

      const bin = join(prefix, 'bin', 'notarize');
      const version = await runProcess(bin, ['--version'], npmEnv, { cwd: dir });
      expect(version.code, show(version)).toBe(0);
      expect(version.stdout).toBe(`${VERSION}\n`);
      expect(version.stderr).toBe('');

      const document = join(dir, 'artifact.bin');
      await writeFile(document, 'an artifact hashed by the installed package\n');
      const hash = await runProcess(bin, ['hash', 'artifact.bin'], npmEnv, { cwd: dir });
      expect(hash.code, show(hash)).toBe(0);
      expect(hash.stdout).toBe(`${sha256('an artifact hashed by the installed package\n')}  artifact.bin\n`);

      // The whole flow (conf, undici, zod, commander all inside the bundle) on a sandbox.
      const sandbox = await startSandbox({ port: 0 });
      try {
        const register = await runProcess(
          bin,
          ['register', 'artifact.bin', '--json'],
          { ...npmEnv, NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey },
          { cwd: dir },
        );
        expect(register.code, show(register)).toBe(0);
        expect((JSON.parse(register.stdout) as { hash: string }).hash).toBe(
          sha256('an artifact hashed by the installed package\n'),
        );
      } finally {
        await sandbox.close();
      }
    },
  );
});

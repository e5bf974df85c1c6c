/**
 * What a command loads before it does anything: every run of notarize pays
 * for it, and a CI script runs notarize many times. `--version` and `--help`
 * load the CLI's core and commander only (the registry loads a command's own
 * modules, and their packages, when that command runs: registry.ts), the
 * commands that send nothing load no HTTP client, and only a table loads the
 * table renderer's packages (present.ts). Counted in modules, not
 * timed (bench/startup.js measures the time): a module hook records the URL
 * of every module the built bin loads (test/fixtures/loaded-modules), and the
 * bundle's chunks name the packages they hold (`// node_modules/<package>/...`,
 * the path as the bundler saw it).
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';
import { cliEnv } from '../helpers/env.js';
import { describeRun, runCli } from '../helpers/cli.js';

let dir: string;
let sandbox: Sandbox;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'notarize-startup-'));
  await writeFile(join(dir, 'doc.txt'), 'a document\n');
  sandbox = await startSandbox({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await sandbox.close();
  await rm(dir, { recursive: true, force: true });
});

const HOOKS = fileURLToPath(new URL('../fixtures/loaded-modules/register.mjs', import.meta.url));

let runs = 0;

/** The packages in the bundle files `notarize ...args` loaded (it must exit `code`), its store its own. */
async function packagesLoaded(args: string[], code = 0): Promise<string[]> {
  const modules = join(dir, `modules-${++runs}.txt`);
  await writeFile(modules, '');
  const env = {
    ...cliEnv(join(dir, `store-${runs}`), { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey }),
    NODE_OPTIONS: `--import ${HOOKS}`,
    NOTARIZE_TEST_MODULES: modules,
  };
  const run = await runCli(args, env, { cwd: dir });
  expect(run.code, describeRun(run)).toBe(code);
  const bundleFiles = (await readFile(modules, 'utf8'))
    .split('\n')
    .filter((url) => url.startsWith('file:') && url.includes('/dist/bundle/'));
  // The hook saw the bundle itself: an empty list would pass every check below.
  expect(bundleFiles.some((url) => url.endsWith('/dist/bundle/cli.js'))).toBe(true);
  const packages = new Set<string>();
  for (const url of bundleFiles) {
    for (const [, name] of readFileSync(fileURLToPath(url), 'utf8').matchAll(
      /^\/\/ (?:\S*\/)?node_modules\/((?:@[^/]+\/)?[^/]+)\//gm,
    )) {
      packages.add(name!);
    }
  }
  return [...packages].sort();
}

describe('start-up', () => {
  it.each([['--version'], ['--help'], ['help']])('`notarize %s` loads no package but commander', async (word) => {
    expect(await packagesLoaded([word])).toEqual(['commander']);
  });

  it.each([
    [['hash', 'doc.txt'], 0],
    // No receipt nor ledger: unknown, exit 6; the ledger and receipts were looked for all the same.
    [['verify', 'doc.txt'], 6],
    [['register', '--help'], 0],
  ] as const)('`notarize %j` loads no HTTP client', async (args, code) => {
    const packages = await packagesLoaded([...args], code);
    // The check can fail: these commands do load zod, as a command that validates.
    expect(packages).toContain('zod');
    expect(packages).not.toContain('undici');
  });

  /** The table renderer's packages (render.ts): width and colour. */
  const TABLES = ['chalk', 'string-width'];

  it.each([
    [['hash', 'doc.txt'], 0],
    [['register', 'doc.txt', '--json'], 0],
    // No receipt and an empty store: unknown, exit 6, as the table case below.
    [['verify', 'doc.txt', '--json'], 6],
    [['verify', 'doc.txt', '--output', 'ndjson'], 6],
  ] as const)('`notarize %j` (JSON, NDJSON, sha256sum lines) loads no table renderer', async (args, code) => {
    const packages = await packagesLoaded([...args], code);
    for (const name of TABLES) expect(packages).not.toContain(name);
  });

  it.each([
    [['config', 'path']],
    [['config', 'get', 'timeout']],
    [['config', 'set', 'retries', '2']],
    [['logout']],
    [['completion', 'bash']],
  ] as const)('`notarize %j` (a value, never a table) loads no table renderer', async (args) => {
    const packages = await packagesLoaded([...args]);
    for (const name of TABLES) expect(packages).not.toContain(name);
  });

  it.each([
    // No receipt: unknown, exit 6, one row.
    [['verify', 'doc.txt'], 6],
    [['config', 'list'], 0],
  ] as const)('a table loads it: `notarize %j`', async (args, code) => {
    const packages = await packagesLoaded([...args], code);
    for (const name of TABLES) expect(packages).toContain(name);
  });
});

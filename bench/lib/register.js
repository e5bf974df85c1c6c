/**
 * One registration run against a fresh sandbox (a child process on
 * 127.0.0.1), so every run meets the same server state: notarize itself,
 * the minimal undici script, or the shell loop. Each resolves with
 * { wallMs, peakKB, registered } and checks that every file was registered.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH, BIN } from './paths.js';
import { measure } from './proc.js';
import { startSandbox } from './sandbox.js';

/** The environment of every client: nothing of the user's notarize setup, no proxy for 127.0.0.1. */
function cleanEnv(extra) {
  const env = { ...process.env, NO_COLOR: '1', NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' };
  for (const key of Object.keys(env)) {
    if (/^NOTARIZE_/.test(key) || /^(https?|all)_proxy$/i.test(key) || key === 'GITHUB_ACTIONS') delete env[key];
  }
  return { ...env, ...extra };
}

let runNumber = 0;

async function withSandbox(fn, faults) {
  const sandbox = await startSandbox({ faults });
  try {
    return await fn(sandbox);
  } finally {
    await sandbox.stop();
  }
}

/**
 * `notarize register --files-from <list>` with a fresh store, its results as
 * NDJSON (a JSON array would hold every result until the end); `bin` selects
 * another build (A/B), `args` adds flags (--aggregate), `faults` is the sandbox's.
 */
export function runNotarize(workDir, listFile, count, { bin = BIN, args = [], faults } = {}) {
  return withSandbox(async (sandbox) => {
    const run = join(workDir, `notarize-${++runNumber}`);
    mkdirSync(run);
    const out = join(run, 'out.json');
    const env = cleanEnv({
      NOTARIZE_API_KEY: sandbox.apiKey,
      NOTARIZE_BASE_URL: sandbox.url,
      NOTARIZE_CONFIG_DIR: join(run, 'store'),
    });
    const argv = [bin, 'register', '--files-from', listFile, '--output', 'ndjson', ...args];
    const result = await measure(process.execPath, argv, { env, stdout: out, timeoutMs: 900_000 });
    const lines = readFileSync(out, 'utf8').split('\n').filter(Boolean);
    const registered = lines.filter((line) => JSON.parse(line).status === 'registered').length;
    if (registered !== count) throw new Error(`notarize registered ${registered} of ${count} files`);
    return { ...result, registered };
  }, faults);
}

/** bench/reference/minimal-undici.js over the same list, 8 in flight. */
export function runMinimal(workDir, listFile, count, { concurrency = 8, faults } = {}) {
  return runReference('minimal-undici.js', 'the minimal script', workDir, count, faults, (url, key) => [
    url,
    key,
    listFile,
    String(concurrency),
  ]);
}

/** bench/reference/minimal-store.js over the same list with a fresh store, 8 in flight. */
export function runMinimalStore(workDir, listFile, count, { faults } = {}) {
  return runWithStore('minimal-store', 'the minimal script with the store', workDir, listFile, count, faults);
}

/** bench/reference/minimal-journal.js over the same list with a fresh store, 8 in flight. */
export function runMinimalJournal(workDir, listFile, count, { faults } = {}) {
  return runWithStore('minimal-journal', 'the minimal script with a journal', workDir, listFile, count, faults);
}

/** A reference script `<script>.js` taking a store folder: a fresh one under `workDir`, 8 in flight. */
function runWithStore(script, name, workDir, listFile, count, faults) {
  const store = mkdtempSync(join(workDir, `${script}-`));
  return runReference(`${script}.js`, name, workDir, count, faults, (url, key) => [url, key, listFile, store, '8']);
}

/** bench/reference/minimal-aggregate.js: one root over the files of the list. */
export function runMinimalAggregate(workDir, listFile, count, { faults } = {}) {
  return runReference('minimal-aggregate.js', 'the minimal aggregate script', workDir, count, faults, (url, key) => [
    url,
    key,
    listFile,
  ]);
}

/** A script of bench/reference/ against a fresh sandbox; it prints how many files it registered. */
function runReference(script, name, workDir, count, faults, argsFor) {
  return withSandbox(async (sandbox) => {
    const out = join(workDir, `reference-${++runNumber}.out`);
    const result = await measure(
      process.execPath,
      [join(BENCH, 'reference', script), ...argsFor(sandbox.url, sandbox.apiKey)],
      { env: cleanEnv(), stdout: out, timeoutMs: 900_000 },
    );
    const registered = Number(readFileSync(out, 'utf8').trim());
    if (registered !== count) throw new Error(`${name} registered ${registered} of ${count} files`);
    return { ...result, registered };
  }, faults);
}

/** bench/reference/shell-loop.sh over the list (bash, sha256sum, curl). */
export function runShellLoop(workDir, listFile, count) {
  return withSandbox(async (sandbox) => {
    const out = join(workDir, `shell-${++runNumber}.out`);
    const script = join(BENCH, 'reference', 'shell-loop.sh');
    const result = await measure('bash', [script, sandbox.url, sandbox.apiKey, listFile], {
      env: cleanEnv(),
      stdout: out,
      timeoutMs: 900_000,
    });
    const registered = readFileSync(out, 'utf8').split('\n').filter(Boolean).length;
    if (registered !== count) throw new Error(`the shell loop registered ${registered} of ${count} files`);
    return { ...result, registered };
  });
}

/** Writes the list of `paths` (one per line) and returns its path. */
export function writeList(file, paths) {
  writeFileSync(file, `${paths.join('\n')}\n`);
  return file;
}

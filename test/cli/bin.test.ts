/**
 * bin/notarize.js itself, over a stand-in for the bundle: what the process
 * ends with when main() cannot end as it should. A wait that can never end
 * (a bug) would let Node end the run with its own exit 13 and no word; the
 * bin says so in one line and exits 1. A signal's exit is left as it is.
 */
import { copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, runProcess } from '../helpers/cli.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const tempDir = useTempDirs();

/** The bin beside a bundle whose main() is `main`: the rest of the bundle's exports do nothing. */
function binOver(main: string): string {
  const dir = tempDir();
  mkdirSync(join(dir, 'bin'));
  mkdirSync(join(dir, 'dist', 'bundle'), { recursive: true });
  copyFileSync(join(REPO_ROOT, 'bin', 'notarize.js'), join(dir, 'bin', 'notarize.js'));
  writeFileSync(
    join(dir, 'dist', 'bundle', 'cli.js'),
    `export const deferWasmTierUp = () => {};\nexport const exitOnSignals = () => {};\n` +
      `export const keepFileSizeSignalHarmless = () => {};\nexport const main = ${main};\n`,
  );
  return join(dir, 'bin', 'notarize.js');
}

describe('the bin', () => {
  it('main() waiting on what never comes: one line saying so, exit 1 (not 13), in text and --json', async () => {
    const bin = binOver('() => new Promise(() => {})');
    const text = await runProcess(process.execPath, [bin, 'register', 'x']);
    expect(text.code).toBe(1);
    expect(text.stderr).toBe(
      'notarize: unexpected error: the run stopped before its end, waiting for something that could not come ' +
        '(what it printed stands; run the same command again to finish the rest)\n',
    );
    const json = await runProcess(process.execPath, [bin, 'register', 'x', '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { code: 'unexpected', exitCode: 1 } });
  });

  it("main()'s own code, and a signal's exit (130), are left as they are, with no line added", async () => {
    for (const [main, code] of [
      ['async () => 0', 0],
      ['async () => 6', 6],
      ['() => process.exit(130)', 130],
    ] as const) {
      const run = await runProcess(process.execPath, [binOver(main), 'verify', 'x']);
      expect(run.code, main).toBe(code);
      expect(run.stderr, main).toBe('');
    }
  });

  it("on a Node older than package.json's engines: one line naming both versions, exit 2, before the bundle loads", async () => {
    const engines = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { engines: { node: string } })
      .engines.node;
    expect(engines).toBe('>=20.18.1');
    // The bundle would print 'loaded' when imported: an old Node must never get that far.
    const bin = binOver("async () => { process.stdout.write('loaded'); return 0; }");
    const asIf = (version: string) => {
      const preload = join(tempDir(), 'node-version.cjs');
      writeFileSync(
        preload,
        `Object.defineProperty(process.versions, 'node', { value: ${JSON.stringify(version)} });\n`,
      );
      return preload;
    };
    for (const version of ['18.20.8', '20.9.0', '20.18.0', '19.99.99']) {
      const text = await runProcess(process.execPath, ['-r', asIf(version), bin, '--version']);
      expect(text.code, version).toBe(2);
      expect(text.stdout, version).toBe('');
      expect(text.stderr, version).toBe(
        `notarize: notarize needs Node.js 20.18.1 or later; this is Node.js ${version} (install a newer Node.js and run it again)\n`,
      );
      const json = await runProcess(process.execPath, ['-r', asIf(version), bin, 'register', 'x', '--json']);
      expect(json.code, version).toBe(2);
      expect(JSON.parse(json.stderr), version).toMatchObject({ error: { code: 'node_too_old', exitCode: 2 } });
    }
    for (const version of ['20.18.1', '20.19.0', '21.0.0', '24.21.0', '100.0.0']) {
      const run = await runProcess(process.execPath, ['-r', asIf(version), bin, '--version']);
      expect(run.code, version).toBe(0);
      expect(run.stdout, version).toBe('loaded');
      expect(run.stderr, version).toBe('');
    }
  });

  it('with no bundle beside it (never built): one line saying how to build it, exit 2, no stack trace', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'bin'));
    copyFileSync(join(REPO_ROOT, 'bin', 'notarize.js'), join(dir, 'bin', 'notarize.js'));
    const text = await runProcess(process.execPath, [join(dir, 'bin', 'notarize.js'), '--version']);
    expect(text.code).toBe(2);
    expect(text.stdout).toBe('');
    expect(text.stderr).toBe(
      `notarize: notarize is not built here: ${join(dir, 'dist', 'bundle', 'cli.js')} is missing ` +
        `(run \`npm ci && npm run build\` in ${dir}/, or install the tarball \`npm pack\` makes)\n`,
    );
    const json = await runProcess(process.execPath, [join(dir, 'bin', 'notarize.js'), 'register', 'x', '--json']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { code: 'not_built', exitCode: 2 } });
    // A bundle that is there but fails to load (a chunk of it missing) is no "not built": Node's error stands.
    const broken = binOver('async () => 0');
    writeFileSync(
      join(broken, '..', '..', 'dist', 'bundle', 'cli.js'),
      "import './gone.js';\nexport const main = 0;\n",
    );
    const failed = await runProcess(process.execPath, [broken, '--version']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('ERR_MODULE_NOT_FOUND');
    expect(failed.stderr).toContain('gone.js');
  });

  it("run through a link (npm's bin links) under --preserve-symlinks-main: the bundle beside the real file loads", async () => {
    const bin = binOver('async () => { process.stdout.write("loaded"); return 0; }');
    const links = tempDir();
    symlinkSync(bin, join(links, 'notarize'));
    const env = { NODE_OPTIONS: '--preserve-symlinks-main' };
    const run = await runProcess(process.execPath, [join(links, 'notarize'), '--version'], env);
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('loaded');
    expect(run.code).toBe(0);
    // Not built: the message names the real folder, not the link's.
    const unbuilt = tempDir();
    mkdirSync(join(unbuilt, 'bin'));
    copyFileSync(join(REPO_ROOT, 'bin', 'notarize.js'), join(unbuilt, 'bin', 'notarize.js'));
    symlinkSync(join(unbuilt, 'bin', 'notarize.js'), join(links, 'unbuilt'));
    const missing = await runProcess(process.execPath, [join(links, 'unbuilt'), '--version'], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(
      `notarize is not built here: ${join(unbuilt, 'dist', 'bundle', 'cli.js')} is missing`,
    );
  });
});

/**
 * bin/notarize.js itself, over a stand-in for the bundle: what the process
 * ends with when main() cannot end as it should. A wait that can never end
 * (a bug) would let Node end the run with its own exit 13 and no word; the
 * bin says so in one line and exits 1. A signal's exit is left as it is.
 */
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
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
});

/**
 * The spinner on a real terminal: a pty made by `script` (util-linux), as a
 * user's terminal or `docker exec -t` gives one. The process boundary is the
 * point: the spinner is shown only when stderr is a terminal.
 */
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bed } from '../helpers/bed.js';
import { BIN, describeRun, runProcess } from '../helpers/cli.js';
import { parseFaults } from '../../src/sandbox/server.js';
import { storePaths } from '../helpers/store.js';

let bed: Bed;
beforeAll(async () => {
  bed = await Bed.create({ keyInEnv: true });
});
afterAll(() => bed.finish());

/** A shell-quoted word. */
const quoted = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

describe('the spinner', () => {
  // A pty given no size (`script`, `docker exec -t`, `ssh -tt` from a script) says 0 columns: ora divided
  // by it, and its clearing loop never ended, holding the event loop (no signal answered).
  it('on a terminal of 0 columns: the run ends, its output bounded', async () => {
    const hash = await bed.write('zero-columns.txt', 'spun on a terminal with no size\n');
    // Long enough for the spinner to draw and clear several frames (80 ms each).
    bed.sandbox.addFaults(parseFaults('request:latency=600*1'));
    // The shell's pid is notarize's (exec): a run that hangs is killed by it, `script` leaving it behind.
    const pidFile = bed.path('zero-columns.pid');
    const command = [`echo $$ > ${quoted(pidFile)} &&`, 'stty cols 0 rows 0 &&', 'exec', quoted(process.execPath)]
      .concat([quoted(BIN), 'register', '--no-complete', quoted(bed.path('zero-columns.txt'))])
      .join(' ');
    const run = await runProcess('script', ['-qec', command, '/dev/null'], bed.env(), {
      cwd: bed.workDir,
      timeoutMs: 15_000,
    }).catch((error: unknown) => {
      // Timed out: `script` was killed, not notarize under it.
      process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
      throw error;
    });
    bed.record(run);
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stdout).toMatch(/[\u2800-\u28ff]/); // the spinner was drawn (ora's frames, braille)
    expect(run.stdout.length).toBeLessThan(100_000);
    expect(existsSync(storePaths(bed.storeDir, bed.sandbox.url).pending(hash))).toBe(true);
  });
});

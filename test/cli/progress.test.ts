/**
 * Progress on stderr only when it is a terminal: script(1) gives the spawned
 * bin a pseudo-terminal; a plain pipe, or CI set, must show none.
 */
import { describe, expect, it } from 'vitest';
import { type Bed, useBed } from '../helpers/bed.js';
import { BIN, describeRun, runProcess } from '../helpers/cli.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

const PROGRESS = /registered \d+\/3, hashed/;

describe('progress', () => {
  it('shows items done/total and bytes hashed on a terminal, then clears the line', async () => {
    for (const name of ['a.txt', 'b.txt', 'c.txt']) await bed.file(`docs/${name}`);
    const command = `'${process.execPath}' '${BIN}' register -r docs`;
    const run = await runProcess('script', ['-q', '-e', '-c', command, '/dev/null'], bed.env(), {
      cwd: bed.workDir,
      timeoutMs: 20_000,
    });
    bed.record(run);
    expect(run.code, describeRun(run)).toBe(0);
    // script(1) merges the pty's stdout and stderr into its stdout.
    expect(run.stdout).toMatch(/registered 3\/3, hashed \d+(\.\d)? B/);
    expect(run.stdout).toContain('\r\u001b[K');
    expect(run.stdout).toMatch(/3 items: 3 registered/);
    expect(bed.ledgerHashes()).toHaveLength(3);
  });

  it('on a terminal 40 columns wide, every progress line leaves room for a ^C: none wraps, so each is cleared whole', async () => {
    for (const name of ['a.txt', 'b.txt', 'c.txt']) await bed.file(`narrow/${name}`);
    const command = `stty cols 40; '${process.execPath}' '${BIN}' register --aggregate -r narrow`;
    const run = await runProcess('script', ['-q', '-e', '-c', command, '/dev/null'], bed.env(), {
      cwd: bed.workDir,
      timeoutMs: 20_000,
    });
    bed.record(run);
    expect(run.code, describeRun(run)).toBe(0);
    const progress = run.stdout.split('\r\u001b[K').slice(1, -1);
    expect(progress).toContain('registering the Merkle root of 3 doc…');
    // 37 columns at most: the '^C' a Ctrl-C echoes after it stays on its row.
    for (const line of progress) expect([...line].length, line).toBeLessThanOrEqual(37);
  });

  it('shows nothing when stderr is not a terminal, or when CI is set on a terminal', async () => {
    for (const name of ['a.txt', 'b.txt', 'c.txt']) await bed.file(`docs/${name}`);
    const piped = await bed.run(['register', '-r', 'docs']);
    expect(piped.code, describeRun(piped)).toBe(0);
    expect(piped.stderr).not.toMatch(PROGRESS);
    expect(piped.stderr).not.toContain('\r');

    for (const name of ['a.txt', 'b.txt', 'c.txt']) await bed.file(`ci/${name}`);
    const command = `'${process.execPath}' '${BIN}' register -r ci`;
    const underCi = await runProcess(
      'script',
      ['-q', '-e', '-c', command, '/dev/null'],
      { ...bed.env(), CI: 'true' },
      { cwd: bed.workDir, timeoutMs: 20_000 },
    );
    bed.record(underCi);
    expect(underCi.code, describeRun(underCi)).toBe(0);
    expect(underCi.stdout).toMatch(/3 items: 3 registered/);
    expect(underCi.stdout).not.toMatch(PROGRESS);
    expect(underCi.stdout).not.toContain('\u001b[K');
  });

  it('on a dumb terminal (TERM=dumb) draws nothing: no escape sequence at all', async () => {
    for (const name of ['a.txt', 'b.txt', 'c.txt']) await bed.file(`dumb/${name}`);
    const command = `'${process.execPath}' '${BIN}' register -r dumb && '${process.execPath}' '${BIN}' register dumb/a.txt --force`;
    const run = await runProcess(
      'script',
      ['-q', '-e', '-c', command, '/dev/null'],
      { ...bed.env(), TERM: 'dumb' },
      {
        cwd: bed.workDir,
        timeoutMs: 20_000,
      },
    );
    bed.record(run);
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stdout).toMatch(/3 items: 3 registered/);
    expect(run.stdout).not.toContain('\u001b');
    expect(run.stdout).not.toMatch(PROGRESS);
  });

  it('CI=false (or 0) on a terminal is not CI: progress shown, and the spinner drawn, not printed as lines', async () => {
    for (const name of ['a.txt', 'b.txt', 'c.txt']) await bed.file(`local/${name}`);
    await bed.file('one.txt');
    const command = `'${process.execPath}' '${BIN}' register -r local && '${process.execPath}' '${BIN}' register one.txt`;
    for (const ci of ['false', '0']) {
      const run = await runProcess(
        'script',
        ['-q', '-e', '-c', command, '/dev/null'],
        { ...bed.env(), CI: ci },
        {
          cwd: bed.workDir,
          timeoutMs: 20_000,
        },
      );
      bed.record(run);
      expect(run.code, describeRun(run)).toBe(0);
      expect(run.stdout).toMatch(PROGRESS);
      // ora left to itself reads any CI as CI and prints each spinner text as a line '- …'.
      expect(run.stdout).not.toMatch(/^- /m);
      await bed.file(`local/${ci}.txt`);
      await bed.file(`one-${ci}.txt`);
    }
  });
});

/**
 * The spinner on a real terminal: a pty made by `script` (util-linux), as a
 * user's terminal or `docker exec -t` gives one. The process boundary is the
 * point: the spinner is shown only when stderr is a terminal.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
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

/**
 * Runs `register <file>` on a terminal (script(1)) with `env`; types Ctrl-C
 * there once `ready(screen)` (standard input stays open: what is written to
 * it is typed), expects exit 130, and gives what the terminal showed.
 */
async function typeCtrlC(
  file: string,
  env: NodeJS.ProcessEnv,
  ready: (screen: string) => boolean,
  waitingFor: string,
): Promise<string> {
  const command = ['exec', quoted(process.execPath), quoted(BIN), 'register', quoted(file)].join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], { cwd: bed.workDir, env });
  let screen = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (screen += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  try {
    const deadline = Date.now() + 10_000;
    while (!ready(screen)) {
      if (Date.now() > deadline) throw new Error(`${waitingFor}: ${screen}`);
      await sleep(20);
    }
    child.stdin.write('\u0003');
    const code = await Promise.race([exited, sleep(10_000).then(() => 'still running')]);
    expect(code, screen).toBe(130);
  } finally {
    child.kill('SIGKILL');
  }
  return screen;
}

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

  it('Ctrl-C typed while it turns at "requesting": exit 130, the line said where the spinner was, nothing paid', async () => {
    const hash = await bed.write('ctrl-c.txt', 'interrupted at the terminal\n');
    // The request step answers after 3 s: time for the spinner to show, and for the ^C.
    bed.sandbox.addFaults(parseFaults('request:latency=3000*1'));
    const screen = await typeCtrlC(
      bed.path('ctrl-c.txt'),
      bed.env(),
      (shown) => /[\u2800-\u28ff] requesting/.test(shown),
      'the spinner never said "requesting"',
    );
    expect(screen).toContain('interrupted (SIGINT)');
    // The spinner's last frame is cleared, and the message written over its line, not left above it.
    const between = screen.slice(screen.lastIndexOf('requesting'), screen.indexOf('notarize: interrupted'));
    expect(between).not.toContain('\n');
    expect(between.endsWith('\u001b[K')).toBe(true);
    expect(bed.sandbox.calls.map((call) => call.route)).not.toContain('forfait');
    // The request went out before the ^C: its session, once answered, is never paid by this run.
    expect(existsSync(storePaths(bed.storeDir, bed.sandbox.url).ledger(hash))).toBe(false);
  });

  it('Ctrl-C on a dumb terminal (TERM=dumb): the interruption line has no escape sequence either', async () => {
    await bed.write('dumb-ctrl-c.txt', 'interrupted at a dumb terminal\n');
    bed.sandbox.addFaults(parseFaults('request:latency=3000*1'));
    const before = bed.sandbox.calls.length;
    // Nothing is drawn there: the request reaching the sandbox says it is waiting for the answer.
    const screen = await typeCtrlC(
      bed.path('dumb-ctrl-c.txt'),
      { ...bed.env(), TERM: 'dumb' },
      () => bed.sandbox.calls.slice(before).some((call) => call.route === 'request'),
      'no request step',
    );
    expect(screen).toContain('notarize: interrupted (SIGINT)');
    expect(screen).not.toContain('\u001b');
  });

  it('NO_COLOR: the spinner is drawn without colour', async () => {
    await bed.write('no-colour.txt', 'a spinner without colour\n');
    bed.sandbox.addFaults(parseFaults('request:latency=600*1'));
    const command = ['exec', quoted(process.execPath), quoted(BIN), 'register', quoted(bed.path('no-colour.txt'))].join(
      ' ',
    );
    const run = await runProcess(
      'script',
      ['-qec', command, '/dev/null'],
      { ...bed.env(), NO_COLOR: '1', TERM: 'xterm-256color' },
      {
        cwd: bed.workDir,
        timeoutMs: 15_000,
      },
    );
    bed.record(run);
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stdout).toMatch(/[\u2800-\u28ff]/);
    // No foreground colour (ESC [ 3x m) in any frame.
    expect(run.stdout).not.toMatch(new RegExp(`${'\u001b'}\\[3\\dm`));
  });
});

/**
 * A reader that closes the pipe early (`notarize hash -r dir | head -1`) gets
 * its lines; notarize neither crashes with an unhandled EPIPE nor prints a
 * stack trace. Spawned: the closed pipe between two processes is the point.
 */
import { existsSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it, onTestFinished } from 'vitest';
import { STACK_LINE, BIN, runProcess } from '../helpers/cli.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'notarize-pipes-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

it('hash -r into `head -1`: one line, notarize exits 0, no EPIPE crash', async () => {
  // Enough output that it cannot all fit in the pipe before head exits.
  await Promise.all(Array.from({ length: 3000 }, (_, i) => writeFile(join(dir, `f${i}`), `${i}\n`)));
  const script = `"$NODE" "$BIN" hash -r "$DIR" | head -1; echo "notarize exited \${PIPESTATUS[0]}" >&2`;
  const run = await runProcess(
    'bash',
    ['-c', script],
    { NODE: process.execPath, BIN, DIR: dir, PATH: process.env.PATH },
    { timeoutMs: 60_000 },
  );
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toMatch(/^[0-9a-f]{64} {2}\S+\n$/);
  expect(run.stderr).toContain('notarize exited 0');
  expect(run.stderr).not.toMatch(/EPIPE/);
  expect(run.stderr).not.toMatch(STACK_LINE);
});

// /dev/full: every write fails with ENOSPC, as on a full disk.
it.runIf(existsSync('/dev/full'))(
  'stdout on a full disk: one line saying the output was lost, exit 1 (not 0); a failed run keeps its own code',
  async () => {
    const doc = join(dir, 'doc.txt');
    await writeFile(doc, 'doc\n');
    const toFull = (args: string) =>
      runProcess('bash', ['-c', `"$NODE" "$BIN" ${args} > /dev/full`], {
        NODE: process.execPath,
        BIN,
        DOC: doc,
        PATH: process.env.PATH,
        NOTARIZE_CONFIG_DIR: join(dir, 'full-store'),
      });
    const hashed = await toFull('hash "$DOC"');
    expect(hashed.code).toBe(1);
    expect(hashed.stderr).toMatch(/^notarize: could not write the output: ENOSPC \(.*run the command again\)\n$/);
    // hash registers nothing: no ledger to point at; a command that registers points at it.
    expect(hashed.stderr).not.toContain('ledger');
    const completed = await toFull('complete --all --json');
    expect(completed.code).toBe(1);
    expect(JSON.parse(completed.stderr.trim().split('\n').at(-1)!)).toMatchObject({
      error: { code: 'output_not_written', hint: expect.stringContaining('a registration made is in the ledger') },
    });
    const json = await toFull('hash "$DOC" --json');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { code: 'output_not_written', exitCode: 1 } });
    // A run that failed and printed: its own code, which the last error line says too (it said 1).
    const failed = await toFull('hash "$DOC" "$DOC.missing" --json');
    expect(failed.code).toBe(2);
    const lines = failed.stderr
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { error: object });
    expect(lines.at(-1)).toMatchObject({ error: { code: 'output_not_written', exitCode: 2 } });
    const version = await toFull('--version');
    expect(version.code).toBe(1);
    // Its own failure (exit 2: nothing was sent); it printed nothing, so nothing was lost.
    const missing = await toFull('hash "$DOC.missing"');
    expect(missing.code).toBe(2);
    expect(missing.stderr).not.toContain('could not write the output');
    // A command that succeeded and prints nothing on stdout: exit 0 (/dev/full refuses even an empty write).
    const set = await toFull('config set timeout 5000');
    expect(set.code, set.stderr).toBe(0);
    expect(set.stderr).not.toContain('could not write the output');
    for (const run of [hashed, json, failed, version, missing, set]) expect(run.stderr).not.toMatch(STACK_LINE);
  },
);

it('stdout a socket whose reader resets it early: like `| head`, exit 0 and no error line', async () => {
  const doc = join(dir, 'doc.txt');
  await writeFile(doc, 'doc\n');
  // The same file 30,000 times: more lines than the socket's buffers hold before the reset.
  await writeFile(join(dir, 'list.txt'), `${doc}\n`.repeat(30_000));
  const server = createServer((socket) => socket.once('data', () => socket.resetAndDestroy()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  const run = await runProcess(
    'bash',
    ['-c', `"$NODE" "$BIN" hash --files-from "$LIST" > /dev/tcp/127.0.0.1/$PORT`],
    { NODE: process.execPath, BIN, LIST: join(dir, 'list.txt'), PORT: String(port), PATH: process.env.PATH },
    { timeoutMs: 60_000 },
  );
  expect(run.code, run.stderr).toBe(0);
  expect(run.stderr).toBe('');
});

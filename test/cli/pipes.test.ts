/**
 * A reader that closes the pipe early (`notarize hash -r dir | head -1`) gets
 * its lines; notarize neither crashes with an unhandled EPIPE nor prints a
 * stack trace. Spawned: the closed pipe between two processes is the point.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
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

/**
 * Issue 10, finding 9: inputs and store paths that hung notarize for good.
 * A FIFO swapped in after the directory walk (the pool fell back to a
 * blocking open), /proc/kmsg (a regular-looking file whose reads wait), a
 * FIFO at config.json (a blocking read on the main thread, deaf to
 * signals), and NOTARIZE_CONFIG_DIR under /proc (Node's recursive mkdir
 * looping at 100 % CPU). Each now ends promptly with a one-line error, exit
 * 2. Every run is bounded well below the helper's own kill timeout, so a
 * regression fails here as "took too long", not as a hung suite.
 */
import { execFileSync, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { existsSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hashFile } from '../../src/core/hash.js';
import { HashPool } from '../../src/core/hash-pool.js';
import { expandInputs, type InputItem } from '../../src/core/inputs.js';
import { InputFileError } from '../../src/errors.js';
import { serviceDirName } from '../../src/store/store.js';
import { useTempDir } from '../helpers/temp-dirs.js';
import { describeRun, runCli, spawnCli, STACK_LINE, type Run, type SpawnedProcess } from '../helpers/cli.js';
import { Readable } from 'node:stream';

/** What "promptly" means here: a cold start of the bin is a few hundred ms, even on a loaded machine. */
const PROMPT_MS = 5000;

const unix = process.platform !== 'win32';
const linux = process.platform === 'linux';

let dir: string;
useTempDir('notarize-hangs-', (made) => (dir = made));

const pools: HashPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

/** Runs the bin with its own store (unless `env` names one), and checks it ended within PROMPT_MS. */
async function promptly(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const started = Date.now();
  const run = await runCli(
    args,
    { NOTARIZE_CONFIG_DIR: join(dir, 'store'), NOTARIZE_BASE_URL: 'http://127.0.0.1:9', ...env },
    { cwd: dir, timeoutMs: 15_000 },
  );
  expect(Date.now() - started, describeRun(run)).toBeLessThan(PROMPT_MS);
  return run;
}

/** The one line of stderr (a one-line error), checked to be one line. */
function oneLine(run: Run): string {
  const lines = run.stderr.trimEnd().split('\n');
  expect(lines, describeRun(run)).toHaveLength(1);
  expect(run.stderr).not.toMatch(STACK_LINE);
  return lines[0]!;
}

function mkfifo(path: string): void {
  execFileSync('mkfifo', [path]);
}

/** `notarize hash --files-from <list>`, run in `dir` with its own store. */
function hashListFrom(list: string): SpawnedProcess {
  return spawnCli(
    ['hash', '--files-from', list],
    { NOTARIZE_CONFIG_DIR: join(dir, 'store'), NOTARIZE_BASE_URL: 'http://127.0.0.1:9' },
    { cwd: dir, timeoutMs: 15_000 },
  );
}

/** SIGTERM ends `spawned` within PROMPT_MS: exit 143, its one line. */
async function endsAtSigterm(spawned: SpawnedProcess): Promise<void> {
  const started = Date.now();
  spawned.child.kill('SIGTERM');
  const run = await spawned.done;
  expect(Date.now() - started, describeRun(run)).toBeLessThan(PROMPT_MS);
  expect(run.code, describeRun(run)).toBe(143);
  expect(oneLine(run)).toBe('notarize: interrupted (SIGTERM)');
}

describe.skipIf(!unix)('a FIFO where a document was', () => {
  it('--files-from naming a FIFO: a failed item, exit 2, at once', async () => {
    mkfifo(join(dir, 'pipe'));
    writeFileSync(join(dir, 'doc.txt'), 'doc\n');
    writeFileSync(join(dir, 'list.txt'), 'pipe\ndoc.txt\n');
    const run = await promptly(['hash', '--files-from', 'list.txt']);
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stdout).toMatch(/ {2}doc\.txt\n$/);
    expect(run.stderr).toMatch(/^notarize: pipe: not a regular file\n/);
  });

  it('--files-from a FIFO no writer has opened: SIGTERM still ends it, exit 143 (the open no longer holds the exit)', async () => {
    mkfifo(join(dir, 'list.fifo'));
    const spawned = hashListFrom('list.fifo');
    // Bounded: the process is waiting in the FIFO's open once it has started (no output to wait for).
    await sleep(700);
    await endsAtSigterm(spawned);
  });

  /**
   * `hash --files-from <fifo>` whose writer sends one name, then holds the
   * FIFO open silent (a producer stuck) for longer than the test waits;
   * `then` runs once that name is hashed, the sign that the read now waits.
   */
  async function withSilentWriter(fifo: string, then: (spawned: SpawnedProcess) => Promise<void>): Promise<void> {
    mkfifo(join(dir, fifo));
    writeFileSync(join(dir, 'doc.txt'), 'doc\n');
    const spawned = hashListFrom(fifo);
    const writer = spawn('bash', ['-c', `exec 3>${fifo}; echo doc.txt >&3; sleep 30`], { cwd: dir, stdio: 'ignore' });
    try {
      // Bounded: a line within 15 s, or the test fails.
      const first = await Promise.race([spawned.firstLine, sleep(15_000, 'no line within 15 s')]);
      expect(first).toMatch(/ {2}doc\.txt$/);
      await then(spawned);
    } finally {
      writer.kill('SIGKILL');
    }
  }

  it('--files-from a FIFO whose writer sent a line, then holds it open silent: SIGTERM ends it, exit 143', async () => {
    await withSilentWriter('silent.fifo', endsAtSigterm);
  });

  it("a signal writes nothing at the list's path: a file put there since is left as it is", async () => {
    await withSilentWriter('swapped.fifo', async (spawned) => {
      // The FIFO replaced by a file of the user's while notarize reads the one it opened.
      unlinkSync(join(dir, 'swapped.fifo'));
      writeFileSync(join(dir, 'swapped.fifo'), 'IMPORTANT DATA\n');
      await endsAtSigterm(spawned);
      expect(readFileSync(join(dir, 'swapped.fifo'), 'utf8')).toBe('IMPORTANT DATA\n');
    });
  });

  it('a long list through a FIFO, of documents quick to hash: SIGTERM ends it long before the list is drained', async () => {
    mkdirSync(join(dir, 'many'));
    for (let i = 0; i < 1000; i++) writeFileSync(join(dir, 'many', String(i)), '');
    const names = Array.from({ length: 1000 }, (_, i) => `many/${i}\n`).join('');
    writeFileSync(join(dir, 'names.txt'), names.repeat(100));
    mkfifo(join(dir, 'long.fifo'));
    const spawned = hashListFrom('long.fifo');
    const writer = spawn('bash', ['-c', 'cat names.txt > long.fifo'], { cwd: dir, stdio: 'ignore' });
    try {
      const first = await Promise.race([spawned.firstLine, sleep(15_000, 'no line within 15 s')]);
      expect(first).toMatch(/ {2}many\/0$/);
      await endsAtSigterm(spawned);
      // Handled between names, not once the 100,000 were hashed (the event loop had no turn before).
      const run = await spawned.done;
      expect(run.stdout.split('\n').length).toBeLessThan(100_000);
    } finally {
      writer.kill('SIGKILL');
    }
  });

  /** A file listed as regular (the walk's stat), then replaced by a FIFO before it is opened. */
  async function swappedAfterStat(): Promise<string> {
    const path = join(dir, 'doc.bin');
    writeFileSync(path, Buffer.alloc(1024 * 1024, 1));
    const expansion = await expandInputs([path], {}, Readable.from([]));
    const items: InputItem[] = [];
    for await (const item of expansion.items) items.push(item);
    expect(items).toMatchObject([{ kind: 'file', path }]);
    unlinkSync(path);
    mkfifo(path);
    return path;
  }

  it('the worker pool refuses a file turned FIFO after the walk, without blocking (no fallback)', async () => {
    const path = await swappedAfterStat();
    const pool = new HashPool(2);
    pools.push(pool);
    const error = await pool.hash(path).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputFileError);
    expect((error as InputFileError).reason).toBe('not a regular file');
  });

  it('so does the single-file path (hashFile)', async () => {
    const path = await swappedAfterStat();
    await expect(hashFile(path)).rejects.toThrow(`'${path}' is not a regular file`);
  });

  it('a FIFO at config.json: `config list` ends at once with exit 2 naming it', async () => {
    const store = join(dir, 'store');
    mkdirSync(store, { mode: 0o700 });
    mkfifo(join(store, 'config.json'));
    const run = await promptly(['config', 'list']);
    expect(run.code, describeRun(run)).toBe(2);
    expect(oneLine(run)).toContain(`${join(store, 'config.json')}: it is not a regular file`);
  });

  it('a FIFO at credentials.json: `logout` ends at once with exit 2 naming it', async () => {
    const store = join(dir, 'store');
    mkdirSync(store, { mode: 0o700 });
    mkfifo(join(store, 'credentials.json'));
    const run = await promptly(['logout']);
    expect(run.code, describeRun(run)).toBe(2);
    expect(oneLine(run)).toContain(`${join(store, 'credentials.json')}: it is not a regular file`);
  });

  it('a FIFO as a pending session file: `pending` ends at once, warning about it', async () => {
    const pending = join(dir, 'store', 'services', serviceDirName('http://127.0.0.1:9'), 'pending');
    mkdirSync(pending, { recursive: true, mode: 0o700 });
    mkfifo(join(pending, `${'a'.repeat(64)}.json`));
    const run = await promptly(['pending']);
    // A listing warns about an entry it cannot read and goes on (as for a damaged one).
    expect(run.stderr, describeRun(run)).toMatch(/^warning: cannot read store file .*\.json: it is not a regular file/);
  });

  it('a FIFO at a lock file: `pending drop` ends at once with exit 2 naming it, never waits on it', async () => {
    const hash = 'b'.repeat(64);
    const service = join(dir, 'store', 'services', serviceDirName('http://127.0.0.1:9'));
    mkdirSync(join(service, 'locks'), { recursive: true, mode: 0o700 });
    mkfifo(join(service, 'locks', `${hash}.lock`));
    const run = await promptly(['pending', 'drop', hash]);
    expect(run.code, describeRun(run)).toBe(2);
    expect(oneLine(run)).toContain(`${hash}.lock is not a lock: it is not a regular file`);
  });
});

describe.skipIf(!linux)('kernel pseudo-files', () => {
  it.skipIf(!existsSync('/proc/kmsg'))(
    "`hash /proc/kmsg` ends at once: its failure line, the run's, exit 2",
    async () => {
      const run = await promptly(['hash', '/proc/kmsg']);
      expect(run.code, describeRun(run)).toBe(2);
      // Refused before any read, whoever runs it: a read could wait for kernel messages, or consume them.
      expect(run.stderr).not.toMatch(STACK_LINE);
      expect(run.stderr.trimEnd().split('\n')).toEqual([
        'notarize: /proc/kmsg: not a regular file (a pseudo-file of the kernel, as in /proc or /sys)',
        'notarize: 1 of 1 file could not be read',
      ]);
    },
  );

  it('a /proc file that reads fine (/proc/self/status, size 0) is refused too, not hashed as empty', async () => {
    const run = await promptly(['hash', '/proc/self/status', '/proc/version']);
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('notarize: /proc/self/status: not a regular file (a pseudo-file of the kernel');
  });

  it('NOTARIZE_CONFIG_DIR=/proc/x: `pending` ends at once with a one-line error, exit 2', async () => {
    const run = await promptly(['pending'], { NOTARIZE_CONFIG_DIR: '/proc/x' });
    expect(run.code, describeRun(run)).toBe(2);
    expect(oneLine(run)).toMatch(/^notarize: cannot use the store directory \/proc\/x: ENOENT/);
  });

  it('--receipt-dir under /proc: exit 2 before anything is sent', async () => {
    writeFileSync(join(dir, 'doc.txt'), 'doc\n');
    const run = await promptly(['register', 'doc.txt', '--receipt-dir', '/proc/x/receipts']);
    expect(run.code, describeRun(run)).toBe(2);
    expect(oneLine(run)).toContain(
      '--receipt-dir /proc/x/receipts cannot be created: its folder does not exist, or cannot hold files',
    );
  });
});

/**
 * Out of file descriptors (src/fd-shortage.ts): waited out where an open can
 * be tried again, and a concurrency that cannot fit lowered, in a real
 * process under a real `ulimit -n`.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import {
  descriptorsLeft,
  fitConcurrency,
  isFdShortage,
  loadingModule,
  readOr,
  refusalAfterSending,
  whenFdsFree,
} from '../../src/fd-shortage.js';
import { fileErrorReason } from '../../src/core/hash.js';
import { errorJson, UsageError } from '../../src/errors.js';
import { useBed, type Bed } from '../helpers/bed.js';
import { BIN, describeRun, runProcess } from '../helpers/cli.js';
import { sha256 } from '../helpers/documents.js';
import { notarizeEnv } from '../helpers/env.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const errno = (code: string) => Object.assign(new Error(`${code}: whatever`), { code });
const tempDir = useTempDirs();
/** prlimit (util-linux) changes a running process's limits: a shortage that comes and goes. */
const hasPrlimit = spawnSync('prlimit', ['--version']).status === 0;

describe('whenFdsFree', () => {
  it('runs an open again while descriptors are short, and gives its value', async () => {
    let calls = 0;
    const value = await whenFdsFree(() => {
      calls++;
      if (calls < 3) throw errno(calls === 1 ? 'EMFILE' : 'ENFILE');
      return 'opened';
    });
    expect(value).toBe('opened');
    expect(calls).toBe(3);
  });

  it('throws any other error at once, and a shortage once the budget is spent', async () => {
    let calls = 0;
    const other = await whenFdsFree(() => {
      calls++;
      throw errno('ENOENT');
    }).catch((error: unknown) => error);
    expect(other).toMatchObject({ code: 'ENOENT' });
    expect(calls).toBe(1);
    calls = 0;
    const started = Date.now();
    const short = await whenFdsFree(
      () => {
        calls++;
        throw errno('EMFILE');
      },
      // Room for several tries on a loaded machine too (waits of 1, 2, 4... ms): with 60 ms, a full
      // suite beside it left room for two.
      { budgetMs: 500 },
    ).catch((error: unknown) => error);
    expect(short).toMatchObject({ code: 'EMFILE' });
    expect(calls).toBeGreaterThan(2);
    // It ends: the budget and one wait, whatever the load (a bound, not a timing).
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("spends its budget in this process's own time: the wall clock stepped back does not stretch it", async () => {
    const wall = Date.now.bind(Date);
    let asked = 0;
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => wall() - (asked++ === 0 ? 0 : 3_600_000));
    try {
      const short = whenFdsFree(
        () => {
          throw errno('EMFILE');
        },
        { budgetMs: 60 },
      ).catch((error: unknown) => error);
      const outcome = await Promise.race([short, sleep(5000).then(() => 'still waiting after 5 s')]);
      expect(outcome).toMatchObject({ code: 'EMFILE' });
    } finally {
      clock.mockRestore();
    }
  });

  it('waits out only the shortages it is told to (onlyIf), as a wrapped one (a cause) counts', async () => {
    let calls = 0;
    const error = await whenFdsFree(
      () => {
        calls++;
        throw new Error('could not save', { cause: errno('EMFILE') });
      },
      { onlyIf: () => false },
    ).catch((e: unknown) => e);
    expect(isFdShortage(error)).toBe(true);
    expect(calls).toBe(1);
  });
});

describe('readOr (a read whose failure is taken for "nothing there")', () => {
  it('waits out a shortage, gives what any other failure makes, and throws a shortage that outlasts the wait', async () => {
    let calls = 0;
    const read = () => {
      calls++;
      if (calls < 3) throw errno('EMFILE');
      return 'read';
    };
    // A moment without a descriptor is no "nothing there": a manifest read in one made a run pay again (r84).
    expect(await readOr(read, () => 'nothing there')).toBe('read');
    expect(calls).toBe(3);
    expect(
      await readOr(
        () => Promise.reject(errno('ENOENT')),
        (error) => error,
      ),
    ).toMatchObject({ code: 'ENOENT' });
    const short = await readOr(
      () => {
        // Wrapped, as a StoreError wraps it.
        throw new Error('cannot read tree manifest', { cause: errno('ENFILE') });
      },
      () => 'nothing there',
      { budgetMs: 60 },
    ).catch((error: unknown) => error);
    // As a document's own open that finds none: exit 2 and the remedy, never "unexpected error" (r86).
    expect(short).toBeInstanceOf(UsageError);
    expect(short).toMatchObject({ code: 'disk_refused', exitCode: 2 });
    expect((short as UsageError).hint).toBe(
      "raise the limit of open files (ulimit -n), or lower register's -j, then run the command again",
    );
    expect(isFdShortage(short)).toBe(true);

    // After something was sent (the service's 409, a paid completion): exit 1, never "nothing was sent" (r87).
    const after = refusalAfterSending(short, 'the registration itself is done');
    expect(after).toMatchObject({ code: 'receipt_write', exitCode: 1 });
    expect((after as UsageError).message).toBe(
      'this process has too many files open to read the receipt folder (ENFILE)',
    );
    expect((after as UsageError).hint).toBe(
      "raise the limit of open files (ulimit -n), or lower register's -j; the registration itself is done",
    );
    // Anything else is left as it is.
    const other = new UsageError('not a shortage');
    expect(refusalAfterSending(other)).toBe(other);
    const raw = errno('EMFILE');
    expect(refusalAfterSending(raw)).toBe(raw);
  });
});

it('a document that still cannot be opened says what to change', () => {
  for (const code of ['EMFILE', 'ENFILE'])
    expect(fileErrorReason({ code })).toBe(
      "too many files open at once (raise the limit of open files (ulimit -n), or lower register's -j)",
    );
});

describe('fitConcurrency', () => {
  it('keeps what fits, and lowers what does not with a warning that says why', () => {
    expect(fitConcurrency(8, 3, 0, 1000)).toEqual({ concurrency: 8 });
    expect(fitConcurrency(16, 3, 0, 44)).toEqual({
      concurrency: 12,
      warning:
        '-j 16 would hold about 56 more files open, and this process may open 44 more (ulimit -n): 12 at a time instead',
    });
    expect(fitConcurrency(8, 3, 0, 5).concurrency).toBe(1);
    // 8 hash workers (4 descriptors each) yet to start leave room for one.
    expect(fitConcurrency(8, 3, 32, 44)).toEqual({
      concurrency: 1,
      warning:
        '-j 8 would hold about 64 more files open, and this process may open 44 more (ulimit -n): 1 at a time instead',
    });
  });

  it.runIf(process.platform === 'linux')("reads what is left of this process's limit from /proc", () => {
    const soft = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
    const left = descriptorsLeft();
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(Number(soft));
  });
});

describe('in a process out of descriptors (ulimit -n)', () => {
  it('a store write waits for a descriptor to be freed instead of failing (a record answered is not lost)', async () => {
    const dir = tempDir();
    const file = join(dir, 'record.json');
    // Every descriptor taken, then the write started, then three freed 150 ms later.
    const program = `
      import { closeSync, openSync } from 'node:fs';
      import { pathToFileURL } from 'node:url';
      const [dist, file] = process.argv.slice(1);
      const { writeFileAtomic } = await import(pathToFileURL(dist + '/store/files.js').href);
      const held = [];
      for (;;) {
        try { held.push(openSync('/dev/null', 'r')); } catch (error) { if (error.code === 'EMFILE') break; throw error; }
      }
      setTimeout(() => held.splice(0, 3).forEach((fd) => closeSync(fd)), 150);
      const started = Date.now();
      await writeFileAtomic(file, '{"saved":true}\\n');
      console.log('written after', Date.now() - started, 'ms');
    `;
    const dist = join(import.meta.dirname, '..', '..', 'dist');
    const run = await runProcess('bash', [
      '-c',
      'ulimit -n 256; exec "$0" "$@"',
      process.execPath,
      '--input-type=module',
      '-e',
      program,
      dist,
      file,
    ]);
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stdout).toMatch(/^written after \d+ ms\n$/);
    expect(Number(/\d+/.exec(run.stdout)![0])).toBeGreaterThanOrEqual(100);
    expect(readFileSync(file, 'utf8')).toBe('{"saved":true}\n');
  });
});

describe('the bin in a process with too few descriptors to load its bundle (ulimit -n near 20)', () => {
  it('one line saying what to raise, exit 2, nothing sent; no stack trace, in text and --json', async () => {
    // The limit at which Node can read the bin but not the bundle's files depends on the Node version:
    // every limit from 19 to 30 either fails as said, works, or fails before the bin runs (Node's own
    // failure, not the bin's to word: reading the bin or a package.json, or on Node 24 a SIGSEGV).
    const line = 'too many files are open to load notarize (EMFILE); nothing was sent';
    const hint = 'raise the limit of open files (ulimit -n), then run the command again';
    const run = (limit: number, ...flags: string[]) =>
      runProcess('bash', ['-c', `ulimit -n ${limit}; exec "$0" "$@"`, process.execPath, BIN, 'hash', BIN, ...flags]);
    const said: number[] = [];
    for (let limit = 19; limit <= 30; limit++) {
      const text = await run(limit);
      if (text.code === 0 || text.signal !== null) continue;
      // Neither the bin's words nor a failure loading its bundle: Node failed before the bin ran.
      if (!text.stderr.startsWith('notarize: ') && !text.stderr.includes('dist/bundle')) continue;
      expect(text.code, `ulimit -n ${limit}: ${describeRun(text)}`).toBe(2);
      expect(text.stdout).toBe('');
      expect(text.stderr).toBe(`notarize: ${line} (${hint})\n`);
      said.push(limit);
    }
    expect(said.length, 'no limit made the bundle fail to load').toBeGreaterThan(0);
    // The same refusal as --json's error object, at a limit where the text said it.
    const json = await run(said[0]!, '--json');
    expect(json.code, describeRun(json)).toBe(2);
    expect(JSON.parse(json.stderr)).toEqual({ error: { code: 'fd_shortage', exitCode: 2, message: line, hint } });
  }, 120_000);
});

describe('what start-up holds open (ulimit -n)', () => {
  it('`--version` starts with at most 2 descriptors more than Node needs for `node -e 0`', async () => {
    // The ESM loader opens a module's static imports all at once: the bundle's entry imports one
    // chunk, the CLI's core (scripts/bundle.config.js), rather than ten (26 to 28 descriptors on
    // Node 20 where Node itself starts with 18). Compared with Node's own need on this Node, as it
    // differs between versions (Node 24 needs 21 here).
    const starts = async (limit: number, ...args: string[]) =>
      (await runProcess('bash', ['-c', `ulimit -n ${limit}; exec "$0" "$@"`, process.execPath, ...args])).code === 0;
    let node = 10;
    while (node < 64 && !(await starts(node, '-e', '0'))) node++;
    expect(node, 'Node did not start under any limit from 10 to 63').toBeLessThan(64);
    expect(await starts(node + 2, BIN, '--version'), `ulimit -n ${node + 2}`).toBe(true);
  }, 120_000);
});

describe('a call that cannot make its socket (ulimit -n)', () => {
  it('is told not sent (notProcessed): a completion that never left is not "may have been completed"', async () => {
    const program = `
      import { closeSync, openSync } from 'node:fs';
      import { createServer } from 'node:http';
      import { pathToFileURL } from 'node:url';
      const [dist] = process.argv.slice(1);
      const { HttpTransport } = await import(pathToFileURL(dist + '/api/http.js').href);
      const { Agent } = await import('undici');
      const server = createServer((req, res) => res.end('{}'));
      await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
      const transport = new HttpTransport({
        baseUrl: 'http://127.0.0.1:' + server.address().port,
        timeoutMs: 5000,
        userAgent: 'notarize (test)',
        dispatcher: new Agent(),
        log: () => {},
      });
      const held = [];
      for (;;) {
        try { held.push(openSync('/dev/null', 'r')); } catch (error) { if (error.code === 'EMFILE') break; throw error; }
      }
      const error = await transport.send({ method: 'POST', path: '/api/v2/x', body: '{}' }).catch((e) => e);
      held.forEach((fd) => closeSync(fd));
      console.log(JSON.stringify({ message: error.message, hint: error.hint, exitCode: error.exitCode, notProcessed: error.notProcessed }));
      server.close();
    `;
    const dist = join(import.meta.dirname, '..', '..', 'dist');
    const run = await runProcess(
      'bash',
      ['-c', 'ulimit -n 256; exec "$0" "$@"', process.execPath, '--input-type=module', '-e', program, dist],
      {},
      { cwd: join(import.meta.dirname, '..', '..') },
    );
    expect(run.code, describeRun(run)).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      message: expect.stringMatching(/^POST http:\/\/127\.0\.0\.1:\d+\/api\/v2\/x failed: EMFILE$/),
      // Not "try again later": the limit is the cause.
      // Nor "nothing was sent": a retry's failure says nothing of the call's earlier attempts (r79).
      hint: "no connection could be opened: raise the limit of open files (ulimit -n), or lower register's -j",
      exitCode: 4,
      notProcessed: true,
    });
  });
});

describe('register under a low limit of open files', () => {
  let bed!: Bed;
  useBed((created) => (bed = created), { keyInEnv: true });

  /** A script running notarize as on a machine of 8 cores: files over 64 KiB hashed on up to 8 worker threads. */
  const eightCores = async (): Promise<string> => {
    await bed.write(
      'eight-cores.mjs',
      `import os from 'node:os';
import { syncBuiltinESMExports } from 'node:module';
os.availableParallelism = () => 8;
syncBuiltinESMExports();
await import(${JSON.stringify(BIN)});
`,
    );
    return join(bed.workDir, 'eight-cores.mjs');
  };

  it('under every limit from 19 to 34, register and completion work, or say the shortage with an exit code that tells whether anything was sent', async () => {
    // Each command's modules load as it runs (its own, the HTTP client's, completion's every
    // command's): a load short of descriptors is the bin's line, exit 2, never "unexpected error"
    // (exit 1: a script could not tell that nothing was sent). Node's own failures (see above) skipped.
    const line = 'notarize: too many files are open to load notarize (EMFILE); nothing was sent';
    const outcomes = new Set<string>();
    for (let limit = 19; limit <= 34; limit++) {
      await bed.write(`limit-${limit}.txt`, `a document under ulimit -n ${limit}\n`);
      for (const args of [
        ['register', bed.path(`limit-${limit}.txt`)],
        ['completion', 'bash'],
      ]) {
        const mark = bed.mark();
        const run = await bed.run(args, { shell: `ulimit -n ${limit}` });
        const said = `${args[0]} under ulimit -n ${limit}: ${describeRun(run)}`;
        if (run.code === 0) {
          outcomes.add(`${args[0]} worked`);
          continue;
        }
        if (run.signal !== null || (!run.stderr.startsWith('notarize: ') && !run.stderr.includes('dist/bundle')))
          continue;
        expect(run.stderr, said).not.toMatch(/unexpected error/);
        if (run.code === 1) {
          // Something was sent and did not end well here (a login whose token could not be stored): exit 1 says so.
          expect(bed.callsSince(mark).length, said).toBeGreaterThan(0);
          continue;
        }
        expect(bed.callsSince(mark), said).toEqual([]);
        // Or, once loaded, no socket for its first call: not processed, exit 4 (a call that cannot make its socket, below).
        if (run.code === 4) expect(run.stderr, said).toMatch(/\(no connection could be opened: raise the limit/);
        else expect([run.code, run.stderr.startsWith(line)], said).toEqual([2, true]);
        outcomes.add(`${args[0]} short`);
      }
    }
    // The sweep saw both ends for both commands: a check that passed on no run would prove nothing.
    expect([...outcomes].sort()).toEqual([
      'completion short',
      'completion worked',
      'register short',
      'register worked',
    ]);
  }, 240_000);

  it.runIf(process.platform === 'linux' && hasPrlimit)(
    'a manifest read while descriptors are short is waited out, not passed over: its documents are not paid again (r84)',
    async () => {
      const tag = `${Date.now()}`;
      const b1 = `b1 ${tag}\n`;
      const [a, , b2, b3] = await Promise.all(
        [`a ${tag}\n`, b1, `b2 ${tag}\n`, `b3 ${tag}\n`].map((text, i) => bed.file(`short/d${i}.txt`, text)),
      );
      const receipts = bed.path('short/receipts');
      // Two roots of earlier runs, their manifests kept, their receipts gone (a cold runner).
      for (const group of [[a!], [bed.path('short/d1.txt'), b2!, b3!]]) {
        const earlier = await bed.run(['register', '--aggregate', ...group, '--receipt-dir', receipts, '-q'], {
          env: { NOTARIZE_CONFIG_DIR: tempDir() },
        });
        expect(earlier.code, describeRun(earlier)).toBe(0);
      }
      for (const name of readdirSync(receipts)) if (name.endsWith('.notarization.json')) rmSync(join(receipts, name));
      const mark = bed.mark();
      // b1 from standard input, held open: while the run waits for it, its limit is lowered to what it
      // has open, so that its next open (b1's manifest, read once a document is found under it) fails.
      const args = ['register', '-j', '1', a!, '-', b2!, b3!, '--receipt-dir', receipts, '-d', 'short', '--json'];
      const child = spawn(process.execPath, [BIN, ...args], {
        cwd: bed.workDir,
        env: notarizeEnv(bed.env({ NOTARIZE_CONFIG_DIR: tempDir() })),
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = once(child, 'close');
      // a's root is asked about first (its manifest read with descriptors to spare): then the run waits on b1.
      const deadline = Date.now() + 15_000;
      while (bed.callsSince(mark).filter((c) => c.route === 'request').length < 1 && Date.now() < deadline)
        await sleep(10);
      await sleep(200);
      const open = readdirSync(`/proc/${child.pid!}/fd`).length;
      execFileSync('prlimit', ['--pid', String(child.pid), `--nofile=${open - 1}:4096`]);
      child.stdin.end(b1);
      await sleep(500);
      execFileSync('prlimit', ['--pid', String(child.pid), '--nofile=4096:4096']);
      const [code] = (await exited) as [number];
      const said = `exit ${code}\nstdout: ${stdout}\nstderr: ${stderr}`;
      expect(code, said).toBe(0);
      expect(stderr, said).not.toContain('passed over');
      // Every document under a root the service has: not one forfait (before: b2 and b3 paid again).
      expect(
        bed.callsSince(mark).filter((c) => c.route === 'forfait'),
        said,
      ).toEqual([]);
      expect(
        (JSON.parse(stdout) as { status: string }[]).map((r) => r.status),
        said,
      ).toEqual(Array(4).fill('already-registered'));
    },
  );

  it('-j 32 under ulimit -n 48: -j lowered with a warning, every document registered, nothing failed', async () => {
    // (bed.write gives each document's digest)
    const docs = await Promise.all(
      Array.from({ length: 150 }, (_, i) => bed.write(`many/doc-${i}.txt`, `document ${i} of many\n`)),
    );
    const run = await bed.run(['register', '-r', bed.path('many'), '-j', '32', '--output', 'ndjson'], {
      shell: 'ulimit -n 48',
    });
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stderr).toMatch(
      /^warning: -j 32 would hold about \d+ more files open, and this process may open \d+ more \(ulimit -n\): \d+ at a time instead$/m,
    );
    const statuses = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => (JSON.parse(line) as { status: string }).status);
    expect(statuses).toEqual(docs.map(() => 'registered'));
    expect(bed.ledgerHashes()).toHaveLength(docs.length);
    expect(bed.pendingHashes()).toEqual([]);
  });

  it('complete --all under ulimit -n 30: fewer at once, a store read short of descriptors waited out, every session completed', async () => {
    const docs = await Promise.all(
      Array.from({ length: 100 }, (_, i) => bed.write(`owed/doc-${i}.txt`, `document ${i} owed a completion\n`)),
    );
    const registered = await bed.run(['register', '-r', bed.path('owed'), '--no-complete', '--quiet']);
    expect(registered.code, describeRun(registered)).toBe(0);
    expect(bed.pendingHashes()).toHaveLength(docs.length);
    const run = await bed.run(['complete', '--all', '--json'], { shell: 'ulimit -n 30' });
    expect(run.code, describeRun(run)).toBe(0);
    const statuses = (JSON.parse(run.stdout) as { status: string }[]).map((result) => result.status);
    expect(statuses).toEqual(docs.map(() => 'registered'));
    expect(bed.ledgerHashes().sort()).toEqual([...docs].sort());
    expect(bed.pendingHashes()).toEqual([]);
  });

  it('8 hash workers under ulimit -n 64: their descriptors are kept aside, and a worker that cannot start is waited out', async () => {
    // A machine of 8 cores, played by a wrapper: files over 64 KiB are hashed on up to 8 worker threads.
    const wrapper = await eightCores();
    const docs = await Promise.all(
      Array.from({ length: 24 }, (_, i) => bed.write(`large/doc-${i}.bin`, Buffer.alloc(200_000, i))),
    );
    const run = await runProcess(
      'bash',
      [
        '-c',
        'ulimit -n 64; exec "$0" "$@"',
        process.execPath,
        wrapper,
        'register',
        '-r',
        bed.path('large'),
        '--output',
        'ndjson',
      ],
      bed.env(),
    );
    bed.record(run);
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stderr).toMatch(/^warning: -j 8 would hold about \d+ more files open/m);
    expect(bed.ledgerHashes().sort()).toEqual([...docs].sort());
  });

  it('hash and verify (no -j to lower) under ulimit -n 28: opens wait for a descriptor, workers that cannot start leave it to this thread', async () => {
    // Every file over 64 KiB failed, 'Worker initialization failure: EMFILE' or 'too many files open
    // at once (lower -j ...)' with no -j to lower, and every re-run the same.
    const docs = await Promise.all(
      Array.from({ length: 40 }, (_, i) => bed.write(`limited/doc-${i}.bin`, Buffer.alloc(100_000, i + 1))),
    );
    const digests = (run: { stdout: string }) =>
      run.stdout
        .trimEnd()
        .split('\n')
        .map((line) => line.slice(0, 64))
        .sort();
    const hashed = await bed.run(['hash', '-r', bed.path('limited')], { shell: 'ulimit -n 28' });
    expect(hashed.code, describeRun(hashed)).toBe(0);
    expect(digests(hashed)).toEqual([...docs].sort());
    // 8 cores (a wrapper plays them) under ulimit -n 40: workers that cannot start ('Worker
    // initialization failure: EMFILE') leave their files to the ones that did, or to this thread.
    const eight = await runProcess(
      'bash',
      ['-c', 'ulimit -n 40; exec "$0" "$@"', process.execPath, await eightCores(), 'hash', '-r', bed.path('limited')],
      bed.env(),
    );
    expect(eight.code, describeRun(eight)).toBe(0);
    expect(digests(eight)).toEqual([...docs].sort());
    const registered = await bed.run(['register', '-r', bed.path('limited'), '--receipt-dir', bed.path('limited-rc')]);
    expect(registered.code, describeRun(registered)).toBe(0);
    const verified = await bed.run(
      ['verify', '-r', bed.path('limited'), '--receipt-dir', bed.path('limited-rc'), '--output', 'ndjson'],
      { shell: 'ulimit -n 28' },
    );
    expect(verified.code, describeRun(verified)).toBe(0);
    expect(verified.stdout.trimEnd().split('\n')).toHaveLength(docs.length);
  });

  it("standard input is never read twice: '-' whose lock found no descriptor fails, never registered as empty", async () => {
    // The first open of a lock's run file fails with EMFILE, as a moment of shortage would make it.
    const wrapper = join(bed.workDir, 'emfile-once.mjs');
    await bed.write(
      'emfile-once.mjs',
      `import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
const real = fs.openSync;
let once = true;
fs.openSync = function (path, ...rest) {
  if (once && String(path).endsWith('.run')) {
    once = false;
    throw Object.assign(new Error(\`EMFILE: too many open files, open '\${path}'\`), { code: 'EMFILE' });
  }
  return real.call(this, path, ...rest);
};
syncBuiltinESMExports();
await import(${JSON.stringify(BIN)});
`,
    );
    await bed.write('other.txt', 'another document\n');
    const other = bed.path('other.txt');
    const run = await runProcess(
      process.execPath,
      [wrapper, 'register', '-', other, '-d', 'contract', '-j', '1', '--output', 'ndjson'],
      bed.env(),
      { input: 'my contract v2\n' },
    );
    bed.record(run);
    const results = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { file: string; hash: string; status: string; error?: { exitCode: number } });
    expect(results.map((r) => [r.file, r.status])).toEqual([
      ['-', 'failed'],
      [other, 'registered'],
    ]);
    expect(results[0]).toMatchObject({ hash: sha256('my contract v2\n'), error: { exitCode: 2 } });
    expect(bed.requestedHashes()).toEqual([sha256('another document\n')]);
    expect(bed.requestedHashes()).not.toContain(sha256(''));
  });
});

describe('loadingModule', () => {
  const failing = (code: string) => () => Promise.reject(Object.assign(new Error(`${code}: open 'x.js'`), { code }));

  it('a module not read for want of a descriptor: exit 2, saying what to raise and that nothing was sent', async () => {
    for (const code of ['EMFILE', 'ENFILE']) {
      const error = await loadingModule(failing(code)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UsageError);
      expect(errorJson(error as UsageError)).toEqual({
        code: 'fd_shortage',
        exitCode: 2,
        message: `too many files are open to load notarize (${code}); nothing was sent`,
        hint: 'raise the limit of open files (ulimit -n), then run the command again',
      });
    }
  });

  it('any other failure as it came, and a module loaded as it is', async () => {
    await expect(loadingModule(failing('ENOENT'))).rejects.toThrow("ENOENT: open 'x.js'");
    await expect(loadingModule(() => Promise.resolve(42))).resolves.toBe(42);
  });
});

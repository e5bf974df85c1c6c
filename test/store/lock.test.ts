import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import {
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { TransientError } from '../../src/errors.js';
import { LEASE_MS, lockText, releaseOwnLock, waitNotice, withLock } from '../../src/store/lock.js';
import { rejection } from '../helpers/catch.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

/** The pid of a process that has exited (a `node -e 0` run to completion). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  const pid = child.pid;
  if (pid === undefined) throw new Error('could not spawn node');
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', () => resolve());
  });
  return pid;
}

/** The name of a process's run file, which its locks are links to (store/lock.ts). */
const RUN_FILE_NAME = /^\.\d+\.[0-9a-f]{8}\.[0-9a-z]+\.run$/;

/** A promise with its resolve function, to hold a lock until the test says so. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe('withLock', () => {
  const tempDir = useTempDirs();

  it("holds a lock file with our pid while fn runs, removes it after, and returns fn's value", async () => {
    const file = join(tempDir(), 'h.lock');
    const result = await withLock(file, 1000, () => {
      expect(readFileSync(file, 'utf8').split(' ')[0]).toBe(String(process.pid));
      return Promise.resolve(42);
    });
    expect(result).toBe(42);
    expect(existsSync(file)).toBe(false);
  });

  it('releases the lock when fn throws', async () => {
    const file = join(tempDir(), 'h.lock');
    const failure = new Error('flow failed');
    expect(await rejection(withLock(file, 1000, () => Promise.reject(failure)))).toBe(failure);
    expect(existsSync(file)).toBe(false);
  });

  it('makes a second withLock on the same file wait until the first releases', async () => {
    const file = join(tempDir(), 'h.lock');
    const events: string[] = [];
    const first = gate();
    const firstDone = withLock(file, 10_000, async () => {
      events.push('first start');
      await first.opened;
      events.push('first end');
    });
    const secondDone = withLock(file, 10_000, () => {
      events.push('second');
      return Promise.resolve();
    });
    // Let the second poll a few times while the first still holds the lock.
    await sleep(100);
    expect(events).toEqual(['first start']);
    expect(existsSync(file)).toBe(true);
    first.open();
    await Promise.all([firstDone, secondDone]);
    expect(events).toEqual(['first start', 'first end', 'second']);
    expect(existsSync(file)).toBe(false);
  });

  it('does not make locks on different files wait for each other', async () => {
    const dir = tempDir();
    const events: string[] = [];
    const first = gate();
    const firstDone = withLock(join(dir, 'a.lock'), 10_000, async () => {
      await first.opened;
      events.push('a');
    });
    await withLock(join(dir, 'b.lock'), 0, () => {
      events.push('b');
      return Promise.resolve();
    });
    first.open();
    await firstDone;
    expect(events).toEqual(['b', 'a']);
  });

  it('makes every lock a process holds in one directory a link to one run file, a dot file that goes with the last of them', async () => {
    const dir = tempDir();
    const [a, b] = [join(dir, 'a.lock'), join(dir, 'b.lock')];
    let seen: { names: string[]; inodes: number[]; links: number } | undefined;
    await withLock(a, 1000, () =>
      withLock(b, 1000, () => {
        const names = readdirSync(dir).sort();
        const inodes = names.map((name) => statSync(join(dir, name)).ino);
        seen = { names, inodes, links: statSync(a).nlink };
        return Promise.resolve();
      }),
    );
    expect(seen!.names).toHaveLength(3);
    expect(seen!.names[0]).toMatch(RUN_FILE_NAME);
    expect(seen!.names.slice(1)).toEqual(['a.lock', 'b.lock']);
    expect(new Set(seen!.inodes).size).toBe(1);
    expect(seen!.links).toBe(3);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('makes no file per poll while it waits, and leaves none when its wait runs out', async () => {
    const dir = tempDir();
    const file = join(dir, 'h.lock');
    writeFileSync(file, lockText(1, 'init')); // pid 1 is alive: a lock held
    const runNames = new Set<string>();
    const sampler = setInterval(() => {
      for (const name of readdirSync(dir)) if (name !== 'h.lock') runNames.add(name);
    }, 5);
    const error = await rejection(withLock(file, 400, () => Promise.resolve(), { pollMs: 10 }));
    clearInterval(sampler);
    expect(error).toBeInstanceOf(TransientError);
    expect([...runNames]).toHaveLength(1);
    expect([...runNames][0]).toMatch(RUN_FILE_NAME);
    expect(readdirSync(dir)).toEqual(['h.lock']);
  });

  it('removes the run file a killed process left once no lock links to it, and one not refreshed for 10 minutes, and only those', async () => {
    const dir = tempDir();
    const pid = await deadPid();
    const lone = `.${pid}.deadbeef.0.run`;
    const linked = `.${pid}.deadbeef.1.run`;
    const alive = '.1.deadbeef.2.run'; // pid 1 lives
    const foreign = `.${pid}.deadbeef.3.run`; // another PID namespace: a dead pid there proves nothing here
    const foreignOld = `.${pid}.deadbeef.4.run`; // ... but 10 minutes without a refresh does
    writeFileSync(join(dir, lone), lockText(pid, 'killed'));
    writeFileSync(join(dir, linked), lockText(pid, 'killed'));
    linkSync(join(dir, linked), join(dir, 'x.lock'));
    writeFileSync(join(dir, alive), lockText(1, 'init'));
    for (const name of [foreign, foreignOld]) {
      writeFileSync(
        join(dir, name),
        `${pid} ${hostname()} n1 lease=${LEASE_MS} ns=00000000-0000-0000-0000-000000000000/1/1\n`,
      );
    }
    const elevenMinutesAgo = new Date(Date.now() - 11 * 60_000);
    utimesSync(join(dir, foreignOld), elevenMinutesAgo, elevenMinutesAgo);
    await withLock(join(dir, 'c.lock'), 1000, () => Promise.resolve());
    expect(readdirSync(dir).sort()).toEqual([linked, alive, foreign, 'x.lock'].sort());
    // Its last lock taken over (its owner provably dead), the run file goes too.
    await withLock(join(dir, 'x.lock'), 1000, () => Promise.resolve());
    expect(readdirSync(dir).sort()).toEqual([alive, foreign].sort());
  });

  it('makes a new run file when its own has been removed (by hand), and keeps the locks linked to the old one', async () => {
    const dir = tempDir();
    const [a, b] = [join(dir, 'a.lock'), join(dir, 'b.lock')];
    let inodes: number[] = [];
    await withLock(a, 1000, async () => {
      for (const name of readdirSync(dir)) if (RUN_FILE_NAME.test(name)) unlinkSync(join(dir, name));
      await withLock(b, 1000, () => {
        inodes = [statSync(a).ino, statSync(b).ino];
        expect(readdirSync(dir).filter((n) => RUN_FILE_NAME.test(n))).toHaveLength(1);
        return Promise.resolve();
      });
      expect(existsSync(a)).toBe(true);
    });
    expect(inodes[0]).not.toBe(inodes[1]);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('keeps one exit listener however often its run file is made again', async () => {
    const dir = tempDir();
    const listeners = () => process.listenerCount('exit');
    await withLock(join(dir, 'warm.lock'), 1000, () => Promise.resolve());
    const before = listeners();
    for (let round = 0; round < 12; round++) {
      const [a, b] = [join(dir, 'a.lock'), join(dir, 'b.lock')];
      const releaseB = gate();
      let bHeld!: Promise<void>;
      await withLock(a, 1000, async () => {
        for (const name of readdirSync(dir)) if (RUN_FILE_NAME.test(name)) unlinkSync(join(dir, name));
        const taken = gate();
        bHeld = withLock(b, 1000, async () => {
          taken.open();
          await releaseB.opened;
        });
        await taken.opened;
      });
      // a released while b (on the new run file) is still held, then b.
      releaseB.open();
      await bHeld;
    }
    expect(listeners()).toBe(before);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('never removes a lock of another holder in this process at the same path', async () => {
    const dir = tempDir();
    const file = join(dir, 'h.lock');
    const second = gate();
    let secondDone!: Promise<void>;
    await withLock(file, 1000, async () => {
      unlinkSync(file); // removed by hand: a second holder in this process can take it
      const taken = gate();
      secondDone = withLock(file, 1000, async () => {
        taken.open();
        await second.opened;
      });
      await taken.opened;
    });
    // The first holder is done; the second still holds its lock.
    expect(existsSync(file)).toBe(true);
    second.open();
    await secondDone;
    expect(existsSync(file)).toBe(false);
  });

  it('removes a run file left empty (its writer killed before writing) once 10 minutes old', async () => {
    const dir = tempDir();
    const [old, fresh] = ['.4194305.deadbeef.0.run', '.4194305.deadbeef.1.run'];
    for (const name of [old, fresh]) writeFileSync(join(dir, name), '');
    const elevenMinutesAgo = new Date(Date.now() - 11 * 60_000);
    utimesSync(join(dir, old), elevenMinutesAgo, elevenMinutesAgo);
    await withLock(join(dir, 'c.lock'), 1000, () => Promise.resolve());
    expect(readdirSync(dir)).toEqual([fresh]);
  });

  it('takes over at once a lock whose owner died in this PID namespace', async () => {
    const file = join(tempDir(), 'h.lock');
    const pid = await deadPid();
    writeFileSync(file, lockText(pid, 'killed'));
    let ran = false;
    const started = performance.now();
    // A wait of 10 s, taken over well before it: at once, whatever the load beside the test.
    await withLock(file, 10_000, () => {
      ran = true;
      expect(readFileSync(file, 'utf8').split(' ')[0]).toBe(String(process.pid));
      return Promise.resolve();
    });
    expect(ran).toBe(true);
    expect(performance.now() - started).toBeLessThan(5000);
    expect(existsSync(file)).toBe(false);
  });

  it.skipIf(!existsSync('/proc/self/stat') || spawnSync('python3', ['--version']).status !== 0)(
    'takes over at once a lock whose owner exited and awaits its parent (a zombie, which kill(pid, 0) still finds)',
    async () => {
      // The child exits at once; its parent never waits for it (python reaps nothing by itself;
      // a shell may reap a job that ends before it execs, which made this race).
      const parent = spawn(
        'python3',
        [
          '-c',
          'import os, sys, time\npid = os.fork()\nif pid == 0: os._exit(0)\nprint(pid, flush=True)\ntime.sleep(30)',
        ],
        { stdio: ['ignore', 'pipe', 'ignore'] },
      );
      try {
        const pid = Number((await once(parent.stdout, 'data'))[0]);
        for (let i = 0; i < 100 && !readFileSync(`/proc/${pid}/stat`, 'latin1').includes(') Z '); i++) {
          await sleep(20);
        }
        expect(readFileSync(`/proc/${pid}/stat`, 'latin1')).toMatch(/\) Z /);
        const file = join(tempDir(), 'h.lock');
        writeFileSync(file, lockText(pid, 'killed'));
        // Well within the lease: a zombie taken for alive would make this wait run out (TransientError).
        await withLock(file, 2000, () => Promise.resolve());
        expect(existsSync(file)).toBe(false);
      } finally {
        parent.kill('SIGKILL');
      }
    },
  );

  it('never takes over on a dead pid alone: a lease lock of another namespace or host waits for its lease', async () => {
    const dir = tempDir();
    const pid = await deadPid();
    // The pid is dead here, but the lock says it lives in another PID
    // namespace (a container), and another one from another host: there the
    // pid means nothing, so only the lease can tell.
    const texts = [
      `${pid} ${hostname()} n1 lease=${LEASE_MS} ns=00000000-0000-0000-0000-000000000000/1/1\n`,
      `${pid} other-host n2 lease=${LEASE_MS}\n`,
    ];
    for (const [i, text] of texts.entries()) {
      const file = join(dir, `${i}.lock`);
      writeFileSync(file, text);
      expect(await rejection(withLock(file, 300, () => Promise.resolve()))).toBeInstanceOf(TransientError);
      expect(readFileSync(file, 'utf8')).toBe(text);
    }
  });

  it("waits, without blocking its thread, while another waiter holds a dead owner's lock's claim", async () => {
    const file = join(tempDir(), 'claimed.lock');
    const text = lockText(await deadPid(), 'killed');
    writeFileSync(file, text);
    // The claim of that lock instance (named by its text and inode, as lock.ts names it), held by a live process.
    const { dev, ino } = statSync(file);
    const digest = createHash('sha256').update(`${text}\u0000${dev}:${ino}`).digest('hex').slice(0, 16);
    const claim = `${file}.${digest}.claim`;
    writeFileSync(claim, lockText(1, 'claimer'));
    let ticks = 0;
    const ticker = setInterval(() => (ticks += 1), 20);
    try {
      const started = performance.now();
      expect(await rejection(withLock(file, 400, () => Promise.resolve()))).toBeInstanceOf(TransientError);
      // The deadline is kept in Date.now()'s whole milliseconds: measured here, up to 1 ms less
      // (a Node 24 run of CI saw 399.97 ms).
      expect(performance.now() - started).toBeGreaterThanOrEqual(398);
      // The wait polled: timers of this thread kept running (the old loop spun synchronously until the claim went stale).
      expect(ticks).toBeGreaterThanOrEqual(5);
    } finally {
      clearInterval(ticker);
    }
    expect(readFileSync(file, 'utf8')).toBe(text);
    expect(readFileSync(claim, 'utf8')).toBe(lockText(1, 'claimer'));
  });

  it('judges a lock of an older notarize (no lease) by its age: kept while recent, taken over once 10 min old', async () => {
    const dir = tempDir();
    const pid = await deadPid();
    const recent = join(dir, 'recent.lock');
    writeFileSync(recent, `${pid} ${hostname()} oldnonce\n`);
    const error = await rejection(withLock(recent, 100, () => Promise.resolve()));
    expect(error).toBeInstanceOf(TransientError);
    expect((error as TransientError).hint).toMatch(/older notarize/);
    expect(existsSync(recent)).toBe(true);

    for (const text of [String(pid), `${pid} ${hostname()} oldnonce\n`]) {
      const old = join(dir, 'old.lock');
      writeFileSync(old, text);
      const longAgo = new Date(Date.now() - 11 * 60_000);
      utimesSync(old, longAgo, longAgo);
      let ran = false;
      await withLock(old, 1000, () => {
        ran = true;
        return Promise.resolve();
      });
      expect(ran).toBe(true);
    }
  });

  it('refreshes the lease (mtime) while fn runs, and leaves no timer behind', async () => {
    const file = join(tempDir(), 'h.lock');
    // A short lease (LEASE_MS's rule, three refreshes per lease), so a refresh comes within a second.
    const leaseMs = 600;
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const mtimes: number[] = [];
    let during = 0;
    await withLock(
      file,
      1000,
      async () => {
        during = timers();
        mtimes.push(statSync(file).mtimeMs);
        await sleep(leaseMs / 3 + 600);
        mtimes.push(statSync(file).mtimeMs);
      },
      { leaseMs },
    );
    expect(mtimes[1]! - mtimes[0]!).toBeGreaterThanOrEqual(leaseMs / 3 - 100);
    // The refresh timer existed while the lock was held, and is gone after.
    expect(during).toBeGreaterThan(timers());
    expect(timers()).toBeLessThanOrEqual(before);
  });

  it('throws TransientError (exit 4) naming the owner once waitMs passes while a live owner holds it', async () => {
    const file = join(tempDir(), 'h.lock');
    const first = gate();
    const holder = withLock(file, 1000, () => first.opened);
    let ran = false;
    const error = await rejection(
      withLock(file, 100, () => {
        ran = true;
        return Promise.resolve();
      }),
    );
    expect(ran).toBe(false);
    expect(error).toBeInstanceOf(TransientError);
    expect(error).toMatchObject({ exitCode: 4 });
    expect((error as Error).message).toContain(String(process.pid));
    // The waiter must not have removed the live owner's lock.
    expect(readFileSync(file, 'utf8').split(' ')[0]).toBe(String(process.pid));
    first.open();
    await holder;
    expect(existsSync(file)).toBe(false);
  });

  it("waits waitMs of this process's own time: the wall clock stepped back an hour (NTP) does not stretch the wait", async () => {
    const file = join(tempDir(), 'h.lock');
    const first = gate();
    const holder = withLock(file, 1000, () => first.opened);
    const wall = Date.now.bind(Date);
    let asked = 0;
    // The first reading as it is, every later one an hour earlier: a step back just as the wait starts.
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => wall() - (asked++ === 0 ? 0 : 3_600_000));
    try {
      const waited = withLock(file, 100, () => Promise.resolve());
      const outcome = await Promise.race([rejection(waited), sleep(5000).then(() => 'still waiting after 5 s')]);
      expect(outcome).toBeInstanceOf(TransientError);
    } finally {
      clock.mockRestore();
      first.open();
      await holder;
    }
  });

  it.each([
    [`${'ab'.repeat(32)}.lock`, 'is working on the same hash'],
    ['aggregate.lock', 'is placing documents in Merkle trees (register --aggregate)'],
    ['credentials.lock', 'is changing <store>/credentials.json'],
  ])('says what the holder of %s is doing when the wait runs out', async (name, says) => {
    const store = tempDir();
    mkdirSync(join(store, 'locks'));
    const file = join(store, 'locks', name);
    const doing = says.replace('<store>', store);
    writeFileSync(file, lockText(1, 'init')); // pid 1 is alive: a lock held by another process
    const error = await rejection(withLock(file, 50, () => Promise.resolve()));
    expect((error as Error).message).toBe(`another notarize process (pid 1) ${doing}`);
    // Held by this very process: said so, not "another" with our own pid (r102).
    rmSync(file);
    const first = gate();
    const holder = withLock(file, 1000, () => first.opened);
    const own = await rejection(withLock(file, 50, () => Promise.resolve()));
    expect((own as Error).message).toBe(
      `this notarize run (pid ${process.pid}) ${doing} already, for another of its documents`,
    );
    first.open();
    await holder;
  });

  it('tells onWaiting once, with who holds the lock, when a wait passes noticeMs; a short one is not told (r98)', async () => {
    const file = join(tempDir(), `${'ef'.repeat(32)}.lock`);
    const first = gate();
    const holder = withLock(file, 1000, () => first.opened);
    const told: string[] = [];
    const onWaiting = (message: string) => {
      told.push(message);
    };
    // Held past the notice: told once, however many polls follow.
    const waiter = withLock(file, 10_000, () => Promise.resolve('ran'), { noticeMs: 50, pollMs: 5, onWaiting });
    // Bounded: the notice is due after 50 ms; 10 s leaves room for any load.
    for (let i = 0; i < 1000 && told.length === 0; i++) await sleep(10);
    await sleep(100);
    first.open();
    await holder;
    expect(await waiter).toBe('ran');
    expect(told).toHaveLength(1);
    // The holder is this very process (a batch's two documents of the same content): not "another
    // notarize process" with our own pid (r102).
    expect(told[0]).toMatch(
      new RegExp(
        `^this notarize run \\(pid ${process.pid}\\) is working on ${'ef'.repeat(32)} already, for another of its documents: waiting for it, up to \\d+ s more$`,
      ),
    );
    // Free at once: nothing said.
    const quiet: string[] = [];
    await withLock(file, 10_000, () => Promise.resolve(), {
      noticeMs: 50,
      onWaiting: (m) => {
        quiet.push(m);
      },
    });
    expect(quiet).toEqual([]);
  });

  it('names another live process as another, with its pid, in the notice and in the error when the wait runs out', async () => {
    const hash = 'ab'.repeat(32);
    const file = join(tempDir(), `${hash}.lock`);
    writeFileSync(file, lockText(1, 'init')); // pid 1 is alive: a lock held
    const told: string[] = [];
    const timing = { noticeMs: 20, pollMs: 5, onWaiting: (m: string) => void told.push(m) };
    const error = await rejection(withLock(file, 300, () => Promise.resolve(), timing));
    expect(told).toHaveLength(1);
    expect(told[0]).toMatch(
      new RegExp(`^another notarize process \\(pid 1\\) is working on ${hash}: waiting for it, up to \\d+ s more$`),
    );
    expect((error as Error).message).toBe('another notarize process (pid 1) is working on the same hash');
    // `doing` says what the lock's name cannot (a Merkle root's lock is named by a digest too).
    const rooted: string[] = [];
    const doing = `is registering the Merkle root ${hash}, whose tree holds ${'cd'.repeat(32)}`;
    await rejection(
      withLock(file, 300, () => Promise.resolve(), { ...timing, doing, onWaiting: (m) => void rooted.push(m) }),
    );
    expect(rooted[0]).toMatch(new RegExp(`^another notarize process \\(pid 1\\) ${doing}: waiting for it`));
  });

  it("waitNotice says a run's lock waits once, whatever the number of documents waiting (r100)", async () => {
    const holderFile = join(tempDir(), `${'12'.repeat(32)}.lock`);
    const first = gate();
    const holder = withLock(holderFile, 1000, () => first.opened);
    const said: string[] = [];
    const timing = { ...waitNotice((message) => said.push(message)), noticeMs: 20, pollMs: 5 };
    const waiters = [1, 2, 3].map(() => withLock(holderFile, 10_000, () => Promise.resolve(), timing));
    for (let i = 0; i < 1000 && said.length === 0; i++) await sleep(10);
    await sleep(100);
    first.open();
    await holder;
    await Promise.all(waiters);
    expect(said).toHaveLength(1);
    // A wait that starts once those have ended is said again, with its own hash (r102: a batch's
    // later waits, one after another, went unsaid for up to a minute each).
    const laterFile = join(tempDir(), `${'34'.repeat(32)}.lock`);
    const second = gate();
    const later = withLock(laterFile, 1000, () => second.opened);
    const waiter = withLock(laterFile, 10_000, () => Promise.resolve(), timing);
    for (let i = 0; i < 1000 && said.length === 1; i++) await sleep(10);
    second.open();
    await Promise.all([later, waiter]);
    expect(said).toHaveLength(2);
    expect(said[1]).toContain(`is working on ${'34'.repeat(32)}`);
  });

  it('says when the holder runs in another PID namespace (a container), whose pid means nothing here', async () => {
    const file = join(tempDir(), `${'cd'.repeat(32)}.lock`);
    // A fresh lock of pid 1 in another namespace: held while its lease runs.
    writeFileSync(file, `1 ${hostname()} theirs lease=${LEASE_MS} ns=00000000-0000-0000-0000-000000000000/1/2\n`);
    const error = await rejection(withLock(file, 50, () => Promise.resolve()));
    expect((error as Error).message).toBe(
      'another notarize process (pid 1 in another container or PID namespace) is working on the same hash',
    );
  });

  it('treats a lock file of another live process (pid 1) as held', async () => {
    const file = join(tempDir(), 'h.lock');
    writeFileSync(file, '1');
    expect(await rejection(withLock(file, 50, () => Promise.resolve()))).toBeInstanceOf(TransientError);
    expect(readFileSync(file, 'utf8')).toBe('1');
  });

  it('waits on a fresh empty lock file (its creator is writing the pid) but takes over one seen empty for the grace (5 s; 0.5 s here)', async () => {
    const unreadableGraceMs = 500;
    const dir = tempDir();
    const fresh = join(dir, 'fresh.lock');
    writeFileSync(fresh, '');
    expect(await rejection(withLock(fresh, 50, () => Promise.resolve(), { unreadableGraceMs }))).toBeInstanceOf(
      TransientError,
    );
    expect(existsSync(fresh)).toBe(true);

    // Its mtime says nothing (another host's clock may be ahead or behind):
    // the waiter's own observation decides.
    const old = join(dir, 'old.lock');
    writeFileSync(old, '');
    const started = performance.now();
    let ran = false;
    await withLock(
      old,
      unreadableGraceMs * 4,
      () => {
        ran = true;
        return Promise.resolve();
      },
      { unreadableGraceMs },
    );
    expect(ran).toBe(true);
    expect(performance.now() - started).toBeGreaterThanOrEqual(unreadableGraceMs - 100);
  });
});

describe("releaseOwnLock (a signal handler's release)", () => {
  const tempDir = useTempDirs();

  it('removes the lock this process holds', async () => {
    const file = join(tempDir(), 'own.lock');
    await withLock(file, 0, () => {
      releaseOwnLock(file);
      expect(existsSync(file)).toBe(false);
      return Promise.resolve();
    });
  });

  it('leaves one taken over since, though it names the same pid on the same host (containers: pid 1 in each)', async () => {
    const file = join(tempDir(), 'taken.lock');
    const theirs = lockText(process.pid, 'another-container');
    await withLock(file, 0, () => {
      // What another process does once this one's lease ran out while it was stopped.
      renameSync(file, `${file}.gone`);
      writeFileSync(file, theirs);
      releaseOwnLock(file);
      expect(readFileSync(file, 'utf8')).toBe(theirs);
      return Promise.resolve();
    });
    // Nor does the lock's own release take it.
    expect(readFileSync(file, 'utf8')).toBe(theirs);
  });

  it('leaves a lock of this pid and host it never took', () => {
    const file = join(tempDir(), 'never.lock');
    writeFileSync(file, lockText(process.pid, 'not-ours'));
    releaseOwnLock(file);
    expect(existsSync(file)).toBe(true);
  });
});

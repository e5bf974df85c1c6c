/**
 * A full (over quota, read-only) disk met before anything was sent is exit 2
 * saying so (src/store/disk.ts, applied around the lock in core/notarize.ts);
 * after something was sent it stays exit 1 with the answer quoted
 * (`notSaved`); the mapping alone is unit-tested in test/store/disk.test.ts.
 * The disk is made full by a stand-in for node:fs that fails
 * writes under one store directory with ENOSPC, in-process: a real full file
 * system would need a mount. A directory flush that fails (EIO) is the same
 * stand-in's fsync.
 */
import type * as NodeFs from 'node:fs';
import type * as NodeFsPromises from 'node:fs/promises';
import { mkdirSync, readFileSync } from 'node:fs';
import { sep } from 'node:path';
import { serviceDirName } from '../../src/store/store.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DirFlushes } from '../../src/store/files.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { describeRun } from '../helpers/cli.js';
import { sha256 } from '../helpers/documents.js';
import { readFixture } from '../helpers/fixtures.js';

const sha256Of = (path: string) => sha256(readFileSync(path));

/**
 * The store directory (`locks`, `pending`...) whose writes fail, if any;
 * `flushDir`: one whose flush (fsync of the directory) fails with EIO, and
 * the descriptors opened on it.
 */
const full = vi.hoisted(() => ({
  dir: undefined as string | undefined,
  code: 'ENOSPC',
  flushDir: undefined as string | undefined,
  flushFds: new Set<number>(),
  unlinkDir: undefined as string | undefined,
}));

vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof NodeFs>();
  const refuse = (path: unknown): void => {
    if (full.dir === undefined || typeof path !== 'string') return;
    if (!path.includes(`${sep}${full.dir}${sep}`) && !path.endsWith(`${sep}${full.dir}`)) return;
    throw Object.assign(new Error(`${full.code}: no space left on device, open '${path}'`), {
      code: full.code,
      path,
    });
  };
  const writing = (flags: unknown) => typeof flags === 'string' && /[wax+]/.test(flags);
  const stub = {
    ...real,
    mkdirSync: ((path: string, options?: unknown) => {
      if (!real.existsSync(path)) refuse(path);
      return real.mkdirSync(path, options as never);
    }) as typeof real.mkdirSync,
    openSync: ((path: string, flags?: unknown, mode?: unknown) => {
      if (writing(flags)) refuse(path);
      const fd = real.openSync(path, flags as never, mode as never);
      if (full.flushDir !== undefined && path.endsWith(`${sep}${full.flushDir}`)) full.flushFds.add(fd);
      return fd;
    }) as typeof real.openSync,
    fsync: ((fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
      if (!full.flushFds.delete(fd)) return real.fsync(fd, callback);
      setImmediate(() =>
        callback(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO', syscall: 'fsync' })),
      );
    }) as typeof real.fsync,
    writeFileSync: ((path: unknown, data: unknown, options?: unknown) => {
      refuse(path);
      return real.writeFileSync(path as never, data as never, options as never);
    }) as typeof real.writeFileSync,
    linkSync: ((existing: string, link: string) => {
      refuse(link);
      return real.linkSync(existing, link);
    }) as typeof real.linkSync,
  };
  return { ...stub, default: stub };
});

vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof NodeFsPromises>();
  const stub = {
    ...real,
    // A store made read-only while a run went on: its removals refused (full.unlinkDir).
    unlink: (async (path: string) => {
      if (full.unlinkDir !== undefined && path.includes(`${sep}${full.unlinkDir}${sep}`))
        throw Object.assign(new Error(`EACCES: permission denied, unlink '${path}'`), { code: 'EACCES', path });
      return real.unlink(path);
    }) as typeof real.unlink,
  };
  return { ...stub, default: stub };
});

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });
afterEach(() => {
  full.dir = undefined;
  full.code = 'ENOSPC';
  full.flushDir = undefined;
  full.flushFds.clear();
  full.unlinkDir = undefined;
});

describe('a full disk in a run', () => {
  const SAYS: Record<string, string> = {
    ENOSPC: 'no space left on the device holding',
    EDQUOT: 'disk quota',
    EACCES: 'permission is denied in',
    EPERM: 'the system does not permit this change in',
  };

  it.each(Object.keys(SAYS))('making the locks directory (%s): exit 2, saying why, nothing sent', async (code) => {
    full.dir = 'locks';
    full.code = code;
    const doc = await bed.file('a.txt');
    const run = await bed.main(['register', doc]);
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).toContain(SAYS[code]);
    expect(run.stderr).toContain('nothing was sent');
    expect(run.stderr).not.toContain('unexpected error');
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('a login that went through on a fresh store whose locks/ cannot be made: exit 1, not 2 (it was sent)', async () => {
    full.dir = 'locks';
    const login = await bed.main(['login', '--api-key-stdin'], { input: bed.sandbox.apiKey });
    expect(login.code, describeRun(login)).toBe(1);
    expect(login.stderr).toMatch(
      /no space left on the device holding .*; the login went through, but its token was not stored/,
    );
    expect(login.stderr).not.toContain('nothing was sent');
    expect(bed.sandbox.calls.map((call) => call.route)).toEqual(['login']);
  });

  it("one document whose receipt's root was asked about, then its lock refused: exit 1, not 2", async () => {
    // Receipts under a Merkle root, then a cold store and a service that has no such root: register of
    // one of them asks the service about the root (a request step), then cannot make its lock.
    const a = await bed.file('a.txt', 'under a root a\n');
    const b = await bed.file('b.txt', 'under a root b\n');
    const receipts = bed.path('receipts');
    const aggregate = await bed.main(['register', '--aggregate', a, b, '--receipt-dir', receipts, '--quiet']);
    expect(aggregate.code, describeRun(aggregate)).toBe(0);
    // The same address, a service that knows nothing of that root.
    await bed.replaceSandbox({ port: Number(new URL(bed.url).port) });
    const cold = bed.path('cold-store');
    // Only the service's locks/ is refused: the token of the login on the fly is stored.
    full.dir = `${serviceDirName(bed.url)}${sep}locks`;
    const mark = bed.calls('request');
    const run = await bed.main(['register', a, '--receipt-dir', receipts], { env: { NOTARIZE_CONFIG_DIR: cold } });
    expect(bed.calls('request'), describeRun(run)).toBeGreaterThan(mark);
    expect(run.code, describeRun(run)).toBe(1);
    expect(run.stderr).toContain('no space left on the device');
    expect(run.stderr).not.toContain('; nothing was sent');
  });

  it('creating the lock file itself (the directory exists): exit 2, nothing sent for it', async () => {
    const first = await bed.main(['register', await bed.file('first.txt')]);
    expect(first.code, describeRun(first)).toBe(0);
    const mark = bed.mark();
    full.dir = 'locks';
    const run = await bed.main(['register', await bed.file('second.txt')]);
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).toMatch(/^notarize: no space left on the device holding .+ \(ENOSPC\); nothing was sent/);
    expect(bed.callsSince(mark)).toEqual([]);
  });

  it.each(['ENOSPC', 'EACCES'])(
    'pending drop, its lock refused (%s): exit 2 saying why, the session kept',
    async (code) => {
      const doc = await bed.file('kept.txt');
      const saved = await bed.main(['register', doc, '--no-complete']);
      expect(saved.code, describeRun(saved)).toBe(0);
      const hash = sha256Of(doc);
      full.dir = 'locks';
      full.code = code;
      const run = await bed.main(['pending', 'drop', hash]);
      expect(run.code, describeRun(run)).toBe(2);
      expect(run.stderr).toContain(SAYS[code]);
      expect(run.stderr).not.toContain('unexpected error');
      full.dir = undefined;
      const listed = await bed.main(['pending', '--json']);
      expect((JSON.parse(listed.stdout) as { hash: string }[]).map((row) => row.hash)).toEqual([hash]);
    },
  );

  it('complete --session given by hand, on a full disk: exit 2, nothing sent', async () => {
    const session = readFixture('session-free-plan.json');
    full.dir = 'pending';
    const run = await bed.main(['complete', 'a'.repeat(64), '--session', '-'], { input: session });
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).toContain('no space left on the device holding');
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('complete --use-active-subscription answered 404, its session no longer removable: the 404, and where it is kept', async () => {
    const hash = sha256('never requested, read-only store');
    full.unlinkDir = 'pending';
    const run = await bed.main(['complete', hash, '--use-active-subscription']);
    expect(run.code, describeRun(run)).toBe(1);
    expect(run.stderr).toContain('answered 404');
    expect(run.stderr).toContain(
      `the session given could not be removed (EACCES: permission denied, unlink '${bed.pendingFile(hash)}')`,
    );
    expect(run.stderr).toContain(`notarize pending drop ${hash}`);
    expect(run.stderr).not.toContain('unexpected error');
    full.unlinkDir = undefined;
    const dropped = await bed.main(['pending', 'drop', hash]);
    expect(dropped.code, describeRun(dropped)).toBe(0);
  });

  it('after the request step was answered: still exit 1 with the session quoted (it exists nowhere else)', async () => {
    full.dir = 'pending';
    const run = await bed.main(['register', await bed.file('late.txt')]);
    expect(run.code, describeRun(run)).toBe(1);
    expect(run.stderr).toContain('could not be saved');
    expect(run.stderr).toContain('the session the service sent: {');
    expect(run.stderr).not.toContain('nothing was sent');
    expect(bed.calls('request')).toBe(1);
  });

  it("a session whose folder's flush fails (EIO): forfait is not sent on a session that may not be durable", async () => {
    full.flushDir = 'pending';
    const doc = await bed.file('unflushed.txt');
    const run = await bed.main(['register', doc]);
    expect(run.code, describeRun(run)).toBe(1);
    expect(run.stderr).toContain('could not be saved');
    expect(run.stderr).toContain('the session the service sent: {');
    expect(bed.calls('request')).toBe(1);
    expect(bed.calls('forfait')).toBe(0);
  });

  it('a shared directory flush that failed: its waiters get a flush of their own, and later callers too', async () => {
    const dir = bed.path('flushed');
    mkdirSync(dir);
    const flushes = new DirFlushes();
    full.flushDir = 'flushed';
    const failing = flushes.flush(dir);
    // Opened on the pool's next turn: only this first flush fails.
    await new Promise((resolve) => setImmediate(resolve));
    full.flushDir = undefined;
    const waiting = flushes.flush(dir);
    await expect(failing).rejects.toMatchObject({ code: 'EIO' });
    await expect(waiting).resolves.toBeUndefined();
    const running = flushes.flush(dir);
    await expect(Promise.all([running, flushes.flush(dir)])).resolves.toEqual([undefined, undefined]);
  });

  /** The warnings of a run that quote a record not saved, by the file they name. */
  function unsavedRecords(stderr: string): Map<string, { hash: string }> {
    const quoted = new Map<string, { hash: string }>();
    for (const line of stderr.split('\n')) {
      const match =
        /^warning: (.+): the record the service sent could not be saved; keep it \(it is sent only once\): (\{.*\})$/.exec(
          line,
        );
      if (match) quoted.set(match[1]!, JSON.parse(match[2]!) as { hash: string });
    }
    return quoted;
  }

  it('records paid for but not saved, in a batch: each one whole on stderr (table) and in its result (--json)', async () => {
    const docs = await Promise.all(['r1.txt', 'r2.txt', 'r3.txt'].map((name) => bed.file(name)));
    full.dir = 'ledger';
    const table = await bed.main(['register', ...docs]);
    expect(table.code, describeRun(table)).toBe(1);
    expect(bed.calls('forfait')).toBe(3);
    const quoted = unsavedRecords(table.stderr);
    expect([...quoted.keys()].sort()).toEqual([...docs].sort());
    for (const doc of docs) expect(quoted.get(doc)!.hash).toBe(sha256Of(doc));

    const more = await Promise.all(['j1.txt', 'j2.txt'].map((name) => bed.file(name)));
    const json = await bed.main(['register', ...more, '--json']);
    expect(json.code, describeRun(json)).toBe(1);
    const results = JSON.parse(json.stdout) as { file: string; status: string; record?: { hash: string } }[];
    expect(results.map((r) => [r.file, r.status, r.record?.hash])).toEqual(
      more.map((doc) => [doc, 'failed', sha256Of(doc)]),
    );
    expect([...unsavedRecords(json.stderr).keys()].sort()).toEqual([...more].sort());
  });

  it('a record longer than any quote used to be (a long description): still quoted whole', async () => {
    const doc = await bed.file('long.txt');
    const description = 'd'.repeat(6000);
    full.dir = 'ledger';
    const run = await bed.main(['register', doc, '--description', description]);
    expect(run.code, describeRun(run)).toBe(1);
    const quote = /the record the service sent: (\{.*\})\)$/m.exec(run.stderr);
    expect(quote, run.stderr).not.toBeNull();
    expect(JSON.parse(quote![1]!)).toMatchObject({ hash: sha256Of(doc), description });
  });
});

/**
 * Issue 10, findings 1, 2, 7 and 8: a store or receipt directory others
 * could have prepared (a CI checkout touched by earlier steps, a shared
 * /tmp, a directory of another user), against real files: in process
 * (`bed.main`), except where another user, concurrent processes or a path
 * relative to the working directory are the point, which run the built bin.
 *
 * - no store file or receipt is ever read or written through a symbolic
 *   link: the link's target keeps its bytes, mode and owner, and the run
 *   exits 2 naming the link, before anything is sent;
 * - a store directory that is a link, not a directory, another user's, or
 *   shared with everyone (1777, 0777) is refused and never chmod'ed;
 * - concurrent changes of config.json and credentials.json lose nothing.
 *
 * Tests that need a second user run only as root (they chown, or run
 * notarize as uid 65534 through setpriv); they are skipped otherwise.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkBeforeSending, planReceipts, writeReceipt } from '../../src/core/receipts.js';
import { NotarizeError, UsageError } from '../../src/errors.js';
import { writeFileAtomic } from '../../src/store/files.js';
import { type Bed, useBed } from '../helpers/bed.js';
import {
  bundleChunk,
  cliCopyForOtherUsers,
  describeRun,
  runProcess,
  spawnCli,
  STACK_LINE as STACK_TRACE,
  type Run,
} from '../helpers/cli.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

const isRoot = process.getuid?.() === 0;
const hasSetpriv = isRoot && spawnSync('setpriv', ['--version']).status === 0;
const NOBODY = 65534;

/** What must not change about a link's target: its bytes, mode and owner. */
function snapshot(path: string): { text: string; mode: number; uid: number; gid: number } {
  const info = statSync(path);
  return { text: readFileSync(path, 'utf8'), mode: info.mode, uid: info.uid, gid: info.gid };
}

/** The run refused with exit 2, one error line naming `path` and saying why, no stack trace. */
function expectRefused(run: Run, path: string, why: RegExp): void {
  expect(run.code, describeRun(run)).toBe(2);
  const errorLine = run.stderr.split('\n').find((line) => line.startsWith('notarize: '));
  expect(errorLine, describeRun(run)).toBeDefined();
  expect(errorLine).toContain(path);
  expect(errorLine).toMatch(why);
  expect(run.stderr).not.toMatch(STACK_TRACE);
}

/** A store directory made in advance (0700), as an earlier notarize or build step would have. */
function makeStore(): string {
  mkdirSync(bed.storeDir, { mode: 0o700 });
  return bed.storeDir;
}

/** A file outside the store that a planted link points to, as a build artifact would be. */
function victim(name = 'manifest.json', content = '{"name":"app","version":"1.0.0"}\n'): string {
  const dir = join(bed.root, 'dist');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, name);
  writeFileSync(path, content, { mode: 0o644 });
  if (isRoot) chownSync(path, NOBODY, NOBODY);
  return path;
}

describe('finding 1: config.json and credentials.json are never used through a link', () => {
  it('register logging in on the fly: credentials.json -> a build file is refused before anything is sent', async () => {
    const target = victim();
    const before = snapshot(target);
    symlinkSync(target, join(makeStore(), 'credentials.json'));
    await bed.write('doc.txt', 'a document\n');
    const run = await bed.main(['register', bed.path('doc.txt')]);
    expectRefused(run, bed.credentialsFile, /symbolic link/);
    expect(snapshot(target)).toEqual(before);
    expect(bed.sandbox.calls).toEqual([]);
    expect(lstatSync(bed.credentialsFile).isSymbolicLink()).toBe(true);
  });

  it('login: the key is not even sent, the target keeps its bytes, mode and owner', async () => {
    const target = victim();
    const before = snapshot(target);
    symlinkSync(target, join(makeStore(), 'credentials.json'));
    const run = await bed.main(['login', '--api-key-stdin'], {
      input: bed.sandbox.apiKey,
      env: { NOTARIZE_API_KEY: '' },
    });
    expectRefused(run, bed.credentialsFile, /symbolic link/);
    expect(snapshot(target)).toEqual(before);
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('logout through a link to a JSON file with tokens: refused, the file unchanged', async () => {
    const target = victim('tokens.json', `${JSON.stringify({ tokens: { [bed.url]: 'not-a-real-token-123' } })}\n`);
    const before = snapshot(target);
    symlinkSync(target, join(makeStore(), 'credentials.json'));
    const run = await bed.main(['logout']);
    expectRefused(run, bed.credentialsFile, /symbolic link/);
    expect(snapshot(target)).toEqual(before);
  });

  it.each([
    ['config set', ['config', 'set', 'timeout', '5000']],
    ['config unset', ['config', 'unset', 'timeout']],
    ['config get', ['config', 'get', 'timeout']],
  ])('%s: config.json -> a JSON file elsewhere is refused, the file unchanged', async (_name, args) => {
    const target = victim('package.json', '{"name":"app","timeout":"1"}\n');
    const before = snapshot(target);
    const config = join(makeStore(), 'config.json');
    symlinkSync(target, config);
    const run = await bed.main(args);
    expectRefused(run, config, /symbolic link/);
    expect(snapshot(target)).toEqual(before);
  });

  it('a dangling credentials.json link is refused too, and nothing is created at its target', async () => {
    const target = join(bed.root, 'dist', 'created-by-notarize.json');
    symlinkSync(target, join(makeStore(), 'credentials.json'));
    const run = await bed.main(['login', '--api-key-stdin'], {
      input: bed.sandbox.apiKey,
      env: { NOTARIZE_API_KEY: '' },
    });
    expectRefused(run, bed.credentialsFile, /symbolic link/);
    expect(existsSync(target)).toBe(false);
  });

  it.runIf(isRoot)('as root: a credentials.json owned by another user is refused, not read or rewritten', async () => {
    const store = makeStore();
    writeFileSync(bed.credentialsFile, '{"tokens":{}}\n', { mode: 0o600 });
    chownSync(bed.credentialsFile, NOBODY, NOBODY);
    const before = snapshot(bed.credentialsFile);
    const run = await bed.main(['login', '--api-key-stdin'], {
      input: bed.sandbox.apiKey,
      env: { NOTARIZE_API_KEY: '' },
    });
    expectRefused(run, join(store, 'credentials.json'), /another user/);
    expect(snapshot(bed.credentialsFile)).toEqual(before);
    expect(bed.sandbox.calls).toEqual([]);
  });
});

describe('finding 8: store directories', () => {
  it('NOTARIZE_CONFIG_DIR given as a link to a directory is refused (the real path works)', async () => {
    const real = join(bed.root, 'real-store');
    mkdirSync(real, { mode: 0o755 });
    const link = join(bed.root, 'store-link');
    symlinkSync(real, link);
    const run = await bed.main(['config', 'set', 'timeout', '5000'], { env: { NOTARIZE_CONFIG_DIR: link } });
    expectRefused(run, link, /symbolic link/);
    expect(readdirSync(real)).toEqual([]);
    expect(statSync(real).mode & 0o7777).toBe(0o755);

    const direct = await bed.main(['config', 'set', 'timeout', '5000'], { env: { NOTARIZE_CONFIG_DIR: real } });
    expect(direct.code, describeRun(direct)).toBe(0);
    expect(direct.stderr).toContain(`tightened the rights of ${real}`);
    expect(statSync(real).mode & 0o777).toBe(0o700);
  });

  it.each(['/', '/.', '//'])(
    'NOTARIZE_CONFIG_DIR given as a link with %s after it is refused as the link is, nothing chmod-ed or written there',
    async (tail) => {
      const real = join(bed.root, `real-store-${tail.length}${tail.endsWith('.') ? 'd' : 's'}`);
      mkdirSync(real);
      chmodSync(real, 0o775);
      const link = `${real}-link`;
      symlinkSync(real, link);
      for (const args of [
        ['config', 'set', 'timeout', '5000'],
        ['login', '--api-key-stdin'],
      ]) {
        const run = await bed.main(args, { env: { NOTARIZE_CONFIG_DIR: `${link}${tail}` }, input: bed.sandbox.apiKey });
        expectRefused(run, link, /symbolic link/);
      }
      expect(readdirSync(real)).toEqual([]);
      expect(statSync(real).mode & 0o7777).toBe(0o775);
      expect(bed.sandbox.calls).toEqual([]);
    },
  );

  it('NOTARIZE_CONFIG_DIR naming a file is refused', async () => {
    const file = join(bed.root, 'a-file');
    writeFileSync(file, 'x');
    const run = await bed.main(['config', 'set', 'timeout', '5000'], { env: { NOTARIZE_CONFIG_DIR: file } });
    expectRefused(run, file, /not a directory/);
    expect(readFileSync(file, 'utf8')).toBe('x');
  });

  it('a directory readable by others that holds more than a store is refused, its rights left as they were', async () => {
    // NOTARIZE_CONFIG_DIR="$UNSET/" is `/`; a home or a web root is the milder case.
    const shared = join(bed.root, 'home');
    mkdirSync(join(shared, 'public_html'), { recursive: true });
    chmodSync(shared, 0o755);
    await bed.write('doc.txt', 'a document\n');
    for (const args of [['list'], ['register', bed.path('doc.txt')]]) {
      const run = await bed.main(args, { env: { NOTARIZE_CONFIG_DIR: shared } });
      expectRefused(run, shared, /mode 755\) and it holds entries that are not notarize's \(public_html\)/);
      expect(run.stderr).toContain('chmod 700');
    }
    expect(statSync(shared).mode & 0o7777).toBe(0o755);
    expect(readdirSync(shared)).toEqual(['public_html']);
    expect(bed.calls('login')).toBe(0);

    // A store an older notarize left a temporary file in (conf's writer), or that Finder looked into, is still one.
    const older = join(bed.root, 'older-store');
    mkdirSync(older, { mode: 0o755 });
    chmodSync(older, 0o755);
    for (const name of ['config.json', 'credentials.json.tmp-1763000000a1b2c3', '.DS_Store']) {
      writeFileSync(join(older, name), name === 'config.json' ? '{}' : '');
    }
    const tightened = await bed.main(['list'], { env: { NOTARIZE_CONFIG_DIR: older } });
    expect(tightened.code, describeRun(tightened)).toBe(0);
    expect(statSync(older).mode & 0o777).toBe(0o700);

    // Once private, it is the owner's choice: used as it is, nothing tightened.
    chmodSync(shared, 0o700);
    const run = await bed.main(['list'], { env: { NOTARIZE_CONFIG_DIR: shared } });
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stderr).not.toMatch(/tightened/);
  });

  /** The store folders a planted link could replace, by how to find them once the store exists. */
  const folders: [string, (b: Bed) => string][] = [
    ['services/', (b) => join(b.storeDir, 'services')],
    ['services/<service>/', (b) => b.serviceDir()],
    ['services/<service>/pending/', (b) => join(b.serviceDir(), 'pending')],
    ['services/<service>/ledger/', (b) => join(b.serviceDir(), 'ledger')],
    ['services/<service>/locks/', (b) => join(b.serviceDir(), 'locks')],
    ['locks/', (b) => join(b.storeDir, 'locks')],
  ];

  it.each(folders)(
    '%s as a link elsewhere: register is refused naming it, nothing sent or written there',
    async (_name, at) => {
      const elsewhere = join(bed.root, 'elsewhere');
      mkdirSync(elsewhere, { mode: 0o755 });
      const folder = at(bed);
      mkdirSync(join(folder, '..'), { recursive: true, mode: 0o700 });
      symlinkSync(elsewhere, folder);
      await bed.write('doc.txt', 'a document\n');
      // A run that logs in (credentials.json, locks/) and registers (services/...).
      const run = await bed.main(['register', bed.path('doc.txt')]);
      expectRefused(run, folder, /symbolic link/);
      expect(readdirSync(elsewhere)).toEqual([]);
      expect(statSync(elsewhere).mode & 0o7777).toBe(0o755);
      expect(bed.calls('request')).toBe(0);
    },
  );

  it.each([0o1777, 0o777, 0o1770])(
    'a store directory of mode %o (shared with others) is refused and its mode left as it was',
    async (mode) => {
      const dir = makeStore();
      chmodSync(dir, mode);
      const run = await bed.main(['config', 'set', 'timeout', '5000']);
      expectRefused(run, dir, /world-writable or sticky/);
      expect(statSync(dir).mode & 0o7777).toBe(mode);
      expect(readdirSync(dir)).toEqual([]);
    },
  );

  it('a 1777 service folder inside the store is refused, not tightened', async () => {
    await bed.write('doc.txt', 'a document\n');
    const pending = join(bed.serviceDir(), 'pending');
    mkdirSync(pending, { recursive: true, mode: 0o700 });
    chmodSync(pending, 0o1777);
    const run = await bed.main(['register', bed.path('doc.txt')]);
    expectRefused(run, pending, /world-writable or sticky/);
    expect(statSync(pending).mode & 0o7777).toBe(0o1777);
    expect(bed.calls('request')).toBe(0);
  });

  it.runIf(isRoot)('as root: a store directory owned by another user is refused, its owner and mode kept', async () => {
    const dir = makeStore();
    chmodSync(dir, 0o755);
    chownSync(dir, NOBODY, NOBODY);
    await bed.write('doc.txt', 'a document\n');
    for (const args of [
      ['config', 'set', 'timeout', '5000'],
      ['register', bed.path('doc.txt')],
    ]) {
      const run = await bed.main(args);
      expectRefused(run, dir, /belongs to another user \(uid 65534/);
    }
    const info = statSync(dir);
    expect([info.uid, info.mode & 0o7777]).toEqual([NOBODY, 0o755]);
    expect(readdirSync(dir)).toEqual([]);
    expect(bed.sandbox.calls).toEqual([]);
  });

  describe.runIf(hasSetpriv)('as a second user (uid 65534, through setpriv)', () => {
    let shared: string | undefined;
    afterEach(() => {
      if (shared) rmSync(shared, { recursive: true, force: true });
      shared = undefined;
    });

    /** A directory uid 65534 can traverse (its own temp dirs would be root's 0700). */
    function sharedRoot(): string {
      shared = mkdtempSync(join(tmpdir(), 'notarize-shared-'));
      chmodSync(shared, 0o711);
      return shared;
    }

    function runAsNobody(storeDir: string, args: string[]): Promise<Run> {
      // A copy uid 65534 can reach: the checkout may be below a private directory (CI's fresh clone).
      const bin = cliCopyForOtherUsers(mkdtempSync(join(shared ?? sharedRoot(), 'cli-')));
      return runProcess(
        'setpriv',
        [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, bin, ...args],
        { NOTARIZE_CONFIG_DIR: storeDir, NOTARIZE_BASE_URL: bed.url },
        { cwd: '/' },
      );
    }

    it("refuses root's store directory, and root's 1777 directory, and uses its own", async () => {
      const root = sharedRoot();
      const rootsStore = join(root, 'roots-store');
      mkdirSync(rootsStore, { mode: 0o755 });
      const sticky = join(root, 'sticky');
      mkdirSync(sticky);
      chmodSync(sticky, 0o1777);
      const own = join(root, 'own');
      mkdirSync(own, { mode: 0o750 });
      chownSync(own, NOBODY, NOBODY);

      const refused = await runAsNobody(rootsStore, ['config', 'set', 'timeout', '5000']);
      bed.record(refused);
      expectRefused(refused, rootsStore, /belongs to another user \(uid 0, you are 65534\)/);
      const inSticky = await runAsNobody(sticky, ['config', 'set', 'timeout', '5000']);
      bed.record(inSticky);
      expectRefused(inSticky, sticky, /belongs to another user|world-writable or sticky/);
      expect(statSync(sticky).mode & 0o7777).toBe(0o1777);

      const ok = await runAsNobody(own, ['config', 'set', 'timeout', '5000']);
      bed.record(ok);
      expect(ok.code, describeRun(ok)).toBe(0);
      expect(ok.stderr).toContain(`tightened the rights of ${own}`);
      const config = statSync(join(own, 'config.json'));
      expect([config.uid, config.mode & 0o777]).toEqual([NOBODY, 0o600]);
    });

    it("a link planted by root's neighbour: uid 65534's own store with config.json -> root's file is refused", async () => {
      const root = sharedRoot();
      const own = join(root, 'own');
      mkdirSync(own, { mode: 0o700 });
      chownSync(own, NOBODY, NOBODY);
      const target = join(root, 'roots-file.json');
      writeFileSync(target, '{}\n', { mode: 0o666 });
      symlinkSync(target, join(own, 'config.json'));
      const run = await runAsNobody(own, ['config', 'set', 'timeout', '5000']);
      bed.record(run);
      expectRefused(run, join(own, 'config.json'), /symbolic link/);
      expect(readFileSync(target, 'utf8')).toBe('{}\n');
    });
  });
});

describe('finding 2: receipts are never written through a link', () => {
  async function plantReceiptLink(): Promise<{ target: string; before: ReturnType<typeof snapshot>; link: string }> {
    await bed.write('doc.txt', 'a document with a receipt\n');
    const target = victim('important.txt', 'do not overwrite me\n');
    mkdirSync(join(bed.workDir, 'R'));
    const link = join(bed.workDir, 'R', 'doc.txt.notarization.json');
    symlinkSync(target, link);
    return { target, before: snapshot(target), link };
  }

  it.each([[[]], [['--force']]])('a link at the receipt path (%j): refused up front, nothing sent', async (extra) => {
    const { target, before, link } = await plantReceiptLink();
    // Spawned in the work directory: the error names the receipt path as given (relative).
    const run = await bed.run(['register', 'doc.txt', '--receipt-dir', 'R', ...extra]);
    expectRefused(run, 'R/doc.txt.notarization.json', /symbolic link/);
    expect(snapshot(target)).toEqual(before);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(bed.sandbox.calls).toEqual([]);
  });

  it.each([[[]], [['--force']]])(
    'a linked folder inside the receipt directory (%j): refused up front, nothing sent',
    async (extra) => {
      await bed.write('dist/linux/app.bin', 'linux build\n');
      await bed.write('dist/mac/app.bin', 'mac build\n');
      const elsewhere = join(bed.root, 'elsewhere');
      mkdirSync(elsewhere, { mode: 0o755 });
      mkdirSync(join(bed.workDir, 'R'));
      symlinkSync(elsewhere, join(bed.workDir, 'R', 'linux'));
      const run = await bed.run(['register', '-r', 'dist', '--receipt-dir', 'R', ...extra]);
      expectRefused(run, 'R/linux', /receipt folder .*symbolic link/);
      expect(readdirSync(elsewhere)).toEqual([]);
      expect(bed.sandbox.calls).toEqual([]);
    },
  );

  it('the receipt directory itself may be a link the user names (their output folder)', async () => {
    await bed.write('doc.txt', 'a document\n');
    const out = join(bed.root, 'out');
    mkdirSync(out);
    symlinkSync(out, join(bed.workDir, 'R'));
    const run = await bed.main(['register', bed.path('doc.txt'), '--receipt-dir', bed.path('R')]);
    expect(run.code, describeRun(run)).toBe(0);
    expect(readdirSync(out)).toEqual(['doc.txt.notarization.json']);
  });

  it('a link that appears after the check is not written through, with or without --force', async () => {
    const dir = join(bed.root, 'receipts');
    const plan = await planReceipts(dir, [{ path: 'sub/doc.txt', relative: 'sub/doc.txt' }]);
    const hash = 'a'.repeat(64);
    const link = join(dir, 'sub', 'doc.txt.notarization.json');
    for (const overwrite of [false, true]) {
      rmSync(link, { force: true });
      await checkBeforeSending(plan, 0, hash, overwrite, 'http://127.0.0.1:1');
      const target = victim(`race-${overwrite}.txt`, 'untouched\n');
      mkdirSync(join(dir, 'sub'), { recursive: true });
      symlinkSync(target, link);
      const error = await writeReceipt(plan, 0, hash, '{"ok":true}', overwrite).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NotarizeError);
      expect((error as NotarizeError).exitCode).toBe(1); // Written after a registration: exit 1.
      expect((error as NotarizeError).message).toMatch(/symbolic link/);
      expect(readFileSync(target, 'utf8')).toBe('untouched\n');
    }
    // A linked folder appearing after the check is refused the same way.
    const other = join(bed.root, 'other');
    mkdirSync(other);
    rmSync(join(dir, 'sub'), { recursive: true });
    symlinkSync(other, join(dir, 'sub'));
    const error = await writeReceipt(plan, 0, hash, '{"ok":true}', true).catch((e: unknown) => e);
    expect((error as NotarizeError).message).toMatch(/receipt folder .*symbolic link/);
    expect(readdirSync(other)).toEqual([]);
  });

  it('checkBeforeSending refuses a link whatever the overwrite flag (a UsageError: nothing sent)', async () => {
    const dir = join(bed.root, 'receipts');
    const plan = await planReceipts(dir, [{ path: 'doc.txt' }]);
    symlinkSync(victim(), join(dir, 'doc.txt.notarization.json'));
    for (const overwrite of [false, true]) {
      const error = await checkBeforeSending(plan, 0, 'b'.repeat(64), overwrite, 'http://127.0.0.1:1').catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(UsageError);
      expect((error as UsageError).code).toBe('receipt_link');
    }
  });
});

describe('the write primitive replaces a link, never its target', () => {
  it('writeFileAtomic over a link: the link becomes our file, the target keeps its bytes', async () => {
    const target = victim('t.json', 'target\n');
    const file = join(bed.root, 'store-file.json');
    symlinkSync(target, file);
    await writeFileAtomic(file, '{"mine":true}\n');
    expect(lstatSync(file).isFile()).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe('{"mine":true}\n');
    expect(readFileSync(target, 'utf8')).toBe('target\n');
  });

  it('writeFileAtomic with replace: false fails on a link (EEXIST), the target untouched', async () => {
    const target = victim('t2.json', 'target\n');
    const file = join(bed.root, 'receipt.json');
    symlinkSync(target, file);
    const error = await writeFileAtomic(file, 'new\n', { replace: false }).catch((e: unknown) => e);
    expect((error as NodeJS.ErrnoException).code).toBe('EEXIST');
    expect(readFileSync(target, 'utf8')).toBe('target\n');
    expect(readdirSync(bed.root).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });
});

describe('finding 7: concurrent changes of config.json and credentials.json lose nothing', () => {
  /** Runs every argument list as its own process, all at once (no concurrency limit), recording outputs. */
  async function allAtOnce(runs: { args: string[]; env?: Record<string, string>; input?: string }[]): Promise<Run[]> {
    const results = await Promise.all(
      runs.map(
        ({ args, env, input }) =>
          spawnCli(args, bed.env(env), { cwd: bed.workDir, timeoutMs: 60_000, ...(input ? { input } : {}) }).done,
      ),
    );
    for (const result of results) bed.record(result);
    return results;
  }

  const ROUNDS = 3;
  const SERVICES = 12;

  it(`${SERVICES} logins to ${SERVICES} services at once keep all ${SERVICES} tokens, ${ROUNDS} rounds`, async () => {
    const sandboxes = [bed.sandbox];
    for (let i = 1; i < SERVICES; i++) sandboxes.push(await bed.extraSandbox());
    for (let round = 0; round < ROUNDS; round++) {
      rmSync(bed.storeDir, { recursive: true, force: true });
      const started = Date.now();
      const results = await allAtOnce(
        sandboxes.map((s) => ({
          args: ['login', '--api-key-stdin', '--quiet'],
          env: { NOTARIZE_BASE_URL: s.url, NOTARIZE_API_KEY: '' },
          input: s.apiKey,
        })),
      );
      for (const result of results) expect(result.code, describeRun(result)).toBe(0);
      const tokens = bed.storedTokens();
      expect(Object.keys(tokens).sort(), `round ${round}`).toEqual(sandboxes.map((s) => s.url).sort());
      console.log(
        `round ${round}: ${SERVICES} concurrent logins in ${Date.now() - started} ms, ${SERVICES} tokens kept`,
      );
      expect(readdirSync(join(bed.storeDir, 'locks'))).toEqual([]);
    }
  }, 120_000);

  /**
   * `config set` takes only the three known settings, too few for a lost
   * update to show (a key disappears only if every writer of it is
   * clobbered). This test-only scenario stores 20 distinct keys through the
   * built Store.setSetting, the code `config set` runs, from 20 processes.
   */
  it(`20 processes at once each storing its own key k<N>=v<N> keep all 20, ${ROUNDS} rounds`, async () => {
    const storeModule = bundleChunk('store');
    const setKey = (i: number): Promise<{ code: number | null; stderr: string }> =>
      new Promise((resolve) => {
        const code = `const { Store } = await import(${JSON.stringify(storeModule)});
          await new Store(${JSON.stringify(bed.storeDir)}).setSetting('k${i}', 'v${i}');`;
        const child = spawn(process.execPath, ['--input-type=module', '-e', code], {
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        child.on('close', (exitCode) => resolve({ code: exitCode, stderr }));
      });
    for (let round = 0; round < ROUNDS; round++) {
      rmSync(bed.storeDir, { recursive: true, force: true });
      const started = Date.now();
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => setKey(i)));
      for (const result of results) expect(result.code, result.stderr).toBe(0);
      const stored = JSON.parse(readFileSync(join(bed.storeDir, 'config.json'), 'utf8')) as Record<string, string>;
      expect(stored, `round ${round}`).toEqual(
        Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, `v${i}`])),
      );
      console.log(`round ${round}: 20 processes storing 20 keys in ${Date.now() - started} ms, 20 of 20 kept`);
    }
  }, 120_000);

  it(`20 concurrent \`config set\` of the three settings keep all three, ${ROUNDS} rounds`, async () => {
    const values = (i: number): [string, string] =>
      [
        ['baseUrl', `http://127.0.0.1:${20000 + i}`] as [string, string],
        ['timeout', String(1000 + i)] as [string, string],
        ['retries', String(i % 10)] as [string, string],
      ][i % 3]!;
    for (let round = 0; round < ROUNDS; round++) {
      rmSync(bed.storeDir, { recursive: true, force: true });
      const started = Date.now();
      const results = await allAtOnce(
        Array.from({ length: 20 }, (_, i) => ({ args: ['config', 'set', ...values(i)] })),
      );
      for (const result of results) expect(result.code, describeRun(result)).toBe(0);
      const stored = JSON.parse(readFileSync(join(bed.storeDir, 'config.json'), 'utf8')) as Record<string, string>;
      expect(Object.keys(stored).sort(), `round ${round}`).toEqual(['baseUrl', 'retries', 'timeout']);
      for (const [key, value] of Object.entries(stored)) {
        const written = Array.from({ length: 20 }, (_, i) => values(i)).filter(([k]) => k === key);
        expect(written.map(([, v]) => v)).toContain(value);
      }
      console.log(`round ${round}: 20 concurrent config set in ${Date.now() - started} ms, 3 of 3 keys kept`);
    }
  }, 120_000);
});

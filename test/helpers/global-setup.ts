/**
 * Where the suite's temporary directories go (vitest's globalSetup: it runs
 * once, in the main process, before the workers start, and they inherit
 * TMPDIR, so every `os.tmpdir()` of a test names the directory made here).
 *
 * Creating a file is the store's most frequent system call, and on the
 * ext4 disk of this project's 2-core machines it costs about 0.9 ms of kernel
 * CPU (2,000 O_CREAT opens in a loop: 935 µs of system time each; 6 µs on
 * tmpfs). The suite creates tens of thousands of files: so when /dev/shm is
 * a tmpfs that can hold them and run programs (see shmUsable), they are made
 * there. The file system is the only change; every test makes and removes
 * its own directories as before. A suite killed midway leaves its directory
 * behind (in memory, until reboot): `rm -rf /dev/shm/notarize-suite-*`.
 *
 * NOTARIZE_TEST_TMPDIR names another parent instead, e.g. a directory on the
 * disk (.ci/run's Node 24 pass runs so, so both are run on each change).
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** statfs(2)'s magic number of tmpfs. */
const TMPFS_MAGIC = 0x01021994;
/** Free space /dev/shm must have: the suite's largest files are a few MB, but 3 workers write at once. */
const MIN_FREE_BYTES = 1024 ** 3;

/**
 * Whether /dev/shm can stand in for the disk: a tmpfs, mounted without
 * noexec (tests run programs they write there: the npm and notarize stubs
 * of test/action, fish's bin/), with room to spare (Docker's default is
 * noexec and 64 MB), and writable by us.
 */
function shmUsable(): boolean {
  const mount = readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' '))
    .findLast((fields) => fields[1] === '/dev/shm');
  if (mount === undefined || mount[2] !== 'tmpfs' || mount[3]?.split(',').includes('noexec')) return false;
  const fs = statfsSync('/dev/shm');
  if (fs.type !== TMPFS_MAGIC || fs.bavail * fs.bsize < MIN_FREE_BYTES) return false;
  rmSync(mkdtempSync('/dev/shm/notarize-probe-'), { recursive: true });
  return true;
}

/** The parent of the suite's directory: NOTARIZE_TEST_TMPDIR, else /dev/shm when usable, else the OS's. */
function parent(env: NodeJS.ProcessEnv): string {
  if (env.NOTARIZE_TEST_TMPDIR) return env.NOTARIZE_TEST_TMPDIR;
  try {
    if (shmUsable()) return '/dev/shm';
  } catch {
    // No /proc or /dev/shm (macOS, Windows), or not ours to write: the OS's temp dir.
  }
  return tmpdir();
}

/** Set while the suite's directory exists: each project of vitest.config.ts runs this setup, and they share one. */
const MARK = 'NOTARIZE_TEST_SUITE_DIR';

export default function setup(): () => void {
  // Made by this setup for an earlier project of this run (not a variable left in the caller's shell).
  if (process.env[MARK] !== undefined && process.env[MARK] === process.env.TMPDIR) return () => {};
  const dir = mkdtempSync(join(parent(process.env), 'notarize-suite-'));
  // As /tmp is: tests run notarize as another user (uid 65534) in directories made here.
  chmodSync(dir, 0o1777);
  const before = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  process.env[MARK] = dir;
  return () => {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
    delete process.env[MARK];
    rmSync(dir, { recursive: true, force: true });
  };
}

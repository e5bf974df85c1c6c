/**
 * A lock between notarize processes, so two processes never run the
 * request/forfait flow for the same hash at once (which could complete one
 * notarization twice); the same kind guards the placing of documents in
 * Merkle trees (aggregate.lock) and each change of config.json or
 * credentials.json (their `<file>.lock`).
 *
 * A lock is a file holding `<pid> <host> <nonce> lease=<ms> [ns=<id>]`. It
 * comes into existence complete: its text is written once per process (and
 * lease) to a private run file in the locks directory, which is then
 * hard-linked to each lock's name, an atomic create-if-absent (an O_EXCL
 * create followed by a write would show other processes an empty lock). So
 * every lock a process holds in one directory is one inode: a batch makes no
 * new file per document (on ext4 a create costs a scan of the recently freed
 * inodes, the largest part of a batch's store work: docs/performance.md), and
 * one refresh keeps all of them alive. The run file goes when the last of its
 * locks is released, or when the process exits; one a killed process left
 * goes once nothing links to it and its owner is provably dead or it has not
 * been refreshed for LEGACY_STALE_MS (removeDeadRunFiles). Since all of a
 * process's locks share an inode, which lock a holder released is told by
 * this module's own record of its holders (heldHere), not by the file.
 *
 * Liveness is a heartbeat lease, because a pid proves nothing about a process
 * in another PID namespace (a container) or on another host sharing the
 * store: there `kill(pid, 0)` says "no such process" about a live owner. The
 * owner refreshes the lock's mtime every LEASE_MS / 3 through the descriptor
 * of the file it created (so it can only ever touch its own lock), from an
 * unref'd timer. A waiter judges a lock stale only once it has itself seen
 * the lock unchanged (same text, inode and mtime) for LEASE_MS on its
 * own monotonic clock: no clock of another machine is trusted, so skew
 * between hosts cannot make a live lock look old. (Not its ctime: the links
 * of one run share an inode, whose ctime changes whenever another of them is
 * made or removed, also by a waiter taking over a dead run's other locks.)
 * The one shortcut: a lock whose `ns=` (boot id + PID namespace inode) is
 * ours was written in this very PID namespace of this very kernel, where
 * `kill(pid, 0)` answering ESRCH does prove the owner gone; it is taken over
 * at once. Any other answer
 * (alive, EPERM, a reused pid) falls back to the lease.
 *
 * A lock without `lease=` was written by an older notarize, which never
 * refreshes: it is judged by age (LEGACY_STALE_MS, longer than such a run
 * could hold a lock). A lock whose text cannot be read as ours (empty while
 * being written on a file system without hard links, or foreign) is stale
 * once seen unchanged for UNREADABLE_GRACE_MS.
 *
 * Deleting a stale lock is the classic race: two waiters both see the dead
 * owner, one deletes it and takes the lock, then the other deletes that *new*
 * lock. So a waiter may delete a stale lock only while it holds the claim
 * for that very lock instance (`<lock>.<id>.claim`, created the same
 * exclusive way, id = digest of the stale lock's text and inode), and only
 * after checking, under the claim, that the lock is still that instance.
 * Nobody else can delete that instance in between: its owner is dead and the
 * claim is unique. A claim is held for a few system calls only, so it is not
 * refreshed; it carries the same text, and a claim whose holder died is taken
 * over by the same rules (namespace shortcut, else unchanged for LEASE_MS)
 * one level up, so no file is ever deleted on a guess.
 *
 * What a lease cannot cover: an owner suspended (SIGSTOP, a paused VM) or
 * whose event loop is blocked for longer than LEASE_MS * 2/3 stops
 * refreshing and is then indistinguishable from a dead one. Nothing under
 * the lock runs long synchronously (hashing is done before the lock is
 * taken; store writes are single small files).
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  futimesSync,
  linkSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { StoreError, TransientError } from '../errors.js';
import { CREATE_NEW, PRIVATE_FILE_MODE, readPrivateFile, removeFile, uniqueSuffix } from './files.js';

/** How often a waiter looks at the lock again. */
const POLL_MS = 25;
const LOCK_READ_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0);

/** A lock path holding something no notarize wrote there: refused, never waited on. */
function notALock(file: string, why: string): StoreError {
  return new StoreError(file, `lock file ${file} is not a lock: ${why}`, {
    hint: 'notarize never makes one like it: remove it, or use a store of your own',
  });
}
/**
 * Throws when something at a lock's path is no lock notarize makes (a link,
 * a FIFO, a folder): a check up front, for a lock taken only after a request
 * (the store's credentials.lock, after a login: r108), which would otherwise
 * fail with the token unsaved, on every run.
 */
export function refuseNonLock(file: string): void {
  const info = lstatSync(file, { throwIfNoEntry: false });
  if (info === undefined || info.isFile()) return;
  throw notALock(file, info.isSymbolicLink() ? 'it is a symbolic link' : 'it is not a regular file');
}

/**
 * L: a lock seen unchanged for this long is stale. 12 s leaves the owner's
 * timer 8 s of slack (two missed refreshes) and keeps a dead owner's lock,
 * in a namespace or host we cannot inspect, from blocking its hash for long.
 */
export const LEASE_MS = 12_000;
/** The owner refreshes three times per lease. */
const REFRESHES_PER_LEASE = 3;
/**
 * Locks of notarize before leases (no `lease=`) are never refreshed, so only
 * age tells: a run of those versions held its lock for at most its requests
 * (default 30 s timeout, 3 retries, Retry-After waits up to 30 s) twice over.
 * Also the most any `lease=` written by another version is trusted with.
 */
const LEGACY_STALE_MS = 10 * 60_000;
/** A lock file whose text cannot be read as ours is left alone this long (a foreign format, or being written). */
const UNREADABLE_GRACE_MS = 5000;

/**
 * The timings of one withLock. Only tests change them, to see a lease run
 * out without waiting the real one; notarize always runs with the defaults.
 */
export interface LockTiming {
  /** The lease this process writes, refreshes (three times per lease) and allows others' locks at least; default LEASE_MS. */
  leaseMs?: number;
  /** How often a waiter looks at the lock again; default 25 ms. */
  pollMs?: number;
  /** How long a lock whose text cannot be read as ours is left alone; default 5 s. */
  unreadableGraceMs?: number;
  /** After how long a wait `onWaiting` is told; default 3 s. */
  noticeMs?: number;
  /**
   * Told once when a wait for a live owner passes `noticeMs`, with who holds the lock: a wait
   * of up to a minute with nothing said made a CI log look hung (r98). What it returns, if
   * anything, is called when that wait ends, the lock taken or not (waitNotice).
   */
  onWaiting?: (message: string) => (() => void) | void;
  /**
   * What the holder is doing, for the notice, when the lock's name does not say it (the root of
   * a Merkle tree being registered: its name is a digest, like a document's).
   */
  doing?: string;
}

/**
 * The lock timing of a run that says a long wait on `info` (LockTiming.onWaiting):
 * once for waits that overlap, as a batch's documents all waiting on one holder
 * do (r100: twelve identical lines), and again for a wait that starts after they
 * have all ended (r102: a batch's later waits, one after another, went unsaid).
 */
export function waitNotice(info: (message: string) => void): LockTiming {
  /** Waits past their notice and not yet ended, said or not. */
  let waiting = 0;
  return {
    onWaiting: (message) => {
      if (waiting === 0) info(message);
      waiting++;
      let ended = false;
      return () => {
        if (ended) return;
        ended = true;
        waiting--;
      };
    },
  };
}

/** LockTiming with every default filled in (`doing` has none: the lock's name says it). */
type Timing = Required<Omit<LockTiming, 'doing'>> & Pick<LockTiming, 'doing'>;

/** How long a wait for a lock goes unsaid (LockTiming.noticeMs). */
const NOTICE_MS = 3000;

function fullTiming(timing: LockTiming): Timing {
  return {
    leaseMs: timing.leaseMs ?? LEASE_MS,
    pollMs: timing.pollMs ?? POLL_MS,
    unreadableGraceMs: timing.unreadableGraceMs ?? UNREADABLE_GRACE_MS,
    noticeMs: timing.noticeMs ?? NOTICE_MS,
    onWaiting: timing.onWaiting ?? (() => {}),
    ...(timing.doing === undefined ? {} : { doing: timing.doing }),
  };
}
/** Claims of claims nest only when holders keep dying inside a few system calls; this bounds the depth. */
const MAX_CLAIM_DEPTH = 4;
/** The largest pid Linux can hand out (pid_max's ceiling); anything above is not a pid. */
const MAX_PID = 4_194_304;
const HOST = hostname();

let namespaceMemo: string | null | undefined;

/**
 * This kernel's boot id and our PID namespace's inode: equal in two lock
 * texts only when both processes see the same pids (see the module comment).
 * Undefined where /proc does not tell (not Linux, /proc hidden).
 */
function pidNamespace(): string | undefined {
  if (namespaceMemo === undefined) {
    namespaceMemo = null;
    if (process.platform === 'linux') {
      try {
        const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
        const ns = statSync('/proc/self/ns/pid');
        if (/^[0-9a-f-]{32,36}$/.test(boot)) namespaceMemo = `${boot}/${ns.dev}/${ns.ino}`;
      } catch {
        // No shortcut then: every lock is judged by its lease.
      }
    }
  }
  return namespaceMemo ?? undefined;
}

/**
 * The text of a lock or claim held by process `pid` of this PID namespace.
 * Exported for tests, which plant the locks killed processes leave behind.
 */
export function lockText(pid: number, nonce: string, leaseMs = LEASE_MS): string {
  const ns = pidNamespace();
  return `${pid} ${HOST} ${nonce} lease=${leaseMs}${ns === undefined ? '' : ` ns=${ns}`}\n`;
}

function ownText(leaseMs: number): string {
  return lockText(process.pid, randomBytes(8).toString('hex'), leaseMs);
}

/** One instance of a lock file, as seen at one moment. */
interface Seen {
  /** Text and inode: a new lock at the same path is always a different instance (its nonce differs). */
  id: string;
  /** The instance and its times: changes at every refresh. */
  version: string;
  pid: number | undefined;
  host: string | undefined;
  /** Undefined for a lock of a notarize without leases. */
  leaseMs: number | undefined;
  ns: string | undefined;
  /** By this machine's clock against the file's mtime: only for locks without a lease. */
  ageMs: number;
  /** Its hard links: more than one for a lock that is a link to its owner's run file. */
  links: number;
}

function parse(text: string): Pick<Seen, 'pid' | 'host' | 'leaseMs' | 'ns'> {
  const [pid, host, , ...rest] = text.trim().split(' ');
  const field = (name: string) => rest.find((f) => f.startsWith(`${name}=`))?.slice(name.length + 1);
  const lease = field('lease');
  const valid = pid !== undefined && /^\d{1,7}$/.test(pid) && Number(pid) > 0 && Number(pid) <= MAX_PID;
  return {
    pid: valid ? Number(pid) : undefined,
    host,
    leaseMs: lease !== undefined && /^\d{1,9}$/.test(lease) ? Number(lease) : undefined,
    ns: field('ns'),
  };
}

function inspect(file: string): Seen | undefined {
  let fd: number;
  try {
    // Opened, then fstat'd: on NFS the open revalidates the attributes, so
    // a refresh made on another client is seen (a bare stat may be cached).
    // Non-blocking and never through a link: a FIFO planted at a lock's
    // path would otherwise hang every waiter where no signal can stop it.
    fd = openSync(file, LOCK_READ_FLAGS);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw notALock(file, 'it is a symbolic link');
    throw error;
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw notALock(file, 'it is not a regular file');
    const text = readFileSync(fd, 'utf8');
    const id = `${text}\u0000${info.dev}:${info.ino}`;
    return {
      id,
      version: `${id}\u0000${info.mtimeMs}:${info.size}`,
      ...parse(text),
      ageMs: Date.now() - info.mtimeMs,
      links: info.nlink,
    };
  } finally {
    closeSync(fd);
  }
}

/**
 * False when `kill(pid, 0)` says there is no such process (ESRCH), or when
 * it is a zombie: a process that has exited (a notarize SIGKILLed) but that
 * its parent has not reaped yet, which kill() still finds. A container
 * whose pid 1 reaps late, or a driver waiting on its children one by one,
 * keeps such a pid for as long as it likes; the lock is abandoned all the same.
 */
function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
  return !isZombie(pid);
}

/** Whether /proc says `pid` has exited and awaits its parent's wait (state Z, or X); false where /proc cannot tell. */
function isZombie(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return false;
  }
  // "<pid> (<comm>) <state> ...": the command's name may hold spaces and parentheses, the state follows the last ')'.
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state === 'Z' || state === 'X';
}

/**
 * What one waiter has seen of the files it waits on: since when (its own
 * monotonic clock) each has been the same version.
 */
class Watch {
  readonly #since = new Map<string, { version: string; at: number }>();

  /** How long `file` has been seen unchanged as `seen`, by this waiter; 0 the first time. */
  quietMs(file: string, seen: Seen): number {
    const now = performance.now();
    const known = this.#since.get(file);
    if (known?.version === seen.version) return now - known.at;
    this.#since.set(file, { version: seen.version, at: now });
    return 0;
  }
}

/**
 * Whether the writer of `seen` is provably gone: it wrote in our own, known
 * PID namespace (see the module comment), is not us, and its pid is free.
 */
function provablyDead(seen: Seen): boolean {
  const ours = pidNamespace();
  return (
    seen.pid !== undefined &&
    ours !== undefined &&
    seen.ns === ours &&
    seen.pid !== process.pid &&
    !processExists(seen.pid)
  );
}

/** Whether `seen` was written by this very process: our pid, on our host, in our PID namespace where known. */
function isThisProcess(seen: Seen): boolean {
  const ours = pidNamespace();
  return (
    seen.pid === process.pid &&
    (seen.host === undefined || seen.host === HOST) &&
    (ours === undefined || seen.ns === undefined || seen.ns === ours)
  );
}

/** True when the owner is provably gone, or has not refreshed its lease for LEASE_MS (see the module comment). */
function isStale(file: string, seen: Seen, watch: Watch, timing: Timing): boolean {
  if (provablyDead(seen)) return true;
  // Observed even when age decides, so a lock that turns readable or gains a lease is judged afresh.
  const quiet = watch.quietMs(file, seen);
  if (seen.pid === undefined) return quiet >= timing.unreadableGraceMs;
  if (seen.leaseMs === undefined) return seen.ageMs >= LEGACY_STALE_MS;
  return quiet >= Math.min(Math.max(timing.leaseMs, seen.leaseMs), LEGACY_STALE_MS);
}

/**
 * Creates `file` holding `text` only if it does not exist. Returns an open
 * descriptor of the new file (the owner refreshes its lease through it), or
 * undefined when the file exists.
 */
function createExclusive(file: string, text: string): number | undefined {
  const temp = `${file}.${uniqueSuffix()}.tmp`;
  const fd = openSync(temp, 'wx', PRIVATE_FILE_MODE);
  let keep = false;
  try {
    writeFileSync(fd, text);
    try {
      linkSync(temp, file);
      keep = true;
      return fd;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return undefined;
      if (code === 'EPERM' || code === 'ENOTSUP' || code === 'ENOSYS') return createWithoutLink(file, text);
      throw error;
    }
  } finally {
    if (!keep) closeSync(fd);
    removeFile(temp);
  }
}

/** For file systems without hard links: O_EXCL; a reader may briefly see it empty (the grace above covers it). */
function createWithoutLink(file: string, text: string): number | undefined {
  let fd: number;
  try {
    fd = openSync(file, 'wx', PRIVATE_FILE_MODE);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw error;
  }
  try {
    writeFileSync(fd, text);
    return fd;
  } catch (error) {
    closeSync(fd);
    removeFile(file);
    throw error;
  }
}

/**
 * Keeps the lease of the lock open as `fd` alive until the returned function
 * is called, which also closes `fd`. The timer is unref'd: it never keeps the
 * process alive, and a signal that ends the process ends it too.
 */
function keepFresh(fd: number, leaseMs: number): () => void {
  const timer = setInterval(() => {
    try {
      const now = new Date();
      futimesSync(fd, now, now);
    } catch {
      // A failed refresh (e.g. a store on a network file system briefly
      // gone) is retried at the next tick; the lease allows two misses.
    }
  }, leaseMs / REFRESHES_PER_LEASE);
  timer.unref();
  return () => {
    clearInterval(timer);
    closeSync(fd);
  };
}

/**
 * This process's run file in one locks directory, for one lease: the one
 * inode every lock it holds there is a link to (see the module comment).
 */
interface RunFile {
  /** Its entry in runFiles. */
  key: string;
  path: string;
  dev: number;
  ino: number;
  /** Locks linked to it and not yet released. */
  holds: number;
  /** Stops the refreshes and closes the descriptor they go through. */
  stopRefreshing: () => void;
}

/**
 * The run files of this module instance (a worker thread has its own), by
 * directory and lease. Module-level: they stand for this process, whoever
 * in it takes a lock.
 */
const runFiles = new Map<string, RunFile>();

/** Run files are dot files, so nothing that lists locks (`*.lock`, `*.claim`) takes them for one. */
const RUN_FILE = /^\.\d+\.[0-9a-f]{8}\.[0-9a-z]+\.run$/;

let exitHooked = false;

/** Removes what is left of this process's run files when it exits, a signal's exit included. */
function removeRunFilesAtExit(): void {
  for (const run of runFiles.values()) {
    try {
      unlinkSync(run.path);
    } catch {
      // Gone already: nothing to remove.
    }
  }
  runFiles.clear();
}

/**
 * The run file of `dir` and `leaseMs`, made (and its refreshes started) when
 * this process holds no lock there yet; counts one more hold.
 */
function holdRunFile(dir: string, leaseMs: number): RunFile {
  const key = `${dir}\u0000${leaseMs}`;
  let run = runFiles.get(key);
  if (run === undefined) {
    removeDeadRunFiles(dir);
    const path = join(dir, `.${uniqueSuffix()}.run`);
    const fd = openSync(path, CREATE_NEW, PRIVATE_FILE_MODE);
    let info;
    try {
      writeFileSync(fd, ownText(leaseMs));
      info = fstatSync(fd);
    } catch (error) {
      closeSync(fd);
      removeFile(path);
      throw error;
    }
    if (!exitHooked) {
      // Once per module instance: whatever run files it has at exit go.
      exitHooked = true;
      process.once('exit', removeRunFilesAtExit);
    }
    run = { key, path, dev: info.dev, ino: info.ino, holds: 0, stopRefreshing: keepFresh(fd, leaseMs) };
    runFiles.set(key, run);
  }
  run.holds++;
  return run;
}

/** Takes `run` out of runFiles, if it is still there: the next lock in its directory makes a new one. */
function forget(run: RunFile): void {
  if (runFiles.get(run.key) === run) runFiles.delete(run.key);
}

/** Counts one hold of `run` less; with none left, stops its refreshes and removes it. */
function letGoRunFile(run: RunFile): void {
  if (--run.holds > 0) return;
  forget(run);
  // Never throws: it runs after the work under the lock is done, whose outcome stands.
  try {
    run.stopRefreshing();
  } catch {
    // Its descriptor already closed: nothing to stop.
  }
  try {
    removeFile(run.path);
  } catch {
    // Left for the next process (removeDeadRunFiles).
  }
}

/**
 * Removes the run files that processes killed in this PID namespace left in
 * `dir` with no lock linked to them any more (their locks are taken over one
 * by one, by the usual rules). Best effort: anything unclear is left alone.
 */
function removeDeadRunFiles(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (!RUN_FILE.test(name)) continue;
    const path = join(dir, name);
    try {
      const seen = inspect(path);
      if (seen === undefined || seen.links !== 1) continue;
      // Not refreshed for 10 minutes: a live owner refreshes it every few
      // seconds (and one whose file is removed anyway makes a new one,
      // RUN_FILE_GONE). Also a file whose writer was killed before writing it.
      if (seen.ageMs >= LEGACY_STALE_MS || provablyDead(seen)) unlinkSync(path);
    } catch {
      // Gone, or not ours to judge: left alone.
    }
  }
}

/** What createLock says when the run file's name is gone (removed by hand, say): link needs it. */
const RUN_FILE_GONE = Symbol('run file gone');

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * A new run file in place of `run`, whose name is gone: its current
 * holders keep it (and its refreshes) until they release their locks.
 */
function renewRunFile(run: RunFile, dir: string, leaseMs: number): RunFile {
  forget(run);
  // The new one first: should making it fail, `run` is still held, and let go once, by the caller.
  const renewed = holdRunFile(dir, leaseMs);
  letGoRunFile(run);
  return renewed;
}

/** A lock this process holds: released once, by withLock. */
interface Held {
  release(): void;
  /** Whether the lock at its path is still this one: not taken over meanwhile (stillHolds). */
  stillHeld(): boolean;
}

/**
 * Makes the lock `file`, a link to the run file `run`, only if it does not
 * exist; undefined when it does. Where the file system has no hard links, a
 * lock file of its own (createWithoutLink), refreshed on its own.
 */
function createLock(file: string, run: RunFile, leaseMs: number): Held | typeof RUN_FILE_GONE | undefined {
  try {
    linkSync(run.path, file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return undefined;
    if (code === 'ENOENT' && !exists(run.path)) return RUN_FILE_GONE;
    // No hard links here, or no more for this inode (EMLINK: a file system with a low limit).
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'ENOSYS' && code !== 'EMLINK') throw error;
    const text = ownText(leaseMs);
    const fd = createWithoutLink(file, text);
    if (fd === undefined) return undefined;
    const stop = keepFresh(fd, leaseMs);
    const alone: Held = {
      release() {
        if (heldHere.get(file) === alone) heldHere.delete(file);
        release(file, text);
        stop();
      },
      stillHeld: () => {
        try {
          return readPrivateFile(file) === text;
        } catch {
          return false;
        }
      },
    };
    heldHere.set(file, alone);
    return alone;
  }
  // Ours while it is our run file's inode: no one takes over the lock of a live run.
  const ours = () => {
    const info = lstatSync(file);
    return info.ino === run.ino && info.dev === run.dev;
  };
  const held: Held = {
    release() {
      // Another holder in this process since (this link removed by hand, say) has its own lock there now.
      if (heldHere.get(file) !== held) return;
      heldHere.delete(file);
      try {
        if (ours()) removeFile(file);
      } catch {
        // Gone already.
      }
    },
    stillHeld: () => {
      try {
        return heldHere.get(file) === held && ours();
      } catch {
        return false;
      }
    },
  };
  heldHere.set(file, held);
  return held;
}

/**
 * The locks this module instance holds, by path: those held as links are
 * all links to one inode, so only this tells two holders of one path in one
 * process apart.
 */
const heldHere = new Map<string, Held>();

/**
 * Whether this process still holds the lock `file`: it took it, has not
 * released it, and no one has taken it over since. A live holder's lease is
 * refreshed every few seconds, but a process stopped longer than the lease
 * (SIGSTOP, a paused VM, a debugger) is taken for dead and its lock taken
 * over; once it runs again, this is how it finds out, before it sends
 * anything more for the hash (core/notarize.ts).
 */
export function stillHolds(file: string): boolean {
  return heldHere.get(file)?.stillHeld() ?? false;
}

/**
 * Deletes the stale lock instance `seen` at `file`, under its claim (see the
 * module comment); returns whether it did. Returns false without deleting
 * when another waiter holds the claim or the lock has changed: the caller
 * waits its poll and looks again.
 */
function takeOver(file: string, seen: Seen, watch: Watch, timing: Timing, depth = 0): boolean {
  const digest = createHash('sha256').update(seen.id).digest('hex').slice(0, 16);
  const claim = `${file}.${digest}.claim`;
  const mine = ownText(timing.leaseMs);
  const fd = createExclusive(claim, mine);
  if (fd === undefined) {
    const holder = inspect(claim);
    if (holder && depth < MAX_CLAIM_DEPTH && isStale(claim, holder, watch, timing)) {
      takeOver(claim, holder, watch, timing, depth + 1);
    }
    return false;
  }
  closeSync(fd);
  try {
    if (inspect(file)?.id !== seen.id) return false;
    unlinkSync(file);
    // The last lock of a dead run taken over: its run file can go too.
    if (seen.links > 1) removeDeadRunFiles(dirname(file));
    return true;
  } finally {
    release(claim, mine);
  }
}

/**
 * Releases the lock `file` from a signal handler, where withLock's `finally`
 * never runs because the process exits: removed only while this process
 * still holds it (stillHolds: the very lock it took, not one that names the
 * same pid and host: in containers, every notarize may be pid 1 on a shared
 * hostname, and a run stopped past its lease whose lock was taken over
 * removed the live lock of the run that took it). Left in place it would be
 * found stale by the next run anyway; removing it saves that run the
 * takeover. Never throws.
 */
export function releaseOwnLock(file: string): void {
  try {
    if (stillHolds(file)) removeFile(file);
  } catch {
    // Gone already: nothing to remove.
  }
}

/** Removes a lock or claim we hold, unless (impossibly, but cheaply checked) it is no longer ours. */
function release(file: string, mine: string): void {
  try {
    if (readPrivateFile(file) !== mine) return;
  } catch {
    return;
  }
  removeFile(file);
}

/**
 * Runs `fn` holding the lock file `file`, refreshing its lease meanwhile;
 * waits up to `waitMs` for a live owner, taking over a dead owner's lock
 * (at once when it provably died in our PID namespace, otherwise once its
 * lease has gone unrefreshed for LEASE_MS), then throws TransientError
 * (exit 4: try again later). `timing` is for tests (see LockTiming).
 */
export async function withLock<T>(
  file: string,
  waitMs: number,
  fn: () => Promise<T>,
  timing: LockTiming = {},
): Promise<T> {
  const { held, run } = await acquire(file, waitMs, fullTiming(timing));
  try {
    return await fn();
  } finally {
    held.release();
    letGoRunFile(run);
  }
}

/**
 * Takes the lock `file` as withLock does, and returns what releases it
 * (once; later calls do nothing): for a lock held across steps that no one
 * callback spans (core/notarize.ts, holdAcross).
 */
export async function holdLock(file: string, waitMs: number, timing: LockTiming = {}): Promise<() => void> {
  const { held, run } = await acquire(file, waitMs, fullTiming(timing));
  let released = false;
  return () => {
    if (released) return;
    released = true;
    held.release();
    letGoRunFile(run);
  };
}

/**
 * Waits for the lock `file` as withLock says, and returns it held, with the
 * run file it holds (held while waiting too: a waiter makes no file per poll).
 */
async function acquire(file: string, waitMs: number, full: Timing): Promise<{ held: Held; run: RunFile }> {
  const { leaseMs, pollMs } = full;
  const dir = dirname(file);
  // This process's own clock: a wall clock stepped back (NTP) stretched the wait by the step.
  const deadline = performance.now() + waitMs;
  let notice = performance.now() + full.noticeMs;
  const watch = new Watch();
  let run = holdRunFile(dir, leaseMs);
  /** Told when this wait ends, once it has been noticed (onWaiting). */
  let waitEnded: (() => void) | void = undefined;
  try {
    for (;;) {
      const made = createLock(file, run, leaseMs);
      if (made === RUN_FILE_GONE) {
        run = renewRunFile(run, dir, leaseMs);
        continue;
      }
      if (made !== undefined) return { held: made, run };
      const seen = inspect(file);
      if (seen === undefined) continue;
      // Taken over: create it at once. Not (its claim is held by another
      // waiter, maybe one that died): wait like any waiter, never spin here,
      // which blocked this thread, signals included, until the claim went stale.
      if (isStale(file, seen, watch, full) && takeOver(file, seen, watch, full)) continue;
      const now = performance.now();
      if (now >= deadline) throw stillHeld(file, seen, leaseMs);
      if (now >= notice) {
        notice = Infinity;
        const name = basename(file, '.lock');
        // Which hash: in a batch "the same hash" says none.
        const doing = full.doing ?? (HASH_LOCK.test(name) ? `is working on ${name}` : holderDoes(file));
        waitEnded = full.onWaiting(
          `${holder(file, seen, doing)}: waiting for it, up to ${Math.ceil((deadline - now) / 1000)} s more`,
        );
      }
      await sleep(pollMs);
    }
  } catch (error) {
    letGoRunFile(run);
    throw error;
  } finally {
    waitEnded?.();
  }
}

/** The name of a document's lock: its digest. */
const HASH_LOCK = /^[0-9a-f]{64}$/;

/**
 * What the holder of the lock `file` is doing, told by the lock's name (the
 * store names them: `<hash>.lock`, `aggregate.lock`, and `<file>.lock` in the
 * locks/ folder beside the file, whose whole path is named: a CI job may
 * have a store of its own).
 */
function holderDoes(file: string): string {
  const name = basename(file, '.lock');
  if (HASH_LOCK.test(name)) return 'is working on the same hash';
  if (name === 'aggregate') return 'is placing documents in Merkle trees (register --aggregate)';
  return `is changing ${join(dirname(dirname(file)), `${name}.json`)}`;
}

/** Who holds `file`, seen as `seen`, and what it is doing. */
function holder(file: string, seen: Seen, doing = holderDoes(file)): string {
  // This very process: a batch's two documents of the same content (dist/linux/LICENSE and
  // dist/mac/LICENSE), the second waiting for the first (r102: "another process", and our own pid).
  if (isThisProcess(seen))
    return `this notarize run (pid ${process.pid}) ${doing} already, for another of its documents`;
  // Its pid means nothing here when it runs on another host, or in another PID namespace (a container).
  const where =
    seen.host && seen.host !== HOST
      ? ` on ${seen.host}`
      : seen.ns !== undefined && seen.ns !== pidNamespace()
        ? ' in another container or PID namespace'
        : '';
  return `another notarize process (pid ${seen.pid ?? '?'}${where}) ${doing}`;
}

/** The error when the wait for `file`, held as `seen`, runs out (exit 4: try again later). */
function stillHeld(file: string, seen: Seen, leaseMs: number): TransientError {
  const legacy = seen.pid !== undefined && seen.leaseMs === undefined;
  return new TransientError(holder(file, seen), {
    hint: legacy
      ? `wait for it to finish, then run the command again; its lock, written by an older notarize, is taken over once ${LEGACY_STALE_MS / 60_000} minutes old (${file})`
      : `wait for it to finish, then run the command again; a lock whose owner died is taken over once it has gone ${leaseMs / 1000} s without a refresh`,
    notProcessed: true,
  });
}

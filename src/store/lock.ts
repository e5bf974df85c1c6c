/**
 * A per-hash lock between notarize processes, so two processes never run the
 * request/forfait flow for the same hash at once (which could complete one
 * notarization twice).
 *
 * A lock is a file holding `<pid> <host> <nonce>`. It comes into existence
 * complete: its text is written to a private temporary file which is then
 * hard-linked to the lock's name, an atomic create-if-absent (an O_EXCL
 * create followed by a write would show other processes an empty lock).
 *
 * A lock whose owner has died (e.g. SIGKILL) is stale and is taken over.
 * Deleting a stale lock is the classic race: two waiters both see the dead
 * owner, one deletes it and takes the lock, then the other deletes that *new*
 * lock. So a waiter may delete a stale lock only while it holds the claim
 * for that very lock instance (`<lock>.<id>.claim`, created the same
 * exclusive way, id = digest of the stale lock's text and inode), and only
 * after checking, under the claim, that the lock is still that instance.
 * Nobody else can delete that instance in between: its owner is dead and the
 * claim is unique. A claim whose holder died too is taken over by the same
 * rule one level up, so no file is ever deleted on a guess.
 */
import { createHash, randomBytes } from 'node:crypto';
import { linkSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { TransientError } from '../errors.js';
import { PRIVATE_FILE_MODE, removeFile, uniqueSuffix } from './files.js';

const POLL_MS = 25;
/** A lock file whose text cannot be read as ours is left alone for this long (a foreign or old format). */
const UNREADABLE_GRACE_MS = 5000;
/** Claims of claims nest only when holders keep dying inside a few system calls; this bounds the depth. */
const MAX_CLAIM_DEPTH = 4;
const HOST = hostname();

/** One instance of a lock file, as seen at one moment. */
interface Seen {
  /** Text and inode: a new lock at the same path is always a different instance (its nonce differs). */
  id: string;
  pid: number | undefined;
  host: string | undefined;
  ageMs: number;
}

function inspect(file: string): Seen | undefined {
  try {
    const text = readFileSync(file, 'utf8');
    const info = statSync(file);
    const [pid, host] = text.trim().split(' ');
    return {
      id: `${text}\u0000${info.ino}`,
      pid: pid !== undefined && /^\d+$/.test(pid) ? Number(pid) : undefined,
      host,
      ageMs: Date.now() - info.mtimeMs,
    };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * True when the owner is provably gone: a process of this host that no
 * longer exists. A lock from another host (a shared store) is never judged
 * stale from here, since its pid means nothing on this machine.
 */
function isStale(seen: Seen): boolean {
  if (seen.pid === undefined) return seen.ageMs > UNREADABLE_GRACE_MS;
  // A bare pid is a lock written by an earlier notarize, on this host.
  const host = seen.host ?? HOST;
  return host === HOST && seen.pid !== process.pid && !processAlive(seen.pid);
}

/** Creates `file` holding `text` only if it does not exist; false if it does. */
function createExclusive(file: string, text: string): boolean {
  const temp = `${file}.${uniqueSuffix()}.tmp`;
  writeFileSync(temp, text, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
  try {
    linkSync(temp, file);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code === 'EPERM' || code === 'ENOTSUP' || code === 'ENOSYS') return createWithoutLink(file, text);
    throw error;
  } finally {
    removeFile(temp);
  }
}

/** For file systems without hard links: O_EXCL; a reader may briefly see it empty (the grace above covers it). */
function createWithoutLink(file: string, text: string): boolean {
  try {
    writeFileSync(file, text, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

function ownText(): string {
  return `${process.pid} ${HOST} ${randomBytes(8).toString('hex')}\n`;
}

/**
 * Deletes the stale lock instance `seen` at `file`, under its claim (see the
 * module comment). Returns without deleting when another waiter holds the
 * claim or the lock has changed; the caller just looks again.
 */
function takeOver(file: string, seen: Seen, depth = 0): void {
  const digest = createHash('sha256').update(seen.id).digest('hex').slice(0, 16);
  const claim = `${file}.${digest}.claim`;
  const mine = ownText();
  if (!createExclusive(claim, mine)) {
    const holder = inspect(claim);
    if (holder && depth < MAX_CLAIM_DEPTH && isStale(holder)) takeOver(claim, holder, depth + 1);
    return;
  }
  try {
    if (inspect(file)?.id === seen.id) unlinkSync(file);
  } finally {
    release(claim, mine);
  }
}

/** Removes a lock or claim we hold, unless (impossibly, but cheaply checked) it is no longer ours. */
function release(file: string, mine: string): void {
  try {
    if (readFileSync(file, 'utf8') !== mine) return;
  } catch {
    return;
  }
  removeFile(file);
}

/**
 * Runs `fn` holding the lock file `file`; waits up to `waitMs` for a live
 * owner, taking over a dead owner's lock, then throws TransientError (exit 4:
 * try again later).
 */
export async function withLock<T>(file: string, waitMs: number, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + waitMs;
  const mine = ownText();
  while (!createExclusive(file, mine)) {
    const seen = inspect(file);
    if (seen === undefined) continue;
    if (isStale(seen)) {
      takeOver(file, seen);
      continue;
    }
    if (Date.now() >= deadline) {
      throw new TransientError(
        `another notarize process (pid ${seen.pid ?? '?'}${seen.host && seen.host !== HOST ? ` on ${seen.host}` : ''}) is working on the same hash`,
        {
          hint: `wait for it to finish, then run the command again; if no notarize process is running, delete ${file}`,
          notProcessed: true,
        },
      );
    }
    await sleep(POLL_MS);
  }
  try {
    return await fn();
  } finally {
    release(file, mine);
  }
}

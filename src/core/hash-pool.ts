/**
 * Hashing many files on every core: SHA-256 runs on the thread that calls
 * `update`, so one thread hashes at one core's speed. The pool runs one
 * worker thread per core, each reading files in large blocks into a reused
 * buffer. This thread opens each file and hands the worker its descriptor
 * (descriptors are shared by the threads of a process), so a file is opened
 * once. Small files are hashed here instead, with plain synchronous reads: a
 * worker or thread-pool round trip costs more than hashing 64 KiB. A pool of
 * one hashes everything here: starting a worker would cost more than it saves.
 * A worker that cannot start (no descriptor or memory left for a thread)
 * leaves its file to those that did, or, with none, to this thread; under a
 * low `ulimit -v` none is started (addressSpaceLimited).
 *
 * The guarantees of hash.ts hold here too: the open is non-blocking, what is
 * not a regular file is refused (never read "to its end" somewhere else: a
 * FIFO or device could block that read forever), exactly the fstat's size is
 * read, and the fstat after the reads must match (`checkVersion`).
 */
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readFileSync, readSync, type BigIntStats } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { whenFdsFree } from '../fd-shortage.js';
import {
  asInputError,
  checkRegular,
  checkVersion,
  fileError,
  hashFile,
  OPEN_FLAGS,
  checkListed,
  type Listed,
  type HashedFile,
  type ReadResult,
} from './hash.js';

/** Files up to this size are hashed on the calling thread (see the module comment and bench/). */
export const INLINE_MAX_BYTES = 64 * 1024;

/**
 * The worker's code. It runs as an `eval` worker, so it must be
 * self-contained: it reaches modules through process.getBuiltinModule, not
 * imports or `require` (which a bundler would rewrite into a helper the
 * worker does not have), and works the same from dist/, from a bundle and
 * from the TypeScript sources under test. It reads `size` bytes with explicit
 * positions from 0, then probes for one more (as hashPrefix does); it stops
 * early when the file is written to meanwhile (see changedSince in hash.ts),
 * and never closes the descriptor: the pool owns it.
 */
function workerMain(read: typeof readOpenFile): void {
  const { parentPort } = process.getBuiltinModule('node:worker_threads');
  const buffer = Buffer.allocUnsafe(1024 * 1024);
  parentPort!.on('message', (job: { id: number; fd: number; size: number }) => {
    try {
      parentPort!.postMessage({ id: job.id, ...read(job.fd, job.size, buffer) });
    } catch (error) {
      const e = error as NodeJS.ErrnoException;
      parentPort!.postMessage({ id: job.id, error: { code: e.code, message: e.message } });
    }
  });
}

/**
 * Reads and hashes `size` bytes of an open file in blocks of `buffer`'s
 * size, as a worker does (and this thread when no worker can start);
 * self-contained, as it runs in the eval'd worker too (see workerMain).
 */
function readOpenFile(fd: number, size: number, buffer: Buffer): ReadResult {
  const { createHash } = process.getBuiltinModule('node:crypto');
  const { fstatSync, readSync } = process.getBuiltinModule('node:fs');
  const hash = createHash('sha256');
  const start = fstatSync(fd, { bigint: true });
  let bytes = 0;
  while (bytes < size) {
    const n = readSync(fd, buffer, 0, Math.min(buffer.length, size - bytes), bytes);
    if (n === 0) break;
    hash.update(buffer.subarray(0, n));
    bytes += n;
    // Written to already (as changedSince in hash.ts): stop, bytes < size, and checkVersion refuses it.
    const now = fstatSync(fd, { bigint: true });
    if (now.size !== start.size || now.mtimeNs !== start.mtimeNs || now.ctimeNs !== start.ctimeNs) break;
  }
  const grown = bytes === size && readSync(fd, buffer, 0, 1, bytes) > 0;
  return { digest: hash.digest('hex'), bytes, grown };
}

/** Shared by every small file: hashing is synchronous, so one buffer serves them all in turn. */
let smallFileBuffer: Buffer | undefined;

/**
 * Hashes the first `size` (at most about INLINE_MAX_BYTES) bytes of an open
 * regular file on this thread. Each read asks for one byte more than is
 * left, so the read that ends the file also proves there is nothing after
 * it (no separate probe: a system call per file counts in a batch of
 * millions).
 */
function hashSmallFile(fd: number, size: number): ReadResult {
  const buffer = (smallFileBuffer ??= Buffer.allocUnsafe(INLINE_MAX_BYTES + 1));
  const hash = createHash('sha256');
  let bytes = 0;
  for (;;) {
    const wanted = Math.min(buffer.length, size + 1 - bytes);
    const n = readSync(fd, buffer, 0, wanted, bytes);
    if (n === 0) return { digest: hash.digest('hex'), bytes, grown: false };
    if (bytes + n > size) {
      hash.update(buffer.subarray(0, size - bytes));
      return { digest: hash.digest('hex'), bytes: size, grown: true };
    }
    hash.update(buffer.subarray(0, n));
    bytes += n;
    // Short of what was asked, with the size reached: that was the end of the file.
    if (n < wanted && bytes === size) return { digest: hash.digest('hex'), bytes, grown: false };
  }
}

/** Below this much address space (`ulimit -v`), no worker thread is started. */
const WORKER_ADDRESS_SPACE = 8 * 1024 ** 3;

/**
 * Whether this process's address space is limited below WORKER_ADDRESS_SPACE
 * (`ulimit -v`): a worker thread reserves room for its code when it starts,
 * and V8 aborts the whole process when it cannot (exit 133, "Fatal process
 * OOM ... CodeRange": nothing to catch), in the middle of a batch that may
 * have paid. Under such a limit files are hashed on this thread. Read from
 * /proc (Linux); elsewhere, not limited.
 */
function addressSpaceLimited(): boolean {
  try {
    const soft = /^Max address space\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
    return soft !== undefined && soft !== 'unlimited' && Number(soft) < WORKER_ADDRESS_SPACE;
  } catch {
    return false;
  }
}

interface Job {
  id: number;
  fd: number;
  size: number;
  path: string;
  resolve: (read: ReadResult) => void;
  reject: (error: Error) => void;
}

interface Slot {
  worker: Worker;
  busy: Job | undefined;
  /** Whether it started: a worker that fails before (no descriptor or memory left for one) never will. */
  online: boolean;
}

type Reply = ({ id: number } & ReadResult) | { id: number; error: { code?: string; message: string } };

/** Hashes files on up to `size` threads; call `close()` when done. */
export class HashPool {
  readonly size: number;
  /** How many workers may run: `size`, until one could not start (then as many as did). */
  #maxWorkers: number;
  #workers: Slot[] = [];
  #queue: Job[] = [];
  /** This thread's read buffer, once no worker could start. */
  #buffer: Buffer | undefined;
  #nextId = 0;
  #closed = false;

  /** `size` defaults to the number of cores the process may use. */
  constructor(size = availableParallelism()) {
    this.size = Math.max(1, size);
    this.#maxWorkers = addressSpaceLimited() ? 0 : this.size;
  }

  /** Worker threads yet to start (a pool of one starts none: it hashes on this thread). */
  get unstarted(): number {
    return this.size === 1 ? 0 : this.#maxWorkers - this.#workers.length;
  }

  /** The lowercase hex SHA-256 of a file and the facts of that version; UsageError if it cannot be read. */
  hash(path: string, listed?: Listed): Promise<HashedFile> {
    if (this.size === 1) return hashFile(path, undefined, listed);
    return this.#hash(path, listed);
  }

  async #hash(path: string, listed: Listed | undefined): Promise<HashedFile> {
    let fd: number;
    try {
      // Non-blocking, so that a FIFO (named by mistake, or swapped in after the walk) cannot hang this thread in open().
      // Short of descriptors (a low `ulimit -n`), it waits for the files being hashed to close one (fd-shortage.ts).
      fd = await whenFdsFree(() => openSync(path, OPEN_FLAGS));
    } catch (error) {
      throw fileError(path, error as NodeJS.ErrnoException);
    }
    try {
      let before: BigIntStats;
      let read: ReadResult;
      try {
        before = fstatSync(fd, { bigint: true });
        checkListed(path, before, listed);
        checkRegular(path, before);
        const size = Number(before.size);
        // A small file costs a few system calls of microseconds here, less
        // than a worker or thread-pool round trip (in a batch of small
        // documents those round trips were most of the hashing time).
        read = size <= INLINE_MAX_BYTES ? hashSmallFile(fd, size) : await this.#inWorker(fd, path, size);
        return checkVersion(path, before, fstatSync(fd, { bigint: true }), read);
      } catch (error) {
        throw asInputError(path, error);
      }
    } finally {
      closeSync(fd);
    }
  }

  #inWorker(fd: number, path: string, size: number): Promise<ReadResult> {
    if (this.#closed) return Promise.reject(new Error('the hash pool is closed'));
    return new Promise((resolve, reject) => {
      this.#queue.push({ id: this.#nextId++, fd, size, path, resolve, reject });
      this.#dispatch();
    });
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      let slot = this.#workers.find((w) => w.busy === undefined);
      if (!slot && this.#workers.length < this.#maxWorkers) slot = this.#spawn();
      if (!slot && this.#workers.length === 0) {
        // No worker could start: this thread reads the file, blocking while it does, rather than fail it.
        this.#onThisThread(this.#queue.shift()!);
        continue;
      }
      if (!slot) return;
      const job = this.#queue.shift()!;
      slot.busy = job;
      // A busy worker keeps the process alive; an idle one must not.
      slot.worker.ref();
      slot.worker.postMessage({ id: job.id, fd: job.fd, size: job.size });
    }
  }

  #onThisThread(job: Job): void {
    try {
      job.resolve(readOpenFile(job.fd, job.size, (this.#buffer ??= Buffer.allocUnsafe(1024 * 1024))));
    } catch (error) {
      job.reject(fileError(job.path, error as NodeJS.ErrnoException));
    }
  }

  /** A new worker, or undefined when the system gives no thread (`ulimit -u`, a container's pids.max): none tried again. */
  #spawn(): Slot | undefined {
    let worker: Worker;
    try {
      worker = new Worker(`(${workerMain.toString()})(${readOpenFile.toString()})`, { eval: true });
    } catch {
      // Thrown at once (EAGAIN, ERR_WORKER_INIT_FAILED), where a failure after the start is an 'error' event (below).
      this.#maxWorkers = this.#workers.length;
      return undefined;
    }
    const slot: Slot = { worker, busy: undefined, online: false };
    worker.once('online', () => (slot.online = true));
    worker.on('message', (reply: Reply) => {
      const job = slot.busy;
      slot.busy = undefined;
      slot.worker.unref();
      if (job) {
        if ('error' in reply) job.reject(fileError(job.path, reply.error));
        else job.resolve({ digest: reply.digest, bytes: reply.bytes, grown: reply.grown });
      }
      this.#dispatch();
    });
    worker.on('error', (error) => {
      const job = slot.busy;
      slot.busy = undefined;
      this.#workers = this.#workers.filter((w) => w !== slot);
      if (slot.online) {
        job?.reject(error);
      } else {
        // It could not start (`Worker initialization failure: EMFILE` under a low `ulimit -n`): no more are
        // tried, and its file goes to another worker or to this thread. Failing it instead failed every
        // large file of a run, and every re-run the same.
        this.#maxWorkers = this.#workers.length;
        if (job) this.#queue.unshift(job);
      }
      this.#dispatch();
    });
    this.#workers.push(slot);
    return slot;
  }

  /** Stops the worker threads; files still queued or being hashed are rejected. */
  async close(): Promise<void> {
    this.#closed = true;
    const workers = this.#workers;
    this.#workers = [];
    const abandoned = [...this.#queue, ...workers.flatMap((w) => (w.busy ? [w.busy] : []))];
    this.#queue = [];
    await Promise.all(workers.map((w) => w.worker.terminate()));
    for (const job of abandoned) job.reject(new Error('the hash pool was closed before the file was hashed'));
  }
}

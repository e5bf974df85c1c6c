/**
 * Hashing many files on every core: SHA-256 runs on the thread that calls
 * `update`, so one thread hashes at one core's speed. The pool runs one
 * worker thread per core, each reading files in large blocks into a reused
 * buffer. This thread opens each file and hands the worker its descriptor
 * (descriptors are shared by the threads of a process), so a file is opened
 * once. Small files are hashed here instead, with plain synchronous reads: a
 * worker or thread-pool round trip costs more than hashing 64 KiB. A pool of
 * one hashes everything here: starting a worker would cost more than it saves.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { fileError, hashFile } from './hash.js';

/** Files up to this size are hashed on the calling thread (see the module comment and bench/). */
export const INLINE_MAX_BYTES = 64 * 1024;

/**
 * The worker's code. It runs as an `eval` worker, so it must be
 * self-contained: it reaches modules through process.getBuiltinModule, not
 * imports or `require` (which a bundler would rewrite into a helper the
 * worker does not have), and works the same from dist/, from a bundle and
 * from the TypeScript sources under test. It reads with explicit positions
 * from 0 and never closes the descriptor: the pool owns it.
 */
function workerMain(): void {
  const { parentPort } = process.getBuiltinModule('node:worker_threads');
  const { createHash } = process.getBuiltinModule('node:crypto');
  const { readSync } = process.getBuiltinModule('node:fs');
  const buffer = Buffer.allocUnsafe(1024 * 1024);
  parentPort!.on('message', (job: { id: number; fd: number }) => {
    try {
      const hash = createHash('sha256');
      let position = 0;
      for (let n = readSync(job.fd, buffer, 0, buffer.length, 0); n > 0;) {
        hash.update(buffer.subarray(0, n));
        position += n;
        n = readSync(job.fd, buffer, 0, buffer.length, position);
      }
      parentPort!.postMessage({ id: job.id, hash: hash.digest('hex') });
    } catch (error) {
      const e = error as NodeJS.ErrnoException;
      parentPort!.postMessage({ id: job.id, error: { code: e.code, message: e.message } });
    }
  });
}

/** Shared by every small file: hashing is synchronous, so one buffer serves them all in turn. */
let smallFileBuffer: Buffer | undefined;

/** Hashes an open regular file of at most about INLINE_MAX_BYTES from its start, on this thread. */
function hashSmallFile(fd: number): string {
  const buffer = (smallFileBuffer ??= Buffer.allocUnsafe(INLINE_MAX_BYTES));
  const hash = createHash('sha256');
  // To the end, not to the size seen by fstat: the file may have grown since.
  for (let position = 0, n = readSync(fd, buffer, 0, buffer.length, 0); n > 0;) {
    hash.update(buffer.subarray(0, n));
    position += n;
    n = readSync(fd, buffer, 0, buffer.length, position);
  }
  return hash.digest('hex');
}

interface Job {
  id: number;
  fd: number;
  path: string;
  resolve: (hash: string) => void;
  reject: (error: Error) => void;
}

interface Slot {
  worker: Worker;
  busy: Job | undefined;
}

type Reply = { id: number; hash: string } | { id: number; error: { code?: string; message: string } };

/** Hashes files on up to `size` threads; call `close()` when done. */
export class HashPool {
  readonly size: number;
  #workers: Slot[] = [];
  #queue: Job[] = [];
  #nextId = 0;
  #closed = false;

  /** `size` defaults to the number of cores the process may use. */
  constructor(size = availableParallelism()) {
    this.size = Math.max(1, size);
  }

  /** The lowercase hex SHA-256 of a file; UsageError if it cannot be read. */
  hash(path: string): Promise<string> {
    if (this.size === 1) return hashFile(path);
    return this.#hash(path);
  }

  async #hash(path: string): Promise<string> {
    let fd: number;
    let info: Stats;
    try {
      // Non-blocking, so that a FIFO named by mistake cannot hang this thread in open().
      fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
    } catch (error) {
      throw fileError(path, error as NodeJS.ErrnoException);
    }
    try {
      try {
        info = fstatSync(fd);
        // A small file costs a few system calls of microseconds here, less
        // than a worker or thread-pool round trip (in a batch of small
        // documents those round trips were most of the hashing time).
        if (info.isFile() && info.size <= INLINE_MAX_BYTES) return hashSmallFile(fd);
      } catch (error) {
        throw fileError(path, error as NodeJS.ErrnoException);
      }
      if (info.isFile()) return await this.#inWorker(fd, path);
    } finally {
      closeSync(fd);
    }
    // Not a regular file (a pipe, a device): read to its end, blocking reads kept off this thread.
    return hashFile(path);
  }

  #inWorker(fd: number, path: string): Promise<string> {
    if (this.#closed) return Promise.reject(new Error('the hash pool is closed'));
    return new Promise((resolve, reject) => {
      this.#queue.push({ id: this.#nextId++, fd, path, resolve, reject });
      this.#dispatch();
    });
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      let slot = this.#workers.find((w) => w.busy === undefined);
      if (!slot && this.#workers.length < this.size) slot = this.#spawn();
      if (!slot) return;
      const job = this.#queue.shift()!;
      slot.busy = job;
      // A busy worker keeps the process alive; an idle one must not.
      slot.worker.ref();
      slot.worker.postMessage({ id: job.id, fd: job.fd });
    }
  }

  #spawn(): Slot {
    const worker = new Worker(`(${workerMain.toString()})()`, { eval: true });
    const slot: Slot = { worker, busy: undefined };
    worker.on('message', (reply: Reply) => {
      const job = slot.busy;
      slot.busy = undefined;
      slot.worker.unref();
      if (job) {
        if ('hash' in reply) job.resolve(reply.hash);
        else job.reject(fileError(job.path, reply.error));
      }
      this.#dispatch();
    });
    worker.on('error', (error) => {
      slot.busy?.reject(error);
      slot.busy = undefined;
      this.#workers = this.#workers.filter((w) => w !== slot);
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

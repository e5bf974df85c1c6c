/**
 * Hashing many files on every core: SHA-256 runs on the thread that calls
 * `update`, so one thread hashes at one core's speed. The pool runs one
 * worker thread per core, each reading files in large blocks with a reused
 * buffer. A pool of one (or one file) hashes in this thread instead: starting
 * a worker costs more than it saves there.
 */
import type * as Crypto from 'node:crypto';
import type * as Fs from 'node:fs';
import { availableParallelism } from 'node:os';
import type * as WorkerThreads from 'node:worker_threads';
import { Worker } from 'node:worker_threads';
import { fileError, hashFile } from './hash.js';

/**
 * The worker's code. It runs as an `eval` worker (CommonJS), so it must be
 * self-contained and use `require`; being eval'd, it works the same from
 * dist/ and from the TypeScript sources under test.
 */
function workerMain(): void {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { parentPort } = require('node:worker_threads') as typeof WorkerThreads;
  const { createHash } = require('node:crypto') as typeof Crypto;
  const { openSync, readSync, closeSync } = require('node:fs') as typeof Fs;
  /* eslint-enable @typescript-eslint/no-require-imports */
  const buffer = Buffer.allocUnsafe(1024 * 1024);
  parentPort!.on('message', (job: { id: number; path: string }) => {
    try {
      const hash = createHash('sha256');
      const fd = openSync(job.path, 'r');
      try {
        for (let n = readSync(fd, buffer); n > 0; n = readSync(fd, buffer)) hash.update(buffer.subarray(0, n));
      } finally {
        closeSync(fd);
      }
      parentPort!.postMessage({ id: job.id, hash: hash.digest('hex') });
    } catch (error) {
      const e = error as NodeJS.ErrnoException;
      parentPort!.postMessage({ id: job.id, error: { code: e.code, message: e.message } });
    }
  });
}

interface Job {
  id: number;
  path: string;
  resolve: (hash: string) => void;
  reject: (error: Error) => void;
}

type Reply = { id: number; hash: string } | { id: number; error: { code?: string; message: string } };

/** Hashes files on up to `size` threads; call `close()` when done. */
export class HashPool {
  readonly size: number;
  #workers: { worker: Worker; busy: Job | undefined }[] = [];
  #queue: Job[] = [];
  #nextId = 0;

  /** `size` defaults to the number of cores the process may use. */
  constructor(size = availableParallelism()) {
    this.size = Math.max(1, size);
  }

  /** The lowercase hex SHA-256 of a file; UsageError if it cannot be read. */
  hash(path: string): Promise<string> {
    if (this.size === 1) return hashFile(path);
    return new Promise((resolve, reject) => {
      this.#queue.push({ id: this.#nextId++, path, resolve, reject });
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
      slot.worker.postMessage({ id: job.id, path: job.path });
    }
  }

  #spawn(): { worker: Worker; busy: Job | undefined } {
    const worker = new Worker(`(${workerMain.toString()})()`, { eval: true });
    const slot: { worker: Worker; busy: Job | undefined } = { worker, busy: undefined };
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

  /** Stops the worker threads. */
  async close(): Promise<void> {
    const workers = this.#workers;
    this.#workers = [];
    await Promise.all(workers.map((w) => w.worker.terminate()));
  }
}

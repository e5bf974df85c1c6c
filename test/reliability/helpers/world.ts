/**
 * The test world of the reliability suite: temporary store directories and
 * documents, a sandbox with a timestamped call log, and readers of the
 * on-disk store that do not go through notarize's own code.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll } from 'vitest';
import { startSandbox, type Sandbox, type SandboxCall, type SandboxOptions } from '../../../src/sandbox/server.js';
import { serviceDirName } from '../../../src/store/store.js';
import { useTempDirs as useSharedTempDirs } from '../../helpers/temp-dirs.js';
import { registerSecret } from './audit.js';

/** Fresh temporary directories, removed when the test file ends (tests share what beforeAll made). */
export function useTempDirs(prefix = 'notarize-rel-'): () => string {
  return useSharedTempDirs(prefix, afterAll);
}

/** Writes a document with unique content and returns its path and SHA-256. */
export function makeDocument(dir: string, name: string, size = 256): { path: string; hash: string } {
  const body = Buffer.alloc(size, name);
  randomBytes(16).copy(body, 0);
  const path = join(dir, name);
  writeFileSync(path, body);
  return { path, hash: createHash('sha256').update(body).digest('hex') };
}

/** A sandbox call with the times it arrived (approximately) and was answered. */
export interface TimedCall {
  call: SandboxCall;
  answeredAt: number;
}

/** A sandbox for one test file, closed at its end, with answer times kept. */
export interface TestSandbox extends Sandbox {
  answered: TimedCall[];
  /** Resolves when a call matching `predicate` has arrived (polled: arrival is not an event). */
  arrival(predicate: (call: SandboxCall) => boolean, signal?: AbortSignal): Promise<void>;
  /** Resolves when a call matching `predicate` has been answered (or dropped). */
  answer(predicate: (call: SandboxCall) => boolean, signal?: AbortSignal): Promise<TimedCall>;
}

/** Starts a sandbox on 127.0.0.1, port 0; its API key is audited as a secret. */
export async function sandbox(options: SandboxOptions = {}): Promise<TestSandbox> {
  const answered: TimedCall[] = [];
  const waiting = new Set<(timed: TimedCall) => void>();
  const started = await startSandbox({
    ...options,
    onCall: (call) => {
      const timed = { call, answeredAt: performance.now() };
      answered.push(timed);
      for (const notify of [...waiting]) notify(timed);
      options.onCall?.(call);
    },
  });
  registerSecret(started.apiKey);
  const arrival = async (predicate: (call: SandboxCall) => boolean, signal?: AbortSignal): Promise<void> => {
    while (!started.calls.some(predicate)) {
      if (signal?.aborted) throw new Error('aborted');
      await sleep(2);
    }
  };
  const answer = (predicate: (call: SandboxCall) => boolean, signal?: AbortSignal): Promise<TimedCall> =>
    new Promise((resolve, reject) => {
      const done = answered.find((a) => predicate(a.call));
      if (done) return resolve(done);
      const notify = (timed: TimedCall): void => {
        if (!predicate(timed.call)) return;
        waiting.delete(notify);
        resolve(timed);
      };
      waiting.add(notify);
      signal?.addEventListener('abort', () => {
        waiting.delete(notify);
        reject(new Error('aborted'));
      });
    });
  return Object.assign(started, { answered, arrival, answer });
}

/** Closes sandboxes when the test file ends. */
export function useSandboxes(): (options?: SandboxOptions) => Promise<TestSandbox> {
  const open: Sandbox[] = [];
  afterAll(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });
  return async (options) => {
    const started = await sandbox(options);
    open.push(started);
    return started;
  };
}

/** The hash a request-step call asked for ('' when its body is not a request). */
export function requestedHash(call: SandboxCall): string {
  try {
    const body = JSON.parse(call.body) as { hash?: unknown };
    return typeof body.hash === 'string' ? body.hash : '';
  } catch {
    return '';
  }
}

/** The hash in a forfait call's path ('' for other calls). */
export function forfaitHash(call: SandboxCall): string {
  return /^\/api\/v2\/registration\/([^/]+)\/forfait$/.exec(call.path)?.[1] ?? '';
}

/** Calls to one route, optionally for one hash. */
export function callsTo(calls: SandboxCall[], route: SandboxCall['route'], hash?: string): SandboxCall[] {
  return calls.filter(
    (c) =>
      c.route === route &&
      (hash === undefined || (route === 'forfait' ? forfaitHash(c) === hash : requestedHash(c) === hash)),
  );
}

/** Paths of the on-disk store of one service. */
export function storePaths(configDir: string, baseUrl: string) {
  const service = join(configDir, 'services', serviceDirName(baseUrl));
  return {
    service,
    pendingDir: join(service, 'pending'),
    ledgerDir: join(service, 'ledger'),
    locksDir: join(service, 'locks'),
    retiredDir: join(service, 'retired'),
    /** Whether a session of `hash` was retired (kept aside after a 409 or `pending drop`). */
    retired: (hash: string) => names(join(service, 'retired')).some((n) => n.startsWith(`${hash}.`)),
    pending: (hash: string) => join(service, 'pending', `${hash}.json`),
    ledger: (hash: string) => join(service, 'ledger', `${hash}.json`),
    lock: (hash: string) => join(service, 'locks', `${hash}.lock`),
  };
}

function names(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

/** Hashes with a pending file, read straight from disk. */
export function pendingHashes(configDir: string, baseUrl: string): string[] {
  return names(storePaths(configDir, baseUrl).pendingDir)
    .filter((n) => /^[0-9a-f]{64}\.json$/.test(n))
    .map((n) => n.slice(0, 64));
}

/** Hashes with a ledger file, read straight from disk. */
export function ledgerHashes(configDir: string, baseUrl: string): string[] {
  return names(storePaths(configDir, baseUrl).ledgerDir)
    .filter((n) => /^[0-9a-f]{64}\.json$/.test(n))
    .map((n) => n.slice(0, 64));
}

/** Every file under `dir`, relative, with its mode, recursively. */
export function listTree(dir: string): { path: string; mode: number; isDir: boolean }[] {
  const out: { path: string; mode: number; isDir: boolean }[] = [];
  const walk = (current: string): void => {
    for (const name of readdirSync(current).sort()) {
      const full = join(current, name);
      const info = statSync(full);
      out.push({ path: relative(dir, full), mode: info.mode & 0o777, isDir: info.isDirectory() });
      if (info.isDirectory()) walk(full);
    }
  };
  walk(dir);
  return out;
}

/** Reads a JSON file straight from disk. */
export function readJson(path: string): unknown {
  return JSON.parse(readFileSync(path, 'utf8'));
}

/** An HS256 JWT signed with a random key (so no sandbox accepts it), with the given exp. */
export function handMadeJwt(expSeconds: number): string {
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const head = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ userId: 1390, email: 'x@example.invalid', exp: expSeconds })}`;
  const token = `${head}.${createHmac('sha256', randomBytes(32)).update(head).digest('base64url')}`;
  registerSecret(token);
  return token;
}

/**
 * The sandbox (src/sandbox) as a test server on 127.0.0.1 port 0: starting
 * one for a describe block or a file, talking to it over HTTP directly (not
 * through notarize), and reading its call log.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { afterAll, beforeAll } from 'vitest';
import { startSandbox, type Sandbox, type SandboxCall, type SandboxOptions } from '../../src/sandbox/server.js';
import { currentFileAudit } from './audit.js';

/** A complete answer from the sandbox. */
export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: () => unknown;
}

/** Options of `send`: a body (objects are JSON-encoded, strings sent as is), a token, a timeout. */
export interface SendOptions {
  body?: unknown;
  token?: string;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

/** Sends one request to the sandbox and reads the whole answer; rejects on socket errors or timeout. */
export async function send(sandbox: Sandbox, method: string, path: string, options: SendOptions = {}): Promise<Reply> {
  if (!sandbox.url.startsWith('http://127.0.0.1:')) throw new Error(`refusing to talk to ${sandbox.url}`);
  const headers: Record<string, string> = { ...options.headers };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  const body =
    options.body === undefined || typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
  const answer = await request(`${sandbox.url}${path}`, {
    method: method as 'GET',
    headers,
    body,
    signal: AbortSignal.timeout(options.timeoutMs ?? 5000),
  });
  const text = await answer.body.text();
  return { status: answer.statusCode, headers: answer.headers, text, json: () => JSON.parse(text) as unknown };
}

/** Logs in with the sandbox's API key and returns the token. */
export async function login(sandbox: Sandbox): Promise<string> {
  const reply = await send(sandbox, 'POST', '/api/v2/auth/login', { body: { apiKey: sandbox.apiKey } });
  if (reply.status !== 200) throw new Error(`login failed: ${reply.status} ${reply.text}`);
  return (reply.json() as { token: string }).token;
}

/** A registration request body as the documentation's sample sends it (booleans as strings). */
function registrationBody(hash: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    blockchainType: 'ALGORAND',
    custody: 'false',
    description: `test ${hash.slice(0, 8)}`,
    hash,
    signed: 'false',
    status: 'not_registered',
    ...overrides,
  };
}

/** The request step's path, trailing slash before `?` included. */
export const REQUEST_PATH = '/api/v2/registration/?subscription=true';

/** Runs the request step for `hash` and returns the raw session text and status. */
export async function requestStep(
  sandbox: Sandbox,
  token: string,
  hash: string,
  overrides?: Record<string, unknown>,
): Promise<Reply> {
  return send(sandbox, 'POST', REQUEST_PATH, { token, body: registrationBody(hash, overrides) });
}

/** Asserts a reply is the sandbox's JSON error with this status, and returns its body. */
export function errorBody(reply: Reply): { status: number; error: string; message: string } {
  const contentType = String(reply.headers['content-type']);
  if (!contentType.startsWith('application/json')) throw new Error(`not JSON: ${contentType}`);
  return reply.json() as { status: number; error: string; message: string };
}

/**
 * Starts one sandbox for the enclosing describe block, logs in once, hands
 * both to `use`, and closes the sandbox after the block.
 */
export function useLoggedInSandbox(use: (sandbox: Sandbox, token: string) => void): void {
  let sandbox: Sandbox | undefined;
  beforeAll(async () => {
    sandbox = await startSandbox();
    use(sandbox, await login(sandbox));
  });
  afterAll(async () => {
    await sandbox?.close();
  });
}

/** A sandbox call with the time it was answered. */
export interface TimedCall {
  call: SandboxCall;
  answeredAt: number;
}

/** A sandbox whose answer times are kept, and that can be waited on. */
export interface TestSandbox extends Sandbox {
  answered: TimedCall[];
  /** Resolves when a call matching `predicate` has arrived (polled: arrival is not an event). */
  arrival(predicate: (call: SandboxCall) => boolean, signal?: AbortSignal): Promise<void>;
  /** Resolves when a call matching `predicate` has been answered (or dropped). */
  answer(predicate: (call: SandboxCall) => boolean, signal?: AbortSignal): Promise<TimedCall>;
}

/** Starts a sandbox on 127.0.0.1, port 0; its API key joins the file's secret audit, when there is one. */
export async function startTestSandbox(options: SandboxOptions = {}): Promise<TestSandbox> {
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
  currentFileAudit()?.add(started.apiKey);
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

/** A starter of test sandboxes, all closed when the test file ends. */
export function useSandboxes(): (options?: SandboxOptions) => Promise<TestSandbox> {
  const open: Sandbox[] = [];
  afterAll(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });
  return async (options) => {
    const started = await startTestSandbox(options);
    open.push(started);
    return started;
  };
}

/** The route names of some sandbox calls, in order. */
export function routes(calls: SandboxCall[]): (string | null)[] {
  return calls.map((call) => call.route);
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

/** An HS256 JWT signed with a random key (so no sandbox accepts it), with the given exp; it joins the file's secret audit. */
export function handMadeJwt(expSeconds: number): string {
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const head = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ userId: 1390, email: 'x@example.invalid', exp: expSeconds })}`;
  const token = `${head}.${createHmac('sha256', randomBytes(32)).update(head).digest('base64url')}`;
  currentFileAudit()?.add(token);
  return token;
}

/**
 * Small HTTP helpers for the sandbox tests: every request goes to the
 * sandbox's own 127.0.0.1 URL and nowhere else.
 */
import { createHash } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.js';

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

/** The SHA-256 hex digest of a label: a fresh, valid document hash for each test. */
export function hashOf(label: string): string {
  return createHash('sha256').update(label).digest('hex');
}

/** A registration request body as the documentation's sample sends it (booleans as strings). */
export function registrationBody(hash: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
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

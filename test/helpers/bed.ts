/**
 * A test bed: a fresh temporary store directory, a work directory for the
 * documents, and a sandbox on 127.0.0.1 port 0, all torn down by `finish()`.
 * It also collects every output of the runs made through it, and every secret
 * (API keys, tokens) it saw, so `finish()` can prove no secret was printed.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { startSandbox, type Sandbox, type SandboxCall, type SandboxOptions } from '../../src/sandbox/server.js';
import { runCli, type CliResult, type RunOptions } from './cli.js';
import { startRecordingProxy, type RecordingProxy, type Rewrite } from './proxy.js';

/** Any output a run produced, whichever way it was run. */
export interface Output {
  args: string[];
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface BedOptions {
  /** Options of the sandbox started for the bed. */
  sandbox?: SandboxOptions;
}

export class Bed {
  readonly root: string;
  /** NOTARIZE_CONFIG_DIR: not created in advance, so notarize creates it. */
  readonly storeDir: string;
  readonly workDir: string;
  sandbox: Sandbox;
  readonly outputs: Output[] = [];
  readonly #secrets = new Set<string>();
  readonly #extraSandboxes: Sandbox[] = [];
  readonly #proxies: RecordingProxy[] = [];

  private constructor(root: string, sandbox: Sandbox) {
    this.root = root;
    this.storeDir = join(root, 'store');
    this.workDir = join(root, 'work');
    this.sandbox = sandbox;
    this.addSecret(sandbox.apiKey);
  }

  static async create(options: BedOptions = {}): Promise<Bed> {
    const root = await mkdtemp(join(tmpdir(), 'notarize-test-'));
    await mkdir(join(root, 'work'));
    const sandbox = await startSandbox({ port: 0, ...options.sandbox });
    return new Bed(root, sandbox);
  }

  /** Registers a value that must never appear in any output (and, for a JWT, its signature). */
  addSecret(secret: string | undefined): void {
    if (!secret) return;
    this.#secrets.add(secret);
    const parts = secret.split('.');
    if (parts.length === 3 && parts[2]) this.#secrets.add(parts[2]);
  }

  /** Another sandbox torn down with the bed (e.g. to prove which one a request went to). */
  async extraSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
    const sandbox = await startSandbox({ port: 0, ...options });
    this.#extraSandboxes.push(sandbox);
    this.addSecret(sandbox.apiKey);
    return sandbox;
  }

  /** A recording proxy in front of the bed's sandbox. */
  async proxy(rewrite?: Rewrite): Promise<RecordingProxy> {
    const proxy = await startRecordingProxy(this.sandbox.url, rewrite);
    this.#proxies.push(proxy);
    return proxy;
  }

  /** Stops the sandbox and starts a fresh one (empty state, same key) on the same port. */
  async restartSandbox(): Promise<void> {
    const port = Number(new URL(this.sandbox.url).port);
    const apiKey = this.sandbox.apiKey;
    await this.sandbox.close();
    this.sandbox = await startSandbox({ port, apiKey });
  }

  /** Replaces the bed's sandbox by a new one started with `options` (e.g. issuing expired tokens). */
  async replaceSandbox(options: SandboxOptions): Promise<Sandbox> {
    await this.sandbox.close();
    this.sandbox = await startSandbox({ port: 0, ...options });
    this.addSecret(this.sandbox.apiKey);
    return this.sandbox;
  }

  /** The environment of a run: this bed's store and sandbox, plus `extra`. */
  env(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
    return { NOTARIZE_CONFIG_DIR: this.storeDir, NOTARIZE_BASE_URL: this.sandbox.url, ...extra };
  }

  /** Runs the built bin with this bed's environment (plus `options.env`) and records its output. */
  async run(args: string[], options: Partial<RunOptions> = {}): Promise<CliResult> {
    const result = await runCli(args, { cwd: this.workDir, ...options, env: this.env(options.env) });
    this.record(result);
    return result;
  }

  /** Keeps an output for the secret check of `finish()`. */
  record(output: Output): void {
    this.outputs.push(output);
  }

  /** Writes a document in the work directory and returns its path. */
  async file(name: string, content: string | Buffer = `content of ${name}, ${Math.random()}`): Promise<string> {
    const path = join(this.workDir, name);
    await writeFile(path, content);
    return path;
  }

  /** Calls the sandbox received from `mark` on (see `mark()`). */
  callsSince(mark: number): SandboxCall[] {
    return this.sandbox.calls.slice(mark);
  }

  /** A position in the sandbox's call log. */
  mark(): number {
    return this.sandbox.calls.length;
  }

  get credentialsFile(): string {
    return join(this.storeDir, 'credentials.json');
  }

  /** The tokens stored in credentials.json, by base URL ({} when there is no file). */
  storedTokens(): Record<string, string> {
    if (!existsSync(this.credentialsFile)) return {};
    let data: unknown;
    try {
      data = JSON.parse(readFileSync(this.credentialsFile, 'utf8'));
    } catch {
      return {}; // a test that damages the file on purpose
    }
    const tokens = (data as { tokens?: unknown } | null)?.tokens;
    if (typeof tokens !== 'object' || tokens === null) return {};
    const found = Object.fromEntries(
      Object.entries(tokens).filter((e): e is [string, string] => typeof e[1] === 'string' && e[1].length >= 8),
    );
    for (const token of Object.values(found)) this.addSecret(token);
    return found;
  }

  /** Logs in to `sandbox` directly over HTTP (not through notarize) and returns the token. */
  async directLogin(sandbox: Sandbox = this.sandbox): Promise<string> {
    if (!sandbox.url.startsWith('http://127.0.0.1:')) throw new Error(`refusing to talk to ${sandbox.url}`);
    const answer = await request(`${sandbox.url}/api/v2/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiKey: sandbox.apiKey }),
      signal: AbortSignal.timeout(5000),
    });
    const text = await answer.body.text();
    if (answer.statusCode !== 200) throw new Error(`login failed: ${answer.statusCode} ${text}`);
    const { token } = JSON.parse(text) as { token: string };
    this.addSecret(token);
    return token;
  }

  /** Every secret seen so far (sandbox keys, stored and direct tokens, added ones). */
  secrets(): string[] {
    this.storedTokens();
    return [...this.#secrets];
  }

  /** The outputs of this bed's runs that contain a secret (empty when none). */
  leaks(): string[] {
    return findLeaks(this.outputs, this.secrets());
  }

  /** Checks that no run printed a secret, then stops the servers and removes the directories. */
  async finish(): Promise<void> {
    let leaks: string[] = [];
    try {
      leaks = existsSync(this.root) ? this.leaks() : [];
    } finally {
      await Promise.all([
        this.sandbox.close(),
        ...this.#extraSandboxes.map((s) => s.close()),
        ...this.#proxies.map((p) => p.close()),
      ]);
      await rm(this.root, { recursive: true, force: true });
    }
    if (leaks.length > 0) throw new Error(`secrets were printed:\n${leaks.join('\n')}`);
  }
}

/** Says which outputs contain one of `secrets`, as "notarize <args>: <stream> holds a secret" lines. */
export function findLeaks(outputs: readonly Output[], secrets: readonly string[]): string[] {
  const found: string[] = [];
  for (const output of outputs) {
    for (const secret of secrets) {
      if (output.stdout.includes(secret)) found.push(`notarize ${output.args.join(' ')}: stdout holds a secret`);
      if (output.stderr.includes(secret)) found.push(`notarize ${output.args.join(' ')}: stderr holds a secret`);
    }
  }
  return found;
}

/** The lowercase hex SHA-256 of `content`. */
export function sha256(content: string | Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

/** The route names of some sandbox calls, in order. */
export function routes(calls: SandboxCall[]): (string | null)[] {
  return calls.map((call) => call.route);
}

/** A stack trace line as Node prints them ("\n    at fn (file:line:col)"). */
export const STACK_LINE = /\n\s+at /;

/**
 * A test bed: a fresh temporary store directory, a work directory for the
 * documents, and a sandbox on 127.0.0.1 port 0, all torn down by `finish()`
 * with the sandboxes and proxies started through it. It also collects every
 * output of the runs made through it, and every secret (API keys, tokens) it
 * saw, so `finish()` can prove no secret was printed.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { request } from 'undici';
import { afterEach, beforeEach } from 'vitest';
import {
  startSandbox,
  type RouteName,
  type Sandbox,
  type SandboxCall,
  type SandboxOptions,
} from '../../src/sandbox/server.js';
import { serviceDirName } from '../../src/store/store.js';
import { runCli, type Output, type Run, type RunOptions } from './cli.js';
import { startProxy, type ProxyOptions, type RecordingProxy, type Rewrite } from './proxy.js';

export interface BedOptions {
  /** Options of the sandbox started for the bed. */
  sandbox?: SandboxOptions;
  /**
   * Every run gets the sandbox's key as NOTARIZE_API_KEY, so it logs in on the
   * fly as a CI job does (default false: the run has no credentials unless the
   * test logs in or passes them).
   */
  keyInEnv?: boolean;
}

export class Bed {
  readonly root: string;
  /** NOTARIZE_CONFIG_DIR: not created in advance, so notarize creates it. */
  readonly storeDir: string;
  readonly workDir: string;
  sandbox: Sandbox;
  readonly outputs: Output[] = [];
  readonly #keyInEnv: boolean;
  readonly #secrets = new Set<string>();
  readonly #extraSandboxes: Sandbox[] = [];
  readonly #proxies: RecordingProxy[] = [];

  private constructor(root: string, sandbox: Sandbox, keyInEnv: boolean) {
    this.root = root;
    this.storeDir = join(root, 'store');
    this.workDir = join(root, 'work');
    this.sandbox = sandbox;
    this.#keyInEnv = keyInEnv;
    this.addSecret(sandbox.apiKey);
  }

  static async create(options: BedOptions = {}): Promise<Bed> {
    const root = await mkdtemp(join(tmpdir(), 'notarize-test-'));
    try {
      await mkdir(join(root, 'work'));
      const sandbox = await startSandbox({ port: 0, ...options.sandbox });
      return new Bed(root, sandbox, options.keyInEnv ?? false);
    } catch (error) {
      await rm(root, { recursive: true, force: true });
      throw error;
    }
  }

  /** The base URL of the bed's sandbox. */
  get url(): string {
    return this.sandbox.url;
  }

  /**
   * Registers a value that must never appear in any output (and, for a JWT,
   * its signature). A secret given with surrounding whitespace (as a test of
   * untidy environment variables does) is searched for without it too, since
   * notarize trims it before use.
   */
  addSecret(secret: string | undefined): void {
    for (const value of new Set([secret, secret?.trim()])) {
      if (!value) continue;
      this.#secrets.add(value);
      const parts = value.split('.');
      if (parts.length === 3 && parts[2]) this.#secrets.add(parts[2]);
    }
  }

  /** Another sandbox torn down with the bed (e.g. to prove which one a request went to). */
  async extraSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
    const sandbox = await startSandbox({ port: 0, ...options });
    this.#extraSandboxes.push(sandbox);
    this.addSecret(sandbox.apiKey);
    return sandbox;
  }

  /** A recording reverse proxy in front of the bed's sandbox (point NOTARIZE_BASE_URL at it). */
  proxy(rewrite?: Rewrite): Promise<RecordingProxy> {
    return this.#startProxy({ target: this.sandbox.url, rewrite });
  }

  /** A recording forward proxy, as a CI runner's egress proxy (point HTTP_PROXY at it). */
  forwardProxy(options: Pick<ProxyOptions, 'host' | 'refuseWith'> = {}): Promise<RecordingProxy> {
    return this.#startProxy(options);
  }

  async #startProxy(options: ProxyOptions): Promise<RecordingProxy> {
    const proxy = await startProxy(options);
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

  /** The sandbox's key as NOTARIZE_API_KEY, for a run that logs in on the fly. */
  withKey(): { NOTARIZE_API_KEY: string } {
    return { NOTARIZE_API_KEY: this.sandbox.apiKey };
  }

  /** The environment of a run: this bed's store and sandbox (and key, with `keyInEnv`), plus `extra`. */
  env(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
    return {
      NOTARIZE_CONFIG_DIR: this.storeDir,
      NOTARIZE_BASE_URL: this.sandbox.url,
      ...(this.#keyInEnv ? this.withKey() : {}),
      ...extra,
    };
  }

  /** Runs the built bin in the work directory with this bed's environment (plus `options.env`); records its output. */
  async run(args: string[], options: RunOptions = {}): Promise<Run> {
    const result = await runCli(args, { cwd: this.workDir, ...options, env: this.env(options.env) });
    this.record(result);
    return result;
  }

  /** Keeps an output for the secret check of `finish()`. */
  record(output: Output): void {
    this.outputs.push(output);
  }

  /** Writes a document under the work directory (parent directories created) and returns its path. */
  async file(name: string, content: string | Buffer = `content of ${name}, ${Math.random()}`): Promise<string> {
    const path = join(this.workDir, name);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, content);
    return path;
  }

  /** Writes a document under the work directory (parent directories created) and returns its SHA-256. */
  async write(relativePath: string, content: string | Buffer): Promise<string> {
    await this.file(relativePath, content);
    return sha256(content);
  }

  /** Calls the sandbox received from `mark` on (see `mark()`). */
  callsSince(mark: number): SandboxCall[] {
    return this.sandbox.calls.slice(mark);
  }

  /** A position in the sandbox's call log. */
  mark(): number {
    return this.sandbox.calls.length;
  }

  /** How many calls the sandbox received for a route (every status). */
  calls(route: RouteName): number {
    return this.sandbox.calls.filter((c) => c.route === route).length;
  }

  /** The hashes sent to the request step, in arrival order. */
  requestedHashes(): string[] {
    return this.sandbox.calls
      .filter((c) => c.route === 'request')
      .map((c) => (JSON.parse(c.body) as { hash: string }).hash);
  }

  get credentialsFile(): string {
    return join(this.storeDir, 'credentials.json');
  }

  /** Where the store keeps the files of the service at `url` (the bed's sandbox by default); it may not exist yet. */
  serviceDir(url: string = this.sandbox.url): string {
    return join(this.storeDir, 'services', serviceDirName(url));
  }

  /** The pending session file of `hash` in the sandbox's service directory. */
  pendingFile(hash: string): string {
    return join(this.serviceDir(), 'pending', `${hash}.json`);
  }

  /** The ledger file of `hash` in the sandbox's service directory. */
  ledgerFile(hash: string): string {
    return join(this.serviceDir(), 'ledger', `${hash}.json`);
  }

  /** The one service directory in the store; throws unless there is exactly one. */
  onlyServiceDir(): string {
    const services = join(this.storeDir, 'services');
    const names = existsSync(services) ? readdirSync(services) : [];
    if (names.length !== 1) throw new Error(`expected one service directory in the store, found ${names.join(', ')}`);
    return join(services, names[0]!);
  }

  /** The hashes with a ledger file (`ledger/<hash>.json`) in the one service directory. */
  ledgerHashes(): string[] {
    return this.#entries('ledger');
  }

  /** The hashes with a pending session file in the one service directory. */
  pendingHashes(): string[] {
    return this.#entries('pending');
  }

  /** The stored ledger entry of a hash, parsed. */
  ledgerEntry(hash: string): { hash: string; recordJson: string; file?: { name: string } } {
    return JSON.parse(readFileSync(join(this.onlyServiceDir(), 'ledger', `${hash}.json`), 'utf8')) as {
      hash: string;
      recordJson: string;
    };
  }

  #entries(kind: string): string[] {
    const dir = join(this.onlyServiceDir(), kind);
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((name) => !name.startsWith('.'))
      .map((name) => name.replace(/\.json$/, ''))
      .sort();
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

  /**
   * Checks that no run printed a secret, then stops the servers and removes the
   * directories. Calling it again only repeats the (idempotent) cleanup.
   */
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

/**
 * Gives every test of the calling file (or describe block) a fresh bed,
 * handed to `use` before the test, and finishes it after the test: the leak
 * check, then the cleanup, whether the test passed or not.
 */
export function useBed(use: (bed: Bed) => void, options: BedOptions = {}): void {
  let current: Bed | undefined;
  beforeEach(async () => {
    current = await Bed.create(options);
    use(current);
  });
  afterEach(async () => {
    const bed = current;
    current = undefined;
    await bed?.finish();
  });
}

/**
 * Gives every test of the calling file (or describe block) a fresh empty
 * temporary directory named `prefix...`, handed to `use` before the test,
 * and removes it after the test, for tests that need no sandbox.
 */
export function useTempDir(prefix: string, use: (dir: string) => void): void {
  let current: string | undefined;
  beforeEach(async () => {
    current = await mkdtemp(join(tmpdir(), prefix));
    use(current);
  });
  afterEach(async () => {
    const dir = current;
    current = undefined;
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });
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

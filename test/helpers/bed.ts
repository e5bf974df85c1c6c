/**
 * A test bed: a fresh temporary store directory, a work directory for the
 * documents, and a sandbox on 127.0.0.1 port 0, all torn down by `finish()`
 * with the sandboxes and proxies started through it. Its runs (in-process
 * with `main`, spawned with `run`) get its store and sandbox in their
 * environment, and its secret audit keeps every output and every secret
 * (API keys, tokens) it saw, so `finish()` can prove no secret was printed.
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import {
  startSandbox,
  type RouteName,
  type Sandbox,
  type SandboxCall,
  type SandboxOptions,
} from '../../src/sandbox/server.js';
import { SecretAudit } from './audit.js';
import { runCli, type Run, type RunOptions } from './cli.js';
import { sha256 } from './documents.js';
import type { EnvVars } from './env.js';
import { runMain, type MainOptions } from './main.js';
import { startProxy, type ProxyOptions, type RecordingProxy, type Rewrite } from './proxy.js';
import { login, requestedHash } from './sandbox.js';
import { hashesIn, readJson, storedTokens, storePaths } from './store.js';

/** Options of a bed's run: what the runner takes, and variables on top of the bed's environment. */
export type BedRunOptions = RunOptions & { env?: EnvVars };
export type BedMainOptions = MainOptions & { env?: EnvVars };

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
  /** Every output of this bed's runs, and every secret it saw. */
  readonly audit = new SecretAudit();
  readonly #keyInEnv: boolean;
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

  /** Registers a value that must never appear in any output (see `SecretAudit.add`). */
  addSecret(secret: string | undefined): void {
    this.audit.add(secret);
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
  forwardProxy(
    options: Pick<ProxyOptions, 'host' | 'refuseWith' | 'closeTunnels' | 'silentTunnels'> = {},
  ): Promise<RecordingProxy> {
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

  /** The variables of a run: this bed's store and sandbox (and key, with `keyInEnv`), plus `extra`. */
  env(extra: EnvVars = {}): EnvVars {
    return {
      NOTARIZE_CONFIG_DIR: this.storeDir,
      NOTARIZE_BASE_URL: this.sandbox.url,
      ...(this.#keyInEnv ? this.withKey() : {}),
      ...extra,
    };
  }

  /** Runs `notarize ...args` in this process (`main()`) with this bed's environment (plus `options.env`); records its output. */
  async main(args: string[], options: BedMainOptions = {}): Promise<Run> {
    const result = await runMain(args, this.env(options.env), options);
    this.record(result);
    return result;
  }

  /**
   * Runs the built bin as a process, in the work directory, with this bed's
   * environment (plus `options.env`); records its output. Only where the
   * process boundary is the point: otherwise `main`.
   */
  async run(args: string[], options: BedRunOptions = {}): Promise<Run> {
    const result = await runCli(args, this.env(options.env), { cwd: this.workDir, ...options });
    this.record(result);
    return result;
  }

  /** Keeps an output for the secret check of `finish()`. */
  record(output: Run): void {
    this.audit.record(output);
  }

  /**
   * The absolute path of `name` under the work directory: what in-process
   * runs are given, since they resolve relative paths against this process's
   * directory, not the work directory.
   */
  path(name: string): string {
    return join(this.workDir, name);
  }

  /** Writes a document under the work directory (parent directories created) and returns its path. */
  async file(name: string, content: string | Buffer = `content of ${name}, ${Math.random()}`): Promise<string> {
    const path = this.path(name);
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
    return this.sandbox.calls.filter((c) => c.route === 'request').map(requestedHash);
  }

  get credentialsFile(): string {
    return join(this.storeDir, 'credentials.json');
  }

  /** Where the store keeps the files of the service at `url` (the bed's sandbox by default); it may not exist yet. */
  serviceDir(url: string = this.sandbox.url): string {
    return storePaths(this.storeDir, url).service;
  }

  /** The pending session file of `hash` in the sandbox's service directory. */
  pendingFile(hash: string): string {
    return storePaths(this.storeDir, this.sandbox.url).pending(hash);
  }

  /** The ledger file of `hash` in the sandbox's service directory. */
  ledgerFile(hash: string): string {
    return storePaths(this.storeDir, this.sandbox.url).ledger(hash);
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
    return hashesIn(join(this.onlyServiceDir(), 'ledger'));
  }

  /** The hashes with a pending session file in the one service directory. */
  pendingHashes(): string[] {
    return hashesIn(join(this.onlyServiceDir(), 'pending'));
  }

  /** The stored ledger entry of a hash, parsed. */
  ledgerEntry(hash: string): { hash: string; recordJson: string; file?: { name: string } } {
    return readJson(join(this.onlyServiceDir(), 'ledger', `${hash}.json`)) as { hash: string; recordJson: string };
  }

  /** The tokens stored in credentials.json, by base URL ({} when there is no file); they join the audit's secrets. */
  storedTokens(): Record<string, string> {
    const tokens = storedTokens(this.storeDir);
    for (const token of Object.values(tokens)) this.addSecret(token);
    return tokens;
  }

  /** Logs in to `sandbox` directly over HTTP (not through notarize) and returns the token. */
  async directLogin(sandbox: Sandbox = this.sandbox): Promise<string> {
    const token = await login(sandbox);
    this.addSecret(token);
    return token;
  }

  /** Every secret seen so far (sandbox keys, stored and direct tokens, added ones). */
  secrets(): string[] {
    this.storedTokens();
    return this.audit.secrets();
  }

  /** The outputs of this bed's runs that contain a secret (empty when none). */
  leaks(): string[] {
    this.storedTokens();
    return this.audit.leaks();
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

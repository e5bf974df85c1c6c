/**
 * A test bed for the batch tests: a temporary root holding the store
 * (NOTARIZE_CONFIG_DIR, created by notarize itself) and a work directory for
 * documents, plus a sandbox on 127.0.0.1 port 0. `close()` stops the sandbox
 * and removes everything.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startSandbox, type RouteName, type Sandbox } from '../../../src/sandbox/server.js';
import { runNotarize, type Run, type RunOptions } from './cli.js';

export function sha256(content: string | Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

export class Bed {
  readonly root: string;
  readonly storeDir: string;
  readonly workDir: string;
  readonly sandbox: Sandbox;
  #closed = false;

  private constructor(root: string, sandbox: Sandbox) {
    this.root = root;
    this.storeDir = join(root, 'store');
    this.workDir = join(root, 'work');
    this.sandbox = sandbox;
  }

  static async create(): Promise<Bed> {
    const root = await mkdtemp(join(tmpdir(), 'notarize-batch-'));
    await mkdir(join(root, 'work'));
    try {
      return new Bed(root, await startSandbox({ port: 0 }));
    } catch (error) {
      await rm(root, { recursive: true, force: true });
      throw error;
    }
  }

  get url(): string {
    return this.sandbox.url;
  }

  /** The environment of a run against this bed's store and sandbox, logging in on the fly with its key. */
  env(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
    return {
      NOTARIZE_CONFIG_DIR: this.storeDir,
      NOTARIZE_BASE_URL: this.sandbox.url,
      NOTARIZE_API_KEY: this.sandbox.apiKey,
      ...extra,
    };
  }

  /** Runs notarize in the work directory with this bed's environment plus `options.env`. */
  run(args: string[], options: RunOptions = {}): Promise<Run> {
    return runNotarize(args, { cwd: this.workDir, ...options, env: this.env(options.env) });
  }

  /** Writes a document under the work directory (parents created); returns its SHA-256. */
  async write(relativePath: string, content: string | Buffer): Promise<string> {
    const path = join(this.workDir, relativePath);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, content);
    return sha256(content);
  }

  /** The service directory of this bed's sandbox in the store (there is exactly one). */
  serviceDir(): string {
    const services = join(this.storeDir, 'services');
    const names = existsSync(services) ? readdirSync(services) : [];
    if (names.length !== 1) throw new Error(`expected one service directory in the store, found ${names.join(', ')}`);
    return join(services, names[0]!);
  }

  /** The hashes with a ledger file (`ledger/<hash>.json`). */
  ledgerHashes(): string[] {
    return this.#entries('ledger');
  }

  /** The hashes with a pending session file. */
  pendingHashes(): string[] {
    return this.#entries('pending');
  }

  /** The stored ledger entry of a hash, parsed. */
  ledgerEntry(hash: string): { hash: string; recordJson: string; file?: { name: string } } {
    return JSON.parse(readFileSync(join(this.serviceDir(), 'ledger', `${hash}.json`), 'utf8')) as {
      hash: string;
      recordJson: string;
    };
  }

  #entries(kind: string): string[] {
    const dir = join(this.serviceDir(), kind);
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((name) => !name.startsWith('.'))
      .map((name) => name.replace(/\.json$/, ''))
      .sort();
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

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.sandbox.close();
    await rm(this.root, { recursive: true, force: true });
  }
}

/** The JSON result of one item, as register/verify print it. */
export interface ItemResult {
  schemaVersion: number;
  file: string | null;
  hash: string | null;
  status: string;
  record?: Record<string, unknown>;
  session?: Record<string, unknown>;
  verificationUrl?: string;
  receipt?: string;
  reason?: string;
  error?: { code: string; exitCode: number; message: string; hint?: string };
}

/** Parses a --json array of results. */
export function parseResults(stdout: string): ItemResult[] {
  const value: unknown = JSON.parse(stdout);
  if (!Array.isArray(value)) throw new Error(`expected a JSON array, got: ${stdout.slice(0, 200)}`);
  return value as ItemResult[];
}

/** Parses NDJSON: every line must be a JSON object, and the output must end with a newline. */
export function parseNdjson(stdout: string): ItemResult[] {
  if (stdout !== '' && !stdout.endsWith('\n')) throw new Error('NDJSON output does not end with a newline');
  return stdout
    .split('\n')
    .slice(0, -1)
    .map((line) => JSON.parse(line) as ItemResult);
}

/** The one JSON error line --json prints on stderr (the last line). */
export function jsonError(stderr: string): { code: string; exitCode: number; message: string; hint?: string } {
  const lines = stderr.trimEnd().split('\n');
  return (JSON.parse(lines[lines.length - 1]!) as { error: { code: string; exitCode: number; message: string } }).error;
}

/** Counts results by status. */
export function countStatuses(results: readonly ItemResult[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of results) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
}

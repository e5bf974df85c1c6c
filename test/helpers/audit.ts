/**
 * The secret audit: the outputs of runs, and the secrets that were in play
 * (API keys, tokens stored or given), so a test can prove that no output
 * holds any of them. A bed keeps one per test (`Bed.finish()` checks it);
 * `auditSecrets()` keeps one for a whole test file, fed by every run of the
 * runners (spawned and in-process) and checked when the file ends.
 */
import { afterAll, expect } from 'vitest';
import type { Run } from './cli.js';
import { storedTokens } from './store.js';

// A shorter piece would be found in outputs by chance (e.g. the signature of a hand-made token).
const MIN_SECRET_LENGTH = 8;

/** Outputs and the secrets none of them may hold. */
export class SecretAudit {
  readonly #secrets = new Set<string>();
  readonly #outputs: Run[] = [];

  /**
   * Adds a secret to look for: the value, the value trimmed (notarize trims
   * what it reads, so an untidy variable's secret is searched for without its
   * whitespace too), a JWT's signature on its own, and a run of 32 hex digits
   * in it (the random part of an API key). Pieces under 8 characters are left
   * out: they would match by chance.
   */
  add(secret: string | undefined): void {
    for (const value of new Set([secret, secret?.trim()])) {
      if (value === undefined) continue;
      const parts = value.split('.');
      const signature = parts.length === 3 ? parts[2] : undefined;
      const hex = /[0-9a-f]{32}/.exec(value)?.[0];
      for (const piece of [value, signature, hex]) {
        if (piece !== undefined && piece.length >= MIN_SECRET_LENGTH) this.#secrets.add(piece);
      }
    }
  }

  /** Adds the tokens stored in `configDir`'s credentials.json (none when there is no readable file). */
  addStoredTokens(configDir: string | undefined): void {
    if (configDir === undefined) return;
    for (const token of Object.values(storedTokens(configDir))) this.add(token);
  }

  /** Keeps what a run printed. */
  record(run: Run): void {
    this.#outputs.push(run);
  }

  /** Every secret added so far. */
  secrets(): string[] {
    return [...this.#secrets];
  }

  /** How many outputs and secrets there are to check. */
  size(): { outputs: number; secrets: number } {
    return { outputs: this.#outputs.length, secrets: this.#secrets.size };
  }

  /** One "notarize <args>: <stream> holds a secret starting ab…" line per leak (empty when none). */
  leaks(): string[] {
    const found: string[] = [];
    for (const output of this.#outputs) {
      for (const secret of this.#secrets) {
        for (const stream of ['stdout', 'stderr'] as const) {
          if (output[stream].includes(secret)) {
            found.push(`notarize ${output.args.join(' ')}: ${stream} holds a secret starting ${secret.slice(0, 4)}…`);
          }
        }
      }
    }
    return found;
  }
}

let fileAudit: SecretAudit | undefined;

/**
 * The audit of the current test file once `auditSecrets()` has turned it on,
 * else undefined: the runners record into it. Files that share a module
 * graph (vitest's isolate: false) run one after the other in a worker, so
 * each file's audit is dropped when the file ends.
 */
export function currentFileAudit(): SecretAudit | undefined {
  return fileAudit;
}

/**
 * Audits every run of the calling test file: from now on the runners record
 * each output and the secrets of its environment and store; when the file
 * ends, it fails if any output holds any secret (or if nothing was audited).
 * Returns the audit, for adding secrets the runs cannot see.
 */
export function auditSecrets(): SecretAudit {
  const audit = new SecretAudit();
  fileAudit = audit;
  afterAll(() => {
    if (fileAudit === audit) fileAudit = undefined;
    expect(audit.leaks()).toEqual([]);
    const { outputs, secrets } = audit.size();
    expect(outputs).toBeGreaterThan(0);
    console.log(`secret audit: ${outputs} outputs checked against ${secrets} secrets, no leak`);
  });
  return audit;
}

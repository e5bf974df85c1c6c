/**
 * The secret audit: every output of every run in a test file (spawned or
 * in-process) is kept, with every secret that was in play (API keys, the
 * tokens the runs stored or were given). `auditSecrets()` checks at the end
 * of the file that no output contains any of them, failures included.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';

const outputs: { label: string; text: string }[] = [];
const secrets = new Set<string>();

/** Adds a secret (and, for a JWT, its signature on its own) to look for. */
export function registerSecret(secret: string | undefined): void {
  if (secret === undefined || secret.length < 8) return;
  secrets.add(secret);
  const parts = secret.split('.');
  if (parts.length === 3 && (parts[2]?.length ?? 0) >= 16) secrets.add(parts[2]!);
  const hex = /[0-9a-f]{32}/.exec(secret);
  if (hex) secrets.add(hex[0]);
}

/** Keeps what a run printed, for the final check. */
export function recordOutput(label: string, ...texts: string[]): void {
  outputs.push({ label, text: texts.join('\n') });
}

/** Registers as secrets the tokens stored in `configDir`'s credentials.json, if readable. */
export function collectStoredTokens(configDir: string | undefined): void {
  if (configDir === undefined) return;
  try {
    const data = JSON.parse(readFileSync(join(configDir, 'credentials.json'), 'utf8')) as { tokens?: unknown };
    if (data.tokens && typeof data.tokens === 'object') {
      for (const token of Object.values(data.tokens)) if (typeof token === 'string') registerSecret(token);
    }
  } catch {
    // No credentials, or a file a test damaged on purpose.
  }
}

/** How many outputs and secrets were audited so far (for the suite's report). */
export function auditSize(): { outputs: number; secrets: number } {
  return { outputs: outputs.length, secrets: secrets.size };
}

/** At the end of the test file, fails if any output contains any secret. */
export function auditSecrets(): void {
  afterAll(() => {
    const leaks: string[] = [];
    for (const { label, text } of outputs) {
      for (const secret of secrets) {
        if (text.includes(secret)) leaks.push(`${label}: contains a secret starting ${secret.slice(0, 4)}…`);
      }
    }
    expect(leaks).toEqual([]);
    expect(outputs.length).toBeGreaterThan(0);
    console.log(`secret audit: ${outputs.length} outputs checked against ${secrets.size} secrets, no leak`);
  });
}

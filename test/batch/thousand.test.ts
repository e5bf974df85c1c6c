/**
 * Issue 4, "Done when": one `notarize register` call over 1,000 files
 * against the sandbox finishes with 1,000 results, as a --json array and as
 * NDJSON, with exactly one request step and one forfait per document.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type Bed, useBed } from '../helpers/bed.js';
import { describeRun } from '../helpers/cli.js';
import { countStatuses, parseNdjson, parseResults } from '../helpers/results.js';

const COUNT = 1000;

/** Writes COUNT small documents of distinct content; returns path -> sha256 in name order. */
async function writeDocuments(bed: Bed): Promise<Map<string, string>> {
  const hashes = new Map<string, string>();
  const nonce = randomBytes(8).toString('hex');
  for (let i = 0; i < COUNT; i++) {
    const path = `docs/doc-${String(i).padStart(4, '0')}.txt`;
    hashes.set(path, await bed.write(path, `document ${i} of run ${nonce}\n`));
  }
  expect(new Set(hashes.values()).size).toBe(COUNT);
  return hashes;
}

describe('register over 1,000 files in one call', () => {
  let bed: Bed;
  useBed((created) => (bed = created), { keyInEnv: true });

  it(
    '--json prints an array of 1,000 registered results, one request and one forfait each',
    { timeout: 120_000 },
    async () => {
      const expected = await writeDocuments(bed);
      const paths = [...expected.keys()];
      const run = await bed.run(['register', ...paths, '--json'], { timeoutMs: 90_000 });

      expect(run.code, describeRun(run)).toBe(0);
      const results = parseResults(run.stdout);
      expect(results).toHaveLength(COUNT);
      // One result per input, in input order.
      expect(results.map((r) => r.file)).toEqual(paths);
      for (const result of results) {
        const hash = expected.get(result.file!);
        expect(result).toMatchObject({ schemaVersion: 1, status: 'registered', hash });
        expect(result.record?.hash).toBe(hash);
        expect(result.record).toEqual(bed.sandbox.records.get(hash!));
        expect(result.verificationUrl).toBe(`${bed.url}/verification/${hash}`);
        expect(result.error).toBeUndefined();
      }
      expect(countStatuses(results)).toEqual({ registered: COUNT });
      expect(run.stderr).toContain(`${COUNT} items: ${COUNT} registered`);
      expect(run.stderr).not.toMatch(/warning|error/i);

      // The service saw each document exactly once per step, and answered every call 200.
      expect(bed.calls('request')).toBe(COUNT);
      expect(bed.calls('forfait')).toBe(COUNT);
      expect(new Set(bed.requestedHashes())).toEqual(new Set(expected.values()));
      expect(bed.sandbox.calls.filter((c) => c.status !== 200)).toEqual([]);
      expect(bed.sandbox.records.size).toBe(COUNT);

      // The store: 1,000 ledger files, nothing left pending.
      expect(bed.ledgerHashes()).toEqual([...expected.values()].sort());
      expect(bed.pendingHashes()).toEqual([]);
      const sample = bed.ledgerEntry(expected.get(paths[COUNT - 1]!)!);
      expect(JSON.parse(sample.recordJson)).toEqual(results[COUNT - 1]!.record);
    },
  );

  it('--output ndjson prints 1,000 lines, each a JSON result with schemaVersion 1', { timeout: 120_000 }, async () => {
    const expected = await writeDocuments(bed);
    const run = await bed.run(['register', '--recursive', 'docs', '--output', 'ndjson'], { timeoutMs: 90_000 });

    expect(run.code, describeRun(run)).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines).toHaveLength(COUNT + 1);
    expect(lines[COUNT]).toBe('');
    const results = parseNdjson(run.stdout);
    expect(results).toHaveLength(COUNT);
    for (const result of results) {
      expect(result.schemaVersion).toBe(1);
      expect(result.status).toBe('registered');
      expect(result.hash).toBe(expected.get(result.file!));
      expect(result.record?.hash).toBe(result.hash);
    }
    // Every document exactly once (NDJSON is in completion order, so compare as sets).
    expect(new Set(results.map((r) => r.file))).toEqual(new Set(expected.keys()));
    expect(bed.calls('request')).toBe(COUNT);
    expect(bed.calls('forfait')).toBe(COUNT);
    expect(bed.ledgerHashes()).toHaveLength(COUNT);
    expect(bed.pendingHashes()).toEqual([]);
  });
});

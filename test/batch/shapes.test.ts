/**
 * The documented per-item result shapes, as a --json array and as NDJSON:
 * schemaVersion, file, hash, status, and per status exactly one of record
 * (+ verificationUrl), session, error or reason. One input keeps printing the
 * record itself.
 */
import { readFileSync } from 'node:fs';
import { symlink } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { type Bed, useBed } from '../helpers/bed.js';
import { describeRun, type Run } from '../helpers/cli.js';
import { parseNdjson, parseResults, type ItemResult } from '../helpers/results.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

const KEYS = {
  registered: ['file', 'hash', 'record', 'schemaVersion', 'status', 'verificationUrl'],
  'already-registered': ['file', 'hash', 'record', 'schemaVersion', 'status', 'verificationUrl'],
  pending: ['file', 'hash', 'schemaVersion', 'session', 'status'],
  failed: ['error', 'file', 'hash', 'schemaVersion', 'status'],
  skipped: ['file', 'hash', 'reason', 'schemaVersion', 'status'],
} as const;

function parse(format: 'json' | 'ndjson', run: Run): ItemResult[] {
  return format === 'json' ? parseResults(run.stdout) : parseNdjson(run.stdout);
}

function formatArgs(format: 'json' | 'ndjson'): string[] {
  return format === 'json' ? ['--json'] : ['--output', 'ndjson'];
}

describe.each(['json', 'ndjson'] as const)('the result shapes (%s)', (format) => {
  it('registered, already-registered, failed and skipped', async () => {
    const b = bed;
    // Walked in name order; with --concurrency 1 the first new document meets the forfait fault.
    const already = await b.write('dir/a-already.txt', `already ${format}\n`);
    const failing = await b.write('dir/b-failing.txt', `failing ${format}\n`);
    const fresh = await b.write('dir/c-new.txt', `new ${format}\n`);
    await b.write('outside.txt', 'outside the walked directory\n');
    await symlink('../outside.txt', `${b.workDir}/dir/d-link.txt`);

    const first = await b.main(['register', bed.path('dir/a-already.txt'), '--json']);
    expect(first.code, describeRun(first)).toBe(0);
    // One input: the record itself, exactly as the service sent it (the sandbox sends JSON.stringify).
    expect(first.stdout).toBe(`${JSON.stringify(b.sandbox.records.get(already))}\n`);

    b.sandbox.addFaults([{ route: 'forfait', kind: 'status', value: 503, count: 1 }]);
    const run = await b.main(['register', '-r', bed.path('dir'), '-j', '1', '--retries', '0', ...formatArgs(format)]);
    expect(run.code, describeRun(run)).toBe(4);
    const results = parse(format, run);
    const byFile = new Map(results.map((r) => [r.file, r]));
    expect(results).toHaveLength(4);

    for (const r of results) {
      expect(Object.keys(r).sort()).toEqual([...KEYS[r.status as keyof typeof KEYS]]);
      expect(r.schemaVersion).toBe(1);
    }
    expect(byFile.get(bed.path('dir/a-already.txt'))).toEqual({
      schemaVersion: 1,
      file: bed.path('dir/a-already.txt'),
      hash: already,
      status: 'already-registered',
      record: b.sandbox.records.get(already),
      verificationUrl: `${b.url}/verification/${already}`,
    });
    expect(byFile.get(bed.path('dir/c-new.txt'))).toEqual({
      schemaVersion: 1,
      file: bed.path('dir/c-new.txt'),
      hash: fresh,
      status: 'registered',
      record: b.sandbox.records.get(fresh),
      verificationUrl: `${b.url}/verification/${fresh}`,
    });
    const failed = byFile.get(bed.path('dir/b-failing.txt'))!;
    expect(failed).toMatchObject({
      schemaVersion: 1,
      file: bed.path('dir/b-failing.txt'),
      hash: failing,
      status: 'failed',
      error: { code: 'transient', exitCode: 4, message: expect.stringMatching(/503/) },
    });
    expect(Object.keys(failed.error!).sort()).toEqual(['code', 'exitCode', 'hint', 'message']);
    expect(failed.error!.hint).toContain(`notarize complete ${failing}`);
    expect(byFile.get(bed.path('dir/d-link.txt'))).toEqual({
      schemaVersion: 1,
      file: bed.path('dir/d-link.txt'),
      hash: null,
      status: 'skipped',
      reason: 'symbolic link (not followed)',
    });

    if (format === 'json') {
      // The array: processed items in input order, then the skipped ones.
      expect(results.map((r) => r.file)).toEqual([
        bed.path('dir/a-already.txt'),
        bed.path('dir/b-failing.txt'),
        bed.path('dir/c-new.txt'),
        bed.path('dir/d-link.txt'),
      ]);
      expect(run.stdout).toBe(`${JSON.stringify(results, null, 2)}\n`);
    } else {
      // NDJSON: one compact object per line; a skipped input as the walk meets it (last here, with -j 1).
      expect(results.map((r) => r.file)).toEqual([
        bed.path('dir/a-already.txt'),
        bed.path('dir/b-failing.txt'),
        bed.path('dir/c-new.txt'),
        bed.path('dir/d-link.txt'),
      ]);
      expect(run.stdout).toBe(results.map((r) => `${JSON.stringify(r)}\n`).join(''));
    }
    expect(run.stderr).toContain(`warning: skipped ${bed.path('dir/d-link.txt')}: symbolic link (not followed)`);
  });

  it('pending (--no-complete)', async () => {
    const b = bed;
    const one = await b.write('p1.txt', `pending one ${format}\n`);
    const two = await b.write('p2.txt', `pending two ${format}\n`);
    const run = await b.main([
      'register',
      bed.path('p1.txt'),
      bed.path('p2.txt'),
      '--no-complete',
      ...formatArgs(format),
    ]);
    expect(run.code, describeRun(run)).toBe(0);
    const results = parse(format, run);
    expect(results.map((r) => r.status)).toEqual(['pending', 'pending']);
    for (const r of results) {
      expect(Object.keys(r).sort()).toEqual([...KEYS.pending]);
      expect(r.hash).toBe(r.file === bed.path('p1.txt') ? one : two);
      // The session exactly as the service sent it, as stored for `notarize complete`.
      const stored = JSON.parse(readFileSync(`${b.onlyServiceDir()}/pending/${r.hash}.json`, 'utf8')) as {
        sessionJson: string;
      };
      expect(r.session).toEqual(JSON.parse(stored.sessionJson));
      expect(r.session).toHaveProperty('id');
    }
    expect(b.calls('forfait')).toBe(0);
    expect(b.pendingHashes()).toEqual([one, two].sort());
    expect(b.ledgerHashes()).toEqual([]);
  });
});

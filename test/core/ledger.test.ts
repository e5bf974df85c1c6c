/**
 * Verdicts from the local ledger alone (src/core/ledger.ts): by digest, by
 * file name for a modified document, and "unknown" with the reason when the
 * ledger's file for a digest is damaged.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LedgerIndex } from '../../src/core/ledger.js';
import { StoreError } from '../../src/errors.js';
import { ServiceStore, type LedgerEntry } from '../../src/store/service-store.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const tempDir = useTempDirs('notarize-ledger-');
const hashOf = (label: string) => createHash('sha256').update(label).digest('hex');

function entry(label: string, completedAt: string, name?: string): LedgerEntry {
  const hash = hashOf(label);
  return {
    hash,
    completedAt,
    ...(name === undefined ? {} : { file: { name, size: 1, lastModified: 0 } }),
    recordJson: JSON.stringify({ hash }),
  };
}

describe('LedgerIndex', () => {
  const v1 = entry('v1', '2024-01-01T00:00:00.000Z', 'contract.pdf');
  const v2 = entry('v2', '2024-02-01T00:00:00.000Z', 'contract.pdf');
  const bare = entry('bare', '2024-03-01T00:00:00.000Z');

  it('verifies a digest in the ledger, whatever the name', () => {
    const index = new LedgerIndex([v1, bare]);
    expect(index.verdict(v1.hash, 'renamed.pdf')).toEqual({ status: 'verified', entry: v1 });
    expect(index.verdict(bare.hash, undefined)).toEqual({ status: 'verified', entry: bare });
  });

  it('calls a known name with another digest modified, against its latest completion, in any order', () => {
    for (const entries of [
      [v1, v2],
      [v2, v1],
    ]) {
      const index = new LedgerIndex(entries);
      expect(index.verdict(hashOf('edited'), 'contract.pdf')).toEqual({
        status: 'modified',
        name: 'contract.pdf',
        sha256: v2.hash,
        completedAt: v2.completedAt,
        digests: 2,
      });
    }
  });

  it('verifies an older digest of a name notarized later with another, saying so; not the latest, nor under another name', () => {
    // r97: an older build swapped in was verified with no word of the later one.
    for (const entries of [
      [v1, v2],
      [v2, v1],
    ]) {
      const index = new LedgerIndex(entries);
      expect(index.verdict(v1.hash, 'contract.pdf')).toEqual({
        status: 'verified',
        entry: v1,
        laterNamesake: { name: 'contract.pdf', sha256: v2.hash, completedAt: v2.completedAt },
      });
      expect(index.verdict(v2.hash, 'contract.pdf')).toEqual({ status: 'verified', entry: v2 });
      expect(index.verdict(v1.hash, 'renamed.pdf')).toEqual({ status: 'verified', entry: v1 });
      expect(index.verdict(v1.hash, undefined)).toEqual({ status: 'verified', entry: v1 });
    }
    // The same digest notarized again after the other: its latest notarization is its own.
    const again = { ...v1, completedAt: '2024-03-01T00:00:00.000Z' };
    expect(new LedgerIndex([v2, again]).verdict(v1.hash, 'contract.pdf')).toEqual({ status: 'verified', entry: again });
  });

  it('verifies bytes it has under another name only, under a name notarized with other digests, saying so (r117, r118)', () => {
    const notes = entry('notes', '2024-01-15T00:00:00.000Z', 'NOTES.txt');
    const piped = entry('piped', '2024-01-20T00:00:00.000Z');
    // Whatever the dates: NOTES.txt's bytes copied over contract.pdf, or a copy of NOTES.txt named contract.pdf.
    for (const entries of [
      [v1, v2, notes, piped],
      [notes, piped, v2, v1],
    ]) {
      const index = new LedgerIndex(entries);
      const named = { name: 'contract.pdf', sha256: v2.hash, completedAt: v2.completedAt, digests: 2 };
      expect(index.verdict(notes.hash, 'contract.pdf')).toEqual({
        status: 'verified',
        entry: notes,
        namedOtherwise: { ...named, notarizedAs: 'NOTES.txt' },
      });
      expect(index.verdict(piped.hash, 'contract.pdf')).toEqual({
        status: 'verified',
        entry: piped,
        namedOtherwise: { ...named, notarizedAs: null },
      });
      // Its own name, a name the ledger never had, no name: nothing to say.
      expect(index.verdict(notes.hash, 'NOTES.txt')).toEqual({ status: 'verified', entry: notes });
      expect(index.verdict(notes.hash, 'copy-of-notes.txt')).toEqual({ status: 'verified', entry: notes });
      expect(index.verdict(notes.hash, undefined)).toEqual({ status: 'verified', entry: notes });
    }
  });

  it('knows nothing of an unknown digest under an unknown name, or with no name', () => {
    const index = new LedgerIndex([v1, bare]);
    expect(index.verdict(hashOf('other'), 'other.pdf')).toEqual({ status: 'unknown' });
    expect(index.verdict(hashOf('other'), undefined)).toEqual({ status: 'unknown' });
  });

  it('says a digest whose ledger file is damaged is unknown, with the damage, even under a known name', () => {
    const hash = hashOf('damaged');
    const problem = new StoreError(`/store/ledger/${hash}.json`, 'damaged');
    const index = new LedgerIndex([v1], [problem]);
    expect(index.verdict(hash, 'contract.pdf')).toEqual({ status: 'unknown', damaged: problem });
  });

  it('loads the ledger of a real store, its damaged files as problems', async () => {
    const store = new ServiceStore(join(tempDir(), 'service'), 'http://127.0.0.1:1');
    await store.saveRecord(v1);
    const damaged = hashOf('torn');
    mkdirSync(join(store.dir, 'ledger'), { recursive: true });
    writeFileSync(store.ledgerFile(damaged), '{"schemaVersion": 1, "hash"');

    const { index, problems } = await LedgerIndex.load(store);
    expect(problems).toHaveLength(1);
    expect(problems[0]!.file).toBe(store.ledgerFile(damaged));
    expect(index.verdict(v1.hash, undefined)).toEqual({ status: 'verified', entry: v1 });
    expect(index.verdict(damaged, undefined)).toEqual({ status: 'unknown', damaged: problems[0] });
  });
});

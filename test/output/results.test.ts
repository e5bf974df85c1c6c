/**
 * Item results (output/results.ts): the one builder and its shapes, the
 * compact copy kept for tables, and the collections batch runs hand their
 * results and checksums to (what they keep, stream, count and summarise).
 */
import { describe, expect, it } from 'vitest';
import { ExactJson } from '../../src/exact-json.js';
import { PROOF_TYPE, type InclusionProof } from '../../src/core/receipt-format.js';
import { InputFileError, ServiceRefusedError } from '../../src/errors.js';
import {
  Checksums,
  compact,
  embed,
  failedResult,
  itemResult,
  ItemResults,
  proofOf,
  RESULT_SCHEMA_VERSION,
  skippedResult,
  type Checksum,
  type ItemResult,
} from '../../src/output/results.js';

const HASH = 'ab'.repeat(32);

describe('building an item result', () => {
  it('puts the schema version, file, hash and status first, then the details in their order', () => {
    const result = itemResult('a.txt', HASH, 'registered', { verificationUrl: 'u', receipt: 'r' });
    expect(result).toEqual({
      schemaVersion: 1,
      file: 'a.txt',
      hash: HASH,
      status: 'registered',
      verificationUrl: 'u',
      receipt: 'r',
    });
    expect(Object.keys(result)).toEqual(['schemaVersion', 'file', 'hash', 'status', 'verificationUrl', 'receipt']);
    expect(RESULT_SCHEMA_VERSION).toBe(1);
  });

  it('skipped: no hash, and why', () => {
    expect(skippedResult('link', 'a symbolic link')).toEqual({
      schemaVersion: 1,
      file: 'link',
      hash: null,
      status: 'skipped',
      reason: 'a symbolic link',
    });
  });

  it('failed: the hash when known, and the error as JSON (its hint only when it has one)', () => {
    const refused = new ServiceRefusedError(400, 'bad request', { hint: 'check it' });
    expect(failedResult('a.txt', HASH, refused)).toEqual({
      schemaVersion: 1,
      file: 'a.txt',
      hash: HASH,
      status: 'failed',
      error: { code: 'refused', exitCode: 1, message: 'bad request', hint: 'check it' },
    });
    const unreadable = new InputFileError('b.txt', 'no such file or directory');
    expect(failedResult('b.txt', null, unreadable).error).toEqual({
      code: 'unreadable_file',
      exitCode: 2,
      message: "cannot read 'b.txt': no such file or directory",
    });
  });

  it('proof: the record as sent (null when this store has none) and the verification page', () => {
    expect(proofOf('https://s.example', HASH, '{"hash":"x","n":1}')).toEqual({
      record: ExactJson.of('{"hash":"x","n":1}'),
      verificationUrl: `https://s.example/verification/${HASH}`,
    });
    expect(proofOf('https://s.example', HASH, undefined).record).toBeNull();
  });

  it('embeds stored JSON as its text (written exactly), text that is not JSON as a string', () => {
    expect(embed('{"a":[1.0]}')).toEqual(ExactJson.of('{"a":[1.0]}'));
    expect((embed('{"a":[1.0]}') as ExactJson).text).toBe('{"a":[1.0]}');
    expect(embed('not json')).toBe('not json');
  });

  it('compact: without the record, session and proof, the rest untouched', () => {
    const proof: InclusionProof = { type: PROOF_TYPE, leafSalt: HASH, leafIndex: 0, treeSize: 1, path: [], root: HASH };
    const whole = itemResult('a', HASH, 'pending', { session: { id: 1 }, record: {}, verificationUrl: 'u', proof });
    expect(compact(whole)).toEqual({
      schemaVersion: 1,
      file: 'a',
      hash: HASH,
      status: 'pending',
      verificationUrl: 'u',
    });
    expect(whole.session).toEqual({ id: 1 });
  });
});

describe('ItemResults', () => {
  const results = ['a', 'b', 'c'].map((file, i) =>
    itemResult(file, HASH, i === 1 ? 'failed' : 'registered', { record: { file }, session: null }),
  );

  /** Adds the results out of input order (c, a, b), as a batch settles. */
  function settle(items: ItemResults): void {
    items.add(2, results[2]!);
    items.skip(skippedResult('link', 'a symbolic link'));
    items.add(0, results[0]!);
    items.add(1, results[1]!);
  }

  it('by default keeps every result whole, in input order, then the paths skipped', () => {
    const items = new ItemResults();
    settle(items);
    expect(items.keep).toBe('whole');
    expect(items.streams).toBe(false);
    expect(items.list()).toEqual([...results, skippedResult('link', 'a symbolic link')]);
    expect(items.summary()).toBe('4 items: 2 registered, 1 failed, 1 skipped');
    // Counts are of the items, not of the paths skipped.
    expect([...items.counts]).toEqual([
      ['registered', 2],
      ['failed', 1],
    ]);
  });

  it('compact: keeps results without their records', () => {
    const items = new ItemResults({ keep: 'compact' });
    settle(items);
    expect(items.list().slice(0, 3)).toEqual(results.map(compact));
  });

  it('streamed and keeping none: hands each result on as it comes, holds nothing, counts as settled', async () => {
    const streamed: ItemResult[] = [];
    let waited = 0;
    const items = new ItemResults({
      keep: 'none',
      onResult: (r) => streamed.push(r),
      ready: () => {
        waited++;
        return Promise.resolve();
      },
    });
    settle(items);
    await items.ready();
    expect(waited).toBe(1);
    expect(items.streams).toBe(true);
    expect(streamed.map((r) => r.file)).toEqual(['c', 'link', 'a', 'b']);
    expect(items.list()).toEqual([]);
    // The path skipped was printed, so the summary counts it, as a table's does (r101: "1 item" under two lines).
    expect(items.summary()).toBe('4 items: 2 registered, 1 failed, 1 skipped');
    expect([...items.counts]).toEqual([
      ['registered', 2],
      ['failed', 1],
    ]);
  });

  it('one item: the summary says "item"', () => {
    const items = new ItemResults();
    items.add(0, results[0]!);
    expect(items.summary()).toBe('1 item: 1 registered');
  });

  it('no item: the summary is "0 items", nothing after a colon, kept or streamed', () => {
    expect(new ItemResults().summary()).toBe('0 items');
    expect(new ItemResults({ keep: 'none' }).summary()).toBe('0 items');
  });
});

describe('Checksums', () => {
  const checksums: Checksum[] = [
    { file: 'a', hash: HASH },
    { file: 'b', error: new InputFileError('b', 'is a directory') },
  ];

  it('keeps every checksum in order by default, and hands each on as it comes', () => {
    const seen: Checksum[] = [];
    const kept = new Checksums({ onChecksum: (c) => seen.push(c) });
    for (const c of checksums) kept.add(c);
    expect(kept.list()).toEqual(checksums);
    expect(seen).toEqual(checksums);
  });

  it('keeps nothing when told, however many there are', async () => {
    const none = new Checksums({ keep: false });
    for (let i = 0; i < 1000; i++) none.add(checksums[0]!);
    expect(none.list()).toEqual([]);
    await expect(none.ready()).resolves.toBeUndefined();
  });
});

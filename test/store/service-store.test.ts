import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NewerStoreFileError, StoreError } from '../../src/errors.js';
import { jsonWithRows, ServiceStore, type LedgerEntry, type PendingEntry } from '../../src/store/service-store.js';
import { Store } from '../../src/store/store.js';
import { rejection, thrown } from '../helpers/catch.js';
import { readFixture } from '../helpers/fixtures.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const BASE_URL = 'http://127.0.0.1:8080';
const hashOf = (label: string) => createHash('sha256').update(label).digest('hex');
const mode = (path: string) => statSync(path).mode & 0o777;
const posix = process.platform !== 'win32';

function pending(hash: string, overrides: Partial<PendingEntry> = {}): PendingEntry {
  return {
    hash,
    description: `document ${hash.slice(0, 6)}`,
    custody: false,
    savedAt: '2024-01-01T12:00:00.000Z',
    file: { name: 'contract.pdf', size: 1024, lastModified: 1_700_000_000_000 },
    sessionJson: readFixture('session-free-plan.json'),
    ...overrides,
  };
}

/** The fixture record, as the service would send it for `hash` (a ledger entry must be a record of its hash). */
function record(hash: string): LedgerEntry {
  return {
    hash,
    completedAt: '2024-01-01T12:01:00.000Z',
    recordJson: readFixture('record.json').replace(/"hash": ?"[0-9a-f]{64}"/, (found) =>
      found.replace(/[0-9a-f]{64}/, hash),
    ),
  };
}

describe('ServiceStore', () => {
  const tempDir = useTempDirs();
  const serviceStore = () => new Store(tempDir()).service(BASE_URL);

  it('saves, reads and removes a pending session, its session text kept exactly', async () => {
    const store = serviceStore();
    const hash = hashOf('a');
    expect(store.readPending(hash)).toBeUndefined();
    await store.savePending(pending(hash));
    const read = store.readPending(hash);
    expect(read).toEqual(pending(hash));
    expect(read?.sessionJson).toBe(readFixture('session-free-plan.json'));
    await store.removePending(hash);
    expect(store.readPending(hash)).toBeUndefined();
    await store.removePending(hash);
  });

  it('replaces an earlier pending session of the same hash', async () => {
    const store = serviceStore();
    const hash = hashOf('a');
    await store.savePending(pending(hash, { description: 'first' }));
    await store.savePending(pending(hash, { description: 'second', sessionJson: readFixture('session-quirks.json') }));
    expect(store.readPending(hash)).toMatchObject({
      description: 'second',
      sessionJson: readFixture('session-quirks.json'),
    });
  });

  it('saves and reads a record, its record text kept exactly', async () => {
    const store = serviceStore();
    const hash = hashOf('r');
    expect(store.readRecord(hash)).toBeUndefined();
    await store.saveRecord(record(hash));
    const read = store.readRecord(hash);
    expect(read).toEqual(record(hash));
    expect(read?.recordJson).toBe(record(hash).recordJson);
    expect(read?.recordJson).not.toBe(readFixture('record.json'));
  });

  it('lists pending sessions and records sorted by hash, skipping other files', async () => {
    const store = serviceStore();
    const hashes = ['one', 'two', 'three', 'four'].map(hashOf);
    for (const hash of hashes) await store.savePending(pending(hash));
    for (const hash of hashes.slice(0, 2)) await store.saveRecord(record(hash));
    // A temporary file of a write in progress, and a stray file: neither is an entry.
    writeFileSync(join(store.dir, 'pending', `.${hashes[0]}.json.123.abcd.tmp`), '{');
    writeFileSync(join(store.dir, 'pending', 'notes.txt'), 'hello');

    const listed = await store.listPending();
    expect(listed.problems).toEqual([]);
    expect(listed.entries.map((e) => e.hash)).toEqual([...hashes].sort());
    const records = await store.listRecords();
    expect(records.entries.map((e) => e.hash)).toEqual(hashes.slice(0, 2).sort());
  });

  it('lists nothing for a service never used', async () => {
    const store = serviceStore();
    expect(await store.listPending()).toEqual({ entries: [], problems: [] });
    expect(await store.listRecords()).toEqual({ entries: [], problems: [] });
  });

  it('reports a truncated pending file by name and leaves its bytes unchanged', async () => {
    const store = serviceStore();
    const hash = hashOf('damaged');
    await store.savePending(pending(hash));
    const file = store.pendingFile(hash);
    truncateSync(file, 40);
    const before = readFileSync(file);

    const error = thrown(() => store.readPending(hash));
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ exitCode: 2, file });
    expect((error as StoreError).message).toContain(file);
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it('lists the readable entries and reports a damaged one in problems, leaving it unchanged', async () => {
    const store = serviceStore();
    const good = [hashOf('good-1'), hashOf('good-2')];
    const bad = hashOf('bad');
    for (const hash of [...good, bad]) await store.savePending(pending(hash));
    truncateSync(store.pendingFile(bad), 25);
    const before = readFileSync(store.pendingFile(bad));

    const listed = await store.listPending();
    expect(listed.entries.map((e) => e.hash)).toEqual([...good].sort());
    expect(listed.problems).toHaveLength(1);
    expect(listed.problems[0]).toBeInstanceOf(StoreError);
    expect(listed.problems[0]?.file).toBe(store.pendingFile(bad));
    expect(readFileSync(store.pendingFile(bad)).equals(before)).toBe(true);
  });

  it.each([
    ['a pending file', 'pending', '"custody": false', '"custody": "no"', 'custody'],
    ['a ledger file of another schemaVersion', 'ledger', '"schemaVersion": 1', '"schemaVersion": 0', 'schemaVersion'],
  ] as const)(
    'reports %s (valid JSON, wrong shape) as damaged, naming the field, leaving it unchanged',
    async (_, kind, from, to, field) => {
      const store = serviceStore();
      const hash = hashOf('shape');
      await (kind === 'pending' ? store.savePending(pending(hash)) : store.saveRecord(record(hash)));
      const file = kind === 'pending' ? store.pendingFile(hash) : store.ledgerFile(hash);
      const text = readFileSync(file, 'utf8').replace(from, to);
      writeFileSync(file, text);
      const error = thrown(() => (kind === 'pending' ? store.readPending(hash) : store.readRecord(hash)));
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).message).toContain(field);
      expect(readFileSync(file, 'utf8')).toBe(text);
    },
  );

  it("a file of a newer store version: said to be a newer notarize's (not damaged, no repair by hand), left unchanged", async () => {
    const store = serviceStore();
    const hash = hashOf('newer');
    await store.saveRecord(record(hash));
    const file = store.ledgerFile(hash);
    const text = readFileSync(file, 'utf8').replace('"schemaVersion": 1', '"schemaVersion": 2');
    writeFileSync(file, text);
    const error = thrown(() => store.readRecord(hash));
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).message).toBe(
      `store file ${file} was written by a newer notarize (store version 2; this one reads 1)`,
    );
    expect((error as StoreError).hint).toContain('newer notarize');
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  it("a newer notarize's pending session is never moved aside as damaged: retiring it is refused, the file left", async () => {
    const store = serviceStore();
    const hash = hashOf('newer pending');
    await store.savePending(pending(hash));
    const file = store.pendingFile(hash);
    const text = readFileSync(file, 'utf8').replace('"schemaVersion": 1', '"schemaVersion": 3');
    writeFileSync(file, text);
    const error = await rejection(store.retirePending(hash, 'dropped by hand', new Date()));
    expect(error).toBeInstanceOf(NewerStoreFileError);
    expect(readFileSync(file, 'utf8')).toBe(text);
    expect(existsSync(join(store.dir, 'retired'))).toBe(false);
  });

  it('lists the custody metadata owed by registrations the ledger has, not that of a hash still without a record', async () => {
    const store = serviceStore();
    const [recorded, pendingOnly, damaged] = [hashOf('owed recorded'), hashOf('owed pending'), hashOf('owed damaged')];
    for (const hash of [recorded, pendingOnly, damaged]) {
      await store.saveCustodyOwed({ hash, savedAt: '2026-11-26T00:00:00.000Z', metadataJson: '{}' });
    }
    await store.saveRecord(record(recorded));
    await store.saveRecord(record(damaged));
    writeFileSync(store.custodyFile(damaged), 'garbage');
    const { entries, problems } = await store.listCustodyOwedOfRecords();
    expect(entries.map((entry) => entry.hash)).toEqual([recorded]);
    expect(problems.map((problem) => problem.file)).toEqual([store.custodyFile(damaged)]);
  });

  it.runIf(posix)('creates its directories 0700 and its files 0600', async () => {
    const store = serviceStore();
    const hash = hashOf('modes');
    await store.savePending(pending(hash));
    await store.saveRecord(record(hash));
    expect(mode(join(store.dir, 'pending'))).toBe(0o700);
    expect(mode(join(store.dir, 'ledger'))).toBe(0o700);
    expect(mode(store.pendingFile(hash))).toBe(0o600);
    expect(mode(store.ledgerFile(hash))).toBe(0o600);
    const lock = store.lockFile(hash);
    expect(mode(join(store.dir, 'locks'))).toBe(0o700);
    expect(lock).toBe(join(store.dir, 'locks', `${hash}.lock`));
  });

  it('leaves no temporary files behind after saving', async () => {
    const store = serviceStore();
    const hash = hashOf('tmp');
    await store.savePending(pending(hash));
    await store.savePending(pending(hash, { description: 'again' }));
    expect(readdirSync(join(store.dir, 'pending'))).toEqual([`${hash}.json`]);
  });

  it("writes every versioned file with the store's schemaVersion first, and hands entries out without it", async () => {
    const store = serviceStore();
    const hash = hashOf('versioned');
    const at = new Date('2024-01-02T03:04:05.678Z');
    const text = (value: object) => `${JSON.stringify(value, null, 2)}\n`;
    await store.savePending(pending(hash));
    expect(readFileSync(store.pendingFile(hash), 'utf8')).toBe(text({ schemaVersion: 1, ...pending(hash) }));
    await store.saveRecord(record(hash));
    expect(readFileSync(store.ledgerFile(hash), 'utf8')).toBe(text({ schemaVersion: 1, ...record(hash) }));
    const unanswered = { hash, description: 'asked', requestedAt: at.toISOString() };
    await store.markUnanswered(unanswered);
    expect(readFileSync(store.unansweredFile(hash), 'utf8')).toBe(text({ schemaVersion: 1, ...unanswered }));
    // Entries are handed out without the version, and saved again the same.
    expect(store.readPending(hash)).toEqual(pending(hash));
    await store.savePending(store.readPending(hash)!);
    expect(readFileSync(store.pendingFile(hash), 'utf8')).toBe(text({ schemaVersion: 1, ...pending(hash) }));
    expect(store.readUnanswered(hash)).toEqual(unanswered);
    const retired = await store.retirePending(hash, 'why', at);
    expect(retired).toBe(store.retiredFile(hash, at));
    expect(readFileSync(retired!, 'utf8')).toBe(
      text({ schemaVersion: 1, ...pending(hash), retiredAt: at.toISOString(), retiredBecause: 'why' }),
    );
  });

  it('can be built directly on a directory, keeping two services apart', async () => {
    const dir = tempDir();
    const a = new ServiceStore(join(dir, 'a'), 'https://a.example');
    const b = new ServiceStore(join(dir, 'b'), 'https://b.example');
    const hash = hashOf('shared');
    await a.savePending(pending(hash));
    expect(b.readPending(hash)).toBeUndefined();
    expect(a.readPending(hash)).toBeDefined();
  });

  it('refuses an entry whose file names another hash, or whose record is of another hash', async () => {
    const store = serviceStore();
    const [a, b] = [hashOf('a'), hashOf('b')];
    await store.savePending(pending(a));
    writeFileSync(store.pendingFile(b), readFileSync(store.pendingFile(a)));
    expect((thrown(() => store.readPending(b)) as StoreError).message).toContain(
      `it holds hash ${a}, not the ${b} its name says`,
    );
    await store.saveRecord({ ...record(a), recordJson: record(b).recordJson });
    expect((thrown(() => store.readRecord(a)) as StoreError).message).toContain(`its record is of hash ${b}, not ${a}`);
    await store.saveRecord({ ...record(a), recordJson: '{"status":"registered"}' });
    expect((thrown(() => store.readRecord(a)) as StoreError).message).toContain('its record is of hash (none)');
  });

  it('refuses a pending file whose session is not the text of a JSON object', async () => {
    const store = serviceStore();
    const hash = hashOf('text');
    for (const sessionJson of ['not json', '[1]', 'null']) {
      await store.savePending(pending(hash, { sessionJson }));
      expect((thrown(() => store.readPending(hash)) as StoreError).message).toContain(
        'expected the text of a JSON object',
      );
    }
  });

  it('removes a session left beside its record when provably a leftover; sends none but one that follows that record', async () => {
    const store = serviceStore();
    const hash = hashOf('leftover');
    await store.saveRecord(record(hash)); // completed at 12:01
    const completedAt = store.readRecord(hash)!.completedAt;
    await store.savePending(pending(hash, { savedAt: '2024-01-01T12:02:00.000Z', follows: completedAt }));
    store.removeLeftoverPending(store.readRecord(hash)!);
    expect(store.readPending(hash)?.follows).toBe(completedAt);
    // Saved before the record, or following another record: a leftover, removed.
    for (const left of [
      pending(hash),
      pending(hash, { savedAt: '2024-01-01T12:02:00.000Z', follows: '2023-12-31T00:00:00.000Z' }),
    ]) {
      await store.savePending(left);
      expect(store.isLeftover(left)).toBe(true);
      store.removeLeftoverPending(store.readRecord(hash)!);
      expect(store.readPending(hash)).toBeUndefined();
    }
    // No mark and dated after the record (an older notarize's --force --no-complete, or a clock ahead):
    // never sent (a leftover to `complete`), and not removed either (its session may be a paid one).
    const unmarked = pending(hash, { savedAt: '2024-01-01T13:00:00.000Z' });
    await store.savePending(unmarked);
    expect(store.isLeftover(unmarked)).toBe(true);
    store.removeLeftoverPending(store.readRecord(hash)!);
    expect(store.readPending(hash)).toEqual(unmarked);
    // A damaged one stays, for a person to look at.
    writeFileSync(store.pendingFile(hash), '{');
    store.removeLeftoverPending(store.readRecord(hash)!);
    expect(readFileSync(store.pendingFile(hash), 'utf8')).toBe('{');
  });

  it("an older build's custody metadata owed, kept in the ledger record: read, and gone from it once taken", async () => {
    const store = serviceStore();
    const hash = hashOf('owed by an older build');
    await store.saveRecord(record(hash));
    // As the builds of 2026-11-26 from b57b6c0 wrote it: a field of the ledger record.
    const metadataJson = `{"hash":"${hash}","name":"c.txt","type":"text/plain","size":3,"lastModified":1,"userId":1390}`;
    const file = store.ledgerFile(hash);
    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), custodyOwed: metadataJson }));
    expect(store.readCustodyOwed(hash)).toEqual({ hash, savedAt: '2024-01-01T12:01:00.000Z', metadataJson });
    await store.removeCustodyOwed(hash);
    expect(store.readCustodyOwed(hash)).toBeUndefined();
    expect(JSON.parse(readFileSync(file, 'utf8'))).not.toHaveProperty('custodyOwed');
    expect(store.readRecord(hash)).toEqual(record(hash));
  });

  it('retires a damaged pending file as it is, bytes untouched, and nothing when none is pending', async () => {
    const store = serviceStore();
    const hash = hashOf('retire damaged');
    const at = new Date('2024-05-06T07:08:09.010Z');
    expect(await store.retirePending(hash, 'why', at)).toBeUndefined();
    await store.savePending(pending(hash));
    writeFileSync(store.pendingFile(hash), '{"torn"');
    const retired = await store.retirePending(hash, 'why', at);
    expect(retired).toBe(join(store.dir, 'retired', `${hash}.2024-05-06T07-08-09-010Z.damaged.json`));
    expect(readFileSync(retired!, 'utf8')).toBe('{"torn"');
    expect(store.readPending(hash)).toBeUndefined();
  });

  it('keeps a forfait answer aside in quarantine/, one file per event', async () => {
    const store = serviceStore();
    const hash = hashOf('quarantine');
    const at = new Date('2024-05-06T07:08:09.010Z');
    const file = await store.quarantine(hash, '{"hash":"other"}', 'not its record', at);
    expect(file).toBe(join(store.dir, 'quarantine', `${hash}.2024-05-06T07-08-09-010Z.json`));
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      hash,
      receivedAt: at.toISOString(),
      reason: 'not its record',
      answerText: '{"hash":"other"}',
    });
  });

  it("lists a hash's answers kept in quarantine/, oldest first, and none without the folder", async () => {
    const store = serviceStore();
    const [hash, other] = [hashOf('kept'), hashOf('other kept')];
    expect(await store.quarantinedAnswers(hash)).toEqual([]);
    const later = await store.quarantine(hash, 'b', 'why', new Date('2024-05-06T07:08:10.000Z'));
    await store.quarantine(other, 'c', 'why', new Date('2024-05-06T07:08:08.000Z'));
    const earlier = await store.quarantine(hash, 'a', 'why', new Date('2024-05-06T07:08:09.000Z'));
    expect(await store.quarantinedAnswers(hash)).toEqual([earlier, later]);
  });

  it('keeps, lists and forgets unread request steps', async () => {
    const store = serviceStore();
    const hashes = [hashOf('u2'), hashOf('u1')];
    for (const hash of hashes) await store.markUnanswered({ hash, description: 'd', requestedAt: 'then' });
    const listed = await store.listUnanswered();
    expect(listed.entries.map((e) => e.hash)).toEqual([...hashes].sort());
    store.clearUnanswered(hashes[0]!);
    store.clearUnanswered(hashes[0]!);
    expect(store.readUnanswered(hashes[0]!)).toBeUndefined();
  });

  it('names the hashes with a lock, a session or a record in one listing per folder, or leaves them to lookups', async () => {
    const store = serviceStore();
    // A store never used: nothing named, nothing made.
    expect(store.namedHashes(10)).toEqual(new Set());
    const [locked, pendingHash, recorded, writing] = ['locked', 'pending', 'recorded', 'writing'].map(hashOf);
    await store.savePending(pending(pendingHash!));
    await store.saveRecord(record(recorded!));
    writeFileSync(store.lockFile(locked!), '');
    // A temporary file on its way to becoming a record names its hash too.
    writeFileSync(join(store.dir, 'ledger', `.${writing}.json.1234.5.tmp`), '');
    expect(store.namedHashes(10)).toEqual(new Set([locked, pendingHash, recorded, writing]));
    // Folders too large for their listing to pay off against no lookups at all: none listed.
    expect(store.namedHashes(0)).toBeUndefined();
  });

  it.runIf(posix)('leaves a folder that is a link to the lookups', async () => {
    const store = serviceStore();
    await store.saveRecord(record(hashOf('recorded')));
    const elsewhere = join(tempDir(), 'pending');
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, join(store.dir, 'pending'));
    expect(store.namedHashes(10)).toBeUndefined();
  });

  it('a kind of entry that cannot be listed is an error, not an empty list', async () => {
    const store = serviceStore();
    await store.saveRecord(record(hashOf('x')));
    writeFileSync(join(store.dir, 'pending'), 'a file where the directory should be');
    await expect(store.listPending()).rejects.toMatchObject({ code: 'ENOTDIR' });
  });
});

describe('jsonWithRows', () => {
  it('is the value as JSON, its rows one per line, with any number of rows', () => {
    for (const rows of [[], [{ a: 1 }], [{ a: 1 }, { b: 'two\nlines' }, [3]]]) {
      const value = { schemaVersion: 1, name: 'x', rows };
      const text = [...jsonWithRows(value, 'rows')].join('');
      expect(JSON.parse(text)).toEqual(value);
      expect(text.split('\n').filter((line) => line.startsWith('    '))).toHaveLength(rows.length);
      expect(text.endsWith('}\n')).toBe(true);
    }
  });
});

import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StoreError } from '../../src/errors.js';
import { ServiceStore, type LedgerEntry, type PendingEntry } from '../../src/store/service-store.js';
import { Store } from '../../src/store/store.js';
import { thrown } from '../helpers/catch.js';
import { readFixture } from '../helpers/fixtures.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const BASE_URL = 'http://127.0.0.1:8080';
const hashOf = (label: string) => createHash('sha256').update(label).digest('hex');
const mode = (path: string) => statSync(path).mode & 0o777;
const posix = process.platform !== 'win32';

function pending(hash: string, overrides: Partial<PendingEntry> = {}): Omit<PendingEntry, 'schemaVersion'> {
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
function record(hash: string): Omit<LedgerEntry, 'schemaVersion'> {
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
    expect(read).toEqual({ schemaVersion: 1, ...pending(hash) });
    expect(read?.sessionJson).toBe(readFixture('session-free-plan.json'));
    store.removePending(hash);
    expect(store.readPending(hash)).toBeUndefined();
    store.removePending(hash);
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
    expect(read).toEqual({ schemaVersion: 1, ...record(hash) });
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

  it('reports a pending file of valid JSON but the wrong shape, naming the field', async () => {
    const store = serviceStore();
    const hash = hashOf('shape');
    await store.savePending(pending(hash));
    const file = store.pendingFile(hash);
    const text = readFileSync(file, 'utf8').replace('"custody": false', '"custody": "no"');
    writeFileSync(file, text);
    const error = thrown(() => store.readPending(hash));
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).message).toContain('custody');
    expect(readFileSync(file, 'utf8')).toBe(text);
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

  it('can be built directly on a directory, keeping two services apart', async () => {
    const dir = tempDir();
    const a = new ServiceStore(join(dir, 'a'), 'https://a.example');
    const b = new ServiceStore(join(dir, 'b'), 'https://b.example');
    const hash = hashOf('shared');
    await a.savePending(pending(hash));
    expect(b.readPending(hash)).toBeUndefined();
    expect(a.readPending(hash)).toBeDefined();
  });
});

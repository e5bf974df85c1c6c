/**
 * The local ledger, with no network: documents are registered against a
 * sandbox which is then closed (same base URL, so the same ledger, but any
 * request would now fail), and verify/list/show answer from the ledger alone.
 */
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { execFileSync } from 'node:child_process';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { Bed, type BedMainOptions } from '../helpers/bed.js';
import { describeRun, type Run } from '../helpers/cli.js';
import { jsonError, parseNdjson, parseResults } from '../helpers/results.js';

let bed: Bed;
const hashes: Record<string, string> = {};
const records = new Map<string, unknown>();

beforeAll(async () => {
  bed = await Bed.create({ keyInEnv: true });
  for (const name of ['a.txt', 'b.txt', 'c.txt']) hashes[name] = await bed.write(name, `ledger document ${name}\n`);
  // Same base name as b.txt, other content: "modified".
  hashes['moved/b.txt'] = await bed.write('moved/b.txt', 'b.txt, edited after notarization\n');
  hashes['unknown.txt'] = await bed.write('unknown.txt', 'never notarized\n');
  const run = await bed.main(['register', ...['a.txt', 'b.txt', 'c.txt'].map((name) => bed.path(name)), '--json']);
  expect(run.code, describeRun(run)).toBe(0);
  for (const [hash, record] of bed.sandbox.records) records.set(hash, record);
  expect(records.size).toBe(3);
  // From here on nothing listens at the base URL: a request would fail with exit 4.
  await bed.sandbox.close();
});
afterAll(async () => {
  await bed?.finish();
});

// Each test gets its own copy of the registered store, so no test sees another's changes.
let store = '';
let copies = 0;
beforeEach(async () => {
  store = join(bed.root, `store-copy-${++copies}`);
  await cp(bed.storeDir, store, { recursive: true });
});

/** The last line of `text` (the run's failure, after the results). */
const lastLine = (text: string): string => text.trimEnd().split('\n').at(-1) ?? '';

/** Runs notarize on this test's copy of the store, in-process (documents named by absolute path). */
function offline(args: string[], options: BedMainOptions = {}): Promise<Run> {
  return bed.main(args, { ...options, env: { ...options.env, NOTARIZE_CONFIG_DIR: store } });
}

describe('verify, with no store it can use', () => {
  it('none there: receipts decide, the ledger is none, nothing is made; one the store refuses: a warning, receipts decide', async () => {
    const receipt = bed.path('a.txt.notarization.json');
    // Beside a.txt it would decide the later tests' verify: gone even if this test fails.
    onTestFinished(() => rmSync(receipt, { force: true }));
    const made = await offline(['receipt', bed.path('a.txt'), '-o', receipt]);
    expect(made.code, describeRun(made)).toBe(0);
    const missing = join(bed.root, 'no-store-here');
    const none = await bed.main(['verify', bed.path('a.txt'), bed.path('b.txt'), '--json'], {
      env: { NOTARIZE_CONFIG_DIR: missing },
    });
    expect(none.code, describeRun(none)).toBe(6);
    expect(parseResults(none.stdout).map((r) => [r.status, r.source])).toEqual([
      ['verified', 'receipt'],
      ['unknown', undefined],
    ]);
    expect(existsSync(missing)).toBe(false);
    // Its last line says what was searched: receipts alone, no ledger.
    expect(lastLine(none.stderr)).toContain('no ledger was searched (no usable store)');
    expect(none.stderr).not.toContain('was searched)');
    // World-writable (anyone could have planted a record there): not read, and said so; receipts still decide.
    chmodSync(store, 0o1777);
    const shared = await offline(['verify', bed.path('a.txt'), bed.path('b.txt'), '--json']);
    expect(shared.code, describeRun(shared)).toBe(6);
    expect(parseResults(shared.stdout).map((r) => r.status)).toEqual(['verified', 'unknown']);
    expect(shared.stderr).toContain(`cannot use the store directory ${store}: it is world-writable`);
    expect(shared.stderr).toContain('documents are checked against their receipts only');
    expect(lastLine(shared.stderr)).toContain(
      'unknown: give its receipt (--receipt, --receipt-dir, or <document>.notarization.json beside it); ' +
        'no ledger was searched (no usable store)',
    );
    expect(shared.stderr).not.toContain(`the ledger of ${bed.url} was searched`);
    // The same with --receipt-dir: not "the ledger of … has none".
    const withDir = await offline([
      'verify',
      bed.path('b.txt'),
      '--receipt-dir',
      mkdtempSync(join(bed.root, 'no-receipts-')),
      '--json',
    ]);
    expect(withDir.code, describeRun(withDir)).toBe(6);
    expect(lastLine(withDir.stderr)).toContain(`and no ledger was searched (no usable store): check --receipt-dir (`);
    expect(withDir.stderr).not.toContain('the ledger of');
  });

  it('a shared folder it cannot use, the documents in it (NOTARIZE_CONFIG_DIR=/tmp): receipts decide; only what notarize keeps there is the store', async () => {
    // r101: every document under it was taken for the store's, and verify ended "no documents".
    const shared = mkdtempSync(join(bed.root, 'shared-'));
    const doc = join(shared, 'work', 'a.txt');
    mkdirSync(join(shared, 'work'));
    copyFileSync(bed.path('a.txt'), doc);
    const made = await offline(['receipt', doc, '-o', `${doc}.notarization.json`]);
    expect(made.code, describeRun(made)).toBe(0);
    writeFileSync(join(shared, 'config.json'), '{}\n');
    mkdirSync(join(shared, 'services'));
    writeFileSync(join(shared, 'services', 'x.json'), '{}\n');
    chmodSync(shared, 0o1777);
    const env = { NOTARIZE_CONFIG_DIR: shared };
    const named = await bed.main(['verify', doc, '--json'], { env });
    expect(named.code, describeRun(named)).toBe(0);
    expect(named.stderr).toContain(`cannot use the store directory ${shared}: it is world-writable`);
    expect(named.stderr).toContain('documents are checked against their receipts only');
    const walked = await bed.main(['verify', '-r', join(shared, 'work'), '--json'], { env });
    expect(walked.code, describeRun(walked)).toBe(0);
    expect(
      parseResults(walked.stdout)
        .map((r) => [r.file, r.status, r.source])
        .sort(),
    ).toEqual([
      [doc, 'verified', 'receipt'],
      [`${doc}.notarization.json`, 'skipped', undefined],
    ]);
    // What notarize keeps at its top is still never a document, walked or named.
    const whole = await bed.main(['verify', '-r', shared, '--json'], { env });
    expect(whole.code, describeRun(whole)).toBe(2);
    expect(
      parseResults(whole.stdout)
        .map((r) => [r.file, r.status, r.error?.code])
        .sort(),
    ).toEqual([
      [join(shared, 'config.json'), 'failed', 'store_inside'],
      [join(shared, 'services'), 'failed', 'store_inside'],
      [doc, 'verified', undefined],
      [`${doc}.notarization.json`, 'skipped', undefined],
    ]);
    const inside = await bed.main(['verify', join(shared, 'services', 'x.json'), '--json'], { env });
    expect(inside.code, describeRun(inside)).toBe(2);
    expect(jsonError(inside.stderr).code).toBe('no_documents');
  });
});

describe('verify, with the store named through a link', () => {
  it('the folder it leads to holds the token: its credentials.json is no document (r109)', async () => {
    const link = join(bed.root, 'store-link');
    symlinkSync(store, link);
    const run = await bed.main(['verify', '-r', store, '--output', 'ndjson'], { env: { NOTARIZE_CONFIG_DIR: link } });
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).toContain(`cannot use the store directory ${link}: it is a symbolic link`);
    const results = parseNdjson(run.stdout);
    expect(results.filter((r) => r.file === join(store, 'credentials.json'))).toMatchObject([
      { status: 'failed', error: { code: 'store_inside' } },
    ]);
    expect(results.filter((r) => r.status !== 'failed')).toEqual([]);
  });
});

describe('verify, with a part of the store it cannot use', () => {
  it('config.json damaged or a FIFO, a ledger that is a link, a service folder anyone can write: a warning, receipts decide (r108)', async () => {
    const receipts = mkdtempSync(join(bed.root, 'receipts-'));
    const made = await offline(['receipt', bed.path('a.txt'), '-o', join(receipts, 'a.txt.notarization.json')]);
    expect(made.code, describeRun(made)).toBe(0);
    const [service] = readdirSync(join(store, 'services'));
    const serviceDir = join(store, 'services', service!);
    const ledger = join(serviceDir, 'ledger');
    // config.json is read for the base URL when neither the flag nor the environment gives it; a service's
    // folders when that base URL is the sandbox's.
    const unset: string[] = [];
    const given = ['--base-url', bed.url];
    const spoilt: [string, string[], () => void, () => void][] = [
      [
        'is damaged (not valid JSON)',
        unset,
        () => writeFileSync(join(store, 'config.json'), '{bad', { mode: 0o600 }),
        () => rmSync(join(store, 'config.json')),
      ],
      [
        'it is not a regular file',
        unset,
        () => execFileSync('mkfifo', [join(store, 'config.json')]),
        () => rmSync(join(store, 'config.json')),
      ],
      [
        'it is a symbolic link',
        given,
        () => {
          renameSync(ledger, `${ledger}.real`);
          symlinkSync(`${ledger}.real`, ledger);
        },
        () => {
          rmSync(ledger);
          renameSync(`${ledger}.real`, ledger);
        },
      ],
      ['it is world-writable', given, () => chmodSync(serviceDir, 0o777), () => chmodSync(serviceDir, 0o700)],
    ];
    for (const [warning, baseUrl, spoil, mend] of spoilt) {
      spoil();
      const run = await offline(
        ['verify', bed.path('a.txt'), '--receipt-dir', receipts, '--output', 'ndjson', ...baseUrl],
        {
          env: { NOTARIZE_BASE_URL: '' },
          // verify sends nothing: with no base URL given, config.json's is the one read.
          noBaseUrlCheck: true,
        },
      );
      mend();
      expect(run.code, describeRun(run)).toBe(0);
      expect(parseNdjson(run.stdout).map((r) => [r.status, r.source])).toEqual([['verified', 'receipt']]);
      expect(run.stderr).toContain(warning);
      expect(run.stderr).toContain('documents are checked against their receipts only');
    }
    // Mended: the ledger is read again (b.txt has no receipt there).
    const whole = await offline([
      'verify',
      bed.path('b.txt'),
      '--receipt-dir',
      receipts,
      '--output',
      'ndjson',
      '--base-url',
      bed.url,
    ]);
    expect(parseNdjson(whole.stdout).map((r) => [r.status, r.source])).toEqual([['verified', 'ledger']]);
  });
});

describe('verify, with no network', () => {
  it('a registered file: exit 0, the record and its /verification/<hash> URL', async () => {
    const hash = hashes['a.txt']!;
    const run = await offline(['verify', bed.path('a.txt')]);
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stderr).toBe(`verified: ${bed.path('a.txt')} is notarized\n`);
    expect(run.stdout).toMatch(new RegExp(`^hash +${hash}$`, 'm'));
    expect(run.stdout).toMatch(/^description +a\.txt$/m);
    expect(run.stdout).toMatch(new RegExp(`^verification +${bed.url}/verification/${hash}$`, 'm'));

    const json = await offline(['verify', bed.path('a.txt'), '--json']);
    expect(json.code, describeRun(json)).toBe(0);
    // The record exactly as the service sent it.
    expect(json.stdout).toBe(`${JSON.stringify(records.get(hash))}\n`);
  });

  it('several registered files: a --json array with record and verificationUrl', async () => {
    const run = await offline(['verify', bed.path('a.txt'), bed.path('b.txt'), bed.path('c.txt'), '--json']);
    expect(run.code, describeRun(run)).toBe(0);
    expect(parseResults(run.stdout)).toEqual(
      ['a.txt', 'b.txt', 'c.txt'].map((file) => ({
        schemaVersion: 1,
        file: bed.path(file),
        hash: hashes[file],
        status: 'verified',
        source: 'ledger',
        record: records.get(hashes[file]!),
        verificationUrl: `${bed.url}/verification/${hashes[file]}`,
      })),
    );
    expect(run.stderr).toContain('3 items: 3 verified');
  });

  it('a modified file (same name, other content) and an unknown file: exit 6', async () => {
    const run = await offline([
      'verify',
      bed.path('a.txt'),
      bed.path('moved/b.txt'),
      bed.path('unknown.txt'),
      '--json',
    ]);
    expect(run.code, describeRun(run)).toBe(6);
    const results = parseResults(run.stdout);
    expect(results.map((r) => [r.file, r.hash, r.status])).toEqual([
      [bed.path('a.txt'), hashes['a.txt'], 'verified'],
      [bed.path('moved/b.txt'), hashes['moved/b.txt'], 'modified'],
      [bed.path('unknown.txt'), hashes['unknown.txt'], 'unknown'],
    ]);
    expect(results[1]!.reason).toContain(`'b.txt' was notarized with digest ${hashes['b.txt']}`);
    expect(results[1]!.record).toBeUndefined();
    expect(results[2]).toEqual({
      schemaVersion: 1,
      file: bed.path('unknown.txt'),
      hash: hashes['unknown.txt'],
      status: 'unknown',
    });
    expect(jsonError(run.stderr)).toMatchObject({ code: 'not_notarized', exitCode: 6 });
  });

  it('one modified file, one unknown file: exit 6 each, with a table on stdout', async () => {
    const modified = await offline(['verify', bed.path('moved/b.txt')]);
    expect(modified.code, describeRun(modified)).toBe(6);
    expect(modified.stdout).toMatch(
      new RegExp(`^modified +[0-9a-f]{64} +${bed.path('moved/b.txt')} +'b\\.txt' was notarized with digest`, 'm'),
    );
    expect(modified.stderr).toMatch(/^notarize: 1 of 1 document is not verified \(1 modified\)/m);
    const unknown = await offline(['verify', bed.path('unknown.txt')]);
    expect(unknown.code, describeRun(unknown)).toBe(6);
    expect(unknown.stdout).toMatch(new RegExp(`^unknown +[0-9a-f]{64} +${bed.path('unknown.txt')}$`, 'm'));
  });

  it('reads a document from standard input', async () => {
    const run = await offline(['verify', '-', '--json'], { input: 'ledger document c.txt\n' });
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stdout).toBe(`${JSON.stringify(records.get(hashes['c.txt']!))}\n`);
  });
});

describe('list and show, with no network', () => {
  it('list prints a table of the ledger', async () => {
    const run = await offline(['list']);
    expect(run.code, describeRun(run)).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^HASH +COMPLETED +FILE +DESCRIPTION$/);
    expect(lines).toHaveLength(4);
    for (const name of ['a.txt', 'b.txt', 'c.txt']) {
      expect(run.stdout).toMatch(
        new RegExp(`^${hashes[name]} +\\S+ +${name.replace('.', '\\.')} +${name.replace('.', '\\.')}$`, 'm'),
      );
    }
  });

  it('list --json prints an array with the records as the service sent them', async () => {
    const run = await offline(['list', '--json']);
    expect(run.code, describeRun(run)).toBe(0);
    const rows = JSON.parse(run.stdout) as {
      hash: string;
      file: string;
      completedAt: string;
      verificationUrl: string;
      record: unknown;
    }[];
    expect(Array.isArray(rows)).toBe(true);
    expect(rows).toHaveLength(3);
    expect(rows.map((r) => r.hash).sort()).toEqual([hashes['a.txt'], hashes['b.txt'], hashes['c.txt']].sort());
    for (const row of rows) {
      expect(Object.keys(row).sort()).toEqual(['completedAt', 'file', 'hash', 'record', 'verificationUrl']);
      expect(row.record).toEqual(records.get(row.hash));
      expect(row.verificationUrl).toBe(`${bed.url}/verification/${row.hash}`);
      expect(hashes[row.file]).toBe(row.hash);
      expect(Number.isNaN(Date.parse(row.completedAt))).toBe(false);
    }
  });

  it('show <hash> and show <file> print the record; --json prints it exactly', async () => {
    const hash = hashes['b.txt']!;
    const byHash = await offline(['show', hash]);
    expect(byHash.code, describeRun(byHash)).toBe(0);
    expect(byHash.stdout).toMatch(new RegExp(`^verification +${bed.url}/verification/${hash}$`, 'm'));
    const byUpperHash = await offline(['show', hash.toUpperCase(), '--json']);
    expect(byUpperHash.code, describeRun(byUpperHash)).toBe(0);
    expect(byUpperHash.stdout).toBe(`${JSON.stringify(records.get(hash))}\n`);
    const byFile = await offline(['show', bed.path('b.txt'), '--json']);
    expect(byFile.code, describeRun(byFile)).toBe(0);
    expect(byFile.stdout).toBe(`${JSON.stringify(records.get(hash))}\n`);
  });

  it('show exits 6 for a hash or a file that is not in the ledger', async () => {
    const absent = 'f'.repeat(64);
    const byHash = await offline(['show', absent]);
    expect(byHash.code, describeRun(byHash)).toBe(6);
    expect(byHash.stdout).toBe('');
    expect(byHash.stderr).toMatch(new RegExp(`^notarize: ${absent} is not in the ledger of ${bed.url}`, 'm'));
    const byFile = await offline(['show', bed.path('moved/b.txt'), '--json']);
    expect(byFile.code, describeRun(byFile)).toBe(6);
    expect(JSON.parse(byFile.stderr)).toMatchObject({ error: { code: 'not_notarized', exitCode: 6 } });
  });

  it('a command that needs the network fails with exit 4 here, so the runs above truly used none', async () => {
    await bed.write('new.txt', 'needs the service\n');
    const run = await offline(['register', bed.path('new.txt'), '--retries', '0']);
    expect(run.code, describeRun(run)).toBe(4);
  });
});

/**
 * Receipts for CI artifacts (src/core/receipts.ts) on real directories:
 * their names, every refusal made before anything is sent, and the write
 * after the registration, never through a link.
 */
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  checkBeforeSending,
  keptReceipt,
  planReceipts,
  receiptNames,
  receiptPath,
  RECEIPT_SUFFIX,
  writeReceipt,
  type ReceiptPlan,
} from '../../src/core/receipts.js';
import { leafHash } from '../../src/core/merkle.js';
import { PROOF_TYPE, receiptText } from '../../src/core/receipt-format.js';
import { TEMPORARY_NAME_EXTRA_BYTES, writeFileAtomic } from '../../src/store/files.js';
import { NotarizeError, UsageError } from '../../src/errors.js';
import { sampleRecord } from '../helpers/fixtures.js';
import { useTempDirs } from '../helpers/temp-dirs.js';
import { rejectionOf, thrownOf } from '../helpers/catch.js';

const tempDir = useTempDirs('notarize-receipts-');
const posix = process.platform !== 'win32';
const hashOf = (label: string) => createHash('sha256').update(label).digest('hex');
/** The service's record of `hash`: a bare record, as receipts were before v1. */
const recordOf = (hash: string) => sampleRecord(hash);
/** The v1 receipt of `hash`, as register writes it. */
const SERVICE = 'https://notary.example';
const receiptOf = (hash: string, baseUrl = SERVICE) =>
  receiptText({
    document: { name: 'doc.txt', sha256: hash, size: 3 },
    recordJson: recordOf(hash),
    baseUrl,
    registeredAt: '2026-11-24T01:02:03.456Z',
  });

/** A plan for one document named `name` in a fresh receipt directory. */
async function planFor(name: string | undefined): Promise<ReceiptPlan> {
  return planReceipts(join(tempDir(), 'receipts'), [name === undefined ? {} : { path: `docs/${name}` }]);
}

describe('receiptNames', () => {
  it('names a file by its name, a walked file by its place below the directory, stdin and --hash not at all', () => {
    expect(
      receiptNames([
        { path: 'out/app.tar.gz' },
        { path: 'dist/linux/app', relative: 'linux/app' },
        {},
        { path: './x.txt' },
      ]),
    ).toEqual(['app.tar.gz', 'linux/app', undefined, 'x.txt']);
  });

  it('tells colliding names apart with as many parent folders as it takes, the same for the group', () => {
    expect(receiptNames([{ path: 'ca/x.txt' }, { path: 'cb/x.txt' }, { path: 'y.txt' }])).toEqual([
      'ca/x.txt',
      'cb/x.txt',
      'y.txt',
    ]);
    expect(receiptNames([{ path: 'a/same/x.txt' }, { path: 'b/same/x.txt' }, { path: 'c/other/x.txt' }])).toEqual([
      'a/same/x.txt',
      'b/same/x.txt',
      'c/other/x.txt',
    ]);
  });

  it.runIf(process.platform !== 'win32')('a backslash is part of a name, not a folder separator, on POSIX', () => {
    expect(receiptNames([{ path: 'docs/back\\slash.txt' }])).toEqual(['back\\slash.txt']);
    // Two names that differ only there are told apart by name, not made one by their folders.
    expect(receiptNames([{ path: 'a\\x.txt' }, { path: 'x.txt' }])).toEqual(['a\\x.txt', 'x.txt']);
  });

  it('lets the same path named twice share its receipt, however it is spelt', () => {
    expect(receiptNames([{ path: 'x.txt' }, { path: 'x.txt' }])).toEqual(['x.txt', 'x.txt']);
    expect(receiptNames([{ path: 'x.txt' }, { path: './x.txt' }, { path: './/x.txt' }])).toEqual([
      'x.txt',
      'x.txt',
      'x.txt',
    ]);
    // Not through '..': after a link ('link/../x.txt') it is another file, whatever the text says.
    expect(() => receiptNames([{ path: 'x.txt' }, { path: 'link/../x.txt' }])).toThrow(/would both get the receipt/);
    // Beside another x.txt, told apart from it all the same.
    expect(receiptNames([{ path: 'd//x.txt' }, { path: 'd/x.txt' }, { path: 'e/x.txt' }])).toEqual([
      'd/x.txt',
      'd/x.txt',
      'e/x.txt',
    ]);
  });

  it('refuses names no folder can tell apart, before anything is sent', () => {
    const error = thrownOf(() => receiptNames([{ path: 'x.txt' }, { path: '../x.txt' }]), UsageError);
    expect(error).toMatchObject({ code: 'receipt_collision' });
    expect(error.message).toBe(`'x.txt' and '../x.txt' would both get the receipt x.txt${RECEIPT_SUFFIX}`);
  });
});

describe('keptReceipt', () => {
  it('keeps a receipt of the registration confirmed, and finds one at its place that claims another registration (r88, r90)', async () => {
    const plan = await planFor('doc.txt');
    const hash = hashOf('kept');
    const salt = Buffer.alloc(32, 9);
    const root = leafHash(Buffer.from(hash, 'hex'), salt).toString('hex');
    const own = receiptPath(plan, 0, hash);
    mkdirSync(join(own, '..'), { recursive: true });
    writeFileSync(
      own,
      receiptText({
        document: { name: 'doc.txt', sha256: hash, size: 3 },
        recordJson: recordOf(root),
        baseUrl: SERVICE,
        registeredAt: '2026-11-24T01:02:03.456Z',
        proof: {
          type: 'rfc9162-sha256-salted-leaf',
          leafSalt: salt.toString('hex'),
          leafIndex: 0,
          treeSize: 1,
          path: [],
          root,
        },
      }),
    );
    const none = () => Promise.resolve(new Map<string, string[]>());
    expect(await keptReceipt(plan, 0, hash, root, SERVICE, none)).toEqual({ kind: 'kept', path: own });
    // The service confirmed the document on its own: a receipt under a root says something else.
    expect(await keptReceipt(plan, 0, hash, hash, SERVICE, none)).toEqual({ kind: 'other', path: own, claimed: root });
    // And the other way: a receipt of it on its own, when a root is what is confirmed (r90).
    writeFileSync(own, receiptOf(hash));
    expect(await keptReceipt(plan, 0, hash, hash, SERVICE, none)).toEqual({ kind: 'kept', path: own });
    expect(await keptReceipt(plan, 0, hash, root, SERVICE, none)).toEqual({ kind: 'other', path: own, claimed: hash });
    // A receipt of another service is of another registration (r90, with --force).
    writeFileSync(own, receiptOf(hash, 'https://other.example'));
    expect(await keptReceipt(plan, 0, hash, hash, SERVICE, none)).toEqual({
      kind: 'other',
      path: own,
      claimed: hash,
      service: 'https://other.example',
    });
    // Under another name, one of this service answers; one that claims another root does not.
    const elsewhere = join(own, '..', 'copy.txt.notarization.json');
    writeFileSync(elsewhere, receiptOf(hash));
    const byDigest = () => Promise.resolve(new Map([[hash, [elsewhere]]]));
    expect(await keptReceipt(plan, 0, hash, hash, SERVICE, byDigest)).toEqual({ kind: 'kept', path: elsewhere });
    expect(await keptReceipt(plan, 0, hash, root, SERVICE, byDigest)).toMatchObject({ kind: 'other', path: own });
  });
});

describe('planReceipts', () => {
  it('creates the directory, proves it writable without leaving a trace, and names the receipts', async () => {
    const dir = join(tempDir(), 'new', 'receipts');
    const plan = await planReceipts(dir, [{ path: 'a.txt' }, {}]);
    expect(plan).toMatchObject({ dir, names: ['a.txt', undefined] });
    expect(readdirSync(dir)).toEqual([]);
    expect(receiptPath(plan, 0, hashOf('a'))).toBe(join(dir, `a.txt${RECEIPT_SUFFIX}`));
    expect(receiptPath(plan, 1, hashOf('b'))).toBe(join(dir, `${hashOf('b')}${RECEIPT_SUFFIX}`));
  });

  it('refuses a --receipt-dir that is a file', async () => {
    const file = join(tempDir(), 'file');
    writeFileSync(file, '');
    for (const dir of [file, join(file, 'below')]) {
      const error = await rejectionOf(planReceipts(dir, []), UsageError);
      expect(error).toMatchObject({ code: 'receipt_dir', exitCode: 2 });
      expect(error.message).toBe(`--receipt-dir ${dir} is not a directory`);
    }
  });

  it.runIf(posix && process.getuid?.() !== 0)('refuses a --receipt-dir it cannot write in', async () => {
    const dir = tempDir();
    chmodSync(dir, 0o500);
    try {
      expect((await rejectionOf(planReceipts(dir, []), UsageError)).message).toBe(
        `--receipt-dir ${dir} is not writable: permission denied`,
      );
    } finally {
      chmodSync(dir, 0o700);
    }
  });

  it('refuses a name too long for the filesystem', async () => {
    const error = await rejectionOf(planFor(`${'n'.repeat(250)}.txt`), UsageError);
    expect(error).toMatchObject({ code: 'receipt_name_too_long' });
  });

  it('refuses a name whose receipt fits NAME_MAX but whose temporary file would not: it failed after paying', async () => {
    // 契約書 is 9 bytes: 25 of them and .pdf make 229 bytes, 247 with .notarization.json.
    const cjk = `${'契約書'.repeat(25)}.pdf`;
    const error = await rejectionOf(planFor(cjk), UsageError);
    expect(error).toMatchObject({ code: 'receipt_name_too_long' });
    expect(error.hint).toContain(`may have at most ${255 - TEMPORARY_NAME_EXTRA_BYTES} bytes`);
    // The longest name taken is written for real, temporary file and all.
    const longest = 'n'.repeat(255 - TEMPORARY_NAME_EXTRA_BYTES - '.notarization.json'.length);
    const plan = await planFor(longest);
    const path = receiptPath(plan, 0, 'ab'.repeat(32));
    await writeFileAtomic(path, '{}\n', { replace: true });
    expect(readFileSync(path, 'utf8')).toBe('{}\n');
    await expect(planFor(`${longest}n`)).rejects.toMatchObject({ code: 'receipt_name_too_long' });
  });

  it.runIf(posix)('refuses a receipt folder that is a link, or not a folder', async () => {
    const dir = tempDir();
    symlinkSync(tempDir(), join(dir, 'linux'));
    writeFileSync(join(dir, 'mac'), '');
    const linked = await rejectionOf(
      planReceipts(dir, [{ path: 'dist/linux/app', relative: 'linux/app' }]),
      UsageError,
    );
    expect(linked).toMatchObject({ code: 'receipt_link' });
    expect(linked.message).toBe(
      `receipt folder ${join(dir, 'linux')} is a symbolic link; notarize never writes a receipt through a link`,
    );
    const file = await rejectionOf(planReceipts(dir, [{ path: 'dist/mac/app', relative: 'mac/app' }]), UsageError);
    expect(file).toMatchObject({ code: 'receipt_exists' });
  });
});

describe('checkBeforeSending', () => {
  const hash = hashOf('doc');

  it('lets a document through when no receipt exists, or one that is a receipt of its digest (v1, or a bare record of any case)', async () => {
    const plan = await planFor('doc.txt');
    await checkBeforeSending(plan, 0, hash, false, SERVICE);
    for (const receipt of [receiptOf(hash), `${recordOf(hash)}\n`, recordOf(hash.toUpperCase())]) {
      writeFileSync(receiptPath(plan, 0, hash), receipt);
      await checkBeforeSending(plan, 0, hash, false, SERVICE);
    }
  });

  it('refuses an existing file that is not a receipt of this digest (a cold store has nothing else to go by), unless --force replaces it', async () => {
    const plan = await planFor(undefined);
    const path = receiptPath(plan, 0, hash);
    for (const other of [receiptOf(hashOf('other')), recordOf(hashOf('other')), 'something else\n', '[]']) {
      writeFileSync(path, other);
      const error = await rejectionOf(checkBeforeSending(plan, 0, hash, false, SERVICE), UsageError);
      expect(error).toMatchObject({ code: 'receipt_exists', exitCode: 2 });
      expect(error.message).toBe(`receipt ${path} already exists and is not a receipt of ${hash}`);
      // Never "remove it" (r105): an earlier build's receipt may be the only record of bytes that come back.
      expect(error.hint).toMatch(/^the receipt of an earlier build\? move it aside and keep it, never delete it/);
      expect(error.hint).not.toMatch(/remove/);
      await checkBeforeSending(plan, 0, hash, true, SERVICE);
    }
  });

  it('refuses a receipt of this document from another service (evidence of that registration), unless --force', async () => {
    const plan = await planFor('doc.txt');
    const path = receiptPath(plan, 0, hash);
    writeFileSync(path, receiptOf(hash, 'http://127.0.0.1:8787'));
    const error = await rejectionOf(checkBeforeSending(plan, 0, hash, false, SERVICE), UsageError);
    expect(error).toMatchObject({ code: 'receipt_exists', exitCode: 2 });
    expect(error.message).toBe(
      `receipt ${path} is of this document's registration with another service (http://127.0.0.1:8787): a new receipt would replace that evidence`,
    );
    await checkBeforeSending(plan, 0, hash, true, SERVICE);
    await checkBeforeSending(plan, 0, hash, false, 'http://127.0.0.1:8787');
  });

  it('refuses a receipt that is not a regular file, even with --force', async () => {
    const plan = await planFor('doc.txt');
    mkdirSync(receiptPath(plan, 0, hash));
    expect((await rejectionOf(checkBeforeSending(plan, 0, hash, true, SERVICE), UsageError)).message).toBe(
      `receipt ${receiptPath(plan, 0, hash)} exists and is not a regular file`,
    );
  });

  it.runIf(posix)(
    'refuses a link in place of the receipt, even with --force and the right content behind it',
    async () => {
      const plan = await planFor('doc.txt');
      const target = join(tempDir(), 'target');
      writeFileSync(target, receiptOf(hash));
      symlinkSync(target, receiptPath(plan, 0, hash));
      const error = await rejectionOf(checkBeforeSending(plan, 0, hash, true, SERVICE), UsageError);
      expect(error).toMatchObject({ code: 'receipt_link' });
    },
  );
});

describe('writeReceipt', () => {
  const hash = hashOf('written');

  it('writes the receipt text as given, creating its folders; the same text again is left as is', async () => {
    const dir = join(tempDir(), 'receipts');
    const plan = await planReceipts(dir, [{ path: 'dist/linux/app', relative: 'linux/app' }]);
    const path = join(dir, 'linux', `app${RECEIPT_SUFFIX}`);
    expect(await writeReceipt(plan, 0, hash, receiptOf(hash), false)).toEqual({ path });
    expect(readFileSync(path, 'utf8')).toBe(receiptOf(hash));
    expect(await writeReceipt(plan, 0, hash, receiptOf(hash), false)).toEqual({ path });
    expect(readFileSync(path, 'utf8')).toBe(receiptOf(hash));
  });

  it('replaces a receipt of the same digest without --force (a bare record written before v1)', async () => {
    const plan = await planFor('doc.txt');
    const path = receiptPath(plan, 0, hash);
    writeFileSync(path, `${recordOf(hash)}\n`);
    expect(await writeReceipt(plan, 0, hash, receiptOf(hash), false)).toEqual({ path });
    expect(readFileSync(path, 'utf8')).toBe(receiptOf(hash));
  });

  it('leaves a receipt of another registration of the document, or of another service, unless refuted or --force (r91)', async () => {
    const plan = await planFor('doc.txt');
    const path = receiptPath(plan, 0, hash);
    // The document registered on its own there; this run writes its receipt under a Merkle root.
    const salt = Buffer.alloc(32, 9);
    const root = leafHash(Buffer.from(hash, 'hex'), salt).toString('hex');
    const proof = {
      type: PROOF_TYPE as typeof PROOF_TYPE,
      leafSalt: salt.toString('hex'),
      leafIndex: 0,
      treeSize: 1,
      path: [],
      root,
    };
    const underRoot = receiptText({
      document: { name: 'doc.txt', sha256: hash, size: 3 },
      recordJson: recordOf(root),
      baseUrl: SERVICE,
      registeredAt: '2026-11-25T00:00:00.000Z',
      proof,
    });
    const own = receiptOf(hash);
    for (const [there, text, claimed, service] of [
      [own, underRoot, hash, undefined],
      [underRoot, own, root, undefined],
      [receiptOf(hash, 'https://other.example'), own, hash, 'https://other.example'],
    ] as const) {
      writeFileSync(path, there);
      expect(await writeReceipt(plan, 0, hash, text, false)).toEqual({
        other: { kind: 'other', path, claimed, ...(service === undefined ? {} : { service }) },
      });
      expect(readFileSync(path, 'utf8')).toBe(there);
    }
    // What it claims refuted by the service in this run, or --force: replaced.
    writeFileSync(path, underRoot);
    expect(await writeReceipt(plan, 0, hash, own, false, undefined, (claimed) => claimed === root)).toEqual({ path });
    expect(readFileSync(path, 'utf8')).toBe(own);
    expect(await writeReceipt(plan, 0, hash, underRoot, true)).toEqual({ path });
    expect(readFileSync(path, 'utf8')).toBe(underRoot);
  });

  it('refuses with exit 1 a receipt that appeared with other content since the check, or replaces it with --force', async () => {
    const plan = await planFor('doc.txt');
    const path = receiptPath(plan, 0, hash);
    writeFileSync(path, 'written meanwhile\n');
    const error = await rejectionOf(writeReceipt(plan, 0, hash, receiptOf(hash), false), NotarizeError);
    expect(error).not.toBeInstanceOf(UsageError);
    expect(error).toMatchObject({ code: 'receipt_write', exitCode: 1 });
    expect(error.message).toBe(`receipt ${path} appeared with other content while ${hash} was being registered`);
    expect(error.hint).toContain(`\`notarize receipt ${hash}\``);
    expect(readFileSync(path, 'utf8')).toBe('written meanwhile\n');

    await writeReceipt(plan, 0, hash, receiptOf(hash), true);
    expect(readFileSync(path, 'utf8')).toBe(receiptOf(hash));
  });

  it('a receipt of the same document written at once by another run: replaced, no failure (an aggregate beside a batch)', async () => {
    const plan = await planFor('doc.txt');
    const path = receiptPath(plan, 0, hash);
    const other = receiptOf(hash).replace('"size": 3', '"size": null');
    expect(other).not.toBe(receiptOf(hash));
    // Both look before either writes: the second to write meets the first one's file.
    const written = await Promise.all([
      writeReceipt(plan, 0, hash, other, false),
      writeReceipt(plan, 0, hash, receiptOf(hash), false),
    ]);
    expect(written).toEqual([{ path }, { path }]);
    expect([other, receiptOf(hash)]).toContain(readFileSync(path, 'utf8'));
  });

  it.runIf(posix)('never writes through a link planted since the check: exit 1, the target untouched', async () => {
    const plan = await planFor('doc.txt');
    const target = join(tempDir(), 'target');
    writeFileSync(target, 'precious');
    symlinkSync(target, receiptPath(plan, 0, hash));
    const error = await rejectionOf(writeReceipt(plan, 0, hash, receiptOf(hash), true), NotarizeError);
    expect(error).toMatchObject({ code: 'receipt_write', exitCode: 1 });
    expect(error.message).toContain('is a symbolic link');
    expect(readFileSync(target, 'utf8')).toBe('precious');
  });

  it('a folder that became a file since the check: exit 1, saying it could not be written', async () => {
    const dir = join(tempDir(), 'receipts');
    const plan = await planReceipts(dir, [{ path: 'dist/linux/app', relative: 'linux/app' }]);
    writeFileSync(join(dir, 'linux'), '');
    const error = await rejectionOf(writeReceipt(plan, 0, hash, receiptOf(hash), false), NotarizeError);
    expect(error).toMatchObject({ code: 'receipt_write', exitCode: 1 });
    expect(error.message).toBe(
      `the receipt ${join(dir, 'linux', 'app')}.notarization.json could not be written: ${join(dir, 'linux')} exists and is not a directory`,
    );
    expect(error.hint).toContain('in the ledger');
    // A record taken from another receipt (a cold re-run): the ledger has none, that receipt has it (r83).
    const from = join(dir, 'other.notarization.json');
    const cold = await rejectionOf(writeReceipt(plan, 0, hash, receiptOf(hash), false, from), NotarizeError);
    expect(cold.hint).toBe(
      `the registration itself is done; this store has no record of it, ${from} has: running the same command again writes the receipt from it`,
    );
  });
});

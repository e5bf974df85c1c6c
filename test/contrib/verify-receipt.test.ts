/**
 * contrib/verify-receipt.py, the standalone verifier (Python 3's standard
 * library only), run with the real python3 on receipts notarize wrote,
 * good and tampered: it gives the verdict and exit code that
 * `notarize verify --receipt` gives on the same files (issue 12).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receiptText } from '../../src/core/receipt-format.js';
import { Bed } from '../helpers/bed.js';
import { vectorLeaf } from '../helpers/merkle.js';
import { describeRun, REPO_ROOT, runProcess } from '../helpers/cli.js';
import type { ReceiptFields } from '../helpers/receipts.js';
import { parseResults } from '../helpers/results.js';

const SCRIPT = join(REPO_ROOT, 'contrib', 'verify-receipt.py');
const hasPython = spawnSync('python3', ['--version']).status === 0;

let bed: Bed;
let here = '';
const hashes: Record<string, string> = {};

beforeAll(async () => {
  if (!hasPython) return;
  bed = await Bed.create({ keyInEnv: true });
  for (const name of ['a.txt', 'b.txt']) hashes[name] = await bed.write(`dist/${name}`, `python checks ${name}\n`);
  const run = await bed.main(['register', '-r', bed.path('dist'), '--receipt-dir', bed.path('receipts'), '--quiet']);
  expect(run.code, describeRun(run)).toBe(0);
  await bed.sandbox.close();
});
afterAll(async () => {
  await bed?.finish();
});

/** A fresh copy of the documents and receipts for one case. */
function download(): { doc: (name: string) => string; receipt: (name: string) => string } {
  here = mkdtempSync(join(bed.root, 'case-'));
  cpSync(bed.path('dist'), join(here, 'dist'), { recursive: true });
  cpSync(bed.path('receipts'), join(here, 'receipts'), { recursive: true });
  return {
    doc: (name) => join(here, 'dist', name),
    receipt: (name) => join(here, 'receipts', `${name}.notarization.json`),
  };
}

function edit(path: string, change: (receipt: ReceiptFields) => void): void {
  const receipt = JSON.parse(readFileSync(path, 'utf8')) as ReceiptFields;
  change(receipt);
  writeFileSync(path, JSON.stringify(receipt, null, 2));
}

/** Both verifiers on one document and receipt: python's first word and exit code, and notarize's status and exit code. */
async function bothVerdicts(doc: string, receipt: string) {
  const python = await runProcess('python3', [SCRIPT, doc, receipt], {}, { noBaseUrlCheck: true });
  const notarize = await bed.main(['verify', doc, '--receipt', receipt, '--output', 'ndjson'], {
    env: { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'empty-store-')), NOTARIZE_API_KEY: '' },
  });
  const status = notarize.code === 2 ? 'unreadable' : parseResults(`[${notarize.stdout.trim()}]`)[0]!.status;
  return { python, notarize, pythonVerdict: python.stdout.split(':')[0], status };
}

describe.skipIf(!hasPython)('contrib/verify-receipt.py', () => {
  it('is under 100 lines and imports only the standard library', () => {
    const source = readFileSync(SCRIPT, 'utf8');
    expect(source.trimEnd().split('\n').length).toBeLessThan(100);
    expect(source.match(/^import .*$/gm)).toEqual(['import hashlib, json, re, sys']);
  });

  it('verified: a document and the receipt notarize wrote, exit 0, naming where to confirm it', async () => {
    const { doc, receipt } = download();
    const { python, status } = await bothVerdicts(doc('a.txt'), receipt('a.txt'));
    expect(python.code, describeRun(python)).toBe(0);
    expect(python.stdout).toBe(
      `verified: ${doc('a.txt')} matches its receipt; the receipt's record can be confirmed at ` +
        `${bed.url}/verification/${hashes['a.txt']}\n`,
    );
    expect(status).toBe('verified');
  });

  type Case = [string, (doc: string, receipt: string) => void, 'verified' | 'modified' | 'invalid'];
  const cases: Case[] = [
    [
      'a receipt written before v1 (the bare record)',
      (_, receipt) =>
        writeFileSync(receipt, JSON.stringify((JSON.parse(readFileSync(receipt, 'utf8')) as ReceiptFields).record)),
      'verified',
    ],
    ['one byte of the document changed', (doc) => writeFileSync(doc, `${readFileSync(doc, 'utf8')}!`), 'modified'],
    ['the receipt of another document', (_, receipt) => cpSync(receipt.replace('a.txt', 'b.txt'), receipt), 'modified'],
    [
      "the receipt's document.sha256 changed",
      (_, r) => edit(r, (x) => (x.document.sha256 = 'f'.repeat(64))),
      'invalid',
    ],
    ["its record's hash changed", (_, r) => edit(r, (x) => (x.record.hash = 'f'.repeat(64))), 'invalid'],
    [
      'a verificationUrl of another digest',
      (_, r) =>
        edit(r, (x) => (x.service.verificationUrl = `${String(x.service.baseUrl)}/verification/${'f'.repeat(64)}`)),
      'invalid',
    ],
    ['another version', (_, r) => edit(r, (x) => (x.version = 2)), 'invalid'],
    ['a date that is none', (_, r) => edit(r, (x) => (x.registeredAt = 'yesterday')), 'invalid'],
    [
      'a proof it cannot check',
      (_, r) => edit(r, (x) => (x.proof = { type: 'other' } as unknown as ReceiptFields['proof'])),
      'invalid',
    ],
    ['not JSON', (_, r) => writeFileSync(r, '{"type": "notarize-receipt",'), 'invalid'],
  ];

  it.each(cases)('%s: python says %s, as notarize verify does, with the same exit code', async (_, tamper, verdict) => {
    const { doc, receipt } = download();
    tamper(doc('a.txt'), receipt('a.txt'));
    const { python, notarize, pythonVerdict, status } = await bothVerdicts(doc('a.txt'), receipt('a.txt'));
    expect(pythonVerdict, describeRun(python)).toBe(verdict);
    expect(status, describeRun(notarize)).toBe(verdict);
    expect(python.code).toBe(verdict === 'verified' ? 0 : 6);
    expect(notarize.code).toBe(python.code);
    expect(python.stdout.split('\n')).toHaveLength(2);
  });

  it('a document that cannot be read: exit 2 from both, one line on stderr', async () => {
    const { doc, receipt } = download();
    const { python, notarize } = await bothVerdicts(doc('missing.txt'), receipt('a.txt'));
    expect(python.code, describeRun(python)).toBe(2);
    expect(python.stderr).toBe(`verify-receipt: ${doc('missing.txt')}: No such file or directory\n`);
    expect(notarize.code).toBe(2);
  });

  it('control characters in what it prints are escaped', async () => {
    const { doc, receipt } = download();
    const odd = join(here, 'dist', 'odd\u001b[31m.txt');
    cpSync(doc('a.txt'), odd);
    const python = await runProcess('python3', [SCRIPT, odd, receipt('a.txt')], {}, { noBaseUrlCheck: true });
    expect(python.code, describeRun(python)).toBe(0);
    expect(python.stdout).not.toContain('\u001b');
    expect(python.stdout).toContain('odd\\u001b[31m.txt');
  });

  describe('receipts with an inclusion proof (an aggregate registration)', () => {
    // Leaf 2 of the tree of 5 of test/fixtures/merkle/vectors.json, whose document is the text "document 2".
    const { text, sha256, root, proof } = vectorLeaf(5, 2);

    const proofCases: [string, (p: typeof proof) => void, 'verified' | 'invalid'][] = [
      ['a proof that leads to the registered root', () => undefined, 'verified'],
      ['a wrong salt', (p) => (p.leafSalt = 'a'.repeat(64)), 'invalid'],
      ['a wrong index', (p) => (p.leafIndex = 1), 'invalid'],
      ['a path of the wrong length', (p) => (p.path = p.path.slice(1)), 'invalid'],
      ['a path element changed', (p) => (p.path = [...p.path.slice(0, -1), 'b'.repeat(64)]), 'invalid'],
    ];

    it.each(proofCases)('%s: python says %s, as notarize verify does', async (_, change, verdict) => {
      const dir = mkdtempSync(join(bed.root, 'proof-'));
      const doc = join(dir, 'c.txt');
      writeFileSync(doc, text);
      const changed = { ...proof, path: [...proof.path] };
      change(changed);
      const receipt = join(dir, 'c.txt.notarization.json');
      writeFileSync(
        receipt,
        receiptText({
          document: { name: 'c.txt', sha256, size: 10 },
          recordJson: `{"hash":"${root}","status":"registered"}`,
          baseUrl: bed.url,
          registeredAt: '2026-11-24T01:02:03.456Z',
          proof: changed,
        }),
      );
      const { python, notarize, pythonVerdict, status } = await bothVerdicts(doc, receipt);
      expect(pythonVerdict, describeRun(python)).toBe(verdict);
      expect(status, describeRun(notarize)).toBe(verdict);
      expect(notarize.code).toBe(python.code);
      if (verdict === 'verified') expect(python.stdout).toContain(`${bed.url}/verification/${root}`);
    });
  });

  it("docs/verify-by-hand.md's worked example, run as written, prints its tree's root", async () => {
    const doc = readFileSync(join(REPO_ROOT, 'docs', 'verify-by-hand.md'), 'utf8');
    const script = /```sh\n(python3 - <<'PY'\n[\s\S]*?\nPY)\n```/.exec(doc)?.[1];
    expect(script).toBeDefined();
    const run = await runProcess('bash', ['-c', script!], {}, { noBaseUrlCheck: true });
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stdout.trim()).toBe(vectorLeaf(5, 2).root);
  });
});

/**
 * contrib/verify-receipt.py, the standalone verifier (Python 3's standard
 * library only), run with the real python3 on receipts notarize wrote,
 * good and tampered: it gives the verdict and exit code that
 * `notarize verify --receipt` gives on the same files (issue 12).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ANSWER_BYTES } from '../../src/api/http.js';
import { MAX_RECEIPT_BYTES } from '../../src/core/evidence.js';
import { receiptText } from '../../src/core/receipt-format.js';
import { parseFaults } from '../../src/sandbox/server.js';
import { Bed } from '../helpers/bed.js';
import { sampleRecord } from '../helpers/fixtures.js';
import { vectorLeaf } from '../helpers/merkle.js';
import { describeRun, REPO_ROOT, runProcess } from '../helpers/cli.js';
import { BASE_URL_CASES, REGISTERED_AT_CASES, type ReceiptFields } from '../helpers/receipts.js';
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

/** Edits the receipt's text itself, for what JSON.stringify cannot write (`20.0`, `NaN`, a 2^53 + 1 kept exact). */
function rewrite(path: string, pattern: RegExp, replacement: string): void {
  const text = readFileSync(path, 'utf8');
  expect(text).toMatch(pattern);
  writeFileSync(path, text.replace(pattern, replacement));
}

/** `levels` arrays, one inside the other. */
const nested = (levels: number): string => `${'['.repeat(levels)}${']'.repeat(levels)}`;

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
    expect(source.match(/^import .*$/gm)).toEqual(['import hashlib, json, os, re, stat, sys']);
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
    // A bare record is the service's record of a completed registration (notarizationRecordSchema), nothing less.
    ...(
      [
        ["the documentation's sample record", {}, 'verified'],
        [
          'a sample record with unknown fields, paymentId null, no tags',
          { future: [1], paymentId: null, tags: undefined },
          'verified',
        ],
        ['a sample record of status "pending"', { status: 'pending' }, 'invalid'],
        ['a sample record of status "not_registered"', { status: 'not_registered' }, 'invalid'],
        ['a sample record without description', { description: undefined }, 'invalid'],
        ['a sample record whose custody is "false"', { custody: 'false' }, 'invalid'],
        ['a sample record whose signed is 0', { signed: 0 }, 'invalid'],
        ['a sample record whose blockchainType is null', { blockchainType: null }, 'invalid'],
        ['a sample record whose creationDate is 1.5', { creationDate: 1.5 }, 'invalid'],
        ['a sample record whose creationDate is -1', { creationDate: -1 }, 'invalid'],
        ['a sample record whose userId is -1', { userId: -1 }, 'verified'],
        ['a sample record whose userId is 2^53', { userId: 2 ** 53 }, 'invalid'],
        ['a sample record whose userId is true', { userId: true }, 'invalid'],
        ['a sample record whose paymentId is 5', { paymentId: 5 }, 'invalid'],
        ['a sample record whose tags are null', { tags: null }, 'invalid'],
        ['a sample record whose tags are {}', { tags: {} }, 'invalid'],
      ] as const
    ).map(([name, extra, verdict]): Case => [
      `a bare record: ${name}`,
      (_, r) => writeFileSync(r, sampleRecord(hashes['a.txt']!, extra)),
      verdict,
    ]),
    [
      "a bare record: notarize's own pending line (register --no-complete --output ndjson)",
      (_, r) =>
        writeFileSync(
          r,
          JSON.stringify({ schemaVersion: 1, file: 'a.txt', hash: hashes['a.txt'], status: 'pending', session: {} }),
        ),
      'invalid',
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
    // What JSON.parse and zod's z.int() take for a number: 20.0 is the integer 20, 2^53 is past the safe ones.
    ['document.size written 20.0', (_, r) => rewrite(r, /"size": (\d+)/, '"size": $1.0'), 'verified'],
    ['document.size written 20e0', (_, r) => rewrite(r, /"size": (\d+)/, '"size": $1e0'), 'verified'],
    ['document.size written 20.00', (_, r) => rewrite(r, /"size": (\d+)/, '"size": $1.00'), 'verified'],
    ['document.size 20.5', (_, r) => rewrite(r, /"size": (\d+)/, '"size": $1.5'), 'invalid'],
    [
      'document.size 2^53 - 1, the largest safe integer',
      (_, r) => edit(r, (x) => (x.document.size = 2 ** 53 - 1)),
      'verified',
    ],
    ['document.size 2^53', (_, r) => rewrite(r, /"size": \d+/, `"size": ${2n ** 53n}`), 'invalid'],
    ['document.size 2^60', (_, r) => rewrite(r, /"size": \d+/, `"size": ${2n ** 60n}`), 'invalid'],
    [
      'an integer of 5,000 digits in the record',
      (_, r) => rewrite(r, /"record": \{/, `"record": {"n": ${'1'.repeat(5000)},`),
      'verified',
    ],
    // Every field read must have the type notarize's schema gives it.
    [
      'service.baseUrl null (its verificationUrl as str(None) would spell it)',
      (_, r) =>
        edit(r, (x) => {
          x.service.verificationUrl = `None/verification/${String(x.record.hash)}`;
          x.service.baseUrl = null;
        }),
      'invalid',
    ],
    [
      'service.baseUrl a number',
      (_, r) =>
        edit(r, (x) => {
          x.service.verificationUrl = `5/verification/${String(x.record.hash)}`;
          x.service.baseUrl = 5;
        }),
      'invalid',
    ],
    ['service.verificationUrl null', (_, r) => edit(r, (x) => (x.service.verificationUrl = null)), 'invalid'],
    ['document.name a number', (_, r) => edit(r, (x) => (x.document.name = 5)), 'invalid'],
    ['record.hash a number', (_, r) => rewrite(r, /"hash": ?"[0-9a-f]{64}"/, `"hash": ${'1'.repeat(64)}`), 'invalid'],
    // One trailing slash of baseUrl is dropped, not all of them.
    [
      'a baseUrl ending in one slash',
      (_, r) => edit(r, (x) => (x.service.baseUrl = `${String(x.service.baseUrl)}/`)),
      'verified',
    ],
    [
      'a baseUrl ending in two slashes',
      (_, r) => edit(r, (x) => (x.service.baseUrl = `${String(x.service.baseUrl)}//`)),
      'invalid',
    ],
    [
      'a baseUrl ending in two slashes, and a verificationUrl with one of them',
      (_, r) =>
        edit(r, (x) => {
          x.service.verificationUrl = `${String(x.service.baseUrl)}//verification/${String(x.record.hash)}`;
          x.service.baseUrl = `${String(x.service.baseUrl)}//`;
        }),
      'verified',
    ],
    // The page a reader is sent to is made from baseUrl: an http(s) URL, no credentials, no control characters.
    ...BASE_URL_CASES.map(([baseUrl, status]): Case => [
      `a baseUrl ${JSON.stringify(baseUrl)}, its verificationUrl made from it`,
      (_, r) =>
        edit(r, (x) => {
          x.service.verificationUrl = `${baseUrl}/verification/${String(x.record.hash)}`;
          x.service.baseUrl = baseUrl;
        }),
      status,
    ]),
    ...REGISTERED_AT_CASES.map(([date, verdict]): Case => [
      `registeredAt ${JSON.stringify(date)}`,
      (_, r) => edit(r, (x) => (x.registeredAt = date)),
      verdict,
    ]),
    // JSON.parse knows no NaN or Infinity.
    ['NaN in the record', (_, r) => rewrite(r, /"record": \{/, '"record": {"n": NaN,'), 'invalid'],
    ['document.size Infinity', (_, r) => rewrite(r, /"size": \d+/, '"size": Infinity'), 'invalid'],
    ['document.size -Infinity', (_, r) => rewrite(r, /"size": \d+/, '"size": -Infinity'), 'invalid'],
    // At most 64 levels of nesting, the receipt's own two included.
    [
      'a record nesting 64 levels in all',
      (_, r) => rewrite(r, /"record": \{/, `"record": {"deep": ${nested(62)},`),
      'verified',
    ],
    [
      'a record nesting 65 levels in all',
      (_, r) => rewrite(r, /"record": \{/, `"record": {"deep": ${nested(63)},`),
      'invalid',
    ],
    [
      'a record nesting 5,000 levels',
      (_, r) => rewrite(r, /"record": \{/, `"record": {"deep": ${nested(5000)},`),
      'invalid',
    ],
    [
      'a bare record nesting 5,000 levels',
      (_, r) => writeFileSync(r, `{"hash": "${hashes['a.txt']}", "userId": ${nested(5000)}}`),
      'invalid',
    ],
    [
      'a bare record whose hash is a number of 64 digits',
      (_, r) => writeFileSync(r, `{"hash": ${'1'.repeat(64)}}`),
      'invalid',
    ],
    // A key twice in one object: JSON.parse and json.loads keep the last, other readers the first.
    [
      "the record's hash twice, the real one last",
      (_, r) => rewrite(r, /"record": \{/, `"record": {"hash": "${'ab'.repeat(32)}",`),
      'invalid',
    ],
    [
      'the type twice, once spelled with an escape',
      (_, r) => rewrite(r, /^\{/, '{"\\u0074ype": "notarize-receipt",'),
      'invalid',
    ],
    [
      'a bare record with its hash twice',
      (_, r) => writeFileSync(r, `{"hash": "${'ab'.repeat(32)}", "hash": "${hashes['a.txt']}"}`),
      'invalid',
    ],
    [
      // An editor's (Windows Notepad): RFC 8259 section 8.1 lets a reader ignore it. It was 'not JSON'.
      'a byte order mark at its start',
      (_, r) => writeFileSync(r, `\uFEFF${readFileSync(r, 'utf8')}`),
      'verified',
    ],
    ['a byte order mark inside it, before a key', (_, r) => rewrite(r, /^\{/, '{\uFEFF'), 'invalid'],
    // PowerShell 5's `notarize receipt <hash> > file`: the same evidence, not a tampered receipt (r92).
    [
      'saved as UTF-16LE with its mark',
      (_, r) => writeFileSync(r, Buffer.from(`\uFEFF${readFileSync(r, 'utf8')}`, 'utf16le')),
      'verified',
    ],
    [
      'saved as UTF-16BE without a mark',
      (_, r) => writeFileSync(r, Buffer.from(readFileSync(r, 'utf8'), 'utf16le').swap16()),
      'verified',
    ],
    [
      'saved as UTF-32BE with its mark',
      (_, r) => {
        const points = [...`\uFEFF${readFileSync(r, 'utf8')}`].map((c) => c.codePointAt(0)!);
        const bytes = Buffer.alloc(points.length * 4);
        points.forEach((p, i) => bytes.writeUInt32BE(p, i * 4));
        writeFileSync(r, bytes);
      },
      'verified',
    ],
    // One mark is dropped whatever the encoding; a second is a character before the JSON (r93: UTF-16 with two passed).
    [
      'two byte order marks at its start',
      (_, r) => writeFileSync(r, `\uFEFF\uFEFF${readFileSync(r, 'utf8')}`),
      'invalid',
    ],
    [
      'saved as UTF-16LE with two marks',
      (_, r) => writeFileSync(r, Buffer.from(`\uFEFF\uFEFF${readFileSync(r, 'utf8')}`, 'utf16le')),
      'invalid',
    ],
    [
      'saved as UTF-32LE with two marks',
      (_, r) => {
        const points = [...`\uFEFF\uFEFF${readFileSync(r, 'utf8')}`].map((c) => c.codePointAt(0)!);
        const bytes = Buffer.alloc(points.length * 4);
        points.forEach((p, i) => bytes.writeUInt32LE(p, i * 4));
        writeFileSync(r, bytes);
      },
      'invalid',
    ],
    [
      'saved as UTF-16LE, a byte cut off its end',
      (_, r) => writeFileSync(r, Buffer.from(`\uFEFF${readFileSync(r, 'utf8')}`, 'utf16le').subarray(0, -1)),
      'invalid',
    ],
    [
      'the same key in two different objects',
      (_, r) => rewrite(r, /"record": \{/, '"record": {"note": {"hash": 1, "x": [{"hash": 2}, {"hash": 3}]},'),
      'verified',
    ],
  ];

  // The verdict second, for the title.
  const titled = cases.map(([name, tamper, verdict]) => [name, verdict, tamper] as const);
  it.each(titled)(
    '%s: python says %s, as notarize verify does, with the same exit code',
    async (_, verdict, tamper) => {
      const { doc, receipt } = download();
      tamper(doc('a.txt'), receipt('a.txt'));
      const { python, notarize, pythonVerdict, status } = await bothVerdicts(doc('a.txt'), receipt('a.txt'));
      expect(pythonVerdict, describeRun(python)).toBe(verdict);
      expect(status, describeRun(notarize)).toBe(verdict);
      expect(python.code).toBe(verdict === 'verified' ? 0 : 6);
      expect(notarize.code).toBe(python.code);
      expect(python.stdout.split('\n')).toHaveLength(2);
      expect(python.stderr).toBe('');
    },
  );

  it("a record that carries a receipt's members (a service may add any) is the record of its own hash, for both", async () => {
    // The service's record of a.txt, with `type`, `document`, `record`... naming b.txt, never sent.
    const { doc, receipt } = download();
    const b = hashes['b.txt']!;
    const disguised = sampleRecord(hashes['a.txt']!, {
      type: 'notarize-receipt',
      version: 1,
      document: { name: 'b.txt', sha256: b, size: null },
      record: { hash: b },
      service: { baseUrl: bed.url, verificationUrl: `${bed.url}/verification/${b}` },
      registeredAt: '2026-01-01T00:00:00Z',
      proof: null,
    });
    writeFileSync(receipt('a.txt'), disguised);
    const forB = await bothVerdicts(doc('b.txt'), receipt('a.txt'));
    expect(forB.pythonVerdict, describeRun(forB.python)).toBe('modified');
    expect(forB.status, describeRun(forB.notarize)).toBe('modified');
    const forA = await bothVerdicts(doc('a.txt'), receipt('a.txt'));
    expect(forA.pythonVerdict, describeRun(forA.python)).toBe('verified');
    expect(forA.status, describeRun(forA.notarize)).toBe('verified');
    // A harmless `type` of the service's own is no other format either.
    writeFileSync(receipt('a.txt'), sampleRecord(hashes['a.txt']!, { type: 'NOTARIZATION' }));
    const typed = await bothVerdicts(doc('a.txt'), receipt('a.txt'));
    expect([typed.pythonVerdict, typed.status]).toEqual(['verified', 'verified']);
  });

  it("register's own failed or pending line saved as the receipt: invalid for both, exit 6, found beside or named", async () => {
    // The service fails every completion: register prints a "failed" line (exit 4), or, told not to complete, a "pending" one.
    const failing = await bed.extraSandbox({ faults: parseFaults('forfait:status=503') });
    const env = { NOTARIZE_BASE_URL: failing.url, NOTARIZE_API_KEY: failing.apiKey };
    here = mkdtempSync(join(bed.root, 'case-'));
    const lines: [string, string[], number, string][] = [
      ['failed.bin', ['--retries', '0'], 4, 'failed'],
      ['pending.bin', ['--no-complete'], 0, 'pending'],
    ];
    for (const [name, options, code, status] of lines) {
      const doc = join(here, name);
      writeFileSync(doc, `never registered: ${name}\n`);
      const register = await bed.main(['register', doc, ...options, '--output', 'ndjson'], { env });
      expect(register.code, describeRun(register)).toBe(code);
      expect(parseResults(`[${register.stdout.trim()}]`)[0]).toMatchObject({ status });
      writeFileSync(`${doc}.notarization.json`, register.stdout);
      const { python, notarize, pythonVerdict, status: verdict } = await bothVerdicts(doc, `${doc}.notarization.json`);
      expect(pythonVerdict, describeRun(python)).toBe('invalid');
      expect(python.code).toBe(6);
      expect(verdict, describeRun(notarize)).toBe('invalid');
      expect(notarize.code).toBe(6);
      // Found beside the document, with an empty store: the same.
      const beside = await bed.main(['verify', doc, '--output', 'ndjson'], {
        env: { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'empty-store-')), NOTARIZE_API_KEY: '' },
      });
      expect(beside.code, describeRun(beside)).toBe(6);
      expect(parseResults(`[${beside.stdout.trim()}]`)[0]).toMatchObject({ status: 'invalid', source: 'receipt' });
    }
  });

  it('a receipt larger than MAX_RECEIPT_BYTES: exit 2 from both, refused unread; one carrying a 4 MiB record is read', async () => {
    // Every receipt register can write is read: its record is the service's answer, taken up to MAX_ANSWER_BYTES.
    expect(MAX_RECEIPT_BYTES).toBe(MAX_ANSWER_BYTES + 64 * 1024);
    const { doc, receipt } = download();
    const parsed = JSON.parse(readFileSync(receipt('a.txt'), 'utf8')) as { record: Record<string, unknown> };
    parsed.record.payload = '';
    parsed.record.payload = 'P'.repeat(MAX_ANSWER_BYTES - JSON.stringify(parsed.record).length);
    expect(JSON.stringify(parsed.record)).toHaveLength(MAX_ANSWER_BYTES);
    const text = JSON.stringify(parsed, null, 2);
    writeFileSync(receipt('a.txt'), text);
    const largest = await bothVerdicts(doc('a.txt'), receipt('a.txt'));
    expect(largest.python.code, describeRun(largest.python)).toBe(0);
    expect(largest.status).toBe('verified');
    writeFileSync(receipt('a.txt'), text.padEnd(MAX_RECEIPT_BYTES + 1, ' '));
    const { python, notarize } = await bothVerdicts(doc('a.txt'), receipt('a.txt'));
    expect(python.code, describeRun(python)).toBe(2);
    expect(python.stdout).toBe('');
    const larger = `the receipt from '${receipt('a.txt')}' is larger than ${MAX_RECEIPT_BYTES} bytes`;
    expect(python.stderr).toBe(`verify-receipt: ${larger}\n`);
    expect(notarize.code, describeRun(notarize)).toBe(2);
    expect(notarize.stderr).toContain(larger);
    writeFileSync(receipt('a.txt'), text.padEnd(MAX_RECEIPT_BYTES, ' '));
    const exact = await bothVerdicts(doc('a.txt'), receipt('a.txt'));
    expect(exact.python.code, describeRun(exact.python)).toBe(0);
    expect(exact.status).toBe('verified');
  });

  it("'-' reads the document from standard input, as notarize verify does", async () => {
    const { doc, receipt } = download();
    const [bytes, other] = [readFileSync(doc('a.txt')), Buffer.from('not the document\n')];
    const python = await runProcess(
      'python3',
      [SCRIPT, '-', receipt('a.txt')],
      {},
      { noBaseUrlCheck: true, input: bytes },
    );
    expect(python.code, describeRun(python)).toBe(0);
    expect(python.stdout).toMatch(/^verified: - matches its receipt/);
    const changed = await runProcess(
      'python3',
      [SCRIPT, '-', receipt('a.txt')],
      {},
      { noBaseUrlCheck: true, input: other },
    );
    expect(changed.code, describeRun(changed)).toBe(6);
    expect(changed.stdout).toMatch(/^modified: - has digest /);
    const notarize = await bed.main(['verify', '-', '--receipt', receipt('a.txt'), '--output', 'ndjson'], {
      input: bytes,
      env: { NOTARIZE_CONFIG_DIR: mkdtempSync(join(bed.root, 'empty-store-')), NOTARIZE_API_KEY: '' },
    });
    expect(notarize.code, describeRun(notarize)).toBe(0);
    // Standard input closed: one line naming it, exit 2.
    const closed = await runProcess(
      'bash',
      ['-c', 'exec python3 "$0" - "$1" <&-', SCRIPT, receipt('a.txt')],
      {},
      { noBaseUrlCheck: true },
    );
    expect(closed.code, describeRun(closed)).toBe(2);
    expect(closed.stderr).toBe('verify-receipt: standard input: Bad file descriptor\n');
  });

  it('a document that cannot be read: exit 2 from both, one line on stderr', async () => {
    const { doc, receipt } = download();
    const { python, notarize } = await bothVerdicts(doc('missing.txt'), receipt('a.txt'));
    expect(python.code, describeRun(python)).toBe(2);
    expect(python.stderr).toBe(`verify-receipt: ${doc('missing.txt')}: No such file or directory\n`);
    expect(notarize.code).toBe(2);
  });

  it('a FIFO or device as the document or the receipt: exit 2 from both at once, never waiting on it', async () => {
    const { doc, receipt } = download();
    const fifo = join(here, 'fifo');
    execFileSync('mkfifo', [fifo]);
    for (const [document, its] of [
      [doc('a.txt'), fifo],
      [fifo, receipt('a.txt')],
      ['/dev/zero', receipt('a.txt')],
    ] as const) {
      const { python, notarize } = await bothVerdicts(document, its);
      expect(python.code, describeRun(python)).toBe(2);
      expect(python.stderr).toBe(
        `verify-receipt: ${document === doc('a.txt') ? fifo : document}: not a regular file\n`,
      );
      expect(notarize.code, describeRun(notarize)).toBe(2);
    }
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

  describe("a proof's leafIndex and treeSize are numbers as notarize reads them", () => {
    // Leaf 4 of the tree of 5: one hash on its path, which folds the same for leaf 2^52 of 2^52 + 1.
    const { text, sha256, root, proof } = vectorLeaf(5, 4);

    const spellings: [string, string, 'verified' | 'invalid'][] = [
      ['4', '5', 'verified'],
      ['4.0', '5.0', 'verified'],
      ['4e0', '5.00', 'verified'],
      ['4.5', '5', 'invalid'],
      [`${2n ** 52n}`, `${2n ** 52n + 1n}`, 'verified'],
      [`${2n ** 53n}`, `${2n ** 53n + 1n}`, 'invalid'],
      [`${2n ** 60n}`, `${2n ** 60n + 1n}`, 'invalid'],
      ['4', 'Infinity', 'invalid'],
    ];

    it.each(spellings)(
      'leafIndex %s, treeSize %s: python says %s, as notarize verify does',
      async (index, size, verdict) => {
        const dir = mkdtempSync(join(bed.root, 'proof-'));
        const doc = join(dir, 'c.txt');
        writeFileSync(doc, text);
        const receipt = join(dir, 'c.txt.notarization.json');
        const written = receiptText({
          document: { name: 'c.txt', sha256, size: 10 },
          recordJson: `{"hash":"${root}","status":"registered"}`,
          baseUrl: bed.url,
          registeredAt: '2026-11-24T01:02:03.456Z',
          proof,
        });
        writeFileSync(
          receipt,
          written
            .replace('"leafIndex": 4,', `"leafIndex": ${index},`)
            .replace('"treeSize": 5,', `"treeSize": ${size},`),
        );
        const { python, notarize, pythonVerdict, status } = await bothVerdicts(doc, receipt);
        expect(readFileSync(receipt, 'utf8')).toContain(`"treeSize": ${size},`);
        expect(pythonVerdict, describeRun(python)).toBe(verdict);
        expect(status, describeRun(notarize)).toBe(verdict);
        expect(notarize.code).toBe(python.code);
        expect(python.stderr).toBe('');
      },
    );
  });

  it("docs/verify-by-hand.md's step 2 in Python reads a receipt with a byte order mark, as step 3 says it is read", async () => {
    const doc = readFileSync(join(REPO_ROOT, 'docs', 'verify-by-hand.md'), 'utf8');
    const command = /```sh\n *(python3 -c '[^']*') \\\n/.exec(doc)?.[1];
    expect(command).toBeDefined();
    const { doc: document, receipt } = download();
    writeFileSync(receipt('a.txt'), `\ufeff${readFileSync(receipt('a.txt'), 'utf8')}`);
    const run = await runProcess(
      'bash',
      ['-c', `${command} "$1"`, 'step2', receipt('a.txt')],
      {},
      { noBaseUrlCheck: true },
    );
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stdout.split(' ')[0]).toBe(hashes['a.txt']);
    expect((await bothVerdicts(document('a.txt'), receipt('a.txt'))).status).toBe('verified');
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

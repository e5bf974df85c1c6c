/**
 * The v1 receipt (src/core/receipt-format.ts): the exact text written, and
 * every way a receipt can fail to hold together.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MAX_RECEIPT_DEPTH,
  readReceipt,
  receiptText,
  redactedReceipt,
  type ReceiptContent,
} from '../../src/core/receipt-format.js';
import { NotarizeError } from '../../src/errors.js';
import { IO } from '../../src/output/io.js';
import { vectorLeaf } from '../helpers/merkle.js';
import { readFixture, sampleRecord } from '../helpers/fixtures.js';
import type { ReceiptFields } from '../helpers/receipts.js';

const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const HASH = sha('document');
/** A record as a service sends it: compact, with a field notarize does not know and a big number. */
const RECORD = `{"hash":"${HASH}","status":"registered","future":{"x":[1,2]},"assetId":12345678901234567890}`;
const CONTENT: ReceiptContent = {
  document: { name: 'app.tar.gz', sha256: HASH, size: 1234 },
  recordJson: RECORD,
  baseUrl: 'https://notary.example',
  registeredAt: '2026-11-24T01:02:03.456Z',
};

/** The receipt of CONTENT, parsed, changed by `edit`, and serialised again. */
function edited(edit: (receipt: ReceiptFields) => void): string {
  const receipt = JSON.parse(receiptText(CONTENT)) as ReceiptFields;
  edit(receipt);
  return JSON.stringify(receipt);
}

describe('receiptText', () => {
  it('writes no receipt of a record with a key twice: readReceipt would refuse it', () => {
    const twice = { ...CONTENT, recordJson: `{"hash":"${HASH}","tags":[],"tags":["x"]}` };
    expect(() => receiptText(twice)).toThrow(expect.objectContaining({ code: 'record_key_twice', exitCode: 1 }));
    // The same keys in two objects are no such thing.
    const nested = { ...CONTENT, recordJson: `{"hash":"${HASH}","a":{"tags":[]},"b":{"tags":[]}}` };
    expect(readReceipt(receiptText(nested))).toMatchObject({ consistent: true, sha256: HASH });
  });

  it('writes the documented layout, with the record spliced in byte for byte', () => {
    expect(receiptText(CONTENT)).toBe(
      [
        '{',
        '  "type": "notarize-receipt",',
        '  "version": 1,',
        '  "document": {',
        '    "name": "app.tar.gz",',
        `    "sha256": "${HASH}",`,
        '    "size": 1234',
        '  },',
        `  "record": ${RECORD},`,
        '  "service": {',
        '    "baseUrl": "https://notary.example",',
        `    "verificationUrl": "https://notary.example/verification/${HASH}"`,
        '  },',
        '  "registeredAt": "2026-11-24T01:02:03.456Z",',
        '  "proof": null',
        '}',
        '',
      ].join('\n'),
    );
  });

  it('keeps nulls for a document with no name or size (standard input, --hash)', () => {
    const text = receiptText({ ...CONTENT, document: { name: null, sha256: HASH, size: null } });
    expect(JSON.parse(text)).toMatchObject({ document: { name: null, sha256: HASH, size: null } });
    expect(readReceipt(text)).toMatchObject({ consistent: true, name: null });
  });

  it('whatever the document name, the record lands in its slot only and the receipt reads back', () => {
    // A name may hold anything a file name can, the slot's own spelling included.
    const names = fc.oneof(fc.string(), fc.constant('\\u0000record\\u0000'), fc.constant('"record": x'));
    fc.assert(
      fc.property(names, (name) => {
        const text = receiptText({ ...CONTENT, document: { ...CONTENT.document, name } });
        const parsed = JSON.parse(text) as { document: { name: string }; record: unknown };
        expect(parsed.document.name).toBe(name);
        expect(text).toContain(`"record": ${RECORD},`);
        expect(readReceipt(text)).toMatchObject({ consistent: true, sha256: HASH, name });
      }),
    );
  });
});

describe('readReceipt', () => {
  it('a consistent v1 receipt: its digest, name, record (its text, big integers exact), service, date and size', () => {
    expect(readReceipt(receiptText(CONTENT))).toEqual({
      consistent: true,
      format: 'v1',
      sha256: HASH,
      name: 'app.tar.gz',
      recordJson: RECORD.trim(),
      baseUrl: 'https://notary.example',
      proof: null,
      registeredAt: CONTENT.registeredAt,
      size: 1234,
    });
  });

  it('a receipt nested deeper than MAX_RECEIPT_DEPTH is invalid, however deep (no recursion meets it)', () => {
    const nested = (depth: number) =>
      receiptText(CONTENT).replace('"status"', `"deep":${'['.repeat(depth)}${']'.repeat(depth)},"status"`);
    expect(readReceipt(nested(MAX_RECEIPT_DEPTH - 3))).toMatchObject({ consistent: true });
    for (const depth of [MAX_RECEIPT_DEPTH, 100_000]) {
      expect(readReceipt(nested(depth))).toEqual({
        consistent: false,
        reason: `the receipt nests more than ${MAX_RECEIPT_DEPTH} levels deep`,
      });
    }
  });

  it('a bare record (receipts before v1) is read as one, of any case, unknown fields and all', () => {
    for (const text of [readFixture('record.json'), sampleRecord(HASH.toUpperCase(), { future: { x: [1] } })]) {
      expect(readReceipt(`${text}\n`)).toMatchObject({
        consistent: true,
        format: 'record',
        sha256: (JSON.parse(text) as { hash: string }).hash.toLowerCase(),
        recordJson: text.trim(),
        baseUrl: undefined,
        proof: null,
      });
    }
  });

  it("a record carrying a receipt's members is still the record of its own hash (a v1 receipt has no `hash`)", () => {
    const other = sha('never sent');
    const text = sampleRecord(HASH, {
      type: 'notarize-receipt',
      version: 1,
      document: { name: 'other.bin', sha256: other, size: null },
      record: { hash: other },
      service: { baseUrl: 'https://notary.example', verificationUrl: `https://notary.example/verification/${other}` },
      registeredAt: '2026-01-01T00:00:00Z',
      proof: null,
    });
    expect(readReceipt(text)).toMatchObject({ consistent: true, format: 'record', sha256: HASH, baseUrl: undefined });
  });

  // notarize's own output lines carry a digest too: `register --output ndjson` > x.notarization.json is no receipt.
  const pending = JSON.stringify({ schemaVersion: 1, file: 'app.bin', hash: HASH, status: 'pending', session: {} });
  const failed = JSON.stringify({ schemaVersion: 1, file: 'app.bin', hash: HASH, status: 'failed', error: {} });
  it.each([
    ["a register line of a pending registration (notarize's own output)", pending, 'description: '],
    ["a register line of a failed registration (notarize's own output)", failed, 'description: '],
    ['a hash alone', `{"hash":"${HASH}"}`, 'description: '],
    ['a record without its userId', sampleRecord(HASH, { userId: undefined }), 'userId: '],
    [
      'a record whose creationDate is a string',
      sampleRecord(HASH, { creationDate: '1649855665000' }),
      'creationDate: ',
    ],
    ['a record whose custody is the string "false"', sampleRecord(HASH, { custody: 'false' }), 'custody: '],
    ['a record whose tags are null', sampleRecord(HASH, { tags: null }), 'tags: '],
  ])('a bare record that is no notarization record is invalid: %s', (_, text, issue) => {
    const read = readReceipt(text);
    expect(read).toMatchObject({ consistent: false });
    expect(read.consistent === false && read.reason).toMatch(
      new RegExp(`^the receipt is neither a notarize receipt nor a notarization record: ${issue}`),
    );
  });

  it.each(['pending', 'not_registered', 'failed', 'REGISTERED', ''])(
    'a bare record whose status is %j, not "registered", is of no completed registration: invalid',
    (status) => {
      expect(readReceipt(sampleRecord(HASH, { status }))).toEqual({
        consistent: false,
        reason: `the receipt is a notarization record of no completed registration: its status is ${JSON.stringify(status)}, not "registered"`,
      });
    },
  );

  it('a record with a hash of any case is of its document', () => {
    const text = edited((r) => (r.record.hash = HASH.toUpperCase()));
    expect(readReceipt(text)).toMatchObject({ consistent: true, sha256: HASH });
  });

  it('a trailing slash on the base URL is not a contradiction', () => {
    const text = edited((r) => (r.service.baseUrl = 'https://notary.example/'));
    expect(readReceipt(text)).toMatchObject({ consistent: true, baseUrl: 'https://notary.example' });
  });

  const other = sha('other');
  it.each([
    ['not JSON', '{"type": ', 'the receipt is not JSON'],
    ['a JSON array', '[]', 'the receipt is not a JSON object'],
    [
      'an object that is neither',
      '{"hash": "abc"}',
      'the receipt is neither a notarize receipt nor a notarization record',
    ],
    [
      'another type',
      edited((r) => (r.type = 'sigstore-bundle')),
      'the receipt\'s type is "sigstore-bundle", not "notarize-receipt"',
    ],
    ['another version', edited((r) => (r.version = 2)), 'unsupported receipt version 2'],
    // r107: it said "unsupported receipt version undefined".
    ['no version', edited((r) => delete (r as { version?: number }).version), 'the receipt has no version'],
    [
      'a changed document digest',
      edited((r) => (r.document.sha256 = other)),
      `the receipt's record is of ${HASH}, not of its document's digest ${other}`,
    ],
    [
      'a changed record hash',
      edited((r) => (r.record.hash = other)),
      `the receipt's record is of ${other}, not of its document's digest ${HASH}`,
    ],
    [
      'a verification URL of another hash',
      edited((r) => (r.service.verificationUrl = `https://notary.example/verification/${other}`)),
      `the receipt's verificationUrl https://notary.example/verification/${other} is not https://notary.example/verification/${HASH}`,
    ],
    [
      'a digest in capitals',
      edited((r) => (r.document.sha256 = HASH.toUpperCase())),
      'the receipt is malformed: document.sha256: expected 64 lowercase hex digits',
    ],
    ['no record', edited((r) => delete (r as { record?: unknown }).record), 'the receipt is malformed: record: '],
    ['a negative size', edited((r) => (r.document.size = -1)), 'the receipt is malformed: document.size: '],
    ['a date that is none', edited((r) => (r.registeredAt = 'yesterday')), 'the receipt is malformed: registeredAt: '],
    [
      'a proof of an unknown type',
      edited((r) => (r.proof = { type: 'x' } as unknown as ReceiptFields['proof'])),
      'the receipt is malformed: proof.type: ',
    ],
  ])('%s is invalid, saying why', (_, text, reason) => {
    const read = readReceipt(text);
    expect(read.consistent).toBe(false);
    expect(read.consistent === false && read.reason).toMatch(
      new RegExp(`^${reason.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
    );
  });
});

describe('receipts with an inclusion proof (aggregate registrations)', () => {
  // Leaf 2 of the tree of 5 of test/fixtures/merkle/vectors.json.
  const { sha256, root, proof } = vectorLeaf(5, 2);
  const content: ReceiptContent = {
    document: { name: 'c.txt', sha256, size: 10 },
    recordJson: `{"hash":"${root}","status":"registered"}`,
    baseUrl: 'https://notary.example',
    registeredAt: '2026-11-24T01:02:03.456Z',
    proof,
  };
  const withProof = (change: (p: typeof proof) => void) => {
    const receipt = JSON.parse(receiptText(content)) as ReceiptFields & { proof: typeof proof };
    change(receipt.proof);
    return JSON.stringify(receipt);
  };

  it('is consistent when its proof leads from its document to its record hash, the root its URL names', () => {
    const text = receiptText(content);
    expect(JSON.parse(text)).toMatchObject({
      proof,
      service: { verificationUrl: `https://notary.example/verification/${root}` },
    });
    expect(readReceipt(text)).toMatchObject({ consistent: true, sha256 });
  });

  it.each([
    ['a wrong salt', (p: typeof proof) => (p.leafSalt = 'a'.repeat(64)), 'does not lead from its document to its root'],
    ['a wrong index', (p: typeof proof) => (p.leafIndex = 3), 'does not lead from its document to its root'],
    ['a path element changed', (p: typeof proof) => (p.path = ['b'.repeat(64), ...p.path.slice(1)]), 'does not lead'],
    ['a path too short', (p: typeof proof) => (p.path = p.path.slice(1)), 'is no proof for leaf 2 of a tree of 5'],
    [
      'a path too long',
      (p: typeof proof) => (p.path = [...p.path, 'c'.repeat(64)]),
      'is no proof for leaf 2 of a tree of 5',
    ],
    ['an index out of the tree', (p: typeof proof) => (p.leafIndex = 5), 'is no proof for leaf 5 of a tree of 5'],
    ['a root that is not the record hash', (p: typeof proof) => (p.root = 'd'.repeat(64)), "not of its proof's root"],
  ])('%s: invalid', (_, change, reason) => {
    const read = readReceipt(withProof(change));
    expect(read.consistent).toBe(false);
    expect(read.consistent === false && read.reason).toContain(reason);
  });
});

describe('redactedReceipt', () => {
  /** IO's own redaction, as register and receipt apply it. */
  function redactorOf(...secrets: string[]): (text: string) => string {
    const io = new IO({
      stdout: { write: () => true },
      stderr: { write: () => true },
      stdin: process.stdin,
      stdinIsTTY: false,
      stderrIsTTY: false,
      colour: false,
    });
    for (const secret of secrets) io.addSecret(secret);
    return (text) => io.redact(text);
  }

  it('leaves a receipt without a secret as it is', () => {
    const text = receiptText(CONTENT);
    expect(redactedReceipt(text, HASH, redactorOf('sandbox_0123456789abcdef'))).toEqual({ text, redacted: false });
  });

  it('removes a key echoed in the record, however JSON spells it, and the receipt still holds together', () => {
    const key = 'sk"live\\0123456789';
    const record = `{"hash":"${HASH}","description":${JSON.stringify(`echo ${key}`)},"assetId":12345678901234567890}`;
    const text = receiptText({ ...CONTENT, recordJson: record });
    const { text: written, redacted } = redactedReceipt(text, HASH, redactorOf(key));
    expect(redacted).toBe(true);
    expect(written).not.toContain(JSON.stringify(key).slice(1, -1));
    expect(written).toContain('"description":"echo [redacted]"');
    // The rest of the record is still the service's text, big number included.
    expect(written).toContain('"assetId":12345678901234567890');
    expect(readReceipt(written)).toMatchObject({ consistent: true, sha256: HASH });
  });

  it('writes none when removing the secret would break the receipt: NotarizeError, exit 1', () => {
    // A "secret" that is part of what the receipt vouches for: removing it leaves no receipt of HASH.
    const error = (() => {
      try {
        redactedReceipt(receiptText(CONTENT), HASH, redactorOf(HASH.slice(0, 20)));
      } catch (thrown) {
        return thrown;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(NotarizeError);
    expect(error).toMatchObject({ code: 'receipt_secret', exitCode: 1 });
  });
});

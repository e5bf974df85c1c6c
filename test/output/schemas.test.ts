/**
 * The shipped JSON Schemas (schemas/*.schema.json) against real outputs:
 * every item-result kind `register` and `verify` print (JSON array and
 * NDJSON), and the receipts `register --receipt-dir` and `notarize receipt`
 * write, validated with Ajv (JSON Schema 2020-12, formats checked).
 */
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formatsPlugin from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { receiptText } from '../../src/core/receipt-format.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { vectorLeaf } from '../helpers/merkle.js';
import { describeRun, REPO_ROOT } from '../helpers/cli.js';
import { BASE_URL_CASES, REGISTERED_AT_CASES } from '../helpers/receipts.js';
import { parseNdjson, parseResults } from '../helpers/results.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

const ajv = new Ajv2020({ allErrors: true, strict: true });
// ajv-formats is CommonJS with `exports.default`: under Node's ESM interop the plugin is that property.
const addFormats = formatsPlugin.default;
addFormats(ajv);
const schema = (name: string) => JSON.parse(readFileSync(join(REPO_ROOT, 'schemas', name), 'utf8')) as object;
const validateReceipt = ajv.compile(schema('receipt-v1.schema.json'));
const validateResult = ajv.compile(schema('result-v1.schema.json'));

function expectValid(validate: typeof validateResult, value: unknown): void {
  const valid = validate(value);
  expect(validate.errors ?? [], JSON.stringify(value).slice(0, 300)).toEqual([]);
  expect(valid).toBe(true);
}

describe('schemas/result-v1.schema.json', () => {
  it('every status register and verify print validates, as a JSON array and as NDJSON', async () => {
    const seen = new Set<string>();
    const check = (results: { status: string }[]) => {
      for (const result of results) {
        expectValid(validateResult, result);
        seen.add(result.status);
      }
    };
    const docs = bed.path('docs');
    await bed.write('docs/a.txt', 'schema a\n');
    await bed.write('docs/b.txt', 'schema b\n');
    await bed.write('docs/pending.txt', 'schema pending\n');
    symlinkSync(bed.path('docs/a.txt'), join(docs, 'link.txt'));
    const receipts = bed.path('receipts');

    // registered (with receipts), skipped (a link met walking), failed (missing), then already-registered.
    const first = await bed.main([
      'register',
      '-r',
      docs,
      '--exclude',
      'pending.txt',
      bed.path('missing.txt'),
      '--receipt-dir',
      receipts,
      '--output',
      'ndjson',
    ]);
    expect(first.code, describeRun(first)).toBe(1);
    check(parseNdjson(first.stdout));
    const again = await bed.main(['register', bed.path('docs/a.txt'), bed.path('docs/b.txt'), '--json']);
    check(parseResults(again.stdout));
    // pending; then already-registered on the service's word (409) from an empty store: record null, a message.
    const pending = await bed.main([
      'register',
      bed.path('docs/pending.txt'),
      bed.path('docs/a.txt'),
      '--no-complete',
      '--json',
    ]);
    check(parseResults(pending.stdout));
    const cold = await bed.main(['register', bed.path('docs/a.txt'), bed.path('docs/b.txt'), '--json'], {
      env: { NOTARIZE_CONFIG_DIR: bed.path('cold-store') },
    });
    const coldResults = parseResults(cold.stdout);
    expect(coldResults[0]).toMatchObject({ status: 'already-registered', record: null });
    check(coldResults);

    // verify: verified by receipt and by the ledger, modified, invalid, unknown, failed, skipped.
    writeFileSync(bed.path('docs/b.txt'), 'schema b, changed\n');
    const receiptOfA = join(receipts, 'a.txt.notarization.json');
    await bed.write('docs/c.txt', 'never registered\n');
    writeFileSync(join(receipts, 'c.txt.notarization.json'), '{"type":"notarize-receipt","version":1}');
    const verify = await bed.main([
      'verify',
      '-r',
      docs,
      bed.path('missing.txt'),
      '--receipt-dir',
      receipts,
      '--output',
      'ndjson',
    ]);
    check(parseNdjson(verify.stdout));
    const byLedger = await bed.main(['verify', bed.path('docs/pending.txt'), bed.path('docs/a.txt'), '--json'], {
      env: { NOTARIZE_CONFIG_DIR: bed.path('cold-store') },
    });
    check(parseResults(byLedger.stdout));
    writeFileSync(bed.path('unknown.txt'), 'unknown\n');
    check(parseResults((await bed.main(['verify', bed.path('unknown.txt'), receiptOfA, '--json'])).stdout));

    // --aggregate: pending and registered results with a proof, and verify of a document under a root.
    await bed.write('tree/x.txt', 'schema x\n');
    await bed.write('tree/y.txt', 'schema y\n');
    const withProof = (results: ReturnType<typeof parseResults>) => {
      expect(results.every((r) => r.proof !== undefined)).toBe(true);
      return results;
    };
    const aggregate = (extra: string[]) => bed.main(['register', '--aggregate', '-r', bed.path('tree'), ...extra]);
    check(withProof(parseResults((await aggregate(['--no-complete', '--json'])).stdout)));
    check(withProof(parseResults((await aggregate(['--json'])).stdout)));
    check(withProof(parseResults((await bed.main(['verify', '-r', bed.path('tree'), '--json'])).stdout)));

    expect([...seen].sort()).toEqual(
      [
        'already-registered',
        'failed',
        'invalid',
        'modified',
        'pending',
        'registered',
        'skipped',
        'unknown',
        'verified',
      ].sort(),
    );
  });

  it('is strict: a field or status outside version 1 is refused', () => {
    const good = { schemaVersion: 1, file: 'a', hash: 'a'.repeat(64), status: 'verified' };
    expectValid(validateResult, good);
    expect(validateResult({ ...good, status: 'approved' })).toBe(false);
    expect(validateResult({ ...good, extra: true })).toBe(false);
    expect(validateResult({ ...good, hash: 'A'.repeat(64) })).toBe(false);
  });
});

describe('schemas/receipt-v1.schema.json', () => {
  it('validates the receipts register --receipt-dir and notarize receipt write, and refuses a broken one', async () => {
    const doc = await bed.file('doc.txt', 'schema receipt\n');
    const receipts = bed.path('receipts');
    const run = await bed.main(['register', doc, '--receipt-dir', receipts, '--quiet']);
    expect(run.code, describeRun(run)).toBe(0);
    const written = JSON.parse(readFileSync(join(receipts, 'doc.txt.notarization.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expectValid(validateReceipt, written);
    const printed = await bed.main(['receipt', doc]);
    expectValid(validateReceipt, JSON.parse(printed.stdout));
    const byDigest = await bed.main(['register', '--hash', 'e'.repeat(64), '-d', 'by digest', '--quiet']);
    expect(byDigest.code, describeRun(byDigest)).toBe(0);
    const nameless = JSON.parse((await bed.main(['receipt', 'e'.repeat(64)])).stdout) as { document: unknown };
    expect(nameless.document).toMatchObject({ name: null, size: null });
    expectValid(validateReceipt, nameless);

    // A receipt of an aggregate registration: its proof validates too (leaf 0 of the vectors' tree of 3).
    const { sha256, root, proof } = vectorLeaf(3, 0);
    const proofReceipt = receiptText({
      document: { name: 'a', sha256, size: 1 },
      recordJson: `{"hash":"${root}"}`,
      baseUrl: 'https://notary.example',
      registeredAt: '2026-11-24T00:00:00.000Z',
      proof,
    });
    expectValid(validateReceipt, JSON.parse(proofReceipt));

    expect(validateReceipt({ ...written, version: 2 })).toBe(false);
    expect(validateReceipt({ ...written, proof: {} })).toBe(false);
    expect(validateReceipt({ ...written, registeredAt: 'yesterday' })).toBe(false);
    // r107: what the verifiers read otherwise, or refuse: a top-level hash (a bare record for them), and
    // integers past 2^53 - 1.
    expect(validateReceipt({ ...written, hash: (written.record as { hash: string }).hash })).toBe(false);
    expect(validateReceipt({ ...written, document: { ...(written.document as object), size: 2 ** 53 } })).toBe(false);
    expectValid(validateReceipt, { ...written, document: { ...(written.document as object), size: 2 ** 53 - 1 } });
    const big = JSON.parse(proofReceipt) as { proof: Record<string, unknown> };
    for (const field of ['leafIndex', 'treeSize']) {
      expect(validateReceipt({ ...big, proof: { ...big.proof, [field]: 2 ** 53 } }), field).toBe(false);
    }

    // Stricter than the two verifiers, as its description says: what they refuse, it refuses.
    const record = written.record as { hash: string };
    for (const [baseUrl, verdict] of BASE_URL_CASES) {
      const moved = { ...written, service: { baseUrl, verificationUrl: `${baseUrl}/verification/${record.hash}` } };
      expect(validateReceipt(moved), baseUrl).toBe(verdict === 'verified');
    }
    const base = (written.service as { baseUrl: string }).baseUrl;
    expect(validateReceipt({ ...written, service: { baseUrl: base, verificationUrl: `${base}/v` } })).toBe(false);
    for (const [registeredAt, verdict] of REGISTERED_AT_CASES) {
      expect(validateReceipt({ ...written, registeredAt }), registeredAt).toBe(verdict === 'verified');
    }
  });
});

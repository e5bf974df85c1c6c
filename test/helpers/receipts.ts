/**
 * Checking a receipt file notarize wrote against what it must hold
 * (src/core/receipt-format.ts): the v1 frame, the document, the service, and
 * the record exactly as the service sent it when its bytes are known.
 */
import { expect } from 'vitest';

/** What a v1 receipt must say. */
export interface ExpectedReceipt {
  name: string | null;
  sha256: string;
  size: number | null;
  baseUrl: string;
  /** The record as an object (from the sandbox's book). */
  record: unknown;
  /** The record's bytes as the service sent them, when captured (a recording proxy). */
  recordText?: string;
}

/** Asserts that `text` is the v1 receipt described; returns it parsed. */
export function expectReceipt(text: string, expected: ExpectedReceipt): Record<string, unknown> {
  const receipt = JSON.parse(text) as Record<string, unknown>;
  expect(receipt).toEqual({
    type: 'notarize-receipt',
    version: 1,
    document: { name: expected.name, sha256: expected.sha256, size: expected.size },
    record: expected.record,
    service: { baseUrl: expected.baseUrl, verificationUrl: `${expected.baseUrl}/verification/${expected.sha256}` },
    registeredAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    proof: null,
  });
  expect(Object.keys(receipt)).toEqual(['type', 'version', 'document', 'record', 'service', 'registeredAt', 'proof']);
  expect(text.endsWith('}\n')).toBe(true);
  if (expected.recordText !== undefined) expect(text).toContain(`\n  "record": ${expected.recordText},\n`);
  return receipt;
}

/** A receipt parsed for a test to edit field by field. */
export interface ReceiptFields {
  [key: string]: unknown;
  document: Record<string, unknown>;
  record: Record<string, unknown>;
  service: Record<string, unknown>;
  /** The inclusion proof, as a test may spoil it. */
  proof: {
    leafSalt: string;
    leafIndex: number;
    treeSize: number;
    path: string[];
    root: string;
    [key: string]: unknown;
  };
}

/**
 * baseUrls and what both verifiers make of a receipt whose verificationUrl is
 * made from each (test/contrib/verify-receipt.test.ts); the receipt schema
 * accepts exactly the 'verified' ones (test/output/schemas.test.ts). The page
 * a reader is sent to is made from baseUrl: an http(s) URL, no credentials,
 * query or fragment, no control characters.
 */
export const BASE_URL_CASES = [
  ['', 'invalid'],
  ['https://app.example\u001b[31m', 'invalid'],
  ['https://app.example/\u202e', 'invalid'],
  ['https://user:pw@app.example', 'invalid'],
  ['https://app.example/a?b=c', 'invalid'],
  ['https://app.example/a#b', 'invalid'],
  ['ftp://app.example', 'invalid'],
  ['https://app.example/api', 'verified'],
  // A '%' not followed by two hex digits: parseBaseUrl takes it (a service may live there), so both do.
  ['https://app.example/api%zz', 'verified'],
  ['http://[::1]:8080', 'verified'],
  // RFC 3986 allows '@' in a path (parseBaseUrl takes it); not '|', which parseBaseUrl refuses.
  ['https://app.example/a@b', 'verified'],
  ['https://notary_svc.example', 'verified'],
  ['https://app.example/a|b', 'invalid'],
] as const;

/** registeredAt as zod's z.iso.datetime({ offset: true }) reads it (a real date and time, ASCII digits), as BASE_URL_CASES. */
export const REGISTERED_AT_CASES = [
  ['2026-13-45T25:61:61Z', 'invalid'],
  ['2026-02-30T10:00:00Z', 'invalid'],
  ['2100-02-29T10:00:00Z', 'invalid'],
  ['2026-11-24T01:02:03+24:00', 'invalid'],
  ['2026-11-24T01:02:60Z', 'invalid'],
  ['2026-12-31T23:59:60Z', 'invalid'],
  ['2026-11-24t01:02:03z', 'invalid'],
  ['2026-11-24 01:02:03Z', 'invalid'],
  ['2026-11-24T01:02Z', 'invalid'],
  ['2026-11-24T01:02:03', 'invalid'],
  ['\u0662\u0660\u0662\u0666-11-24T01:02:03Z', 'invalid'],
  ['2026-11-24T01:02:03.\u0664Z', 'invalid'],
  ['2026-11-24T01:02:03Z\n', 'invalid'],
  ['2024-02-29T23:59:59.5-23:59', 'verified'],
  ['2026-11-24T01:02:03+05:30', 'verified'],
] as const;

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

/**
 * The receipt, version 1: what `register --receipt-dir` and `notarize
 * receipt` write, and what `verify` (and contrib/verify-receipt.py, and
 * anyone following docs/verify-by-hand.md) checks a document against, with
 * no network, no account and no store. schemas/receipt-v1.schema.json
 * describes the same format for other tools.
 *
 *   { "type": "notarize-receipt", "version": 1,
 *     "document": { "name", "sha256", "size" },
 *     "record": { ...the notarization record, exactly as the service sent it },
 *     "service": { "baseUrl", "verificationUrl" },
 *     "registeredAt": "<ISO 8601>",
 *     "proof": null | { "type": "rfc9162-sha256-salted-leaf", "leafSalt",
 *                       "leafIndex", "treeSize", "path": [...], "root" } }
 *
 * `proof` is null when the document's own digest was registered. When many
 * documents were registered under one Merkle root (aggregate registration),
 * it leads from the document to that root, the record's hash (merkle.ts).
 *
 * A receipt is evidence, not a signature: anyone can write one that holds
 * together. What it gives is the digest to compare and where the service
 * shows the registration (verificationUrl). So reading one checks only that
 * it is consistent (`readReceipt`): its record is of the registered digest
 * (its document's, or its proof's root), its verification URL is of that
 * digest, and its proof, if any, leads from its document there. Receipts
 * written before version 1 were the bare record; they are still read, but
 * only a record of a completed registration is one (readBareRecord). An
 * object with a top-level `hash` is always read as a record, never as v1
 * (which has none), whatever else it holds: a service's record of one
 * document that carried a receipt's members naming another would otherwise
 * verify that other document.
 */
import { z } from 'zod';
import { verificationUrl } from '../api/pages.js';
import { COMPLETED_STATUS, notarizationRecordSchema } from '../api/schemas.js';
import { hasKeyTwice, jsonDepth, memberText, withoutByteOrderMark } from '../exact-json.js';
import { EXIT, NotarizeError } from '../errors.js';
import { BASE_URL_PATTERN } from '../settings.js';
import { leafHash, rootFromPath } from './merkle.js';
import { YOUR_SECRET } from '../secrets.js';

export const RECEIPT_TYPE = 'notarize-receipt';
export const RECEIPT_VERSION = 1;
/**
 * A receipt nested deeper than this is invalid: far deeper than any record,
 * and deep enough to exhaust a recursive reader (contrib/verify-receipt.py
 * refuses it the same way).
 */
export const MAX_RECEIPT_DEPTH = 64;
/** The deepest record a receipt can carry (it sits one level down): a deeper one is no record notarize takes. */
export const MAX_RECORD_DEPTH = MAX_RECEIPT_DEPTH - 1;

/** The document a receipt is of: its name (null for standard input or a bare digest) and size (null if unknown). */
export interface ReceiptDocument {
  name: string | null;
  sha256: string;
  size: number | null;
}

/** What a receipt is made of. */
export interface ReceiptContent {
  document: ReceiptDocument;
  /** The record exactly as the service sent it (the ledger keeps that text). */
  recordJson: string;
  /** The service's base URL, without a trailing slash. */
  baseUrl: string;
  /** When the registration was completed (ISO 8601). */
  registeredAt: string;
  /** From the document to the registered root, when many were registered under one (absent: the document itself). */
  proof?: InclusionProof;
}

/** Stands for the record while the rest is serialised; no JSON text of ours can contain it (see receiptText). */
const RECORD_SLOT = '\u0000record\u0000';

/**
 * The text of a v1 receipt: two-space indented, keys in the documented
 * order, a final line feed, and the record spliced in as the exact text the
 * service sent (unknown fields, number spellings and all). The slot's JSON
 * spelling, `"\u0000record\u0000"`, cannot come out of any other string:
 * JSON.stringify writes a backslash in a name as `\\`.
 */
export function receiptText(content: ReceiptContent): string {
  const { document, baseUrl, registeredAt, proof } = content;
  // readReceipt refuses such a receipt (JSON readers differ on which key they keep): none is written.
  if (hasKeyTwice(content.recordJson)) {
    const hash = proof?.root ?? document.sha256;
    throw new NotarizeError(
      'record_key_twice',
      EXIT.failed,
      `no receipt: the service's record of ${hash} has a key twice in one object, and a receipt of it would be refused`,
      { hint: `the record is kept in the ledger as the service sent it: \`notarize show ${hash}\` prints it` },
    );
  }
  const receipt = {
    type: RECEIPT_TYPE,
    version: RECEIPT_VERSION,
    document: { name: document.name, sha256: document.sha256, size: document.size },
    record: RECORD_SLOT,
    service: { baseUrl, verificationUrl: verificationUrl(baseUrl, proof?.root ?? document.sha256) },
    registeredAt,
    proof: proof ?? null,
  };
  const text = JSON.stringify(receipt, null, 2);
  return `${text.replace(JSON.stringify(RECORD_SLOT), () => content.recordJson.trim())}\n`;
}

/** A receipt's text as it may be written, and whether a secret was removed from it. */
export interface RedactedReceipt {
  text: string;
  redacted: boolean;
}

/**
 * `text`, the receipt of the document of digest `sha256` (receiptText), with
 * `redact` applied (IO.redact: the API key, tokens, a proxy's password, as
 * every line printed is scrubbed of them). A receipt travels with its
 * document, readable by anyone (0644, an artifact): a secret a service
 * echoed into its record (a description, any field) must not go with it,
 * while the ledger, private, keeps the record as the service sent it. The
 * redacted receipt must still hold together (readReceipt: the record of
 * the same digest, as verify reads it); when removing the secret broke it,
 * none is written: NotarizeError, exit 1 (the registration was sent).
 */
export function redactedReceipt(text: string, sha256: string, redact: (text: string) => string): RedactedReceipt {
  const redacted = redact(text);
  if (redacted === text) return { text, redacted: false };
  const read = readReceipt(redacted);
  if (read.consistent && read.sha256 === sha256.toLowerCase()) return { text: redacted, redacted: true };
  throw new NotarizeError(
    'receipt_secret',
    EXIT.failed,
    `no receipt written for ${sha256}: the service's record holds ${YOUR_SECRET}, and without it the receipt would not hold together`,
    {
      hint: `the record is kept in the ledger as the service sent it (\`notarize show ${sha256}\`); its verification page still confirms the registration`,
    },
  );
}

/** The warning for a receipt written with a secret removed (redactedReceipt): where, and why it differs from the record. */
export function redactedReceiptWarning(where: string, recordFrom?: string): string {
  const kept =
    recordFrom === undefined
      ? 'the ledger keeps the record as the service sent it'
      : `the record was taken from ${recordFrom}, left as it is`;
  return `${where}: it held a secret of yours, an API key, a token or a proxy password (echoed in the service's record, or in a file's name); it is written with [redacted] in its place (${kept})`;
}

/** A receipt that holds together: the digest it vouches for, and what it says about it. */
export interface ConsistentReceipt {
  consistent: true;
  /** 'v1', or 'record' for a receipt written before v1 (the bare record). */
  format: 'v1' | 'record';
  /** The digest of the document it is of (lowercase). */
  sha256: string;
  /** The document's name, when the receipt says. */
  name: string | null;
  /** The record, as JSON text. */
  recordJson: string;
  /** The service it names (its verification page is of the registered digest); undefined for a bare record, which does not say. */
  baseUrl: string | undefined;
  /** For a document registered under a Merkle root: its proof, checked, leading to the record's hash. */
  proof: InclusionProof | null;
  /** When the registration was completed, as a v1 receipt says; undefined for a bare record. */
  registeredAt?: string;
  /** The document's size as a v1 receipt says (null: unknown); undefined for a bare record. */
  size?: number | null;
}

/** A receipt that contradicts itself or cannot be read as one, and why. */
export interface InvalidReceipt {
  consistent: false;
  reason: string;
}

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'expected 64 lowercase hex digits');

export const PROOF_TYPE = 'rfc9162-sha256-salted-leaf';

/** An RFC 9162 inclusion proof of a salted leaf (merkle.ts): from the document to the registered root. */
const proofSchema = z.object({
  type: z.literal(PROOF_TYPE),
  leafSalt: sha256Hex,
  leafIndex: z.int().nonnegative(),
  treeSize: z.int().positive(),
  // A tree of 2^64 leaves has paths of 64 hashes: no proof is longer.
  path: z.array(sha256Hex).max(64),
  root: sha256Hex,
});
export type InclusionProof = z.infer<typeof proofSchema>;

const receiptSchema = z.object({
  type: z.literal(RECEIPT_TYPE),
  version: z.literal(RECEIPT_VERSION),
  document: z.object({
    name: z.string().nullable(),
    sha256: sha256Hex,
    size: z.int().nonnegative().nullable(),
  }),
  record: z.looseObject({ hash: z.string() }),
  service: z.object({ baseUrl: z.string(), verificationUrl: z.string() }),
  registeredAt: z.iso.datetime({ offset: true }),
  proof: proofSchema.nullable(),
});

/** The first problem zod found, as "field: message". */
function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0]!;
  const where = issue.path.join('.');
  return where ? `${where}: ${issue.message}` : issue.message;
}

/**
 * Reads a receipt's text and checks that it holds together (see the module
 * comment). Never throws: anything wrong is an InvalidReceipt saying what.
 */
export function readReceipt(saved: string): ConsistentReceipt | InvalidReceipt {
  const invalid = (reason: string): InvalidReceipt => ({ consistent: false, reason });
  // A byte order mark made a good receipt 'not JSON', and register's re-run refuse it as no receipt
  // of its document, with a way out that paid again (--force).
  const text = withoutByteOrderMark(saved);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return invalid('the receipt is not JSON');
  }
  // Deeper than any record: refused here, as by verify-receipt.py, before any recursion meets it.
  if (jsonDepth(text) > MAX_RECEIPT_DEPTH)
    return invalid(`the receipt nests more than ${MAX_RECEIPT_DEPTH} levels deep`);
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return invalid('the receipt is not a JSON object');
  // JSON.parse keeps the last of two equal keys, other readers the first: such a receipt says two things.
  if (hasKeyTwice(text)) return invalid('the receipt has a key twice in one object');
  // A v1 receipt has no `hash` of its own; the service's record always has one, and may carry any
  // other member, a receipt's `type`, `document` and `record` included: it is the record of its hash.
  if (!('type' in value) || 'hash' in value) return readBareRecord(value, text);
  const { type, version } = value as { type: unknown; version: unknown };
  if (type !== RECEIPT_TYPE) return invalid(`the receipt's type is ${JSON.stringify(type)}, not "${RECEIPT_TYPE}"`);
  if (version !== RECEIPT_VERSION) {
    return invalid(
      version === undefined ? 'the receipt has no version' : `unsupported receipt version ${JSON.stringify(version)}`,
    );
  }
  const parsed = receiptSchema.safeParse(value);
  if (!parsed.success) return invalid(`the receipt is malformed: ${firstIssue(parsed.error)}`);
  const { document, record, service, proof, registeredAt } = parsed.data;
  // What was registered: the document's own digest, or the root its proof leads to.
  const registered = proof?.root ?? document.sha256;
  if (record.hash.toLowerCase() !== registered) {
    return invalid(
      proof
        ? `the receipt's record is of ${record.hash}, not of its proof's root ${registered}`
        : `the receipt's record is of ${record.hash}, not of its document's digest ${document.sha256}`,
    );
  }
  if (proof) {
    const problem = proofProblem(document.sha256, proof);
    if (problem) return invalid(problem);
  }
  // The verification page a reader is sent to is made from it: an empty one, or one holding control characters, is refused.
  if (!BASE_URL_PATTERN.test(service.baseUrl)) {
    return invalid(
      "the receipt's service.baseUrl is not an http(s) URL of plain characters without credentials, query or fragment",
    );
  }
  const baseUrl = service.baseUrl.replace(/\/$/, '');
  const expectedUrl = verificationUrl(baseUrl, registered);
  if (service.verificationUrl !== expectedUrl) {
    return invalid(`the receipt's verificationUrl ${service.verificationUrl} is not ${expectedUrl}`);
  }
  return {
    consistent: true,
    format: 'v1',
    sha256: document.sha256,
    name: document.name,
    // The record's own text: JSON.parse changed big integers and the like (exact-json.ts).
    recordJson: memberText(text, 'record')!,
    baseUrl,
    proof,
    registeredAt,
    size: document.size,
  };
}

/** Why `proof` does not lead from the document of digest `sha256` to its root; undefined when it does. */
export function proofProblem(sha256: string, proof: InclusionProof): string | undefined {
  const leaf = leafHash(Buffer.from(sha256, 'hex'), Buffer.from(proof.leafSalt, 'hex'));
  const root = rootFromPath(
    proof.leafIndex,
    proof.treeSize,
    leaf,
    proof.path.map((hash) => Buffer.from(hash, 'hex')),
  );
  if (root === undefined) {
    return `the receipt's proof is no proof for leaf ${proof.leafIndex} of a tree of ${proof.treeSize} (index out of range, or a path of the wrong length)`;
  }
  if (root.toString('hex') !== proof.root) {
    return `the receipt's proof does not lead from its document to its root ${proof.root} (a wrong salt, index or path)`;
  }
  return undefined;
}

/**
 * Whether `recordJson` has the shape of the record of a completed
 * registration, as the client requires of forfait's answer
 * (notarizationRecordSchema, status "registered"): a v1 receipt's record is
 * only checked for its `hash`, which is all verify needs of it.
 */
export function isCompletedRecord(recordJson: string): boolean {
  let value: unknown;
  try {
    value = JSON.parse(recordJson);
  } catch {
    return false;
  }
  return completedRecordProblem(value) === undefined;
}

/** Why `value` is not the record of a completed registration (the shape forfait answers with); undefined when it is. */
function completedRecordProblem(value: unknown): string | undefined {
  const record = notarizationRecordSchema.safeParse(value);
  if (!record.success)
    return `the receipt is neither a notarize receipt nor a notarization record: ${firstIssue(record.error)}`;
  if (record.data.status !== COMPLETED_STATUS) {
    return `the receipt is a notarization record of no completed registration: its status is ${JSON.stringify(record.data.status)}, not "${COMPLETED_STATUS}"`;
  }
  return undefined;
}

/**
 * A receipt written before v1: the record alone, whose `hash` is the
 * document's digest. Any JSON object with a `hash` is not one: notarize's own
 * result lines (`register --output ndjson`, a "pending" or "failed" line among
 * them) carry the digest too. Only the service's record of a completed
 * registration is: of the shape the client requires of forfait's answer
 * (notarizationRecordSchema, unchanged since the first notarize, so every
 * bare record notarize wrote has it), with the status a completion gives.
 * contrib/verify-receipt.py checks the same.
 */
function readBareRecord(value: object, text: string): ConsistentReceipt | InvalidReceipt {
  const hash = (value as { hash?: unknown }).hash;
  if (typeof hash !== 'string' || !/^[0-9a-fA-F]{64}$/.test(hash)) {
    return { consistent: false, reason: 'the receipt is neither a notarize receipt nor a notarization record' };
  }
  const problem = completedRecordProblem(value);
  if (problem !== undefined) return { consistent: false, reason: problem };
  return {
    consistent: true,
    format: 'record',
    sha256: hash.toLowerCase(),
    name: null,
    recordJson: text.trim(),
    baseUrl: undefined,
    proof: null,
  };
}

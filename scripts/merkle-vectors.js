/**
 * Writes test/fixtures/merkle/vectors.json: Merkle trees of 1 to 17 leaves
 * and one of 1,000, with their roots and every leaf's audit path, built
 * straight from RFC 9162's definitions (section 2.1.1 MTH, section 2.1.3.1
 * PATH), recursively and independently of src/ (node:crypto only), over the
 * salted leaves of notarize's aggregate receipts:
 *   document_i = SHA-256("document <i>"), salt_i = SHA-256("salt <i>"),
 *   leaf_i = SHA-256(0x00 || document_i || salt_i),
 *   node = SHA-256(0x01 || left || right).
 * `node scripts/merkle-vectors.js` rewrites the file; test/core/merkle.test.ts
 * checks that it is what this script makes.
 */
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const sha256 = (...parts) => {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
};
const leafOf = (i) => {
  const document = sha256(`document ${i}`);
  const salt = sha256(`salt ${i}`);
  return { document, salt, leaf: sha256(Buffer.from([0]), document, salt) };
};
/** The largest power of two smaller than n. */
const split = (n) => 2 ** Math.ceil(Math.log2(n) - 1);
/** MTH(D[n]) of section 2.1.1, for n >= 1. */
const mth = (d) =>
  d.length === 1 ? d[0] : sha256(Buffer.from([1]), mth(d.slice(0, split(d.length))), mth(d.slice(split(d.length))));
/** PATH(m, D[n]) of section 2.1.3.1. */
const path = (m, d) => {
  if (d.length === 1) return [];
  const k = split(d.length);
  return m < k ? [...path(m, d.slice(0, k)), mth(d.slice(k))] : [...path(m - k, d.slice(k)), mth(d.slice(0, k))];
};

export function vectors() {
  const sizes = [...Array.from({ length: 17 }, (_, i) => i + 1), 1000];
  return {
    source:
      "RFC 9162 section 2.1.1 (MTH) and 2.1.3.1 (PATH) applied literally by scripts/merkle-vectors.js; leaves salted as notarize's aggregate receipts salt them",
    trees: sizes.map((size) => {
      const leaves = Array.from({ length: size }, (_, i) => leafOf(i));
      const hashes = leaves.map((l) => l.leaf);
      return {
        size,
        root: mth(hashes).toString('hex'),
        leaves: leaves.map((l, index) => ({
          index,
          document: l.document.toString('hex'),
          salt: l.salt.toString('hex'),
          leaf: l.leaf.toString('hex'),
          path: path(index, hashes).map((h) => h.toString('hex')),
        })),
      };
    }),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  writeFileSync('test/fixtures/merkle/vectors.json', `${JSON.stringify(vectors())}\n`);
}

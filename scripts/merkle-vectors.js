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
/**
 * MTH of section 2.1.1 over the leaf hashes `d`: mth(lo, n) = MTH(D[lo : lo + n]),
 * for n >= 1. Each subtree's hash is computed once and remembered: PATH asks
 * for the same subtrees again for every leaf (a tree of 1,000 took a million
 * hashes without the memo, 2 s of the suite).
 */
const mthOf = (d) => {
  const memo = new Map();
  const mth = (lo, n) => {
    if (n === 1) return d[lo];
    const key = `${lo}+${n}`;
    let hash = memo.get(key);
    if (hash === undefined) {
      const k = split(n);
      hash = sha256(Buffer.from([1]), mth(lo, k), mth(lo + k, n - k));
      memo.set(key, hash);
    }
    return hash;
  };
  return mth;
};
/** PATH(m, D[lo : lo + n]) of section 2.1.3.1, with `mth` over the same leaves. */
const path = (mth, m, lo, n) => {
  if (n === 1) return [];
  const k = split(n);
  return m < k ? [...path(mth, m, lo, k), mth(lo + k, n - k)] : [...path(mth, m - k, lo + k, n - k), mth(lo, k)];
};

export function vectors() {
  const sizes = [...Array.from({ length: 17 }, (_, i) => i + 1), 1000];
  return {
    source:
      "RFC 9162 section 2.1.1 (MTH) and 2.1.3.1 (PATH) applied literally by scripts/merkle-vectors.js; leaves salted as notarize's aggregate receipts salt them",
    trees: sizes.map((size) => {
      const leaves = Array.from({ length: size }, (_, i) => leafOf(i));
      const mth = mthOf(leaves.map((l) => l.leaf));
      return {
        size,
        root: mth(0, size).toString('hex'),
        leaves: leaves.map((l, index) => ({
          index,
          document: l.document.toString('hex'),
          salt: l.salt.toString('hex'),
          leaf: l.leaf.toString('hex'),
          path: path(mth, index, 0, size).map((h) => h.toString('hex')),
        })),
      };
    }),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  writeFileSync('test/fixtures/merkle/vectors.json', `${JSON.stringify(vectors())}\n`);
}

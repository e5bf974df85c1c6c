/**
 * RFC 9162 inclusion proofs (src/core/merkle.ts) against test vectors built
 * from the RFC's definitions (test/fixtures/merkle/, made by
 * scripts/merkle-vectors.js: trees of 1 to 17 leaves and of 1,000), against
 * the RFC's own example tree, and under tampering.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { leafHash, MerkleTree, nodeHash, rootFromPath } from '../../src/core/merkle.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { MERKLE_VECTORS, type MerkleVectors } from '../helpers/merkle.js';
// @ts-expect-error: a plain JavaScript script without types; it lends only this function.
import { vectors as makeVectors } from '../../scripts/merkle-vectors.js';

const VECTORS = MERKLE_VECTORS;
const hex = (text: string) => Buffer.from(text, 'hex');
const sha = (text: string) => createHash('sha256').update(text).digest();
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest();

/** MTH of RFC 9162 2.1.1, written again here from the definition, for an independent check. */
function mth(leaves: Buffer[]): Buffer {
  if (leaves.length === 1) return leaves[0]!;
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return createHash('sha256')
    .update(Buffer.from([1]))
    .update(mth(leaves.slice(0, k)))
    .update(mth(leaves.slice(k)))
    .digest();
}

describe('the test vectors', () => {
  it('are what scripts/merkle-vectors.js makes from the RFC definitions: sizes 1 to 17 and 1,000', () => {
    expect(VECTORS).toEqual((makeVectors as () => MerkleVectors)());
    expect(VECTORS.trees.map((t) => t.size)).toEqual([...Array.from({ length: 17 }, (_, i) => i + 1), 1000]);
  });

  it('leaves are SHA-256(0x00 || document || salt), and every root is the independent MTH of them', () => {
    for (const tree of VECTORS.trees) {
      for (const leaf of tree.leaves) {
        expect(leafHash(hex(leaf.document), hex(leaf.salt)).toString('hex')).toBe(leaf.leaf);
        expect(leaf.document).toBe(sha(`document ${leaf.index}`).toString('hex'));
      }
      expect(mth(tree.leaves.map((l) => hex(l.leaf))).toString('hex')).toBe(tree.root);
    }
  });

  it('hashes the bytes given, whatever their length: a salt of the wrong length folds to no root it was not made for', () => {
    const [digest, short, long] = [sha('d'), Buffer.alloc(31, 7), Buffer.alloc(33, 7)];
    expect(leafHash(digest, short)).toEqual(sha256(Buffer.concat([Buffer.of(0), digest, short])));
    expect(nodeHash(long, digest)).toEqual(sha256(Buffer.concat([Buffer.of(1), long, digest])));
    // One buffer serves every call: a result is never overwritten by the next.
    const first = nodeHash(digest, digest);
    nodeHash(short, digest);
    leafHash(digest, sha('other'));
    expect(first).toEqual(sha256(Buffer.concat([Buffer.of(1), digest, digest])));
  });

  it('every audit path of every tree folds to its root (RFC 9162 2.1.3.2)', () => {
    let proofs = 0;
    for (const tree of VECTORS.trees) {
      for (const leaf of tree.leaves) {
        const root = rootFromPath(leaf.index, tree.size, hex(leaf.leaf), leaf.path.map(hex));
        expect(root?.toString('hex'), `leaf ${leaf.index} of ${tree.size}`).toBe(tree.root);
        proofs += 1;
      }
    }
    expect(proofs).toBe(1000 + (17 * 18) / 2);
  });
});

describe('MerkleTree: building a tree', () => {
  it('gives every vector tree its root and every leaf its audit path, exactly', () => {
    for (const tree of VECTORS.trees) {
      const built = new MerkleTree(Buffer.concat(tree.leaves.map((l) => hex(l.leaf))));
      expect(built.size).toBe(tree.size);
      expect(built.root.toString('hex')).toBe(tree.root);
      for (const leaf of tree.leaves) {
        expect(built.pathHex(leaf.index), `leaf ${leaf.index} of ${tree.size}`).toEqual(leaf.path);
      }
    }
  });

  it('of any size: the root is the independent MTH, and every path folds to it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 0, max: 1e6 }), (size, seed) => {
        const leaves = Array.from({ length: size }, (_, i) => sha(`leaf ${seed} ${i}`));
        const tree = new MerkleTree(Buffer.concat(leaves));
        expect(tree.root).toEqual(mth(leaves));
        for (let i = 0; i < size; i++) {
          expect(rootFromPath(i, size, leaves[i]!, tree.pathHex(i).map(hex))).toEqual(tree.root);
        }
      }),
      { numRuns: 40 },
    );
  });

  it('refuses no leaves, a leaf that is not 32 bytes, and a leaf index out of range', () => {
    expect(() => new MerkleTree(Buffer.alloc(0))).toThrow(RangeError);
    expect(() => new MerkleTree(Buffer.alloc(33))).toThrow(RangeError);
    const tree = new MerkleTree(Buffer.alloc(64));
    expect(() => tree.pathHex(2)).toThrow(RangeError);
    expect(() => tree.pathHex(-1)).toThrow(RangeError);
    expect(() => tree.pathHex(0.5)).toThrow(RangeError);
    expect(tree.pathHex(1)).toEqual(['00'.repeat(32)]);
  });
});

/** Test data of another implementation: github.com/transparency-dev/merkle (Go), see test/fixtures/merkle/README.md. */
const GO = JSON.parse(readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'merkle', 'transparency-dev.json'), 'utf8')) as {
  leafInputs: string[];
  rootHashes: string[];
  inclusion: {
    path: string;
    leafIdx: number;
    treeSize: number;
    root: string | null;
    leafHash: string | null;
    proof: string[] | null;
    wantErr: boolean;
  }[];
};
const b64 = (text: string | null) => Buffer.from(text ?? '', 'base64');

describe('cross-checked with transparency-dev/merkle (an RFC 6962 implementation in Go)', () => {
  const leaves = GO.leafInputs.map((input) =>
    createHash('sha256')
      .update(Buffer.concat([Buffer.from([0]), hex(input)]))
      .digest(),
  );

  it('MerkleTree gives its roots of every tree of 1 to 8 of its leaves', () => {
    expect(GO.rootHashes).toHaveLength(8);
    for (let size = 1; size <= 8; size++) {
      expect(new MerkleTree(Buffer.concat(leaves.slice(0, size))).root.toString('hex')).toBe(GO.rootHashes[size - 1]);
    }
  });

  it('its inclusion cases: every valid proof folds to its root and MerkleTree makes it; every mutated one fails', () => {
    let valid = 0;
    for (const c of GO.inclusion) {
      const parts = [b64(c.leafHash), b64(c.root), ...(c.proof ?? []).map(b64)];
      const shaped = Number.isSafeInteger(c.leafIdx) && c.leafIdx >= 0 && parts.every((p) => p.length === 32);
      const folded = shaped
        ? rootFromPath(c.leafIdx, c.treeSize, b64(c.leafHash), (c.proof ?? []).map(b64))
        : undefined;
      const ok = folded !== undefined && folded.equals(b64(c.root));
      expect(ok, c.path).toBe(!c.wantErr);
      if (!c.wantErr) valid += 1;
      // The numbered folders are proofs in the trees of LeafInputs(); the others, of single or other leaves.
      if (!c.wantErr && /^testdata\/inclusion\/\d+\//.test(c.path)) {
        expect(b64(c.leafHash).equals(leaves[c.leafIdx]!), c.path).toBe(true);
        const built = new MerkleTree(Buffer.concat(leaves.slice(0, c.treeSize)));
        expect(
          built.pathHex(c.leafIdx).map((h) => hex(h).toString('base64')),
          c.path,
        ).toEqual(c.proof ?? []);
      }
    }
    expect(valid).toBe(6);
    expect(GO.inclusion.length - valid).toBeGreaterThan(80);
  });
});

describe("RFC 9162's example tree of seven leaves (section 2.1.5)", () => {
  // d0..d6 with a = leaf(d0) ... ; the RFC's figure: k = hash(i,j), l = hash(k... ), audit paths listed there.
  const leaves = Array.from({ length: 7 }, (_, i) => leafHash(sha(`d${i}`), sha(`s${i}`)));
  const [a, b, c, d, e, f, j] = leaves as [Buffer, Buffer, Buffer, Buffer, Buffer, Buffer, Buffer];
  const g = nodeHash(a, b);
  const h = nodeHash(c, d);
  const i = nodeHash(e, f);
  const k = nodeHash(g, h);
  const l = nodeHash(i, j);
  const root = nodeHash(k, l);

  it.each([
    ['d0', 0, [b, h, l]],
    ['d3', 3, [c, g, l]],
    ['d4', 4, [f, j, k]],
    ['d6', 6, [i, k]],
  ] as const)('the audit path of %s is the one the RFC lists, and folds to the root', (_, index, path) => {
    expect(rootFromPath(index, 7, leaves[index]!, path)?.equals(root)).toBe(true);
    expect(mth(leaves).equals(root)).toBe(true);
  });
});

describe('tampering makes a proof fail', () => {
  // Not the tree size: RFC 9162's proofs leave it unbound where two sizes give a leaf the same path (leaf 0 of 5 and
  // of 6 leaves); in Certificate Transparency a signed tree head fixes it. The receipt's root is the record's hash.
  it('a wrong leaf (a wrong salt), index, path element, or a path one too long or short never folds to the root', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 17 }), fc.nat(), fc.nat(), (t, pick, byte) => {
        const tree = VECTORS.trees[t]!;
        const leaf = tree.leaves[pick % tree.size]!;
        const root = hex(tree.root);
        const path = leaf.path.map(hex);
        const folds = (index: number, size: number, l: Buffer, p: Buffer[]) =>
          rootFromPath(index, size, l, p)?.equals(root) === true;
        expect(folds(leaf.index, tree.size, hex(leaf.leaf), path)).toBe(true);
        const flipped = hex(leaf.leaf);
        flipped[byte % 32] = flipped[byte % 32]! ^ 1;
        expect(folds(leaf.index, tree.size, flipped, path)).toBe(false);
        if (tree.size > 1) {
          expect(folds((leaf.index + 1) % tree.size, tree.size, hex(leaf.leaf), path)).toBe(false);
          const bent = path.map((p) => Buffer.from(p));
          bent[byte % bent.length]![0] = bent[byte % bent.length]![0]! ^ 1;
          expect(folds(leaf.index, tree.size, hex(leaf.leaf), bent)).toBe(false);
          expect(folds(leaf.index, tree.size, hex(leaf.leaf), path.slice(1))).toBe(false);
        }
        expect(folds(leaf.index, tree.size, hex(leaf.leaf), [...path, root])).toBe(false);
        expect(rootFromPath(tree.size, tree.size, hex(leaf.leaf), path)).toBeUndefined();
      }),
      { numRuns: 1000 },
    );
  });
});

/**
 * The Merkle test vectors (test/fixtures/merkle/, see its README) and the
 * receipt proof of one of their leaves, for the tests of receipts with an
 * inclusion proof.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROOF_TYPE, type InclusionProof } from '../../src/core/receipt-format.js';
import { REPO_ROOT } from './cli.js';

export interface MerkleVectors {
  trees: {
    size: number;
    root: string;
    leaves: { index: number; document: string; salt: string; leaf: string; path: string[] }[];
  }[];
}

export const MERKLE_VECTORS = JSON.parse(
  readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'merkle', 'vectors.json'), 'utf8'),
) as MerkleVectors;

/** Leaf `index` of the vectors' tree of `size` leaves: its document's text and digest, and its proof. */
export function vectorLeaf(size: number, index: number) {
  const tree = MERKLE_VECTORS.trees.find((t) => t.size === size)!;
  const leaf = tree.leaves[index]!;
  const proof: InclusionProof = {
    type: PROOF_TYPE,
    leafSalt: leaf.salt,
    leafIndex: index,
    treeSize: size,
    path: leaf.path,
    root: tree.root,
  };
  return { text: `document ${index}`, sha256: leaf.document, root: tree.root, proof };
}

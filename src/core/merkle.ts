/**
 * Merkle trees as RFC 9162 (Certificate Transparency 2.0) defines them, over
 * SHA-256, with salted leaves: what an aggregate registration's receipt
 * proves (one registered root, a proof per document leading to it).
 *
 * - Leaf hash (a salted form of RFC 9162 section 2.1.1's leaf input): the
 *   document's SHA-256 followed by a 32-byte random salt, so that a proof
 *   given out for one document says nothing about the others:
 *   leaf = SHA-256(0x00 || SHA-256(document) || salt).
 * - Node hash (2.1.1): SHA-256(0x01 || left || right); the tree is
 *   left-balanced: n leaves split at k, the largest power of two below n;
 *   an odd node is never duplicated.
 * - An inclusion proof is the audit path of 2.1.3.1 (PATH(m, D[n]): the
 *   sibling hashes from leaf m up), checked by `rootFromPath`, the fn/sn
 *   algorithm of 2.1.3.2, as written there.
 *
 * `MerkleTree` builds a tree and gives every leaf's audit path; it builds
 * it bottom up, pairing neighbours level by level and carrying a level's odd
 * last node up unchanged, which gives exactly the RFC's recursive MTH and
 * PATH (test/fixtures/merkle/ holds trees built by the RFC's definitions
 * literally, which the tests compare with this code and fold with
 * `rootFromPath`). Each level is one contiguous buffer: a tree of 100,000
 * leaves holds about 6.4 MB of hashes, not 200,000 objects.
 */
import { hash } from 'node:crypto';

/** A SHA-256 digest as bytes. */
export type Digest = Buffer;

const DIGEST_BYTES = 32;

const LEAF_PREFIX = 0x00;
const NODE_PREFIX = 0x01;

/**
 * The bytes hashed for one leaf or node, assembled in place: one one-shot
 * hash call each, where a hash object fed three updates cost twice the time
 * (a tree of 100,000 documents makes 200,000 of them). Safe to share, as
 * hashing is synchronous.
 */
const input = Buffer.alloc(1 + 2 * DIGEST_BYTES);

/** RFC 9162's leaf hash of a salted document digest: SHA-256(0x00 || documentSha256 || salt). */
export function leafHash(documentSha256: Digest, salt: Digest): Digest {
  return hashOf(LEAF_PREFIX, documentSha256, salt);
}

/** RFC 9162's interior node hash: SHA-256(0x01 || left || right). */
export function nodeHash(left: Digest, right: Digest): Digest {
  return hashOf(NODE_PREFIX, left, right);
}

/** SHA-256(prefix || a || b). */
function hashOf(prefix: number, a: Digest, b: Digest): Digest {
  // Anything but two digests (a receipt's salt of the wrong length) is hashed as it is: no proof then folds.
  if (a.length !== DIGEST_BYTES || b.length !== DIGEST_BYTES) {
    return hash('sha256', Buffer.concat([Buffer.of(prefix), a, b]), 'buffer');
  }
  input[0] = prefix;
  a.copy(input, 1);
  b.copy(input, 1 + DIGEST_BYTES);
  return hash('sha256', input, 'buffer');
}

/**
 * The root an inclusion proof leads to, by RFC 9162 section 2.1.3.2, or
 * undefined when the proof cannot be one for (leafIndex, treeSize): an index
 * out of range, or a path of the wrong length.
 */
export function rootFromPath(
  leafIndex: number,
  treeSize: number,
  leaf: Digest,
  path: readonly Digest[],
): Digest | undefined {
  if (leafIndex >= treeSize) return undefined; // step 1
  let fn = leafIndex; // step 2
  let sn = treeSize - 1;
  let r = leaf; // step 3
  for (const p of path) {
    // step 4
    if (sn === 0) return undefined; // 4a: a path longer than the tree is tall
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r); // 4b.i
      if (fn % 2 === 0) {
        // 4b.ii: a right-most node with no sibling at this level: skip levels
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p); // 4b, otherwise
    }
    fn = Math.floor(fn / 2); // 4c
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : undefined; // step 5: a path too short leaves sn above 0
}

/** A Merkle tree over given leaf hashes (RFC 9162 section 2.1.1), with every leaf's audit path. */
export class MerkleTree {
  /** levels[0] holds the leaf hashes; each next level the nodes above; the last, the root alone. */
  readonly #levels: Buffer[];

  /** `leaves`: the leaf hashes, 32 bytes each, in leaf order; at least one. */
  constructor(leaves: Buffer) {
    if (leaves.length === 0 || leaves.length % DIGEST_BYTES !== 0) {
      throw new RangeError('a Merkle tree needs at least one 32-byte leaf hash');
    }
    this.#levels = [leaves];
    for (let level = leaves; level.length > DIGEST_BYTES;) {
      const count = level.length / DIGEST_BYTES;
      const above = Buffer.allocUnsafe(Math.ceil(count / 2) * DIGEST_BYTES);
      for (let i = 0; i + 1 < count; i += 2) {
        nodeHash(digestAt(level, i), digestAt(level, i + 1)).copy(above, (i / 2) * DIGEST_BYTES);
      }
      // An odd last node goes up unchanged: RFC 9162 never duplicates one.
      if (count % 2 === 1) digestAt(level, count - 1).copy(above, ((count - 1) / 2) * DIGEST_BYTES);
      this.#levels.push(above);
      level = above;
    }
  }

  get size(): number {
    return this.#levels[0]!.length / DIGEST_BYTES;
  }

  get root(): Digest {
    return digestAt(this.#levels.at(-1)!, 0);
  }

  /**
   * The audit path of leaf `index` (RFC 9162 section 2.1.3.1), from the
   * leaf's sibling up, in lowercase hex as a proof carries it (each digest
   * written out of its level, not copied on the way).
   */
  pathHex(index: number): string[] {
    return this.#siblings(index).map(([level, sibling]) =>
      level.toString('hex', sibling * DIGEST_BYTES, (sibling + 1) * DIGEST_BYTES),
    );
  }

  /** The level and index of each node of leaf `index`'s audit path. */
  #siblings(index: number): [Buffer, number][] {
    if (!Number.isInteger(index) || index < 0 || index >= this.size) throw new RangeError(`no leaf ${index}`);
    const siblings: [Buffer, number][] = [];
    let i = index;
    for (let depth = 0; depth < this.#levels.length - 1; depth++) {
      const level = this.#levels[depth]!;
      const sibling = i ^ 1;
      // No sibling: the node was carried up unchanged, and adds nothing to the path.
      if (sibling * DIGEST_BYTES < level.length) siblings.push([level, sibling]);
      i >>= 1;
    }
    return siblings;
  }
}

/** The `index`th 32-byte digest of a level, as a view (no copy). */
function digestAt(level: Buffer, index: number): Digest {
  return level.subarray(index * DIGEST_BYTES, (index + 1) * DIGEST_BYTES);
}

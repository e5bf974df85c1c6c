/**
 * Documents to notarize, written to real files, and their SHA-256.
 */
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The lowercase hex SHA-256 of `content`. */
export function sha256(content: string | Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

/** Writes a document of `size` bytes with unique content to `dir`/`name`; returns its path and SHA-256. */
export function makeDocument(dir: string, name: string, size = 256): { path: string; hash: string } {
  const body = Buffer.alloc(size, name);
  randomBytes(16).copy(body, 0);
  const path = join(dir, name);
  writeFileSync(path, body);
  return { path, hash: sha256(body) };
}

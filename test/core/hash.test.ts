import { createHash, randomBytes } from 'node:crypto';
import { appendFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { changedSince, hashFile, hashStream, normalizeHash, writeErrorReason } from '../../src/core/hash.js';
import { writeFileAtomic } from '../../src/store/files.js';
import { UsageError } from '../../src/errors.js';
import { rejection, thrown } from '../helpers/catch.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const EMPTY = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const ABC = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';

describe('hashStream', () => {
  it('gives the known SHA-256 of the empty input', async () => {
    expect(await hashStream(Readable.from([]))).toBe(EMPTY);
  });

  it("gives the known SHA-256 of 'abc', whatever the chunking", async () => {
    expect(await hashStream(Readable.from([Buffer.from('abc')]))).toBe(ABC);
    expect(await hashStream(Readable.from([Buffer.from('a'), Buffer.from('b'), Buffer.from('c')]))).toBe(ABC);
    expect(await hashStream(Readable.from(['ab', 'c']))).toBe(ABC);
  });
});

describe('hashFile', () => {
  const tempDir = useTempDirs();

  it('hashes an empty file', async () => {
    const file = join(tempDir(), 'empty.bin');
    writeFileSync(file, '');
    expect((await hashFile(file)).hash).toBe(EMPTY);
  });

  it("hashes a file holding 'abc'", async () => {
    const file = join(tempDir(), 'abc.txt');
    writeFileSync(file, 'abc');
    expect(await hashFile(file)).toMatchObject({ hash: ABC, size: 3 });
  });

  it('hashes a file larger than the read chunk exactly like a one-shot hash of its bytes', async () => {
    const data = randomBytes(3 * 1024 * 1024 + 7);
    const file = join(tempDir(), 'large.bin');
    writeFileSync(file, data);
    expect((await hashFile(file)).hash).toBe(createHash('sha256').update(data).digest('hex'));
  });

  it('rejects a missing file with a UsageError (exit 2) naming the path', async () => {
    const file = join(tempDir(), 'does-not-exist.pdf');
    const error = await rejection(hashFile(file));
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).exitCode).toBe(2);
    expect((error as UsageError).message).toContain(file);
    expect((error as UsageError).message).toContain('no such file');
  });

  it('rejects a directory with a UsageError (exit 2) naming the path', async () => {
    const dir = tempDir();
    const error = await rejection(hashFile(dir));
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).exitCode).toBe(2);
    expect((error as UsageError).message).toContain(dir);
    expect((error as UsageError).message).toContain('is a directory');
  });
});

describe('normalizeHash', () => {
  it('lowercases an uppercase digest', () => {
    expect(normalizeHash(ABC.toUpperCase())).toBe(ABC);
  });

  it('trims surrounding whitespace, including a trailing newline from a pipe', () => {
    expect(normalizeHash(`  ${EMPTY}\n`)).toBe(EMPTY);
    expect(normalizeHash(`\t${ABC.toUpperCase()} `)).toBe(ABC);
  });

  it.each([
    ['63 hex digits', ABC.slice(0, 63)],
    ['65 hex digits', `${ABC}0`],
    ['a non-hex character', `${ABC.slice(0, 63)}g`],
    ['an inner space', `${ABC.slice(0, 32)} ${ABC.slice(32, 63)}`],
    ['the empty string', ''],
    ['a 0x prefix', `0x${ABC.slice(2)}`],
  ])('rejects %s with a UsageError (exit 2, code invalid_hash)', (_label, input) => {
    const caught = thrown(() => normalizeHash(input));
    expect(caught).toBeInstanceOf(UsageError);
    expect(caught).toMatchObject({ exitCode: 2, code: 'invalid_hash' });
  });

  it('does not echo a pasted megabyte back in its message', () => {
    const caught = thrown(() => normalizeHash('x'.repeat(10_000)));
    expect(caught).toBeInstanceOf(UsageError);
    expect((caught as UsageError).message.length).toBeLessThan(200);
  });
});

describe('changedSince', () => {
  const tempDir = useTempDirs();

  it('is false for two stats of an untouched file, true once it is written to', () => {
    const path = join(tempDir(), 'doc.txt');
    writeFileSync(path, 'one\n');
    const before = statSync(path, { bigint: true });
    expect(changedSince(before, statSync(path, { bigint: true }))).toBe(false);
    appendFileSync(path, 'two\n');
    expect(changedSince(before, statSync(path, { bigint: true }))).toBe(true);
  });

  it('sees a write that keeps the size (a patch in place) through mtime and ctime', () => {
    const path = join(tempDir(), 'doc.txt');
    writeFileSync(path, 'aaaa');
    const before = statSync(path, { bigint: true });
    const patched = { ...before, mtimeNs: before.mtimeNs + 1n };
    expect(changedSince(before, patched)).toBe(true);
    expect(changedSince(before, { ...before, ctimeNs: before.ctimeNs + 1n })).toBe(true);
    expect(changedSince(before, { ...before, ino: before.ino + 1n })).toBe(true);
  });
});

describe('writeErrorReason', () => {
  const tempDir = useTempDirs();
  it("gives the reason in words, never Node's text naming the temporary file written first", async () => {
    const dir = tempDir();
    const file = join(dir, 'plain');
    writeFileSync(file, '');
    for (const [target, reason] of [
      [join(file, 'no'), 'a part of the path that should be a folder is not one'],
      [join(dir, 'missing', 'r.json'), 'its folder does not exist, or cannot hold files'],
    ] as const) {
      const error = await rejection(writeFileAtomic(target, '{}'));
      expect(String(error)).toContain('.tmp');
      expect(writeErrorReason(error)).toBe(reason);
    }
    const coded = (code: string) => Object.assign(new Error(`${code}: raw, open '/x/.r.1.tmp'`), { code });
    expect(writeErrorReason(coded('EROFS'))).toBe('read-only file system');
    expect(writeErrorReason(coded('EACCES'))).toBe('permission denied');
    expect(writeErrorReason(coded('EXDEV'))).toBe('the system said EXDEV');
  });
});

import { describe, expect, it } from 'vitest';
import { checksumLine, formatBytes, someDocuments } from '../../src/output/wording.js';

describe('checksumLine', () => {
  const hash = 'ef'.repeat(32);

  it('is "<hash>  <name>", as sha256sum prints it', () => {
    expect(checksumLine(hash, 'dist/app.tar.gz')).toBe(`${hash}  dist/app.tar.gz`);
  });

  it('escapes a backslash, newline or CR in the name the GNU way, with a leading backslash', () => {
    expect(checksumLine(hash, 'a\\b\nc\rd')).toBe(`\\${hash}  a\\\\b\\nc\\rd`);
  });

  it('leaves other characters as they are, so `sha256sum -c` finds the file', () => {
    expect(checksumLine(hash, 'caf\u00e9 \u001b.txt')).toBe(`${hash}  caf\u00e9 \u001b.txt`);
  });
});

describe('formatBytes', () => {
  it('uses binary units with one decimal, bytes as they are', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(512 * 1024 * 1024)).toBe('512.0 MiB');
    expect(formatBytes(3 * 1024 ** 5)).toBe('3072.0 TiB');
  });
});

describe('someDocuments', () => {
  it('names the one digest, or how many and the first', () => {
    expect(someDocuments(1, 'ab')).toBe('ab');
    expect(someDocuments(3, 'ab')).toBe('3 documents (among them ab)');
  });
});

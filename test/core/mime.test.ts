/** The custody metadata's MIME type by file extension (src/core/mime.ts). */
import { describe, expect, it } from 'vitest';
import { mimeType } from '../../src/core/mime.js';

describe('mimeType', () => {
  it.each([
    ['contract.pdf', 'application/pdf'],
    ['SCAN.PDF', 'application/pdf'],
    ['notes.md', 'text/markdown'],
    ['photo.JPeG', 'image/jpeg'],
    ['report.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
    // The last extension decides.
    ['release.tar.gz', 'application/gzip'],
    ['dir.pdf/readme.txt', 'text/plain'],
  ])('%s is %s', (name, type) => {
    expect(mimeType(name)).toBe(type);
  });

  it.each(['README', 'archive.7z', '.pdf', 'trailing-dot.', 'weird.pdf '])(
    'anything else (%j) is application/octet-stream, which is always true',
    (name) => {
      expect(mimeType(name)).toBe('application/octet-stream');
    },
  );
});

/**
 * Splitting a --files-from list as a stream: names across chunk boundaries,
 * CRLF, NUL separators, and the bounds (a line too long for a path, a run of
 * bytes with no name) that keep an endless source from filling memory.
 */
import { describe, expect, it } from 'vitest';
import { MAX_LIST_GAP_BYTES, MAX_LIST_PATH_BYTES, splitList } from '../../src/core/inputs.js';

async function collect(chunks: (string | Buffer)[], nul = false): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const entry of splitList(chunks, nul)) out.push(entry);
  return out;
}

/** `text` cut into chunks of `size` bytes. */
function chunked(text: string | Buffer, size: number): Buffer[] {
  const bytes = Buffer.from(text);
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

describe('splitList', () => {
  it('gives the same names whatever the chunk boundaries, with CRLF and blank lines', async () => {
    const text = 'a.txt\r\n\nsub dir/b.txt\nc.txt';
    const expected = [{ name: 'a.txt', carriageReturn: true }, { name: 'sub dir/b.txt' }, { name: 'c.txt' }];
    for (const size of [1, 2, 3, 5, 64]) expect(await collect(chunked(text, size))).toEqual(expected);
  });

  it("drops a byte order mark at the list's start (a Windows editor's, PowerShell's), and only there", async () => {
    for (const size of [1, 2, 64]) {
      expect(await collect(chunked('\uFEFFa.txt\r\n\uFEFFb.txt\n', size))).toEqual([
        { name: 'a.txt', carriageReturn: true },
        { name: '\uFEFFb.txt' },
      ]);
      // find -print0 writes none: in a NUL-separated list it is part of the first name.
      expect(await collect(chunked('\uFEFFa.txt\0b.txt\0', size), true)).toEqual([
        { name: '\uFEFFa.txt' },
        { name: 'b.txt' },
      ]);
    }
  });

  it('splits at NUL with -0, keeping newlines and carriage returns in names', async () => {
    expect(await collect(chunked('new\nline\r\0\0b\0', 3), true)).toEqual([{ name: 'new\nline\r' }, { name: 'b' }]);
  });

  it('reports a line longer than a path by its beginning and length, and goes on', async () => {
    const long = 'y'.repeat(MAX_LIST_PATH_BYTES + 10);
    expect(await collect(chunked(`a\n${long}\nb\n`, 1000))).toEqual([
      { name: 'a' },
      { tooLong: 'y'.repeat(60), bytes: MAX_LIST_PATH_BYTES + 10 },
      { name: 'b' },
    ]);
    const exact = 'z'.repeat(MAX_LIST_PATH_BYTES);
    expect(await collect([`${exact}\r\n`])).toEqual([{ name: exact, carriageReturn: true }]);
  });

  it('stops with `garbage` after a bounded run without a name, however long the source', async () => {
    let served = 0;
    // Endless as far as splitList can tell, but bounded here: a splitList that never stopped would
    // otherwise hang the suite rather than fail this test.
    const LIMIT = 16 * (MAX_LIST_GAP_BYTES + 2 * 65536);
    async function* zeros(): AsyncGenerator<Buffer> {
      while (served < LIMIT) {
        served += 65536;
        yield await Promise.resolve(Buffer.alloc(65536));
      }
    }
    for (const nul of [false, true]) {
      served = 0;
      const entries: unknown[] = [];
      for await (const entry of splitList(zeros(), nul)) entries.push(entry);
      expect(entries).toEqual([{ garbage: expect.any(Number) }]);
      expect(served).toBeLessThanOrEqual(MAX_LIST_GAP_BYTES + 2 * 65536);
    }
  });
});

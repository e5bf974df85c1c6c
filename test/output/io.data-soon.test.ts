/**
 * IO.dataSoon: `hash` over a long list writes its lines a turn of the event
 * loop at a time, one write for many, and never out of order with anything
 * else written.
 */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { IO } from '../../src/output/io.js';

/** An IO whose stdout and stderr writes land, in order, in one list. */
function recordingIO(): { io: IO; writes: string[] } {
  const writes: string[] = [];
  const io = new IO({
    stdout: { write: (text: string) => writes.push(`out:${text}`) },
    stderr: { write: (text: string) => writes.push(`err:${text}`) },
    stdin: Readable.from([]),
    stdinIsTTY: false,
    stderrIsTTY: false,
    colour: false,
  });
  return { io, writes };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('IO.dataSoon', () => {
  it('writes the lines of one turn in one write, each ending with a line feed', async () => {
    const { io, writes } = recordingIO();
    io.dataSoon('a');
    io.dataSoon('b\n');
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toEqual(['out:a\nb\n']);
    io.dataSoon('c');
    await nextTurn();
    expect(writes).toEqual(['out:a\nb\n', 'out:c\n']);
  });

  it('writes what is queued before any other output, so the order is the order of the calls', () => {
    const { io, writes } = recordingIO();
    io.dataSoon('one');
    io.error('failed');
    io.dataSoon('two');
    io.warn('careful');
    io.dataSoon('three');
    io.data('now');
    io.dataSoon('four');
    io.dataJsonArray([1]);
    expect(writes).toEqual([
      'out:one\n',
      'err:failed\n',
      'out:two\n',
      'err:warning: careful\n',
      'out:three\n',
      'out:now\n',
      'out:four\n',
      'out:[\n  1\n]\n',
    ]);
  });

  it('flush() writes the queue at once, and nothing twice', async () => {
    const { io, writes } = recordingIO();
    io.flush();
    io.dataSoon('x');
    io.flush();
    expect(writes).toEqual(['out:x\n']);
    await nextTurn();
    io.flush();
    expect(writes).toEqual(['out:x\n']);
  });

  it('does not let the queue grow past 64 KiB within one turn', () => {
    const { io, writes } = recordingIO();
    const line = `${'f'.repeat(64)}  ${'n'.repeat(63)}`;
    for (let i = 0; i < 1000; i++) io.dataSoon(line);
    expect(writes.length).toBeGreaterThan(0);
    for (const write of writes) expect(write.length).toBeLessThanOrEqual('out:'.length + 64 * 1024 + 129);
    io.flush();
    expect(writes.join('').replaceAll('out:', '')).toBe(`${line}\n`.repeat(1000));
  });

  it('scrubs registered secrets from queued lines', () => {
    const { io, writes } = recordingIO();
    io.addSecret('s3cr3t-token');
    io.dataSoon('path/s3cr3t-token.txt');
    io.flush();
    expect(writes).toEqual([
      'err:warning: a secret of yours (the API key or a token) was in what notarize printed, in a file name or a text: it is printed as [redacted], so that line does not name its file exactly (rename the file)\n',
      'out:path/[redacted].txt\n',
    ]);
  });
});

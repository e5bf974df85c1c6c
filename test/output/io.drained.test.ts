/**
 * IO.drained: a command printing a line per document waits while stdout (a
 * pipe with a slow reader) has queued data, so memory stays bounded.
 */
import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { IO } from '../../src/output/io.js';

function ioOver(stdout: { write(text: string): boolean } & Partial<EventEmitter>): IO {
  return new IO({
    stdout,
    stderr: { write: () => true },
    stdin: Readable.from([]),
    stdinIsTTY: false,
    stderrIsTTY: false,
    colour: false,
  });
}

describe('IO.drained', () => {
  it('resolves at once while writes are taken, and only on drain after one was queued', async () => {
    const sink = Object.assign(new EventEmitter(), { full: false, write: () => !sink.full });
    const io = ioOver(sink);
    io.data('taken');
    await io.drained();
    sink.full = true;
    io.data('queued');
    let resolved = 0;
    const waits = [io.drained().then(() => resolved++), io.drained().then(() => resolved++)];
    await new Promise((resolve) => setImmediate(resolve));
    expect(resolved).toBe(0);
    // One listener however many wait.
    expect(sink.listenerCount('drain')).toBe(1);
    sink.full = false;
    sink.emit('drain');
    await Promise.all(waits);
    expect(resolved).toBe(2);
    expect(sink.listenerCount('drain') + sink.listenerCount('close')).toBe(0);
  });

  it('a drain that came before anyone waited is not waited for again (it would never come: exit 13)', async () => {
    const sink = Object.assign(new EventEmitter(), { full: true, write: () => !sink.full });
    const io = ioOver(sink);
    io.data('queued');
    // The reader caught up before the command asked.
    sink.full = false;
    sink.emit('drain');
    const never = new Promise<string>((resolve) => setTimeout(() => resolve('still waiting'), 200));
    await expect(Promise.race([io.drained().then(() => 'drained'), never])).resolves.toBe('drained');
    expect(sink.listenerCount('drain') + sink.listenerCount('close')).toBe(0);
  });

  it('does not wait forever on a stream that closed instead of draining', async () => {
    const sink = Object.assign(new EventEmitter(), { write: () => false });
    const io = ioOver(sink);
    io.data('queued');
    const wait = io.drained();
    sink.emit('close');
    await expect(wait).resolves.toBeUndefined();
  });
});

import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { promptHidden } from '../../src/output/prompt.js';

/** A terminal-like input: a real stream that records the raw modes it was put in. */
function terminal() {
  const input = Object.assign(new PassThrough(), {
    modes: [] as boolean[],
    setRawMode(mode: boolean) {
      input.modes.push(mode);
    },
  });
  let written = '';
  const output = { write: (text: string) => ((written += text), true) };
  return { input, output, written: () => written };
}

describe('promptHidden', () => {
  it('asks, reads a line in raw mode without echoing it, and restores the terminal', async () => {
    const { input, output, written } = terminal();
    const answer = promptHidden('API key: ', input, output);
    input.write('s3cret\r');
    await expect(answer).resolves.toBe('s3cret');
    expect(written()).toBe('API key: \n');
    expect(input.modes).toEqual([true, false]);
    expect(input.listenerCount('data')).toBe(0);
  });

  it.each([
    ['a line feed', 'key\nrest', 'key'],
    ['Ctrl-D on an empty line', '\u0004', ''],
    ['Enter, not a Ctrl-D after some of the key (which is no end)', 'ke\u0004y\r', 'key'],
    ['Ctrl-U, which starts the line over', 'sk_oops\u0015sk_right\r', 'sk_right'],
    ['Ctrl-W, which takes back the last word', 'one two\u0017three\r', 'one three'],
    ['arrow keys, Home and Alt-b, none of them part of the key', 'a\u001b[Db\u001bOHc\u001b[1;5Cd\u001bbe\r', 'abcde'],
    ['other control characters, skipped', 'k\u0001e\u0002y\ty\r', 'keyy'],
    ['backspace (DEL and BS)', 'kex\u007fy\bz\r', 'kez'],
    ['input in several chunks', ['ab', 'c\r'], 'abc'],
  ])('ends on %s', async (_name, chunks, expected) => {
    const { input, output } = terminal();
    const answer = promptHidden('? ', input, output);
    for (const chunk of [chunks].flat()) input.write(chunk);
    await expect(answer).resolves.toBe(expected);
  });

  it('rejects on Ctrl-C and still restores the terminal', async () => {
    const { input, output, written } = terminal();
    const answer = promptHidden('API key: ', input, output);
    input.write('par\u0003tial\r');
    await expect(answer).rejects.toThrow('cancelled');
    expect(input.modes).toEqual([true, false]);
    expect(written()).toBe('API key: \n');
  });

  it('works on an input that has no raw mode (not a terminal)', async () => {
    const input = new PassThrough();
    const answer = promptHidden('? ', input, { write: () => true });
    input.write('plain\n');
    await expect(answer).resolves.toBe('plain');
  });
});

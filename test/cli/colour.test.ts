/**
 * Colours follow NO_COLOR and FORCE_COLOR as chalk's supports-color reads
 * them: FORCE_COLOR=0 or false means none, even on a terminal; empty, true
 * or a level means colours, even in a pipe. Spawned once for each: the
 * terminal test (stdout.isTTY) is the process's own.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { colourWanted } from '../../src/cli.js';
import { runCli } from '../helpers/cli.js';

describe('colourWanted', () => {
  it.each(['0', 'false', '00'])('FORCE_COLOR=%j: no colours, on a terminal too', (value) => {
    expect(colourWanted({ FORCE_COLOR: value }, true)).toBe(false);
    expect(colourWanted({ FORCE_COLOR: value }, false)).toBe(false);
  });

  it.each(['', 'true', '1', '2', '3'])('FORCE_COLOR=%j: colours, in a pipe too', (value) => {
    expect(colourWanted({ FORCE_COLOR: value }, false)).toBe(true);
    expect(colourWanted({ FORCE_COLOR: value, TERM: 'dumb' }, true)).toBe(true);
  });

  it('NO_COLOR wins over FORCE_COLOR; an unknown FORCE_COLOR leaves it to the terminal', () => {
    expect(colourWanted({ NO_COLOR: '1', FORCE_COLOR: '1' }, true)).toBe(false);
    expect(colourWanted({ FORCE_COLOR: 'yes' }, true)).toBe(true);
    expect(colourWanted({ FORCE_COLOR: 'yes' }, false)).toBe(false);
    expect(colourWanted({}, true)).toBe(true);
    expect(colourWanted({ TERM: 'dumb' }, true)).toBe(false);
    expect(colourWanted({}, false)).toBe(false);
  });
});

describe('a table in a pipe', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'notarize-colour-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ['1', true],
    ['true', true],
    ['0', false],
    ['false', false],
  ] as const)('FORCE_COLOR=%s: coloured %s', async (value, coloured) => {
    const run = await runCli(
      ['config', 'list'],
      { NOTARIZE_CONFIG_DIR: join(dir, value), NO_COLOR: '', FORCE_COLOR: value },
      { noBaseUrlCheck: true },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.includes('\u001b['), run.stdout).toBe(coloured);
  });
});

/**
 * runHash called in process: checksums handed over in input order (however
 * the hashing settles), each unreadable input in its place, and the failure
 * the run ends with; through the renderer, sha256sum lines and the JSON array.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { optionsSchema, runHash, type HashOptions } from '../../src/commands/hash.js';
import { checksumsFor, present } from '../../src/output/present.js';
import { Checksums, type Checksum } from '../../src/output/results.js';
import { bufferIO, type BufferIO } from '../helpers/io.js';
import { runMain } from '../helpers/main.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const tempDir = useTempDirs('notarize-hash-');

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

function options(out: BufferIO, paths: string[], flags: Record<string, unknown> = {}): HashOptions {
  return { ...optionsSchema.parse(flags), paths, io: out.io };
}

/** Files `<name>` holding `content of <name>` in a fresh directory; returns their paths. */
function files(names: string[]): string[] {
  const dir = tempDir();
  return names.map((name) => {
    const path = join(dir, name);
    writeFileSync(path, `content of ${name}\n`);
    return path;
  });
}

describe('runHash', () => {
  it('hands the checksums over in input order, a missing file in its place; the run fails with exit 2', async () => {
    const [a, b] = files(['a.txt', 'b.txt']) as [string, string];
    const missing = join(tempDir(), 'missing.txt');
    const out = bufferIO();
    const handed: Checksum[] = [];
    const result = await runHash(options(out, [a, missing, b]), new Checksums({ onChecksum: (c) => handed.push(c) }));
    expect(out.stdout()).toBe('');
    expect(handed).toEqual(result.checksums.list());
    expect(handed.map((c) => ('hash' in c ? [c.file, c.hash] : [c.file, c.error.message]))).toEqual([
      [a, sha256('content of a.txt\n')],
      [missing, `cannot read '${missing}': no such file or directory`],
      [b, sha256('content of b.txt\n')],
    ]);
    expect(result.failure).toMatchObject({
      code: 'batch_failed',
      exitCode: 2,
      message: '1 of 3 files could not be read',
    });
  });

  it('keeps input order over many files hashed at once', async () => {
    const names = Array.from({ length: 60 }, (_, i) => `f${i}.txt`);
    const paths = files(names);
    const result = await runHash(options(bufferIO(), paths));
    expect(result.checksums.list()).toEqual(
      paths.map((file, i) => ({ file, hash: sha256(`content of ${names[i]}\n`) })),
    );
    expect(result.failure).toBeUndefined();
  });

  it('standard input is named -', async () => {
    const out = bufferIO({ stdin: 'from a pipe\n' });
    const result = await runHash(options(out, ['-']));
    expect(result.checksums.list()).toEqual([{ file: '-', hash: sha256('from a pipe\n') }]);
  });

  it('one file named alone that is missing is handed over as in a batch: its error in its place, the run fails', async () => {
    const missing = join(tempDir(), 'missing.txt');
    const handed: Checksum[] = [];
    const result = await runHash(options(bufferIO(), [missing]), new Checksums({ onChecksum: (c) => handed.push(c) }));
    expect(handed).toEqual([
      { file: missing, error: expect.objectContaining({ code: 'unreadable_file', path: missing }) },
    ]);
    expect(result.failure).toMatchObject({
      code: 'batch_failed',
      exitCode: 2,
      message: '1 of 1 file could not be read',
    });
  });

  it('through the renderer: sha256sum lines as they come, failures on stderr; with --json, the array', async () => {
    const [a, b] = files(['a.txt', 'b\\name.txt']) as [string, string];
    const missing = join(tempDir(), 'missing.txt');
    const text = bufferIO();
    const textView = { io: text.io, env: {}, format: 'table' as const };
    await present(textView, await runHash(options(text, [a, missing, b]), checksumsFor(textView)));
    const ha = sha256('content of a.txt\n');
    const hb = sha256('content of b\\name.txt\n');
    // A name with a backslash gets sha256sum's escaping.
    expect(text.stdout()).toBe(`${ha}  ${a}\n\\${hb}  ${b.replace(/\\/g, '\\\\')}\n`);
    expect(text.stderr()).toBe(`notarize: ${missing}: no such file or directory\n`);
    // A failure with what to do says it, as the JSON error object does (r115).
    const folder = tempDir();
    const hinted = bufferIO();
    const hintedView = { io: hinted.io, env: {}, format: 'table' as const };
    await present(hintedView, await runHash(options(hinted, [a, folder]), checksumsFor(hintedView)));
    expect(hinted.stderr()).toMatch(
      new RegExp(`^notarize: ${folder}: .*\\(add --recursive to process the files in it\\)\n`),
    );

    const json = bufferIO();
    const jsonView = { io: json.io, env: {}, format: 'json' as const };
    await present(jsonView, await runHash(options(json, [a, missing, b]), checksumsFor(jsonView)));
    expect(JSON.parse(json.stdout())).toEqual([
      { file: a, hash: ha },
      { file: b, hash: hb },
    ]);
    // With --json, stderr holds JSON errors only, this one naming its file.
    expect(
      json
        .stderr()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as unknown),
    ).toEqual([
      {
        error: {
          code: 'unreadable_file',
          exitCode: 2,
          message: `cannot read '${missing}': no such file or directory`,
          file: missing,
        },
      },
    ]);
  });

  it('--json in a real run: every line on stderr is JSON, the batch error last', async () => {
    const [a] = files(['a.txt']) as [string];
    const missing = join(tempDir(), 'missing.txt');
    const run = await runMain(
      ['hash', '--json', a, missing],
      { NOTARIZE_CONFIG_DIR: tempDir() },
      { noBaseUrlCheck: true },
    );
    expect(run.code, run.stderr).toBe(2);
    const lines = run.stderr
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { error: { file?: string; code: string } });
    expect(lines.map((l) => [l.error.code, l.error.file ?? null])).toEqual([
      ['unreadable_file', missing],
      ['batch_failed', null],
    ]);
  });
});

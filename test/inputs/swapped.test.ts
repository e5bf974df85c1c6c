/**
 * A file found by a directory walk is hashed only if it is still the file
 * the walk saw: a link swapped in for it (or for a folder above it) after
 * the walk would otherwise be followed out of the folder walked, and its
 * bytes registered or verified under a name inside it.
 */
import { Readable } from 'node:stream';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expandInputs, type InputItem } from '../../src/core/inputs.js';
import { HashPool } from '../../src/core/hash-pool.js';
import { InputFileError } from '../../src/errors.js';
import { sha256 } from '../helpers/documents.js';
import { useTempDirs } from '../helpers/temp-dirs.js';
import { rejectionOf } from '../helpers/catch.js';

const dir = useTempDirs();

/** The files a walk of `folder` finds, listed whole before any is hashed. */
async function walked(folder: string): Promise<Extract<InputItem, { kind: 'file' }>[]> {
  const expansion = await expandInputs([folder], { recursive: true }, Readable.from([]));
  const items: Extract<InputItem, { kind: 'file' }>[] = [];
  for await (const item of expansion.items) if (item.kind === 'file') items.push(item);
  return items;
}

describe('a file swapped after the walk', () => {
  it.each([1, 4])(
    'for a link, or its folder for a link, is refused (exit 2), never followed (pool of %i)',
    async (size) => {
      const root = dir();
      writeFileSync(join(root, 'outside.txt'), 'outside the folder walked\n');
      mkdirSync(join(root, 'dist', 'sub'), { recursive: true });
      writeFileSync(join(root, 'dist', 'app.txt'), 'app\n');
      writeFileSync(join(root, 'dist', 'sub', 'lib.txt'), 'lib\n');
      writeFileSync(join(root, 'dist', 'kept.txt'), 'kept\n');
      const items = await walked(join(root, 'dist'));
      expect(items.map((i) => i.relative)).toEqual(['app.txt', 'kept.txt', 'sub/lib.txt']);
      expect(items.every((i) => i.listed !== undefined)).toBe(true);
      // The file, then a folder above one, replaced by links leading out.
      rmSync(join(root, 'dist', 'app.txt'));
      symlinkSync(join(root, 'outside.txt'), join(root, 'dist', 'app.txt'));
      mkdirSync(join(root, 'elsewhere'));
      writeFileSync(join(root, 'elsewhere', 'lib.txt'), 'outside the folder walked\n');
      renameSync(join(root, 'dist', 'sub'), join(root, 'sub-moved'));
      symlinkSync(join(root, 'elsewhere'), join(root, 'dist', 'sub'));
      const pool = new HashPool(size);
      try {
        for (const item of [items[0]!, items[2]!]) {
          const error = await rejectionOf(pool.hash(item.path, item.listed), InputFileError);
          expect(error).toMatchObject({ exitCode: 2, code: 'changed_while_hashed' });
          expect(error.message).toBe(
            `'${item.path}' was replaced after its folder was walked (by a link, or another file)`,
          );
        }
        // The file left as it was is hashed as ever.
        expect((await pool.hash(items[1]!.path, items[1]!.listed)).hash).toBe(sha256('kept\n'));
      } finally {
        await pool.close();
      }
    },
  );

  it('a folder swapped for a link while the walk is under way: not followed, that folder fails (exit 2)', async () => {
    const root = dir();
    writeFileSync(join(root, 'outside.txt'), 'outside the folder walked\n');
    mkdirSync(join(root, 'dist', 'a'), { recursive: true });
    mkdirSync(join(root, 'dist', 'z'));
    writeFileSync(join(root, 'dist', 'a', 'first.txt'), 'first\n');
    writeFileSync(join(root, 'dist', 'z', 'f.txt'), 'inside\n');
    mkdirSync(join(root, 'elsewhere'));
    writeFileSync(join(root, 'elsewhere', 'f.txt'), 'outside the folder walked\n');
    const expansion = await expandInputs([join(root, 'dist')], { recursive: true }, Readable.from([]));
    const items: InputItem[] = [];
    for await (const item of expansion.items) {
      items.push(item);
      // Once the walk has listed 'dist' and gone into 'a', 'z' becomes a link before its turn.
      if (items.length === 1) {
        renameSync(join(root, 'dist', 'z'), join(root, 'z-moved'));
        symlinkSync(join(root, 'elsewhere'), join(root, 'dist', 'z'));
      }
    }
    expect(items.map((i) => (i.kind === 'unusable' ? `unusable ${i.error.code} ${i.path}` : `${i.kind}`))).toEqual([
      'file',
      `unusable changed_while_hashed ${join(root, 'dist', 'z')}`,
    ]);
  });
});

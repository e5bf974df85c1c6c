/**
 * Paths as the user spelt them (src/path-spelling.ts): a `..` after a link
 * names another folder than path.join/resolve make of it, so no folder the
 * user gives is combined, compared or opened through them. Real links in a
 * temporary directory: `link` points at `sub/deep`, so `link/..` is `sub`.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { planReceipts, receiptNames } from '../../src/core/receipts.js';
import { StoreError, UsageError } from '../../src/errors.js';
import { entryPath, insideDir, parentAfterName, sameSpelling } from '../../src/path-spelling.js';
import { Store } from '../../src/store/store.js';
import { rejectionOf, thrownOf } from '../helpers/catch.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const tempDir = useTempDirs();
const posix = process.platform !== 'win32';

/** A temporary folder with sub/deep, sub/R and ./R, and `link` -> sub/deep. */
function linked(): string {
  const root = tempDir();
  mkdirSync(join(root, 'sub', 'deep'), { recursive: true });
  mkdirSync(join(root, 'sub', 'R'));
  mkdirSync(join(root, 'R'));
  symlinkSync(join(root, 'sub', 'deep'), join(root, 'link'));
  return root;
}

describe('the spelling helpers', () => {
  it('parentAfterName: a .. after a folder name, not a leading one', () => {
    for (const path of ['a/../b', 'link/..', './a/../b', '/x/y/../z', '../a/../b'])
      expect(parentAfterName(path)).toBe(true);
    for (const path of ['../R', '../../R', './R', 'a/b', '/a/b', 'a..b/c', ''])
      expect(parentAfterName(path)).toBe(false);
  });

  it('sameSpelling: absolute, without . or repeated separators, .. kept', () => {
    expect(sameSpelling('x.txt', '/w')).toBe('/w/x.txt');
    expect(sameSpelling('./d//x.txt', '/w')).toBe('/w/d/x.txt');
    expect(sameSpelling('/w/x.txt', '/elsewhere')).toBe('/w/x.txt');
    expect(sameSpelling('link/../x.txt', '/w')).toBe('/w/link/../x.txt');
  });

  it('entryPath: the folder as given, one separator', () => {
    expect(entryPath('link/../d', 'x.txt')).toBe('link/../d/x.txt');
    expect(entryPath('d//', 'x.txt')).toBe('d/x.txt');
    expect(entryPath('/', 'tmp')).toBe('/tmp');
  });
});

describe.runIf(posix)('folders given through link/..', () => {
  it('--receipt-dir spelt a/../R is refused before anything is created or sent', async () => {
    const root = linked();
    const error = await rejectionOf(planReceipts(join(root, 'link') + '/../R', [{ path: 'x.txt' }]), UsageError);
    expect(error.message).toMatch(/is spelt with '\.\.' after a folder's name/);
  });

  it("insideDir judges a document's folder by realpath of the folder as given", () => {
    const root = linked();
    const inside = insideDir(join(root, 'sub', 'R'));
    // link/../R is sub/R for the system: inside. (resolve() made it ./R: outside.)
    expect(inside(`${root}/link/../R/x.txt.notarization.json`)).toBe(true);
    expect(inside(join(root, 'R', 'x.txt.notarization.json'))).toBe(false);
    // The root folder holds everything ('/' plus a separator was '//', which nothing starts with).
    expect(insideDir('/')(join(root, 'R', 'x.txt'))).toBe(true);
  });

  it('NOTARIZE_CONFIG_DIR spelt a/../cfg is refused (exit 2) rather than opened as ./cfg', () => {
    const root = linked();
    const store = new Store(`${root}/link/../cfg`);
    const error = thrownOf(() => store.prepare(), StoreError);
    expect(error.message).toMatch(/cannot use the store directory .*link\/\.\.\/cfg: it is spelt with '\.\.'/);
  });

  it('one file named by an absolute and a relative path gets one receipt', () => {
    const root = linked();
    writeFileSync(join(root, 'x.txt'), 'x');
    const relative = 'x.txt';
    const absolute = join(process.cwd(), 'x.txt');
    expect(receiptNames([{ path: relative }, { path: absolute }])).toEqual(['x.txt', 'x.txt']);
  });
});

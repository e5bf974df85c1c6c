/**
 * Receipts for CI artifacts (--receipt-dir): `<file name>.notarization.json`
 * holding the record exactly as the service sent it. Files found under a
 * directory keep their place below it (`linux/app.tar.gz.notarization.json`),
 * so equal names in different folders do not collide. An existing receipt is
 * never overwritten unless asked (--force); an identical one is left as is.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { UsageError } from '../errors.js';

/**
 * Writes the receipt for `name` (a file name or a relative path with '/',
 * or the hash for stdin/--hash) and returns its path.
 */
export async function writeReceipt(dir: string, name: string, recordJson: string, overwrite: boolean): Promise<string> {
  const path = join(dir, `${name}.notarization.json`);
  const content = recordJson.endsWith('\n') ? recordJson : `${recordJson}\n`;
  try {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, content, { flag: overwrite ? 'w' : 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new UsageError(`cannot write receipt ${path}: ${(error as Error).message}`, { cause: error });
    }
    const existing = await readFile(path, 'utf8').catch(() => undefined);
    if (existing !== content) {
      throw new UsageError(`receipt ${path} already exists with other content`, {
        code: 'receipt_exists',
        hint: 'remove it and run again, or choose another --receipt-dir (--force overwrites it, but also registers the document again)',
      });
    }
  }
  return path;
}

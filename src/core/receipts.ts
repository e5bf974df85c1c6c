/**
 * Receipts for CI artifacts (--receipt-dir): `<file name>.notarization.json`
 * holding the record exactly as the service sent it. An existing receipt is
 * never overwritten unless asked (--force); an identical one is left as is.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { UsageError } from '../errors.js';

/** Writes the receipt for `name` (a file name, or the hash for stdin/--hash) and returns its path. */
export async function writeReceipt(dir: string, name: string, recordJson: string, overwrite: boolean): Promise<string> {
  const path = join(dir, `${basename(name)}.notarization.json`);
  const content = recordJson.endsWith('\n') ? recordJson : `${recordJson}\n`;
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(path, content, { flag: overwrite ? 'w' : 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new UsageError(`cannot write receipt ${path}: ${(error as Error).message}`, { cause: error });
    }
    const existing = await readFile(path, 'utf8').catch(() => undefined);
    if (existing !== content) {
      throw new UsageError(`receipt ${path} already exists with other content`, {
        code: 'receipt_exists',
        hint: 'remove it, choose another --receipt-dir, or pass --force to overwrite',
      });
    }
  }
  return path;
}

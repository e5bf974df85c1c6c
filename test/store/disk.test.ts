/**
 * src/store/disk.ts: which errors mean a full (over quota, read-only) disk,
 * and the usage error (exit 2, nothing sent) they become before anything was
 * sent. A full disk in a run is in disk-full.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { StoreError } from '../../src/errors.js';
import { diskRefusedBeforeSending, isDiskRefusal } from '../../src/store/disk.js';

describe('the mapping (store/disk.ts)', () => {
  const errno = (code: string) => Object.assign(new Error(`${code}: whatever`), { code });

  it.each([
    ['ENOSPC', 'no space left on the device holding /store'],
    ['EDQUOT', 'the disk quota is exceeded on the device holding /store'],
    ['EROFS', 'the device holding /store is read-only'],
  ])('%s is a usage error (exit 2) saying so, and that nothing was sent', (code, says) => {
    const error = diskRefusedBeforeSending(errno(code), '/store');
    expect(error?.exitCode).toBe(2);
    expect(error?.message).toBe(`${says} (${code}); nothing was sent`);
    expect(error?.hint).toContain('free some space');
  });

  it('finds the code in a StoreError that wraps it (ensurePrivateDir, conf)', () => {
    const wrapped = new StoreError('/store/x', 'cannot use the store directory /store/x', { cause: errno('ENOSPC') });
    expect(isDiskRefusal(wrapped)).toBe(true);
    expect(diskRefusedBeforeSending(wrapped, '/store')?.code).toBe('disk_refused');
  });

  it('leaves other errors to the caller', () => {
    for (const error of [
      errno('EACCES'),
      errno('ENOENT'),
      new Error('ENOSPC in a message only'),
      'ENOSPC',
      undefined,
    ]) {
      expect(diskRefusedBeforeSending(error, '/store')).toBeUndefined();
    }
  });
});

/**
 * Disk refusals met before anything was sent (src/store/disk.ts): which
 * errors they are, and the usage error (exit 2) each becomes. A full disk in
 * a whole run is test/wire/disk-full.test.ts.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StoreError } from '../../src/errors.js';
import { diskRefused, diskRefusedBeforeSending, isDiskRefusal } from '../../src/store/disk.js';

const errno = (code: string) => Object.assign(new Error(`${code}: whatever`), { code });

describe('diskRefusedBeforeSending', () => {
  it.each([
    ['ENOSPC', 'no space left on the device holding /store', 'free some space there'],
    ['EDQUOT', 'the disk quota is exceeded on the device holding /store', 'free some space there or raise the quota'],
    ['EROFS', 'the device holding /store is read-only', 'make it writable'],
    ['EFBIG', 'a file size limit (ulimit -f) stops writes in /store', 'raise the limit (ulimit -f)'],
    ['EACCES', 'permission is denied in /store', 'give this user read, write and search access to it (chmod u+rwx)'],
    [
      'EPERM',
      'the system does not permit this change in /store (an immutable file or folder?)',
      'lift the restriction (lsattr, chattr -i)',
    ],
  ])('%s is a usage error (exit 2) saying so, and that nothing was sent; the hint fits it', (code, says, remedy) => {
    const error = diskRefusedBeforeSending(errno(code), '/store');
    expect(error?.exitCode).toBe(2);
    expect(error?.code).toBe('disk_refused');
    expect(error?.message).toBe(`${says} (${code}); nothing was sent`);
    expect(error?.hint).toBe(`${remedy} (or point NOTARIZE_CONFIG_DIR elsewhere), then run the command again`);
    expect(error?.cause).toBeInstanceOf(Error);
  });

  it.each([
    ['EMFILE', 'this process has too many files open to work in /store'],
    ['ENFILE', 'the system has too many files open to work in /store'],
  ])('%s (no descriptor left) is exit 2 too, its hint not sending the user to another store', (code, says) => {
    const error = diskRefusedBeforeSending(errno(code), '/store');
    expect(error?.exitCode).toBe(2);
    expect(error?.message).toBe(`${says} (${code}); nothing was sent`);
    expect(error?.hint).toBe(
      "raise the limit of open files (ulimit -n), or lower register's -j, then run the command again",
    );
  });

  it('a permission names the folder or file the system refused, not the store folder (which may be fine)', () => {
    const store = mkdtempSync(join(tmpdir(), 'notarize-disk-'));
    try {
      mkdirSync(join(store, 'locks'));
      writeFileSync(join(store, 'locks', 'held.lock'), '');
      const refused = (syscall: string, path: string) =>
        diskRefusedBeforeSending(
          Object.assign(new Error(`EACCES: permission denied, ${syscall} '${path}'`), {
            code: 'EACCES',
            syscall,
            path,
          }),
          store,
        );
      const inFolder = (syscall: string, path: string, folder: string) => {
        const error = refused(syscall, path);
        expect(error?.message, `${syscall} ${path}`).toBe(
          `permission is denied in ${folder} (EACCES); nothing was sent`,
        );
        expect(error?.hint).toBe(
          'give this user read, write and search access to it (chmod u+rwx) (or point NOTARIZE_CONFIG_DIR elsewhere), then run the command again',
        );
      };
      // Made, renamed, linked, removed: the folder's permission, whether the entry is there or not.
      inFolder('open', join(store, 'locks', '.new.tmp'), join(store, 'locks'));
      inFolder('rename', join(store, 'locks', 'held.lock'), join(store, 'locks'));
      inFolder('unlink', join(store, 'locks', 'held.lock'), join(store, 'locks'));
      inFolder('mkdir', join(store, 'services'), store);
      inFolder('scandir', join(store, 'locks'), join(store, 'locks'));
      // A file there that cannot be opened: its own (another user's).
      const file = refused('open', join(store, 'locks', 'held.lock'));
      expect(file?.message).toBe(
        `permission is denied for ${join(store, 'locks', 'held.lock')} (EACCES); nothing was sent`,
      );
      expect(file?.hint).toBe(
        "give this user access to it (it may be another user's), or move it aside, then run the command again",
      );
      // A path that cannot even be looked up (its folder without search permission, for a user other than
      // root; below a file here, ENOTDIR): its folder is named, and the refusal is not lost to the lookup.
      inFolder('open', join(store, 'locks', 'held.lock', 'x'), join(store, 'locks', 'held.lock'));
    } finally {
      rmSync(store, { recursive: true, force: true });
    }
  });

  it('finds the code in a StoreError that wraps it (ensurePrivateDir, conf)', () => {
    const wrapped = new StoreError('/store/x', 'cannot use the store directory /store/x', { cause: errno('ENOSPC') });
    expect(isDiskRefusal(wrapped)).toBe(true);
    expect(diskRefusedBeforeSending(wrapped, '/store')?.code).toBe('disk_refused');
  });

  it('looks a few causes deep, not forever (a cycle of causes ends)', () => {
    const wrap = (cause: unknown, depth: number): Error =>
      depth === 0 ? (cause as Error) : wrap(new Error('wrapper', { cause }), depth - 1);
    expect(isDiskRefusal(wrap(errno('EROFS'), 4))).toBe(true);
    expect(isDiskRefusal(wrap(errno('EROFS'), 5))).toBe(false);
    const cycle: Error = new Error('a');
    cycle.cause = new Error('b', { cause: cycle });
    expect(isDiskRefusal(cycle)).toBe(false);
  });

  it('leaves other errors to the caller', () => {
    for (const error of [
      errno('EIO'),
      errno('ENOENT'),
      Object.assign(new Error('numeric'), { code: 28 }),
      new Error('ENOSPC in a message only'),
      'ENOSPC',
      { code: 'ENOSPC' },
      undefined,
    ]) {
      expect(isDiskRefusal(error)).toBe(false);
      expect(diskRefusedBeforeSending(error, '/store')).toBeUndefined();
    }
  });

  it('after something was sent: exit 1 saying what; the hint names where else to write', () => {
    const refused = diskRefused(errno('ENOSPC'), '/receipts', 'nothing was paid for', 'choose another --receipt-dir');
    expect(refused).toMatchObject({
      exitCode: 1,
      message: 'no space left on the device holding /receipts (ENOSPC); nothing was paid for',
      hint: 'free some space there (or choose another --receipt-dir), then run the command again',
    });
    expect(diskRefusedBeforeSending(errno('ENOSPC'), '/store')?.hint).toContain('point NOTARIZE_CONFIG_DIR elsewhere');
  });
});

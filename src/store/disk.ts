/**
 * Disk refusals (full, over quota, read-only, no permission; and no file
 * descriptor left, which is as much the user's to fix) met while preparing a store
 * write before anything was sent, e.g. creating a hash's lock. They are the
 * user's to fix, and nothing was lost: exit 2 (UsageError), saying which
 * device, rather than "unexpected error: ENOSPC" with exit 1.
 *
 * A write after something was sent that paid nothing (a token after its
 * login, a tree saved after roots were asked about, a manifest after its
 * request step) passes what was sent
 * (`diskRefused`'s `sent`): exit 1, saying so. A write that fails after a
 * paid or paying answer is no refusal to map: exit 1 with the answer quoted
 * (core/notarize.ts, `notSaved`).
 */
import { errnoCodeIn, errnoErrorIn, EXIT, NotarizeError, UsageError } from '../errors.js';
import { FD_SHORTAGE_REMEDY } from '../fd-shortage.js';
import { refusedPlace } from './files.js';

/** What each code says about the device, completed with "the device holding <dir>". */
const REFUSALS: Record<string, (dir: string) => string> = {
  ENOSPC: (dir) => `no space left on the device holding ${dir}`,
  EDQUOT: (dir) => `the disk quota is exceeded on the device holding ${dir}`,
  EROFS: (dir) => `the device holding ${dir} is read-only`,
  EFBIG: (dir) => `a file size limit (ulimit -f) stops writes in ${dir}`,
  // Not the device's, but as much the user's to fix, and met before any write changed anything.
  EACCES: (dir) => `permission is denied in ${dir}`,
  EPERM: (dir) => `the system does not permit this change in ${dir} (an immutable file or folder?)`,
  // Not the disk's either: no file could be opened at all (src/fd-shortage.ts waited first where it could).
  EMFILE: (dir) => `this process has too many files open to work in ${dir}`,
  ENFILE: (dir) => `the system has too many files open to work in ${dir}`,
};

/** Codes whose remedy is not where the files go: "or point … elsewhere" would send the user the wrong way. */
const NOT_OF_THE_PLACE = new Set(['EMFILE', 'ENFILE']);

/** The refusal's code of `error` or of an error it wraps. */
function errnoCode(error: unknown): string | undefined {
  return errnoCodeIn(error, (code) => code in REFUSALS);
}

/** Permissions are per folder and file: the one to change, rather than the store's own. */
const OF_THE_PATH = new Set(['EACCES', 'EPERM']);

/** Whether `error` is (or wraps) a disk refusal: full, over quota, read-only, size limit, no permission, no descriptor left. */
export function isDiskRefusal(error: unknown): boolean {
  return errnoCode(error) !== undefined;
}

/**
 * The UsageError (exit 2) for a disk refusal met under `dir` before anything was
 * sent, or undefined when `error` is no disk refusal (the caller rethrows it).
 */
export function diskRefusedBeforeSending(error: unknown, dir: string): NotarizeError | undefined {
  return diskRefused(error, dir);
}

/**
 * As diskRefusedBeforeSending, for a write whose run already sent something
 * that paid nothing (`sent` says what): exit 1, as exit 2 promises nothing
 * was sent. `elsewhere`: how to write somewhere else instead (the store's
 * directory by default).
 */
export function diskRefused(
  error: unknown,
  dir: string,
  sent?: string,
  elsewhere = 'point NOTARIZE_CONFIG_DIR elsewhere',
): NotarizeError | undefined {
  const code = errnoCode(error);
  if (code === undefined) return undefined;
  const refused = OF_THE_PATH.has(code) ? refusedPlace(errnoErrorIn(error, (found) => found === code)) : undefined;
  if (refused?.file !== undefined) {
    const file = refused.file;
    return refusal(
      error,
      code,
      `${code === 'EACCES' ? 'permission is denied for' : 'the system does not permit changing'} ${file}`,
      sent,
      {
        EACCES: "give this user access to it (it may be another user's), or move it aside",
        EPERM: 'lift the restriction (lsattr, chattr -i), or move it aside',
      }[code]!,
    );
  }
  const where = refused?.folder ?? dir;
  const remedy: Record<string, string> = {
    ENOSPC: 'free some space there',
    EDQUOT: 'free some space there or raise the quota',
    EROFS: 'make it writable',
    EFBIG: 'raise the limit (ulimit -f)',
    EACCES: 'give this user read, write and search access to it (chmod u+rwx)',
    EPERM: 'lift the restriction (lsattr, chattr -i)',
    EMFILE: FD_SHORTAGE_REMEDY,
    ENFILE: FD_SHORTAGE_REMEDY,
  };
  const hint = `${remedy[code]!}${NOT_OF_THE_PLACE.has(code) ? '' : ` (or ${elsewhere})`}`;
  return refusal(error, code, REFUSALS[code]!(where), sent, hint);
}

/** The refusal's error: exit 2 when nothing was sent, else exit 1 saying what was (`sent`). */
function refusal(error: unknown, code: string, what: string, sent: string | undefined, remedy: string): NotarizeError {
  const details = { code: 'disk_refused', hint: `${remedy}, then run the command again`, cause: error };
  const message = `${what} (${code})`;
  if (sent === undefined) return new UsageError(`${message}; nothing was sent`, details);
  return new NotarizeError(details.code, EXIT.failed, `${message}; ${sent}`, details);
}

/**
 * The local store, in one private directory (NOTARIZE_CONFIG_DIR, or the
 * platform's config directory):
 *
 *   config.json                         settings
 *   credentials.json                    tokens, one per service (0600)
 *   locks/config.lock, credentials.lock held while a process changes that file
 *   services/<service>/pending/<hash>.json   sessions not yet completed
 *   services/<service>/ledger/<hash>.json    completed notarization records
 *   services/<service>/locks/<hash>.lock     held while a process works on a hash
 *
 * `<service>` is a readable part of the base URL and a digest of all of it
 * (`serviceDirName`); a store of an older notarize, named without the
 * digest, is moved to the new name on first use (`adoptLegacyServiceDir`).
 *
 * Sessions and records live one file per hash, written atomically, rather
 * than in one shared JSON document: many notarize processes run at once in
 * CI, and a read-modify-write of one shared file would lose entries unless
 * every writer took a lock. With a file per hash, writers of different hashes
 * never touch the same file, and a damaged file costs one entry, not all.
 * Everything is kept per service (base URL), so a sandbox run never shadows
 * the real service's ledger or token.
 *
 * config.json and credentials.json are small JSON objects read and written
 * here with the store's own primitives (files.ts), not with conf: conf's
 * writer resolves symbolic links and then chmods and chowns what they point
 * to, so a link planted in the store made `notarize login` write the token
 * into a file of the planter's choosing. A change of either file is a
 * read-modify-write under that file's lock (store/lock.ts), so processes
 * changing settings, or logging in to different services, at once never
 * lose each other's change; readers take no lock, since every write is an
 * atomic rename.
 */
import { createHash } from 'node:crypto';
import { lstatSync, renameSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { EXIT, NotarizeError, nothingSent, StoreError, UsageError } from '../errors.js';
import { hasKeyTwice } from '../exact-json.js';
import { cleanUpOnInterrupt } from '../interrupt.js';
import type { KeyTrace } from '../secrets.js';
import { parentAfterName } from '../path-spelling.js';
import { SETTINGS } from '../settings.js';
import {
  corrupt,
  DirFlushes,
  ensurePrivateDir,
  parseStoreJson,
  readPrivateFile,
  readRegularFile,
  refusalHint,
  tightenDirIfExists,
  writeFileAtomic,
} from './files.js';
import { diskRefused, diskRefusedBeforeSending } from './disk.js';
import { refuseNonLock, releaseOwnLock, withLock } from './lock.js';
import { ServiceStore } from './service-store.js';

/**
 * The store directory: NOTARIZE_CONFIG_DIR (an absolute path), else the platform's config
 * directory. A variable set to the empty string counts as unset, as for
 * every setting, and a relative XDG_CONFIG_HOME or APPDATA is ignored (the
 * XDG spec says so of the first): an empty XDG_CONFIG_HOME made the store
 * `./notarize`, credentials in the current directory. A home directory that
 * is empty or relative (`HOME=`, which os.homedir() returns as it is) is
 * refused for the same reason: the token would land in the checkout.
 */
export function defaultStoreDir(env: NodeJS.ProcessEnv): string {
  if (env.NOTARIZE_CONFIG_DIR) return absoluteStoreDir(env.NOTARIZE_CONFIG_DIR);
  const absolute = (dir: string | undefined) => (dir && isAbsolute(dir) ? dir : undefined);
  // The platform's config folder when its variable names one; else under the home directory.
  const configHome =
    process.platform === 'win32'
      ? absolute(env.APPDATA)
      : process.platform === 'darwin'
        ? undefined
        : absolute(env.XDG_CONFIG_HOME);
  if (configHome !== undefined) return join(configHome, 'notarize');
  const home = process.platform === 'win32' ? homedir() : (env.HOME ?? homedir());
  if (!isAbsolute(home)) {
    throw new UsageError(`no home directory to keep the store in (HOME is ${home === '' ? 'empty' : 'relative'})`, {
      code: 'no_store_dir',
      hint: 'set HOME, or NOTARIZE_CONFIG_DIR to a private folder (in CI, e.g. under $RUNNER_TEMP)',
    });
  }
  if (process.platform === 'win32') return join(home, 'AppData', 'Roaming', 'notarize');
  if (process.platform === 'darwin') return join(home, 'Library', 'Preferences', 'notarize');
  return join(home, '.config', 'notarize');
}

/**
 * NOTARIZE_CONFIG_DIR, refused when relative, for the reason a relative HOME
 * is: the store, the token with it, would be made under whatever folder a
 * step runs in (a checkout, a build's output), and a later step run from
 * another folder would find none of its pending sessions. A `~` a workflow's
 * `env:` does not expand made a folder named `~` in the build's output.
 */
function absoluteStoreDir(dir: string): string {
  if (isAbsolute(dir)) return dir;
  const tilde = dir === '~' || dir.startsWith('~/');
  throw new UsageError(
    `NOTARIZE_CONFIG_DIR is a relative path ('${dir}'): the store would be made under the current folder`,
    {
      code: 'no_store_dir',
      hint: tilde
        ? `a shell expands '~', a workflow's env: does not: give the whole path, e.g. "$HOME${dir.slice(1)}"`
        : `give an absolute path, e.g. "$PWD/${dir}", or one under $RUNNER_TEMP in CI`,
    },
  );
}

type JsonObject = Record<string, unknown>;
type StoreFileName = 'config' | 'credentials';
const STORE_FILES: readonly StoreFileName[] = ['config', 'credentials'];

/**
 * How long a change of config.json or credentials.json waits for another
 * process changing it: each holds the lock for one read and one atomic
 * write, milliseconds, so this is only reached when something is wrong.
 */
const CHANGE_LOCK_WAIT_MS = 15_000;

/** A JWT, as the service's tokens are: its header is a JSON object, so base64url starting `eyJ`. */
const TOKEN_SHAPE = /eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g;

/**
 * What the store's top directory holds: its files, their temporary files
 * mid-write (ours, and `<file>.tmp-<time><random>` of the conf-era notarize
 * that wrote through `atomically`), its folders, and what a file manager
 * leaves in any folder it shows (macOS's .DS_Store).
 */
function isStoreEntry(name: string): boolean {
  return /^(config\.json|credentials\.json|locks|services|\.(config|credentials)\.json\.[^/]+\.tmp|(config|credentials)\.json\.tmp-[0-9a-z]+|\.DS_Store)$/.test(
    name,
  );
}

/**
 * What credentials.json keeps to tie a key's digest to the token it was
 * stored with: 16 hex digits of the token's SHA-256 (the file is the
 * owner's alone and holds the token itself anyway).
 */
function tokenBinding(token: string): string {
  return createHash('sha256').update(token).digest('hex').slice(0, 16);
}

/** Entry point to everything notarize keeps on disk. Opens files lazily. */
export class Store {
  readonly dir: string;
  /** Told things worth a warning, e.g. a directory whose rights were tightened. */
  readonly #warn: (message: string) => void;
  /** The directory flushes shared by every write of this store, its services' included. */
  readonly #flushes = new DirFlushes();
  #prepared = false;

  /** The directory as given: `a/../b` is refused (prepare), as resolve() would make it another folder. */
  readonly #given: string;

  constructor(dir: string, warn: (message: string) => void = () => {}) {
    // Resolved first: \`link/\` and \`link/.\` name the link's target to lstat, so a store directory
    // given so would pass the link check (files.ts) and be chmod'ed and written through.
    this.dir = resolve(dir);
    this.#given = dir;
    this.#warn = warn;
  }

  /**
   * Creates the directory (0700) on first use, tightening it if it was wider;
   * refuses one that is a link, not ours, or world-writable or sticky (files.ts).
   */
  prepare(): void {
    if (this.#prepared) return;
    if (parentAfterName(this.#given)) {
      // resolve() works the '..' out as text; the system follows a link before it (path-spelling.ts).
      throw new StoreError(
        this.#given,
        `cannot use the store directory ${this.#given}: it is spelt with '..' after a folder's name, which after a link names another folder than resolving it does`,
        { hint: 'use a private directory of your own, named by its real path in NOTARIZE_CONFIG_DIR' },
      );
    }
    if (ensurePrivateDir(this.dir, isStoreEntry)) {
      this.#warn(`tightened the rights of ${this.dir} to owner-only (0700): it holds credentials`);
    }
    // Its folders too, now: a planted link there must stop the run before
    // anything is sent (a login on the fly stores its token under locks/).
    for (const sub of ['locks', 'services'].map((name) => join(this.dir, name))) {
      if (tightenDirIfExists(sub)) this.#warn(`tightened the rights of ${sub} to owner-only (0700)`);
    }
    for (const name of STORE_FILES) refuseNonLock(this.#lockPath(name));
    this.#prepared = true;
  }

  /** Whether an entry of this store's folder, by its name, is one notarize keeps there. */
  ownsEntry(name: string): boolean {
    return isStoreEntry(name);
  }

  /** The stored value of a setting, if any. */
  getSetting(key: string): string | undefined {
    const value = this.#read('config')[key];
    if (value === undefined) return undefined;
    // A hand-edited value is checked here, so that the error names the file it is in.
    const definition = SETTINGS.find((s) => s.key === key);
    // Not "damaged", with "move it aside" (the other settings with it): one value this notarize refuses
    // (r99: a base URL on port 0; r100: a number where a string goes) is mended by the config command.
    const refused = (why: string, cause?: unknown) => {
      const file = this.#path('config');
      return new StoreError(file, `store file ${file} holds a setting notarize refuses: ${why}`, {
        hint: `\`notarize config set ${key} <value>\` replaces it, \`notarize config unset ${key}\` removes it`,
        cause,
      });
    };
    if (typeof value !== 'string') {
      if (definition) throw refused(`'${key}' is not a string`);
      return undefined;
    }
    try {
      definition?.parse(value);
    } catch (error) {
      throw refused((error as Error).message, error);
    }
    return value;
  }

  /** All stored settings. */
  listSettings(): Record<string, string> {
    return Object.fromEntries(
      Object.entries(this.#read('config')).filter((e): e is [string, string] => typeof e[1] === 'string'),
    );
  }

  async setSetting(key: string, value: string): Promise<void> {
    await this.#change('config', (data) => {
      data[key] = value;
      return true;
    });
  }

  async unsetSetting(key: string): Promise<void> {
    await this.#change('config', (data) => {
      if (!(key in data)) return false;
      delete data[key];
      return true;
    });
  }

  /** The token stored for a service, if any. */
  getToken(baseUrl: string): string | undefined {
    const token = this.#tokens(this.#read('credentials'))[baseUrl];
    return typeof token === 'string' ? token : undefined;
  }

  /**
   * Every token stored, whatever its service, and the trace of the API key
   * each was logged in with (KeyTrace): secrets to keep out of what
   * is sent and shown (a description, a file's name) before any is used.
   * Also every string shaped like one (a JWT) in the file's text: a file
   * the store refuses as damaged (a key twice, a trailing comma) may still
   * hold live tokens, and a run with NOTARIZE_TOKEN goes on without it.
   * Read as it lies, changing nothing (no folder made, no rights tightened:
   * every command asks, `config path` too); a link or another user's file
   * is refused as any store file is (StoreError).
   */
  storedSecrets(): { tokens: string[]; keys: KeyTrace[] } {
    const file = this.#path('credentials');
    const text = readRegularFile(file, {});
    if (text === undefined) return { tokens: [], keys: [] };
    let tokens: string[] = [];
    let keys: KeyTrace[] = [];
    try {
      const data = this.#parse(file, text);
      tokens = Object.values(this.#tokens(data)).filter((t): t is string => typeof t === 'string');
      const prints = this.#lenient(data, 'tokenKeyPrints');
      keys = Object.entries(this.#tokenKeys(data)).flatMap(([baseUrl, digest]) => {
        if (typeof digest !== 'string') return [];
        const printed = prints[baseUrl];
        const own = `${digest}:`;
        const ofThisKey = Array.isArray(printed)
          ? printed
              .filter((p): p is string => typeof p === 'string' && p.startsWith(own))
              .map((p) => p.slice(own.length))
          : [];
        return [{ digest, prints: ofThisKey }];
      });
    } catch (error) {
      if (!(error instanceof StoreError)) throw error;
    }
    return { tokens: [...new Set([...tokens, ...Array.from(text.matchAll(TOKEN_SHAPE), (m) => m[0])])], keys };
  }

  /**
   * The digest of the API key the stored token of a service was logged in
   * with (secrets.ts keyDigest), if known: only while it names that very
   * token (tokenKeyTokens). An older notarize sharing the store (a pinned CI
   * image) replaced `tokens` at its login and left `tokenKeys` as it was, so
   * another account's token would pass for this key's.
   */
  getTokenKey(baseUrl: string): string | undefined {
    const data = this.#read('credentials');
    const digest = this.#tokenKeys(data)[baseUrl];
    const token = this.#tokens(data)[baseUrl];
    const bound = this.#lenient(data, 'tokenKeyTokens')[baseUrl];
    if (typeof digest !== 'string' || typeof token !== 'string' || bound !== tokenBinding(token)) return undefined;
    return digest;
  }

  /**
   * Stores the token of a service, with the trace of the key it was logged
   * in with (keyTrace: never the key); the tokens of other services, even ones stored
   * meanwhile, are kept.
   */
  async setToken(baseUrl: string, token: string, key: KeyTrace): Promise<void> {
    // Counted before the rewrite, which leaves the old file to its other names (r108: said by logout
    // only, while a login again had already separated them, the earlier token kept there unsaid).
    const otherNames = this.credentialsOtherNames();
    // A token comes from a login, which was sent: a disk refusing it is no "nothing was sent".
    await this.#change(
      'credentials',
      (data) => {
        data.tokens = { ...this.#tokens(data), [baseUrl]: token };
        data.tokenKeys = { ...this.#tokenKeys(data), [baseUrl]: key.digest };
        data.tokenKeyTokens = { ...this.#lenient(data, 'tokenKeyTokens'), [baseUrl]: tokenBinding(token) };
        // Each print names the digest it belongs to: one left by another login (an older notarize
        // rewrites tokenKeys alone) is not taken for this key's.
        const prints = key.prints.map((print) => `${key.digest}:${print}`);
        data.tokenKeyPrints = { ...this.#lenient(data, 'tokenKeyPrints'), [baseUrl]: prints };
        return true;
      },
      'the login went through, but its token was not stored',
    );
    if (otherNames)
      this.#warn(otherNamesWarning(this.credentialsPath, otherNames, 'every token it held before this login'));
  }

  /** Forgets the token of a service; resolves to whether there was one. */
  async deleteToken(baseUrl: string): Promise<boolean> {
    let had = false;
    await this.#change('credentials', (data) => {
      const tokens = { ...this.#tokens(data) };
      had = baseUrl in tokens;
      if (!had) return false;
      delete tokens[baseUrl];
      data.tokens = tokens;
      const keys = { ...this.#tokenKeys(data) };
      delete keys[baseUrl];
      data.tokenKeys = keys;
      for (const field of ['tokenKeyPrints', 'tokenKeyTokens'] as const) {
        const byService = { ...this.#lenient(data, field) };
        delete byService[baseUrl];
        data[field] = byService;
      }
      return true;
    });
    return had;
  }

  #path(name: StoreFileName): string {
    return join(this.dir, `${name}.json`);
  }

  /** The lock held while a process changes that file (#change). */
  #lockPath(name: StoreFileName): string {
    return join(this.dir, 'locks', `${name}.lock`);
  }

  /** Path of the credentials file (for messages; never its content). */
  get credentialsPath(): string {
    return this.#path('credentials');
  }

  /**
   * The other names (hard links) of credentials.json's file, counted, and
   * its inode: a rewrite gives credentials.json a new file, and the old one,
   * tokens and all, lives on under those names. Undefined when it has none
   * or is not there.
   */
  credentialsOtherNames(): { count: number; inode: number } | undefined {
    try {
      const info = lstatSync(this.credentialsPath, { throwIfNoEntry: false });
      return info?.isFile() && info.nlink > 1 ? { count: info.nlink - 1, inode: info.ino } : undefined;
    } catch {
      return undefined;
    }
  }

  /** The pending sessions and ledger of one service. */
  service(baseUrl: string): ServiceStore {
    this.prepare();
    const services = join(this.dir, 'services');
    const dir = join(services, serviceDirName(baseUrl));
    const moved = adoptLegacyServiceDir(services, baseUrl, dir);
    if (moved !== undefined) this.#warn(moved);
    const service = new ServiceStore(dir, baseUrl, this.#warn, this.#flushes);
    try {
      service.tightenExisting();
    } catch (error) {
      // Nothing is sent before the store is opened: a full disk says so.
      const disk = diskRefusedBeforeSending(error, service.dir);
      if (disk !== undefined) throw disk;
      if (error instanceof NotarizeError) throw error;
      const hint = refusalHint(error);
      throw new StoreError(service.dir, `cannot use the store directory ${service.dir}: ${(error as Error).message}`, {
        ...(hint === undefined ? {} : { hint }),
        cause: error,
      });
    }
    return service;
  }

  /** The stored tokens by base URL (see #byService). */
  #tokens(data: JsonObject): JsonObject {
    return this.#byService(data, 'tokens');
  }

  /**
   * A map of credentials.json by base URL read leniently: the prints of the
   * keys the stored tokens were logged in with (KeyTrace), and the token each
   * key's digest was stored with (tokenBinding). Damaged, they only mean the
   * keys are looked for without prints, or a token's key is not known (a key
   * at hand logs in anew); a login writes them anew.
   */
  #lenient(data: JsonObject, field: 'tokenKeyPrints' | 'tokenKeyTokens'): JsonObject {
    const map = data[field];
    return typeof map === 'object' && map !== null && !Array.isArray(map) ? (map as JsonObject) : {};
  }

  /** The digests of the keys the stored tokens were logged in with, by base URL (see #byService). */
  #tokenKeys(data: JsonObject): JsonObject {
    return this.#byService(data, 'tokenKeys');
  }

  /**
   * A map of credentials.json by base URL. One that is not an object makes
   * the file damaged: it is reported, and never overwritten by a login or logout.
   */
  #byService(data: JsonObject, field: 'tokens' | 'tokenKeys'): JsonObject {
    const map = data[field];
    if (map === undefined || map === null) return {};
    if (typeof map !== 'object' || Array.isArray(map)) {
      throw corrupt(this.credentialsPath, `'${field}' is not an object`);
    }
    return map as JsonObject;
  }

  /** Files already checked for wider rights by this process: one warning each. */
  readonly #checked = new Set<StoreFileName>();

  /**
   * The content of config.json or credentials.json, {} when it does not
   * exist. Read afresh on every call (other processes change it). A file that
   * is not a JSON object is reported as damaged and left as it is: a `[1]`
   * or `"x"` must not be rewritten as an object with numbered keys.
   */
  #read(name: StoreFileName): JsonObject {
    this.prepare();
    const file = this.#path(name);
    // Its rights tightened (once said) if others could read it.
    const tighten = this.#checked.has(name)
      ? undefined
      : () => this.#warn(`tightened the rights of ${file} to owner-only (0600)`);
    const text = readPrivateFile(file, tighten);
    this.#checked.add(name);
    return text === undefined ? {} : this.#parse(file, text);
  }

  /** The JSON object `text` of `file` holds; StoreError when it is not one, or a key appears twice. */
  #parse(file: string, text: string): JsonObject {
    const value = parseStoreJson(file, text);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw corrupt(file, 'expected a JSON object');
    }
    // JSON.parse keeps the last of two equal keys, and a rewrite would then drop the other for good
    // (a token, a setting edited by hand): reported, the file left as it is.
    if (hasKeyTwice(text)) throw corrupt(file, 'a key appears twice in one object, and which one counts is unclear');
    return value as JsonObject;
  }

  /**
   * Reads `name`, lets `edit` change the object (it returns false when it
   * changed nothing), and writes it back atomically, all under the file's
   * lock so that a concurrent change by another process is never lost. A
   * disk refusing the lock is the user's to fix (store/disk.ts): exit 2, or
   * exit 1 saying `afterSending` when the change follows a request.
   */
  async #change(name: StoreFileName, edit: (data: JsonObject) => boolean, afterSending?: string): Promise<void> {
    this.prepare();
    const file = this.#path(name);
    const lock = this.#lockPath(name);
    const locks = dirname(lock);
    let locked = false;
    try {
      // Inside the try: a locks/ folder that cannot be made after a login is as much a refusal after
      // sending (exit 1, afterSending) as its lock.
      if (ensurePrivateDir(locks)) this.#warn(`tightened the rights of ${locks} to owner-only (0700)`);
      await withLock(lock, CHANGE_LOCK_WAIT_MS, async () => {
        locked = true;
        // A signal's exit lets it go, as it does a hash's (interrupt.ts).
        const forget = cleanUpOnInterrupt(() => releaseOwnLock(lock));
        try {
          await this.#rewrite(file, name, edit);
        } finally {
          forget();
        }
      });
    } catch (error) {
      // The lock could not be made on a full or read-only disk: the user's to fix, nothing changed.
      const refused = locked ? undefined : diskRefused(error, this.dir, afterSending);
      if (refused !== undefined) throw refused;
      // withLock's own wait ran out: its error (exit 4) names the file and the holder, and says a dead
      // holder's lock is taken over by itself; "delete the lock" would invite removing a live one.
      // Any other local refusal (a lock that is a link, a damaged file) after something was sent: exit 2
      // would say nothing was.
      if (afterSending !== undefined && nothingSent(error)) {
        throw new NotarizeError(error.code, EXIT.failed, `${afterSending}: ${error.message}`, {
          ...(error.hint === undefined ? {} : { hint: error.hint }),
          cause: error,
        });
      }
      throw error;
    }
  }

  /** Under the store file's lock (#change): `edit` applied to what the file holds, written back if it changed it. */
  async #rewrite(file: string, name: StoreFileName, edit: (data: JsonObject) => boolean): Promise<void> {
    const data = this.#read(name);
    if (!edit(data)) return;
    try {
      await writeFileAtomic(file, `${JSON.stringify(data, undefined, '\t')}\n`, { flushes: this.#flushes });
    } catch (error) {
      throw new StoreError(file, `cannot write store file ${file}: ${(error as Error).message}`, {
        hint: refusalHint(error) ?? 'check that the store directory belongs to you and the disk is not full',
        cause: error,
      });
    }
  }
}

/**
 * The old credentials file lives on under its other names (hard links),
 * `what` in it: where to find them.
 */
export function otherNamesWarning(
  path: string,
  { count, inode }: { count: number; inode: number },
  what: string,
): string {
  const names = count === 1 ? 'another name (a hard link)' : `${count} other names (hard links)`;
  const them = count === 1 ? 'it' : 'them';
  return (
    `${path} had ${names}, where ${what} is still stored: find ${them} with ` +
    `\`find <mount point> -xdev -inum ${inode}\` on the file system holding it, and delete ${them}`
  );
}

/** The longest readable part of a service directory name; the digest after it tells URLs apart. */
const MAX_READABLE_CHARS = 80;

/**
 * The directory name of a base URL's store: a readable part (`http_` for
 * plain http, the host, the port if given) and the first 16 hex digits of
 * the SHA-256 of the normalised URL, e.g. `app.dedit.io-8443-1f0c...`.
 * The digest alone tells URLs apart: a name built only by replacing
 * characters let two URLs share one folder (`https://a.example:8443` and
 * `https://a.example_8443` were both `a.example_8443`), and with it their
 * pending sessions and ledger.
 */
export function serviceDirName(baseUrl: string): string {
  const url = new URL(baseUrl);
  const normalised = url.toString().replace(/\/+$/, '');
  const readable = `${url.protocol === 'http:' ? 'http_' : ''}${url.hostname}${url.port ? `-${url.port}` : ''}`
    .replace(/[^A-Za-z0-9.-]/g, '_')
    .slice(0, MAX_READABLE_CHARS);
  return `${readable}-${createHash('sha256').update(normalised).digest('hex').slice(0, 16)}`;
}

/**
 * The name an older notarize gave the directory of a base URL (before
 * `serviceDirName` added a digest to every name); only read, to move such a
 * directory to its new name.
 */
export function legacyServiceDirName(baseUrl: string): string {
  const readable = baseUrl
    .replace(/^https?:\/\//, (m) => (m === 'https://' ? '' : 'http_'))
    .replace(/[^A-Za-z0-9.-]/g, '_');
  if (new URL(baseUrl).pathname === '/') return readable;
  return `${readable}-${createHash('sha256').update(baseUrl).digest('hex').slice(0, 12)}`;
}

/**
 * Moves the directory an older notarize kept for `baseUrl` to its new name
 * `dir`, once: when the old one exists and the new one does not. A rename
 * within `services/` is atomic, so every pending session and record moves
 * together or none does, and a process killed around it leaves one of the
 * two layouts, each complete. Two processes migrating at once: one renames,
 * the other finds the old name gone and uses the new one. Returns what to
 * warn about, if anything.
 *
 * An old name shared by two URLs (the collision the new names end) goes to
 * whichever of them is used first; its entries cannot be told apart.
 */
function adoptLegacyServiceDir(services: string, baseUrl: string, dir: string): string | undefined {
  const legacy = join(services, legacyServiceDirName(baseUrl));
  if (exists(dir) || !exists(legacy)) return undefined;
  try {
    renameSync(legacy, dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // Moved (or the new one made) by another process since we looked.
    if (code === 'ENOENT' || code === 'EEXIST' || code === 'ENOTEMPTY') return undefined;
    throw new StoreError(legacy, `cannot move ${legacy} to ${dir}: ${(error as Error).message}`, {
      hint: `move it there by hand: it holds the pending sessions and ledger of ${baseUrl}`,
      cause: error,
    });
  }
  return `moved the store of ${baseUrl} from ${legacy} to ${dir} (store folders are now named with a digest of their URL)`;
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    const hint = refusalHint(error);
    throw new StoreError(path, `cannot use the store directory ${path}: ${(error as Error).message}`, {
      ...(hint === undefined ? {} : { hint }),
      cause: error,
    });
  }
}

/**
 * The local store, in one private directory (NOTARIZE_CONFIG_DIR, or the
 * platform's config directory):
 *
 *   config.json                         settings (conf)
 *   credentials.json                    tokens, one per service (conf, 0600)
 *   services/<service>/pending/<hash>.json   sessions not yet completed
 *   services/<service>/ledger/<hash>.json    completed notarization records
 *   services/<service>/locks/<hash>.lock     held while a process works on a hash
 *
 * Sessions and records live one file per hash, written atomically, rather
 * than in one shared JSON document: many notarize processes run at once in
 * CI, and a read-modify-write of one shared file would lose entries unless
 * every writer took a lock. With a file per hash, writers of different hashes
 * never touch the same file, and a damaged file costs one entry, not all.
 * Everything is kept per service (base URL), so a sandbox run never shadows
 * the real service's ledger or token.
 */
import Conf from 'conf';
import { createHash } from 'node:crypto';
import { lstatSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { NotarizeError, StoreError } from '../errors.js';
import { SETTINGS } from '../settings.js';
import {
  corrupt,
  ensurePrivateDir,
  ensurePrivateFile,
  keepFileSizeSignalHarmless,
  PRIVATE_FILE_MODE,
} from './files.js';
import { readRegularFileSync } from './read-safe.js';
import { ServiceStore } from './service-store.js';

/** The store directory: NOTARIZE_CONFIG_DIR, else the platform's config directory. */
export function defaultStoreDir(env: NodeJS.ProcessEnv): string {
  if (env.NOTARIZE_CONFIG_DIR) return env.NOTARIZE_CONFIG_DIR;
  const home = homedir();
  if (process.platform === 'win32') return join(env.APPDATA ?? join(home, 'AppData', 'Roaming'), 'notarize');
  if (process.platform === 'darwin') return join(home, 'Library', 'Preferences', 'notarize');
  return join(env.XDG_CONFIG_HOME ?? join(home, '.config'), 'notarize');
}

type ConfData = Record<string, unknown>;

/** Entry point to everything notarize keeps on disk. Opens files lazily. */
export class Store {
  readonly dir: string;
  /** Told things worth a warning, e.g. a directory whose rights were tightened. */
  readonly #warn: (message: string) => void;
  #settings: Conf<ConfData> | undefined;
  #credentials: Conf<ConfData> | undefined;
  #prepared = false;

  constructor(dir: string, warn: (message: string) => void = () => {}) {
    this.dir = dir;
    this.#warn = warn;
    // conf, imported here, brings the SIGXFSZ listener that would make a full disk fatal (see files.ts).
    keepFileSizeSignalHarmless();
  }

  /** Creates the directory (0700) on first use, tightening it if it was wider. */
  prepare(): void {
    if (this.#prepared) return;
    if (ensurePrivateDir(this.dir)) {
      this.#warn(`tightened the rights of ${this.dir} to owner-only (0700): it holds credentials`);
    }
    this.#prepared = true;
  }

  /** The stored value of a setting, if any. */
  getSetting(key: string): string | undefined {
    const value = this.#use('config', (conf) => conf.get(key));
    if (value === undefined) return undefined;
    // A hand-edited value is checked here, so that the error names the file it is in.
    const definition = SETTINGS.find((s) => s.key === key);
    if (typeof value !== 'string') {
      if (definition) throw corrupt(this.#configPath, `setting '${key}' is not a string`);
      return undefined;
    }
    try {
      definition?.parse(value);
    } catch (error) {
      throw corrupt(this.#configPath, `setting '${key}': ${(error as Error).message}`, error);
    }
    return value;
  }

  /** All stored settings. */
  listSettings(): Record<string, string> {
    return Object.fromEntries(
      Object.entries(this.#use('config', (conf) => conf.store)).filter(
        (e): e is [string, string] => typeof e[1] === 'string',
      ),
    );
  }

  setSetting(key: string, value: string): void {
    this.#use('config', (conf) => conf.set(key, value));
  }

  unsetSetting(key: string): void {
    this.#use('config', (conf) => conf.delete(key));
  }

  /** The token stored for a service, if any. */
  getToken(baseUrl: string): string | undefined {
    const token = this.#tokens()[baseUrl];
    return typeof token === 'string' ? token : undefined;
  }

  setToken(baseUrl: string, token: string): void {
    const tokens = this.#tokens();
    this.#use('credentials', (conf) => conf.set('tokens', { ...tokens, [baseUrl]: token }));
  }

  /** Forgets the token of a service; returns whether there was one. */
  deleteToken(baseUrl: string): boolean {
    const tokens = { ...this.#tokens() };
    if (!(baseUrl in tokens)) return false;
    delete tokens[baseUrl];
    this.#use('credentials', (conf) => conf.set('tokens', tokens));
    return true;
  }

  get #configPath(): string {
    return join(this.dir, 'config.json');
  }

  /** Path of the credentials file (for messages; never its content). */
  get credentialsPath(): string {
    return join(this.dir, 'credentials.json');
  }

  /** The pending sessions and ledger of one service. */
  service(baseUrl: string): ServiceStore {
    this.prepare();
    const service = new ServiceStore(join(this.dir, 'services', serviceDirName(baseUrl)), baseUrl, this.#warn);
    try {
      service.tightenExisting();
    } catch (error) {
      throw new StoreError(service.dir, `cannot use the store directory ${service.dir}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    return service;
  }

  /**
   * The stored tokens by base URL. A `tokens` that is not an object makes the
   * file damaged: it is reported, and never overwritten by a login or logout.
   */
  #tokens(): Record<string, unknown> {
    const tokens = this.#use('credentials', (conf) => conf.get('tokens'));
    if (tokens === undefined || tokens === null) return {};
    if (typeof tokens !== 'object' || Array.isArray(tokens)) {
      throw corrupt(this.credentialsPath, "'tokens' is not an object");
    }
    return tokens as Record<string, unknown>;
  }

  /**
   * Runs one conf operation. conf reads the file again on every access, so a
   * damage found at any access is reported as a StoreError naming the file.
   */
  #use<T>(configName: 'config' | 'credentials', operation: (conf: Conf<ConfData>) => T): T {
    const conf =
      configName === 'config'
        ? (this.#settings ??= this.#open('config'))
        : (this.#credentials ??= this.#open('credentials'));
    try {
      // conf reads the file itself, blocking, on every access: a path swapped for
      // a FIFO since it was opened would hang it, so look before each access.
      checkRegularIfExists(conf.path);
      return operation(conf);
    } catch (error) {
      throw confError(conf.path, error);
    }
  }

  #open(configName: string): Conf<ConfData> {
    this.prepare();
    const file = join(this.dir, `${configName}.json`);
    checkConfFile(file);
    if (ensurePrivateFile(file)) this.#warn(`tightened the rights of ${file} to owner-only (0600)`);
    try {
      return new Conf<ConfData>({
        cwd: this.dir,
        configName,
        configFileMode: PRIVATE_FILE_MODE,
        accessPropertiesByDotNotation: false,
        clearInvalidConfig: false,
      });
    } catch (error) {
      throw confError(file, error);
    }
  }
}

/**
 * Checks that an existing settings or credentials file holds a JSON object.
 * conf would read `[1]` or `"x"` as an object with numbered keys and then
 * rewrite the file in that form on the next change; a hand-edited file like
 * that is reported instead, and left as it is.
 */
function checkConfFile(file: string): void {
  let text: string;
  try {
    // Never waits: a FIFO at config.json hung here, beyond the reach of signals (see read-safe.ts).
    text = readRegularFileSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw confError(file, error);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw corrupt(file, 'not valid JSON', error);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw corrupt(file, 'expected a JSON object');
  }
}

/** Throws unless `file` is absent or a regular file (not followed if a link): see #use. */
function checkRegularIfExists(file: string): void {
  const info = lstatSync(file, { throwIfNoEntry: false });
  if (info !== undefined && !info.isFile()) {
    const what = info.isSymbolicLink()
      ? 'it is a symbolic link, which the store does not follow'
      : 'not a regular file';
    throw Object.assign(new Error(what), { code: 'ENOTREG' });
  }
}

function confError(file: string, error: unknown): NotarizeError {
  if (error instanceof NotarizeError) return error;
  if (error instanceof SyntaxError) return corrupt(file, 'not valid JSON', error);
  return new StoreError(file, `cannot use store file ${file}: ${(error as Error).message}`, {
    hint: 'check that the store directory and its files belong to you and the disk is not full',
    cause: error,
  });
}

/**
 * A readable, file-system-safe directory name for a base URL. Replacing
 * characters alone could map two URLs with paths to one name (`/a_b` and
 * `/a/b`), so a URL with a path also gets a digest of the whole URL.
 */
export function serviceDirName(baseUrl: string): string {
  const readable = baseUrl
    .replace(/^https?:\/\//, (m) => (m === 'https://' ? '' : 'http_'))
    .replace(/[^A-Za-z0-9.-]/g, '_');
  if (new URL(baseUrl).pathname === '/') return readable;
  return `${readable}-${createHash('sha256').update(baseUrl).digest('hex').slice(0, 12)}`;
}

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
import { homedir } from 'node:os';
import { join } from 'node:path';
import { NotarizeError } from '../errors.js';
import { corrupt, ensurePrivateDir, PRIVATE_FILE_MODE } from './files.js';
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
    const value = this.#settingsConf().get(key);
    return typeof value === 'string' ? value : undefined;
  }

  /** All stored settings. */
  listSettings(): Record<string, string> {
    return Object.fromEntries(
      Object.entries(this.#settingsConf().store).filter((e): e is [string, string] => typeof e[1] === 'string'),
    );
  }

  setSetting(key: string, value: string): void {
    this.#settingsConf().set(key, value);
  }

  unsetSetting(key: string): void {
    this.#settingsConf().delete(key);
  }

  /** The token stored for a service, if any. */
  getToken(baseUrl: string): string | undefined {
    const tokens = this.#credentialsConf().get('tokens');
    if (tokens === undefined || tokens === null) return undefined;
    if (typeof tokens !== 'object') throw corrupt(this.#credentialsConf().path, "'tokens' is not an object");
    const token = (tokens as Record<string, unknown>)[baseUrl];
    return typeof token === 'string' ? token : undefined;
  }

  setToken(baseUrl: string, token: string): void {
    const conf = this.#credentialsConf();
    const tokens = (conf.get('tokens') as Record<string, string> | undefined) ?? {};
    conf.set('tokens', { ...tokens, [baseUrl]: token });
  }

  /** Forgets the token of a service; returns whether there was one. */
  deleteToken(baseUrl: string): boolean {
    const conf = this.#credentialsConf();
    const tokens = { ...((conf.get('tokens') as Record<string, string> | undefined) ?? {}) };
    if (!(baseUrl in tokens)) return false;
    delete tokens[baseUrl];
    conf.set('tokens', tokens);
    return true;
  }

  /** Path of the credentials file (for messages; never its content). */
  get credentialsPath(): string {
    return join(this.dir, 'credentials.json');
  }

  /** The pending sessions and ledger of one service. */
  service(baseUrl: string): ServiceStore {
    this.prepare();
    return new ServiceStore(join(this.dir, 'services', serviceDirName(baseUrl)), baseUrl);
  }

  #settingsConf(): Conf<ConfData> {
    this.#settings ??= this.#open('config');
    return this.#settings;
  }

  #credentialsConf(): Conf<ConfData> {
    this.#credentials ??= this.#open('credentials');
    return this.#credentials;
  }

  #open(configName: string): Conf<ConfData> {
    this.prepare();
    const file = join(this.dir, `${configName}.json`);
    try {
      return new Conf<ConfData>({
        cwd: this.dir,
        configName,
        configFileMode: PRIVATE_FILE_MODE,
        accessPropertiesByDotNotation: false,
        clearInvalidConfig: false,
      });
    } catch (error) {
      if (error instanceof NotarizeError) throw error;
      throw corrupt(file, error instanceof SyntaxError ? 'not valid JSON' : (error as Error).message, error);
    }
  }
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

/**
 * The factory: everything a command needs (IO, settings, store, API client),
 * built lazily on first use so a command pays only for what it touches.
 * Settings follow one rule: flag > environment > store > default.
 */
import type { ApiClient } from './api/client.js';
import type { Dispatcher } from 'undici';
import type { IO } from './output/io.js';
import { settingDefinition, type SettingKey } from './settings.js';
import type * as StoreModuleExports from './store/store.js';
import type { Store } from './store/store.js';
import type { ServiceStore } from './store/service-store.js';
import { VERSION } from './version.js';

/** The options every command accepts. */
export interface GlobalOptions {
  baseUrl?: string;
  timeout?: string;
  retries?: string;
  json?: boolean;
  quiet?: boolean;
  verbose?: boolean;
}

/**
 * The store module (with zod and the answer schemas it validates files
 * against), passed in by cli.ts only for commands that use the store, so
 * that e.g. `notarize hash` starts without it.
 */
export type StoreModule = typeof StoreModuleExports;

/** Lazily built dependencies of a command run; see the module comment. */
export class Context {
  readonly io: IO;
  readonly env: NodeJS.ProcessEnv;
  readonly globals: GlobalOptions;
  readonly #storeModule: StoreModule | undefined;
  #store: Store | undefined;
  #api: ApiClient | undefined;
  #dispatcher: Dispatcher | undefined;

  constructor(io: IO, env: NodeJS.ProcessEnv, globals: GlobalOptions, storeModule?: StoreModule) {
    this.io = io;
    this.env = env;
    this.globals = globals;
    this.#storeModule = storeModule;
  }

  get store(): Store {
    if (!this.#storeModule) throw new Error('internal: this command is registered with usesStore: false');
    const { Store, defaultStoreDir } = this.#storeModule;
    this.#store ??= new Store(defaultStoreDir(this.env), (message) => this.io.warn(message));
    return this.#store;
  }

  /** A setting's value by the precedence rule; invalid values are usage errors. */
  setting(key: SettingKey): string {
    const definition = settingDefinition(key);
    const flag = this.globals[key];
    if (flag !== undefined) return definition.parse(flag);
    const fromEnv = this.env[definition.env];
    if (fromEnv !== undefined && fromEnv !== '') return definition.parse(fromEnv);
    const stored = this.store.getSetting(key);
    return definition.parse(stored ?? definition.default);
  }

  get baseUrl(): string {
    return this.setting('baseUrl');
  }

  /** The pending sessions and ledger of the current service. */
  get ledger(): ServiceStore {
    return this.store.service(this.baseUrl);
  }

  /** The API client for the current service, with retries and credentials wired in. */
  async api(): Promise<ApiClient> {
    if (this.#api) return this.#api;
    const [{ ApiClient }, { HttpTransport }, { TokenCredentials }, { createDispatcher }] = await Promise.all([
      import('./api/client.js'),
      import('./api/http.js'),
      import('./core/credentials.js'),
      import('./api/dispatcher.js'),
    ]);
    const baseUrl = this.baseUrl;
    this.#dispatcher = createDispatcher(this.env);
    const transport = new HttpTransport({
      baseUrl,
      timeoutMs: Number(this.setting('timeout')),
      userAgent: `notarize/${VERSION} node/${process.versions.node}`,
      dispatcher: this.#dispatcher,
      log: (line) => this.io.debug(line),
    });
    const credentials = new TokenCredentials({
      baseUrl,
      store: this.store,
      envToken: this.env.NOTARIZE_TOKEN,
      apiKey: this.env.NOTARIZE_API_KEY || undefined,
      onLogin: (reason) => this.io.debug(`logging in with NOTARIZE_API_KEY (${reason})`),
      onToken: (token) => this.io.addSecret(token),
    });
    const baseDelayMs = Number(this.env.NOTARIZE_RETRY_DELAY_MS ?? 500);
    this.#api = new ApiClient(
      transport,
      {
        retries: Number(this.setting('retries')),
        baseDelayMs: Number.isFinite(baseDelayMs) && baseDelayMs >= 0 ? baseDelayMs : 500,
        maxDelayMs: 30_000,
        onRetry: (error, attempt, delay) => this.io.debug(`retry ${attempt} in ${delay} ms after: ${error.message}`),
      },
      credentials,
    );
    credentials.attach(this.#api);
    return this.#api;
  }

  /** Releases network resources so the process can exit promptly. */
  async close(): Promise<void> {
    await this.#dispatcher?.destroy();
  }
}

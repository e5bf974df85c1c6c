/**
 * The factory: everything a command needs (IO, settings, store, API client),
 * built lazily on first use so a command pays only for what it touches.
 * Settings follow one rule, flag > environment > store > default, applied by
 * the resolver in settings.ts over this context's flags, environment and store.
 */
import type { ApiClient } from './api/client.js';
import type { RetryPolicy } from './api/retry.js';
import type { Dispatcher } from 'undici';
import type { IO } from './output/io.js';
import { proxySecrets } from './api/proxy-env.js';
import { cleanSecret, keyDigest } from './secrets.js';
import { beforeSending } from './interrupt.js';
import { loadingModule } from './fd-shortage.js';
import {
  checkSettingFlags,
  LONGEST_RETRY_WAIT_MS,
  resolveSetting,
  type ResolvedSetting,
  type SettingKey,
} from './settings.js';
import { lstatSync } from 'node:fs';
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
  /** The service stores opened in this run, by base URL: their directories are checked once, not on every read. */
  readonly #serviceStores = new Map<string, ServiceStore>();

  constructor(io: IO, env: NodeJS.ProcessEnv, globals: GlobalOptions, storeModule?: StoreModule) {
    this.io = io;
    this.env = env;
    this.globals = globals;
    this.#storeModule = storeModule;
    checkSettingFlags(globals);
    // A proxy URL may carry a password; no message quotes one, and none may slip through.
    for (const { secret, name } of proxySecrets(env)) io.addSecret(secret, name);
    if (storeModule) this.#storedTokensAreSecrets();
  }

  /**
   * Makes every token the store holds a secret before the command does
   * anything: a token is otherwise known as one only once a request uses it
   * (api() onToken), too late for register's checks of a description or a
   * file's name, which must keep it off the permanent record, and never for
   * commands that print what the service sent (show, list, receipt,
   * pending): a service may echo a token in a record. Nothing is made or
   * changed for it (Store.storedSecrets reads the file as it lies). A store
   * or credentials file that cannot be read is passed over here: a damaged
   * file holds no token to use (its token-shaped strings are still taken),
   * and the command reports the problem itself if it needs the store.
   */
  #storedTokensAreSecrets(): void {
    try {
      const { tokens, keys } = this.store.storedSecrets();
      for (const token of tokens) this.io.addSecret(token, `a token in ${this.store.dir}`);
      // The key of a stored token (`notarize login`) is known by its trace alone; one in the
      // environment is a secret already, found by its text.
      const envKey = cleanSecret(this.env.NOTARIZE_API_KEY);
      for (const key of keys) if (envKey === undefined || key.digest !== keyDigest(envKey)) this.io.addKeyTrace(key);
    } catch {
      // See above.
    }
  }

  get store(): Store {
    if (!this.#storeModule) throw new Error('internal: this command is registered with usesStore: false');
    const { Store, defaultStoreDir } = this.#storeModule;
    this.#store ??= new Store(defaultStoreDir(this.env), (message) => this.io.warn(message));
    return this.#store;
  }

  /** A setting's value by the precedence rule; invalid values are usage errors. */
  setting(key: SettingKey): string {
    return this.resolveSetting(key).value;
  }

  /** A setting's value and where it comes from (`config get`/`list` show both); invalid values are usage errors. */
  resolveSetting(key: SettingKey): ResolvedSetting {
    return resolveSetting(key, {
      flags: this.globals,
      env: this.env,
      stored: (stored) => this.store.getSetting(stored),
    });
  }

  get baseUrl(): string {
    return this.setting('baseUrl');
  }

  /** A setting by the precedence rule with the store left out (flag > environment > default): verify with no store. */
  settingWithoutStore(key: SettingKey): string {
    return resolveSetting(key, { flags: this.globals, env: this.env, stored: () => undefined }).value;
  }

  /** Whether the store directory exists (lstat: a link there exists too, and the store then refuses it). */
  get storeExists(): boolean {
    try {
      lstatSync(this.store.dir);
      return true;
    } catch {
      return false;
    }
  }

  /** The store of the current service: its pending sessions, ledger, trees and locks. */
  get serviceStore(): ServiceStore {
    const baseUrl = this.baseUrl;
    let store = this.#serviceStores.get(baseUrl);
    if (store === undefined) {
      store = this.store.service(baseUrl);
      this.#serviceStores.set(baseUrl, store);
    }
    return store;
  }

  /** The API client for the current service, with retries and credentials wired in. */
  async api(): Promise<ApiClient> {
    if (this.#api) return this.#api;
    const [
      { ApiClient, logIn },
      { HttpTransport },
      { TokenCredentials },
      { createDispatcher, proxyRoute },
      { Outage, outageTiming },
      { RequestSlots },
    ] = await loadingModule(() =>
      // Before the first request of the run: a shortage of descriptors here is "nothing was sent".
      Promise.all([
        import('./api/client.js'),
        import('./api/http.js'),
        import('./core/credentials.js'),
        import('./api/dispatcher.js'),
        import('./api/retry.js'),
        import('./api/slots.js'),
      ]),
    );
    const baseUrl = this.baseUrl;
    // Throws UsageError naming a malformed proxy variable, before anything is sent.
    const route = proxyRoute(this.env, baseUrl);
    const timeoutMs = Number(this.setting('timeout'));
    this.#dispatcher = createDispatcher(this.env, baseUrl, timeoutMs);
    const transport = new HttpTransport({
      baseUrl,
      ...(route === undefined ? {} : { proxyVariable: route.variable }),
      timeoutMs,
      userAgent: `notarize/${VERSION} node/${process.versions.node}`,
      dispatcher: this.#dispatcher,
      log: (line) => this.io.debug(line),
      warn: (line) => this.io.warn(line),
    });
    // Resolved when the client is built, as before: only commands that send check it.
    const baseDelayMs = Number(this.setting('retryDelay'));
    const retry: RetryPolicy = {
      retries: Number(this.setting('retries')),
      baseDelayMs,
      maxDelayMs: LONGEST_RETRY_WAIT_MS,
      onRetry: (error, attempt, delay) => this.io.debug(`retry ${attempt} in ${delay} ms after: ${error.message}`),
      // One for the run: a service that is down or failing is met once, not once per document.
      outage: new Outage({ timing: outageTiming(baseDelayMs) }),
      // No limit until a command sets one (register -j): ApiClient.limitRequests.
      slots: new RequestSlots(),
      // After SIGINT or SIGTERM nothing more goes out, a retry included: it could be paid and never recorded.
      beforeAttempt: beforeSending,
    };
    // The credentials own the token (login on the fly, renewal after a 401)
    // and log in over the transport with the client's retries (`retry`):
    // the client asks them for tokens, they never call the client.
    const credentials = new TokenCredentials({
      baseUrl,
      store: this.store,
      envToken: cleanSecret(this.env.NOTARIZE_TOKEN),
      apiKey: cleanSecret(this.env.NOTARIZE_API_KEY),
      login: (apiKey) => logIn(transport, retry, apiKey),
      onLogin: (reason) => this.io.debug(`logging in with NOTARIZE_API_KEY (${reason})`),
      // NOTARIZE_TOKEN and a stored token come here too, not only one the service sent now.
      onToken: (token) => this.io.addSecret(token, 'the token in use'),
    });
    this.#api = new ApiClient(transport, retry, credentials);
    return this.#api;
  }

  /** Releases network resources so the process can exit promptly. */
  async close(): Promise<void> {
    await this.#dispatcher?.destroy();
  }
}

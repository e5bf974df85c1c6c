/**
 * Where the bearer token comes from, in order: NOTARIZE_TOKEN, the token
 * stored for this service, or a login on the fly with NOTARIZE_API_KEY.
 * An expired token is never sent.
 */
import type { ApiClient, Credentials } from '../api/client.js';
import { AuthError } from '../errors.js';
import type { Store } from '../store/store.js';
import { isExpired } from './token.js';

export interface CredentialSources {
  baseUrl: string;
  store: Store;
  /** NOTARIZE_TOKEN, if set. */
  envToken: string | undefined;
  /** NOTARIZE_API_KEY, if set. */
  apiKey: string | undefined;
  /** Told when a login happens on the fly (for --verbose). */
  onLogin?: (reason: string) => void;
}

/** The Credentials the ApiClient uses; see the module comment. */
export class TokenCredentials implements Credentials {
  readonly #sources: CredentialSources;
  #client: ApiClient | undefined;
  #current: string | undefined;
  #renewed = false;

  constructor(sources: CredentialSources) {
    this.#sources = sources;
  }

  /** The client to log in with (set once the client exists: they refer to each other). */
  attach(client: ApiClient): void {
    this.#client = client;
  }

  async token(): Promise<string> {
    if (this.#current !== undefined && !isExpired(this.#current)) return this.#current;
    const { envToken, store, baseUrl, apiKey } = this.#sources;
    if (envToken !== undefined && envToken !== '') {
      if (!isExpired(envToken)) return (this.#current = envToken);
      if (apiKey === undefined) {
        throw new AuthError('the token in NOTARIZE_TOKEN has expired', {
          hint: 'get a new one with `notarize login`, or set NOTARIZE_API_KEY',
        });
      }
    } else {
      const stored = store.getToken(baseUrl);
      if (stored !== undefined && !isExpired(stored)) return (this.#current = stored);
      if (apiKey === undefined) {
        throw new AuthError(
          stored === undefined ? `not logged in to ${baseUrl}` : `the stored token for ${baseUrl} has expired`,
          {
            hint: 'run `notarize login`, or set NOTARIZE_API_KEY (or NOTARIZE_TOKEN)',
          },
        );
      }
    }
    return this.#loginWithKey('no usable token');
  }

  async renew(): Promise<string | undefined> {
    if (this.#renewed || this.#sources.apiKey === undefined) return undefined;
    this.#renewed = true;
    return this.#loginWithKey('the service answered 401');
  }

  async #loginWithKey(reason: string): Promise<string> {
    const { apiKey, store, baseUrl } = this.#sources;
    if (apiKey === undefined || this.#client === undefined) throw new AuthError('no credentials');
    this.#sources.onLogin?.(reason);
    const token = await this.#client.login(apiKey);
    store.setToken(baseUrl, token);
    return (this.#current = token);
  }
}

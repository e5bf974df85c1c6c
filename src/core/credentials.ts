/**
 * Where the bearer token comes from, in order: NOTARIZE_TOKEN, the token
 * stored for this service, or a login on the fly with NOTARIZE_API_KEY.
 * An expired token is never sent.
 */
import type { ApiClient, Credentials } from '../api/client.js';
import { AuthError, InvalidAnswerError, ProtocolError, ServiceRefusedError, UnreadableAnswerError } from '../errors.js';
import type { Store } from '../store/store.js';
import { cleanSecret, isSendableToken, sendableToken } from './secrets.js';
import { isExpired } from './token.js';

export interface CredentialSources {
  baseUrl: string;
  store: Store;
  /** NOTARIZE_TOKEN, if set, through cleanSecret. */
  envToken: string | undefined;
  /** NOTARIZE_API_KEY, if set, through cleanSecret. */
  apiKey: string | undefined;
  /** Told when a login happens on the fly (for --verbose). */
  onLogin?: (reason: string) => void;
  /** Told every token about to be used, so output can be scrubbed of it (IO.addSecret). */
  onToken?: (token: string) => void;
}

/** The Credentials the ApiClient uses; see the module comment. */
export class TokenCredentials implements Credentials {
  readonly #sources: CredentialSources;
  #client: ApiClient | undefined;
  #current: string | undefined;
  /** A login in progress: concurrent callers (a batch's lanes) share it rather than each logging in. */
  #loggingIn: Promise<string> | undefined;
  /** The one re-login after a 401, shared by every caller that meets a 401. */
  #renewal: Promise<string> | undefined;
  /** Set when logging in again cannot help: the key was refused, or its tokens arrive expired. */
  #renewed = false;

  constructor(sources: CredentialSources) {
    this.#sources = sources;
  }

  /** The client to log in with (set once the client exists: they refer to each other). */
  attach(client: ApiClient): void {
    this.#client = client;
  }

  async token(): Promise<string> {
    const token = await this.#usable();
    this.#sources.onToken?.(token);
    return token;
  }

  async #usable(): Promise<string> {
    if (this.#current !== undefined && !isExpired(this.#current)) return this.#current;
    const { envToken, store, baseUrl, apiKey } = this.#sources;
    if (envToken !== undefined && envToken !== '') {
      // Refused before anything is sent: undici would throw on the header,
      // and that must never look like a network failure worth retrying.
      sendableToken(envToken, 'NOTARIZE_TOKEN', 'set it to the token alone (a JWT: letters, digits, -, _ and dots)');
      if (!isExpired(envToken)) return (this.#current = envToken);
      if (apiKey === undefined) {
        throw new AuthError('the token in NOTARIZE_TOKEN has expired', {
          hint: 'get a new one with `notarize login`, or set NOTARIZE_API_KEY',
        });
      }
    } else {
      const stored = cleanSecret(store.getToken(baseUrl));
      // A damaged stored token is replaced by a login when a key is at hand.
      if (stored !== undefined && apiKey === undefined) {
        sendableToken(stored, `the store (credentials.json, for ${baseUrl})`, 'log in again with `notarize login`');
      }
      if (stored !== undefined && isSendableToken(stored) && !isExpired(stored)) return (this.#current = stored);
      if (apiKey === undefined) {
        throw new AuthError(
          stored === undefined ? `not logged in to ${baseUrl}` : `the stored token for ${baseUrl} has expired`,
          {
            hint: 'run `notarize login`, or set NOTARIZE_API_KEY (or NOTARIZE_TOKEN)',
          },
        );
      }
    }
    this.#loggingIn ??= this.#loginWithKey('no usable token').finally(() => {
      this.#loggingIn = undefined;
    });
    return this.#loggingIn;
  }

  /**
   * After a 401: one new login for the whole run. Callers that meet a 401
   * later get the same fresh token (each retries once), never a second login.
   */
  async renew(): Promise<string | undefined> {
    if (this.#sources.apiKey === undefined) return undefined;
    if (this.#renewal === undefined) {
      if (this.#renewed) return undefined;
      this.#renewal = this.#loginWithKey('the service answered 401');
    }
    const token = await this.#renewal;
    this.#sources.onToken?.(token);
    return token;
  }

  async #loginWithKey(reason: string): Promise<string> {
    const { apiKey, store, baseUrl } = this.#sources;
    if (apiKey === undefined || this.#client === undefined) throw new AuthError('no credentials');
    this.#sources.onLogin?.(reason);
    let token: string;
    try {
      token = await this.#client.login(apiKey);
    } catch (error) {
      // The key itself was refused: logging in again with it cannot help, so
      // the 401 that the caller sees must not lead to a renew().
      if (error instanceof AuthError) this.#renewed = true;
      // A malformed login answer surfaces inside the request step, which keeps
      // any odd-shaped object it gets as a session; this one is not a session.
      // (Nor, when it is not JSON at all, an unread answer of the request step.)
      if (error instanceof InvalidAnswerError || error instanceof UnreadableAnswerError) {
        throw new ProtocolError(error.message, { ...(error.hint ? { hint: error.hint } : {}), cause: error });
      }
      // Any other refusal of the login is a credentials problem, and must not
      // pass for the request's own answer (a 409 there means "already registered").
      if (error instanceof ServiceRefusedError) {
        this.#renewed = true;
        throw new AuthError(`logging in with NOTARIZE_API_KEY failed: ${error.message}`, {
          status: error.status,
          hint: 'check NOTARIZE_API_KEY, or log in with `notarize login`',
          cause: error,
        });
      }
      throw error;
    }
    if (isExpired(token)) {
      // Sending it would only earn a 401; a clock far off is the usual cause.
      this.#renewed = true;
      throw new AuthError(`the service at ${baseUrl} issued a token that has already expired`, {
        hint: "check this machine's clock (the token's exp is in the past or within 30 s)",
      });
    }
    await store.setToken(baseUrl, token);
    return (this.#current = token);
  }
}

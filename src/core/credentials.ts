/**
 * The one owner of the bearer token's lifecycle. A token comes, in order,
 * from NOTARIZE_TOKEN, the token stored for this service, or a login on the
 * fly with NOTARIZE_API_KEY; an expired token is never sent. After a 401 to
 * a request, the key logs in once more for the whole run and the request is
 * sent again, once.
 *
 * A 401 to the login itself is told from a 401 to the request by where it
 * happens: the token is fetched before the request is sent, outside the
 * part that answers a 401 with a renewal, so a refused key is reported as it
 * is and never tried a second time. The login goes over the wire through
 * the `login` function it is given (api/client.ts logIn), not through an
 * ApiClient: the client asks this object for tokens, and this object holds
 * no reference back to the client.
 */
import type { Authorizer, TokenReplaced } from '../api/client.js';
import { ofTheCall, OUTAGE_HOLD_MS } from '../api/retry.js';
import {
  AuthError,
  HeldBackError,
  InvalidAnswerError,
  NotarizeError,
  ownCopy,
  ProtocolError,
  ServiceRefusedError,
  UnreadableAnswerError,
  UsageError,
} from '../errors.js';
import type { Store } from '../store/store.js';
import { cleanSecret, isSendableToken, keyDigest, keyTrace, sendableToken } from '../secrets.js';
import { expiryOf, hasExpired, isExpired } from './token.js';

export interface CredentialSources {
  baseUrl: string;
  store: Store;
  /** NOTARIZE_TOKEN, if set, through cleanSecret. */
  envToken: string | undefined;
  /** NOTARIZE_API_KEY, if set, through cleanSecret. */
  apiKey: string | undefined;
  /** Exchanges an API key for a token with the service (api/client.ts logIn). */
  login: (apiKey: string) => Promise<string>;
  /** Told when a login happens on the fly (for --verbose). */
  onLogin?: (reason: string) => void;
  /** Told every token about to be used, so output can be scrubbed of it (IO.addSecret). */
  onToken?: (token: string) => void;
  /** The clock that ends how long a failed login is kept (tests). */
  now?: () => number;
}

/**
 * How the error of a refused key begins (the service refused the login with
 * NOTARIZE_API_KEY): the GitHub Action reads it in a result's error to tell
 * a refused `api-key` input from any other failure of exit 3.
 */
export const KEY_REFUSED = 'logging in with NOTARIZE_API_KEY failed';

/** The start of the hint of a login answered 404 or 405 (loginRefusedHint). */
export const NO_LOGIN_THERE = 'no login at that address';

/**
 * What to check when the service refused a login: `keyHint` (the key), or,
 * for a 404 or 405, the base URL first. Read as "no login at that address"
 * (an assumption: the service documents none of its statuses), the usual
 * mistake being a base URL that already ends in /api, to which notarize
 * adds /api/v2/ again.
 */
export function loginRefusedHint(status: number | undefined, keyHint: string): string {
  if (status !== 404 && status !== 405) return keyHint;
  return (
    `${NO_LOGIN_THERE}: check the base URL (--base-url, NOTARIZE_BASE_URL or the stored setting), ` +
    `the service's address without /api/v2/, which notarize adds; else ${keyHint}`
  );
}

/**
 * The failure of the login that was to replace a token a call met with a
 * 401 (`refused`), as that call's (#renew gives each caller its own copy):
 * marked so that what is said of the call is that it was not taken (r112:
 * "the service may have completed it" of a forfait answered 401, from the
 * login's 5xx); unless an attempt of the call before the 401 may have been
 * processed (r118: a metadata upload whose answer was lost, then retried).
 */
function ofRefusedCall(renewal: unknown, refused: AuthError): unknown {
  if (!(renewal instanceof NotarizeError)) return renewal;
  // It stands for the call now: what its own retries marked is the login's, not the call's.
  renewal.earlierAttemptMaybeProcessed = refused.earlierAttemptMaybeProcessed;
  if (!refused.earlierAttemptMaybeProcessed) renewal.tokenRefusedFirst = true;
  return renewal;
}

/** A token that expired while its call waited to be sent again: replaced (authorize), never sent. */
class ExpiredWhileWaiting extends AuthError {}

/** How many tokens one call may see expire while it waits to be sent again before it gives up (exit 3). */
const MAX_EXPIRED_PER_CALL = 3;

/** The Authorizer the ApiClient uses; see the module comment. */
export class TokenCredentials implements Authorizer {
  readonly #sources: CredentialSources;
  /** The token in use and its `exp`, read once: every request of a batch asks whether it has expired. */
  #current: { token: string; exp: number | undefined } | undefined;
  /** A login in progress: concurrent callers (a batch's lanes) share it rather than each logging in. */
  #loggingIn: Promise<string> | undefined;
  /** The last login's failure, given to callers instead of logging in again (see #loginWithKey). */
  #loginFailed: { error: unknown; until: number } | undefined;
  /** The one re-login after a 401, shared by every caller that meets a 401. */
  #renewal: Promise<string> | undefined;
  /**
   * Set when logging in again cannot help: the key was refused, or its
   * tokens arrive expired. A request that another caller's token met with a
   * 401 then fails with that 401 rather than try the key once more.
   */
  #loginCannotHelp = false;

  readonly #now: () => number;

  constructor(sources: CredentialSources) {
    this.#sources = sources;
    this.#now = sources.now ?? Date.now;
  }

  /**
   * Calls `send` with a usable token; when `send` fails with a 401, renews the
   * token once for the run (an API key is at hand) and calls it once more.
   * A failure to get a token, a refused login included, is thrown as it is,
   * without a call to `send`.
   */
  async authorize<T>(send: (token: string, replaced?: TokenReplaced) => Promise<T>): Promise<T> {
    let token = await this.token();
    let replaced: TokenReplaced | undefined;
    let renewed = false;
    let expired = 0;
    // Whether an attempt before a 401 may have been processed (its answer lost): then so may the call,
    // whatever the attempts sent with the renewed token say (r119: custody metadata "could not be sent").
    let processedMaybe = false;
    for (;;) {
      try {
        return await send(token, replaced);
      } catch (caught) {
        // As api/retry.ts judges a call of which an attempt before the last may have been processed.
        const error: unknown = processedMaybe ? ofTheCall(caught, true, true) : caught;
        // Expired while the call waited to be sent again: a token usable now (a login with the key;
        // without one, the error that says the token has expired). A few times at most: tokens that
        // live less than the call's waits would otherwise be replaced for as long as the service fails.
        if (error instanceof ExpiredWhileWaiting && expired++ < MAX_EXPIRED_PER_CALL) {
          token = await this.token();
          replaced = 'expired';
          continue;
        }
        if (!(error instanceof AuthError) || error.status !== 401) throw error;
        if (renewed) {
          // A token the key was given this very moment, refused too: logging in again cannot help.
          error.hint =
            'the service refused a token it had just given for the API key: logging in again cannot help; ' +
            "check that the key's account may do this";
          throw error;
        }
        renewed = true;
        processedMaybe = error.earlierAttemptMaybeProcessed;
        const fresh = await this.#renew().catch((renewal: unknown) => {
          // The key refused before it is sent (a control character, api/client.ts): this call went out
          // and was answered 401, so that is the failure (exit 3), not the key's exit 2, whose
          // "nothing was sent" is untrue here (r87).
          if (!(renewal instanceof UsageError) || renewal.code !== 'api_key_invalid')
            throw ofRefusedCall(renewal, error);
          error.hint = `the token was refused, and the API key could not log in again (it holds a control character): ${renewal.hint}`;
          throw error;
        });
        if (fresh === undefined) {
          // NOTARIZE_TOKEN is sent before any stored token: `notarize login` would change nothing.
          if (token === this.#sources.envToken) {
            error.hint =
              'the token in NOTARIZE_TOKEN was refused: unset it (a stored token or the API key is then used), or set a valid one';
          }
          throw error;
        }
        token = fresh;
        replaced = 'renewed';
      }
    }
  }

  /** See Authorizer.checkUnexpired: the token of a call retried past its exp is never sent. */
  checkUnexpired(token: string): void {
    const exp = this.#current?.token === token ? this.#current.exp : expiryOf(token);
    if (!hasExpired(exp)) return;
    throw new ExpiredWhileWaiting('the token expired while a call waited to be sent again, more than once', {
      hint: "the service's tokens live less than this call's waits to be sent again (Retry-After): run the command again later",
    });
  }

  /** A token usable now, logging in with the API key if need be; throws AuthError when there is none. */
  async token(): Promise<string> {
    const token = await this.#usable();
    this.#sources.onToken?.(token);
    return token;
  }

  async #usable(): Promise<string> {
    if (this.#current !== undefined && !hasExpired(this.#current.exp)) return this.#current.token;
    const { envToken, store, baseUrl, apiKey } = this.#sources;
    if (envToken !== undefined && envToken !== '') {
      // Refused before anything is sent: undici would throw on the header,
      // and that must never look like a network failure worth retrying.
      sendableToken(envToken, 'NOTARIZE_TOKEN', 'set it to the token alone (a JWT: letters, digits, -, _ and dots)');
      if (!isExpired(envToken)) return this.#use(envToken);
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
      // With a key in the environment, only a token of that very key: one another key logged in for
      // (an earlier step, another account) would register on that account.
      const ofThisKey = apiKey === undefined || store.getTokenKey(baseUrl) === keyDigest(apiKey);
      if (stored !== undefined && ofThisKey && isSendableToken(stored) && !isExpired(stored)) return this.#use(stored);
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
    // Each caller gets its own copy of a failure: a document's flow adds to its hint.
    return this.#loggingIn.catch((error: unknown) => {
      throw ownCopy(error);
    });
  }

  /**
   * After a 401: one new login for the whole run, or undefined when none can
   * help. Callers that meet a 401 later get the same fresh token (each
   * retries once), never a second login.
   */
  async #renew(): Promise<string | undefined> {
    if (this.#sources.apiKey === undefined) return undefined;
    if (this.#renewal === undefined) {
      if (this.#loginCannotHelp) return undefined;
      const renewal = this.#loginWithKey('the service answered 401');
      this.#renewal = renewal;
      // One that failed for a reason a later login may not meet is tried
      // again by a later 401 (after the failure's hold, see #loginWithKey).
      renewal.catch(() => {
        if (!this.#loginCannotHelp && this.#renewal === renewal) this.#renewal = undefined;
      });
    }
    // Its failure is every such caller's, each with its own copy (see #usable).
    const renewal = this.#renewal;
    const token = await renewal.catch((error: unknown) => {
      throw ownCopy(error);
    });
    // A run longer than a token's life: the renewal's token has expired since, so log in again
    // (#logIn refuses a token that arrives expired, which ends this).
    if (isExpired(token)) {
      if (this.#renewal === renewal) this.#renewal = undefined;
      return this.#renew();
    }
    this.#sources.onToken?.(token);
    return token;
  }

  #use(token: string): string {
    this.#current = { token, exp: expiryOf(token) };
    return token;
  }

  /**
   * Logs in with the key, unless the last login failed and that failure is
   * still kept: the login is the same for every document and has had its
   * retries, so trying it again per document would send a refused key once
   * more each time, or wait for a failing service once more each time. A
   * failure is kept for the run when the key cannot help, for
   * OUTAGE_HOLD_MS otherwise (a run reading its list from a pipe may last
   * hours); a login held back by the run's outage is the outage's to end.
   */
  async #loginWithKey(reason: string): Promise<string> {
    const kept = this.#loginFailed;
    if (kept !== undefined && (this.#loginCannotHelp || this.#now() < kept.until)) throw ownCopy(kept.error);
    try {
      return await this.#logIn(reason);
    } catch (error) {
      if (!(error instanceof HeldBackError)) this.#loginFailed = { error, until: this.#now() + OUTAGE_HOLD_MS };
      throw error;
    }
  }

  async #logIn(reason: string): Promise<string> {
    const { apiKey, store, baseUrl, login } = this.#sources;
    if (apiKey === undefined) throw new AuthError('no credentials');
    this.#sources.onLogin?.(reason);
    let token: string;
    try {
      token = await login(apiKey);
    } catch (error) {
      // Credentials were refused, the key's or a proxy's (407), neither of which changes during the run:
      // logging in again cannot help.
      if (error instanceof AuthError) this.#loginCannotHelp = true;
      // A malformed login answer surfaces inside the request step, which keeps
      // any odd-shaped object it gets as a session; this one is not a session.
      // (Nor, when it is not JSON at all, an unread answer of the request step.)
      if (error instanceof InvalidAnswerError || error instanceof UnreadableAnswerError) {
        throw new ProtocolError(error.message, { ...(error.hint ? { hint: error.hint } : {}), cause: error });
      }
      // Any other refusal of the login is a credentials problem, and must not
      // pass for the request's own answer (a 409 there means "already registered").
      // A 401 or 403 names the key too: "log in again, or set NOTARIZE_API_KEY"
      // says nothing to someone whose NOTARIZE_API_KEY is what was refused.
      // (Not a 407: the proxy refused, and its error names the variable to fix.)
      if (error instanceof ServiceRefusedError || (error instanceof AuthError && error.status !== 407)) {
        this.#loginCannotHelp = true;
        throw new AuthError(`${KEY_REFUSED}: ${error.message}`, {
          ...(error.status === undefined ? {} : { status: error.status }),
          hint: loginRefusedHint(error.status, 'check NOTARIZE_API_KEY, or log in with `notarize login`'),
          cause: error,
        });
      }
      throw error;
    }
    if (isExpired(token)) {
      // Sending it would only earn a 401; a clock far off is the usual cause.
      this.#loginCannotHelp = true;
      throw new AuthError(`the service at ${baseUrl} issued a token that has already expired`, {
        hint: "check this machine's clock (the token's exp is in the past or within 30 s)",
      });
    }
    await store.setToken(baseUrl, token, keyTrace(apiKey));
    return this.#use(token);
  }
}

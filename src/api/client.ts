/**
 * The notarization service's operations, one method each, over the
 * HttpTransport choke point. Answers are validated with the zod schemas and
 * returned with the exact text received, which is what gets stored and
 * forwarded: a parsed copy is never re-serialised.
 *
 * Tokens are not this module's business: an authenticated request is handed
 * to an Authorizer (core/credentials.ts), which owns where a token comes
 * from, logging in on the fly and what a 401 means. The Authorizer logs in
 * with `logIn` over the same transport, never through an ApiClient, so
 * neither holds a reference to the other.
 */
import type { z } from 'zod';
import { characterWhere } from '../characters.js';
import { InvalidAnswerError, UnreadableAnswerError, UsageError } from '../errors.js';
import { hasKeyTwice } from '../exact-json.js';
import type { HttpRequest, HttpTransport } from './http.js';
import { withRetries, type CallOptions, type RetryMode, type RetryPolicy } from './retry.js';
import { describeZodError } from '../validation.js';
import {
  fileMetadataAnswerSchema,
  loginResponseSchema,
  notarizationRecordSchema,
  subscriptionSessionSchema,
  type FileMetadata,
  type NotarizationRecord,
  type RegistrationRequest,
  type SubscriptionSession,
} from './schemas.js';

/** A validated answer with the exact text the service sent. */
export interface Answer<T> {
  value: T;
  raw: string;
}

/**
 * Why `authorize` calls `send` again: the token expired while the call
 * waited to be sent again (the call goes on, its retries as they were), or
 * the service answered 401 and a new login was made (a new call, with its
 * own retries, as the run's one re-login allows).
 */
export type TokenReplaced = 'expired' | 'renewed';

/** What gives an authenticated request its bearer token: see the module comment. */
export interface Authorizer {
  /**
   * Calls `send` with a usable token and returns what it returns; after a 401
   * from `send`, at most once more with a renewed token. Throws AuthError
   * when no token can be had.
   */
  authorize<T>(send: (token: string, replaced?: TokenReplaced) => Promise<T>): Promise<T>;
  /**
   * Throws the AuthError `authorize` answers as it does a 401 (a renewal, or
   * the error itself) when `token` has expired since it was handed out: a
   * call that waited to be sent again (Retry-After, its slot) past the
   * token's exp must not send it.
   */
  checkUnexpired?(token: string): void;
}

/**
 * Exchanges an API key for a token (`POST /api/v2/auth/login`), with the
 * retries of a safe request. The key is never logged.
 */
export async function logIn(transport: HttpTransport, retry: RetryPolicy, apiKey: string): Promise<string> {
  checkKeySendable(apiKey);
  const answer = await withRetries(
    async () => {
      const { text } = await transport.send({
        method: 'POST',
        path: '/api/v2/auth/login',
        body: JSON.stringify({ apiKey }),
      });
      return parseAnswer(text, loginResponseSchema, 'login answer');
    },
    'safe',
    retry,
    { route: 'login' },
  );
  return answer.value.token;
}

/**
 * Throws UsageError (exit 2, nothing sent) for a key holding a control
 * character: a NUL piped in with it, an escape pasted at the prompt. The
 * service refused such a key (exit 3, "not valid"), where the fault was
 * local (r86). Never quotes the key, only where the character is.
 */
function checkKeySendable(apiKey: string): void {
  const match = /\p{Cc}/u.exec(apiKey);
  if (match === null) return;
  throw new UsageError(`the API key holds a control character (${characterWhere(apiKey, match)}); nothing was sent`, {
    code: 'api_key_invalid',
    hint: 'check what sets it (NOTARIZE_API_KEY, what is piped into --api-key-stdin): a key has no control character',
  });
}

/**
 * Parses and validates an answer body. Throws UnreadableAnswerError for
 * non-JSON and InvalidAnswerError (with the raw text) for JSON of the wrong
 * shape.
 */
export function parseAnswer<S extends z.ZodType>(raw: string, schema: S, what: string): Answer<z.infer<S>> {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    // Never quoted: a body that is not JSON may be anything, a token included. Carried, for a
    // completion's answer may be its record all the same (NaN in a number): kept in the private store.
    const page = /^\s*</.test(raw);
    const looks = page ? 'it looks like an HTML page' : `${Buffer.byteLength(raw)} bytes`;
    throw new UnreadableAnswerError(`the ${what} is not JSON (${looks})`, {
      body: raw,
      // A page is someone else's answer (a proxy, a maintenance page, another site); other text
      // that is not JSON is most often an answer cut short on its way.
      hint: page
        ? 'the service may be down or behind a proxy; check the base URL'
        : 'the answer may have been cut short on its way (a proxy, a dropped connection); if it keeps coming, check the base URL',
    });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    throw new InvalidAnswerError(
      `the ${what} does not match the documented shape: ${describeZodError(parsed.error)}`,
      raw,
      json,
    );
  }
  return { value: parsed.data, raw };
}

/**
 * The answer to forfait: a record of the documented shape, and with no key
 * twice in one object. Two `hash` keys would make the ledger's record say one
 * hash to notarize (JSON.parse keeps the last) and another to any reader that
 * keeps the first: set aside as any other record not of the documented shape.
 */
export function parseRecordAnswer(raw: string): Answer<NotarizationRecord> {
  const what = 'answer to the completion (forfait)';
  const answer = parseAnswer(raw, notarizationRecordSchema, what);
  if (hasKeyTwice(raw)) {
    throw new InvalidAnswerError(
      `the ${what} has a key twice in one object, which JSON readers take differently`,
      raw,
      JSON.parse(raw),
    );
  }
  return answer;
}

/** Calls the service; see the module comment. Knows nothing of the store, output or token lifecycle. */
export class ApiClient {
  readonly transport: HttpTransport;
  readonly #retry: RetryPolicy;
  readonly #authorizer: Authorizer;

  constructor(transport: HttpTransport, retry: RetryPolicy, authorizer: Authorizer) {
    this.transport = transport;
    this.#retry = retry;
    this.#authorizer = authorizer;
  }

  /**
   * Whether anything of the run left for the service (a login, a root asked about, a request step,
   * a completion, answered or not): from then on exit 2 ("nothing was sent") would lie. The requests
   * the transport handed to the network (HttpTransport.dispatched), not the steps a flow announced: a
   * step is said before its token is read, which a damaged credentials file stops with nothing sent.
   */
  get anythingSent(): boolean {
    return this.transport.dispatched > 0;
  }

  /**
   * From now on, at most `limit` of the run's calls at the service at once,
   * its logins included (`register -j`): the retry policy's slots, which the
   * context gives every run's client and its logins.
   */
  limitRequests(limit: number): void {
    if (this.#retry.slots === undefined) throw new Error("this client's retry policy has no request slots");
    this.#retry.slots.limit(limit);
  }

  /** `logIn` with this client's transport and retries (`notarize login`). */
  login(apiKey: string): Promise<string> {
    return logIn(this.transport, this.#retry, apiKey);
  }

  /**
   * The request step: returns the subscription session to keep and send to
   * forfait. `onSent` as for completeRegistration.
   */
  requestRegistration(body: RegistrationRequest, onSent?: () => void): Promise<Answer<SubscriptionSession>> {
    // The slash before `?` is part of the documented path.
    return this.#authed(
      { method: 'POST', path: '/api/v2/registration/?subscription=true', body: JSON.stringify(body) },
      { route: 'request', mode: 'safe', ...(onSent && { onSent }) },
      (text) => parseAnswer(text, subscriptionSessionSchema, 'answer to the registration request'),
    );
  }

  /**
   * Forfait: completes the registration of `hash` with `sessionJson`, sent
   * exactly as given. Retried only when the service provably did not process
   * it, so a notarization is never completed twice by this client. `onSent`
   * is called as an attempt goes out (not while it waits for its slot); what
   * it throws keeps that attempt from going out. `onRetryWait` is called
   * when an attempt failed (not processed: only such are retried) and the
   * call waits to send the next.
   */
  completeRegistration(
    hash: string,
    sessionJson: string,
    onSent?: () => void,
    onRetryWait?: () => void,
  ): Promise<Answer<NotarizationRecord>> {
    return this.#authed(
      { method: 'POST', path: `/api/v2/registration/${hash}/forfait`, body: sessionJson },
      {
        route: 'forfait',
        mode: 'unprocessed-only',
        finishing: true,
        ...(onSent && { onSent }),
        ...(onRetryWait && { onRetryWait }),
      },
      (text) => parseRecordAnswer(text),
    );
  }

  /**
   * Custody only: sends the file's metadata (`PUT /api/v2/file/{hash}`). Its
   * failure fails nothing (the registration stands), so it is `optional`
   * for the run's outage (api/retry.ts).
   */
  async putFileMetadata(metadata: FileMetadata): Promise<void> {
    await this.#authed(
      { method: 'PUT', path: `/api/v2/file/${metadata.hash}`, body: JSON.stringify(metadata) },
      { route: 'file', mode: 'safe', optional: true, finishing: true },
      // A 2xx that is no JSON object (a proxy's or a maintenance page) says nothing was stored: exit 5.
      (text) => {
        parseAnswer(text, fileMetadataAnswerSchema, 'answer to the file metadata');
      },
    );
  }

  /** The user's active subscription session. */
  activeSubscription(): Promise<Answer<SubscriptionSession>> {
    return this.#authed(
      { method: 'GET', path: '/api/v2/payment/subscription/active' },
      { route: 'active', mode: 'safe' },
      (text) => parseAnswer(text, subscriptionSessionSchema, 'active subscription'),
    );
  }

  /**
   * Sends an authenticated request, with retries, under the token the
   * Authorizer gives, and reads its answer with `read`: inside the retried
   * call, so that an answer that cannot be read counts against the service
   * in the run's outage (read errors are never retried).
   */
  #authed<T>(
    req: HttpRequest,
    { mode, ...call }: CallOptions & { route: string; mode: RetryMode },
    read: (text: string) => T,
  ): Promise<T> {
    // Attempts sent so far: a token replaced because it expired while the call waited (authorize
    // sends again) starts no new budget of retries, which would let a call go on for ever; the
    // resend after a 401's re-login is a new call, with its own, as it always was.
    let sent = 0;
    return this.#authorizer.authorize((token, replaced) => {
      if (replaced !== 'expired') sent = 0;
      return withRetries(
        async () => {
          this.#authorizer.checkUnexpired?.(token);
          sent++;
          return read((await this.transport.send({ ...req, token })).text);
        },
        mode,
        { ...this.#retry, retries: Math.max(0, this.#retry.retries - sent) },
        call,
      );
    });
  }
}

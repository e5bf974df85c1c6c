/**
 * The notarization service's operations, one method each, over the
 * HttpTransport choke point. Answers are validated with the zod schemas and
 * returned with the exact text received, which is what gets stored and
 * forwarded: a parsed copy is never re-serialised.
 */
import type { z } from 'zod';
import { AuthError, InvalidAnswerError, UnreadableAnswerError } from '../errors.js';
import type { HttpRequest, HttpTransport } from './http.js';
import { withRetries, type RetryMode, type RetryPolicy } from './retry.js';
import { describeZodError } from '../validation.js';
import {
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

/** Where the client gets its bearer token. */
export interface Credentials {
  /** A token usable now; throws AuthError when there is none. */
  token(): Promise<string>;
  /** After a 401: a fresh token if one can be had (an API key is at hand), else undefined. Called once. */
  renew(): Promise<string | undefined>;
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
    // Never quoted: a body that is not JSON may be anything, a token included.
    const looks = /^\s*</.test(raw) ? 'it looks like an HTML page' : `${Buffer.byteLength(raw)} bytes`;
    throw new UnreadableAnswerError(`the ${what} is not JSON (${looks})`, {
      hint: 'the service may be down or behind a proxy; check the base URL',
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

/** Calls the service; see the module comment. Knows nothing of the store or output. */
export class ApiClient {
  readonly transport: HttpTransport;
  readonly #retry: RetryPolicy;
  readonly #credentials: Credentials;

  constructor(transport: HttpTransport, retry: RetryPolicy, credentials: Credentials) {
    this.transport = transport;
    this.#retry = retry;
    this.#credentials = credentials;
  }

  /** Exchanges an API key for a token (`POST /api/v2/auth/login`). The key is never logged. */
  async login(apiKey: string): Promise<string> {
    const answer = await withRetries(
      () => this.transport.send({ method: 'POST', path: '/api/v2/auth/login', body: JSON.stringify({ apiKey }) }),
      'safe',
      this.#retry,
    );
    return parseAnswer(answer.text, loginResponseSchema, 'login answer').value.token;
  }

  /** The request step: returns the subscription session to keep and send to forfait. */
  async requestRegistration(body: RegistrationRequest): Promise<Answer<SubscriptionSession>> {
    // The slash before `?` is part of the documented path.
    const text = await this.#authed(
      { method: 'POST', path: '/api/v2/registration/?subscription=true', body: JSON.stringify(body) },
      'safe',
    );
    return parseAnswer(text, subscriptionSessionSchema, 'answer to the registration request');
  }

  /**
   * Forfait: completes the registration of `hash` with `sessionJson`, sent
   * exactly as given. Retried only when the service provably did not process
   * it, so a notarization is never completed twice by this client.
   */
  async completeRegistration(hash: string, sessionJson: string): Promise<Answer<NotarizationRecord>> {
    const text = await this.#authed(
      { method: 'POST', path: `/api/v2/registration/${hash}/forfait`, body: sessionJson },
      'unprocessed-only',
    );
    return parseAnswer(text, notarizationRecordSchema, 'answer to the completion (forfait)');
  }

  /** Custody only: sends the file's metadata (`PUT /api/v2/file/{hash}`). */
  async putFileMetadata(metadata: FileMetadata): Promise<void> {
    await this.#authed(
      { method: 'PUT', path: `/api/v2/file/${metadata.hash}`, body: JSON.stringify(metadata) },
      'safe',
    );
  }

  /** The user's active subscription session. */
  async activeSubscription(): Promise<Answer<SubscriptionSession>> {
    const text = await this.#authed({ method: 'GET', path: '/api/v2/payment/subscription/active' }, 'safe');
    return parseAnswer(text, subscriptionSessionSchema, 'active subscription');
  }

  /** Sends an authenticated request; on a 401, renews the token once and tries once more. */
  async #authed(req: HttpRequest, mode: RetryMode): Promise<string> {
    const attempt = (token: string) => withRetries(() => this.transport.send({ ...req, token }), mode, this.#retry);
    try {
      return (await attempt(await this.#credentials.token())).text;
    } catch (error) {
      if (!(error instanceof AuthError) || error.status !== 401) throw error;
      const fresh = await this.#credentials.renew();
      if (fresh === undefined) throw error;
      return (await attempt(fresh)).text;
    }
  }
}

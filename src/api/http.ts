/**
 * The single HTTP choke point: every byte notarize sends to the service goes
 * through `HttpTransport.send`. It sets the base URL, user agent, bearer
 * token and timeout; always consumes the body (bounded in size); maps
 * statuses and network failures to error classes; and logs requests with
 * secrets left out (bodies and headers are never logged).
 */
import { isUtf8 } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import {
  brotliDecompressSync,
  gunzipSync,
  inflateRawSync,
  inflateSync,
  type BrotliOptions,
  type ZlibOptions,
} from 'node:zlib';
import type { Dispatcher } from './undici.js';
import {
  AuthError,
  ProtocolError,
  ServiceRefusedError,
  TransientError,
  nothingSent,
  UnreadableAnswerError,
  UsageError,
} from '../errors.js';
import { isSendableToken, replaceSecrets, secretParts } from '../secrets.js';
import { readBoundedBytes } from '../read-bounded.js';
import { FD_SHORTAGE_REMEDY, isFdShortage } from '../fd-shortage.js';
import { withoutByteOrderMark } from '../exact-json.js';

/** Answers larger than this are cut off: no documented answer comes near it. */
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

export interface TransportOptions {
  baseUrl: string;
  timeoutMs: number;
  userAgent: string;
  dispatcher: Dispatcher;
  /**
   * The variable naming the proxy the dispatcher goes through (`HTTPS_PROXY`...),
   * when it goes through one: a proxy's own failures name it.
   */
  proxyVariable?: string;
  /** Receives one line per request (method, URL, status, time); never secrets. */
  log?: (line: string) => void;
  /** Receives what the user must be told of an answer taken all the same (bytes not UTF-8). */
  warn?: (line: string) => void;
}

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PUT';
  /** Path and query below the base URL, starting with `/api/v2/`. */
  path: string;
  body?: string;
  token?: string;
}

export interface HttpAnswer {
  status: number;
  /** The body exactly as received (UTF-8). */
  text: string;
}

/** Network errors that prove the request never reached the service. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  // No socket could be made (ulimit -n): nothing went out.
  'EMFILE',
  'ENFILE',
]);

/** Sends requests to one service; see the module comment for what it guarantees. */
export class HttpTransport {
  readonly options: TransportOptions;

  constructor(options: TransportOptions) {
    this.options = options;
  }

  /** The absolute URL of a path on this service. */
  url(path: string): string {
    return `${this.options.baseUrl}${path}`;
  }

  /**
   * How many requests this transport handed to the network (login included),
   * answered or not: 0 means nothing of the run left the machine, which only
   * exit 2 may say. A request whose connection never opened (refused, no
   * such host, no socket: NOT_SENT_CODES, which the retry policy already
   * trusts to resend a paid call) does not count, nor does one refused
   * locally (exit 2); any other failure counts, so the count errs towards
   * "sent".
   */
  get dispatched(): number {
    return this.#dispatched;
  }
  #dispatched = 0;

  /**
   * Sends one request and returns the 2xx answer. Throws AuthError (401/403,
   * and 407 from a proxy),
   * TransientError (network, timeout, 429, 5xx), ServiceRefusedError (other
   * 4xx) or ProtocolError (unexpected status, oversized answer).
   */
  async send(req: HttpRequest): Promise<HttpAnswer> {
    const { path } = req;
    assertSafePath(path);
    const url = this.url(path);
    const started = performance.now();
    const headers: Record<string, string> = {
      'user-agent': this.options.userAgent,
      accept: 'application/json',
      // No Accept-Encoding would leave the service free to compress (RFC 9110 section 12.5.3); an
      // answer compressed all the same is decoded (readAnswerBody), never dropped: a record is paid for.
      'accept-encoding': 'identity',
    };
    if (req.body !== undefined) headers['content-type'] = 'application/json';
    if (req.token !== undefined) {
      // Credentials check where a token comes from; this is the last line:
      // a token undici would refuse is an auth problem, not a network one.
      if (!isSendableToken(req.token)) {
        throw new AuthError('the bearer token holds characters an HTTP header cannot carry; nothing was sent', {
          hint: 'log in again with `notarize login` (or check NOTARIZE_TOKEN)',
        });
      }
      headers.authorization = `Bearer ${req.token}`;
    }
    const elapsed = () => `${Math.round(performance.now() - started)} ms`;
    const timeout = patientTimeout(this.options.timeoutMs);
    try {
      return await this.#exchange(req, url, headers, timeout.signal, elapsed);
    } finally {
      timeout.clear();
    }
  }

  /** One request and its answer, read (see send); `signal` ends it at the timeout. */
  async #exchange(
    req: HttpRequest,
    url: string,
    headers: Record<string, string>,
    signal: AbortSignal,
    elapsed: () => string,
  ): Promise<HttpAnswer> {
    const { method } = req;
    let answer: Dispatcher.ResponseData;
    try {
      const target = new URL(url);
      this.#dispatched += 1;
      answer = await this.options.dispatcher.request({
        origin: target.origin,
        path: `${target.pathname}${target.search}`,
        method,
        headers,
        body: req.body,
        // undici's own timers are off: the signal bounds the whole exchange (see patientTimeout).
        headersTimeout: 0,
        bodyTimeout: 0,
        signal,
      });
    } catch (error) {
      this.options.log?.(`${method} ${url} -> failed after ${elapsed()}`);
      const failure = networkError(method, url, error, this.options.proxyVariable);
      // Known not to have left (no connection, or no memory for the parser: exit 2): not counted.
      if (nothingSent(failure) || NOT_SENT_CODES.has(errorCode(error))) this.#dispatched -= 1;
      throw failure;
    }
    const status = answer.statusCode;
    const ok = status >= 200 && status < 300;
    let text: string;
    try {
      const body = await readAnswerBody(answer, `${method} ${url} answered ${status}`);
      // JSON is UTF-8 (RFC 8259), but a record is the service's only copy: an answer with other bytes
      // is read all the same, each such byte as U+FFFD, and said, since what is kept and printed of it
      // is then not byte for byte what came.
      if (ok && !isUtf8(body)) {
        this.options.warn?.(
          `${method} ${url} answered ${status} with bytes that are not UTF-8, as JSON must be: read as U+FFFD, ` +
            'so what is kept of this answer (a session sent back, a record) differs from what the service sent there',
        );
      }
      text = body.toString('utf8');
      // A byte order mark before the JSON, which RFC 8259 section 8.1 lets a reader ignore: a record
      // behind one is still the record, not "not JSON".
      text = withoutByteOrderMark(text);
    } catch (error) {
      this.options.log?.(`${method} ${url} -> ${status}, body unreadable after ${elapsed()}`);
      // Once a 2xx status has arrived the service has said yes: a body that
      // then stalls or cannot be decoded is an answer we could not read, not
      // a network failure worth a blind retry (which could register twice).
      if (ok) throw error;
      // A refusal's status says enough on its own.
      text = '';
    }
    const retryAfter = headerValue(answer.headers['retry-after']);
    this.options.log?.(`${method} ${url} -> ${status} in ${elapsed()}`);
    if (ok) return { status, text };
    if (status === 407) throw proxyAuthError(`${method} ${url} answered 407`, this.options.proxyVariable);
    throw statusError(method, url, status, text, retryAfter, secretsOf(req));
  }
}

/**
 * An abort signal at `ms`, as AbortSignal.timeout gives, but patient with
 * what has come meanwhile: when its timer fires, the abort waits for the I/O
 * the event loop has ready (setImmediate runs after it). A process stopped
 * past the timeout (SIGSTOP, a paused container or VM) finds, once it runs
 * again, both its timers due and the answer that arrived meanwhile in its
 * socket, and timers run first: a forfait answered while the process was
 * stopped was given up as unanswered, its record lost (a re-run got 409).
 * undici's own header and body timers would do the same, so they are off.
 */
function patientTimeout(ms: number): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  let immediate: NodeJS.Immediate | undefined;
  const timer = setTimeout(() => {
    immediate = setImmediate(() =>
      controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    );
  }, ms);
  return {
    signal: controller.signal,
    clear() {
      clearTimeout(timer);
      if (immediate !== undefined) clearImmediate(immediate);
    },
  };
}

/** The content codings an answer may come in although notarize asks for none (RFC 9110 section 8.4.1), and their decoders. */
const DECODERS: Record<string, (bytes: Buffer, options: ZlibOptions & BrotliOptions) => Buffer> = {
  gzip: gunzipSync,
  'x-gzip': gunzipSync,
  // "deflate" is the zlib format (RFC 9110 section 8.4.1.2); some servers send the raw one.
  deflate: (bytes, options) => {
    try {
      return inflateSync(bytes, options);
    } catch (error) {
      if (error instanceof RangeError) throw error;
      return inflateRawSync(bytes, options);
    }
  },
  br: brotliDecompressSync,
};

/**
 * The body of an answer, bounded in size, its content codings undone.
 * Throws UnreadableAnswerError when it stalls past the timeout, breaks off,
 * is too large (before or after decoding), or comes in a coding notarize
 * cannot undo or that does not decode.
 */
async function readAnswerBody(answer: Dispatcher.ResponseData, what: string): Promise<Buffer> {
  const header = answer.headers['content-encoding'];
  // Codings in the order they were applied, over one header or several (RFC 9110 section 8.4).
  const codings = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
  // Read whole even when it cannot be undone: a forfait's may be its record, kept aside as it came.
  const body = await readBoundedBody(answer, what);
  const unknown = codings.find((coding) => !Object.hasOwn(DECODERS, coding));
  if (unknown !== undefined) {
    throw new UnreadableAnswerError(
      `${what}, but its body is encoded as '${unknown.slice(0, 40)}', which notarize cannot decode`,
      { body },
    );
  }
  let decoded = body;
  for (const coding of codings.reverse()) {
    try {
      decoded = DECODERS[coding]!(decoded, { maxOutputLength: MAX_ANSWER_BYTES });
    } catch (error) {
      const tooLarge = error instanceof RangeError;
      throw new UnreadableAnswerError(
        tooLarge
          ? `${what}, but its body decoded ('${coding}') is larger than ${MAX_ANSWER_BYTES / 1024 / 1024} MiB`
          : `${what}, but its body does not decode as '${coding}' says it is`,
        { cause: error, body },
      );
    }
  }
  return decoded;
}

/** The bytes of an answer's body as they came, bounded in size (see readAnswerBody). */
async function readBoundedBody(answer: Dispatcher.ResponseData, what: string): Promise<Buffer> {
  let bounded: Buffer | undefined;
  try {
    bounded = await readBoundedBytes(answer.body, MAX_ANSWER_BYTES);
  } catch (error) {
    const code = errorCode(error);
    const stalled = code.endsWith('_TIMEOUT') || (error as Error).name === 'TimeoutError';
    const reason = stalled ? 'it stalled' : 'it broke off';
    throw new UnreadableAnswerError(`${what}, but its body could not be read (${reason})`, { cause: error });
  }
  if (bounded === undefined) {
    discard(answer);
    throw new UnreadableAnswerError(
      `${what}, but its body is larger than ${MAX_ANSWER_BYTES / 1024 / 1024} MiB; it was cut off`,
    );
  }
  return bounded;
}

/** An error's `code` as a string (undici's are strings; some errors carry numbers). */
function errorCode(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' || typeof code === 'number' ? String(code) : '';
}

/** Stops receiving a body notarize will not read; the abort this causes is expected, not an error. */
function discard(answer: Dispatcher.ResponseData): void {
  answer.body.on('error', () => {});
  answer.body.destroy();
}

/**
 * Paths are built from validated hashes (core/hash.ts, the store's schemas);
 * this is the last check before a URL exists: only the documented path
 * characters, and no `.` or `..` segment that could lead elsewhere.
 */
function assertSafePath(path: string): void {
  const [pathname = ''] = path.split('?');
  const safe =
    /^\/api\/v2\/[A-Za-z0-9._~/-]*(\?[A-Za-z0-9=&._~-]*)?$/.test(path) &&
    !pathname.split('/').some((segment) => segment === '.' || segment === '..');
  if (!safe) {
    throw new UsageError('refusing to send a request to an unexpected path', {
      code: 'unsafe_path',
      hint: 'a hash must be 64 hex digits',
    });
  }
}

/** The secrets a request carries (its token, an API key in its body), to keep out of error messages: longest first. */
function secretsOf(req: HttpRequest): string[] {
  const secrets = req.token === undefined ? [] : [req.token];
  try {
    const body = req.body === undefined ? undefined : (JSON.parse(req.body) as { apiKey?: unknown });
    if (typeof body?.apiKey === 'string') secrets.push(body.apiKey);
  } catch {
    // Not JSON: no API key in it.
  }
  return secrets
    .filter((secret) => secret.length >= 8)
    .flatMap(secretParts)
    .sort((a, b) => b.length - a.length);
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Seconds from a Retry-After header (delta-seconds or HTTP date), if valid. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  // Only an HTTP date (e.g. "Wed, 21 Oct 2015 07:28:00 GMT", or tolerated,
  // an ISO 8601 date-time): Date.parse alone
  // would read "1.5" or "-5" as dates, and a bogus Retry-After must not mark
  // a failure as "not processed" (that allows retrying forfait).
  const httpDate = /^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/;
  const isoDate = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
  if (!httpDate.test(trimmed) && !isoDate.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

/** What V8 says when a WebAssembly instance cannot get its memory (WebAssembly.Instance(), .instantiate()). */
const WASM_OUT_OF_MEMORY = /^WebAssembly\.\w+\(\): Out of memory/;

/** What undici says when a proxy answers a CONNECT with anything but 200 (the tunnel never opened). */
const TUNNEL_REFUSED = /^Proxy response \((\d{3})\) !== 200 when HTTP Tunneling$/;

function networkError(method: string, url: string, error: unknown, proxyVariable: string | undefined): Error {
  const code = errorCode(error);
  if (code === 'UND_ERR_INVALID_ARG' || (error as { name?: string }).name === 'InvalidArgumentError') {
    // undici refused an argument (a header value, an option) before sending
    // anything: a local error, never a network failure to retry. Its own
    // message is left out: it may quote a header.
    return new UsageError(
      `${method} ${url} was not sent: the request was refused locally (${code || 'invalid argument'})`,
      {
        code: 'invalid_request',
        hint: 'check NOTARIZE_TOKEN, the stored token and the settings; if they are fine, report this as a bug',
        cause: error,
      },
    );
  }
  if (WASM_OUT_OF_MEMORY.test((error as Error | undefined)?.message ?? '')) {
    // undici's HTTP parser (llhttp) is WebAssembly, whose memory V8 places in a reserved region of
    // about 10 GB of address space: under a lower `ulimit -v`, it is made on the first connection,
    // before anything is written, and fails. No retry brings the room ("try again later" lied).
    return new UsageError(`${method} ${url} was not sent: no memory for the HTTP parser (WebAssembly)`, {
      code: 'no_wasm_memory',
      hint:
        'a limit on virtual memory (ulimit -v) leaves it no room: lift the limit, ' +
        'or run with NODE_OPTIONS=--disable-wasm-trap-handler (the parser then needs no such room; Node itself still needs about 1.5 GB)',
      cause: error,
    });
  }
  const name = (error as { name?: string }).name ?? '';
  const tunnel = TUNNEL_REFUSED.exec((error as Error | undefined)?.message ?? '');
  // Checked first: undici reports it as an aborted request, which is no timeout.
  if (tunnel) return tunnelRefused(method, url, Number(tunnel[1]), proxyVariable, error);
  if (code === 'UND_ERR_PRX_CONN') return tunnelBrokenOff(method, url, proxyVariable, error);
  const certificate = certificateRefusal(error);
  if (certificate !== undefined) return certificateRefused(method, url, certificate, proxyVariable, error);
  if (code === NOT_TLS) return notTls(method, url, proxyVariable, error);
  const timedOut = name === 'TimeoutError' || code.endsWith('_TIMEOUT') || code === 'UND_ERR_ABORTED';
  const reason = timedOut ? 'timed out' : code || (error as Error).message;
  const through = proxyVariable === undefined ? '' : ` through the proxy in ${proxyVariable}`;
  return new TransientError(`${method} ${url} failed${through}: ${reason}`, {
    hint: isFdShortage(error)
      ? // No socket for want of a descriptor: "later" is no cure where the limit is the cause. Not
        // "nothing was sent": this may be a retry, whose call's first attempt went out (api/retry.ts).
        `no connection could be opened: ${FD_SHORTAGE_REMEDY}`
      : proxyVariable === undefined
        ? 'the service could not be reached; try again later'
        : `the service could not be reached through the proxy in ${proxyVariable}; check the proxy, or try again later`,
    notProcessed: NOT_SENT_CODES.has(code),
    cause: error,
  });
}

/**
 * The proxy would not open a tunnel to the service: the request never
 * reached it. A 407 wants credentials, which no retry brings; any other
 * status (403 by policy, 502 upstream unreachable) is reported as the
 * proxy's, and may be retried, since the service saw nothing.
 */
function tunnelRefused(
  method: string,
  url: string,
  status: number,
  proxyVariable: string | undefined,
  cause: unknown,
): Error {
  const host = new URL(url).host;
  const what = `the proxy in ${proxyVariable ?? 'the proxy variables'} answered ${status} to CONNECT ${host}`;
  if (status === 407) return proxyAuthError(what, proxyVariable, cause);
  return new TransientError(`${method} ${url} failed: ${what}`, {
    hint: `the proxy would not open a connection to ${host}; check the proxy, or NO_PROXY`,
    notProcessed: true,
    cause,
  });
}

/**
 * The proxy broke off the CONNECT before the tunnel opened (api/dispatcher.ts
 * ProxyTunnelError): the request never reached the service, and may be
 * retried; a proxy that never opens one fails every attempt the same way.
 */
function tunnelBrokenOff(method: string, url: string, proxyVariable: string | undefined, cause: unknown): Error {
  const { host, hostname } = new URL(url);
  return new TransientError(
    `${method} ${url} failed: the proxy in ${proxyVariable ?? 'the proxy variables'} closed the connection to CONNECT ${host} before the tunnel opened`,
    {
      hint: `check that it is an HTTP proxy that opens tunnels (CONNECT), or set NO_PROXY for ${hostname}`,
      notProcessed: true,
      cause,
    },
  );
}

/**
 * Node's codes for a TLS certificate it would not trust (OpenSSL's
 * verification results, and a certificate for another name).
 */
const CERTIFICATE_CODES = new Set([
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REJECTED',
  'CERT_REVOKED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'HOSTNAME_MISMATCH',
  'INVALID_CA',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
]);

/**
 * The code of the certificate refusal `error` is, if it is one: Node's own,
 * or the one undici wraps as UND_ERR_PRX_TLS (an https proxy's certificate
 * for another name).
 */
function certificateRefusal(error: unknown): string | undefined {
  const code = errorCode(error);
  if (CERTIFICATE_CODES.has(code)) return code;
  if (code !== 'UND_ERR_PRX_TLS') return undefined;
  const cause = errorCode((error as { cause?: unknown }).cause);
  return CERTIFICATE_CODES.has(cause) ? cause : undefined;
}

/**
 * A certificate Node would not trust: the handshake stopped before any
 * request was sent. Still exit 4 (a server's expired certificate gets
 * renewed), but with what to do rather than "try again later": a CI
 * runner's TLS-inspecting proxy is the usual cause, and its CA goes in
 * NODE_EXTRA_CA_CERTS. Whose certificate it was is named when known: through
 * a proxy it may be the proxy's or the service's (undici does not say).
 */
function certificateRefused(
  method: string,
  url: string,
  code: string,
  proxyVariable: string | undefined,
  cause: unknown,
): Error {
  const { host } = new URL(url);
  const whose =
    proxyVariable === undefined
      ? `the certificate of ${host}`
      : `a certificate (${host}'s or the proxy's in ${proxyVariable})`;
  return new TransientError(
    `${method} ${url} failed: ${whose} was not trusted (${code}), so the request was not sent`,
    {
      hint: "if your network inspects TLS, give its CA certificate (a PEM file) in NODE_EXTRA_CA_CERTS; an expired certificate or one for another name is the server's to fix",
      notProcessed: true,
      cause,
    },
  );
}

/** OpenSSL's code for a first answer that is no TLS record: a server speaking plain HTTP, usually. */
const NOT_TLS = 'ERR_SSL_WRONG_VERSION_NUMBER';

/**
 * The server answered the TLS handshake with something else than TLS: no
 * request was sent. Exit 4 as a certificate refusal is (a network fault,
 * nothing lost; a mix-up of ports or a middlebox may pass), but said as what
 * it usually is, an https:// base URL for a server of plain http, rather
 * than "try again later", which no retry would make true.
 */
function notTls(method: string, url: string, proxyVariable: string | undefined, cause: unknown): Error {
  const { host } = new URL(url);
  const who = proxyVariable === undefined ? host : `${host} or the proxy in ${proxyVariable}`;
  return new TransientError(`${method} ${url} failed: ${who} did not answer in TLS, so the request was not sent`, {
    hint:
      proxyVariable === undefined
        ? 'check the base URL: a server of plain http is http://, not https:// (plain http only on this machine)'
        : `check the base URL, and the scheme of the proxy in ${proxyVariable} (http:// for a plain one)`,
    notProcessed: true,
    cause,
  });
}

/**
 * A 407, to CONNECT or to a plain request: a proxy wants credentials. Exit 3
 * and never retried (the same request would get the same answer), naming the
 * variable to fix and never quoting it (it may already hold a password).
 */
function proxyAuthError(what: string, proxyVariable: string | undefined, cause?: unknown): AuthError {
  const message = `${what} (proxy authentication required)`;
  if (proxyVariable === undefined) {
    return new AuthError(`${message}, though no proxy is set for this service`, {
      status: 407,
      hint: 'a proxy between here and the service wants credentials; set HTTPS_PROXY to it as http://user:password@host:port',
      cause,
    });
  }
  return new AuthError(message, {
    status: 407,
    hint: `give the proxy's user and password in ${proxyVariable} (http://user:password@host:port, URL-encoded); if it has them, the proxy refused them`,
    cause,
  });
}

/**
 * The service's own message from a JSON error body, if it sent one, without
 * the secrets of the request: redacted in the body as sent and in the
 * message parsed from it (JSON may spell a secret in more ways than one,
 * `\u0022` for a quote, `\/` for a slash), and only then cut to length, at a
 * word's end, so that no cut leaves a secret's first characters behind.
 */
function serviceMessage(text: string, secrets: string[]): string | undefined {
  try {
    const body = JSON.parse(replaceSecrets(text, secrets)) as Record<string, unknown>;
    const message = body.message ?? body.error;
    return typeof message === 'string' ? cutAtWord(replaceSecrets(message, secrets), 300) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * At most `max` characters of `text`, never part of a word: a secret this
 * request did not carry (the API key, once logged in) is scrubbed later, by
 * its whole text, which a cut through it would leave only the start of.
 */
function cutAtWord(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  if (/\s/.test(text[max]!)) return `${cut.trimEnd()}…`;
  // The word cut through goes; of a word longer than any key, its last KEY_ROOM characters.
  const word = /\S*$/.exec(cut)![0].length;
  return `${cut.slice(0, max - Math.min(word, KEY_ROOM)).trimEnd()}…`;
}

/** Characters of a cut word dropped at most: a key straddling the cut is at most this long. */
const KEY_ROOM = 256;

function statusError(
  method: string,
  url: string,
  status: number,
  text: string,
  retryAfter: string | undefined,
  secrets: string[],
): Error {
  const said = serviceMessage(text, secrets);
  const what = `${method} ${url} answered ${status}${said ? `: ${said}` : ''}`;
  if (status === 401) {
    return new AuthError(what, {
      status,
      hint:
        'log in again with `notarize login` (or set NOTARIZE_API_KEY); ' +
        "if a fresh login is refused the same way, the key's account may not do this",
    });
  }
  if (status === 403) {
    // Assumed (service-api.md does not say): the account may not do this; a new token of the same key would not change it.
    return new AuthError(what, {
      status,
      hint: "the service refuses this account this call (403): check the rights of the key's account, or log in with another key (`notarize login`)",
    });
  }
  if (status === 408 || status === 429 || status >= 500) {
    const retryAfterSeconds = parseRetryAfter(retryAfter);
    return new TransientError(what, {
      status,
      retryAfterSeconds,
      // A 429, or a 503 that says when to come back, means the service
      // turned the request away without processing it; a 408, that it did
      // not receive the whole request in time (RFC 9110 15.5.9): not a
      // refusal of the request, which was refused for good (custody
      // metadata dropped as one the service would never take).
      notProcessed: status === 408 || status === 429 || (status === 503 && retryAfterSeconds !== undefined),
      hint: 'the service is unavailable or busy; try again later',
    });
  }
  if (status >= 400) return new ServiceRefusedError(status, what, said === undefined ? {} : { serviceMessage: said });
  // A redirect is never followed: a request re-sent elsewhere could be paid there, and its answer trusted.
  const redirect = status >= 300 && status < 400;
  return new ProtocolError(`${what} (an unexpected status)`, {
    ...(redirect
      ? {
          hint: 'notarize follows no redirect: check the base URL (--base-url, NOTARIZE_BASE_URL or the stored setting)',
        }
      : {}),
  });
}

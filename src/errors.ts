/**
 * Error classes and the exit-code table. Code anywhere below the CLI throws
 * one of these; only `main()` in cli.ts turns them into an exit code and a
 * one-line message. The one other exit is a signal's (interrupt.ts): it
 * ends the process at once, with 130 or 143.
 */

/** The documented exit codes (README, `notarize --help`). */
export const EXIT = {
  ok: 0,
  /**
   * The service refused the operation (a 4xx other than 401/403/409); or
   * something was sent but the run could not end well locally (a receipt or
   * record not written, an item of a batch that failed locally); or an
   * unexpected error. Not only a refusal: any run that failed otherwise.
   */
  failed: 1,
  /** Usage or local input error; nothing was sent. */
  usage: 2,
  /** No usable credentials, or the service answered 401/403. */
  auth: 3,
  /** Network failure, timeout, 5xx, 408, 429: safe to retry later; pending sessions are kept. */
  transient: 4,
  /** The service answered 2xx with something that cannot be read or does not match the documented shape. */
  protocol: 5,
  /** verify/show/receipt: a document is not verified (unknown, modified, its receipt invalid), or not in the local ledger. */
  notNotarized: 6,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/**
 * One line per exit code, shown in `notarize --help`; README's "Exit codes"
 * table says the same (a test compares them).
 */
export const EXIT_CODE_HELP = `Exit codes:
  0  success, including "already registered" (a 409 from the service is read as that: an assumption, its status codes are undocumented)
  1  the service refused the operation (4xx other than 401/403/409); or something was sent but did not end well locally (a receipt or record not written, a batch item that failed locally); or an unexpected error
  2  usage or local input error (bad option, unreadable file, invalid hash, unsafe base URL, receipt problem found up front); nothing was sent
  3  authentication: no usable credentials (a login refused, whatever its status; to a 404 or 405 the hint names the base URL), or the service answered 401/403
  4  transient: network failure, timeout, 5xx, 408 or 429; safe to retry later, pending sessions are kept
  5  the service answered 2xx with something unreadable or not of the documented shape (a completion's record of another hash, whose status is not \`registered\`, or nested deeper than a receipt can carry), or an unexpected status (a redirect: notarize follows none); the session is kept (\`notarize complete <hash>\` sends it again; to an unread request step, no session came: the hint says how to complete it)
  6  verify/show/receipt: a document is not verified (unknown, modified, or its receipt invalid), or not in the local ledger`;

export interface ErrorDetails {
  /** What the user can do about it, in one line. */
  hint?: string;
  cause?: unknown;
  /** An answer of the service the store could not keep (see UnsavedAnswer). */
  unsaved?: UnsavedAnswer;
}

/**
 * A record or session the service sent that the store could not save (a
 * full disk): the service sends it once, so wherever the error is shown the
 * answer is shown whole with it (its hint; a batch's item result and a
 * warning of its own, output/results.ts).
 */
export interface UnsavedAnswer {
  what: 'record' | 'session';
  /** As the service sent it. */
  text: string;
}

/** Base of every error notarize expects; carries a stable code, an exit code and a hint. */
export class NotarizeError extends Error {
  readonly code: string;
  readonly exitCode: ExitCode;
  /** Mutable so a caller higher up can add what the user should do next. */
  hint: string | undefined;
  readonly unsaved: UnsavedAnswer | undefined;
  /**
   * Set on the failure of the login that was to replace a token the service
   * refused (401) in the middle of a call (core/credentials.ts authorize):
   * the error is the login's, and the call it stopped was answered 401, so
   * not taken (an assumption: the service documents no status), and never
   * sent again. What it says of an answer or a status is the login's.
   */
  tokenRefusedFirst = false;
  /**
   * Set by api/retry.ts on a call's failure when an attempt before its last
   * may have been processed (its answer lost), whatever the last says: a
   * 401 then proves nothing of the call.
   */
  earlierAttemptMaybeProcessed = false;

  constructor(code: string, exitCode: ExitCode, message: string, details: ErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.code = code;
    this.exitCode = exitCode;
    this.hint = details.hint;
    this.unsaved = details.unsaved;
  }
}

/**
 * The system's code (ENOSPC, EMFILE...) of `error` or of an error it wraps,
 * a few causes deep (a StoreError keeps the system's as its cause), if
 * `wanted` takes it.
 */
export function errnoCodeIn(error: unknown, wanted: (code: string) => boolean): string | undefined {
  return errnoErrorIn(error, wanted)?.code;
}

/** The error of errnoCodeIn's code itself, with its `path` and `syscall`. */
export function errnoErrorIn(
  error: unknown,
  wanted: (code: string) => boolean,
): (NodeJS.ErrnoException & { code: string }) | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth++) {
    const errno = current as NodeJS.ErrnoException;
    if (typeof errno.code === 'string' && wanted(errno.code)) return errno as NodeJS.ErrnoException & { code: string };
    current = current.cause;
  }
  return undefined;
}

/**
 * A copy of `error` for one more caller. An error met once for many
 * documents (a run's failed login, an outage) is handed to each as its own:
 * a document's flow adds to its hint (`notarize complete <hash>`), which
 * must not show up in another document's result.
 */
export function ownCopy<T>(error: T): T {
  if (!(error instanceof Error)) return error;
  // A native error (as util.types.isNativeError sees it) of the same class, with the same own fields.
  const copy = Reflect.construct(Error, [], error.constructor) as T & Error;
  return Object.defineProperties(copy, Object.getOwnPropertyDescriptors(error));
}

/** The JSON form of an error: in a batch item's result, and on stderr with --json. */
export interface ErrorJson {
  code: string;
  exitCode: number;
  message: string;
  hint?: string;
}

/** The one way an error becomes JSON (`{ code, exitCode, message, hint? }`), wherever it is printed. */
export function errorJson(error: NotarizeError): ErrorJson {
  return {
    code: error.code,
    exitCode: error.exitCode,
    message: error.message,
    ...(error.hint ? { hint: error.hint } : {}),
  };
}

/** Bad command line or local input (file, hash, setting, store file). Exit 2. */
export class UsageError extends NotarizeError {
  constructor(message: string, details: ErrorDetails & { code?: string } = {}) {
    super(details.code ?? 'usage', EXIT.usage, message, details);
  }
}

/** No credentials, or the service said 401/403. Exit 3. */
export class AuthError extends NotarizeError {
  readonly status: number | undefined;
  constructor(message: string, details: ErrorDetails & { status?: number } = {}) {
    super('auth', EXIT.auth, message, details);
    this.status = details.status;
  }
}

/** The service refused the operation with a 4xx (other than auth). Exit 1. */
export class ServiceRefusedError extends NotarizeError {
  readonly status: number;
  /** The service's own `message` (or `error`) from its JSON error body, when it sent one. */
  readonly serviceMessage: string | undefined;
  constructor(status: number, message: string, details: ErrorDetails & { serviceMessage?: string } = {}) {
    super('refused', EXIT.failed, message, details);
    this.status = status;
    this.serviceMessage = details.serviceMessage;
  }
}

/** A failure worth retrying later: network, timeout, 5xx, 429. Exit 4. */
export class TransientError extends NotarizeError {
  readonly status: number | undefined;
  /** Seconds the service asked us to wait (Retry-After), when it said so. */
  readonly retryAfterSeconds: number | undefined;
  /**
   * True when the failure proves the service never processed the request:
   * of the whole call once it is thrown by api/retry.ts withRetries, which
   * clears it when an earlier attempt of the call may have been processed.
   */
  notProcessed: boolean;
  constructor(
    message: string,
    details: ErrorDetails & { status?: number; retryAfterSeconds?: number; notProcessed?: boolean } = {},
  ) {
    super('transient', EXIT.transient, message, details);
    this.status = details.status;
    this.retryAfterSeconds = details.retryAfterSeconds;
    this.notProcessed = details.notProcessed ?? false;
  }
}

/**
 * Not sent: the service failed earlier calls of this run, and none has
 * worked since (api/retry.ts, Outage). Transient, and provably not
 * processed, since it never left.
 */
export class HeldBackError extends TransientError {
  constructor(message: string, details: ErrorDetails = {}) {
    super(message, { ...details, notProcessed: true });
  }
}

/** The service answered, but not in the documented shape. Exit 5. */
export class ProtocolError extends NotarizeError {
  constructor(message: string, details: ErrorDetails = {}) {
    super('protocol', EXIT.protocol, message, details);
  }
}

/**
 * The service answered 2xx, but its body could not be read: it stalled,
 * was cut off, came in a coding notarize cannot undo, or is not JSON. The
 * service said yes to something, so this is never retried blindly: whoever
 * catches it decides what may be sent again. Exit 5.
 */
export class UnreadableAnswerError extends ProtocolError {
  /**
   * What came whole of the body, for a forfait's to be kept aside (core/notarize.ts keptAside):
   * its text when it is not JSON, or its bytes as they came when their coding could not be undone.
   */
  readonly body: string | Buffer | undefined;
  constructor(message: string, details: ErrorDetails & { body?: string | Buffer } = {}) {
    const { body, ...rest } = details;
    super(message, rest);
    this.body = body;
  }
}

/** A local store file cannot be read or parsed. Exit 2: the user must fix the file. */
export class StoreError extends UsageError {
  readonly file: string;
  constructor(file: string, message: string, details: ErrorDetails = {}) {
    super(message, { ...details, code: 'store' });
    this.file = file;
  }
}

/** A store file written by a newer notarize (a higher store version): not damaged, never moved aside or rewritten. */
export class NewerStoreFileError extends StoreError {}

/**
 * A 2xx answer whose body does not match the documented shape. Keeps the raw
 * text so a caller can still save what the service sent (a registration must
 * not be lost because one field was off). Exit 5.
 */
export class InvalidAnswerError extends ProtocolError {
  readonly raw: string;
  readonly json: unknown;
  constructor(message: string, raw: string, json: unknown, details: ErrorDetails = {}) {
    super(message, details);
    this.raw = raw;
    this.json = json;
  }
}

/** verify/show: a document is not in the ledger (or was modified). Exit 6. */
export class NotNotarizedError extends NotarizeError {
  constructor(message: string, details: ErrorDetails = {}) {
    super('not_notarized', EXIT.notNotarized, message, details);
  }
}

/**
 * A named input that cannot be processed (missing, unreadable, a special
 * file, a directory without --recursive). Keeps the path and the bare reason
 * apart, so `hash` can print them the way sha256sum does. Exit 2 when alone;
 * in a batch it fails its own item and the others go on.
 */
export class InputFileError extends UsageError {
  readonly path: string;
  readonly reason: string;
  constructor(path: string, reason: string, details: ErrorDetails & { code?: string; message?: string } = {}) {
    const { message, code, ...rest } = details;
    super(message ?? `cannot read '${path}': ${reason}`, { ...rest, code: code ?? 'unreadable_file' });
    this.path = path;
    this.reason = reason;
  }
}

/** Whether `error` says nothing was sent: a NotarizeError of exit 2 (EXIT.usage), as the exit codes promise. */
export function nothingSent(error: unknown): error is NotarizeError {
  return error instanceof NotarizeError && error.exitCode === EXIT.usage;
}

/**
 * An error that stops a run after something was sent: exit 2 would say
 * nothing was, so a usage error becomes 1, its hint kept, and its message
 * too, but for a closing "nothing was sent", which is no longer true: no
 * more was (an --aggregate refusal after a root was asked about said both).
 */
export function sentAlready(error: unknown): unknown {
  if (!nothingSent(error)) return error;
  const message = error.message.replace(/; nothing was sent$/, '; nothing more was sent');
  return new NotarizeError(error.code, EXIT.failed, message, {
    ...(error.hint === undefined ? {} : { hint: error.hint }),
    cause: error,
  });
}

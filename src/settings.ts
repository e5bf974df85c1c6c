/**
 * The declared settings and the one rule that resolves them:
 * command-line flag > environment variable > stored value > default.
 * An environment variable set to the empty string counts as unset
 * (`NOTARIZE_TIMEOUT= notarize ...` is how a shell unsets one for a command);
 * an empty flag is a value, and refused like any bad one.
 * `notarize config` reads and writes the stored values of the storable
 * settings only (`SETTINGS`); the others come from the environment alone.
 * Every environment variable notarize reads is declared in environment.ts.
 */
import { UsageError } from './errors.js';

export const DEFAULT_BASE_URL = 'https://app.dedit.io';

export type SettingKey = 'baseUrl' | 'timeout' | 'retries' | 'retryDelay';

/** Where a setting's value comes from. */
export type SettingSource = 'flag' | 'env' | 'store' | 'default';

/** A setting's value in effect and where it comes from (`config get`/`list` show both). */
export interface ResolvedSetting {
  value: string;
  source: SettingSource;
}

export interface SettingDefinition {
  key: SettingKey;
  description: string;
  env: string;
  default: string;
  /** Returns the normalised value, or throws UsageError naming the problem. */
  parse(value: string): string;
  /**
   * Whether it is one of the `notarize config` keys, with a stored value and
   * a global flag (`--base-url` for baseUrl); false for a setting read from
   * the environment only.
   */
  storable: boolean;
}

/**
 * A parse function for a whole number from `min` to `max`, written in plain
 * digits (no sign, fraction, exponent, hex or empty string, which Number()
 * would take as 0 or something else than the user meant).
 */
export function wholeNumber(name: string, min: number, max: number) {
  return (value: string): string => {
    const digits = value.trim();
    const n = /^\d{1,16}$/.test(digits) ? Number(digits) : Number.NaN;
    if (!(n >= min && n <= max)) {
      throw new UsageError(`invalid ${name}${quoted(value)}: expected a whole number from ${min} to ${max}`);
    }
    return String(n);
  };
}

/** " '<value>'" when the value fits on one short line, so a message stays one line. */
function quoted(value: string): string {
  return value.length <= 40 && !/\p{Cc}/u.test(value) ? ` '${value}'` : '';
}

/** Every setting, storable ones first, in the order `config list` shows them. */
export const ALL_SETTINGS: readonly SettingDefinition[] = [
  {
    key: 'baseUrl',
    description: 'base URL of the notarization service',
    env: 'NOTARIZE_BASE_URL',
    default: DEFAULT_BASE_URL,
    parse: parseBaseUrl,
    storable: true,
  },
  {
    key: 'timeout',
    description: 'milliseconds each request may take',
    env: 'NOTARIZE_TIMEOUT',
    default: '30000',
    // 0 ms would make every request time out at once, each failure then
    // "transient" and retried: a request needs at least 1 ms.
    parse: wholeNumber('timeout', 1, 3_600_000),
    storable: true,
  },
  {
    key: 'retries',
    description: 'how many times a retryable request is tried again',
    env: 'NOTARIZE_RETRIES',
    default: '3',
    parse: wholeNumber('retries', 0, 20),
    storable: true,
  },
  {
    // A knob for tests and impatient CI jobs, not worth a flag or a stored value.
    key: 'retryDelay',
    description: 'milliseconds before the first retry; doubles, with jitter',
    env: 'NOTARIZE_RETRY_DELAY_MS',
    default: '500',
    parse: wholeNumber('retry delay', 0, 60_000),
    storable: false,
  },
];

/** The longest wait between two tries of a call: a Retry-After asking for more ends its retries. */
export const LONGEST_RETRY_WAIT_MS = 30_000;

/**
 * What is retried, and what the client assumes to decide it (api/retry.ts
 * RetryMode, api/http.ts notProcessed): in `notarize --help` and in the help
 * of the commands that send forfait (register, complete), as README's
 * "Reliability" says it. The service documents no status codes.
 */
export const RETRY_HELP = `Retries: a call is tried again up to --retries times, with backoff. The service documents no
status codes, so what they say of a call is assumed: a 401 that the token was refused (renewed
once with the API key), a 403 that the account may not do this (exit 3, not retried). Every call but forfait (login, the
request step, custody metadata) is tried again after no answer, a 5xx, a 408 or a 429; forfait
(the paid step) only when it cannot have been processed: after a 408 or a 429, or a 503 with
Retry-After (all assumed to mean "not processed"), a connection that could not be opened, or a 401
(once, after a new login with the API key); never after another 5xx, a timeout or a
connection dropped once sent: the session is kept, and the next run (the same \`register\`,
or \`notarize complete <hash>\`) sends it again. That assumes the service completes a hash
once: a forfait for a hash it has is answered 409 (read as already registered), not paid
again; how it answers a repeated forfait is undocumented. A Retry-After longer than
${LONGEST_RETRY_WAIT_MS / 1000} s ends the retries (exit 4).`;

/** The `notarize config` keys: the settings with a stored value and a global flag. */
export const SETTINGS: readonly SettingDefinition[] = ALL_SETTINGS.filter((s) => s.storable);

/** The global flag that gives a storable setting: `--base-url` for baseUrl. */
function settingFlag(definition: SettingDefinition): string {
  return `--${definition.key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** What the resolver reads a setting from. */
export interface SettingInputs {
  /** The global options given on the command line, by setting key. */
  flags: Readonly<Partial<Record<SettingKey, string>>>;
  env: NodeJS.ProcessEnv;
  /**
   * The stored value of a storable setting, if any. Called only when no flag
   * or variable gives one, so that a run given everything opens no store.
   */
  stored: (key: SettingKey) => string | undefined;
}

/** Parses a setting's value; a refusal's hint says where the value came from, the user's next question. */
function parseFrom(definition: SettingDefinition, value: string, source: string): string {
  try {
    return definition.parse(value);
  } catch (error) {
    if (error instanceof UsageError) error.hint = error.hint ? `${source}; ${error.hint}` : source;
    throw error;
  }
}

function parseFlag(definition: SettingDefinition, value: string): string {
  return parseFrom(definition, value, `given with ${settingFlag(definition)}`);
}

/**
 * A setting's value by the precedence rule, and where it comes from.
 * Throws UsageError when the value in effect is invalid, naming the flag or
 * variable that gave it (the store names its file itself).
 */
export function resolveSetting(key: SettingKey, inputs: SettingInputs): ResolvedSetting {
  const definition = ALL_SETTINGS.find((s) => s.key === key)!;
  const flag = definition.storable ? inputs.flags[key] : undefined;
  if (flag !== undefined) return { value: parseFlag(definition, flag), source: 'flag' };
  const fromEnv = inputs.env[definition.env];
  if (fromEnv !== undefined && fromEnv !== '') {
    return { value: parseFrom(definition, fromEnv, `set by ${definition.env}`), source: 'env' };
  }
  // The store checks stored values with the same parse when it reads them.
  const stored = definition.storable ? inputs.stored(key) : undefined;
  if (stored !== undefined) return { value: definition.parse(stored), source: 'store' };
  return { value: definition.parse(definition.default), source: 'default' };
}

/**
 * Refuses a bad global flag up front, so that every command refuses it,
 * also those that would not use it, rather than one accepting it and
 * another refusing it.
 */
export function checkSettingFlags(flags: SettingInputs['flags']): void {
  for (const definition of SETTINGS) {
    const flag = flags[definition.key];
    if (flag !== undefined) parseFlag(definition, flag);
  }
}

/** Finds a `notarize config` setting by key; throws UsageError listing the known keys otherwise. */
export function settingDefinition(key: string): SettingDefinition {
  const found = SETTINGS.find((s) => s.key === key);
  if (!found) {
    throw new UsageError(`unknown setting '${key}'`, {
      hint: `known settings: ${SETTINGS.map((s) => s.key).join(', ')}`,
    });
  }
  return found;
}

/**
 * True for hosts whose traffic never leaves the machine: a literal loopback
 * address (127.0.0.0/8, ::1) or `localhost` itself, as the URL parser gives
 * them (lowercase, IPv4 in dotted decimal, IPv6 in brackets). Not
 * `*.localhost`: such a name goes to the system resolver like any other, and
 * a resolver (or a hosts file) may send it anywhere. Only these hosts may be
 * spoken to over plain http, and they are never reached through a proxy.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  return (
    host === 'localhost' ||
    host === '[::1]' ||
    host === '::1' ||
    /^127\.(25[0-5]|2[0-4]\d|1?\d?\d)\.(25[0-5]|2[0-4]\d|1?\d?\d)\.(25[0-5]|2[0-4]\d|1?\d?\d)$/.test(host)
  );
}

/**
 * A service's base URL as notarize takes one (parseBaseUrl below, after the URL
 * parser's normalisation) and as a receipt may name it
 * (receipt-format.ts): http(s), a host (and port) and a path of RFC 3986's
 * characters for them only (no credentials, query, fragment, space or
 * control character), so that every receipt a registration writes verifies.
 * contrib/verify-receipt.py's BASE_URL is the same pattern.
 */
export const BASE_URL_PATTERN = /^https?:\/\/[A-Za-z0-9._~!$&'()*+,;=:[\]-]+(\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?$/;

/**
 * Validates a base URL: http(s) only, and plain http only to a loopback
 * address, so credentials are never sent in clear over a network.
 * Returns it without a trailing slash.
 */
export function parseBaseUrl(value: string): string {
  // The URL parser drops spaces and control characters at either end, and
  // tabs and line breaks inside, without a word: a value it would so repair
  // is not what was meant. (Never echoed: a URL may carry a password.)
  if (/[\p{Cc}\p{Cf}\p{Z}]/u.test(value)) {
    throw new UsageError('invalid base URL: it holds a space, control or invisible format character', {
      code: 'unsafe_base_url',
      hint: 'give it as plain text, e.g. https://app.dedit.io',
    });
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError('invalid base URL: it is not a URL', {
      code: 'unsafe_base_url',
      hint: 'use e.g. https://app.dedit.io',
    });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    // Only the scheme: the rest may carry a password (ftp://user:password@host/).
    throw new UsageError(
      `invalid base URL: its scheme is ${url.protocol.slice(0, -1)}, and only http and https are supported`,
      {
        code: 'unsafe_base_url',
        hint: 'use e.g. https://app.dedit.io',
      },
    );
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    // Refused for every command, verify too, which sends nothing: a setting is one service's, whatever reads it.
    throw new UsageError(`invalid base URL: plain http to '${url.host}', which is not a loopback address`, {
      code: 'unsafe_base_url',
      hint: 'notarize sends its credentials to the service, never in clear: use https, or http only to a loopback address: 127.0.0.1 (127.0.0.0/8), [::1] or localhost itself',
    });
  }
  if (url.port === '0') {
    // No connection can be made to port 0: every call would fail as "try again later" (exit 4), and a
    // script that retries on 4 would retry for ever (r98).
    throw new UsageError(`invalid base URL for '${url.hostname}': port 0 cannot be connected to`, {
      code: 'unsafe_base_url',
      hint: "give the service's port (`notarize sandbox --port 0` prints the one it took)",
    });
  }
  if (url.username || url.password || url.search || url.hash) {
    // Name the host only: the rejected URL may carry a password.
    throw new UsageError(`invalid base URL for '${url.host}': no credentials, query or fragment allowed`, {
      code: 'unsafe_base_url',
    });
  }
  const normalised = url.toString().replace(/\/+$/, '');
  // Characters the URL parser keeps but RFC 3986 does not allow (`|` or `[` in a path, `{` in a host;
  // a `^`, which Node 20 keeps and Node 24 encodes): a receipt naming such a service would not verify,
  // so it is refused before anything is sent.
  if (!BASE_URL_PATTERN.test(normalised)) {
    throw new UsageError(`invalid base URL for '${url.host}': it holds a character a plain URL may not (RFC 3986)`, {
      code: 'unsafe_base_url',
      hint: "in a path, percent-encode it (e.g. '|' as %7C); or use the service's URL as its documentation gives it",
    });
  }
  return normalised;
}

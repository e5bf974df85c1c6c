/**
 * The declared list of settings. Each has one precedence rule:
 * command-line flag > environment variable > stored value > default.
 * `notarize config` reads and writes the stored values of these keys only.
 */
import { UsageError } from './errors.js';

export const DEFAULT_BASE_URL = 'https://app.dedit.io';

export interface SettingDefinition {
  key: SettingKey;
  description: string;
  env: string;
  default: string;
  /** Returns the normalised value, or throws UsageError naming the problem. */
  parse(value: string): string;
}

export type SettingKey = 'baseUrl' | 'timeout' | 'retries';

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

/** The settings notarize knows, in the order `config list` shows them. */
export const SETTINGS: readonly SettingDefinition[] = [
  {
    key: 'baseUrl',
    description: 'base URL of the notarization service',
    env: 'NOTARIZE_BASE_URL',
    default: DEFAULT_BASE_URL,
    parse: parseBaseUrl,
  },
  {
    key: 'timeout',
    description: 'milliseconds each request may take',
    env: 'NOTARIZE_TIMEOUT',
    default: '30000',
    // 0 ms would make every request time out at once, each failure then
    // "transient" and retried: a request needs at least 1 ms.
    parse: wholeNumber('timeout', 1, 3_600_000),
  },
  {
    key: 'retries',
    description: 'how many times a retryable request is tried again',
    env: 'NOTARIZE_RETRIES',
    default: '3',
    parse: wholeNumber('retries', 0, 20),
  },
];

/** Finds a setting by key; throws UsageError listing the known keys otherwise. */
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
 * Validates a base URL: http(s) only, and plain http only to a loopback
 * address, so credentials are never sent in clear over a network.
 * Returns it without a trailing slash.
 */
export function parseBaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`invalid base URL '${value}'`, {
      code: 'unsafe_base_url',
      hint: 'use e.g. https://app.dedit.io',
    });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new UsageError(`invalid base URL '${value}': only http and https are supported`, { code: 'unsafe_base_url' });
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw new UsageError(`refusing to send credentials over plain http to '${url.host}'`, {
      code: 'unsafe_base_url',
      hint: 'use https, or http only to a loopback address: 127.0.0.1 (127.0.0.0/8), [::1] or localhost itself',
    });
  }
  if (url.username || url.password || url.search || url.hash) {
    // Name the host only: the rejected URL may carry a password.
    throw new UsageError(`invalid base URL for '${url.host}': no credentials, query or fragment allowed`, {
      code: 'unsafe_base_url',
    });
  }
  return url.toString().replace(/\/+$/, '');
}

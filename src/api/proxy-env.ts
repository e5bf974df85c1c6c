/**
 * The proxy variables (HTTPS_PROXY, HTTP_PROXY, NO_PROXY), read from the
 * environment given, not process.env, so an in-process run sees the same as
 * a spawned one; the route they give is used by api/dispatcher.ts (see its
 * comment). No undici here: context.ts reads the proxy passwords, to keep
 * them out of output, without loading the HTTP stack.
 */
import { UsageError } from '../errors.js';
import { isLoopbackHost } from '../settings.js';

/** A proxy that requests to the service go through. */
export interface ProxyRoute {
  /** The environment variable it came from, for messages (`HTTPS_PROXY`, `http_proxy`...). */
  variable: string;
  url: URL;
}

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443 };

/** The first set (non-empty) variable of `names`, with its value. */
function firstSet(env: NodeJS.ProcessEnv, names: string[]): { name: string; value: string } | undefined {
  for (const name of names) {
    const value = env[name];
    if (value !== undefined && value !== '') return { name, value };
  }
  return undefined;
}

/**
 * Parses the value of a proxy variable. Throws UsageError naming the
 * variable, never quoting its value: it may hold the proxy's password.
 */
export function parseProxyUrl(variable: string, value: string): URL {
  const fail = (why: string) =>
    new UsageError(`${variable} is not a valid proxy URL (${why})`, {
      code: 'invalid_proxy',
      hint: `write it as http://host:port or http://user:password@host:port (its value is not shown here: it may hold a password)`,
    });
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw fail('it cannot be read as a URL');
  }
  // `proxy:3128` or `user:pw@proxy:3128` parse as URLs of scheme `proxy:` or
  // `user:`: the scheme is not named, as it may be a user name.
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw fail('it must start with http:// or https://');
  if (url.hostname === '') throw fail('it has no host');
  // undici takes none (its "invalid url" was "unexpected error", exit 1); a trailing '/' is no path.
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') throw fail('it has a path, query or fragment');
  // undici decodes these when it builds its agent, and a bad %-escape there
  // was "unexpected error: URI malformed", exit 1: refuse it here instead.
  for (const [part, text] of [
    ['user name', url.username],
    ['password', url.password],
  ] as const) {
    if (decoded(text) === undefined) throw fail(`its ${part} holds a %-escape that is not valid`);
  }
  return url;
}

/**
 * Whether NO_PROXY (or no_proxy) exempts `url`; the rules of undici's
 * EnvHttpProxyAgent, but a no_proxy with no entry is unset, as an empty proxy
 * variable is here (and for Go and Python): it hid NO_PROXY, and the run
 * went through the proxy its user had excluded. A name's final dot (a fully
 * qualified `host.example.`) is the same name, as curl takes it.
 */
export function exemptByNoProxy(env: NodeJS.ProcessEnv, url: URL): boolean {
  const entriesOf = (value: string | undefined) => (value ?? '').split(/[,\s]/).filter((entry) => entry !== '');
  // One with no entry at all (empty, or only spaces and commas) is unset.
  const value = ['no_proxy', 'NO_PROXY'].map((name) => env[name]).find((set) => entriesOf(set).length > 0) ?? '';
  const entries = entriesOf(value);
  if (entries.length === 0) return false;
  if (value === '*') return true;
  // `host` keeps an IPv6 address's brackets, which is how NO_PROXY writes it.
  const hostname = withoutFinalDot(url.host.replace(/:\d*$/, '').toLowerCase());
  const port = Number.parseInt(url.port, 10) || DEFAULT_PORTS[url.protocol] || 0;
  return entries.some((entry) => {
    const parsed = /^(.+):(\d+)$/.exec(entry);
    const entryHost = withoutFinalDot((parsed ? parsed[1]! : entry).replace(/^\*?\./, '').toLowerCase());
    const entryPort = parsed ? Number.parseInt(parsed[2]!, 10) : 0;
    if (entryPort !== 0 && entryPort !== port) return false;
    return hostname === entryHost || hostname.endsWith(`.${entryHost}`);
  });
}

function withoutFinalDot(hostname: string): string {
  return hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
}

/**
 * The proxy requests to `baseUrl` go through, or undefined for a direct
 * connection (see the module comment). Throws UsageError naming the variable
 * when the one that applies, or the other one of the pair, is malformed.
 */
export function proxyRoute(env: NodeJS.ProcessEnv, baseUrl: string): ProxyRoute | undefined {
  const target = new URL(baseUrl);
  if (isLoopbackHost(target.hostname)) return undefined;
  const http = firstSet(env, ['http_proxy', 'HTTP_PROXY']);
  const https = firstSet(env, ['https_proxy', 'HTTPS_PROXY']);
  // Both are checked, whichever applies: a malformed one is a mistake worth
  // hearing about before it bites a run against another service.
  const parsed = [http, https].map((set) => set && { variable: set.name, url: parseProxyUrl(set.name, set.value) });
  const [viaHttp, viaHttps] = parsed;
  const route = target.protocol === 'https:' ? (viaHttps ?? viaHttp) : viaHttp;
  if (route === undefined || exemptByNoProxy(env, target)) return undefined;
  return route;
}

/**
 * The proxy passwords in the proxy variables, raw and decoded, so output
 * can be scrubbed of them, each once, with the first variable that holds it
 * (named in the warning about one too short to scrub). A value is read as
 * proxyRoute reads it, and one without `://` that gives no password so
 * (`user:pw@host:port`, as curl takes it) as http:// too; one that cannot be
 * read either way is given whole when it has a `@`, as it may hold a
 * password in a form `new URL` cannot read.
 */
export function proxySecrets(env: NodeJS.ProcessEnv): { secret: string; name: string }[] {
  const secrets = new Map<string, string>();
  const add = (secret: string, name: string) => {
    if (!secrets.has(secret)) secrets.set(secret, name);
  };
  for (const variable of ['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY']) {
    const value = env[variable];
    if (value === undefined || value === '') continue;
    // As proxyRoute reads it first (`http:/u:pw@h` and `http:u:pw@h` are http://u:pw@h to a URL
    // parser), then as curl reads a value without a scheme.
    const readings = value.includes('://') ? [value] : [value, `http://${value}`];
    let read = false;
    for (const reading of readings) {
      let password: string;
      try {
        ({ password } = new URL(reading));
      } catch {
        continue;
      }
      read = true;
      if (password === '') continue;
      add(password, `the password in ${variable}`);
      add(decodedOrSame(password), `the password in ${variable}`);
      break;
    }
    if (!read && value.includes('@')) add(value, variable);
  }
  return [...secrets].map(([secret, name]) => ({ secret, name }));
}

function decodedOrSame(text: string): string {
  return decoded(text) ?? text;
}

/**
 * `text` %-decoded, or undefined when an escape in it is not valid. The
 * decoded text is returned, never only tried: the bundler takes
 * decodeURIComponent for a function without effects, and dropped a call
 * whose result went unused, the check with it (a proxy URL with a bad
 * escape in its path got through, then failed as "unexpected error").
 */
function decoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

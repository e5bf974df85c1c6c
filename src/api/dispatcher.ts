/**
 * The connection pool every request goes through (keep-alive connections),
 * and the one decision about proxies: a run talks to one service, so its
 * route is chosen once, here, from the base URL and the standard variables.
 *
 * - A loopback base URL (settings.ts `isLoopbackHost`) is always reached
 *   directly, whatever HTTPS_PROXY / HTTP_PROXY say: its traffic may be plain
 *   http (the API key and the bearer token in clear), and a proxy would carry
 *   it off the machine. No NO_PROXY entry is needed for that.
 * - Any other host goes through the proxy its scheme's variable names
 *   (lowercase before uppercase, and HTTPS_PROXY falling back to HTTP_PROXY,
 *   as undici's EnvHttpProxyAgent reads them), unless NO_PROXY matches it.
 *
 * The route is decided here rather than left to EnvHttpProxyAgent so that the
 * transport can name the variable whose proxy failed (a 407 names it), and a
 * malformed proxy URL is a usage error naming its variable, not undici's bare
 * "Invalid URL". The variables are read in api/proxy-env.ts.
 */
import { Agent, ProxyAgent, type Dispatcher } from './undici.js';
import { proxyRoute } from './proxy-env.js';

export { proxyRoute, type ProxyRoute } from './proxy-env.js';

/**
 * A dispatcher for requests to `baseUrl` in this environment (direct, or
 * through the proxy `proxyRoute` chooses). Without a base URL, a direct one.
 */
export function createDispatcher(env: NodeJS.ProcessEnv, baseUrl?: string): Dispatcher {
  const options = { keepAliveTimeout: 10_000, connections: 64 };
  const route = baseUrl === undefined ? undefined : proxyRoute(env, baseUrl);
  if (route === undefined) return new Agent(options);
  return new ProxyAgent({ ...options, uri: route.url.href });
}

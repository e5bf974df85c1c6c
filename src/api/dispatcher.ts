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
import { isIP } from 'node:net';
import { Agent, type Connector, Pool, ProxyAgent, type Dispatcher } from './undici.js';
import { proxyRoute } from './proxy-env.js';

export { proxyRoute, type ProxyRoute } from './proxy-env.js';

/**
 * The error of a CONNECT the proxy broke off before the tunnel opened (a
 * proxy that does not implement CONNECT, or drops the upstream). Its code is
 * undici 8's for the same failure (ProxyConnectionError).
 */
export class ProxyTunnelError extends Error {
  readonly code = 'UND_ERR_PRX_CONN';
}

/**
 * The Pool a ProxyAgent reaches its proxy with (undici's default), but a
 * CONNECT broken off by the proxy fails the request. undici 7 passes the
 * socket error on as it is, and its client takes UND_ERR_SOCKET for a
 * connection lost under a running request: the request stays queued and is
 * connected again at once, for ever, at full CPU, deaf to the request's
 * abort signal and timeouts (a reviewer's `register --timeout 2000` was
 * still spinning at 90 s; undici#3897, fixed in undici 8, which needs a newer
 * Node). Any other error (a refused connection, a timeout, an abort) fails
 * the request already and is passed on as it is.
 */
class TunnelPool extends Pool {
  override connect(options: Dispatcher.ConnectOptions): Promise<Dispatcher.ConnectData>;
  override connect(
    options: Dispatcher.ConnectOptions,
    callback: (err: Error | null, data: Dispatcher.ConnectData) => void,
  ): void;
  override connect(
    options: Dispatcher.ConnectOptions,
    callback?: (err: Error | null, data: Dispatcher.ConnectData) => void,
  ): Promise<Dispatcher.ConnectData> | void {
    // ProxyAgent opens its tunnels with the promise form; the callback form is passed on unchanged.
    if (callback !== undefined) return super.connect(options, callback);
    return super.connect(options).catch((error: unknown) => {
      const code = (error as { code?: unknown }).code;
      if (code !== 'UND_ERR_SOCKET' && code !== 'UND_ERR_INFO') throw error;
      throw new ProxyTunnelError('the proxy closed the connection before the tunnel opened', { cause: error });
    });
  }
}

/**
 * undici's connector to an https proxy, but never given the proxy's IP as
 * the TLS server name. ProxyAgent names the proxy's host as its CONNECT's
 * server name, and for a proxy given by IP (`HTTPS_PROXY=https://10.0.0.5:3129`)
 * Node then printed DEP0123 ("Setting the TLS ServerName to an IP address is
 * not permitted by RFC 6066") on every run. Without one, undici sends no SNI
 * for an IP (as for a service given by IP) and Node checks the certificate
 * against that IP all the same.
 */
function withoutIpServername(connect: Connector): Connector {
  return (options, callback) => {
    // An IPv6 proxy's host comes bracketed, as a URL writes it (`[::1]`).
    const address = typeof options.servername === 'string' ? options.servername.replace(/^\[(.*)\]$/, '$1') : '';
    const named = isIP(address) !== 0 ? { ...options, servername: undefined } : options;
    connect(named, callback);
  };
}

/**
 * A dispatcher for requests to `baseUrl` in this environment (direct, or
 * through the proxy `proxyRoute` chooses). Without a base URL, a direct one.
 * `timeoutMs` (--timeout) bounds making a connection (and opening a proxy's tunnel).
 */
export function createDispatcher(env: NodeJS.ProcessEnv, baseUrl?: string, timeoutMs?: number): Dispatcher {
  const options = { keepAliveTimeout: 10_000, connections: 64 };
  const route = baseUrl === undefined ? undefined : proxyRoute(env, baseUrl);
  // A connection (TCP, then TLS) is made outside the request too, deaf to its signal: bounded by
  // --timeout here, not by undici's fixed 10 s (a server that never answered the TLS hello held a
  // '--timeout 1000' run 10.5 s per attempt, and a handshake slower than 10 s failed whatever --timeout said).
  if (route === undefined)
    return new Agent(timeoutMs === undefined ? options : { ...options, connect: { timeout: timeoutMs } });
  // The tunnel is opened outside the request (its CONNECT, then TLS through it), deaf to the request's
  // own timeouts and signal: bounded by --timeout here, not by undici's 300 s and 10 s defaults (a
  // reviewer's proxy that never answered the CONNECT held a '--timeout 3000' run for 301 s per attempt).
  const bound = timeoutMs === undefined ? {} : { headersTimeout: timeoutMs, bodyTimeout: timeoutMs };
  const tls = timeoutMs === undefined ? {} : { timeout: timeoutMs };
  return new ProxyAgent({
    ...options,
    uri: route.url.href,
    proxyTls: tls,
    requestTls: tls,
    clientFactory: (origin: URL, factoryOptions: { connect: Connector }) =>
      new TunnelPool(origin, { ...factoryOptions, connect: withoutIpServername(factoryOptions.connect), ...bound }),
  });
}

/**
 * The connection pool every request goes through: keep-alive connections,
 * and the standard proxy variables (HTTPS_PROXY, HTTP_PROXY, NO_PROXY)
 * honoured through undici's EnvHttpProxyAgent when any is set.
 */
import { Agent, EnvHttpProxyAgent, type Dispatcher } from 'undici';

const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'];

/** A dispatcher for this process's environment. */
export function createDispatcher(env: NodeJS.ProcessEnv): Dispatcher {
  const options = { keepAliveTimeout: 10_000, connections: 64 };
  if (PROXY_VARIABLES.some((name) => env[name])) return new EnvHttpProxyAgent(options);
  return new Agent(options);
}

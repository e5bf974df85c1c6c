/**
 * The environment of every run, spawned or in-process, built from nothing:
 * PATH, HOME, NO_COLOR=1 and what the test sets, so no NOTARIZE_*, CI,
 * GITHUB_* or *_PROXY variable of the parent (a developer's shell, a CI
 * runner) can change what a test sees. Every URL handed to a run must be on
 * 127.0.0.0/8, so that no test reaches the real service or a real proxy by
 * mistake.
 */

/** Variables a test sets; an undefined value removes the variable. */
export type EnvVars = Record<string, string | undefined>;

export interface EnvOptions {
  /**
   * NOTARIZE_BASE_URL must be a 127.0.0.1 server, and a run of notarize must
   * set it, so that no test reaches the real service by forgetting it, unless
   * the test says it knows better: a command that sends nothing (config,
   * hash, completion, --help, usage errors), or a base URL taken from the
   * store or --base-url, which the test set to its sandbox, or refused before
   * use. The *_PROXY variables are checked all the same, unless:
   */
  noBaseUrlCheck?: boolean;
  /**
   * The proxy variables hold what the test is about (a malformed value, a
   * proxy it started on 127.0.0.1 in front of a base URL elsewhere), and the
   * test knows nothing can leave the machine.
   */
  noProxyCheck?: boolean;
}

// The loopback range: a proxy on 127.0.0.3 is told apart from the service on 127.0.0.1. A path
// (a base URL given with /api by mistake) changes nothing of where a request goes.
export const LOCAL_URL = /^http:\/\/127\.\d{1,3}\.\d{1,3}\.\d{1,3}:\d+(\/[\w./-]*)?$/;
const PROXY_VARIABLES = ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy'];

/**
 * The whole environment of a process: PATH, HOME, NO_COLOR=1 and `extra`
 * (undefined values dropped). Nothing else is inherited. Throws when a URL
 * variable (NOTARIZE_BASE_URL, unless `noBaseUrlCheck`, and the proxy
 * variables, unless `noProxyCheck`) points anywhere but 127.0.0.0/8.
 */
export function cleanEnv(extra: EnvVars = {}, options: EnvOptions = {}): Record<string, string> {
  const env: Record<string, string> = { NO_COLOR: '1' };
  if (process.env.PATH !== undefined) env.PATH = process.env.PATH;
  if (process.env.HOME !== undefined) env.HOME = process.env.HOME;
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) env[key] = value;
  const urlVariables = [
    ...(options.noBaseUrlCheck ? [] : ['NOTARIZE_BASE_URL']),
    ...(options.noProxyCheck ? [] : PROXY_VARIABLES),
  ];
  for (const key of urlVariables) {
    const value = env[key];
    if (value !== undefined && value !== '' && !LOCAL_URL.test(value)) {
      throw new Error(`refusing ${key}=${value}: tests talk to servers on 127.0.0.0/8 only`);
    }
  }
  return env;
}

/**
 * The environment of a run of notarize: `cleanEnv`, plus the rule that every
 * run has its own store (NOTARIZE_CONFIG_DIR) and, unless the test knows
 * better, a 127.0.0.1 base URL; and, unless the test sets proxy variables
 * itself, NO_REMOTE_TRAFFIC.
 */
export function notarizeEnv(extra: EnvVars, options: EnvOptions = {}): Record<string, string> {
  // No proxy variable of the test's own: anything not for 127.0.0.1 (a URL refused too late by a bug,
  // a default base URL) goes to a closed local port, never off the machine.
  const proxied = PROXY_VARIABLES.some((key) => key in extra) || 'NO_PROXY' in extra || 'no_proxy' in extra;
  const env = cleanEnv(proxied ? extra : { ...NO_REMOTE_TRAFFIC, ...extra }, options);
  if (!env.NOTARIZE_CONFIG_DIR) throw new Error('every run of notarize needs its own NOTARIZE_CONFIG_DIR');
  if (!env.NOTARIZE_BASE_URL && !options.noBaseUrlCheck) {
    throw new Error(
      'set NOTARIZE_BASE_URL to the sandbox, or pass noBaseUrlCheck: true when the test sets it otherwise',
    );
  }
  return env;
}

/**
 * The variables of a run against its own store `configDir` (also its HOME,
 * so nothing outside it is touched), with fast retries, and a closed
 * loopback port as the base URL unless `extra` says where the service is: no
 * run may reach the real one. `extra` may remove a variable (undefined).
 */
export function cliEnv(configDir: string, extra: EnvVars = {}): EnvVars {
  return {
    HOME: configDir,
    NOTARIZE_CONFIG_DIR: configDir,
    NOTARIZE_RETRY_DELAY_MS: '20',
    NOTARIZE_BASE_URL: 'http://127.0.0.1:9',
    ...extra,
  };
}

/**
 * For runs whose base URL may fall back to a default or point off this
 * machine (the very thing under test): any https or non-loopback traffic goes
 * to a closed local proxy port, so even a bug cannot reach the real service.
 */
export const NO_REMOTE_TRAFFIC = {
  HTTPS_PROXY: 'http://127.0.0.1:9',
  HTTP_PROXY: 'http://127.0.0.1:9',
  NO_PROXY: '127.0.0.1,localhost',
};

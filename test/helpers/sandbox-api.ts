/**
 * The real ApiClient of a bed's sandbox, for unit tests of the flow that
 * inject its dependencies: no retries (a fault rule is met exactly once),
 * a token got once by a direct login. Agents are closed after each test.
 */
import { Agent } from 'undici';
import { afterEach } from 'vitest';
import { ApiClient } from '../../src/api/client.js';
import { HttpTransport } from '../../src/api/http.js';
import type { Bed } from './bed.js';

const agents: Agent[] = [];
afterEach(async () => {
  await Promise.all(agents.splice(0).map((agent) => agent.close()));
});

export function sandboxTransport(bed: Bed, userAgent = 'notarize-unit-test'): HttpTransport {
  const dispatcher = new Agent();
  agents.push(dispatcher);
  return new HttpTransport({ baseUrl: bed.url, timeoutMs: 5000, userAgent, dispatcher });
}

/**
 * The client of the bed's sandbox, with a token got once (or `token`);
 * `beforeSend` runs as each call has its token, after the flow's own looks
 * and before the call waits for its slot and goes out.
 */
export function sandboxApi(
  bed: Bed,
  options: { userAgent?: string; token?: string; beforeSend?: () => void } = {},
): ApiClient {
  let token: Promise<string> | undefined;
  const get = () => (token ??= options.token === undefined ? bed.directLogin() : Promise.resolve(options.token));
  // Declared apart, so it fits the client's credentials (token/renew) and an authorizer (authorize) alike.
  const credentials = {
    token: get,
    renew: () => Promise.resolve(undefined),
    authorize: <T>(send: (token: string) => Promise<T>) =>
      get().then((got) => {
        options.beforeSend?.();
        return send(got);
      }),
  };
  return new ApiClient(
    sandboxTransport(bed, options.userAgent),
    { retries: 0, baseDelayMs: 1, maxDelayMs: 1 },
    credentials,
  );
}

/**
 * The service's pages for people (not its API): where the public
 * verification page of a hash lives (service-api.md: a `GET` of this path
 * and the hash answers HTML). The one place that path is written: the
 * flow's hints, the printed results and the sandbox's route take it from here.
 */

/** The path before the hash on the public verification page. */
export const VERIFICATION_PAGE = '/verification/';

/** The path of the public verification page of `hash`, for a client that adds its own base URL. */
export function verificationPath(hash: string): string {
  return `${VERIFICATION_PAGE}${hash}`;
}

/** The public verification page of `hash` on the service at `baseUrl` (no trailing slash). */
export function verificationUrl(baseUrl: string, hash: string): string {
  return `${baseUrl}${verificationPath(hash)}`;
}

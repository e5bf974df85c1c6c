/**
 * The sandbox's route table: which request targets exist, under which name
 * (the name fault rules and the call log use) and with which method.
 */
import { VERIFICATION_PAGE } from '../api/pages.js';

/** The names of the sandbox's endpoints, in the order of the registration flow. */
export const ROUTE_NAMES = ['login', 'request', 'forfait', 'file', 'active', 'subscription', 'verification'] as const;

/** One of the sandbox's endpoints; fault rules and the call log name routes this way. */
export type RouteName = (typeof ROUTE_NAMES)[number];

/** Where a path leads: the route, the one method it accepts and its path parameter ('' when it has none). */
export interface RouteMatch {
  route: RouteName;
  method: 'GET' | 'POST' | 'PUT';
  param: string;
}

interface RouteEntry {
  route: RouteName;
  method: RouteMatch['method'];
  pattern: RegExp;
}

// The trailing slash of the request step is part of the documented path
// (`/api/v2/registration/?subscription=true`), so it is required here: a
// client that drops it fails against the sandbox instead of in production.
const ROUTES: readonly RouteEntry[] = [
  { route: 'login', method: 'POST', pattern: /^\/api\/v2\/auth\/login$/ },
  { route: 'request', method: 'POST', pattern: /^\/api\/v2\/registration\/$/ },
  { route: 'forfait', method: 'POST', pattern: /^\/api\/v2\/registration\/([^/]+)\/forfait$/ },
  { route: 'file', method: 'PUT', pattern: /^\/api\/v2\/file\/([^/]+)$/ },
  { route: 'active', method: 'GET', pattern: /^\/api\/v2\/payment\/subscription\/active$/ },
  { route: 'subscription', method: 'GET', pattern: /^\/api\/v2\/subscription\/([^/]+)$/ },
  { route: 'verification', method: 'GET', pattern: new RegExp(`^${VERIFICATION_PAGE}([^/]+)$`) },
];

/** Finds the route a path (without its query string) belongs to, whatever the method; undefined when none does. */
export function matchRoute(pathname: string): RouteMatch | undefined {
  for (const entry of ROUTES) {
    const found = entry.pattern.exec(pathname);
    if (found) return { route: entry.route, method: entry.method, param: found[1] ?? '' };
  }
  return undefined;
}

/** Splits a raw request target into its path and its query parameters. */
export function splitTarget(target: string): { pathname: string; query: URLSearchParams } {
  const mark = target.indexOf('?');
  if (mark === -1) return { pathname: target, query: new URLSearchParams() };
  return { pathname: target.slice(0, mark), query: new URLSearchParams(target.slice(mark + 1)) };
}

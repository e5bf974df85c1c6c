/**
 * What each sandbox route does when no fault gets in the way. Handlers take
 * the request as data and return an Answer, or throw SandboxHttpError.
 */
import { isDeepStrictEqual } from 'node:util';
import type { z } from 'zod';
import {
  fileMetadataSchema,
  loginRequestSchema,
  loginResponseSchema,
  registrationRequestSchema,
} from '../api/schemas.js';
import { describeZodError } from '../validation.js';
import { SandboxHttpError, type Answer } from './http.js';
import { signJwt, verifyJwt } from './jwt.js';
import type { RouteName } from './routes.js';
import { SANDBOX_USER, type SandboxState } from './state.js';
import { verificationPage } from './verification.js';

/** The secrets of one sandbox instance. */
export interface SandboxAuth {
  apiKey: string;
  secret: Buffer;
  tokenTtlSeconds: number;
}

/** One request as the handlers see it. */
export interface HandlerContext {
  state: SandboxState;
  auth: SandboxAuth;
  /** The path parameter ({hash} or {sessionId}), '' when the route has none. */
  param: string;
  query: URLSearchParams;
  body: string;
  authorization: string | undefined;
}

const ok = (json: unknown): Answer => ({ status: 200, json });
const badRequest = (message: string): SandboxHttpError => new SandboxHttpError(400, 'bad_request', message);
const nowSeconds = (): number => Math.floor(Date.now() / 1000);

function parseBody<T extends z.ZodType>(schema: T, body: string): z.output<T> {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw badRequest('the request body is not valid JSON');
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw badRequest(`the request body is not valid: ${describeZodError(parsed.error)}`);
  return parsed.data;
}

function requireToken(ctx: HandlerContext): void {
  const found = /^Bearer\s+(\S+)$/i.exec(ctx.authorization ?? '');
  if (!found?.[1])
    throw new SandboxHttpError(401, 'unauthorized', 'an Authorization: Bearer <token> header is required');
  const check = verifyJwt(found[1], ctx.auth.secret, nowSeconds());
  if (!check.ok) throw new SandboxHttpError(401, 'unauthorized', check.reason);
}

function pathHash(param: string): string {
  if (!/^[0-9a-fA-F]{64}$/.test(param)) throw badRequest('the hash in the path must be 64 hex characters');
  return param.toLowerCase();
}

function login(ctx: HandlerContext): Answer {
  const { apiKey } = parseBody(loginRequestSchema, ctx.body);
  if (apiKey !== ctx.auth.apiKey) throw new SandboxHttpError(401, 'unauthorized', 'the API key is not valid');
  const iat = nowSeconds();
  const claims = { ...SANDBOX_USER, iat, nbf: iat, exp: iat + ctx.auth.tokenTtlSeconds, iss: 'notarize-sandbox' };
  const answer = { token: signJwt(claims, ctx.auth.secret) };
  loginResponseSchema.parse(answer);
  return ok(answer);
}

function requestRegistration(ctx: HandlerContext): Answer {
  requireToken(ctx);
  if (ctx.query.get('subscription') !== 'true') {
    throw badRequest('the request step needs ?subscription=true, as documented');
  }
  const request = parseBody(registrationRequestSchema, ctx.body);
  if (ctx.state.registrations.get(request.hash)?.record) {
    throw new SandboxHttpError(409, 'conflict', `the hash ${request.hash} is already registered`);
  }
  // A repeated request for a pending hash replaces its session, so only the
  // latest session can complete it.
  const session = ctx.state.issueSession();
  const { hash, description, custody, signed } = request;
  ctx.state.registrations.set(hash, { hash, description, custody, signed, session });
  return ok(session);
}

function forfait(ctx: HandlerContext): Answer {
  requireToken(ctx);
  const hash = pathHash(ctx.param);
  const registration = ctx.state.registrations.get(hash);
  if (!registration) throw new SandboxHttpError(404, 'not_found', `no registration was requested for the hash ${hash}`);
  if (registration.record) throw new SandboxHttpError(409, 'conflict', `the hash ${hash} is already registered`);
  let sent: unknown;
  try {
    sent = JSON.parse(ctx.body);
  } catch {
    throw badRequest('the request body is not valid JSON');
  }
  // This is how the sandbox checks that clients send the session back
  // exactly as received (service-api.md: "same keys, same values, nulls kept").
  // The user's active subscription also pays (`complete --use-active-subscription`).
  const accepted = [registration.session, ctx.state.activeSession()].map(
    (session) => JSON.parse(JSON.stringify(session)) as unknown,
  );
  if (!accepted.some((session) => isDeepStrictEqual(sent, session))) {
    throw badRequest('the session does not match the one issued for this hash; send it back exactly as received');
  }
  return ok(ctx.state.complete(registration));
}

function fileMetadata(ctx: HandlerContext): Answer {
  requireToken(ctx);
  const hash = pathHash(ctx.param);
  if (!ctx.state.registrations.has(hash)) {
    throw new SandboxHttpError(404, 'not_found', `no registration was requested for the hash ${hash}`);
  }
  const metadata = parseBody(fileMetadataSchema, ctx.body);
  if (metadata.hash !== hash) throw badRequest('the hash in the body differs from the hash in the path');
  ctx.state.files.set(hash, metadata);
  return ok({});
}

function activeSubscription(ctx: HandlerContext): Answer {
  requireToken(ctx);
  return ok(ctx.state.activeSession());
}

function subscription(ctx: HandlerContext): Answer {
  requireToken(ctx);
  const session = ctx.state.sessions.get(ctx.param);
  if (!session) throw new SandboxHttpError(404, 'not_found', `no subscription session ${ctx.param} was issued`);
  return ok(session);
}

function verification(ctx: HandlerContext): Answer {
  const hash = ctx.param.toLowerCase();
  const record = ctx.state.records.get(hash);
  return { status: record ? 200 : 404, html: verificationPage(hash, record) };
}

/** The handler of every route. */
export const HANDLERS: Record<RouteName, (ctx: HandlerContext) => Answer> = {
  login,
  request: requestRegistration,
  forfait,
  file: fileMetadata,
  active: activeSubscription,
  subscription,
  verification,
};

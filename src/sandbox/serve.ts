/**
 * The sandbox's per-request pipeline: log the call, pick its faults, read the
 * body, wait out any latency, then either misbehave as the fault says or run
 * the route's handler and answer.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { encoded, stall, truncate, streamHuge, UNKNOWN_CODING, wrongShape } from './delivery.js';
import { HUGE_DEFAULT_BYTES, type FaultBook, type FaultKind, type FaultPlan } from './faults.js';
import { HANDLERS, type SandboxAuth } from './handlers.js';
import { errorAnswer, readBody, renderAnswer, SandboxHttpError, writeText, type Answer } from './http.js';
import { matchRoute, splitTarget, type RouteMatch, type RouteName } from './routes.js';
import type { SandboxState } from './state.js';
import { HTML_FAULT_PAGE } from './verification.js';

/** One request the sandbox received, as kept in `Sandbox.calls`. */
export interface SandboxCall {
  /** The route the path belongs to; null for a path the sandbox does not know (answered 404). */
  route: RouteName | null;
  method: string;
  /** The request target as received, query string included. */
  path: string;
  /** The status answered; 0 while unanswered, or when the connection was dropped or hung. */
  status: number;
  /** The raw request body text, exactly as received ('' when refused as too large). */
  body: string;
  /** The non-latency fault injected into this call, if any. */
  fault?: FaultKind;
  /**
   * Whether the request carried an Authorization header. Only its presence is
   * kept, never its value: tests use it to prove that a token was not sent.
   */
  authorized: boolean;
}

/** What the pipeline shares across requests of one sandbox instance. */
export interface ServeContext {
  state: SandboxState;
  auth: SandboxAuth;
  faults: FaultBook;
  calls: SandboxCall[];
  /** Aborted by close(), to cut pending latency short. */
  signal: AbortSignal;
  onCall: ((call: SandboxCall) => void) | undefined;
}

function run(
  ctx: ServeContext,
  req: IncomingMessage,
  match: RouteMatch | undefined,
  query: URLSearchParams,
  body: string,
): Answer {
  const method = req.method ?? '';
  if (!match) return errorAnswer(404, `the sandbox has no route for ${method} ${req.url ?? ''}`);
  if (method !== match.method) {
    return errorAnswer(405, `${match.route} only accepts ${match.method}`, undefined, { allow: match.method });
  }
  try {
    const authorization = req.headers.authorization;
    return HANDLERS[match.route]({ state: ctx.state, auth: ctx.auth, param: match.param, query, body, authorization });
  } catch (error) {
    if (error instanceof SandboxHttpError) return errorAnswer(error.status, error.message, error.code, error.headers);
    return errorAnswer(500, `sandbox bug: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function send(res: ServerResponse, answer: Answer, spoil?: (text: string) => string): void {
  const { contentType, text } = renderAnswer(answer);
  writeText(res, answer.status, contentType, spoil ? spoil(text) : text, answer.headers);
}

/** Handles one request from start to finish; never rejects for client-side trouble. */
export async function serve(ctx: ServeContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const target = req.url ?? '/';
  const { pathname, query } = splitTarget(target);
  const match = matchRoute(pathname);
  const call: SandboxCall = {
    route: match?.route ?? null,
    method: req.method ?? '',
    path: target,
    status: 0,
    body: '',
    authorized: req.headers.authorization !== undefined,
  };
  ctx.calls.push(call);
  // Faults are chosen on arrival so that counts are consumed in arrival order.
  const plan: FaultPlan = match ? ctx.faults.take(match.route) : { latencyMs: 0 };
  if (plan.fault) call.fault = plan.fault.kind;

  let reported = false;
  const report = (status: number): void => {
    if (reported) return;
    reported = true;
    call.status = status;
    try {
      ctx.onCall?.(call);
    } catch {
      // A broken observer must not break the sandbox.
    }
  };
  res.once('close', () => report(res.headersSent ? res.statusCode : 0));

  const received = await readBody(req).catch(() => undefined);
  if (!received) return;
  call.body = received.text;
  if (plan.latencyMs > 0) {
    const waited = await sleep(plan.latencyMs, true, { signal: ctx.signal }).catch(() => false);
    if (!waited) return;
  }

  const fault = plan.fault;
  const answered = (answer: Answer): Answer => {
    report(answer.status);
    return answer;
  };
  switch (fault?.kind) {
    case 'drop':
      req.socket.destroy();
      return;
    case 'hang':
      return; // close() or the client's own timeout ends the connection.
    case 'status': {
      const status = fault.value ?? 503;
      const headers = fault.retryAfter === undefined ? undefined : { 'retry-after': String(fault.retryAfter) };
      send(res, answered(errorAnswer(status, `injected fault: HTTP ${status}`, undefined, headers)));
      return;
    }
    case 'html':
      send(res, answered({ status: 200, html: HTML_FAULT_PAGE }));
      return;
    case 'huge':
      report(200);
      await streamHuge(res, fault.value ?? HUGE_DEFAULT_BYTES);
      return;
    default:
      break;
  }

  const answer = received.tooLarge
    ? errorAnswer(413, 'the request body is larger than 1 MiB')
    : run(ctx, req, match, query, received.text);
  if (fault?.kind === 'drop-after') {
    req.socket.destroy();
  } else if (fault?.kind === 'truncated') {
    send(res, answered(answer), truncate);
  } else if (fault?.kind === 'stall' || fault?.kind === 'gzip' || fault?.kind === 'undecodable') {
    const { contentType, text } = renderAnswer(answered(answer));
    if (fault.kind === 'stall') stall(res, answer.status, contentType, text);
    else encoded(res, answer.status, contentType, text, fault.kind === 'gzip' ? 'gzip' : UNKNOWN_CODING);
  } else if (fault?.kind === 'wrong-shape' && match) {
    send(res, answered(wrongShape(match.route, answer)));
  } else {
    send(res, answered(answer));
  }
}

/**
 * Fault injection rules: what they are, how they are written on a command
 * line (`route:kind[=value][@retryAfter][*count]`) and how the sandbox picks
 * the ones that apply to a call.
 */
import { ROUTE_NAMES, type RouteName } from './routes.js';

/** Every kind of fault the sandbox can inject. */
export const FAULT_KINDS = [
  'latency',
  'status',
  'drop',
  'drop-after',
  'hang',
  'html',
  'truncated',
  'wrong-shape',
  'huge',
  'stall',
  'gzip',
  'undecodable',
] as const;

/** One kind of fault (see FAULT_SPEC_HELP for what each does). */
export type FaultKind = (typeof FAULT_KINDS)[number];

/** One fault injection rule; rules are checked in order for every call to a route. */
export interface Fault {
  route: RouteName | '*';
  kind: FaultKind;
  /** Milliseconds for latency, the HTTP status for status, the byte cap for huge (default 1 GiB). */
  value?: number;
  /** Seconds, sent as Retry-After with status. */
  retryAfter?: number;
  /** Applies to the first `count` matching calls; undefined means every call. */
  count?: number;
}

/** The fault spec syntax, as shown by `notarize sandbox --help`. */
export const FAULT_SPEC_HELP = `Fault rules, comma-separated: route:kind[=value][@retryAfter][*count]
  route         ${ROUTE_NAMES.join(', ')}, or * for every route
  latency=MS    delay the answer by MS milliseconds, then answer normally
  status=CODE   answer HTTP CODE (400-599) with a JSON error, without processing;
                @SECONDS adds a Retry-After header
  drop          close the connection without answering, without processing
  drop-after    process the request, then close the connection without answering
  hang          never answer, without processing
  html          answer 200 with an HTML page instead of JSON, without processing
  truncated     process, then answer with the JSON body cut in half
  wrong-shape   process, then answer 200 with JSON of the wrong shape
  huge[=BYTES]  answer 200 with a JSON-looking body that never ends (capped at BYTES, default 1 GiB)
  stall         process, then answer 200 with half the JSON body and never send the rest
  gzip          process, then answer 200 with the JSON body gzip-compressed (Content-Encoding: gzip),
                though the client asks for none (Accept-Encoding: identity)
  undecodable   process, then answer 200 with the JSON body in a coding no client can undo
                (Content-Encoding: x-sandbox-unknown)
  *N            apply the rule to the first N matching calls only (default: every call)
Latency rules add up; besides them, at most one rule (the first that matches) applies to a call.
Example: forfait:status=503@2*3,request:drop*1,*:latency=50`;

/** The default cap of a huge answer, so that a forgotten client cannot make the sandbox stream forever. */
export const HUGE_DEFAULT_BYTES = 1024 ** 3;

const MAX_LATENCY_MS = 600_000;
const RULE_PATTERN = /^([a-z*]+):([a-z-]+)(?:=(\d+))?(?:@(\d+))?(?:\*(\d+))?$/;

/** Says what is wrong with a fault rule, or returns undefined when it is valid. */
export function checkFault(fault: Fault): string | undefined {
  const { route, kind, value, retryAfter, count } = fault;
  if (route !== '*' && !(ROUTE_NAMES as readonly string[]).includes(route)) {
    return `unknown route "${String(route)}" (expected ${ROUTE_NAMES.join(', ')} or *)`;
  }
  if (!(FAULT_KINDS as readonly string[]).includes(kind)) return `unknown kind "${String(kind)}"`;
  const needsValue = kind === 'latency' || kind === 'status';
  if (needsValue && value === undefined) return `${kind} needs a value (${kind}=N)`;
  if (value !== undefined) {
    if (!needsValue && kind !== 'huge') return `${kind} takes no value`;
    if (!Number.isSafeInteger(value)) return 'the value must be an integer';
    if (kind === 'latency' && (value < 0 || value > MAX_LATENCY_MS)) return `latency must be 0-${MAX_LATENCY_MS} ms`;
    if (kind === 'status' && (value < 400 || value > 599)) return 'status must be 400-599';
    if (kind === 'huge' && value < 1) return 'huge needs a positive byte cap';
  }
  if (retryAfter !== undefined) {
    if (kind !== 'status') return '@retryAfter only goes with status';
    if (!Number.isSafeInteger(retryAfter) || retryAfter < 0) return 'retryAfter must be a whole number of seconds';
  }
  if (count !== undefined && (!Number.isSafeInteger(count) || count < 1)) return 'count must be 1 or more';
  return undefined;
}

/**
 * Parses a fault spec such as `forfait:status=503@2*3,request:drop*1`.
 * An empty or blank spec means no faults. Throws an Error with a one-line
 * message naming the first bad rule.
 */
export function parseFaults(spec: string): Fault[] {
  if (spec.trim() === '') return [];
  return spec.split(',').map((raw) => {
    const rule = raw.trim();
    const fail = (why: string): never => {
      throw new Error(`invalid fault rule ${JSON.stringify(rule)}: ${why}`);
    };
    const parts = RULE_PATTERN.exec(rule);
    if (!parts) return fail('expected route:kind[=value][@retryAfter][*count]');
    const [, route = '', kind = '', value, retryAfter, count] = parts;
    const fault: Fault = { route: route as Fault['route'], kind: kind as FaultKind };
    if (value !== undefined) fault.value = Number(value);
    if (retryAfter !== undefined) fault.retryAfter = Number(retryAfter);
    if (count !== undefined) fault.count = Number(count);
    const problem = checkFault(fault);
    return problem === undefined ? fault : fail(problem);
  });
}

/** The faults chosen for one call: the total added latency and at most one other fault. */
export interface FaultPlan {
  latencyMs: number;
  fault?: Fault;
}

/** The sandbox's live fault rules with their remaining counts; `take` consumes them call by call. */
export class FaultBook {
  private readonly rules: { fault: Fault; remaining: number }[] = [];

  /** Appends rules after the existing ones; throws an Error naming the first invalid rule (and adds none). */
  add(faults: readonly Fault[]): void {
    for (const fault of faults) {
      const problem = checkFault(fault);
      if (problem !== undefined) throw new Error(`invalid fault ${JSON.stringify(fault)}: ${problem}`);
    }
    for (const fault of faults) this.rules.push({ fault: { ...fault }, remaining: fault.count ?? Infinity });
  }

  /** Chooses the faults for one call to `route` and decrements the counts of the rules it used. */
  take(route: RouteName): FaultPlan {
    const plan: FaultPlan = { latencyMs: 0 };
    for (const rule of this.rules) {
      if (rule.remaining <= 0 || (rule.fault.route !== '*' && rule.fault.route !== route)) continue;
      if (rule.fault.kind === 'latency') {
        plan.latencyMs += rule.fault.value ?? 0;
      } else if (plan.fault === undefined) {
        plan.fault = rule.fault;
      } else {
        continue;
      }
      rule.remaining -= 1;
    }
    return plan;
  }
}

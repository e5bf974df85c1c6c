/**
 * Shared pieces of the property-based tests: the documented exit codes, the
 * checks every run must pass, and generators of hostile input.
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import { EXIT } from '../../src/errors.js';
import { describeRun, STACK_LINE, type Run } from './cli.js';

/** Every exit code the CLI documents (src/errors.ts, `notarize --help`). */
const DOCUMENTED = Object.values(EXIT) as number[];

/** Fuzz runs per property; FUZZ_RUNS overrides (e.g. for a longer local soak). */
export function runs(defaultRuns: number): number {
  return Number(process.env.FUZZ_RUNS ?? defaultRuns);
}

/** fast-check settings: a random seed unless FUZZ_SEED gives one (a failure prints its seed, to replay it). */
export function settings(defaultRuns: number): { numRuns: number; seed?: number } {
  const seed = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
  return { numRuns: runs(defaultRuns), ...(seed === undefined ? {} : { seed }) };
}

/** What every run must show: a documented exit code, no crash, no stack trace (unless asked with --verbose). */
export function expectWellBehaved(result: Run, argv: readonly string[]): void {
  expect(DOCUMENTED, describeRun(result)).toContain(result.code);
  expect(result.stderr, describeRun(result)).not.toMatch(/notarize: unexpected error|"code":"unexpected"/);
  if (!argv.includes('--verbose')) expect(result.stderr, describeRun(result)).not.toMatch(STACK_LINE);
}

/** 64 hex digits. */
export const hex64 = fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 });

/** Text of any kind, from plain ASCII to any Unicode, including empty. */
export const anyText = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
);

/** Random bytes as the text a reader would decode from them. */
export const bytesText = fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes).toString('utf8'));

/** Any JSON text: values of every type, objects with odd keys, deep nesting. */
export const jsonText = fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value));

/** A subscription-session-like object: the documented keys with values of any type, and extra keys. */
export const sessionLike = fc
  .record(
    {
      sessionId: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
      id: fc.oneof(fc.string(), fc.constant(null), fc.integer()),
      userId: fc.oneof(fc.integer(), fc.string(), fc.double()),
      planId: fc.oneof(fc.string(), fc.constant(null)),
      planNickname: fc.string(),
      status: fc.oneof(fc.constant('active'), fc.string()),
      created: fc.oneof(fc.nat(), fc.integer(), fc.double(), fc.string()),
      currentPeriodStart: fc.oneof(fc.nat(), fc.integer()),
      currentPeriodEnd: fc.oneof(fc.nat(), fc.integer()),
      canceledAt: fc.oneof(fc.boolean(), fc.integer(), fc.constant(null), fc.string()),
      customer: fc.oneof(fc.string(), fc.constant(null)),
      custumer: fc.oneof(fc.string(), fc.constant(null)),
      defaultPaymentMethod: fc.oneof(fc.string(), fc.constant(null)),
      latestInvoice: fc.oneof(fc.string(), fc.constant(null)),
    },
    { requiredKeys: [] },
  )
  .chain((session) =>
    fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }).map((extra) => ({
      ...extra,
      ...session,
    })),
  );

/** Takes a valid JSON object's text and changes one field to a random JSON value (or removes it). */
export function mutatedObject(valid: string): fc.Arbitrary<string> {
  const object = JSON.parse(valid) as Record<string, unknown>;
  const keys = Object.keys(object);
  return fc
    .tuple(fc.constantFrom(...keys), fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined }))
    .map(([key, value]) => JSON.stringify({ ...object, [key]: value }));
}

/** A session of the documented shape (every type right) with random values and extra keys. */
export const validSession = fc
  .record({
    sessionId: fc.string({ minLength: 1, maxLength: 16 }),
    id: fc.option(fc.string({ maxLength: 16 }), { nil: null }),
    userId: fc.integer(),
    planId: fc.string({ maxLength: 16 }),
    planNickname: fc.string({ maxLength: 8 }),
    status: fc.string({ maxLength: 8 }),
    created: fc.nat(),
    currentPeriodStart: fc.nat(),
    currentPeriodEnd: fc.nat(),
    canceledAt: fc.oneof(fc.boolean(), fc.integer(), fc.constant(null)),
    customer: fc.option(fc.string({ maxLength: 8 }), { nil: null }),
  })
  .chain((session) =>
    fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }).map((extra) => ({
      ...extra,
      ...session,
    })),
  );

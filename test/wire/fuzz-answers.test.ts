/**
 * Issue 3, "Bad input, fuzzed": service answers of every kind (random JSON
 * values, random bytes, odd shapes, valid ones; any status; odd Retry-After
 * headers) served by a stand-in service to each endpoint of a registration.
 * Every run exits with a documented code and no stack trace; when the
 * request step got a 2xx JSON object, the session is kept (pending, or
 * completed into the ledger); and no run sends forfait again after a 2xx.
 */
import fc from 'fast-check';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditSecrets } from '../helpers/audit.js';
import { cliEnv } from '../helpers/env.js';
import {
  bytesText,
  expectWellBehaved,
  hex64,
  jsonText,
  mutatedObject,
  sessionLike,
  settings,
} from '../helpers/fuzz.js';
import { startFakeService, type ServiceRoute, type FakeService } from '../helpers/local-server.js';
import { runMain } from '../helpers/main.js';
import { handMadeJwt } from '../helpers/sandbox.js';
import { storePaths } from '../helpers/store.js';
import { useTempDirs } from '../helpers/temp-dirs.js';
import { readFixture } from '../helpers/fixtures.js';

auditSecrets();
const tempDir = useTempDirs();
const SESSION = readFixture('session-free-plan.json');
const RECORD = readFixture('record.json');
const TOKEN = handMadeJwt(Math.floor(Date.now() / 1000) + 36_000);

interface Served {
  status: number;
  body: string;
  retryAfter?: string;
}

/** A body: mostly valid for the route (so later steps are reached), otherwise anything at all. */
function body(valid: string): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant(valid) },
    { weight: 2, arbitrary: mutatedObject(valid) },
    { weight: 1, arbitrary: jsonText },
    { weight: 1, arbitrary: bytesText },
    { weight: 1, arbitrary: sessionLike.map((s) => JSON.stringify(s)) },
    { weight: 1, arbitrary: fc.nat({ max: valid.length }).map((cut) => valid.slice(0, cut)) },
  );
}

function answer(valid: string): fc.Arbitrary<Served> {
  return fc.record(
    {
      status: fc.oneof(
        { weight: 6, arbitrary: fc.constant(200) },
        { weight: 3, arbitrary: fc.constantFrom(201, 204, 302, 400, 401, 403, 404, 409, 429, 500, 502, 503, 504) },
      ),
      body: body(valid),
      retryAfter: fc.constantFrom('0', 'soon', '-5', '1.5', 'Wed, 21 Oct 2015 07:28:00 GMT', '99999'),
    },
    { requiredKeys: ['status', 'body'] },
  );
}

const scenario = fc.record({
  hash: hex64,
  useKey: fc.boolean(),
  login: fc.array(answer(JSON.stringify({ token: TOKEN })), { minLength: 3, maxLength: 3 }),
  request: fc.array(answer(SESSION), { minLength: 3, maxLength: 3 }),
  forfait: fc.array(answer(RECORD), { minLength: 3, maxLength: 3 }),
});

let fake: FakeService;
let plan: Record<ServiceRoute, Served[]>;
let served: { route: ServiceRoute; answer: Served }[];

beforeAll(async () => {
  fake = await startFakeService((route, req) => {
    const next = plan[route]?.shift() ?? { status: 404, body: '{}' };
    // A record for the hash asked, when the body is the valid sample.
    const text =
      route === 'forfait' && next.body === RECORD ? RECORD.replace(/[0-9a-f]{64}/, req.url.split('/')[4]!) : next.body;
    // A 204 has no body on the wire, whatever the handler writes.
    served.push({ route, answer: { ...next, body: next.status === 204 ? '' : text } });
    const headers: Record<string, string> = next.retryAfter === undefined ? {} : { 'retry-after': next.retryAfter };
    return { status: next.status, body: text, headers };
  });
});

afterAll(async () => {
  await fake.close();
});

function isObjectText(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}

describe('random service answers', () => {
  it('documented exit codes, no stack trace, a 2xx session always kept, forfait never repeated after a 2xx', async () => {
    const tally = { runs: 0, sessionsKept: 0, completed: 0, codes: {} as Record<number, number> };
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        plan = { login: [...s.login], request: [...s.request], forfait: [...s.forfait], other: [] };
        served = [];
        const dir = tempDir();
        const env = cliEnv(dir, {
          NOTARIZE_BASE_URL: fake.url,
          NOTARIZE_RETRIES: '2',
          NOTARIZE_RETRY_DELAY_MS: '1',
          NOTARIZE_TIMEOUT: '3000',
          ...(s.useKey ? { NOTARIZE_API_KEY: 'sandbox_fuzzfuzzfuzzfuzzfuzzfuzzfuzzfuzz' } : { NOTARIZE_TOKEN: TOKEN }),
        });
        const argv = ['register', '--hash', s.hash, '-d', 'fuzz', '--json'];
        const result = await runMain(argv, env);
        tally.runs += 1;
        tally.codes[result.code ?? -1] = (tally.codes[result.code ?? -1] ?? 0) + 1;
        expectWellBehaved(result, argv);

        const paths = storePaths(dir, fake.url);
        // Kept: pending, completed, or retired (kept aside) after the service said 409.
        const kept = existsSync(paths.pending(s.hash)) || existsSync(paths.ledger(s.hash)) || paths.retired(s.hash);
        const session = served.find((x) => x.route === 'request' && x.answer.status >= 200 && x.answer.status < 300);
        if (session && isObjectText(session.answer.body)) {
          expect(kept, `the session ${session.answer.body} was not kept`).toBe(true);
          tally.sessionsKept += 1;
        }
        const forfaits = served.filter((x) => x.route === 'forfait');
        const accepted = forfaits.findIndex((x) => x.answer.status >= 200 && x.answer.status < 300);
        if (accepted !== -1) expect(forfaits.length).toBe(accepted + 1);
        // Forfait is sent again only after an answer that proves nothing was done:
        // 401 (one re-login), 429, or 503 with a valid Retry-After.
        for (const { answer: refused } of forfaits.slice(0, -1)) {
          const provedUndone =
            refused.status === 401 ||
            refused.status === 429 ||
            (refused.status === 503 && /^(\d+|.* GMT)$/.test(refused.retryAfter ?? ''));
          expect(provedUndone, JSON.stringify(refused)).toBe(true);
        }
        // One re-login, one forfait more: a 401 to that one too ends the run (exit 3), nothing sent after it.
        // (A 401 the re-login could not answer, refused, failing or unreadable, ends it with the login's code.)
        const refusedTwice = forfaits.filter((x) => x.answer.status === 401).length === 2;
        expect(forfaits.slice(0, -1).filter((x) => x.answer.status === 401).length).toBeLessThanOrEqual(1);
        if (refusedTwice && forfaits.at(-1)?.answer.status === 401) expect(result.code).toBe(3);
        if (existsSync(paths.ledger(s.hash))) tally.completed += 1;
        // Exit 0 leaves a record or a pending session, unless the service said 409 (already registered).
        const saidRegistered = served.some((x) => x.route !== 'login' && x.answer.status === 409);
        if (result.code === 0 && !saidRegistered) {
          expect(existsSync(paths.ledger(s.hash)) || existsSync(paths.pending(s.hash))).toBe(true);
        }
        if (paths.retired(s.hash)) expect(saidRegistered).toBe(true);
      }),
      settings(200),
    );
    console.log(`answer fuzz: ${JSON.stringify(tally)}`);
    expect(tally.completed).toBeGreaterThan(0);
  }, 180_000);
});

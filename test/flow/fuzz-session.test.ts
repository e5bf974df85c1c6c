/**
 * Issue 3, "Bad input, fuzzed": session objects fed to `complete --session -`
 * (random JSON, session-like objects with fields of any type, the issued
 * session with one field changed, random bytes) against the sandbox. Every
 * run exits with a documented code and no stack trace; the session the
 * service issued stays pending, byte for byte, and completes at the end.
 */
import fc from 'fast-check';
import { readFileSync, writeFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { auditSecrets } from '../helpers/audit.js';
import { describeRun } from '../helpers/cli.js';
import { makeDocument } from '../helpers/documents.js';
import { cliEnv } from '../helpers/env.js';
import {
  bytesText,
  expectWellBehaved,
  jsonText,
  mutatedObject,
  sessionLike,
  settings,
  validSession,
} from '../helpers/fuzz.js';
import { runMain } from '../helpers/main.js';
import { callsTo, useSandboxes, type TestSandbox } from '../helpers/sandbox.js';
import { ledgerHashes, pendingHashes, readJson, storePaths } from '../helpers/store.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

auditSecrets();
const tempDir = useTempDirs();
const newSandbox = useSandboxes();

let sandbox: TestSandbox;
let env: NodeJS.ProcessEnv;
let configDir: string;
let issued: { hash: string; file: string; bytes: Buffer; session: string };
let fresh: string;

beforeAll(async () => {
  sandbox = await newSandbox();
  configDir = tempDir();
  env = cliEnv(configDir, {
    NOTARIZE_BASE_URL: sandbox.url,
    NOTARIZE_API_KEY: sandbox.apiKey,
    NOTARIZE_RETRY_DELAY_MS: '1',
    NOTARIZE_RETRIES: '1',
  });
  const doc = makeDocument(tempDir(), 'issued.txt');
  const saved = await runMain(['register', doc.path, '--no-complete'], env);
  expect(saved.code, describeRun(saved)).toBe(0);
  const file = storePaths(configDir, sandbox.url).pending(doc.hash);
  issued = {
    hash: doc.hash,
    file,
    bytes: readFileSync(file),
    session: (readJson(file) as { sessionJson: string }).sessionJson,
  };
  // A hash with no pending session: a session given for it is kept as pending.
  fresh = makeDocument(tempDir(), 'fresh.txt').hash;
});

describe('random sessions given to `complete --session -`', () => {
  it('documented exit codes, no stack trace; the issued session stays pending unchanged, and completes at the end', async () => {
    const codes: Record<number, number> = {};
    let ran = 0;
    const sessions = fc.oneof(
      validSession.map((s) => JSON.stringify(s)),
      validSession.map((s) => JSON.stringify(s, null, 2)),
      jsonText,
      bytesText,
      sessionLike.map((s) => JSON.stringify(s)),
      // Changed, really: a "change" to the same value would complete the registration.
      fc.constant(null).chain(() => mutatedObject(issued.session).filter((s) => s !== issued.session)),
    );
    await fc.assert(
      fc.asyncProperty(sessions, fc.boolean(), fc.boolean(), async (session, forIssued, json) => {
        const argv = ['complete', forIssued ? issued.hash : fresh, '--session', '-', ...(json ? ['--json'] : [])];
        // Each run starts from the issued session, so that a failure shrinks to the run that caused it.
        writeFileSync(issued.file, issued.bytes);
        const result = await runMain(argv, env, { input: session });
        ran += 1;
        codes[result.code ?? -1] = (codes[result.code ?? -1] ?? 0) + 1;
        expectWellBehaved(result, argv);
        // A session that is not the issued one is refused by the service; the
        // issued one, already pending, is never replaced by it.
        expect(result.code, describeRun(result)).not.toBe(0);
        expect(readFileSync(issued.file)).toEqual(issued.bytes);
      }),
      settings(200),
    );
    console.log(`session fuzz: ${ran} sessions, exit codes ${JSON.stringify(codes)}`);
    const done = await runMain(['complete', issued.hash], env);
    expect(done.code, describeRun(done)).toBe(0);
    expect(ledgerHashes(configDir, sandbox.url)).toEqual([issued.hash]);
    expect(pendingHashes(configDir, sandbox.url)).not.toContain(issued.hash);
    expect(callsTo(sandbox.calls, 'forfait', issued.hash).filter((c) => c.status === 200)).toHaveLength(1);
  }, 180_000);
});

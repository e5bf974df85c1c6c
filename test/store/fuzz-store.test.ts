/**
 * Issue 3, "Bad input, fuzzed": store files with random content (random
 * bytes, random JSON, valid entries with one field changed, truncations).
 * Every command exits with a documented code and no stack trace, and a
 * damaged file is never rewritten: a file changes only when it was valid
 * and the command's job is to change it (completing a pending session,
 * storing a token), and then nothing in it is lost.
 */
import fc from 'fast-check';
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { auditSecrets } from '../helpers/audit.js';
import { describeRun } from '../helpers/cli.js';
import { makeDocument } from '../helpers/documents.js';
import { cliEnv } from '../helpers/env.js';
import { bytesText, expectWellBehaved, jsonText, mutatedObject, settings } from '../helpers/fuzz.js';
import { runMain } from '../helpers/main.js';
import { useSandboxes, type TestSandbox } from '../helpers/sandbox.js';
import { storePaths } from '../helpers/store.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

auditSecrets();
const tempDir = useTempDirs();
const newSandbox = useSandboxes();

let sandbox: TestSandbox;
let template: string;
let docs: { p: string; l: string; n: string };
let hashes: { p: string; l: string };
let valid: Record<Target, string>;

type Target = 'pending' | 'ledger' | 'config' | 'credentials';
const TARGETS: Target[] = ['pending', 'ledger', 'config', 'credentials'];

function fileOf(dir: string, target: Target): string {
  const paths = storePaths(dir, sandbox.url);
  if (target === 'pending') return paths.pending(hashes.p);
  if (target === 'ledger') return paths.ledger(hashes.l);
  return join(dir, `${target}.json`);
}

function envOf(dir: string): NodeJS.ProcessEnv {
  return cliEnv(dir, {
    NOTARIZE_BASE_URL: sandbox.url,
    NOTARIZE_API_KEY: sandbox.apiKey,
    NOTARIZE_RETRY_DELAY_MS: '1',
    NOTARIZE_TIMEOUT: '3000',
  });
}

beforeAll(async () => {
  sandbox = await newSandbox();
  template = tempDir();
  const docDir = tempDir();
  const p = makeDocument(docDir, 'p.txt');
  const l = makeDocument(docDir, 'l.txt');
  const n = makeDocument(docDir, 'n.txt');
  docs = { p: p.path, l: l.path, n: n.path };
  hashes = { p: p.hash, l: l.hash };
  const env = envOf(template);
  for (const args of [
    ['login'],
    ['config', 'set', 'retries', '1'],
    ['register', l.path],
    ['register', p.path, '--no-complete'],
  ]) {
    const result = await runMain(args, env);
    expect(result.code, describeRun(result)).toBe(0);
  }
  valid = Object.fromEntries(TARGETS.map((t) => [t, readFileSync(fileOf(template, t), 'utf8')])) as Record<
    Target,
    string
  >;
});

/** What a store file may hold after a hand or a crash got to it. */
function contents(target: Target): fc.Arbitrary<string> {
  const text = valid[target];
  const nested = (key: string) =>
    fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify({ ...(JSON.parse(text) as object), [key]: v }));
  return fc.oneof(
    bytesText,
    jsonText,
    mutatedObject(text),
    fc.nat({ max: text.length }).map((cut) => text.slice(0, cut)),
    target === 'credentials' ? nested('tokens') : mutatedObject(text),
    fc.constant(text),
  );
}

const COMMANDS: ((d: typeof docs, h: typeof hashes) => string[])[] = [
  () => ['pending'],
  () => ['pending', '--json'],
  (d) => ['register', d.n],
  (d) => ['register', d.p],
  (d) => ['register', d.l, '--json'],
  (d) => ['register', d.p, '--force'],
  (_, h) => ['complete', h.p],
  (_, h) => ['complete', h.l, '--json'],
  () => ['config', 'list'],
  () => ['config', 'get', 'retries'],
  () => ['login'],
  () => ['logout'],
  () => ['list'],
  (_, h) => ['show', h.l],
];

/** The tokens of a readable credentials file ({} when it has none), or undefined when it is damaged. */
function tokensOf(text: string): Record<string, unknown> | undefined {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return undefined;
  const tokens = (data as { tokens?: unknown }).tokens;
  if (tokens === undefined || tokens === null) return {};
  return typeof tokens === 'object' && !Array.isArray(tokens) ? (tokens as Record<string, unknown>) : undefined;
}

describe('random store file contents', () => {
  it('documented exit codes, no stack trace, and a file is never rewritten or wiped unless valid and meant to change', async () => {
    const tally = { runs: 0, unchanged: 0, changedAsMeant: 0, codes: {} as Record<number, number> };
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...TARGETS).chain((target) => fc.tuple(fc.constant(target), contents(target))),
        fc.nat({ max: COMMANDS.length - 1 }),
        async ([target, text], pick) => {
          const dir = tempDir();
          cpSync(template, dir, { recursive: true });
          const file = fileOf(dir, target);
          writeFileSync(file, text);
          const before = readFileSync(file);
          const argv = COMMANDS[pick]!(docs, hashes);
          const result = await runMain(argv, envOf(dir));
          tally.runs += 1;
          tally.codes[result.code ?? -1] = (tally.codes[result.code ?? -1] ?? 0) + 1;
          expectWellBehaved(result, argv);
          if (result.code === 2 && result.stderr.includes('is damaged')) {
            expect(result.stderr).toContain(file);
          }
          if (!existsSync(file)) {
            // Only a pending session goes away: into the ledger, or kept aside
            // in retired/ when the service said it already has the hash (409).
            expect(target, describeRun(result)).toBe('pending');
            const paths = storePaths(dir, sandbox.url);
            expect(existsSync(paths.ledger(hashes.p)) || paths.retired(hashes.p), describeRun(result)).toBe(true);
            tally.changedAsMeant += 1;
            return;
          }
          const after = readFileSync(file);
          if (after.equals(before)) {
            tally.unchanged += 1;
            return;
          }
          // Only the token file is rewritten (a login, a logout), from a readable
          // one, keeping every other service's token.
          expect(target, describeRun(result)).toBe('credentials');
          const old = tokensOf(before.toString());
          expect(old, `rewrote ${before.toString()}`).toBeDefined();
          const now = tokensOf(after.toString())!;
          for (const [url, token] of Object.entries(old!)) if (url !== sandbox.url) expect(now[url]).toEqual(token);
          tally.changedAsMeant += 1;
        },
      ),
      settings(200),
    );
    console.log(`store fuzz: ${JSON.stringify(tally)}`);
  }, 180_000);
});

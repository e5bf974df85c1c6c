/**
 * Issue 3, "Bad input, fuzzed": random command lines (real commands and
 * flags mixed with hashes, paths, numbers, URLs and random text of any kind)
 * run in-process against the sandbox. Every run exits with a documented
 * code, prints no stack trace, and leaves a pre-existing pending session and
 * ledger record exactly as they were.
 */
import fc from 'fast-check';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditSecrets } from '../helpers/audit.js';
import { describeRun } from '../helpers/cli.js';
import { makeDocument } from '../helpers/documents.js';
import { cliEnv } from '../helpers/env.js';
import { anyText, expectWellBehaved, hex64, jsonText, settings } from '../helpers/fuzz.js';
import { runMain } from '../helpers/main.js';
import { useSandboxes, type TestSandbox } from '../helpers/sandbox.js';
import { storePaths } from '../helpers/store.js';
import { useTempDirs } from '../helpers/temp-dirs.js';
import { readFixture } from '../helpers/fixtures.js';

auditSecrets();
const tempDir = useTempDirs();
const newSandbox = useSandboxes();
const SESSION = readFixture('session-free-plan.json');

// Commands and flags of the CLI. `sandbox` is left out on purpose: it serves until a signal.
// So is --recursive: a random path could make it walk the whole disk.
const COMMANDS = [
  'register',
  'complete',
  'pending',
  'login',
  'logout',
  'config',
  'hash',
  'verify',
  'list',
  'show',
  'completion',
  'help',
];
const SUBWORDS = ['get', 'set', 'unset', 'list', 'path', 'baseUrl', 'timeout', 'retries', 'bash', 'zsh', 'fish'];
const FLAGS = [
  '--json',
  '--quiet',
  '-q',
  '--verbose',
  '--help',
  '-h',
  '--version',
  '-V',
  '--no-complete',
  '--force',
  '--custody',
  '--signed',
  '--hash',
  '--description',
  '-d',
  '--blockchain',
  '--wallet-name',
  '--session',
  '--use-active-subscription',
  '--timeout',
  '--retries',
  '--base-url',
  '--api-key-stdin',
  '--concurrency',
  '-j',
  '--fail-fast',
  '--receipt-dir',
  '--files-from',
  '-0',
  '--include',
  '--exclude',
  '--',
  '-',
];

let sandbox: TestSandbox;
let configDir: string;
let env: NodeJS.ProcessEnv;
let pendingFile: string;
let ledgerFile: string;
let pendingBytes: Buffer;
let ledgerBytes: Buffer;
let urls: string[];
let docPath: string;
let recordedPath: string;
let docsDir: string;
let pendingHash: string;
let recordedHash: string;
let docHash: string;
const cwd = process.cwd();

beforeAll(async () => {
  sandbox = await newSandbox();
  configDir = tempDir();
  const docs = tempDir();
  // Relative paths in random command lines land in a scratch directory, never in the repository.
  process.chdir(docs);
  env = cliEnv(configDir, {
    NOTARIZE_BASE_URL: sandbox.url,
    NOTARIZE_API_KEY: sandbox.apiKey,
    NOTARIZE_RETRY_DELAY_MS: '1',
    NOTARIZE_TIMEOUT: '3000',
    NOTARIZE_RETRIES: '1',
  });
  const doc = makeDocument(docs, 'doc.txt');
  const recorded = makeDocument(docs, 'recorded.txt');
  const done = await runMain(['register', recorded.path], env);
  expect(done.code, describeRun(done)).toBe(0);
  // A pending session the sandbox never issued: completing it is refused, so it must stay.
  pendingHash = 'f'.repeat(64);
  const paths = storePaths(configDir, sandbox.url);
  mkdirSync(paths.pendingDir, { recursive: true, mode: 0o700 });
  pendingFile = paths.pending(pendingHash);
  writeFileSync(
    pendingFile,
    `${JSON.stringify({ schemaVersion: 1, hash: pendingHash, description: 'kept', custody: false, savedAt: new Date().toISOString(), sessionJson: SESSION }, null, 2)}\n`,
  );
  ledgerFile = paths.ledger(recorded.hash);
  pendingBytes = readFileSync(pendingFile);
  ledgerBytes = readFileSync(ledgerFile);
  docPath = doc.path;
  recordedPath = recorded.path;
  docsDir = docs;
  recordedHash = recorded.hash;
  docHash = doc.hash;
  urls = [
    sandbox.url,
    'http://127.0.0.1:9',
    'ftp://127.0.0.1',
    'http://example.com',
    'https://user:pw@example.invalid',
    'nope',
  ];
});

afterAll(() => {
  process.chdir(cwd);
});

/** A value of one kind, drawn from the known values and from random ones. */
function value(kind: 'doc' | 'hash' | 'text' | 'num' | 'url' | 'setting' | 'any'): fc.Arbitrary<string> {
  const known = (names: string[]) => fc.constantFrom(...names);
  switch (kind) {
    case 'doc':
      return fc.oneof(
        known([docPath, recordedPath, '-', 'missing.txt', '.', docsDir, pendingFile, 'doc.txt']),
        safeText,
      );
    case 'hash':
      return fc.oneof(
        known([pendingHash, recordedHash, docHash, pendingHash.toUpperCase(), ` ${docHash} `]),
        hex64,
        safeText,
      );
    case 'text':
      return anyText;
    case 'num':
      return fc.oneof(
        { weight: 4, arbitrary: known(['0', '1', '2', '3', '2000']) },
        { weight: 1, arbitrary: known(['-1', 'abc', '99999999', '1e3', '2.5', '']) },
      );
    case 'url':
      return fc.oneof({ weight: 3, arbitrary: known([urls[0]!]) }, { weight: 2, arbitrary: known(urls) });
    case 'setting':
      return known(['baseUrl', 'timeout', 'retries', 'nope', '']);
    case 'any':
      return fc.oneof(value('doc'), value('hash'), value('num'), value('url'), anyText);
  }
}

/** Random text, but never a flag (those come from the list), an absolute path, `..` or `sandbox`. */
const safeText = anyText.filter((s) => !/^[-/~]/.test(s) && !s.includes('..') && s.trim() !== 'sandbox');

type Part = string | fc.Arbitrary<string>;
const TEMPLATES: Part[][] = [
  ['register', 'doc'],
  ['register', 'doc', '--no-complete'],
  ['register', 'doc', '--custody', '--wallet-name', 'text'],
  ['register', 'doc', '--force', '--signed'],
  ['register', 'doc', 'doc', '-j', 'num'],
  ['register', '--hash', 'hash', '-d', 'text'],
  ['register', '--hash', 'hash', '--force', '-d', 'text'],
  ['register', '-', '-d', 'text'],
  ['register', 'doc', '--blockchain', 'text'],
  ['register', 'doc', '--receipt-dir', 'text'],
  ['register', '--files-from', '-'],
  ['complete', 'hash'],
  ['complete', 'hash', '--session', '-'],
  ['complete', 'hash', '--session', 'doc'],
  ['complete', 'hash', '--use-active-subscription'],
  ['complete', 'hash', '--session', '-', '--use-active-subscription'],
  ['pending'],
  ['login'],
  ['login', '--api-key-stdin'],
  ['logout'],
  ['config', 'get', 'setting'],
  ['config', 'set', 'setting', 'any'],
  ['config', 'unset', 'setting'],
  ['config', 'list'],
  ['config', 'path'],
  ['hash', 'doc'],
  ['verify', 'doc'],
  ['show', 'hash'],
  ['list'],
  ['completion', 'text'],
];
const KINDS = new Set(['doc', 'hash', 'text', 'num', 'url', 'setting', 'any']);

/** Command lines; built once the store exists, since they use its paths. */
function commandLines() {
  /** A global flag, with its value when it takes one. */
  const globalFlag = fc.oneof(
    fc.constant(['--json']),
    fc.constant(['--quiet']),
    fc.constant(['--verbose']),
    value('num').map((n) => ['--timeout', n]),
    value('num').map((n) => ['--retries', n]),
    value('url').map((u) => ['--base-url', u]),
  );

  /** A command line built from a real command's shape, with global flags and a little noise. */
  const structured = fc
    .tuple(
      fc
        .constantFrom(...TEMPLATES)
        .chain((parts) =>
          fc.tuple(
            ...parts.map((p) => (typeof p === 'string' && KINDS.has(p) ? value(p as 'doc') : fc.constant(p as string))),
          ),
        ),
      fc.array(globalFlag, { maxLength: 3 }),
      // A little noise now and then: a stray flag or value.
      fc.oneof(
        { weight: 5, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: fc.oneof(fc.constantFrom(...FLAGS), value('any')) },
      ),
      fc.boolean(),
    )
    .map(([command, flags, noise, flagsFirst]) => {
      const global = flags.flat();
      return [
        ...(flagsFirst ? global : []),
        ...command,
        ...(flagsFirst ? [] : global),
        ...(noise === undefined ? [] : [noise]),
      ];
    });

  /** Any mix of commands, flags and values, in any order. */
  const unstructured = fc.array(
    fc.oneof(fc.constantFrom(...COMMANDS), fc.constantFrom(...SUBWORDS), fc.constantFrom(...FLAGS), value('any')),
    { maxLength: 8 },
  );

  return fc.record({
    argv: fc.oneof({ weight: 3, arbitrary: structured }, { weight: 1, arbitrary: unstructured }),
    stdin: fc.oneof(fc.constant(''), fc.constant(SESSION), jsonText, anyText),
  });
}

describe('random command lines', () => {
  it('exit with a documented code, print no stack trace, and never change a pending session or a record', async () => {
    let ran = 0;
    const codes = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(commandLines(), async ({ argv, stdin }) => {
        // Each run starts from the same files, so that a failure shrinks to the run that caused it.
        writeFileSync(pendingFile, pendingBytes);
        writeFileSync(ledgerFile, ledgerBytes);
        const result = await runMain(argv, env, { input: stdin });
        ran += 1;
        codes.set(result.code ?? -1, (codes.get(result.code ?? -1) ?? 0) + 1);
        expectWellBehaved(result, argv);
        expect(readFileSync(pendingFile)).toEqual(pendingBytes);
        expect(readFileSync(ledgerFile)).toEqual(ledgerBytes);
      }),
      settings(300),
    );
    console.log(`argv fuzz: ${ran} command lines, exit codes ${JSON.stringify(Object.fromEntries(codes))}`);
    // The runs reached past option parsing, not only usage errors.
    expect(codes.get(0) ?? 0).toBeGreaterThan(0);
  }, 180_000);
});

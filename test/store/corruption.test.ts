/**
 * Issue 3, "Corruption": a truncated or hand-edited store file gives an error
 * naming the file and how to fix it; the file's bytes are never changed; the
 * commands that do not need that file keep working.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { auditSecrets } from '../helpers/audit.js';
import { runCli, describeRun, STACK_LINE, type Run } from '../helpers/cli.js';
import { makeDocument } from '../helpers/documents.js';
import { cliEnv, NO_REMOTE_TRAFFIC } from '../helpers/env.js';
import { runMain } from '../helpers/main.js';
import { callsTo, useSandboxes, type TestSandbox } from '../helpers/sandbox.js';
import { ledgerHashes, listTree, pendingHashes, storePaths } from '../helpers/store.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

auditSecrets();
const tempDir = useTempDirs();
const newSandbox = useSandboxes();
let sandbox: TestSandbox;

beforeAll(async () => {
  sandbox = await newSandbox();
});

/** A store with one pending session (P), one ledger record (L) and a token; and a fresh document (N). */
async function store() {
  const configDir = tempDir();
  const docs = tempDir();
  const env = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey });
  const p = makeDocument(docs, 'p.txt');
  const l = makeDocument(docs, 'l.txt');
  const n = makeDocument(docs, 'n.txt');
  const q = makeDocument(docs, 'q.txt');
  for (const args of [
    ['register', p.path, '--no-complete'],
    ['register', q.path, '--no-complete'],
    ['register', l.path],
  ]) {
    const result = await runMain(args, env);
    expect(result.code, describeRun(result)).toBe(0);
  }
  return { configDir, env, p, l, n, q, paths: storePaths(configDir, sandbox.url) };
}

/** Ways a hand or a crash can damage a JSON store file, from its valid text. */
const DAMAGES: { name: string; damage: (valid: string) => string }[] = [
  { name: 'truncated', damage: (valid) => valid.slice(0, Math.floor(valid.length / 2)) },
  { name: 'empty', damage: () => '' },
  { name: 'not JSON', damage: () => 'this is not JSON\n' },
  { name: 'a JSON array', damage: () => '[1, 2, 3]\n' },
  {
    name: 'a field removed',
    damage: (valid) => JSON.stringify({ ...(JSON.parse(valid) as object), schemaVersion: undefined, hash: undefined }),
  },
  {
    name: 'the answer text hand-edited into non-JSON',
    damage: (valid) => {
      const entry = JSON.parse(valid) as Record<string, unknown>;
      for (const key of ['sessionJson', 'recordJson']) if (key in entry) entry[key] = '{"sessionId": "1", oops';
      return JSON.stringify(entry, null, 2);
    },
  },
  {
    name: 'the hash of another entry',
    damage: (valid) => JSON.stringify({ ...(JSON.parse(valid) as object), hash: 'a'.repeat(64) }),
  },
];

function damaged(file: string, damage: (valid: string) => string): Buffer {
  const bytes = Buffer.from(damage(readFileSync(file, 'utf8')));
  writeFileSync(file, bytes);
  return bytes;
}

function expectNamed(result: Run, file: string, refusedSetting?: string): void {
  expect(result.code, describeRun(result)).toBe(2);
  if (refusedSetting === undefined) {
    expect(result.stderr).toContain(`store file ${file} is damaged`);
    expect(result.stderr).toMatch(/leaves it untouched: repair it by hand/);
  } else {
    // One value this notarize refuses is mended by the config command, not by moving the file aside (r99).
    expect(result.stderr).toContain(`store file ${file} holds a setting notarize refuses: `);
    expect(result.stderr).toContain(
      `\`notarize config set ${refusedSetting} <value>\` replaces it, \`notarize config unset ${refusedSetting}\` removes it`,
    );
  }
  expect(result.stderr).not.toMatch(STACK_LINE);
}

describe.each(DAMAGES)('a pending session file: $name', ({ damage }) => {
  it('register/complete of that hash: exit 2 naming the file, nothing sent, bytes unchanged; the rest works', async () => {
    const s = await store();
    const file = s.paths.pending(s.p.hash);
    const bytes = damaged(file, damage);
    const before = sandbox.calls.length;

    for (const args of [
      ['register', s.p.path],
      ['register', s.p.path, '--force'],
      ['register', '--hash', s.p.hash, '-d', 'again', '--json'],
      ['complete', s.p.hash],
      ['complete', s.p.hash, '--session', '-'],
    ]) {
      const otherSession = (JSON.parse(readFileSync(s.paths.pending(s.q.hash), 'utf8')) as { sessionJson: string })
        .sessionJson;
      const result = await runMain(args, s.env, { input: otherSession });
      expectNamed(result, file);
      expect(readFileSync(file)).toEqual(bytes);
    }
    expect(callsTo(sandbox.calls.slice(before), 'request', s.p.hash)).toEqual([]);
    expect(callsTo(sandbox.calls.slice(before), 'forfait', s.p.hash)).toEqual([]);

    // `pending` lists the good one and warns about the damaged one, naming it; exit 2: not the whole list.
    const listing = await runMain(['pending', '--json'], s.env);
    expect(listing.code, describeRun(listing)).toBe(2);
    expect((JSON.parse(listing.stdout) as { hash: string }[]).map((e) => e.hash)).toEqual([s.q.hash]);
    expect(listing.stderr).toContain(`warning: store file ${file} is damaged`);
    // Other hashes register and complete as usual.
    for (const args of [
      ['register', s.n.path],
      ['complete', s.q.hash],
      ['register', s.l.path],
    ]) {
      const result = await runMain(args, s.env);
      expect(result.code, describeRun(result)).toBe(0);
    }
    expect(readFileSync(file)).toEqual(bytes);
    expect(ledgerHashes(s.configDir, sandbox.url).sort()).toEqual([s.l.hash, s.n.hash, s.q.hash].sort());
    // With the damaged one left alone, `pending` does not say there is none.
    const alone = await runMain(['pending'], s.env);
    expect(alone.code, describeRun(alone)).toBe(2);
    expect(alone.stderr).toContain('no readable pending registrations (see the warnings above)');
    expect(alone.stderr).not.toMatch(/^no pending registrations/m);
  });
});

describe.each(DAMAGES)('a ledger record file: $name', ({ damage }) => {
  it('register/complete of that hash: exit 2 naming the file, bytes unchanged; the rest works', async () => {
    const s = await store();
    const file = s.paths.ledger(s.l.hash);
    const bytes = damaged(file, damage);
    const before = sandbox.calls.length;
    for (const args of [
      ['register', s.l.path],
      ['register', s.l.path, '--force'],
      ['complete', s.l.hash],
    ]) {
      const result = await runMain(args, s.env);
      expectNamed(result, file);
    }
    expect(sandbox.calls.length).toBe(before);
    for (const args of [['pending'], ['register', s.n.path], ['complete', s.p.hash]]) {
      const result = await runMain(args, s.env);
      expect(result.code, describeRun(result)).toBe(0);
    }
    expect(readFileSync(file)).toEqual(bytes);
  });
});

describe('the settings file (config.json)', () => {
  // The base URL is never left to its default here: no test may reach the real service.
  const cases = [
    {
      name: 'truncated',
      text: () => '{"timeout": "100',
      failing: [
        ['register', 'N'],
        ['pending'],
        ['config', 'list'],
        ['config', 'get', 'timeout'],
        ['config', 'set', 'retries', '2'],
        ['logout'],
      ],
      working: [
        ['config', 'path'],
        ['pending', '--base-url', 'URL', '--timeout', '5000', '--retries', '1'],
      ],
    },
    {
      name: 'a JSON array',
      text: () => '["baseUrl"]',
      failing: [['register', 'N'], ['pending'], ['config', 'list'], ['config', 'unset', 'timeout']],
      working: [
        ['config', 'path'],
        ['register', 'N', '--base-url', 'URL', '--timeout', '5000', '--retries', '1'],
      ],
    },
    {
      name: 'a setting of the wrong type',
      text: (url: string) => JSON.stringify({ baseUrl: url, timeout: 5000 }),
      refused: 'timeout',
      failing: [
        ['register', 'N'],
        ['config', 'list'],
        ['config', 'get', 'timeout'],
      ],
      working: [['pending'], ['register', 'N', '--timeout', '5000']],
    },
    {
      // JSON.parse would keep the second; a rewrite (config set) would then lose the first for good.
      name: 'a key twice',
      text: (url: string) => `{"baseUrl": "${url}", "retries": "3", "retries": "1"}`,
      failing: [['pending'], ['config', 'list'], ['config', 'set', 'timeout', '5000']],
      working: [['config', 'path']],
    },
    {
      name: 'an unsafe base URL',
      text: () => JSON.stringify({ baseUrl: 'http://example.com' }),
      refused: 'baseUrl',
      failing: [['register', 'N'], ['pending'], ['config', 'list'], ['config', 'get', 'baseUrl']],
      working: [
        ['pending', '--base-url', 'URL'],
        ['config', 'get', 'timeout'],
      ],
    },
  ];

  it.each(cases)('$name: the commands that read it fail naming it, the others work; never rewritten', async (c) => {
    const s = await store();
    const file = join(s.configDir, 'config.json');
    const text = c.text(sandbox.url);
    writeFileSync(file, text);
    const env = { ...s.env, ...NO_REMOTE_TRAFFIC, NOTARIZE_BASE_URL: undefined };
    const options = { noBaseUrlCheck: true };
    const expand = (args: string[]) => args.map((a) => (a === 'N' ? s.n.path : a === 'URL' ? sandbox.url : a));
    for (const args of c.failing) expectNamed(await runMain(expand(args), env, options), file, c.refused);
    for (const args of c.working) {
      const result = await runMain(expand(args), env, options);
      expect(result.code, describeRun(result)).toBe(0);
    }
    expect(readFileSync(file, 'utf8')).toBe(text);
  });
});

describe('the credentials file (credentials.json)', () => {
  it.each([
    { name: 'truncated', text: '{"tokens": {"http' },
    { name: 'not an object', text: '"a token"' },
    { name: 'tokens of the wrong type', text: '{"tokens": ["x"]}' },
  ])(
    '$name: commands that need it fail naming it, before sending; the others work; never rewritten',
    async ({ text }) => {
      const s = await store();
      const file = join(s.configDir, 'credentials.json');
      writeFileSync(file, text);
      const before = sandbox.calls.length;
      for (const args of [['register', s.n.path], ['complete', s.p.hash], ['logout']]) {
        const result = await runMain(args, s.env);
        expectNamed(result, file);
      }
      expect(sandbox.calls.length).toBe(before);
      for (const args of [['pending'], ['pending', '--json'], ['config', 'list']]) {
        const result = await runMain(args, s.env);
        expect(result.code, describeRun(result)).toBe(0);
      }
      expect(readFileSync(file, 'utf8')).toBe(text);
    },
  );

  it('with NOTARIZE_TOKEN, registering does not need the file: it works and leaves it as it is', async () => {
    const s = await store();
    const tokens = JSON.parse(readFileSync(join(s.configDir, 'credentials.json'), 'utf8')) as {
      tokens: Record<string, string>;
    };
    const file = join(s.configDir, 'credentials.json');
    writeFileSync(file, '{"tokens": {');
    const env = { ...s.env, NOTARIZE_API_KEY: undefined, NOTARIZE_TOKEN: tokens.tokens[sandbox.url]! };
    const result = await runMain(['register', s.n.path], env);
    expect(result.code, describeRun(result)).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe('{"tokens": {');
  });
});

describe('a damaged store seen by real processes', () => {
  it('a truncated pending file: `register` of its hash exits 2 naming it; `pending` warns, lists the rest, exits 2', async () => {
    const s = await store();
    const file = s.paths.pending(s.p.hash);
    const bytes = damaged(file, (valid) => valid.slice(0, 40));
    const blocked = await runCli(['register', s.p.path], s.env);
    expectNamed(blocked, file);
    const listing = await runCli(['pending'], s.env);
    expect(listing.code, describeRun(listing)).toBe(2);
    expect(listing.stdout).toContain(s.q.hash);
    expect(listing.stderr).toContain(`warning: store file ${file} is damaged`);
    const other = await runCli(['register', s.n.path], s.env);
    expect(other.code, describeRun(other)).toBe(0);
    expect(readFileSync(file)).toEqual(bytes);
    expect(pendingHashes(s.configDir, sandbox.url).sort()).toEqual([s.p.hash, s.q.hash].sort());
  });
});

describe('a full disk (a file size limit) when an answer must be saved', () => {
  // Quotes double in size at each level of JSON: the pending entry fits under
  // the limit, the ledger entry (the record's text inside JSON) does not.
  const description = '"'.repeat(1500);

  it('the session cannot be saved: exit 1, no truncated file, the session quoted; it completes from the quote', async () => {
    const configDir = tempDir();
    const doc = makeDocument(tempDir(), 'full.txt');
    const token = await runMain(
      ['login', '--json'],
      cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey }),
    );
    expect(token.code, describeRun(token)).toBe(0);
    const env = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url });
    const result = await runCli(['register', doc.path, '-d', description], env, { shell: 'ulimit -f 2' });
    expect(result.code, describeRun(result)).toBe(1);
    expect(result.stderr).toContain(`the session for ${doc.hash} could not be saved`);
    expect(result.stderr).toContain(`notarize complete ${doc.hash} --session <file>`);
    expect(pendingHashes(configDir, sandbox.url)).toEqual([]);
    expect(listTree(configDir).filter((f) => f.path.endsWith('.tmp'))).toEqual([]);
    expect(callsTo(sandbox.calls, 'forfait', doc.hash)).toEqual([]);
    // The session quoted in the message is all it takes to finish.
    const quoted = /the session the service sent: (\{.*\})\)\s*$/.exec(result.stderr)?.[1];
    expect(quoted).toBeDefined();
    const finish = await runMain(['complete', doc.hash, '--session', '-'], env, { input: quoted! });
    expect(finish.code, describeRun(finish)).toBe(0);
    expect(ledgerHashes(configDir, sandbox.url)).toEqual([doc.hash]);
  });

  it('the record cannot be saved: exit 1, the session stays pending, the record quoted', async () => {
    const configDir = tempDir();
    const doc = makeDocument(tempDir(), 'full2.txt');
    const env = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey });
    const login = await runMain(['login'], env);
    expect(login.code, describeRun(login)).toBe(0);
    const result = await runCli(['register', doc.path, '-d', description], env, { shell: 'ulimit -f 5' });
    expect(result.code, describeRun(result)).toBe(1);
    expect(result.stderr).toContain(`the registration of ${doc.hash} was completed, but its record could not be saved`);
    expect(result.stderr).toContain('"status":"registered"');
    expect(pendingHashes(configDir, sandbox.url)).toEqual([doc.hash]);
    expect(ledgerHashes(configDir, sandbox.url)).toEqual([]);
    expect(listTree(configDir).filter((f) => f.path.endsWith('.tmp'))).toEqual([]);
  });

  it('a disk that refuses every write: a registered document still answers; logout and config set are exit 2', async () => {
    const configDir = tempDir();
    const doc = makeDocument(tempDir(), 'refusing.txt');
    const env = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey });
    expect((await runMain(['register', doc.path, '--quiet'], env)).code).toBe(0);
    const calls = sandbox.calls.length;
    // ulimit -f 0: no byte written anywhere (a full or read-only disk, as the store sees it).
    const again = await runCli(['register', doc.path, '--output', 'ndjson'], env, { shell: 'ulimit -f 0' });
    expect(again.code, describeRun(again)).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ hash: doc.hash, status: 'already-registered' });
    for (const args of [['logout'], ['config', 'set', 'timeout', '5000']]) {
      const refused = await runCli(args, env, { shell: 'ulimit -f 0' });
      expect(refused.code, describeRun(refused)).toBe(2);
      expect(refused.stderr).toMatch(
        /^notarize: a file size limit \(ulimit -f\) stops writes in .*; nothing was sent \(raise the limit/,
      );
      expect(refused.stderr).not.toMatch(STACK_LINE);
    }
    expect(sandbox.calls.length).toBe(calls);
  });
});

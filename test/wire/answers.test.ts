/**
 * Issue 3, "Answers the client cannot trust": wrong shapes, HTML and
 * truncated bodies give exit 5 naming the field where there is one; unknown
 * extra fields are kept in what is stored, sent back and printed; a huge or
 * endless body is cut off without being read to its end.
 */
import { describe, expect, it } from 'vitest';
import type { Fault } from '../../src/sandbox/server.js';
import { auditSecrets } from '../helpers/audit.js';
import { describeRun } from '../helpers/cli.js';
import { makeDocument } from '../helpers/documents.js';
import { cliEnv, type EnvVars } from '../helpers/env.js';
import { startFakeService, type FakeService } from '../helpers/local-server.js';
import { runMain } from '../helpers/main.js';
import { callsTo, handMadeJwt, useSandboxes } from '../helpers/sandbox.js';
import { ledgerHashes, pendingHashes, readJson, storePaths } from '../helpers/store.js';
import { useTempDirs } from '../helpers/temp-dirs.js';
import { readFixture } from '../helpers/fixtures.js';

auditSecrets();
const tempDir = useTempDirs();
const newSandbox = useSandboxes();

async function withFaults(faults: Fault[]) {
  const sandbox = await newSandbox({ faults });
  const configDir = tempDir();
  const doc = makeDocument(tempDir(), 'doc.txt');
  const env = cliEnv(configDir, { NOTARIZE_BASE_URL: sandbox.url, NOTARIZE_API_KEY: sandbox.apiKey });
  return { sandbox, configDir, doc, env };
}

describe('malformed answers from the sandbox: exit 5, the field named, nothing lost', () => {
  it.each([
    { route: 'login', kind: 'wrong-shape', field: /token/ },
    // A page is someone else's answer; JSON cut short is not "the service may be down".
    {
      route: 'login',
      kind: 'html',
      field: /not JSON \(it looks like an HTML page\) \(the service may be down or behind a proxy/,
    },
    {
      route: 'login',
      kind: 'truncated',
      field: /not JSON \(\d+ bytes\) \(the answer may have been cut short on its way/,
    },
    // (the request step's hint says what became of the session instead)
    { route: 'request', kind: 'html', field: /not JSON \(it looks like an HTML page\)/ },
    { route: 'request', kind: 'truncated', field: /not JSON \(\d+ bytes\)/ },
  ])(
    '$route: $kind -> exit 5 ($field), no session saved, a re-run succeeds (after an unread request step: asked with --force)',
    async ({ route, kind, field }) => {
      const t = await withFaults([{ route, kind, count: 1 } as Fault]);
      const result = await runMain(['register', t.doc.path], t.env);
      expect(result.code, describeRun(result)).toBe(5);
      expect(result.stderr).toMatch(field);
      expect(pendingHashes(t.configDir, t.sandbox.url)).toEqual([]);
      expect(callsTo(t.sandbox.calls, 'forfait')).toHaveLength(0);
      if (route === 'request') {
        // The service said 2xx: a plain re-run does not request again on its own.
        const refused = await runMain(['register', t.doc.path], t.env);
        expect(refused.code, describeRun(refused)).toBe(5);
        expect(refused.stderr).toMatch(/does not request it again on its own/);
        expect(callsTo(t.sandbox.calls, 'request')).toHaveLength(1);
      }
      const again = await runMain(['register', t.doc.path, ...(route === 'request' ? ['--force'] : [])], t.env);
      expect(again.code, describeRun(again)).toBe(0);
      expect(ledgerHashes(t.configDir, t.sandbox.url)).toEqual([t.doc.hash]);
    },
  );

  it('request: wrong-shape -> exit 5 naming userId; the object is kept as pending, exactly as sent', async () => {
    const t = await withFaults([{ route: 'request', kind: 'wrong-shape', count: 1 }]);
    const result = await runMain(['register', t.doc.path], t.env);
    expect(result.code, describeRun(result)).toBe(5);
    expect(result.stderr).toMatch(/userId/);
    expect(result.stderr).toMatch(/kept as pending/);
    expect(pendingHashes(t.configDir, t.sandbox.url)).toEqual([t.doc.hash]);
    const kept = readJson(storePaths(t.configDir, t.sandbox.url).pending(t.doc.hash)) as { sessionJson: string };
    expect(JSON.parse(kept.sessionJson)).toMatchObject({ userId: '1390' });
    expect(callsTo(t.sandbox.calls, 'forfait')).toHaveLength(0);
    // Never sent on its own: not by a re-run of register, not by complete --all (exit 5 both, nothing sent).
    for (const args of [
      ['register', t.doc.path],
      ['complete', '--all', '--json'],
    ]) {
      const refused = await runMain(args, t.env);
      expect(refused.code, describeRun(refused)).toBe(5);
      const said = `${refused.stdout}${refused.stderr}`;
      expect(said).toMatch(/is not of the shape the service documents; notarize does not send it on its own/);
      expect(said).toContain(`notarize complete ${t.doc.hash}\` sends it back as received`);
    }
    expect(callsTo(t.sandbox.calls, 'forfait')).toHaveLength(0);
    const listed = await runMain(['pending', '--json'], t.env);
    expect(JSON.parse(listed.stdout)).toMatchObject([{ hash: t.doc.hash, state: 'unexpected-shape' }]);
    // Named, it is sent back exactly as received (the sandbox refuses a userId of the wrong type: 400, exit 1).
    const named = await runMain(['complete', t.doc.hash], t.env);
    expect(named.code, describeRun(named)).toBe(1);
    const sent = callsTo(t.sandbox.calls, 'forfait');
    expect(sent).toHaveLength(1);
    expect(sent[0]!.body).toBe(kept.sessionJson);
  });

  it('forfait: wrong-shape -> exit 5 naming creationDate; kept aside, never in the ledger, never re-sent on its own', async () => {
    const t = await withFaults([{ route: 'forfait', kind: 'wrong-shape', count: 1 }]);
    const result = await runMain(['register', t.doc.path], t.env);
    expect(result.code, describeRun(result)).toBe(5);
    expect(result.stderr).toMatch(/creationDate/);
    expect(ledgerHashes(t.configDir, t.sandbox.url)).toEqual([]);
    expect(pendingHashes(t.configDir, t.sandbox.url)).toEqual([t.doc.hash]);
    const again = await runMain(['register', t.doc.path], t.env);
    expect(again.code, describeRun(again)).toBe(5);
    expect(again.stderr).toMatch(/does not send it again on its own/);
    expect(callsTo(t.sandbox.calls, 'forfait')).toHaveLength(1);
  });

  it('forfait: html (not processed) -> exit 5, session pending, `complete` finishes it', async () => {
    const t = await withFaults([{ route: 'forfait', kind: 'html', count: 1 }]);
    const result = await runMain(['register', t.doc.path], t.env);
    expect(result.code, describeRun(result)).toBe(5);
    expect(result.stderr).toMatch(/not JSON/);
    expect(result.stderr).toContain(`notarize complete ${t.doc.hash}`);
    expect(pendingHashes(t.configDir, t.sandbox.url)).toEqual([t.doc.hash]);
    const again = await runMain(['complete', t.doc.hash], t.env);
    expect(again.code, describeRun(again)).toBe(0);
    expect(ledgerHashes(t.configDir, t.sandbox.url)).toEqual([t.doc.hash]);
  });

  it('forfait: truncated (processed) -> exit 5, session pending, the message says it may be completed', async () => {
    const t = await withFaults([{ route: 'forfait', kind: 'truncated', count: 1 }]);
    const result = await runMain(['register', t.doc.path], t.env);
    expect(result.code, describeRun(result)).toBe(5);
    expect(result.stderr).toMatch(/may have completed it/);
    expect(result.stderr).toContain(`/verification/${t.doc.hash}`);
    expect(pendingHashes(t.configDir, t.sandbox.url)).toEqual([t.doc.hash]);
    expect(callsTo(t.sandbox.calls, 'forfait')).toHaveLength(1);
  });

  it.each(['login', 'request', 'forfait'])(
    '%s: a 1 GiB answer is cut off at 4 MiB (exit 5) without being read to its end',
    async (route) => {
      const t = await withFaults([{ route, kind: 'huge', count: 1 } as Fault]);
      if (route === 'forfait') {
        const saved = await runMain(['register', t.doc.path, '--no-complete'], t.env);
        expect(saved.code, describeRun(saved)).toBe(0);
      }
      const result = await runMain(route === 'forfait' ? ['complete', t.doc.hash] : ['register', t.doc.path], t.env);
      expect(result.code, describeRun(result)).toBe(5);
      expect(result.stderr).toMatch(/larger than 4 MiB/);
      // Reading 1 GiB through the sandbox takes far longer than this.
      expect(result.ms).toBeLessThan(30_000);
      if (route === 'forfait') expect(pendingHashes(t.configDir, t.sandbox.url)).toEqual([t.doc.hash]);
    },
  );
});

describe('answers from a stand-in service', () => {
  const session = readFixture('session-quirks.json');
  const record = (hash: string) =>
    readFixture('record.json')
      .replace(/"hash": "[0-9a-f]{64}"/, `"hash": "${hash}"`)
      .replace(/\}\s*$/, ',\n  "zzUnknown": {"kept": [1, "two", null]}\n}\n');

  /**
   * A stand-in answering the request step with `answers.session` and forfait
   * with `answers.forfait(hash)`, a store of its own, a token, and a document
   * named `name`: what `use` checks. The stand-in is closed after.
   */
  async function withStandIn(
    answers: { session?: string; forfait: (hash: string) => string | Buffer },
    name: string,
    use: (bed: {
      fake: FakeService;
      configDir: string;
      doc: ReturnType<typeof makeDocument>;
      env: EnvVars;
    }) => Promise<void>,
  ): Promise<void> {
    const fake = await startFakeService((route, req) => {
      if (route === 'request') return { status: 200, body: answers.session ?? session };
      if (route === 'forfait') return { status: 200, body: answers.forfait(req.url.split('/')[4]!) };
      return { status: 404, body: '{}' };
    });
    try {
      const configDir = tempDir();
      const doc = makeDocument(tempDir(), name);
      const env = cliEnv(configDir, {
        NOTARIZE_BASE_URL: fake.url,
        NOTARIZE_TOKEN: handMadeJwt(Date.now() / 1000 + 3600),
      });
      await use({ fake, configDir, doc, env });
    } finally {
      await fake.close();
    }
  }

  it('unknown fields are kept: stored, sent back to forfait byte for byte, stored in the ledger and printed', async () => {
    await withStandIn({ forfait: record }, 'extra.txt', async ({ fake, configDir, doc, env }) => {
      const saved = await runMain(['register', doc.path, '--no-complete', '--json'], env);
      expect(saved.code, describeRun(saved)).toBe(0);
      expect(saved.stdout.trim()).toBe(session.trim());
      const pending = readJson(storePaths(configDir, fake.url).pending(doc.hash)) as { sessionJson: string };
      expect(pending.sessionJson).toBe(session);

      const done = await runMain(['complete', doc.hash, '--json'], env);
      expect(done.code, describeRun(done)).toBe(0);
      expect(fake.received.filter((r) => r.route === 'forfait').map((r) => r.body)).toEqual([session]);
      expect(JSON.parse(done.stdout)).toMatchObject({ zzUnknown: { kept: [1, 'two', null] } });
      const ledger = readJson(storePaths(configDir, fake.url).ledger(doc.hash)) as { recordJson: string };
      expect(ledger.recordJson).toBe(record(doc.hash));

      const shown = await runMain(['register', doc.path], env);
      expect(shown.code, describeRun(shown)).toBe(0);
      expect(shown.stdout).toMatch(/zzUnknown\s+\{"kept":\[1,"two",null\]\}/);
    });
  });

  it('a record with a byte that is not UTF-8 (Latin-1 é) is kept, never lost: exit 0, in the ledger, and said', async () => {
    const latin1 = (hash: string) => {
      const text = record(hash).replace('"description": "', '"description": "caf\u0000');
      return Buffer.from(Buffer.from(text, 'latin1').map((b) => (b === 0 ? 0xe9 : b)));
    };
    await withStandIn({ forfait: latin1 }, 'latin1.txt', async ({ fake, configDir, doc, env }) => {
      const run = await runMain(['register', doc.path, '--json'], env);
      expect(run.code, describeRun(run)).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({
        hash: doc.hash,
        description: expect.stringMatching(/^caf\ufffd/),
      });
      expect(ledgerHashes(configDir, fake.url)).toEqual([doc.hash]);
      expect(run.stderr).toMatch(
        /^warning: POST \S+\/forfait answered 200 with bytes that are not UTF-8, as JSON must be/m,
      );
    });
  });

  it('numbers JSON.parse would change (a uint64 asset id, 1.50) are shown as sent: tables, show, pending --json', async () => {
    const bigSession = session.replace(/\}\s*$/, ',\n  "big": 12345678901234567890123, "escaped": "\\u202e"\n}\n');
    const bigRecord = (hash: string) =>
      record(hash)
        .replace(/"assetId": null/, '"assetId": 18446744073709551615')
        .replace(/\}\s*$/, ', "nested": {"n": 9007199254740993, "price": 1.50}}\n');
    await withStandIn({ session: bigSession, forfait: bigRecord }, 'big.txt', async ({ doc, env }) => {
      const saved = await runMain(['register', doc.path, '--no-complete'], env);
      expect(saved.code, describeRun(saved)).toBe(0);
      expect(saved.stdout).toMatch(/^big\s+12345678901234567890123$/m);
      const pending = await runMain(['pending', '--json'], env);
      expect(pending.stdout).toContain('"big": 12345678901234567890123');
      expect(pending.stdout).toContain('"escaped": "\\u202e"');

      const done = await runMain(['complete', doc.hash], env);
      expect(done.code, describeRun(done)).toBe(0);
      for (const run of [done, await runMain(['show', doc.hash], env)]) {
        expect(run.stdout).toMatch(/^assetId\s+18446744073709551615$/m);
        expect(run.stdout).toMatch(/^nested\s+\{"n":9007199254740993,"price":1\.50\}$/m);
        expect(run.stdout).toMatch(/^creationDate\s+1649855665000 \(2022-04-13T13:14:25\.000Z\)$/m);
      }
    });
  });

  it('a record naming two hashes (one key twice) is set aside: exit 5, not in the ledger, `verify` not verified', async () => {
    const other = 'f'.repeat(64);
    // JSON.parse keeps the last `hash` (the document's); a reader keeping the first sees another document.
    const twice = (hash: string) => `{"hash":"${other}",${record(hash).slice(1)}`;
    await withStandIn({ forfait: twice }, 'twice.txt', async ({ fake, configDir, doc, env }) => {
      const run = await runMain(['register', doc.path], env);
      expect(run.code, describeRun(run)).toBe(5);
      expect(run.stderr).toMatch(/has a key twice in one object/);
      expect(ledgerHashes(configDir, fake.url)).toEqual([]);
      expect(pendingHashes(configDir, fake.url)).toEqual([doc.hash]);
      const verified = await runMain(['verify', doc.path], env);
      expect(verified.code, describeRun(verified)).toBe(6);
    });
  });

  it('a 200 whose endless body trickles in (one byte every 50 ms) is cut off by --timeout: exit 5, never retried, promptly', async () => {
    const fake = await startFakeService(() => (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"padding":"');
      const timer = setInterval(() => res.write('a'), 50);
      res.once('close', () => clearInterval(timer));
    });
    try {
      const doc = makeDocument(tempDir(), 'trickle.txt');
      const env = cliEnv(tempDir(), {
        NOTARIZE_BASE_URL: fake.url,
        NOTARIZE_TOKEN: handMadeJwt(Date.now() / 1000 + 3600),
      });
      const result = await runMain(['register', doc.path, '--timeout', '1000', '--retries', '1'], env);
      // A 2xx is an answer: retrying the request step could open a second session.
      expect(result.code, describeRun(result)).toBe(5);
      expect(result.stderr).toMatch(/answered 200, but its body could not be read/);
      expect(fake.received.filter((r) => r.route === 'request')).toHaveLength(1);
      expect(result.ms).toBeLessThan(30_000);
    } finally {
      await fake.close();
    }
  });
});

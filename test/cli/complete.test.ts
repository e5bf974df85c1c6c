/**
 * runComplete called in process against a sandbox on port 0: a registration
 * left pending is completed and its outcome returned; the hash and the
 * session options are checked before the service (or its base URL) is
 * touched.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { optionsSchema, runComplete, type CompleteOptions } from '../../src/commands/complete.js';
import { present } from '../../src/output/present.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { sha256 } from '../helpers/documents.js';
import { countStatuses, jsonError, parseResults } from '../helpers/results.js';
import { routes } from '../helpers/sandbox.js';
import { contextFor, type TestContext } from '../helpers/context.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

function options(t: TestContext, hash: string, flags: Record<string, unknown> = {}): CompleteOptions {
  const { ctx } = t;
  return {
    ...optionsSchema.parse(flags),
    hash,
    io: ctx.io,
    baseUrl: () => ctx.baseUrl,
    api: () => ctx.api(),
    serviceStore: () => ctx.serviceStore,
  };
}

/** A registration left pending (`register --no-complete`); returns its hash. */
async function pending(content: string): Promise<string> {
  const path = await bed.file('draft.txt', content);
  const run = await bed.main(['register', path, '--no-complete', '--quiet']);
  expect(run.code, run.stderr).toBe(0);
  return sha256(content);
}

const notAsked = () => {
  throw new Error('the base URL must not be asked for');
};

describe('runComplete', () => {
  it('completes the pending session: the completed outcome, the record in the ledger, the session gone', async () => {
    const hash = await pending('draft\n');
    const t = contextFor(bed);
    // Upper case, as a user may paste it: the run normalizes it.
    const result = await runComplete(options(t, hash.toUpperCase()));
    expect(t.stdout()).toBe('');
    expect(result).toMatchObject({ kind: 'outcome', baseUrl: bed.url });
    expect(result.outcome).toMatchObject({ kind: 'completed', reusedSession: true, entry: { hash } });
    expect(result.failure).toBeUndefined();
    expect(bed.ledgerHashes()).toEqual([hash]);
    expect(bed.pendingHashes()).toEqual([]);
    await present({ io: t.io, env: {}, format: 'json' }, result);
    expect(t.stdout()).toBe(`${bed.ledgerEntry(hash).recordJson}\n`);
    expect(t.stderr()).toBe(`registered ${hash} (with the pending session)\n`);
  });

  it('a hash already in the ledger: already registered, nothing sent', async () => {
    const hash = await pending('draft\n');
    await runComplete(options(contextFor(bed), hash));
    const mark = bed.mark();
    const result = await runComplete(options(contextFor(bed), hash));
    expect(result.outcome).toMatchObject({ kind: 'already-registered', hash, entry: { hash } });
    expect(bed.callsSince(mark)).toEqual([]);
  });

  it('no pending session: a usage error naming the hash, nothing sent', async () => {
    const hash = sha256('never registered');
    await expect(runComplete(options(contextFor(bed), hash))).rejects.toMatchObject({
      code: 'no_pending_session',
      exitCode: 2,
      message: `no pending session for ${hash}`,
    });
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('an invalid hash, or both session options, are refused before the base URL is resolved', async () => {
    const t = contextFor(bed);
    await expect(runComplete({ ...options(t, 'not-a-hash'), baseUrl: notAsked })).rejects.toMatchObject({
      exitCode: 2,
    });
    const both = { ...options(t, sha256('x'), { session: 'session.json', useActiveSubscription: true }) };
    await expect(runComplete({ ...both, baseUrl: notAsked })).rejects.toMatchObject({
      exitCode: 2,
      message: 'give either --session or --use-active-subscription, not both',
    });
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('--session -: a session on standard input that is not JSON is a usage error, nothing sent', async () => {
    const t = contextFor(bed, { stdin: 'not a session' });
    const run = runComplete(options(t, sha256('x'), { session: '-' }));
    await expect(run).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/^invalid --session: /) });
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('--session of a file empty, blank or a byte order mark alone: said so (it said "not JSON (0 bytes)"), nothing sent', async () => {
    const session = '{"sessionId":"1683554257039","id":null,"userId":1390}';
    const cases: [string | Buffer, string][] = [
      ['', 'empty'],
      [' \n', 'blank'],
      ['\uFEFF', 'empty but for a byte order mark'],
      ['\uFEFF \r\n', 'blank but for a byte order mark'],
      // What PowerShell 5's `>` writes: it said "not JSON (40 bytes)" of 36, and of a mark alone "(6 bytes)".
      [Buffer.concat([Buffer.of(0xff, 0xfe), Buffer.from(session, 'utf16le')]), 'UTF-16, not UTF-8'],
      [Buffer.of(0xfe, 0xff), 'UTF-16, not UTF-8'],
      // PowerShell's Out-File -Encoding utf32: its mark begins as UTF-16's.
      [Buffer.of(0xff, 0xfe, 0, 0, 0x7b, 0, 0, 0, 0x7d, 0, 0, 0), 'UTF-32, not UTF-8'],
      [Buffer.of(0, 0, 0xfe, 0xff, 0, 0, 0, 0x7b), 'UTF-32, not UTF-8'],
      // iconv -t UTF-16LE: no mark, told by its zero bytes.
      [Buffer.from(session, 'utf16le'), 'UTF-16LE, not UTF-8'],
      [Buffer.from([0x7b, 0xe9, 0x7d]), 'not valid UTF-8'],
    ];
    for (const [i, [content, said]] of cases.entries()) {
      const file = await bed.file(`session-${i}.json`, content);
      await expect(runComplete(options(contextFor(bed), sha256('x'), { session: file }))).rejects.toMatchObject({
        exitCode: 2,
        message: `invalid --session: the session file is ${said}`,
        hint: expect.stringContaining('notarize pending --json'),
      });
    }
    // Not blank to JSON, whatever trim() says: not JSON, as it is.
    const nbsp = await bed.file('session-nbsp.json', '\u00A0\n');
    await expect(runComplete(options(contextFor(bed), sha256('x'), { session: nbsp }))).rejects.toMatchObject({
      exitCode: 2,
      message: expect.stringMatching(/^invalid --session: the session is not JSON/),
    });
    const t = contextFor(bed, { stdin: '\uFEFF' });
    await expect(runComplete(options(t, sha256('x'), { session: '-' }))).rejects.toMatchObject({
      message: 'invalid --session: the session on standard input is empty but for a byte order mark',
    });
    expect(bed.sandbox.calls).toEqual([]);
  });
});

describe('complete of several registrations (hashes, or --all): one run, one login, one result each', () => {
  /** `count` registrations left pending; returns their hashes, sorted. */
  async function pendingMany(count: number, tag: string): Promise<string[]> {
    const paths = [];
    for (let i = 0; i < count; i++) paths.push(await bed.file(`draft-${i}.txt`, `${tag} ${i}\n`));
    const run = await bed.main(['register', ...paths, '--no-complete', '--quiet']);
    expect(run.code, run.stderr).toBe(0);
    return paths.map((_, i) => sha256(`${tag} ${i}\n`)).sort();
  }

  it('--all completes every pending session: a result each, the records in the ledger, nothing pending', async () => {
    const hashes = await pendingMany(12, 'all');
    const mark = bed.mark();
    const run = await bed.main(['complete', '--all', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const results = parseResults(run.stdout);
    expect(results.map((r) => r.hash)).toEqual(hashes);
    expect(countStatuses(results)).toEqual({ registered: 12 });
    for (const r of results) expect(r.record).toEqual(JSON.parse(bed.ledgerEntry(r.hash!).recordJson));
    expect(bed.ledgerHashes()).toEqual(hashes);
    expect(bed.pendingHashes()).toEqual([]);
    expect(routes(bed.callsSince(mark))).toEqual(hashes.map(() => 'forfait'));

    // Nothing left: exit 0, as a re-run after success meets it, with a warning for the job on another runner.
    const again = await bed.main(['complete', '--all', '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual([]);
    expect(again.stderr).toContain('warning: no session is pending in this store (');
    expect(again.stderr).toContain('complete them there, or here with --session');
    // As a table: no header alone, and a summary that reads (it was "0 items: ").
    const table = await bed.main(['complete', '--all']);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toBe('');
    expect(table.stderr.trimEnd().split('\n').at(-1)).toBe('0 items');
  });

  it('--all does not send again a session whose last completion was answered unreadably: exit 5, its hash named', async () => {
    const [ready, unread] = await pendingMany(2, 'unread');
    // The first completion of `unread` gets an answer that cannot be read (it may have been paid).
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'truncated', count: 1 }]);
    expect((await bed.main(['complete', unread!])).code).toBe(5);
    const mark = bed.mark();
    const run = await bed.main(['complete', '--all', '--json']);
    expect(run.code, run.stderr).toBe(5);
    const results = parseResults(run.stdout);
    expect(results.map((r) => [r.hash, r.status])).toEqual(
      [
        [ready, 'registered'],
        [unread, 'failed'],
      ].sort(),
    );
    expect(results.find((r) => r.hash === unread)!.error?.hint).toContain(`\`notarize complete ${unread}\``);
    expect(routes(bed.callsSince(mark))).toEqual(['forfait']);
    expect(bed.pendingHashes()).toEqual([unread]);
  });

  it('hashes given: each completed or failed on its own, with the exit code of a batch', async () => {
    const [first, second] = await pendingMany(2, 'given');
    const unknown = sha256('never registered');
    const run = await bed.main(['complete', first!, unknown, second!.toUpperCase(), '--json']);
    // A usage error, but not exit 2: that would say nothing was sent (src/core/batch.ts).
    expect(run.code, run.stderr).toBe(1);
    const results = parseResults(run.stdout);
    expect(results.map((r) => [r.hash, r.status])).toEqual([
      [first, 'registered'],
      [unknown, 'failed'],
      [second, 'registered'],
    ]);
    expect(results[1]!.error).toMatchObject({ code: 'no_pending_session', exitCode: 2 });
  });

  it('a login answered 503 and a hash with no session: exit 1, not 2, since the login reached the service (r99)', async () => {
    const [waiting] = await pendingMany(1, 'login refused');
    // No token kept: the run must log in.
    rmSync(bed.credentialsFile, { force: true });
    bed.sandbox.addFaults([{ route: 'login', kind: 'status', value: 503 }]);
    const mark = bed.mark();
    const unknown = sha256('never registered, login refused');
    for (const args of [[unknown, waiting!], ['--all']]) {
      // --all: a damaged pending file is the local failure.
      if (args[0] === '--all') writeFileSync(bed.pendingFile('b'.repeat(64)), '{not json');
      const run = await bed.main(['complete', ...args, '--retries', '0', '--json']);
      expect(run.code, run.stderr).toBe(1);
      expect(jsonError(run.stderr)).toMatchObject({ code: 'batch_failed', exitCode: 1 });
    }
    expect(routes(bed.callsSince(mark))).toEqual(['login', 'login']);
    expect(bed.pendingHashes()).toContain(waiting);
  });

  it('against a service failing every completion: a few are sent, the others held back, every session kept', async () => {
    const hashes = await pendingMany(30, 'failing');
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'status', value: 500 }]);
    const run = await bed.main(['complete', '--all', '--retries', '0', '--json'], {
      env: { NOTARIZE_RETRY_DELAY_MS: '20' },
    });
    expect(run.code, run.stderr).toBe(4);
    expect(countStatuses(parseResults(run.stdout))).toEqual({ failed: 30 });
    // Two in a row, those in flight meanwhile (8 at once), and one let through now and then (at once, 40 ms
    // and 120 ms later) while the others waited 200 ms to see whether the service was back.
    expect(bed.calls('forfait')).toBeLessThanOrEqual(14);
    expect(bed.pendingHashes()).toEqual(hashes);
  });

  it.each([
    [['complete'], /give the hash of a registration to complete, or --all/],
    [['complete', '--all', 'a'.repeat(64)], /give the hashes to complete, or --all, not both/],
    [['complete', 'a'.repeat(64), 'b'.repeat(64), '--use-active-subscription'], /complete one hash at a time/],
    [['complete', 'a'.repeat(64), 'nothex'], /nothex/],
  ])('%j is refused before anything is sent (exit 2)', async (argv, message) => {
    const mark = bed.mark();
    const run = await bed.main(argv);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(bed.callsSince(mark)).toEqual([]);
  });
});

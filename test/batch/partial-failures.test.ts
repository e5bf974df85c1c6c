/**
 * One failing item does not stop the others; the batch's exit code says
 * whether running it again can help (src/core/batch.ts FailureTally):
 * 4 when every failure was transient, else the code of the first lasting
 * failure in input order; --fail-fast skips the items not yet started.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Fault } from '../../src/sandbox/server.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { describeRun } from '../helpers/cli.js';
import { sha256 } from '../helpers/documents.js';
import { countStatuses, jsonError, parseNdjson, parseResults } from '../helpers/results.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

/** Writes `count` documents named f0.txt... (tag makes contents distinct per test); returns [absolute path, hash][]. */
async function documents(b: Bed, count: number, tag: string): Promise<[string, string][]> {
  const out: [string, string][] = [];
  for (let i = 0; i < count; i++) {
    const content = `${tag} document ${i}\n`;
    out.push([await b.file(`f${i}.txt`, content), sha256(content)]);
  }
  return out;
}

describe('transient failures in a batch', () => {
  it('reports 8 registered and 2 failed (exit 4), and a second run completes the 2', async () => {
    const docs = await documents(bed, 10, 'transient');
    const hashOf = new Map(docs);
    const args = ['register', ...docs.map(([path]) => path), '--retries', '0', '--json'];
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'status', value: 503, count: 2 }]);

    const first = await bed.main(args);
    expect(first.code, describeRun(first)).toBe(4);
    const results = parseResults(first.stdout);
    expect(results.map((r) => r.file)).toEqual(docs.map(([path]) => path));
    expect(countStatuses(results)).toEqual({ registered: 8, failed: 2 });
    const failed = results.filter((r) => r.status === 'failed');
    for (const r of failed) {
      // A failed item still reports the digest it was registering.
      expect(r.hash).toBe(hashOf.get(r.file!));
      expect(r.error).toMatchObject({ code: 'transient', exitCode: 4 });
      expect(r.error?.message).toMatch(/503/);
      expect(r.record).toBeUndefined();
    }
    for (const r of results.filter((x) => x.status === 'registered')) expect(r.hash).toBe(hashOf.get(r.file!));
    expect(jsonError(first.stderr)).toMatchObject({ code: 'batch_failed', exitCode: 4 });
    expect(jsonError(first.stderr).hint).toMatch(/run the same command again/);
    expect(bed.calls('request')).toBe(10);
    expect(bed.calls('forfait')).toBe(10);
    // The two sessions are kept for the next run; the others are in the ledger.
    expect(bed.pendingHashes()).toEqual(failed.map((r) => r.hash).sort());
    expect(bed.ledgerHashes()).toHaveLength(8);

    const callsBefore = bed.sandbox.calls.length;
    const second = await bed.main(args);
    expect(second.code, describeRun(second)).toBe(0);
    const again = parseResults(second.stdout);
    expect(countStatuses(again)).toEqual({ 'already-registered': 8, registered: 2 });
    for (const r of again) {
      const before = results.find((x) => x.file === r.file)!;
      expect(r.status).toBe(before.status === 'failed' ? 'registered' : 'already-registered');
      expect(r.hash).toBe(hashOf.get(r.file!));
    }
    // The second run only completed the two pending sessions: no new request step.
    const newCalls = bed.sandbox.calls.slice(callsBefore).filter((c) => c.route !== 'login');
    expect(newCalls.map((c) => [c.route, c.status])).toEqual([
      ['forfait', 200],
      ['forfait', 200],
    ]);
    expect(bed.pendingHashes()).toEqual([]);
    expect(bed.ledgerHashes()).toHaveLength(10);
    // The summary line lists the statuses in the order they first appear.
    const summary = /^10 items: (.*)$/m.exec(second.stderr)?.[1]?.split(', ').sort();
    expect(summary).toEqual(['2 registered', '8 already-registered']);
  });
});

describe('the exit code of a batch with lasting failures', () => {
  // With --concurrency 1 the documents reach the sandbox in input order, so
  // each request-step rule below hits a known document (rules apply in order,
  // at most one non-latency rule per call).
  const cases: { name: string; faults: Fault[]; statuses: string[]; codes: (number | undefined)[]; exit: number }[] = [
    {
      name: 'a wrong-shape answer (5) before a refusal (1) -> 5',
      faults: [
        { route: 'request', kind: 'wrong-shape', count: 1 },
        { route: 'request', kind: 'status', value: 422, count: 1 },
        { route: 'request', kind: 'status', value: 503, count: 1 },
      ],
      statuses: ['failed', 'failed', 'failed', 'registered', 'registered'],
      codes: [5, 1, 4, undefined, undefined],
      exit: 5,
    },
    {
      name: 'a refusal (1) before a wrong-shape answer (5) -> 1',
      faults: [
        { route: 'request', kind: 'status', value: 422, count: 1 },
        { route: 'request', kind: 'wrong-shape', count: 1 },
      ],
      statuses: ['failed', 'failed', 'registered', 'registered', 'registered'],
      codes: [1, 5, undefined, undefined, undefined],
      exit: 1,
    },
    {
      name: 'a transient failure (4) before a refusal (1) -> 1, not 4',
      faults: [
        { route: 'request', kind: 'status', value: 503, count: 1 },
        { route: 'request', kind: 'status', value: 422, count: 1 },
      ],
      statuses: ['failed', 'failed', 'registered', 'registered', 'registered'],
      codes: [4, 1, undefined, undefined, undefined],
      exit: 1,
    },
  ];

  it.each(cases)('$name', async ({ faults, statuses, codes, exit }) => {
    const docs = await documents(bed, 5, `lasting ${exit}`);
    bed.sandbox.addFaults(faults);
    const run = await bed.main([
      'register',
      ...docs.map(([path]) => path),
      '--concurrency',
      '1',
      '--retries',
      '0',
      '--json',
    ]);
    expect(run.code, describeRun(run)).toBe(exit);
    const results = parseResults(run.stdout);
    expect(results.map((r) => r.status)).toEqual(statuses);
    expect(results.map((r) => r.error?.exitCode)).toEqual(codes);
    // Every failure happened at or after the request step, so every hash is known.
    expect(results.map((r) => r.hash)).toEqual(docs.map(([, hash]) => hash));
    expect(jsonError(run.stderr)).toMatchObject({ code: 'batch_failed', exitCode: exit });
    expect(jsonError(run.stderr).message).toBe(`${codes.filter(Boolean).length} of 5 items failed`);
  });

  it('a wrong-shape session is kept as pending (the registration is not lost)', async () => {
    const docs = await documents(bed, 3, 'wrong shape');
    bed.sandbox.addFaults([{ route: 'request', kind: 'wrong-shape', count: 1 }]);
    const run = await bed.main(['register', ...docs.map(([p]) => p), '-j', '1', '--retries', '0', '--json']);
    expect(run.code, describeRun(run)).toBe(5);
    const results = parseResults(run.stdout);
    expect(results[0]).toMatchObject({ status: 'failed', hash: docs[0]![1], error: { code: 'protocol', exitCode: 5 } });
    expect(results[0]!.error?.message).toMatch(/kept as pending/);
    expect(bed.pendingHashes()).toEqual([docs[0]![1]]);
    expect(bed.ledgerHashes()).toEqual([docs[1]![1], docs[2]![1]].sort());
  });
});

describe('--fail-fast', () => {
  it('reports the items not started as skipped, and sends nothing for them', async () => {
    const docs = await documents(bed, 5, 'fail fast');
    bed.sandbox.addFaults([{ route: 'request', kind: 'status', value: 422, count: 1 }]);
    const run = await bed.main([
      'register',
      ...docs.map(([p]) => p),
      '--fail-fast',
      '--concurrency',
      '1',
      '--retries',
      '0',
      '--json',
    ]);
    expect(run.code, describeRun(run)).toBe(1);
    const results = parseResults(run.stdout);
    expect(results).toHaveLength(5);
    expect(results[0]).toMatchObject({
      file: docs[0]![0],
      status: 'failed',
      hash: docs[0]![1],
      error: { exitCode: 1 },
    });
    // Every document was hashed and checked before the first was sent: the others keep their hashes.
    for (const [i, r] of results.slice(1).entries()) {
      expect(r).toEqual({
        schemaVersion: 1,
        file: r.file,
        hash: docs[i + 1]![1],
        status: 'skipped',
        reason: 'not registered: another document failed (--fail-fast)',
      });
    }
    expect(results.map((r) => r.file)).toEqual(docs.map(([p]) => p));
    expect(bed.calls('request')).toBe(1);
    expect(bed.calls('forfait')).toBe(0);
    expect(bed.ledgerHashes()).toEqual([]);
  });

  it('checks every document before any is sent: a receipt in the way, 8 in flight, nothing paid (exit 2)', async () => {
    const docs = await documents(bed, 16, 'checked first');
    const receipts = join(bed.root, 'fail-fast-receipts');
    mkdirSync(receipts);
    const blocked = basename(docs[9]![0]);
    writeFileSync(join(receipts, `${blocked}.notarization.json`), 'not a receipt\n');
    const mark = bed.mark();
    const run = await bed.main([
      'register',
      ...docs.map(([p]) => p),
      '--receipt-dir',
      receipts,
      '--fail-fast',
      '-j',
      '8',
      '--json',
    ]);
    expect(run.code, describeRun(run)).toBe(2);
    expect(bed.callsSince(mark)).toEqual([]);
    const results = parseResults(run.stdout);
    expect(results.map((r) => r.status)).toEqual(docs.map((_, i) => (i === 9 ? 'failed' : 'skipped')));
    expect(results.map((r) => r.hash)).toEqual(docs.map(([, hash]) => hash));
    expect(readdirSync(receipts)).toEqual([`${blocked}.notarization.json`]);

    // Once it is out of the way, the same command registers them all.
    rmSync(join(receipts, `${blocked}.notarization.json`));
    const again = await bed.main([
      'register',
      ...docs.map(([p]) => p),
      '--receipt-dir',
      receipts,
      '--fail-fast',
      '--json',
    ]);
    expect(again.code, describeRun(again)).toBe(0);
    expect(parseResults(again.stdout).map((r) => r.status)).toEqual(docs.map(() => 'registered'));
  });

  it('-j 4: once a failure is answered, no document that had sent nothing yet opens a session', async () => {
    // The first request step is refused; latency keeps the other three documents' requests out meanwhile.
    const docs = await documents(bed, 30, 'fail fast j4');
    bed.sandbox.addFaults([
      { route: 'request', kind: 'status', value: 422, count: 1 },
      { route: '*', kind: 'latency', value: 80 },
    ]);
    const run = await bed.main(['register', ...docs.map(([p]) => p), '--fail-fast', '-j', '4', '--json']);
    expect(run.code, describeRun(run)).toBe(1);
    const statuses = countStatuses(parseResults(run.stdout));
    // The three under way with it when it failed finish; the 26 not yet sent are skipped.
    expect(statuses).toEqual({ failed: 1, registered: 3, skipped: 26 });
    expect(bed.calls('request')).toBe(4);
    expect(bed.calls('forfait')).toBe(3);
  });

  it('without --fail-fast the same failure does not stop the others', async () => {
    const docs = await documents(bed, 5, 'no fail fast');
    bed.sandbox.addFaults([{ route: 'request', kind: 'status', value: 422, count: 1 }]);
    const run = await bed.main(['register', ...docs.map(([p]) => p), '-j', '1', '--retries', '0', '--json']);
    expect(run.code, describeRun(run)).toBe(1);
    expect(parseResults(run.stdout).map((r) => r.status)).toEqual([
      'failed',
      'registered',
      'registered',
      'registered',
      'registered',
    ]);
    expect(bed.calls('request')).toBe(5);
  });
});

describe('one session for the whole batch', () => {
  it('logs in once with NOTARIZE_API_KEY, however many documents are in flight', async () => {
    const docs = await documents(bed, 20, 'login once');
    const run = await bed.main(['register', ...docs.map(([p]) => p), '--concurrency', '8', '--json']);
    expect(run.code, describeRun(run)).toBe(0);
    expect(parseResults(run.stdout)).toHaveLength(20);
    // Eight lanes start without a token; they should share one login, not race to log in eight times.
    expect(bed.calls('login')).toBe(1);
  });
});

describe('a service that does not answer', () => {
  // Each document waiting out its own retries made 1,000 documents take 3.5
  // minutes against a service that was down (src/api/retry.ts, Outage).
  const quickRetries = { env: { NOTARIZE_RETRY_DELAY_MS: '1' } };

  it('with a refused key: the key is sent once for the whole batch', async () => {
    const docs = await documents(bed, 24, 'refused key');
    const key = { NOTARIZE_API_KEY: 'sandbox_0123456789abcdef0123456789abcdef' };
    const run = await bed.main(['register', ...docs.map(([p]) => p), '--json'], { env: key });
    expect(run.code, describeRun(run)).toBe(3);
    const results = parseResults(run.stdout);
    expect(countStatuses(results)).toEqual({ failed: 24 });
    for (const r of results) expect(r.error).toMatchObject({ code: 'auth', exitCode: 3 });
    expect(bed.calls('login')).toBe(1);
    expect(bed.calls('request')).toBe(0);
  });

  it.each([
    { mode: 'one by one', flags: [] },
    { mode: '--aggregate', flags: ['--aggregate'] },
  ])(
    'nothing listening, and a document missing ($mode): exit 2, since no connection opened and nothing was sent',
    async ({ mode, flags }) => {
      const docs = await documents(bed, 2, `nothing listening ${mode}`);
      await bed.sandbox.close();
      const missing = bed.path('missing.txt');
      const args = ['register', docs[0]![0], missing, docs[1]![0], ...flags, '--retries', '0', '--json'];
      const run = await bed.main(args);
      expect(run.code, describeRun(run)).toBe(2);
      const results = parseResults(run.stdout);
      expect(results.map((r) => r.error?.exitCode)).toEqual([4, 2, 4]);
      expect(results[0]!.error?.message).toMatch(/ECONNREFUSED/);
      expect(jsonError(run.stderr)).toMatchObject({ code: 'batch_failed', exitCode: 2 });
    },
  );

  it('complete, nothing listening, and a hash with no session: exit 2, though a completion was tried', async () => {
    const [path, hash] = (await documents(bed, 1, 'complete nothing listening'))[0]!;
    const first = await bed.main(['register', path, '--no-complete', '--json']);
    expect(first.code, describeRun(first)).toBe(0);
    await bed.sandbox.close();
    // The token is in the store: no login, and the forfait's connection is refused, so nothing
    // left this machine. The completion step was tried, which once counted as sent (exit 1).
    const unknown = sha256('complete nothing listening: no session');
    const run = await bed.main(['complete', hash, unknown, '--retries', '0', '--json']);
    expect(run.code, describeRun(run)).toBe(2);
    const results = parseResults(run.stdout);
    expect(results.map((r) => r.error?.exitCode)).toEqual([4, 2]);
    expect(results[0]!.error?.message).toMatch(/ECONNREFUSED/);
    expect(bed.pendingHashes()).toEqual([hash]);
    expect(jsonError(run.stderr)).toMatchObject({ code: 'batch_failed', exitCode: 2 });
  });

  it('to the login: one login and its retries for the whole batch, not one per document', async () => {
    const docs = await documents(bed, 24, 'login down');
    bed.sandbox.addFaults([{ route: 'login', kind: 'drop' }]);
    const run = await bed.main(['register', ...docs.map(([p]) => p), '--retries', '2', '--json'], quickRetries);
    expect(run.code, describeRun(run)).toBe(4);
    const results = parseResults(run.stdout);
    expect(countStatuses(results)).toEqual({ failed: 24 });
    for (const r of results) expect(r.error).toMatchObject({ code: 'transient', exitCode: 4 });
    expect(bed.calls('login')).toBe(3);
    expect(bed.calls('request')).toBe(0);
  });

  it.each([
    { answer: 'no answer', fault: { route: 'request', kind: 'drop' } satisfies Fault },
    { answer: 'a 503', fault: { route: 'request', kind: 'status', value: 503 } satisfies Fault },
  ])(
    'with $answer to every request step: once two documents have spent their retries, the others are not sent',
    async ({ fault }) => {
      const docs = await documents(bed, 40, `request down ${fault.kind}`);
      bed.sandbox.addFaults([fault]);
      const args = ['register', ...docs.map(([p]) => p), '--retries', '1', '--concurrency', '8', '--json'];
      const run = await bed.main(args, quickRetries);
      expect(run.code, describeRun(run)).toBe(4);
      const results = parseResults(run.stdout);
      expect(countStatuses(results)).toEqual({ failed: 40 });
      const notSent = results.filter((r) =>
        /^not sent: the service failed two calls of this run in a row, the last with: POST /.test(
          r.error?.message ?? '',
        ),
      );
      // Those in flight until the second one failed tried (80 calls without this); the others failed at once.
      expect(bed.calls('request')).toBeLessThanOrEqual(32);
      expect(notSent.length).toBeGreaterThanOrEqual(24);
      for (const r of notSent) expect(r.error).toMatchObject({ code: 'transient', exitCode: 4 });
      for (const r of results) expect(r.error?.hint).toMatch(/try again later$/);
      // No session was ever given, so none is pending: a second run starts them afresh.
      expect(bed.pendingHashes()).toEqual([]);
      expect(jsonError(run.stderr).hint).toMatch(/run the same command again/);
    },
  );

  it('to forfait: each document stopped keeps its session, with its own `notarize complete` and no other', async () => {
    const docs = await documents(bed, 12, 'forfait down');
    const paths = docs.map(([p]) => p);
    const first = await bed.main(['register', ...paths, '--no-complete', '--json']);
    expect(first.code, describeRun(first)).toBe(0);
    // The first forfait hangs past --timeout: no answer, and forfait may not be retried.
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'hang' }]);
    const run = await bed.main(['register', ...paths, '-j', '2', '--timeout', '300', '--json'], {
      env: { NOTARIZE_RETRY_DELAY_MS: '20' },
    });
    expect(run.code, describeRun(run)).toBe(4);
    const results = parseResults(run.stdout);
    expect(countStatuses(results)).toEqual({ failed: 12 });
    // Two timed out in a row, a third was in flight, and one was let through now and then to see
    // whether the service was back (at once, then 40 ms after it timed out, 80...) while the others
    // waited 200 ms (ten times NOTARIZE_RETRY_DELAY_MS); each one let through takes its 300 ms timeout.
    expect(bed.calls('forfait')).toBeLessThanOrEqual(7);
    for (const r of results) {
      const hashes = r.error?.hint?.match(/[0-9a-f]{64}/g) ?? [];
      expect(new Set(hashes), r.error?.hint).toEqual(new Set([r.hash]));
      expect(r.error?.hint).toContain(`notarize complete ${r.hash}`);
    }
    expect(results.filter((r) => r.error?.message.startsWith('not sent: ')).length).toBeGreaterThanOrEqual(5);
    expect(bed.pendingHashes()).toEqual(docs.map(([, hash]) => hash).sort());
  });

  it.each([
    { call: 'a request step (no retry)', fault: { route: 'request', kind: 'drop', count: 1 } satisfies Fault },
    { call: 'a forfait (timed out)', fault: { route: 'forfait', kind: 'hang', count: 1 } satisfies Fault },
  ])('to $call while it answers the others: only that document fails', async ({ fault }) => {
    // Enough documents that many start after the unanswered call has ended (--timeout 500).
    const docs = await documents(bed, 200, `one unanswered ${fault.route}`);
    bed.sandbox.addFaults([fault, { route: '*', kind: 'latency', value: 20 }]);
    const args = ['register', ...docs.map(([p]) => p), '--retries', '0', '--timeout', '500', '--json'];
    const run = await bed.main(args);
    expect(run.code, describeRun(run)).toBe(4);
    expect(countStatuses(parseResults(run.stdout))).toEqual({ registered: 199, failed: 1 });
  });

  it('to the custody metadata: nothing else is stopped, each says so (exit 4), and the same command sends it later', async () => {
    const docs = await documents(bed, 4, 'metadata down');
    bed.sandbox.addFaults([{ route: 'file', kind: 'status', value: 503, count: 4 }]);
    const args = ['register', ...docs.map(([p]) => p), '--custody', '-j', '2', '--retries', '0', '--output', 'ndjson'];
    const run = await bed.main(args);
    expect(run.code, describeRun(run)).toBe(4);
    const results = parseNdjson(run.stdout);
    expect(countStatuses(results)).toEqual({ failed: 4 });
    for (const result of results) {
      // Failed for the run, the registration standing: its record is in the result.
      expect(result.record).toMatchObject({ hash: result.hash });
      expect(result.error?.hint).toContain('its file metadata was not confirmed as taken; `notarize complete');
    }
    expect(bed.calls('forfait')).toBe(4);
    expect(bed.calls('file')).toBe(4);
    expect(bed.sandbox.files.size).toBe(0);

    // complete --all visits the metadata still owed, as it does sessions still pending.
    const completed = await bed.main(['complete', '--all', '--json']);
    expect(completed.code, describeRun(completed)).toBe(0);
    expect(countStatuses(parseResults(completed.stdout))).toEqual({ 'already-registered': 4 });
    expect(bed.calls('forfait')).toBe(4);
    expect(bed.sandbox.files.size).toBe(4);
    // Then nothing is owed: the same register command sends nothing.
    const again = await bed.main(args);
    expect(again.code, describeRun(again)).toBe(0);
    expect(countStatuses(parseNdjson(again.stdout))).toEqual({ 'already-registered': 4 });
    expect(bed.calls('file')).toBe(8);
  });
});

describe('--custody on a store without the hashes, which the service already has (409)', () => {
  it('says, per document, that no metadata was sent, in a batch as one document alone does; exit 0', async () => {
    const docs = await documents(bed, 2, 'custody cold 409');
    const paths = docs.map(([p]) => p);
    const paid = await bed.main(['register', ...paths, '--json']);
    expect(paid.code, describeRun(paid)).toBe(0);
    // A CI re-run: an empty store.
    const env = { NOTARIZE_CONFIG_DIR: join(bed.root, 'cold-custody-store') };
    for (const output of ['table', 'ndjson']) {
      const run = await bed.main(['register', ...paths, '--custody', '--output', output], { env });
      expect(run.code, describeRun(run)).toBe(0);
      for (const path of paths) {
        expect(run.stderr).toContain(
          `warning: custody: ${path}: the service already had it (409), so no file metadata was sent, and the file itself was NOT uploaded`,
        );
      }
    }
    expect(bed.calls('file')).toBe(0);
  });
});

describe('the way out of a failed item, at a terminal', () => {
  it("the table shows each item's error; the last line says what to do, and says it again on a re-run", async () => {
    const docs = await documents(bed, 2, 'hinted');
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'undecodable', count: 1 }]);
    const args = ['register', ...docs.map(([path]) => path), '--output', 'table'];
    const first = await bed.main(args);
    expect(first.code, describeRun(first)).toBe(5);
    const last = first.stderr.trim().split('\n').at(-1)!;
    expect(last).toMatch(/^notarize: 1 of 2 items failed \(.*notarize complete [0-9a-f]{64}.*\)$/);
    const again = await bed.main(args);
    expect(again.code, describeRun(again)).toBe(5);
    expect(again.stderr.trim().split('\n').at(-1)).toMatch(/^notarize: 1 of 2 items failed \(.*complete.*\)$/);
  });
});

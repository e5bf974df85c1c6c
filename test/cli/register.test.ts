/**
 * runRegister called in process against a sandbox on port 0, with the real
 * store and API client: what it returns for one document, for a batch and for
 * a stream; that it prints no data itself; and that present() turns its
 * result into the bytes `notarize register` prints.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExactJson } from '../../src/exact-json.js';
import { optionsSchema, runRegister, type RegisterOptions } from '../../src/commands/register.js';
import { BatchError } from '../../src/core/batch.js';
import { errorJson, TransientError, type NotarizeError } from '../../src/errors.js';
import { itemResultsFor, present, type CommandResult } from '../../src/output/present.js';
import { ItemResults, type ItemResult } from '../../src/output/results.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { sha256 } from '../helpers/documents.js';
import { contextFor, type TestContext } from '../helpers/context.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

/** The options the action would build from `t`'s context for these paths and flags. */
function options(t: TestContext, paths: string[], flags: Record<string, unknown> = {}): RegisterOptions {
  const { ctx } = t;
  return {
    ...optionsSchema.parse(flags),
    paths,
    io: ctx.io,
    baseUrl: () => ctx.baseUrl,
    api: () => ctx.api(),
    serviceStore: () => ctx.serviceStore,
  };
}

function expectKind<K extends CommandResult['kind']>(
  result: CommandResult,
  kind: K,
): asserts result is Extract<CommandResult, { kind: K }> {
  expect(result.kind).toBe(kind);
}

const pageOf = (hash: string) => `${bed.url}/verification/${hash}`;

describe('runRegister, one document', () => {
  it('returns the completed outcome and its result for GitHub; present() prints the exact record', async () => {
    const path = await bed.file('contract.pdf', 'contract\n');
    const hash = sha256('contract\n');
    const t = contextFor(bed);
    const result = await runRegister(options(t, [path]));
    // The run printed no data, and no message either: both are the renderer's.
    expect(t.stdout()).toBe('');
    expect(t.stderr()).toBe('');
    expectKind(result, 'outcome');
    expect(result.outcome).toMatchObject({ kind: 'completed', reusedSession: false, entry: { hash } });
    expect(result.failure).toBeUndefined();
    const { recordJson } = bed.ledgerEntry(hash);
    expect(result.github).toEqual({
      title: 'notarize register',
      results: [
        {
          schemaVersion: 1,
          file: path,
          hash,
          status: 'registered',
          record: ExactJson.of(recordJson),
          verificationUrl: pageOf(hash),
        },
      ],
    });
    await present({ io: t.io, env: {}, format: 'json' }, result);
    expect(t.stdout()).toBe(`${recordJson}\n`);
    expect(t.stderr()).toBe(`registered ${hash}\n`);
  });

  it('the same document again: already registered, from the ledger, nothing sent', async () => {
    const path = await bed.file('contract.pdf', 'contract\n');
    const hash = sha256('contract\n');
    await runRegister(options(contextFor(bed), [path]));
    const mark = bed.mark();
    const t = contextFor(bed);
    const again = await runRegister(options(t, [path]));
    expect(bed.callsSince(mark)).toEqual([]);
    expectKind(again, 'outcome');
    expect(again.outcome).toMatchObject({ kind: 'already-registered', hash, entry: { hash } });
    expect(again.github?.results.map((r) => r.status)).toEqual(['already-registered']);
    await present({ io: t.io, env: {}, format: 'table' }, again);
    expect(t.stdout()).toMatch(new RegExp(`^verification +${pageOf(hash)}$`, 'm'));
    expect(t.stderr()).toMatch(
      new RegExp(
        `^${hash} is already registered \\(completed .*\\); \`notarize register --force\` registers it again$`,
        'm',
      ),
    );
  });

  it('--no-complete: the pending outcome; present() prints the session exactly as saved', async () => {
    const path = await bed.file('draft.txt', 'draft\n');
    const hash = sha256('draft\n');
    const t = contextFor(bed);
    const result = await runRegister(options(t, [path], { complete: false }));
    expectKind(result, 'outcome');
    expect(result.outcome).toMatchObject({ kind: 'pending', reused: false, entry: { hash } });
    expect(bed.calls('forfait')).toBe(0);
    await present({ io: t.io, env: {}, format: 'json' }, result);
    const saved = JSON.parse(readFileSync(bed.pendingFile(hash), 'utf8')) as { sessionJson: string };
    expect(t.stdout()).toBe(`${saved.sessionJson}\n`);
    expect(t.stderr()).toBe(
      `session saved for ${hash}; complete it with: notarize complete ${hash} (or the same register command without --no-complete, which also writes its receipt with --receipt-dir)\n`,
    );
  });

  it('--hash: the digest registered with its description, the result naming no file', async () => {
    const hash = sha256('registered by digest');
    const result = await runRegister(options(contextFor(bed), [], { hash, description: 'by digest' }));
    expectKind(result, 'outcome');
    expect(result.outcome).toMatchObject({ kind: 'completed', entry: { hash } });
    expect(JSON.parse(bed.ledgerEntry(hash).recordJson)).toMatchObject({ hash, description: 'by digest' });
    expect(result.github?.results[0]).toMatchObject({ file: null, hash, status: 'registered' });
  });

  it('a failure at the service: no outcome, the failed result with its hash, the error as the failure', async () => {
    const path = await bed.file('contract.pdf', 'contract\n');
    const hash = sha256('contract\n');
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'status', value: 503, count: 1 }]);
    const result = await runRegister(options(contextFor(bed, { env: { NOTARIZE_RETRIES: '0' } }), [path]));
    expectKind(result, 'outcome');
    expect(result.outcome).toBeUndefined();
    expect(result.failure).toBeInstanceOf(TransientError);
    const failure = result.failure as NotarizeError;
    expect(failure.exitCode).toBe(4);
    expect(result.github?.results).toEqual([
      { schemaVersion: 1, file: path, hash, status: 'failed', error: errorJson(failure) },
    ]);
  });

  it('a usage problem is thrown before anything is read or sent', async () => {
    const path = await bed.file('contract.pdf', 'contract\n');
    const run = runRegister(options(contextFor(bed), [path], { hash: sha256('x'), description: 'x' }));
    await expect(run).rejects.toMatchObject({ exitCode: 2, message: 'give either documents or --hash, not both' });
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('the base URL is checked before any input is read', async () => {
    const t = contextFor(bed);
    const problem = new Error('the base URL was asked for first');
    const run = runRegister({
      ...options(t, [join(bed.workDir, 'missing.txt')]),
      baseUrl: () => {
        throw problem;
      },
    });
    await expect(run).rejects.toBe(problem);
  });
});

describe('runRegister, several documents', () => {
  it('hands every result over in input order; no failure when all went through', async () => {
    const paths = [await bed.file('a.txt', 'a\n'), await bed.file('b.txt', 'b\n'), await bed.file('c.txt', 'c\n')];
    const items = new ItemResults();
    const result = await runRegister(options(contextFor(bed), paths), items);
    expectKind(result, 'items');
    expect(result.items).toBe(items);
    expect(result.title).toBe('notarize register');
    expect(result.failure).toBeUndefined();
    expect(items.list().map((r) => [r.file, r.hash, r.status, r.verificationUrl])).toEqual(
      ['a', 'b', 'c'].map((name, i) => [paths[i], sha256(`${name}\n`), 'registered', pageOf(sha256(`${name}\n`))]),
    );
    expect(items.summary()).toBe('3 items: 3 registered');
  });

  it('a missing document fails on its own; the run fails with exit 1, since something was sent', async () => {
    const a = await bed.file('a.txt', 'a\n');
    const b = await bed.file('b.txt', 'b\n');
    const missing = join(bed.workDir, 'missing.txt');
    const result = await runRegister(options(contextFor(bed), [a, missing, b]));
    expectKind(result, 'items');
    expect(result.items.list().map((r) => [r.file, r.status])).toEqual([
      [a, 'registered'],
      [missing, 'failed'],
      [b, 'registered'],
    ]);
    expect(result.items.list()[1]?.error).toMatchObject({ code: 'unreadable_file', exitCode: 2 });
    expect(result.failure).toBeInstanceOf(BatchError);
    expect(result.failure).toMatchObject({ exitCode: 1, message: '1 of 3 items failed' });
  });

  it('streamed (NDJSON): each result is handed on as it settles, none kept; one document goes the same way', async () => {
    const path = await bed.file('a.txt', 'a\n');
    const hash = sha256('a\n');
    const streamed: ItemResult[] = [];
    const items = new ItemResults({ keep: 'none', onResult: (r) => streamed.push(r) });
    const result = await runRegister(options(contextFor(bed), [path]), items);
    expectKind(result, 'items');
    expect(streamed).toEqual([
      {
        schemaVersion: 1,
        file: path,
        hash,
        status: 'registered',
        record: ExactJson.of(bed.ledgerEntry(hash).recordJson),
        verificationUrl: pageOf(hash),
      },
    ]);
    expect(items.list()).toEqual([]);
    expect(items.summary()).toBe('1 item: 1 registered');
  });

  it('through the renderer, prints what `notarize register --json` prints', async () => {
    const paths = [await bed.file('a.txt', 'a\n'), await bed.file('b.txt', 'b\n')];
    const t = contextFor(bed);
    const view = { io: t.io, env: {}, format: 'json' as const };
    await present(view, await runRegister(options(t, paths), itemResultsFor(view)));
    // The same documents again through main(): already registered now, in both runs below.
    const again = contextFor(bed);
    const againView = { io: again.io, env: {}, format: 'json' as const };
    await present(againView, await runRegister(options(again, paths), itemResultsFor(againView)));
    const viaMain = await bed.main(['register', ...paths, '--json']);
    expect(viaMain.code).toBe(0);
    expect(again.stdout()).toBe(viaMain.stdout);
    expect(again.stderr()).toBe(viaMain.stderr);
    expect(JSON.parse(t.stdout())).toHaveLength(2);
  });
});

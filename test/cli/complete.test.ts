/**
 * runComplete called in process against a sandbox on port 0: a registration
 * left pending is completed and its outcome returned; the hash and the
 * session options are checked before the service (or its base URL) is
 * touched.
 */
import { describe, expect, it } from 'vitest';
import { optionsSchema, runComplete, type CompleteOptions } from '../../src/commands/complete.js';
import { present } from '../../src/output/present.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { sha256 } from '../helpers/documents.js';
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
    ledger: () => ctx.ledger,
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
    present({ io: t.io, env: {}, format: 'json' }, result);
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
});

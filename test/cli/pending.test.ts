/** runPending and runPendingDrop in process: the sessions left pending as rows, and one retired by hand. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runPending, runPendingDrop } from '../../src/commands/pending.js';
import { present } from '../../src/output/present.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { sha256 } from '../helpers/documents.js';
import { contextFor } from '../helpers/context.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

describe('runPending', () => {
  it('none: no rows, and the message for a table', async () => {
    const t = contextFor(bed);
    const result = await runPending({ serviceStore: () => t.ctx.serviceStore });
    expect(result.rows).toEqual([]);
    await present({ io: t.io, env: {}, format: 'table' }, result);
    expect([t.stdout(), t.stderr()]).toEqual(['', 'no pending registrations\n']);
  });

  it('a session file left over by a registration the ledger holds: not listed as ready, said so', async () => {
    const path = await bed.file('left.txt', 'left over\n');
    const hash = sha256('left over\n');
    expect((await bed.main(['register', path, '--no-complete', '--quiet'])).code).toBe(0);
    const session = readFileSync(bed.pendingFile(hash));
    expect((await bed.main(['complete', hash, '--quiet'])).code).toBe(0);
    // What a run that could not remove it (a read-only folder) leaves behind.
    writeFileSync(bed.pendingFile(hash), session);
    const t = contextFor(bed);
    const listed = await runPending({ serviceStore: () => t.ctx.serviceStore });
    expect(listed.rows).toEqual([]);
    expect(listed.failure).toBeUndefined();
    expect(listed.warnings).toEqual([
      `not listed: the session file of ${hash}, registered and in the ledger, left over by a run that could not remove it ` +
        '(nothing is sent for it; the next run that meets it removes it, or, if it cannot tell it is older than the record, ' +
        `\`notarize pending drop ${hash}\` puts it aside)`,
    ]);
    // The next run that meets it removes it, sending nothing.
    const mark = bed.mark();
    expect((await bed.main(['register', path, '--quiet'])).code).toBe(0);
    expect(existsSync(bed.pendingFile(hash))).toBe(false);
    expect(bed.callsSince(mark)).toEqual([]);
  });

  it('a registration left pending: its row, ready, with the session; then dropped, kept aside', async () => {
    const path = await bed.file('draft.txt', 'draft\n');
    const hash = sha256('draft\n');
    expect((await bed.main(['register', path, '--no-complete', '--quiet'])).code).toBe(0);
    const t = contextFor(bed);
    const serviceStore = () => t.ctx.serviceStore;
    const listed = await runPending({ serviceStore });
    expect(listed.rows).toEqual([
      {
        hash,
        description: 'draft.txt',
        savedAt: expect.any(String),
        plan: expect.any(String),
        state: 'ready',
        session: expect.any(Object),
      },
    ]);
    expect(listed.cells(listed.rows[0]!)).toEqual([
      hash,
      'draft.txt',
      listed.rows[0]!.plan,
      listed.rows[0]!.savedAt,
      'ready',
    ]);

    const dropped = await runPendingDrop({ hash, serviceStore });
    expect(dropped.kind).toBe('value');
    const [message] = dropped.info ?? [];
    const kept = /^retired the pending session of [0-9a-f]{64}; kept in (.+)$/.exec(message ?? '')?.[1];
    expect(kept && existsSync(kept)).toBe(true);
    expect(bed.pendingHashes()).toEqual([]);
    await expect(runPendingDrop({ hash, serviceStore })).rejects.toMatchObject({
      code: 'no_pending_session',
      exitCode: 2,
    });
  });
});

describe('pending drop of a session that asked for custody', () => {
  it('takes the custody metadata it would have owed with it: never sent later, complete --all not stuck on it', async () => {
    const doc = await bed.file('custody-dropped.txt', 'custody, then dropped');
    const hash = sha256('custody, then dropped');
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'status', value: 400, count: 1 }]);
    expect((await bed.main(['register', doc, '--custody'])).code).toBe(1);
    const custody = `${bed.serviceDir()}/custody/${hash}.json`;
    expect(existsSync(custody)).toBe(true);
    const dropped = await bed.main(['pending', 'drop', hash]);
    expect(dropped.code, dropped.stderr).toBe(0);
    expect(existsSync(custody)).toBe(false);
    const all = await bed.main(['complete', '--all']);
    expect(all.code, all.stderr).toBe(0);
    // Registered again without custody: no metadata of the dropped session goes with it.
    expect((await bed.main(['register', doc])).code).toBe(0);
    expect((await bed.main(['complete', '--all'])).code).toBe(0);
    expect(bed.sandbox.files.has(hash)).toBe(false);
  });

  it('`pending` says when a registration still owes its custody metadata, and what sends it', async () => {
    const doc = await bed.file('custody-owed.txt', 'custody owed');
    const hash = sha256('custody owed');
    bed.sandbox.addFaults([{ route: 'file', kind: 'status', value: 503, count: 1 }]);
    expect((await bed.main(['register', doc, '--custody', '--retries', '0'])).code).toBe(4);
    const listed = await bed.main(['pending']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stderr).toContain(
      `custody metadata not yet taken by the service, of ${hash} (registered): \`notarize complete --all\` sends it`,
    );
    expect((await bed.main(['complete', '--all'])).code).toBe(0);
    expect((await bed.main(['pending'])).stderr).not.toContain('custody');
  });

  it('complete --all that sent metadata for one and found another damaged: exit 1, never 2 (something was sent)', async () => {
    const [a, b] = [await bed.file('owed-a.txt', 'owed a'), await bed.file('owed-b.txt', 'owed b')];
    bed.sandbox.addFaults([{ route: 'file', kind: 'status', value: 503, count: 2 }]);
    expect((await bed.main(['register', a, b, '--custody', '--retries', '0'])).code).toBe(4);
    writeFileSync(`${bed.serviceDir()}/custody/${sha256('owed a')}.json`, 'garbage');
    const all = await bed.main(['complete', '--all']);
    expect(all.code, all.stderr).toBe(1);
    expect(bed.sandbox.files.has(sha256('owed b'))).toBe(true);
    expect(all.stderr).toContain(`custody/${sha256('owed a')}.json`);
  });
});

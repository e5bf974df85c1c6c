/**
 * Every CI re-run ends well (issue 9): a service that already knows the hash,
 * a forfait whose answer was lost, a 2xx whose body cannot be read, a given
 * session the service does not know. Each reproduction ends with its
 * documented exit code and a store that needs no hand editing: `pending`
 * lists only what `complete` can still finish.
 *
 * In process through main() against a sandbox on 127.0.0.1 port 0.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectFailure } from '../helpers/assert.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { routes } from '../helpers/sandbox.js';
import { parseFaults } from '../../src/sandbox/server.js';
import { sha256 } from '../helpers/documents.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

/** What `pending --json` lists: hash and state of each pending session. */
async function pending(): Promise<{ hash: string; state: string }[]> {
  const listed = await bed.main(['pending', '--json']);
  expect(listed.code, listed.stderr).toBe(0);
  return (JSON.parse(listed.stdout) as { hash: string; state: string }[]).map(({ hash, state }) => ({ hash, state }));
}

/**
 * The one warning of a run that could write no receipt after a 409: it must not say that the run that paid has
 * the record, which that run may never have received (its answer lost).
 */
function expectNoClaimedRecord(stderr: string): void {
  const warnings = stderr.split('\n').filter((line) => line.includes('no receipt written'));
  expect(warnings, stderr).toHaveLength(1);
  expect(warnings[0]).toMatch(
    /if that run received it, its store,? or its receipts[^;]* have it; if its answer was lost, nothing has/,
  );
  expect(warnings[0]).not.toMatch(/to the run that paid(: its store|\))/);
}

/** The files kept aside in `retired/` of the bed's service. */
function retired(): string[] {
  const dir = join(bed.serviceDir(), 'retired');
  return existsSync(dir) ? readdirSync(dir).filter((name) => !name.startsWith('.')) : [];
}

describe('the service already has the hash (409)', () => {
  it('a new empty store registering a document the service has: exit 0, already-registered, no record, the page', async () => {
    const doc = await bed.file('known.txt', 'known to the service');
    const hash = sha256('known to the service');
    const first = await bed.main(['register', doc]);
    expect(first.code, first.stderr).toBe(0);

    const mark = bed.mark();
    const fresh = await bed.main(['register', doc, '--json'], {
      env: { NOTARIZE_CONFIG_DIR: join(bed.root, 'another-empty-store') },
    });
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(routes(bed.callsSince(mark)).filter((r) => r !== 'login')).toEqual(['request']);
    expect(JSON.parse(fresh.stdout)).toEqual({
      hash,
      status: 'already-registered',
      record: null,
      verificationUrl: `${bed.url}/verification/${hash}`,
      message: `the hash ${hash} is already registered`,
    });
    expect(fresh.stderr).toMatch(/already registered: the service says so \(409/);
    expect(fresh.stderr).not.toMatch(/answered 409/);

    // That store keeps the 409: --aggregate then puts the document under no new root to pay for.
    const aggregate = await bed.main(['register', '--aggregate', doc, '--json'], {
      env: { NOTARIZE_CONFIG_DIR: join(bed.root, 'another-empty-store') },
    });
    expect(aggregate.code, aggregate.stderr).toBe(0);
    expect(JSON.parse(aggregate.stdout)).toMatchObject([{ hash, status: 'already-registered' }]);
    expect(routes(bed.callsSince(mark)).filter((r) => r !== 'login')).toEqual(['request']);
  });

  it('in a batch, a document the service has is already-registered beside a new one; exit 0', async () => {
    const known = await bed.file('a.txt', 'batch known');
    const fresh = await bed.file('b.txt', 'batch new');
    expect((await bed.main(['register', known])).code).toBe(0);
    const otherStore = { NOTARIZE_CONFIG_DIR: join(bed.root, 'second-store') };
    const run = await bed.main(['register', known, fresh, '--output', 'ndjson'], { env: otherStore });
    expect(run.code, run.stderr).toBe(0);
    const results = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { file: string; status: string; record: unknown; message?: string });
    const byFile = new Map(results.map((r) => [r.file, r]));
    expect(byFile.get(known)).toMatchObject({ status: 'already-registered', record: null });
    expect(byFile.get(known)!.message).toMatch(/already registered/);
    expect(byFile.get(fresh)).toMatchObject({ status: 'registered' });
  });

  it('--force on a hash the ledger and the service have: exit 0 with the ledger record, nothing new paid', async () => {
    const doc = await bed.file('forced.txt', 'forced');
    const first = await bed.main(['register', doc, '--json']);
    expect(first.code).toBe(0);
    const forced = await bed.main(['register', doc, '--force', '--json']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stdout).toBe(first.stdout);
    expect(forced.stderr).toMatch(/already registered \(completed .*; the service says so \(409/);
    // --force was the way just taken: not offered again.
    expect(forced.stderr).not.toContain('--force');
    expect(bed.calls('forfait')).toBe(1);
  });
  it('a receipt PowerShell saved as UTF-16, a new store: kept as the receipt, verified, nothing paid again (r92)', async () => {
    const doc = await bed.file('powershell.txt', 'a receipt saved by PowerShell 5');
    const receipts = bed.path('ps-receipts');
    const first = await bed.main(['register', doc, '--receipt-dir', receipts]);
    expect(first.code, first.stderr).toBe(0);
    const receipt = join(receipts, 'powershell.txt.notarization.json');
    // `notarize receipt <hash> > file` in PowerShell 5: UTF-16LE with a byte order mark.
    writeFileSync(receipt, Buffer.from(`\uFEFF${readFileSync(receipt, 'utf8')}`, 'utf16le'));
    const cold = { NOTARIZE_CONFIG_DIR: bed.path('ps-store') };
    const verified = await bed.main(['verify', doc, '--receipt-dir', receipts, '--output', 'ndjson'], { env: cold });
    expect(verified.code, verified.stderr).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ status: 'verified', receipt });
    const again = await bed.main(['register', doc, '--receipt-dir', receipts, '--output', 'ndjson'], { env: cold });
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ status: 'already-registered', receipt });
    expect(bed.calls('forfait')).toBe(1);
  });
});

describe('a forfait whose answer was lost (drop-after)', () => {
  it('register --receipt-dir run again: no receipt, and the warning says this store paid, its answer lost', async () => {
    const doc = await bed.file('lost-receipt.txt', 'lost answer, receipt asked');
    const receipts = bed.path('lost-receipts');
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'drop-after', count: 1 }]);
    expect((await bed.main(['register', doc, '--receipt-dir', receipts])).code).toBe(4);
    const again = await bed.main(['register', doc, '--receipt-dir', receipts]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('a completion this store sent earlier went through but its answer was lost');
    // Not "the run that paid has it": this store was that run.
    expect(again.stderr).not.toContain('to the run that paid');
  });

  it('register --receipt-dir on an empty store after another run paid and lost the answer: the warning claims no one has the record', async () => {
    const doc = await bed.file('lost-elsewhere.txt', 'paid elsewhere, answer lost');
    const receipts = bed.path('lost-elsewhere-receipts');
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'drop-after', count: 1 }]);
    expect((await bed.main(['register', doc, '--receipt-dir', receipts])).code).toBe(4);
    // A store of its own: this run is not the one that paid, and cannot know whether that one got the record.
    const cold = await bed.main(['register', doc, '--receipt-dir', receipts], {
      env: { NOTARIZE_CONFIG_DIR: bed.path('lost-elsewhere-store') },
    });
    expect(cold.code, cold.stderr).toBe(0);
    expectNoClaimedRecord(cold.stderr);
  });

  it('--aggregate, a document of its own pending whose completion was answered 409: the warning claims no one has the record', async () => {
    const doc = await bed.file('lost-own/a.txt', 'own session, completion answer lost');
    const other = await bed.file('lost-own/b.txt', 'own session, the other document');
    const receipts = bed.path('lost-own-receipts');
    expect((await bed.main(['register', doc, '--no-complete'])).code).toBe(0);
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'drop-after', count: 1 }]);
    expect((await bed.main(['complete', sha256('own session, completion answer lost')])).code).toBe(4);
    const run = await bed.main(['register', '--aggregate', doc, other, '--receipt-dir', receipts]);
    expect(run.code, run.stderr).toBe(0);
    expectNoClaimedRecord(run.stderr);
  });

  it('the next complete ends with exit 0 and nothing pending; the session is kept aside, never re-sent', async () => {
    const doc = await bed.file('lost.txt', 'lost answer');
    const hash = sha256('lost answer');
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'drop-after', count: 1 }]);
    const lost = await bed.main(['register', doc]);
    expectFailure(lost, 4, /forfait failed/);
    expect(await pending()).toEqual([{ hash, state: 'ready' }]);

    // The documented CI loop: `pending --json | jq -r '.[].hash' | xargs notarize complete`.
    const completed = await bed.main(['complete', hash]);
    expect(completed.code, completed.stderr).toBe(0);
    expect(completed.stdout).toMatch(/already registered \(the service says so/);
    expect(completed.stderr).toMatch(/moved aside to .*retired/);
    expect(await pending()).toEqual([]);
    const kept = retired();
    expect(kept).toHaveLength(1);
    const aside = JSON.parse(readFileSync(join(bed.serviceDir(), 'retired', kept[0]!), 'utf8')) as {
      hash: string;
      sessionJson: string;
      retiredBecause: string;
    };
    expect(aside.hash).toBe(hash);
    expect(aside.retiredBecause).toMatch(/409/);
    expect(JSON.parse(aside.sessionJson)).toMatchObject({ planNickname: 'FREE' });

    // The same complete again (a CI step re-run): the same answer, exit 0, nothing sent (was exit 2).
    const calls = bed.mark();
    const again = await bed.main(['complete', hash, '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ hash, status: 'already-registered', record: null });
    expect(bed.callsSince(calls)).toEqual([]);

    // Nothing sends it again: register (plain or --force) asks anew and is told 409 (the 409 is an
    // assumption: one the service sent for another reason must not stick), keeping no more marks of
    // it (one more on every CI re-run, they were).
    const marks = () => readdirSync(join(bed.serviceDir(), 'retired')).filter((name) => name.startsWith(hash));
    expect(marks()).toHaveLength(1);
    for (const args of [
      ['register', doc],
      ['register', doc, '--force'],
      ['register', doc],
    ]) {
      const mark = bed.mark();
      const again = await bed.main(args);
      expect(again.code, again.stderr).toBe(0);
      expect(routes(bed.callsSince(mark))).toEqual(['request']);
      expect(await pending()).toEqual([]);
    }
    expect(marks()).toHaveLength(1);
    expect(bed.calls('forfait')).toBe(2);
  });

  it('register after a lost forfait answer also ends with exit 0 (it completes with the pending session)', async () => {
    const doc = await bed.file('lost-register.txt', 'lost answer, then register');
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'drop-after', count: 1 }]);
    expect((await bed.main(['register', doc])).code).toBe(4);
    const again = await bed.main(['register', doc]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/already registered/);
    expect(await pending()).toEqual([]);
    // Its record never arrived: show says it is registered, and why there is nothing to show.
    const show = await bed.main(['show', doc]);
    expect(show.code).toBe(6);
    expect(show.stderr).toContain(`answered 409 for it), but this store never received its record`);
    // And verify, which cannot call it verified, says the same rather than a bare "unknown".
    const verify = await bed.main(['verify', doc, '--output', 'ndjson']);
    expect(verify.code).toBe(6);
    expect(JSON.parse(verify.stdout)).toMatchObject({
      status: 'unknown',
      reason: expect.stringContaining('the service said it has it (a 409), but this store never received the record'),
    });
  });
});

describe('a forfait answered 401, then the login to replace the token fails', () => {
  // The error is the login's (a 5xx, an HTML page): it must not make a completion answered 401, so not
  // taken, "may have been completed" (r112), nor mark its session or root as possibly paid for.
  it.each(['status=500', 'html'])(
    'login %s: says the completion was not taken; the session kept, ready; a re-run pays once',
    async (kind) => {
      const warm = await bed.file('warm.txt', 'a token stored first');
      expect((await bed.main(['register', warm])).code).toBe(0);
      const doc = await bed.file(`refused-${kind}.txt`, `forfait refused, then login ${kind}`);
      const hash = sha256(`forfait refused, then login ${kind}`);
      bed.sandbox.addFaults(parseFaults(`forfait:status=401*1,login:${kind}*1`));
      const run = await bed.main(['register', doc], { env: { NOTARIZE_RETRIES: '0' } });
      expectFailure(
        run,
        kind === 'html' ? 5 : 4,
        /the completion was refused its token \(401\), so not taken, and logging in again failed; the session is kept: finish with `notarize complete [0-9a-f]{64}`/,
      );
      expect(run.stderr).not.toContain('may have completed');
      expect(await pending()).toEqual([{ hash, state: 'ready' }]);

      const again = await bed.main(['register', doc]);
      expect(again.code, again.stderr).toBe(0);
      expect(await pending()).toEqual([]);
      expect(bed.calls('forfait')).toBe(3); // warm's, the refused one, the one that went through
    },
  );

  it('custody metadata: not taken after a 401 alone; perhaps taken when an attempt before the 401 lost its answer (r118)', async () => {
    const warm = await bed.file('warm-custody.txt', 'a token stored first');
    expect((await bed.main(['register', warm])).code).toBe(0);
    const env = { NOTARIZE_RETRIES: '1', NOTARIZE_RETRY_DELAY_MS: '0' };
    for (const [faults, said] of [
      ['file:status=401*1,login:status=503*2', 'could not be sent'],
      ['file:drop-after*1,file:status=401*1,login:status=503*2', 'may have been taken but is not confirmed'],
      // r119: the re-login works, and the attempts with the new token are refused again, or fail (503s; last:
      // what the run leaves of them stays for the next).
      ['file:drop-after*1,file:status=401*2', 'may have been taken but is not confirmed'],
      ['file:drop-after*1,file:status=401*1,file:status=503@0*2', 'may have been taken but is not confirmed'],
    ] as const) {
      const doc = await bed.file(`custody-${faults.length}.txt`, `custody metadata, ${faults}`);
      bed.sandbox.addFaults(parseFaults(faults));
      const run = await bed.main(['register', doc, '--custody'], { env });
      expect([3, 4], run.stderr).toContain(run.code);
      expect(run.stderr, faults).toContain(`custody: the file metadata ${said}, and the file itself was NOT uploaded.`);
    }
  });

  it('--aggregate: no warning that the root may have been paid for, its answer lost', async () => {
    const warm = await bed.file('warm-root.txt', 'a token stored first');
    expect((await bed.main(['register', warm])).code).toBe(0);
    const a = await bed.file('refused-root/a.txt', 'refused root a');
    const b = await bed.file('refused-root/b.txt', 'refused root b');
    bed.sandbox.addFaults(parseFaults('forfait:status=401*1,login:status=500*1'));
    const run = await bed.main(['register', '--aggregate', a, b], { env: { NOTARIZE_RETRIES: '0' } });
    expect(run.code, run.stderr).toBe(4);
    expect(run.stderr).not.toContain('may have been registered and paid for');
    const again = await bed.main(['register', '--aggregate', a, b]);
    expect(again.code, again.stderr).toBe(0);
    expect(bed.calls('forfait')).toBe(3);
  });
});

describe('pending drop', () => {
  it('retires a pending session by hand: kept aside, no longer listed, never sent', async () => {
    const doc = await bed.file('dropped.txt', 'dropped');
    const hash = sha256('dropped');
    expect((await bed.main(['register', doc, '--no-complete'])).code).toBe(0);
    const pendingFile = bed.pendingFile(hash);
    const before = readFileSync(pendingFile, 'utf8');

    const dropped = await bed.main(['pending', 'drop', hash.toUpperCase()]);
    expect(dropped.code, dropped.stderr).toBe(0);
    expect(dropped.stdout).toBe('');
    expect(dropped.stderr).toMatch(new RegExp(`retired the pending session of ${hash}; kept in .*retired`));
    expect(await pending()).toEqual([]);
    expect(existsSync(pendingFile)).toBe(false);
    const aside = JSON.parse(readFileSync(join(bed.serviceDir(), 'retired', retired()[0]!), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(aside).toMatchObject(JSON.parse(before) as Record<string, unknown>);

    const again = await bed.main(['pending', 'drop', hash]);
    expectFailure(again, 2, /no pending session for/);
  });

  it('retires a damaged pending file as it is, bytes untouched', async () => {
    const doc = await bed.file('damaged.txt', 'damaged pending');
    const hash = sha256('damaged pending');
    expect((await bed.main(['register', doc, '--no-complete'])).code).toBe(0);
    writeFileSync(bed.pendingFile(hash), '{ not json');
    const listed = await bed.main(['pending']);
    expect(listed.stderr).toMatch(new RegExp(`notarize pending drop ${hash}`));
    const dropped = await bed.main(['pending', 'drop', hash]);
    expect(dropped.code, dropped.stderr).toBe(0);
    const [name] = retired();
    expect(name).toMatch(/\.damaged\.json$/);
    expect(readFileSync(join(bed.serviceDir(), 'retired', name!), 'utf8')).toBe('{ not json');
    expect((await bed.main(['register', doc])).code).toBe(0);
  });
});

describe('a given session the service does not know (404)', () => {
  it.each([['--session'], ['--use-active-subscription']])(
    'complete <new hash> %s: exit 1, and no pending file is left behind',
    async (how) => {
      const hash = sha256(`never requested ${how}`);
      const args = ['complete', hash, how];
      if (how === '--session') {
        const issued = await bed.main([
          'register',
          await bed.file('s.txt', 'session source'),
          '--no-complete',
          '--json',
        ]);
        args.push(await bed.file('session.json', issued.stdout));
      }
      const run = await bed.main(args);
      expectFailure(run, 1, /answered 404/);
      expect(run.stderr).toMatch(/the session given was not kept/);
      expect((await pending()).map((p) => p.hash)).not.toContain(hash);
      expect(existsSync(bed.pendingFile(hash))).toBe(false);
    },
  );
});

describe('a 2xx whose body cannot be read', () => {
  it('a completion answered gzip-compressed, though notarize asks for none, is decoded: registered, its record kept', async () => {
    const doc = await bed.file('gzip.txt', 'record sent compressed');
    const hash = sha256('record sent compressed');
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'gzip', count: 1 }]);
    const run = await bed.main(['register', doc, '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'registered', hash });
    expect(await pending()).toEqual([]);
    expect(bed.ledgerHashes()).toContain(hash);
  });

  it.each(['stall', 'undecodable', 'html'] as const)(
    'forfait answers 200 (%s): exit 5 with what to do; a re-run sends nothing; complete sends it again',
    async (kind) => {
      const doc = await bed.file(`${kind}.txt`, `unreadable ${kind}`);
      const hash = sha256(`unreadable ${kind}`);
      bed.sandbox.addFaults([{ route: 'forfait', kind, count: 1 }]);
      const env = { NOTARIZE_TIMEOUT: '1500' };
      const first = await bed.main(['register', doc], { env });
      expectFailure(first, 5, new RegExp(`notarize complete ${hash}\` sends the session again`));
      expect(first.stderr.trim().split('\n')).toHaveLength(1);
      expect(await pending()).toEqual([{ hash, state: 'answer-unread' }]);

      const mark = bed.mark();
      const rerun = await bed.main(['register', doc], { env });
      expectFailure(rerun, 5, /could not be read, or was no record of it; notarize does not send it again on its own/);
      expect(routes(bed.callsSince(mark)).filter((r) => r !== 'login')).toEqual([]);

      const completed = await bed.main(['complete', hash], { env });
      expect(completed.code, completed.stderr).toBe(0);
      // stall and undecodable were processed by the sandbox (409 now), html was not.
      expect(completed.stderr).toMatch(kind === 'html' ? /^registered / : /already registered/m);
      expect(await pending()).toEqual([]);
    },
  );

  it('the request step answers 200 and stalls: exit 5 naming the hash, never retried', async () => {
    const doc = await bed.file('stalled-request.txt', 'stalled request');
    const hash = sha256('stalled request');
    bed.sandbox.addFaults([{ route: 'request', kind: 'stall', count: 1 }]);
    const mark = bed.mark();
    const run = await bed.main(['register', doc], { env: { NOTARIZE_TIMEOUT: '1000' } });
    expectFailure(run, 5, /answered 200, but its body could not be read \(it stalled\)/);
    expect(run.stderr).toContain(`notarize complete ${hash} --use-active-subscription`);
    expect(routes(bed.callsSince(mark)).filter((r) => r !== 'login')).toEqual(['request']);
    expect(await pending()).toEqual([{ hash, state: 'request-unread' }]);

    // A plain re-run does not request again (a second subscription session).
    const again = bed.mark();
    const rerun = await bed.main(['register', doc]);
    expectFailure(rerun, 5, /notarize does not request it again on its own/);
    expect(routes(bed.callsSince(again)).filter((r) => r !== 'login')).toEqual([]);

    // `complete` alone has no session to send, and says the way out rather than "register it first".
    const plain = await bed.main(['complete', hash]);
    expectFailure(plain, 5, /notarize does not request it again on its own/);
    expect(plain.stderr).toContain(`notarize complete ${hash} --use-active-subscription`);
    expect(plain.stderr).not.toMatch(/register it first/);

    // Completing it with the active subscription clears it.
    const completed = await bed.main(['complete', hash, '--use-active-subscription']);
    expect(completed.code, completed.stderr).toBe(0);
    expect(await pending()).toEqual([]);
    expect((await bed.main(['register', doc])).stderr).toMatch(/already registered/);
  });

  it('complete --all reports an unread request step as failed (exit 5, the way out), not "nothing pending"', async () => {
    const doc = await bed.file('all-unread.txt', 'complete --all meets an unread request');
    const hash = sha256('complete --all meets an unread request');
    bed.sandbox.addFaults([{ route: 'request', kind: 'truncated', count: 1 }]);
    expect((await bed.main(['register', doc])).code).toBe(5);
    const mark = bed.mark();
    const all = await bed.main(['complete', '--all', '--json']);
    expect(all.code, all.stderr).toBe(5);
    expect(all.stderr).not.toMatch(/no session is pending/);
    expect(JSON.parse(all.stdout)).toMatchObject([{ hash, status: 'failed', error: { code: 'protocol' } }]);
    expect(all.stderr).toContain(`notarize complete ${hash} --use-active-subscription`);
    expect(routes(bed.callsSince(mark)).filter((r) => r !== 'login')).toEqual([]);
    expect((await bed.main(['pending', 'drop', hash])).code).toBe(0);
  });

  it("a Merkle root's unread request step: its documents are not paid one by one, nor their own sessions by --all", async () => {
    const a = await bed.file('unread-root/a.txt', 'under an unread root a');
    const b = await bed.file('unread-root/b.txt', 'under an unread root b');
    // b's own session, saved before the aggregate run.
    expect((await bed.main(['register', b, '--no-complete'])).code).toBe(0);
    bed.sandbox.addFaults([{ route: 'request', kind: 'truncated', count: 1 }]);
    const aggregate = await bed.main(['register', '--aggregate', a, b, '--force', '--json']);
    expect(aggregate.code, aggregate.stderr).toBe(5);
    const root = (await pending()).find((p) => p.state === 'request-unread')!.hash;

    // One by one: nothing sent, each failed with the root's way out.
    const mark = bed.mark();
    const single = await bed.main(['register', a, b]);
    expect(single.code, single.stdout + single.stderr).toBe(5);
    expect(single.stdout).toContain(`under the Merkle root ${root}, whose request step was answered unreadably`);
    expect(single.stderr).toContain(`notarize complete ${root} --use-active-subscription`);
    // No --force offered: it would pay for the document, and completing the root would pay for it again.
    expect(single.stderr).not.toContain('--force');
    expect(routes(bed.callsSince(mark)).filter((r) => r !== 'login')).toEqual([]);

    // b's own session is blocked, and --all leaves it (and reports the root).
    expect(await pending()).toEqual(
      expect.arrayContaining([
        { hash: sha256('under an unread root b'), state: 'blocked' },
        { hash: root, state: 'request-unread' },
      ]),
    );
    const all = await bed.main(['complete', '--all', '--json']);
    // b's session waits on the root, as the root itself does: exit 5, as README says.
    expect(all.code, all.stderr).toBe(5);
    expect(all.stderr).toContain(`complete the root with \`notarize complete ${root} --use-active-subscription\``);
    expect(JSON.parse(all.stdout)).toHaveLength(2);
    expect(routes(bed.callsSince(mark)).filter((r) => r !== 'login')).toEqual([]);

    // Completing the root with the active subscription pays once for both; b's session is then left out.
    const completed = await bed.main(['complete', root, '--use-active-subscription']);
    expect(completed.code, completed.stderr).toBe(0);
    const after = await bed.main(['register', a, b, '--json']);
    expect(after.code, after.stderr).toBe(0);
    expect(routes(bed.callsSince(mark)).filter((r) => r === 'forfait')).toHaveLength(1);
    expect((await bed.main(['pending', 'drop', sha256('under an unread root b')])).code).toBe(0);
  });

  /**
   * A document (`<folder>/one.txt` holding `text`) whose request step is answered unreadably (exit 5),
   * then registered with `--aggregate` beside `<folder>/two.txt` (holding `beside`), with `flags`:
   * its digest, and the aggregate run.
   */
  async function unreadThenUnderRoot(folder: string, text: string, beside: string, flags: string[]) {
    const one = await bed.file(`${folder}/one.txt`, text);
    const two = await bed.file(`${folder}/two.txt`, beside);
    bed.sandbox.addFaults([{ route: 'request', kind: 'truncated', count: 1 }]);
    expect((await bed.main(['register', one])).code).toBe(5);
    const aggregate = await bed.main(['register', '--aggregate', one, two, ...flags]);
    expect(aggregate.code, aggregate.stderr).toBe(0);
    return { hash: sha256(text), aggregate };
  }

  it('a document whose own request step was unread, registered since under a Merkle root: --all leaves it out', async () => {
    // complete --all failed it (exit 5) on every run, and its way out, --use-active-subscription, paid
    // for the document a second time.
    const { hash, aggregate } = await unreadThenUnderRoot(
      'unread-then-root',
      'unread, then under a root',
      'beside it under the root',
      ['--json'],
    );
    const root = (JSON.parse(aggregate.stdout) as { proof: { root: string } }[])[0]!.proof.root;
    expect(await pending()).toEqual([{ hash, state: 'under-root' }]);
    const mark = bed.mark();
    const all = await bed.main(['complete', '--all', '--json']);
    expect(all.code, all.stderr).toBe(0);
    expect(JSON.parse(all.stdout)).toMatchObject([
      {
        hash,
        status: 'skipped',
        reason: `left out: registered under the Merkle root ${root}, so completing its own request step, answered unreadably, would pay a second time`,
      },
    ]);
    expect(all.stderr).not.toContain('--use-active-subscription');
    // Named alone: refused, nothing sent, and no hint toward the active subscription (it paid again).
    const named = await bed.main(['complete', hash]);
    expectFailure(named, 2, new RegExp(`registered under the Merkle root ${root}: its own request step`));
    expect(named.stderr).not.toContain('--use-active-subscription');
    expect(named.stderr).toContain(`notarize pending drop ${hash}`);
    expect(routes(bed.callsSince(mark)).filter((r) => r !== 'login')).toEqual([]);
    expect((await bed.main(['pending', 'drop', hash])).code).toBe(0);
  });

  it('an unread request step under a root pending here, or named with others, or with the active subscription: refused', async () => {
    // Each of these paid for the document a second time (the review of 72daa7d).
    const { hash } = await unreadThenUnderRoot(
      'unread-pending-root',
      'unread, then under a pending root',
      'beside it under the pending root',
      ['--no-complete', '--json'],
    );
    expect(await pending()).toContainEqual({ hash, state: 'under-root' });
    const mark = bed.mark();
    for (const args of [
      [hash],
      [hash, '--use-active-subscription'],
      [hash, sha256('beside it under the pending root')],
    ]) {
      const run = await bed.main(['complete', ...args]);
      expect(run.code, run.stdout + run.stderr).not.toBe(0);
      expect(run.stdout + run.stderr).toContain(`${hash} is a leaf of the Merkle root`);
      expect(run.stderr).not.toContain(`notarize complete ${hash} --use-active-subscription`);
    }
    expect(routes(bed.callsSince(mark)).filter((r) => r === 'forfait' || r === 'active')).toEqual([]);
    expect((await bed.main(['pending', 'drop', hash])).code).toBe(0);
  });

  it('--custody over an unread request step: completed with the active subscription, the file metadata is sent', async () => {
    // The metadata was dropped without a word: the record said custody true, and no PUT went out.
    const doc = await bed.file('unread-custody.txt', 'custody over an unread request');
    const hash = sha256('custody over an unread request');
    bed.sandbox.addFaults([{ route: 'request', kind: 'truncated', count: 1 }]);
    expect((await bed.main(['register', '--custody', doc])).code).toBe(5);
    const mark = bed.mark();
    const completed = await bed.main(['complete', hash, '--use-active-subscription']);
    expect(completed.code, completed.stderr).toBe(0);
    expect(routes(bed.callsSince(mark)).filter((r) => r !== 'login')).toEqual(['active', 'forfait', 'file']);
    // No session was pending: the active subscription's was used.
    expect(completed.stderr).toMatch(new RegExp(`^registered ${hash}$`, 'm'));
  });

  it('--custody with its session pending, completed with a session given by hand: the file metadata is sent', async () => {
    const doc = await bed.file('given-custody.txt', 'custody, completed by hand');
    const hash = sha256('custody, completed by hand');
    const issued = await bed.main(['register', '--custody', doc, '--no-complete', '--json']);
    expect(issued.code, issued.stderr).toBe(0);
    const mark = bed.mark();
    const completed = await bed.main([
      'complete',
      hash,
      '--session',
      await bed.file('custody-session.json', issued.stdout),
    ]);
    expect(completed.code, completed.stderr).toBe(0);
    expect(routes(bed.callsSince(mark)).filter((r) => r !== 'login')).toEqual(['forfait', 'file']);
  });

  it('complete of several hashes, one of them answered 409 before: already registered, exit 0, not "no pending session"', async () => {
    // It failed with no_pending_session (exit 2 with --json, "register it first") on every re-run.
    const a = await bed.file('confirmed-a.txt', 'confirmed by a 409 a');
    const b = await bed.file('confirmed-b.txt', 'confirmed by a 409 b');
    const [hashA, hashB] = [sha256('confirmed by a 409 a'), sha256('confirmed by a 409 b')];
    expect((await bed.main(['register', a, b, '--no-complete'])).code).toBe(0);
    const other = { env: { NOTARIZE_CONFIG_DIR: join(bed.root, 'other-store') } };
    expect((await bed.main(['register', a], other)).code).toBe(0);
    expect((await bed.main(['complete', hashA])).code).toBe(0); // 409: its session retired
    // And again, as a CI re-run of the same step: the same answer.
    for (const second of ['registered', 'already-registered']) {
      const run = await bed.main(['complete', hashA, hashB, '--json']);
      expect(run.code, run.stderr).toBe(0);
      const statuses = (JSON.parse(run.stdout) as { status: string }[]).map((r) => r.status);
      expect(statuses).toEqual(['already-registered', second]);
    }
  });

  it('pending drop forgets an unread request step, and register then requests anew', async () => {
    const doc = await bed.file('dropped-request.txt', 'dropped request');
    const hash = sha256('dropped request');
    bed.sandbox.addFaults([{ route: 'request', kind: 'undecodable', count: 1 }]);
    expect((await bed.main(['register', doc])).code).toBe(5);
    const dropped = await bed.main(['pending', 'drop', hash]);
    expect(dropped.code, dropped.stderr).toBe(0);
    expect(dropped.stderr).toMatch(/forgot the unread request step/);
    expect(await pending()).toEqual([]);
    const registered = await bed.main(['register', doc]);
    expect(registered.code, registered.stderr).toBe(0);
  });
});

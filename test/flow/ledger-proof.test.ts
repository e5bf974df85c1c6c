/**
 * The ledger holds only records of their own hash (issue 10, finding 3): a
 * forfait answer that is not a record of the hash (another hash, no hash,
 * `{}`, an error object) is kept aside in quarantine/, never in the ledger;
 * `verify` never says "verified" for it, and a re-run writes no receipt of it.
 * A ledger entry whose record names another hash is refused on every read.
 *
 * In process through main(), against the sandbox behind a rewriting proxy on
 * 127.0.0.1 that replaces the forfait answer.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectFailure } from '../helpers/assert.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { sha256 } from '../helpers/documents.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

const OTHER_HASH = 'ab'.repeat(32);

/** Forfait answers that are 2xx but no record of the hash asked for. */
const NOT_A_RECORD: [string, (record: Record<string, unknown>) => unknown][] = [
  ['another hash', (record) => ({ ...record, hash: OTHER_HASH })],
  ['no hash', ({ hash: _dropped, ...rest }) => rest],
  ['an empty object', () => ({})],
  ['an error object', () => ({ error: 'insufficient credit' })],
];

describe('a forfait answer that is not a record of the hash', () => {
  it.each(NOT_A_RECORD)('%s: exit 5, quarantined, never in the ledger; verify exit 6; no receipt', async (_, spoil) => {
    const proxy = await bed.proxy((method, path, status, body) =>
      method === 'POST' && path.endsWith('/forfait') && status === 200
        ? JSON.stringify(spoil(JSON.parse(body) as Record<string, unknown>))
        : undefined,
    );
    const env = { NOTARIZE_BASE_URL: proxy.url };
    const doc = await bed.file('doc.txt', `not a record ${_}`);
    const hash = sha256(`not a record ${_}`);

    const first = await bed.main(['register', doc], { env });
    expectFailure(first, 5, /is not its record/);
    expect(first.stderr).toMatch(/kept aside in .*quarantine/);
    const service = bed.serviceDir(proxy.url);
    expect(existsSync(join(service, 'ledger', `${hash}.json`))).toBe(false);
    const [kept] = readdirSync(join(service, 'quarantine'));
    const quarantined = JSON.parse(readFileSync(join(service, 'quarantine', kept!), 'utf8')) as {
      hash: string;
      answerText: string;
    };
    expect(quarantined.hash).toBe(hash);
    expect(quarantined.answerText).not.toBe('');

    const verify = await bed.main(['verify', doc], { env });
    expect(verify.code, verify.stderr).toBe(6);
    expect(verify.stdout).not.toMatch(/verified/);

    // The session stays recoverable, and a re-run neither sends it again nor writes a receipt.
    const pending = await bed.main(['pending', '--json'], { env });
    expect(JSON.parse(pending.stdout)).toMatchObject([{ hash, state: 'answer-unread' }]);
    const receipts = join(bed.root, 'R');
    const forfaits = bed.calls('forfait');
    const rerun = await bed.main(['register', doc, '--receipt-dir', receipts], { env });
    expectFailure(rerun, 5, /notarize does not send it again on its own/);
    expect(bed.calls('forfait')).toBe(forfaits);
    expect(existsSync(join(receipts, 'doc.txt.notarization.json'))).toBe(false);
  });
});

describe('a ledger entry whose record names another hash', () => {
  it('verify exits 6 naming the damaged entry; show and register refuse it', async () => {
    const doc = await bed.file('tampered.txt', 'tampered ledger');
    const hash = sha256('tampered ledger');
    expect((await bed.main(['register', doc])).code).toBe(0);
    const file = bed.ledgerFile(hash);
    const entry = JSON.parse(readFileSync(file, 'utf8')) as { recordJson: string };
    const record = JSON.parse(entry.recordJson) as Record<string, unknown>;
    entry.recordJson = JSON.stringify({ ...record, hash: OTHER_HASH });
    writeFileSync(file, JSON.stringify(entry));

    const verify = await bed.main(['verify', doc, '--json']);
    expect(verify.code).toBe(6);
    expect(verify.stderr).toContain(file);
    const [result] = JSON.parse(verify.stdout) as { status: string; reason: string }[];
    expect(result).toMatchObject({ status: 'unknown' });
    expect(result!.reason).toMatch(/its record is of hash (ab)+, not/);

    const show = await bed.main(['show', hash]);
    expectFailure(show, 2, new RegExp(`${file}.*is damaged \\(its record is of hash`));
    const register = await bed.main(['register', doc]);
    expectFailure(register, 2, /is damaged/);
  });
});

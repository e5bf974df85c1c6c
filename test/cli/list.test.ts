/** runList and runShow in process: the ledger's records as data, oldest first, and one record by digest or file. */
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ExactJson } from '../../src/exact-json.js';
import { runList } from '../../src/commands/list.js';
import { runShow } from '../../src/commands/show.js';
import { present } from '../../src/output/present.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { sha256 } from '../helpers/documents.js';
import { contextFor, type TestContext } from '../helpers/context.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

const ledgerOf = (t: TestContext) => ({ baseUrl: () => t.ctx.baseUrl, serviceStore: () => t.ctx.serviceStore });

async function registered(name: string, content: string): Promise<string> {
  const path = await bed.file(name, content);
  const run = await bed.main(['register', path, '--quiet', '-d', `about ${name}`]);
  expect(run.code, run.stderr).toBe(0);
  return sha256(content);
}

describe('runList', () => {
  it('an empty ledger: no rows, and the message for a table', async () => {
    const t = contextFor(bed);
    const result = await runList(ledgerOf(t));
    expect(result.rows).toEqual([]);
    await present({ io: t.io, env: {}, format: 'table' }, result);
    expect([t.stdout(), t.stderr()]).toEqual(['', `the ledger of ${bed.url} is empty\n`]);
  });

  it('rows oldest first, with the record as the service sent it; what `notarize list --json` prints', async () => {
    const first = await registered('a.txt', 'a\n');
    const second = await registered('b.txt', 'b\n');
    const t = contextFor(bed);
    const result = await runList(ledgerOf(t));
    expect(result.rows.map((r) => [r.hash, r.file, r.verificationUrl])).toEqual([
      [first, 'a.txt', `${bed.url}/verification/${first}`],
      [second, 'b.txt', `${bed.url}/verification/${second}`],
    ]);
    expect(result.rows[0]?.record).toEqual(ExactJson.of(bed.ledgerEntry(first).recordJson));
    expect(result.cells(result.rows[0]!)).toEqual([first, result.rows[0]!.completedAt, 'a.txt', 'about a.txt']);
    await present({ io: t.io, env: {}, format: 'json' }, result);
    expect(t.stdout()).toBe((await bed.main(['list', '--json'])).stdout);
  });

  it('a damaged ledger file: the rest listed, a warning, and exit 2 (never [] passing for the whole ledger)', async () => {
    const kept = await registered('kept.txt', 'kept\n');
    const damaged = await registered('damaged.txt', 'damaged\n');
    writeFileSync(bed.ledgerFile(damaged), '{"x":1');
    const run = await bed.main(['list', '--json']);
    expect(run.code, run.stderr).toBe(2);
    expect((JSON.parse(run.stdout) as { hash: string }[]).map((r) => r.hash)).toEqual([kept]);
    expect(run.stderr).toContain(bed.ledgerFile(damaged));
    expect(run.stderr).toMatch(/a ledger file could not be read: the list leaves it out/);
    // Only the damaged one: not "the ledger is empty".
    writeFileSync(bed.ledgerFile(kept), '{"x":1');
    const none = await bed.main(['list']);
    expect(none.code, none.stderr).toBe(2);
    expect(none.stderr).toContain(`no readable record in the ledger of ${bed.url}`);
    expect(none.stderr).not.toContain('is empty');
  });
});

describe('runShow', () => {
  it('one record, by digest or by file', async () => {
    const hash = await registered('a.txt', 'a\n');
    const t = contextFor(bed);
    const byHash = await runShow({ target: hash.toUpperCase(), ...ledgerOf(t) });
    expect(byHash).toEqual({ kind: 'record', hash, recordJson: bed.ledgerEntry(hash).recordJson, baseUrl: bed.url });
    expect(await runShow({ target: await bed.file('copy.txt', 'a\n'), ...ledgerOf(t) })).toEqual(byHash);
  });

  it('a directory: exit 2, with a hint that fits show (it takes no --recursive)', async () => {
    await bed.file('folder/a.txt', 'a\n');
    const run = await bed.main(['show', bed.path('folder')]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toBe(
      `notarize: '${bed.path('folder')}' is a directory ` +
        '(name one file in it, or a digest; `notarize list` shows what the ledger holds)\n',
    );
    expect(run.stderr).not.toContain('--recursive');
  });

  it('a digest not in the ledger: exit 6, naming the service', async () => {
    const hash = sha256('never');
    await expect(runShow({ target: hash, ...ledgerOf(contextFor(bed)) })).rejects.toMatchObject({
      exitCode: 6,
      message: `${hash} is not in the ledger of ${bed.url}`,
    });
  });
});

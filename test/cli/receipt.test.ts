/**
 * `notarize receipt <file|hash> [-o file]` (src/commands/receipt.ts): the v1
 * receipt of a ledger entry, made after the fact, that verify then accepts.
 */
import { lstatSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { optionsSchema, runReceipt } from '../../src/commands/receipt.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { describeRun } from '../helpers/cli.js';
import { contextFor } from '../helpers/context.js';
import { sha256 } from '../helpers/documents.js';
import { expectReceipt } from '../helpers/receipts.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

/** Writes and registers `name` (through main(), as a user would have). */
async function registered(name: string, content: string): Promise<string> {
  const path = await bed.file(name, content);
  const run = await bed.main(['register', path, '--quiet']);
  expect(run.code, run.stderr).toBe(0);
  return path;
}

function receiptOptions(target: string, output?: string) {
  const { ctx } = contextFor(bed);
  return {
    ...optionsSchema.parse(output === undefined ? {} : { output }),
    target,
    baseUrl: () => ctx.baseUrl,
    ledger: () => ctx.ledger,
  };
}

describe('notarize receipt', () => {
  it('of a file: the v1 receipt on stdout, naming the file and its size, nothing sent', async () => {
    const path = await registered('app.tar.gz', 'the app\n');
    const hash = sha256('the app\n');
    const mark = bed.mark();
    const run = await bed.main(['receipt', path]);
    expect(run.code, describeRun(run)).toBe(0);
    expect(bed.callsSince(mark)).toEqual([]);
    expectReceipt(run.stdout, {
      name: 'app.tar.gz',
      sha256: hash,
      size: 8,
      baseUrl: bed.url,
      record: bed.sandbox.records.get(hash),
      recordText: bed.ledgerEntry(hash).recordJson,
    });
    // The same bytes with --json: a receipt is JSON already.
    expect((await bed.main(['receipt', path, '--json'])).stdout).toBe(run.stdout);
  });

  it('of a digest: the name and size the ledger kept', async () => {
    await registered('kept.txt', 'kept\n');
    const hash = sha256('kept\n');
    const result = await runReceipt(receiptOptions(hash.toUpperCase()));
    expect(result.kind).toBe('value');
    expect(JSON.parse(result.text!.data!)).toMatchObject({ document: { name: 'kept.txt', sha256: hash, size: 5 } });
  });

  it('-o writes it (replacing a link, never writing through it), and verify accepts it with an empty store', async () => {
    const path = await registered('doc.txt', 'doc\n');
    const out = join(bed.workDir, 'doc.txt.receipt.json');
    const target = join(bed.workDir, 'precious');
    writeFileSync(target, 'precious');
    symlinkSync(target, out);
    const run = await bed.main(['receipt', path, '-o', out]);
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(`wrote the receipt of ${sha256('doc\n')} to ${out}\n`);
    expect(readFileSync(target, 'utf8')).toBe('precious');
    expect(lstatSync(out).isFile()).toBe(true);
    expect(statSync(out).mode & 0o777).toBe(0o666 & ~process.umask());

    const verify = await bed.main(['verify', path, '--receipt', out], {
      env: { NOTARIZE_CONFIG_DIR: join(bed.root, 'empty-store') },
    });
    expect(verify.code, describeRun(verify)).toBe(0);
    expect(verify.stderr).toMatch(/matches its receipt/);
  });

  it('not in the ledger: exit 6, nothing written', async () => {
    const path = await bed.file('new.txt', 'never registered\n');
    const out = join(bed.workDir, 'new.json');
    const run = await bed.main(['receipt', path, '-o', out]);
    expect(run.code, describeRun(run)).toBe(6);
    expect(run.stderr).toMatch(/^notarize: [0-9a-f]{64} is not in the ledger of /);
    expect(() => statSync(out)).toThrow();
  });
});

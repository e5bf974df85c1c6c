/**
 * runVerify called in process, against a ledger filled by registering with
 * the sandbox on port 0: one document's record, a batch's results in input
 * order and the failure they imply (2 before 6), and nothing sent, ever.
 */
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { optionsSchema, runVerify, type VerifyOptions } from '../../src/commands/verify.js';
import type { NotarizeError } from '../../src/errors.js';
import { itemResultsFor, present, type CommandResult } from '../../src/output/present.js';
import { ItemResults } from '../../src/output/results.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { sha256 } from '../helpers/documents.js';
import { contextFor, type TestContext } from '../helpers/context.js';
import { missingFileResult } from '../helpers/results.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

function options(t: TestContext, paths: string[]): VerifyOptions {
  const { ctx } = t;
  return {
    ...optionsSchema.parse({}),
    paths,
    io: ctx.io,
    baseUrl: () => ctx.baseUrl,
    serviceStore: () => ctx.serviceStore,
  };
}

function expectKind<K extends CommandResult['kind']>(
  result: CommandResult,
  kind: K,
): asserts result is Extract<CommandResult, { kind: K }> {
  expect(result.kind).toBe(kind);
}

/** Writes and registers `name` (through main(), as a user would have). */
async function registered(name: string, content: string): Promise<string> {
  const path = await bed.file(name, content);
  const run = await bed.main(['register', path, '--quiet']);
  expect(run.code, run.stderr).toBe(0);
  return path;
}

describe('runVerify', () => {
  it('a document whose receipt name would be too long to exist (238+ bytes): checked against the ledger, verified', async () => {
    const path = await registered(`${'x'.repeat(240)}.txt`, 'a long name');
    const run = await bed.main(['verify', path]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout + run.stderr).not.toContain('ENAMETOOLONG');
  });

  it('one verified document: its record from the ledger, a note, and its result for GitHub', async () => {
    const path = await registered('contract.pdf', 'contract\n');
    const hash = sha256('contract\n');
    const mark = bed.mark();
    const t = contextFor(bed);
    const result = await runVerify(options(t, [path]));
    expect(bed.callsSince(mark)).toEqual([]);
    expect(t.stdout()).toBe('');
    expectKind(result, 'record');
    const { recordJson } = bed.ledgerEntry(hash);
    expect(result).toMatchObject({
      hash,
      recordJson,
      baseUrl: bed.url,
      note: `verified: ${path} is notarized`,
      github: { title: 'notarize verify', results: [{ file: path, hash, status: 'verified' }] },
    });
    expect(result.failure).toBeUndefined();
    await present({ io: t.io, env: {}, format: 'json' }, result);
    expect(t.stdout()).toBe(`${recordJson}\n`);
    expect(t.stderr()).toBe(`verified: ${path} is notarized\n`);
  });

  it("files of one base name in two folders: one changed is modified without being blamed with the other's digest", async () => {
    await registered('linux/app', 'the linux build\n');
    const mac = await registered('mac/app', 'the mac build\n');
    await writeFile(mac, 'the mac build, tampered\n');
    const items = new ItemResults();
    await runVerify(options(contextFor(bed), [mac]), items);
    const [result] = items.list();
    expect(result).toMatchObject({ status: 'modified' });
    // Not "'app' was notarized with digest <linux/app's>", as if that were mac/app's own.
    const latest = [sha256('the linux build\n'), sha256('the mac build\n')];
    expect(result?.reason).toMatch(
      new RegExp(`^'app' was notarized with 2 other digests, the latest (${latest.join('|')}) \\(`),
    );
  });

  it("another registered document's bytes copied over one, or an alias registered as a copy, checked against the ledger: verified with a warning (r117, r118)", async () => {
    for (const aggregate of [false, true]) {
      const dist = `copied-${aggregate ? 'root' : 'alone'}`;
      const notes = await bed.file(`${dist}/NOTES.txt`, `notes ${dist}\n`);
      const app = await bed.file(`${dist}/linux/app.tgz`, `the app ${dist}\n`);
      const registering = await bed.main(['register', ...(aggregate ? ['--aggregate'] : []), notes, app, '--quiet']);
      expect(registering.code, registering.stderr).toBe(0);
      await writeFile(app, `notes ${dist}\n`);
      const run = await bed.main(['verify', '-r', bed.path(dist), '--output', 'ndjson']);
      // The ledger keeps one name a digest: it cannot tell this from a copy of NOTES.txt registered as app.tgz.
      expect(run.code, run.stderr).toBe(0);
      const results = new Map(
        run.stdout
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as { file: string; status: string; reason?: string })
          .map((result) => [result.file, result]),
      );
      expect(results.get(notes)).toMatchObject({ status: 'verified' });
      expect(results.get(notes)?.reason).toBeUndefined();
      expect(results.get(app)).toMatchObject({ status: 'verified' });
      expect(results.get(app)?.reason).toMatch(
        /^its bytes were notarized as 'NOTES\.txt', and 'app\.tgz' was notarized with (digest|2 other digests, the latest) [0-9a-f]{64} \(.*\): if this is that 'app\.tgz', another document's bytes were copied over it;/,
      );
      expect(run.stderr).toContain(
        `warning: ${app}: verified by the ledger, which has these bytes under another name only, while that name was ` +
          "notarized with other digests: if another document's bytes were copied over it",
      );
    }
    // r118: an alias of a new release, registered as such ("already registered"), whose name the release before had.
    const alias = await registered('aliases/v1/app-latest.tgz', 'release 1\n');
    await bed.file('aliases/v2/app-2.0.tgz', 'release 2\n');
    await bed.file('aliases/v2/app-latest.tgz', 'release 2\n');
    expect((await bed.main(['register', '-r', bed.path('aliases/v2'), '--quiet'])).code).toBe(0);
    const v2 = await bed.main(['verify', '-r', bed.path('aliases/v2'), '--output', 'ndjson']);
    expect(v2.code, v2.stderr).toBe(0);
    expect(
      v2.stdout
        .trim()
        .split('\n')
        .map((line) => (JSON.parse(line) as { status: string }).status),
    ).toEqual(['verified', 'verified']);
    expect((await bed.main(['verify', alias])).code).toBe(0);
  });

  it('an older build swapped in, checked against the ledger: verified, with the later digest in its reason and a warning (r97)', async () => {
    const path = await registered('dist/app.tgz', 'build 1\n');
    await registered('dist/app.tgz', 'build 2\n');
    await writeFile(path, 'build 1\n');
    const later = bed.ledgerEntry(sha256('build 2\n')) as unknown as { completedAt: string };
    const run = await bed.main(['verify', path, '--output', 'ndjson']);
    // Verified: the ledger cannot tell this from a namesake in another folder (the test above).
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'verified', source: 'ledger' });
    expect(run.stderr).toContain(
      `warning: ${path}: verified by the ledger, whose latest notarization of that name is of another digest: ` +
        'if of the same file, an older build was checked;',
    );
    const items = new ItemResults();
    await runVerify(options(contextFor(bed), [path]), items);
    expect(items.list()[0]).toMatchObject({
      status: 'verified',
      reason: expect.stringMatching(
        new RegExp(
          `^'app\\.tgz' was notarized later with another digest, ${sha256('build 2\n')} \\(${later.completedAt}\\): if that was this same file, this is an older build`,
        ),
      ),
    });
    // The latest build is verified with no such word.
    await writeFile(path, 'build 2\n');
    const latest = await bed.main(['verify', path, '--output', 'ndjson']);
    expect(latest.code).toBe(0);
    expect(JSON.parse(latest.stdout).reason).toBeUndefined();
    expect(latest.stderr).not.toContain('warning');
  });

  it('an older release swapped in for a build registered beside a namesake, verified alone or by its folder: modified (r92)', async () => {
    const receipts = bed.path('release-receipts');
    const old = await bed.file('rel1/app.tgz', 'release 1\n');
    const linux = await bed.file('build/linux/app.tgz', 'release 2, linux\n');
    const mac = await bed.file('build/mac/app.tgz', 'release 2, mac\n');
    expect((await bed.main(['register', old, '--receipt-dir', receipts, '--quiet'])).code).toBe(0);
    expect((await bed.main(['register', linux, mac, '--receipt-dir', receipts, '--quiet'])).code).toBe(0);
    await writeFile(linux, 'release 1\n');
    const fuller = join(receipts, 'linux', 'app.tgz.notarization.json');
    for (const args of [[linux], [linux, mac], ['-r', bed.path('build/linux')]]) {
      const run = await bed.main(['verify', ...args, '--receipt-dir', receipts, '--output', 'ndjson']);
      expect(run.code, run.stderr).toBe(6);
      const lines = run.stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      // NDJSON: a line per document as it finishes, in any order.
      expect(lines.find((line) => line.file === linux)).toMatchObject({ status: 'modified', receipt: fuller });
    }
    // The release 1 build where release 1 registered it still verifies.
    const own = await bed.main(['verify', old, '--receipt-dir', receipts, '--output', 'ndjson']);
    expect(own.code, own.stderr).toBe(0);
  });

  it('an older release swapped in beside a copy of the newer one, or named beside another file: still modified (r94)', async () => {
    const receipts = bed.path('decoy-receipts');
    const linux = await bed.file('decoy/build/linux/app.tgz', 'release 1\n');
    expect((await bed.main(['register', linux, '--receipt-dir', receipts, '--quiet'])).code).toBe(0);
    // Release 2, a second later at least (registeredAt has milliseconds): linux/app.tgz beside mac/app.tgz.
    await new Promise((resolve) => setTimeout(resolve, 5));
    await writeFile(linux, 'release 2\n');
    const mac = await bed.file('decoy/build/mac/app.tgz', 'release 2, mac\n');
    expect((await bed.main(['register', linux, mac, '--receipt-dir', receipts, '--quiet'])).code).toBe(0);
    await writeFile(linux, 'release 1\n');
    const fuller = join(receipts, 'linux', 'app.tgz.notarization.json');
    // (a) A copy of the newer build added in the folder walked, where this run names it linux/app.tgz.
    await bed.file('decoy/build/linux/linux/app.tgz', 'release 2\n');
    // (b) Another file named beside it: this run names it build/linux/app.tgz, which has no receipt.
    const other = await bed.file('decoy/other/linux/app.tgz', 'release 2\n');
    for (const args of [
      ['-r', bed.path('decoy/build/linux')],
      [linux, other],
    ]) {
      const run = await bed.main(['verify', ...args, '--receipt-dir', receipts, '--output', 'ndjson']);
      expect(run.code, run.stdout + run.stderr).toBe(6);
      const lines = run.stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines.find((line) => line.file === linux)).toMatchObject({ status: 'modified', receipt: fuller });
    }
  });

  it("one run's documents, one's path a fuller name of another's (site/docs, site/site/docs): modified, with the way to check it (r93)", async () => {
    const receipts = bed.path('site-receipts');
    const docs = await bed.file('site/docs/index.html', 'the docs\n');
    await bed.file('site/site/docs/index.html', 'the nested docs\n');
    const site = bed.path('site');
    const register = await bed.main(['register', '-r', site, '-j', '1', '--receipt-dir', receipts, '--quiet']);
    expect(register.code, register.stderr).toBe(0);
    const own = join(receipts, 'docs', 'index.html.notarization.json');
    const nested = join(receipts, 'site', 'docs', 'index.html.notarization.json');
    const dated = (path: string) => (JSON.parse(readFileSync(path, 'utf8')) as { registeredAt: string }).registeredAt;
    const run = await bed.main(['verify', '-r', site, '--receipt-dir', receipts, '--output', 'ndjson']);
    const found = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { file: string; status: string; reason?: string })
      .find((line) => line.file === docs)!;
    if (dated(nested) > dated(own)) {
      // Nothing tells this layout from an older build beside a copy of the newer one (r94): the reason says how to check.
      expect(run.code, run.stdout + run.stderr).toBe(6);
      expect(found).toMatchObject({ status: 'modified' });
      expect(found.reason).toContain(`if one run registered both, check this one with --receipt ${own}`);
    } else {
      expect(run.code, run.stdout + run.stderr).toBe(0);
    }
    const checked = await bed.main(['verify', docs, '--receipt', own]);
    expect(checked.code, checked.stdout + checked.stderr).toBe(0);
  });

  it('verified, modified and unknown documents in input order; the run fails with exit 6', async () => {
    const good = await registered('a.txt', 'a\n');
    const goodHash = sha256('a\n');
    // Another document of the same name, with other bytes: "modified".
    await mkdir(join(bed.workDir, 'later'));
    const modified = join(bed.workDir, 'later', 'a.txt');
    await writeFile(modified, 'a, changed\n');
    const unknown = await bed.file('new.txt', 'never registered\n');
    const items = new ItemResults();
    const result = await runVerify(options(contextFor(bed), [good, modified, unknown]), items);
    expectKind(result, 'items');
    expect(result.items).toBe(items);
    const list = items.list();
    expect(list.map((r) => [r.file, r.hash, r.status])).toEqual([
      [good, goodHash, 'verified'],
      [modified, sha256('a, changed\n'), 'modified'],
      [unknown, sha256('never registered\n'), 'unknown'],
    ]);
    const { completedAt } = bed.ledgerEntry(goodHash) as unknown as { completedAt: string };
    expect(list[1]?.reason).toBe(`'a.txt' was notarized with digest ${goodHash} (${completedAt})`);
    expect(list[0]).toMatchObject({ verificationUrl: `${bed.url}/verification/${goodHash}` });
    expect(result.failure).toMatchObject({
      code: 'not_notarized',
      exitCode: 6,
      message: '2 of 3 documents are not verified (1 modified, 1 unknown)',
    });
    expect((result.failure as NotarizeError).hint).toContain(`the ledger of ${bed.url} was searched`);
    expect(items.summary()).toBe('3 items: 1 verified, 1 modified, 1 unknown');
  });

  it('a document that cannot be read among others: a failed result, and exit 2 before 6', async () => {
    const good = await registered('a.txt', 'a\n');
    const missing = join(bed.workDir, 'missing.txt');
    const unknown = await bed.file('new.txt', 'never registered\n');
    const result = await runVerify(options(contextFor(bed), [good, missing, unknown]));
    expectKind(result, 'items');
    expect(result.items.list().map((r) => r.status)).toEqual(['verified', 'failed', 'unknown']);
    expect(result.failure).toMatchObject({
      code: 'batch_failed',
      exitCode: 2,
      message: '1 of 3 documents could not be checked',
    });
  });

  it('one document alone that cannot be read is a failed result, as one not verified (README): exit 2', async () => {
    const t = contextFor(bed);
    const missing = join(bed.workDir, 'missing.txt');
    const result = await runVerify(options(t, [missing]));
    expectKind(result, 'items');
    expect(result.items.list()).toEqual([missingFileResult(missing)]);
    expect(result.failure).toMatchObject({ code: 'batch_failed', exitCode: 2 });
    // --json prints the result objects, as for any document not verified.
    const run = await bed.main(['verify', '--json', missing]);
    expect(run.code, run.stderr).toBe(2);
    expect(JSON.parse(run.stdout)).toEqual([missingFileResult(missing)]);
  });

  it('through the renderer, prints what `notarize verify` prints, table and JSON', async () => {
    const good = await registered('a.txt', 'a\n');
    const unknown = await bed.file('new.txt', 'never registered\n');
    for (const json of [false, true]) {
      const t = contextFor(bed, { json });
      const view = { io: t.io, env: {}, format: json ? ('json' as const) : ('table' as const) };
      const result = await runVerify(options(t, [good, unknown]), itemResultsFor(view));
      await present(view, result);
      const viaMain = await bed.main(['verify', good, unknown, ...(json ? ['--json'] : [])]);
      expect(viaMain.code).toBe(6);
      expect(t.stdout()).toBe(viaMain.stdout);
      // main() adds one line, the failure the action throws after present().
      expect(viaMain.stderr).toBe(`${t.stderr()}${lastLine(viaMain.stderr)}`);
      expect(lastLine(viaMain.stderr)).toContain('1 of 2 documents are not verified (1 unknown)');
    }
  });
});

/** The last line of `text` (with its newline). */
function lastLine(text: string): string {
  const lines = text.trimEnd().split('\n');
  return `${lines[lines.length - 1]}\n`;
}

describe('verify with NOTARIZE_CONFIG_DIR a relative path', () => {
  it('is refused, exit 2, as by every command: not a ledger passed over unsaid', async () => {
    const doc = await bed.file('relative-store.txt', 'a relative store');
    const run = await bed.main(['verify', doc, '--json'], { env: { NOTARIZE_CONFIG_DIR: 'relative-store' } });
    expect(run.code, run.stderr).toBe(2);
    expect(JSON.parse(run.stderr)).toMatchObject({
      error: {
        code: 'no_store_dir',
        message: expect.stringContaining("NOTARIZE_CONFIG_DIR is a relative path ('relative-store')"),
      },
    });
  });
});

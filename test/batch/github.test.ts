/**
 * GitHub Actions (GITHUB_ACTIONS=true): a markdown table appended to
 * $GITHUB_STEP_SUMMARY with a row per document, `::error` annotations on
 * stderr for failed items, stdout left pure data; nothing outside Actions.
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Bed, useBed } from '../helpers/bed.js';
import { describeRun } from '../helpers/cli.js';
import { parseNdjson, parseResults } from '../helpers/results.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

/** `text` as a regular expression that matches it literally. */
function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

async function documents(b: Bed): Promise<Record<string, string>> {
  return {
    'dist/a.txt': await b.write('dist/a.txt', 'actions a\n'),
    'dist/b.txt': await b.write('dist/b.txt', 'actions b\n'),
    'dist/c.txt': await b.write('dist/c.txt', 'actions c\n'),
  };
}

describe('in GitHub Actions', () => {
  it('appends a summary table with a row per document and annotates the failed one', async () => {
    const hashes = await documents(bed);
    const summary = join(bed.root, 'step-summary.md');
    await writeFile(summary, 'an earlier step wrote this\n');
    // --concurrency 1: dist/a.txt is the first to reach forfait, and fails.
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'status', value: 503, count: 1 }]);
    const run = await bed.main(['register', '-r', bed.path('dist'), '-j', '1', '--retries', '0', '--json'], {
      env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summary },
    });
    expect(run.code, describeRun(run)).toBe(4);
    // stdout is still exactly the JSON array.
    expect(parseResults(run.stdout).map((r) => r.status)).toEqual(['failed', 'registered', 'registered']);

    const text = await readFile(summary, 'utf8');
    expect(text.startsWith('an earlier step wrote this\n')).toBe(true);
    expect(text).toContain('### notarize register\n');
    expect(text).toContain('| File | Status | SHA-256 | Detail |\n|---|---|---|---|\n');
    const rows = text.split('\n').filter((line) => line.startsWith(`| ${bed.path('dist/')}`));
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatch(
      new RegExp(`^\\| ${literal(bed.path('dist/a.txt'))} \\| failed \\| \`${hashes['dist/a.txt']}\` \\| .*503.* \\|$`),
    );
    for (const [i, file] of ['dist/b.txt', 'dist/c.txt'].entries()) {
      const hash = hashes[file]!;
      expect(rows[i + 1]).toBe(
        `| ${bed.path(file)} | registered | \`${hash}\` | [verify](${bed.url}/verification/${hash}) |`,
      );
    }

    const annotations = run.stderr.split('\n').filter((line) => line.startsWith('::'));
    expect(annotations).toHaveLength(1);
    expect(annotations[0]).toMatch(
      new RegExp(`^::error file=${literal(bed.path('dist/a.txt'))},title=notarize%3A failed::.*503`),
    );
  });

  it('verify: unknown documents are annotated and summarised', async () => {
    await documents(bed);
    const registered = await bed.main(['register', bed.path('dist/a.txt'), '--quiet']);
    expect(registered.code, describeRun(registered)).toBe(0);
    const summary = join(bed.root, 'verify-summary.md');
    const run = await bed.main(['verify', bed.path('dist/a.txt'), bed.path('dist/b.txt')], {
      env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summary },
    });
    expect(run.code, describeRun(run)).toBe(6);
    const text = await readFile(summary, 'utf8');
    expect(text).toContain('### notarize verify\n');
    expect(text).toMatch(
      new RegExp(
        `^\\| ${literal(bed.path('dist/a.txt'))} \\| verified \\| \`[0-9a-f]{64}\` \\| \\[verify\\]\\(http://127\\.0\\.0\\.1:\\d+/verification/[0-9a-f]{64}\\) \\|$`,
        'm',
      ),
    );
    // What unknown means and what to do, as verify's own hint says: never an empty cell or a bare `unknown`.
    const row = text.split('\n').find((line) => line.startsWith(`| ${bed.path('dist/b.txt')} | unknown |`));
    expect(row).toMatch(
      /\| not verified: no receipt of it was found, nor an entry in a ledger, where one was searched: give its receipt .*--receipt-dir.* \|$/,
    );
    const annotations = run.stderr.split('\n').filter((line) => line.startsWith('::'));
    expect(annotations).toHaveLength(1);
    expect(annotations[0]).toMatch(
      new RegExp(
        `^::error file=${literal(bed.path('dist/b.txt'))},title=notarize%3A unknown::not verified: no receipt of it was found[^\n]*--receipt-dir`,
      ),
    );
  });

  it('a failed registration that has a record and a verification link: its row says why it failed', async () => {
    const hash = await bed.write('custA.txt', 'custody, metadata refused\n');
    const summary = join(bed.root, 'custody-summary.md');
    // The forfait is paid and answered (a record), then the file metadata call gets a 503.
    bed.sandbox.addFaults([{ route: 'file', kind: 'status', value: 503, count: 10 }]);
    const run = await bed.main(
      ['register', bed.path('custA.txt'), '--custody', '--retries', '0', '--output', 'ndjson'],
      {
        env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summary },
      },
    );
    const [result] = parseNdjson(run.stdout);
    expect(result, describeRun(run)).toMatchObject({ status: 'failed', hash });
    // Paid for: its record and where to confirm it are given, not null.
    expect(result!.record).toMatchObject({ hash });
    expect(result!.verificationUrl).toBe(`${bed.sandbox.url}/verification/${hash}`);
    const row = (await readFile(summary, 'utf8')).split('\n').find((line) => line.includes(' | failed | '));
    expect(row).toMatch(
      / \| failed \| `[0-9a-f]{64}` \| [^|]*503[^|]* \[verify\]\(http:\/\/127\.0\.0\.1:\d+\/verification\/[0-9a-f]{64}\) \|$/,
    );
  });

  it('no failure: a summary, and no annotation', async () => {
    await documents(bed);
    const summary = join(bed.root, 'ok-summary.md');
    const run = await bed.main(['register', '-r', bed.path('dist')], {
      env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summary },
    });
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stderr).not.toMatch(/^::/m);
    expect((await readFile(summary, 'utf8')).split('\n').filter((l) => / \| registered \| /.test(l))).toHaveLength(3);
  });
});

describe('in GitHub Actions, a step that runs notarize more than once (the retry loop of docs/ci.md)', () => {
  it('each table keeps to what the step summary has left of its 1 MiB; none when too little is left', async () => {
    // 1,500 documents whose rows take about 330 KiB: one table fits in 512 KiB whole.
    for (let i = 0; i < 1500; i++) await bed.write(`many/artifact-with-a-rather-long-name-${i}.bin`, `artifact ${i}\n`);
    const summary = join(bed.root, 'retried-summary.md');
    // What two earlier attempts in the step wrote: 850 KiB.
    await writeFile(summary, `${'x'.repeat(850 * 1024 - 1)}\n`);
    const env = { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summary };
    const run = await bed.main(['register', '-r', bed.path('many'), '--output', 'ndjson'], { env });
    expect(run.code, describeRun(run)).toBe(0);
    const size = (await readFile(summary)).byteLength;
    expect(size).toBeLessThanOrEqual(1024 * 1024);
    expect(size).toBeGreaterThan(1000 * 1024);
    expect(await readFile(summary, 'utf8')).toMatch(/\n\d+ more results are not shown \(GitHub takes at most 1 MiB/);
    // Another attempt: too little left for a table; a warning, and the summary as it was.
    const again = await bed.main(['register', '-r', bed.path('many'), '--output', 'ndjson'], { env });
    expect(again.code, describeRun(again)).toBe(0);
    expect((await readFile(summary)).byteLength).toBe(size);
    expect(again.stderr).toContain("warning: no table in the step summary: this step's summary is near the 1 MiB");
  });
});

describe('in GitHub Actions, with one document', () => {
  it('summarises a single registration too, and annotates its failure', async () => {
    const hash = await bed.write('app.tar.gz', 'the one release artifact\n');
    await bed.write('other.tar.gz', 'another artifact\n');
    const summary = join(bed.root, 'single-summary.md');
    const env = { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summary };
    const ok = await bed.main(['register', bed.path('app.tar.gz'), '--json'], { env });
    expect(ok.code, describeRun(ok)).toBe(0);
    // One input keeps printing the record itself on stdout...
    expect(ok.stdout).toBe(`${JSON.stringify(bed.sandbox.records.get(hash))}\n`);
    // ...and the step summary still gets its row.
    expect(existsSync(summary)).toBe(true);
    expect(await readFile(summary, 'utf8')).toContain(`| ${bed.path('app.tar.gz')} | registered | \`${hash}\` |`);

    bed.sandbox.addFaults([{ route: 'request', kind: 'status', value: 503, count: 1 }]);
    const failed = await bed.main(['register', bed.path('other.tar.gz'), '--retries', '0'], { env });
    expect(failed.code, describeRun(failed)).toBe(4);
    expect(failed.stderr).toMatch(
      new RegExp(`^::error file=${literal(bed.path('other.tar.gz'))},title=notarize%3A failed::`, 'm'),
    );
  });
});

describe('outside GitHub Actions', () => {
  it('writes no summary and no annotation, even with GITHUB_STEP_SUMMARY set', async () => {
    await documents(bed);
    const summary = join(bed.root, 'not-actions.md');
    bed.sandbox.addFaults([{ route: 'forfait', kind: 'status', value: 503, count: 1 }]);
    const run = await bed.main(['register', '-r', bed.path('dist'), '--retries', '0', '--json'], {
      env: { GITHUB_STEP_SUMMARY: summary },
    });
    expect(run.code, describeRun(run)).toBe(4);
    expect(existsSync(summary)).toBe(false);
    expect(run.stderr).not.toMatch(/^::/m);
    const other = await bed.main(['register', '-r', bed.path('dist'), '--json'], {
      env: { GITHUB_ACTIONS: 'false', GITHUB_STEP_SUMMARY: summary },
    });
    expect(other.code, describeRun(other)).toBe(0);
    expect(existsSync(summary)).toBe(false);
  });
});

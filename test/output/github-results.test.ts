/**
 * What results become on GitHub Actions (output/github-results.ts): the step
 * summary's markdown and the `::error` annotations, with outside text escaped
 * so that it can neither forge a workflow command nor break the table.
 * (Writing them is present.ts's; see test/output/present.test.ts and
 * test/batch/github.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { errorCommand, warningCommand } from '../../src/output/github.js';
import { annotations, markdownSummary } from '../../src/output/github-results.js';
import { itemResult, skippedResult } from '../../src/output/results.js';

const HASH = 'cd'.repeat(32);
/** No secret to remove. */
const asIs = (text: string) => text;

describe('GitHub Actions results', () => {
  it('annotates failed, modified, unknown and invalid results only, with the message, reason or status', () => {
    const lines = annotations(
      [
        itemResult('ok.txt', HASH, 'verified'),
        itemResult('bad.txt', null, 'failed', { error: { code: 'x', exitCode: 2, message: 'cannot read' } }),
        itemResult('m.txt', HASH, 'modified', { reason: 'other digest' }),
        itemResult('-', HASH, 'unknown'),
        itemResult('r.txt', HASH, 'invalid', { reason: 'the receipt is not JSON' }),
        skippedResult('link', 'a symbolic link'),
      ],
      asIs,
    );
    expect(lines).toEqual([
      '::error file=bad.txt,title=notarize%3A failed::cannot read',
      '::error file=m.txt,title=notarize%3A modified::other digest',
      // Standard input names no file of the repository. A bare unknown says what it means and what to do.
      expect.stringMatching(
        /^::error title=notarize%3A unknown::not verified: no receipt of it was found, nor an entry in a ledger, where one was searched: give its receipt \(--receipt, --receipt-dir, or <document>\.notarization\.json beside it\)/,
      ),
      '::error file=r.txt,title=notarize%3A invalid::the receipt is not JSON',
    ]);
  });

  it('escapes what could forge a command or a property: %, line breaks, colons and commas, controls', () => {
    const [line] = annotations(
      [
        itemResult('a,b:c%.txt', null, 'failed', {
          error: { code: 'x', exitCode: 1, message: '50%\n::warning::forged\u001b[31m' },
        }),
      ],
      asIs,
    );
    expect(line).toBe('::error file=a%2Cb%3Ac%25.txt,title=notarize%3A failed::50%25\\n::warning::forged\\u001b[31m');
  });

  it('summarises results as a markdown table: a link for a verification page, else the detail', () => {
    const text = markdownSummary(
      'notarize verify',
      [
        itemResult('a|b.txt', HASH, 'verified', { verificationUrl: `https://s/verification/${HASH}` }),
        // Verified with a doubt the ledger cannot settle (r119): the reason beside the link, not only in the log.
        itemResult('c.txt', HASH, 'verified', {
          verificationUrl: `https://s/verification/${HASH}`,
          reason: "its bytes were notarized as 'd.txt'",
        }),
        itemResult(null, null, 'failed', { error: { code: 'x', exitCode: 1, message: 'no\nway' } }),
        skippedResult('link', 'a symbolic link'),
      ],
      asIs,
    );
    expect(text).toBe(
      [
        '### notarize verify',
        '',
        '| File | Status | SHA-256 | Detail |',
        '|---|---|---|---|',
        `| a\\|b.txt | verified | \`${HASH}\` | [verify](https://s/verification/${HASH}) |`,
        `| c.txt | verified | \`${HASH}\` | its bytes were notarized as 'd.txt' [verify](https://s/verification/${HASH}) |`,
        // forTerminal's escape, its backslash escaped for markdown: shown as \n.
        '| - | failed | - | no\\\\nway |',
        '| link | skipped | - | a symbolic link |',
        '',
        '',
      ].join('\n'),
    );
  });

  it('a table too large for a step summary: the rows that fit, failures first, and a line on the rest', () => {
    const url = `https://s/verification/${HASH}`;
    const many = Array.from({ length: 6000 }, (_, i) =>
      i % 1000 === 999
        ? itemResult(`f${i}.bin`, HASH, 'failed', { error: { code: 'x', exitCode: 4, message: `broke ${i}` } })
        : itemResult(`f${i}.bin`, HASH, 'registered', { verificationUrl: url }),
    );
    const text = markdownSummary('notarize register', many, asIs);
    // GitHub refuses a step's whole summary past 1 MiB; one table keeps to half of it.
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(512 * 1024);
    const rows = text.split('\n').filter((line) => line.startsWith('| f'));
    expect(rows.length).toBeGreaterThan(1000);
    expect(rows.length).toBeLessThan(6000);
    // Every failure is shown, rows stay in the order given.
    expect(rows.filter((line) => line.includes(' failed '))).toHaveLength(6);
    const numbers = rows.map((line) => Number(/^\| f(\d+)\.bin/.exec(line)![1]));
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    expect(text.trimEnd().split('\n').at(-1)).toBe(
      `${6000 - rows.length} more results are not shown (GitHub takes at most 1 MiB of summary per step; ` +
        "all 6000: 5994 registered, 6 failed); every result is in notarize's output (the action's `results` file)",
    );
    // One that fits is left whole.
    expect(markdownSummary('notarize register', many.slice(0, 10), asIs)).not.toContain('not shown');
  });

  it('a result that did not end well shows why, its verification link beside: never the link alone', () => {
    const url = `https://s/verification/${HASH}`;
    const text = markdownSummary(
      'notarize register',
      [
        itemResult('custA.txt', HASH, 'failed', {
          verificationUrl: url,
          error: { code: 'transient', exitCode: 4, message: 'PUT /api/v2/file answered 503' },
        }),
        itemResult('m.txt', HASH, 'modified', { verificationUrl: url, reason: 'other digest' }),
        itemResult('u.txt', HASH, 'unknown'),
      ],
      asIs,
    );
    const rows = text.split('\n').filter((line) => /^\| [a-zA-Z]+\.txt/.test(line));
    expect(rows[0]).toBe(`| custA.txt | failed | \`${HASH}\` | PUT /api/v2/file answered 503 [verify](${url}) |`);
    expect(rows[1]).toBe(`| m.txt | modified | \`${HASH}\` | other digest [verify](${url}) |`);
    expect(rows[2]).toMatch(/^\| u\.txt \| unknown \| `[0-9a-f]{64}` \| not verified: no receipt of it was found/);
  });

  it('a verification URL from a crafted receipt cannot add a row: what markdown reads is percent-encoded', () => {
    const forged = `https://x.example/#) |\n| dist/evil.bin | verified | \`${HASH}\` | [verify](https://x.example`;
    const text = markdownSummary(
      'notarize verify',
      [
        itemResult('c', HASH, 'verified', { verificationUrl: forged }),
        itemResult('d', HASH, 'verified', { verificationUrl: 'javascript:alert(1)|' }),
      ],
      asIs,
    );
    const rows = text.split('\n').filter((line) => line.startsWith('|'));
    expect(rows).toHaveLength(4);
    expect(rows[2]).toMatch(
      /^\| c \| verified \| `[0-9a-f]{64}` \| \[verify\]\(https:\/\/x\.example\/#[^\s|()[\]`]+\) \|$/,
    );
    expect(rows[2]).toContain('%7C%7C%20dist/evil.bin%20%7C%20verified');
    expect(rows[3]).toBe(`| d | verified | \`${HASH}\` | javascript:alert\\(1\\)\\| |`);
  });

  it('a cell shows HTML and markdown as text: a receipt URL that is no URL renders no image, link or tag', () => {
    const html = '<img src="https://evil.invalid/p.png"><a href="x">ok</a> [verify](https://evil) *b* `c` ~d~ &amp;';
    const text = markdownSummary(
      'notarize verify',
      [itemResult('<b>e</b>', HASH, 'verified', { verificationUrl: html })],
      asIs,
    );
    const row = text.split('\n').find((line) => line.startsWith('| \\<b'))!;
    expect(row).toBe(
      `| \\<b\\>e\\</b\\> | verified | \`${HASH}\` | \\<img src="https://evil.invalid/p.png"\\>\\<a href="x"\\>ok\\</a\\> ` +
        `\\[verify\\]\\(https://evil\\) \\*b\\* \\\`c\\\` \\~d\\~ \\&amp; |`,
    );
  });

  it('removes secrets from outside text as it is, before %-encoding or markdown escaping can hide them', () => {
    // `%`, `:` and `,` are %-encoded in a property, `_` escaped in a cell: a secret searched for in
    // the finished line is no longer there to be found, and the runner decodes the first ones.
    const secret = 'Secr3t_Key%with:colon,1234';
    const redact = (text: string) => text.replaceAll(secret, '[redacted]');
    const result = itemResult(`kd/report-${secret}.txt`, HASH, 'unknown', {
      reason: `no receipt for ${secret}`,
      verificationUrl: `https://s.example/verification/${secret}`,
    });
    const shown = [
      ...annotations([result], redact),
      markdownSummary('notarize verify', [result, itemResult(secret, null, 'failed', { reason: secret })], redact),
      errorCommand(`bad input ${secret}`, redact),
      warningCommand(`odd ${secret}`, redact),
    ].join('\n');
    for (const form of [secret, 'Secr3t', 'with%3Acolon', 'Secr3t\\_Key', 'colon%2C1234', 'Secr3t_Key%25']) {
      expect(shown).not.toContain(form);
    }
    expect(shown).toContain('::error file=kd/report-[redacted].txt,');
    expect(shown).toContain('| kd/report-\\[redacted\\].txt | unknown |');
  });
});

/**
 * Terminal safety: text from outside (the service's answers, file names)
 * never reaches the terminal raw in tables and messages, while --json stays
 * exactly what the service sent. A hostile service is played by a proxy in
 * front of the sandbox that rewrites its answers.
 */
import { symlinkSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { parseFaults } from '../../src/sandbox/server.js';
import { useBed, type Bed } from '../helpers/bed.js';
import { sha256 } from '../helpers/documents.js';

let bed: Bed;
useBed((b) => (bed = b), { keyInEnv: true });

/** What a hostile service puts in a description: colour, bell, CR, LF, a bidi override, DEL and a C1 control. */
const HOSTILE = '\u001b[31mred\u0007bell\rcr\nforged line\u202eevil\u007fdel\u0085nel';

/**
 * Anything a terminal would act on, or that reorders or splits what is
 * shown: every control but the line feed that ends a line, C1 controls,
 * bidi marks, embeddings, overrides and isolates, line separators.
 */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/;

function expectTerminalSafe(text: string): void {
  const found = UNSAFE.exec(text);
  expect(found, `raw U+${found?.[0].codePointAt(0)?.toString(16)} in ${JSON.stringify(text)}`).toBeNull();
}

/** A proxy whose forfait answers (the record) carry `description` instead of the one sent. */
async function hostileRecords(description = HOSTILE) {
  return bed.proxy((method, path, status, body) => {
    if (method !== 'POST' || !path.endsWith('/forfait') || status !== 200) return undefined;
    return JSON.stringify({ ...(JSON.parse(body) as Record<string, unknown>), description });
  });
}

describe('a record whose description holds controls', () => {
  it('register and show print it escaped in the table, one line per field; --json prints the service text', async () => {
    const proxy = await hostileRecords();
    const env = { NOTARIZE_BASE_URL: proxy.url };
    const doc = await bed.file('doc.txt', 'hostile description');

    const registered = await bed.main(['register', doc], { env });
    expect(registered.code, registered.stderr).toBe(0);
    const answer = proxy.exchanges.find((e) => e.path.endsWith('/forfait'))!.responseBody;
    const record = JSON.parse(answer) as Record<string, unknown>;
    expect(record.description).toBe(HOSTILE);

    const show = await bed.main(['show', doc], { env });
    const showJson = await bed.main(['show', doc, '--json'], { env });
    for (const run of [registered, show]) {
      expectTerminalSafe(run.stdout);
      expectTerminalSafe(run.stderr);
      // A row per field of the record, plus the verification URL: no line was forged or split.
      const lines = run.stdout.replace(/\n$/, '').split('\n');
      expect(lines).toHaveLength(Object.keys(record).length + 1);
      expect(lines).toContain(
        'description     \\u001b[31mred\\u0007bell\\rcr\\nforged line\\u202eevil\\u007fdel\\u0085nel',
      );
    }
    expect(showJson.code).toBe(0);
    expect(showJson.stdout).toBe(`${answer}\n`);
  });

  it('register --json prints exactly the text the service answered', async () => {
    const proxy = await hostileRecords();
    const doc = await bed.file('doc.txt', 'hostile, as JSON');
    const run = await bed.main(['register', doc, '--json'], { env: { NOTARIZE_BASE_URL: proxy.url } });
    expect(run.code, run.stderr).toBe(0);
    const answer = proxy.exchanges.find((e) => e.path.endsWith('/forfait'))!.responseBody;
    // JSON.stringify wrote the proxy's answer: U+202E, DEL and U+0085 are raw in it, and stay raw.
    expect(answer).toContain('\u202e');
    expect(run.stdout).toBe(`${answer}\n`);
  });

  it('list and pending tables escape descriptions too', async () => {
    const proxy = await hostileRecords();
    const env = { NOTARIZE_BASE_URL: proxy.url };
    const done = await bed.file('done.txt', 'listed');
    expect((await bed.main(['register', done], { env })).code).toBe(0);
    const later = await bed.file('later.txt', 'left pending');
    expect((await bed.main(['register', later, '--no-complete', '-d', 'tab\there'], { env })).code).toBe(0);

    const list = await bed.main(['list'], { env });
    const pending = await bed.main(['pending'], { env });
    for (const run of [list, pending]) {
      expect(run.code, run.stderr).toBe(0);
      expectTerminalSafe(run.stdout);
      expect(run.stdout.replace(/\n$/, '').split('\n')).toHaveLength(2);
    }
    expect(pending.stdout).toContain('tab\\there');
  });
});

describe('file names that hold controls', () => {
  it('a batch table, the failure of a missing file and a skipped link are escaped', async () => {
    const dir = join(bed.workDir, 'tree');
    const colour = await bed.file('tree/colour\u001b[31m.txt', 'colour');
    await bed.file('tree/two\nlines.txt', 'two lines');
    symlinkSync(colour, join(dir, 'link\u001b]0;pwned\u0007'));
    const missing = join(bed.workDir, 'gone\u001b[2J\r.txt');

    const run = await bed.main(['register', '-r', dir, missing]);
    // A local failure once something was sent is exit 1.
    expect(run.code, run.stderr).toBe(1);
    expectTerminalSafe(run.stdout);
    expectTerminalSafe(run.stderr);
    // Header, two registered, one failed, one skipped: nothing split a row.
    const rows = run.stdout.replace(/\n$/, '').split('\n');
    expect(rows).toHaveLength(5);
    expect(rows.filter((r) => r.startsWith('registered'))).toHaveLength(2);
    expect(run.stdout).toContain('two\\nlines.txt');
    expect(run.stdout).toContain('colour\\u001b[31m.txt');
    expect(rows.find((r) => r.startsWith('failed'))).toContain('gone\\u001b[2J\\r.txt');
    expect(run.stderr).toMatch(/^warning: skipped \S*link\\u001b\]0;pwned\\u0007: /m);
    // Each message on its own line: the warning, the summary and the error.
    expect(run.stderr.replace(/\n$/, '').split('\n')).toHaveLength(3);
  });

  it('the error of a single unreadable file is one escaped line (report)', async () => {
    const run = await bed.main(['register', join(bed.workDir, 'x\u001b[31m\nnotarize: forged\u202e.pdf')]);
    expect(run.code).toBe(2);
    expectTerminalSafe(run.stderr);
    expect(run.stderr).toMatch(/^notarize: .*x\\u001b\[31m\\nnotarize: forged\\u202e\.pdf.*\n$/);
  });

  it('--verbose: the stack trace keeps the message on its one escaped line (no forged workflow command)', async () => {
    // A line that looks like a frame first: the message is cut off whole, not searched for the frames.
    const forged = join(bed.workDir, 'sub\n    at x\n::add-mask::x\n::set-output name=ok::1\u202e.pdf');
    for (const command of ['register', 'verify', 'hash']) {
      const run = await bed.main([command, '--verbose', forged]);
      expect(run.code, run.stderr).toBe(2);
      expectTerminalSafe(run.stderr);
      // Every line is notarize's message or the trace's: none starts with what a runner acts on.
      expect(`${run.stdout}${run.stderr}`.split('\n').filter((line) => line.startsWith('::'))).toEqual([]);
      expect(run.stderr).toMatch(/\n {4}at /);
      // register's one document is the run's error, its trace naming it; hash and verify report it as an item.
      if (command === 'register')
        expect(run.stderr).toMatch(/\n\w*Error: .*sub\\n {4}at x\\n::add-mask::x\\n::set-output/);
      else {
        // verify's table is on stdout: escaped there as well.
        expectTerminalSafe(run.stdout);
        expect(run.stdout + run.stderr).toContain('sub\\n    at x\\n::add-mask::x\\n::set-output');
      }
    }
  });

  it('hash: failure lines are escaped; digest lines keep sha256sum format, other controls raw', async () => {
    const raw = await bed.file('raw\u001b.txt', 'raw');
    const run = await bed.main(['hash', raw, join(bed.workDir, 'miss\u001b[1m\n.txt')]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe(`${sha256('raw')}  ${raw}\n`);
    expectTerminalSafe(run.stderr);
    expect(run.stderr).toContain('miss\\u001b[1m\\n.txt');
  });
});

describe("the service's words", () => {
  it('a 409 message with controls is escaped in the message and the table', async () => {
    const doc = await bed.file('twice.txt', 'registered elsewhere');
    expect((await bed.main(['register', doc])).code).toBe(0);
    const proxy = await bed.proxy((_method, _path, status) =>
      status === 409 ? JSON.stringify({ message: `already\u001b[32m OK\nnotarize: forged\u202e` }) : undefined,
    );
    // Another store: only the service knows the hash.
    const run = await bed.main(['register', doc], {
      env: { NOTARIZE_BASE_URL: proxy.url, NOTARIZE_CONFIG_DIR: join(bed.root, 'other-store') },
    });
    expect(run.code, run.stderr).toBe(0);
    expectTerminalSafe(run.stdout);
    expectTerminalSafe(run.stderr);
    expect(run.stderr).toContain('(409: already\\u001b[32m OK\\nnotarize: forged\\u202e)');
    expect(run.stderr.replace(/\n$/, '').split('\n')).toHaveLength(1);
    expect(run.stdout).toMatch(/^message +already\\u001b\[32m OK\\nnotarize: forged\\u202e$/m);
  });

  it("a refusal's message is one escaped line, and one JSON line of the same value with --json", async () => {
    bed.sandbox.addFaults(parseFaults('request:status=400'));
    const said = 'bad\u001b[31m\r\nnotarize: all good\u2066';
    const proxy = await bed.proxy((_method, _path, status) =>
      status === 400 ? JSON.stringify({ message: said }) : undefined,
    );
    const doc = await bed.file('refused.txt', 'refused');
    const env = { NOTARIZE_BASE_URL: proxy.url };
    const run = await bed.main(['register', doc], { env });
    expect(run.code).toBe(1);
    expectTerminalSafe(run.stderr);
    expect(run.stderr).toContain('bad\\u001b[31m\\r\\nnotarize: all good\\u2066');
    expect(run.stderr.replace(/\n$/, '').split('\n')).toHaveLength(1);

    bed.sandbox.addFaults(parseFaults('request:status=400'));
    const json = await bed.main(['register', doc, '--json'], { env });
    expect(json.code).toBe(1);
    expectTerminalSafe(json.stderr);
    const error = (JSON.parse(json.stderr) as { error: { message: string } }).error;
    expect(error.message).toContain(said);
  });
});

describe('GitHub Actions', () => {
  let summary: string;
  beforeEach(() => {
    summary = join(bed.root, 'summary.md');
    writeFileSync(summary, '');
  });

  /** Lines a runner would take as workflow commands: `::x::` at a line's start (after spaces), `##[x]` anywhere. */
  const commands = (text: string) =>
    text.split('\n').filter((line) => /^\s*::[^:]+::/u.test(line) || /##\[[^\]]*\]/.test(line));

  it("field names of the service's record or of a receipt start no line with :: and hold no ##[ (forged commands)", async () => {
    const env = { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summary };
    const forged = { '::stop-commands::pwn': 1, '::error file=README.md,line=1::forged': 2, legacy: '##[error]forged' };
    const proxy = await bed.proxy((method, path, status, body) => {
      if (method !== 'POST' || !path.endsWith('/forfait') || status !== 200) return undefined;
      return JSON.stringify({ ...(JSON.parse(body) as Record<string, unknown>), ...forged });
    });
    const doc = await bed.file('doc.txt', 'forged field names');
    const receipts = join(bed.workDir, 'receipts');
    const registered = await bed.main(['register', doc, '--receipt-dir', receipts], {
      env: { ...env, NOTARIZE_BASE_URL: proxy.url },
    });
    expect(registered.code, registered.stderr).toBe(0);
    const shown = await bed.main(['show', doc], { env: { ...env, NOTARIZE_BASE_URL: proxy.url } });
    // A receipt anyone can write: the same names put in by hand, verified from an empty store.
    const receipt = join(receipts, 'doc.txt.notarization.json');
    const written = JSON.parse(readFileSync(receipt, 'utf8')) as { record: Record<string, unknown> };
    writeFileSync(receipt, JSON.stringify({ ...written, record: { ...written.record, '': '::warning::forged' } }));
    const verified = await bed.main(['verify', doc, '--receipt-dir', receipts], {
      env: { ...env, NOTARIZE_CONFIG_DIR: join(bed.root, 'empty-store') },
    });
    expect(verified.code, verified.stderr).toBe(0);
    for (const run of [registered, shown, verified]) {
      expect(run.stdout).toContain('stop-commands::pwn');
      expect(commands(run.stdout)).toEqual([]);
      expect(commands(run.stderr)).toEqual([]);
    }
  });

  it('annotations and the summary escape file names and messages by their rules', async () => {
    const good = await bed.file('ok.txt', 'fine');
    const missing = join(bed.workDir, 'bad\u001b[31m 100%\n::warning::forged,a:b.txt');
    const run = await bed.main(['register', good, missing], {
      env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summary },
    });
    expect(run.code).toBe(1);
    expectTerminalSafe(run.stderr);
    const annotations = run.stderr.split('\n').filter((line) => line.startsWith('::'));
    expect(annotations).toHaveLength(1);
    const [annotation] = annotations;
    // In the file property ':' and ',' are %-encoded, and '%' everywhere; the controls are escaped first.
    expect(annotation).toContain('file=');
    expect(annotation).toContain('bad\\u001b[31m 100%25\\n%3A%3Awarning%3A%3Aforged%2Ca%3Ab.txt,title=');
    expect(annotation).toMatch(/::[^:]*bad\\u001b\[31m 100%25\\n::warning::forged,a:b\.txt/);

    const markdown = readFileSync(summary, 'utf8');
    expectTerminalSafe(markdown);
    // Header, separator and a row per document: no line forged or split.
    expect(markdown.split('\n').filter((line) => line.startsWith('|'))).toHaveLength(4);
    expect(markdown.split('\n').filter((line) => line !== '' && !line.startsWith('|'))).toEqual([
      '### notarize register',
    ]);
    // forTerminal's escapes, then markdown's: a backslash and a bracket are shown as such.
    expect(markdown).toContain('bad\\\\u001b\\[31m 100%\\\\n::warning::forged,a:b.txt');
  });
});

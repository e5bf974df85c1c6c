/**
 * The one renderer of command results (output/present.ts): every kind of
 * result in every format, byte for byte on stdout and stderr, the item and
 * checksum streams it hands to batch runs, and GitHub Actions' summary and
 * annotations, written from here only.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Outcome } from '../../src/core/notarize.js';
import { InputFileError, ServiceRefusedError, TransientError, UsageError } from '../../src/errors.js';
import {
  checksumsFor,
  itemResultsFor,
  present,
  type CommandResult,
  type Format,
  type OutcomeResult,
  type View,
} from '../../src/output/present.js';
import { failedResult, ItemResults, itemResult, outcomeResult, skippedResult } from '../../src/output/results.js';
import type { LedgerEntry, PendingEntry } from '../../src/store/service-store.js';
import { bufferIO, type BufferIO } from '../helpers/io.js';
import { useTempDirs } from '../helpers/temp-dirs.js';
import { readFixture } from '../helpers/fixtures.js';

const tempDir = useTempDirs('notarize-present-');

const BASE = 'https://notary.example';
const HASH = '905d4f33b218427e8371341674a913db02402f648fef6cdf47c16f65d2dd3001';
const PAGE = `${BASE}/verification/${HASH}`;
// Without the files' final newline, as the service sends them.
const RECORD = readFixture('record.json').trimEnd();
const SESSION = readFixture('session-free-plan.json').trimEnd();

const entry = {
  schemaVersion: 1,
  hash: HASH,
  completedAt: '2024-05-01T10:00:00.000Z',
  recordJson: RECORD,
} as LedgerEntry;
const pendingEntry = {
  schemaVersion: 1,
  hash: HASH,
  description: 'Q3 report',
  custody: false,
  savedAt: '2024-05-01T09:00:00.000Z',
  sessionJson: SESSION,
} as PendingEntry;

interface Shown extends BufferIO {
  view: View;
}

function viewOf(format: Format, env: NodeJS.ProcessEnv = {}, stdin?: string): Shown {
  const out = bufferIO(stdin === undefined ? {} : { stdin });
  return { ...out, view: { io: out.io, env, format } };
}

/** What present() prints for `result` in `format`: [stdout, stderr]. */
async function shown(
  result: CommandResult,
  format: Format = 'table',
  env: NodeJS.ProcessEnv = {},
): Promise<[string, string]> {
  const out = viewOf(format, env);
  await present(out.view, result);
  return [out.stdout(), out.stderr()];
}

/** The lines of an uncoloured record table as [field, value] pairs. */
function fields(table: string): [string, string][] {
  return table
    .trimEnd()
    .split('\n')
    .map((line) => {
      const match = /^(\S+) {2,}(.*)$/.exec(line);
      if (!match) throw new Error(`unexpected line ${JSON.stringify(line)}`);
      return [match[1]!, match[2]!];
    });
}

const outcome = (value: Outcome): OutcomeResult => ({ kind: 'outcome', outcome: value, baseUrl: BASE });

describe('present: one record or outcome', () => {
  it('completed: the service text exactly with --json, a field table with the page otherwise', async () => {
    const completed = outcome({ kind: 'completed', entry, reusedSession: false });
    expect(await shown(completed, 'json')).toEqual([`${RECORD}\n`, `registered ${HASH}\n`]);
    const [table, messages] = await shown(completed);
    const rows = fields(table);
    expect(rows[0]).toEqual(['hash', HASH]);
    expect(rows).toContainEqual(['creationDate', '1649855665000 (2022-04-13T13:14:25.000Z)']);
    expect(rows[rows.length - 1]).toEqual(['verification', PAGE]);
    expect(messages).toBe(`registered ${HASH}\n`);
  });

  it('completed with the pending session and custody: says both, and that no file was uploaded', async () => {
    const [, messages] = await shown(
      outcome({ kind: 'completed', entry, reusedSession: true, custody: { metadataSent: true } }),
      'json',
    );
    expect(messages).toBe(
      `registered ${HASH} (with the pending session)\n` +
        'custody: the file metadata was sent. The file itself was NOT uploaded: the service does not document how to upload file bytes.\n',
    );
    const [, failed] = await shown(
      outcome({ kind: 'completed', entry, reusedSession: false, custody: { metadataSent: false } }),
    );
    expect(failed).toContain('custody: the file metadata could not be sent, and the file itself was NOT uploaded.\n');
    // A call an attempt of which may have been processed (its answer lost, then no connection: r84), or
    // one a signal cut short (r87): perhaps taken, never said to be sent.
    for (const [notProcessed, said] of [
      [true, 'could not be sent'],
      [false, 'may have been taken but is not confirmed'],
    ] as const) {
      const error = new TransientError('PUT failed: EMFILE', { notProcessed });
      const [, lost] = await shown(
        outcome({ kind: 'completed', entry, reusedSession: false, custody: { metadataSent: false, error } }),
      );
      expect(lost).toContain(`custody: the file metadata ${said}, and the file itself was NOT uploaded.\n`);
    }
    // The login that was to replace a token the call met with a 401 failed (r112): its error is the
    // login's, and says nothing of whether the metadata was taken; the 401 said it was not.
    const login = new TransientError('POST /api/v2/auth/login answered 500', { status: 500 });
    login.tokenRefusedFirst = true;
    const [, refused] = await shown(
      outcome({ kind: 'completed', entry, reusedSession: false, custody: { metadataSent: false, error: login } }),
    );
    expect(refused).toContain('custody: the file metadata could not be sent, and the file itself was NOT uploaded.\n');
  });

  it('already registered from the ledger: the record, and how to register again', async () => {
    const [data, messages] = await shown(outcome({ kind: 'already-registered', hash: HASH, entry }), 'json');
    expect(data).toBe(`${RECORD}\n`);
    expect(messages).toBe(
      `${HASH} is already registered (completed 2024-05-01T10:00:00.000Z); \`notarize register --force\` registers it again\n`,
    );
  });

  it("already registered on the service's word (409), with no record here: its words and the page", async () => {
    const said = outcome({
      kind: 'already-registered',
      hash: HASH,
      entry: undefined,
      service: { message: 'hash exists', retiredSession: '/store/retired/x.json' },
    });
    const [json, messages] = await shown(said, 'json');
    expect(JSON.parse(json)).toEqual({
      hash: HASH,
      status: 'already-registered',
      record: null,
      verificationUrl: PAGE,
      message: 'hash exists',
    });
    expect(json).toBe(`${JSON.stringify(JSON.parse(json), null, 2)}\n`);
    expect(messages).toBe(
      'its pending session was moved aside to /store/retired/x.json\n' +
        `${HASH} is already registered: the service says so (409: hash exists); this store has no record of it, see ${PAGE}\n`,
    );
    const [table] = await shown(said);
    expect(fields(table)).toEqual([
      ['hash', HASH],
      ['status', 'already registered (the service says so; no local record)'],
      ['message', 'hash exists'],
      ['verification', PAGE],
    ]);
  });

  it('409 with no record here, an answer to its completion kept aside: where it is, not taken for its record', async () => {
    const kept = '/store/quarantine/x.json';
    const said = outcome({
      kind: 'already-registered',
      hash: HASH,
      entry: undefined,
      service: { message: undefined, retiredSession: undefined, answerKeptAside: kept },
    });
    const [json, messages] = await shown(said, 'json');
    expect(JSON.parse(json)).toMatchObject({ record: null, answerKeptAside: kept });
    expect(messages).toBe(
      `${HASH} is already registered: the service says so (409); this store has no record of it ` +
        `(the answer its completion got, not taken for its record, is kept in ${kept}, with why), see ${PAGE}\n`,
    );
    // The table carries it too: -q silences the line above, not stdout (r79).
    const [table] = await shown(said);
    expect(fields(table)).toEqual([
      ['hash', HASH],
      ['status', 'already registered (the service says so; no local record)'],
      ['message', '-'],
      ['answerKeptAside', kept],
      ['verification', PAGE],
    ]);
    const result = outcomeResult('a.txt', said.outcome!, BASE);
    expect(result).toMatchObject({ status: 'already-registered', record: null, reason: expect.stringContaining(kept) });
  });

  it('pending: the session as saved with --json; its fields after the hash, description and date otherwise', async () => {
    const pending = outcome({ kind: 'pending', entry: pendingEntry, reused: true });
    const [json, messages] = await shown(pending, 'json');
    expect(json).toBe(`${SESSION}\n`);
    expect(messages).toBe(
      `a session was already pending for ${HASH}; complete it with: notarize complete ${HASH} (or the same register command without --no-complete, which also writes its receipt with --receipt-dir)\n`,
    );
    const rows = fields((await shown(pending))[0]);
    expect(rows.slice(0, 4)).toEqual([
      ['hash', HASH],
      ['description', 'Q3 report'],
      ['savedAt', '2024-05-01T09:00:00.000Z'],
      ['sessionId', '1683554257039'],
    ]);
  });

  it('a receipt written is said after the record; a run that failed before any outcome prints nothing', async () => {
    const [, messages] = await shown({
      ...outcome({ kind: 'completed', entry, reusedSession: false }),
      receipt: 'r.json',
    });
    expect(messages).toBe(`registered ${HASH}\nreceipt: r.json\n`);
    expect(await shown({ kind: 'outcome', baseUrl: BASE, failure: new UsageError('x') })).toEqual(['', '']);
  });

  it('a record of the ledger: the note, then the record', async () => {
    const record: CommandResult = { kind: 'record', hash: HASH, recordJson: RECORD, baseUrl: BASE, note: 'verified' };
    expect(await shown(record, 'json')).toEqual([`${RECORD}\n`, 'verified\n']);
    expect(fields((await shown(record))[0]).at(-1)).toEqual(['verification', PAGE]);
  });

  it('a record that is not a JSON object is shown raw, never dropped', async () => {
    const record: CommandResult = { kind: 'record', hash: HASH, recordJson: '[1]', baseUrl: BASE };
    expect(fields((await shown(record))[0])).toEqual([
      ['answer', '[1]'],
      ['verification', PAGE],
    ]);
  });
});

describe('present: a batch of items', () => {
  const registered = itemResult('a.txt', HASH, 'registered', { record: JSON.parse(RECORD), verificationUrl: PAGE });
  const failed = failedResult('b.txt', null, new UsageError("cannot read 'b.txt'"));
  const skipped = skippedResult('link', 'a symbolic link');

  async function batch(format: Format, env: NodeJS.ProcessEnv = {}): Promise<[string, string, Shown]> {
    const out = viewOf(format, env);
    const items = itemResultsFor(out.view);
    items.skip(skipped);
    // Settled out of order: shown in input order.
    items.add(1, failed);
    items.add(0, registered);
    await present(out.view, { kind: 'items', title: 'notarize register', items });
    return [out.stdout(), out.stderr(), out];
  }

  it('--json: one array of whole results in input order, then the paths skipped; the summary on stderr', async () => {
    const [data, messages] = await batch('json');
    expect(JSON.parse(data)).toEqual([registered, failed, skipped]);
    expect(data).toBe(`${JSON.stringify([registered, failed, skipped], null, 2)}\n`);
    expect(messages).toBe('3 items: 1 registered, 1 failed, 1 skipped\n');
  });

  it('table: status, hash, file and detail, without the records', async () => {
    const [data] = await batch('table');
    expect(data.trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^STATUS +HASH +FILE +DETAIL$/),
      expect.stringMatching(new RegExp(`^registered +${HASH} +a\\.txt$`)),
      expect.stringMatching(/^failed +- +b\.txt +cannot read 'b\.txt'$/),
      expect.stringMatching(/^skipped +- +link +a symbolic link$/),
    ]);
  });

  it('NDJSON: a line per result as it is handed over (skipped ones as met), nothing at the end', async () => {
    const [data, messages] = await batch('ndjson');
    expect(data).toBe([skipped, failed, registered].map((r) => `${JSON.stringify(r)}\n`).join(''));
    // Counted as they settled; a streamed skip is counted too, as a table counts it (r101).
    expect(messages).toBe('3 items: 1 failed, 1 registered, 1 skipped\n');
  });

  it('in GitHub Actions: a summary table appended, an annotation per failure; nothing of it elsewhere', async () => {
    const summary = join(tempDir(), 'summary.md');
    writeFileSync(summary, 'before\n');
    const [data, messages] = await batch('table', { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summary });
    expect(data.split('\n')).toHaveLength(5);
    expect(messages).toBe(
      '3 items: 1 registered, 1 failed, 1 skipped\n' +
        "::error file=b.txt,title=notarize%3A failed::cannot read 'b.txt'\n",
    );
    expect(readFileSync(summary, 'utf8')).toBe(
      'before\n### notarize register\n\n| File | Status | SHA-256 | Detail |\n|---|---|---|---|\n' +
        `| a.txt | registered | \`${HASH}\` | [verify](${PAGE}) |\n` +
        "| b.txt | failed | - | cannot read 'b.txt' |\n" +
        '| link | skipped | - | a symbolic link |\n\n',
    );
    const elsewhere = join(tempDir(), 'summary.md');
    await batch('json', { GITHUB_STEP_SUMMARY: elsewhere });
    expect(existsSync(elsewhere)).toBe(false);
  });

  it('streamed in GitHub Actions: the items are summarised too (a path skipped was only streamed)', async () => {
    const summary = join(tempDir(), 'summary.md');
    const [data, messages] = await batch('ndjson', { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summary });
    expect(data.split('\n')).toHaveLength(4);
    expect(messages).toBe(
      "3 items: 1 registered, 1 failed, 1 skipped\n::error file=b.txt,title=notarize%3A failed::cannot read 'b.txt'\n",
    );
    const rows = readFileSync(summary, 'utf8')
      .split('\n')
      .filter((line) => /^\| (a|b|link)/.test(line));
    expect(rows).toEqual([
      `| a.txt | registered | \`${HASH}\` | [verify](${PAGE}) |`,
      "| b.txt | failed | - | cannot read 'b.txt' |",
    ]);
  });

  it('a step summary that cannot be written is a warning, not a failure', async () => {
    const [, messages] = await batch('json', {
      GITHUB_ACTIONS: 'true',
      GITHUB_STEP_SUMMARY: join(tempDir(), 'no', 'x.md'),
    });
    expect(messages).toMatch(/^warning: could not append to GITHUB_STEP_SUMMARY \(.*x\.md\): ENOENT/m);
  });

  it('one document in GitHub Actions: its result is summarised before the outcome is shown', async () => {
    const summary = join(tempDir(), 'summary.md');
    const [, messages] = await shown(
      {
        kind: 'outcome',
        baseUrl: BASE,
        github: { title: 'notarize register', results: [failed] },
        failure: new UsageError('x'),
      },
      'table',
      { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summary },
    );
    expect(messages).toBe("::error file=b.txt,title=notarize%3A failed::cannot read 'b.txt'\n");
    expect(readFileSync(summary, 'utf8')).toContain("| b.txt | failed | - | cannot read 'b.txt' |\n");
  });

  it('keeps whole results for --json, compact ones for a table or a GitHub summary, none for a bare stream', () => {
    expect(itemResultsFor(viewOf('json').view).keep).toBe('whole');
    expect(itemResultsFor(viewOf('table').view).keep).toBe('compact');
    expect(itemResultsFor(viewOf('ndjson', { GITHUB_ACTIONS: 'true' }).view).keep).toBe('compact');
    expect(itemResultsFor(viewOf('ndjson').view).keep).toBe('none');
    expect(itemResultsFor(viewOf('json').view).streams).toBe(false);
    expect(itemResultsFor(viewOf('ndjson').view).streams).toBe(true);
  });
});

describe('present: checksums', () => {
  it('sha256sum lines as they come, failures on stderr as they come; the JSON array at the end', async () => {
    const failure = new InputFileError('gone.txt', 'no such file or directory');
    const other = new UsageError('cancelled');
    for (const format of ['table', 'json'] as const) {
      const out = viewOf(format);
      const checksums = checksumsFor(out.view);
      await checksums.ready();
      checksums.add({ file: 'a.txt', hash: HASH });
      checksums.add({ file: 'gone.txt', error: failure });
      checksums.add({ file: 'b\nc.txt', hash: HASH });
      checksums.add({ file: 'late.txt', error: other });
      if (format === 'table') {
        expect(out.stderr()).toBe('notarize: gone.txt: no such file or directory\nnotarize: late.txt: cancelled\n');
      } else {
        // --json: every line on stderr is a JSON error, naming its file.
        expect(
          out
            .stderr()
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line) as unknown),
        ).toEqual([
          { error: { code: 'unreadable_file', exitCode: 2, message: failure.message, file: 'gone.txt' } },
          { error: { code: 'usage', exitCode: 2, message: 'cancelled', file: 'late.txt' } },
        ]);
      }
      if (format === 'table') expect(out.stdout()).toBe(`${HASH}  a.txt\n\\${HASH}  b\\nc.txt\n`);
      else expect(out.stdout()).toBe('');
      await present(out.view, { kind: 'checksums', checksums });
      if (format === 'json') {
        expect(JSON.parse(out.stdout())).toEqual([
          { file: 'a.txt', hash: HASH },
          { file: 'b\nc.txt', hash: HASH },
        ]);
      } else expect(out.stdout()).toBe(`${HASH}  a.txt\n\\${HASH}  b\\nc.txt\n`);
    }
  });
});

describe('present: rows and values', () => {
  const rows: CommandResult = {
    kind: 'rows',
    rows: [{ name: 'a', size: 1 }],
    headers: ['NAME', 'SIZE'],
    cells: (row) => {
      const { name, size } = row as { name: string; size: number };
      return [name, String(size)];
    },
    empty: 'nothing here',
    warnings: ['a damaged file was passed over'],
  };

  it('rows: warnings first, then a JSON array or a table', async () => {
    expect(await shown(rows, 'json')).toEqual([
      `${JSON.stringify([{ name: 'a', size: 1 }], null, 2)}\n`,
      'warning: a damaged file was passed over\n',
    ]);
    expect((await shown(rows))[0]).toBe('NAME  SIZE\na     1\n');
  });

  it('no rows: the empty message for a table, an empty array for --json; a table without one prints its header', async () => {
    const none: CommandResult = { ...rows, rows: [], warnings: [] };
    expect(await shown(none)).toEqual(['', 'nothing here\n']);
    expect(await shown(none, 'json')).toEqual(['[]\n', '']);
    expect(await shown({ ...none, empty: undefined })).toEqual(['NAME  SIZE\n', '']);
  });

  it('a value: one line of JSON with --json, else its text and messages; messages and warnings always', async () => {
    const value: CommandResult = {
      kind: 'value',
      json: { url: 'http://127.0.0.1:1', n: 1 },
      text: { data: 'line 1\nline 2', info: ['a message'] },
      info: ['always'],
      warnings: ['careful'],
    };
    expect(await shown(value, 'json')).toEqual(['{"url":"http://127.0.0.1:1","n":1}\n', 'always\nwarning: careful\n']);
    expect(await shown(value)).toEqual(['line 1\nline 2\n', 'a message\nalways\nwarning: careful\n']);
    // Without a JSON form, --json shows the text.
    expect(await shown({ kind: 'value', text: { data: '/store' } }, 'json')).toEqual(['/store\n', '']);
  });

  it('messages are silenced by --quiet; data and warnings are not', async () => {
    const out = viewOf('table');
    out.io.quiet = true;
    await present(out.view, {
      kind: 'value',
      text: { data: 'data', info: ['said'] },
      info: ['said too'],
      warnings: ['w'],
    });
    expect([out.stdout(), out.stderr()]).toEqual(['data\n', 'warning: w\n']);
  });
});

describe('present: what it does not do', () => {
  it('never throws the failure: that is for the action, after the output', async () => {
    const failure = new ServiceRefusedError(400, 'refused');
    await expect(present(viewOf('json').view, { kind: 'value', info: ['x'], failure })).resolves.toBeUndefined();
    const items = new ItemResults();
    await expect(present(viewOf('json').view, { kind: 'items', title: 't', items, failure })).resolves.toBeUndefined();
  });
});

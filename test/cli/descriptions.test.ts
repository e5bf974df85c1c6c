/**
 * Descriptions are stored on a permanent record: -d and --description-file
 * must give valid UTF-8 without control characters but tab, or nothing is
 * sent (exit 2). --description-file reads a long one, bounded and strictly
 * decoded.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DESCRIPTION_FILE_LIMIT } from '../../src/core/description.js';
import { useBed, type Bed } from '../helpers/bed.js';
import { BIN, runProcess } from '../helpers/cli.js';

let bed: Bed;
useBed((b) => (bed = b), { keyInEnv: true });

/** The descriptions the sandbox's request step received, in order. */
function sentDescriptions(): string[] {
  return bed.sandbox.calls
    .filter((c) => c.route === 'request')
    .map((c) => (JSON.parse(c.body) as { description: string }).description);
}

/** Exit 2 with `message` on stderr, and the sandbox saw nothing at all (not even a login). */
function expectRefused(run: { code: number | null; stderr: string }, message: RegExp): void {
  expect(run.code, run.stderr).toBe(2);
  expect(run.stderr).toMatch(message);
  expect(bed.sandbox.calls).toEqual([]);
}

describe('-d, --description', () => {
  it('one that reads like a global option is the description: never the base URL, the output or the quiet flag (r117)', async () => {
    let documents = 0;
    for (const [flag, text] of [
      ['--description', '--base-url=http://127.0.0.1:9'],
      ['-d', '--json'],
      ['--description', '-q'],
      ['-d', '--timeout=1'],
    ] as const) {
      // Before `--` and after it: the program once took the value as its own option, and the description
      // the next word (`--`), so the key went to the URL in a description (the Action's input).
      for (const before of [true, false]) {
        const doc = await bed.file(`options-as-text-${documents}.txt`, `options as text ${documents++}`);
        const args = before ? ['register', flag, text, '--', doc] : ['register', doc, flag, text];
        const sent = sentDescriptions().length;
        const run = await bed.main(args);
        expect(run.code, run.stderr).toBe(0);
        expect(sentDescriptions().slice(sent)).toEqual([text]);
        expect(run.stdout).toMatch(/^hash +[0-9a-f]{64}$/m); // the table, not JSON
        expect(run.stderr).toMatch(/^registered [0-9a-f]{64}/m); // not quiet
      }
    }
  });

  it('one holding the API key: exit 2, nothing sent (it would be on a public record for good); --wallet-name too', async () => {
    const doc = await bed.file('doc.txt', 'secret in description');
    const key = bed.sandbox.apiKey;
    for (const args of [
      ['-d', `ticket ${key} ok`],
      ['--custody', '--wallet-name', `w-${key}`],
    ]) {
      const run = await bed.main(['register', doc, ...args]);
      expectRefused(
        run,
        /^notarize: (the description|--wallet-name) holds a secret of yours \(an API key, a token or a proxy password\): /,
      );
      expect(run.stderr).not.toContain(key);
    }
    const file = join(bed.workDir, 'description.txt');
    await writeFile(file, `release notes\nkey: ${key}\n`.replace('\n', ' '));
    expectRefused(
      await bed.main(['register', doc, '--description-file', file]),
      /the description holds a secret of yours \(an API key/,
    );
  });

  it('a file name holding the API key, sent as the description by default or as custody metadata: exit 2, nothing sent', async () => {
    const key = bed.sandbox.apiKey;
    const doc = await bed.file(`${key}.txt`, 'secret in a file name');
    for (const args of [[], ['--custody', '-d', 'a description of its own']]) {
      const run = await bed.main(['register', doc, ...args]);
      expectRefused(
        run,
        /the file name holds a secret of yours \(an API key, a token or a proxy password\): it would be kept by the service for good/,
      );
      expect(run.stderr).not.toContain(key);
    }
    // With a description of its own and no custody, the name is not sent: registered.
    const run = await bed.main(['register', doc, '-d', 'a description of its own', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(sentDescriptions()).toEqual(['a description of its own']);
  });

  it('the token `notarize login` stored, in -d or a file name: exit 2, nothing sent (not only NOTARIZE_TOKEN)', async () => {
    const login = await bed.main(['login', '--api-key-stdin', '-q'], {
      input: bed.sandbox.apiKey,
      env: { NOTARIZE_API_KEY: undefined },
    });
    expect(login.code, login.stderr).toBe(0);
    const stored = JSON.parse(readFileSync(bed.credentialsFile, 'utf8')) as {
      tokens: Record<string, string>;
    };
    const token = Object.values(stored.tokens)[0]!;
    const before = bed.sandbox.calls.length;
    const env = { NOTARIZE_API_KEY: undefined };
    const doc = await bed.file('doc.txt', 'token in description');
    const described = await bed.main(['register', doc, '-d', `build token ${token}`], { env });
    const named = await bed.main(['register', await bed.file(`${token.split('.')[2]}.txt`, 'token in a name')], {
      env,
    });
    for (const run of [described, named]) {
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(
        /holds a secret of yours \(an API key, a token or a proxy password\): it would be kept by the service for good/,
      );
      expect(run.stderr).not.toContain(token.split('.')[2]);
    }
    expect(bed.sandbox.calls.length).toBe(before);

    // In a credentials file the store refuses as damaged (a key twice), with NOTARIZE_TOKEN the run goes on
    // without it: the token there is a secret all the same.
    const credentials = readFileSync(bed.credentialsFile, 'utf8').trim();
    writeFileSync(bed.credentialsFile, `${credentials.slice(0, -1)}, "note": 1, "note": 2}`);
    // NOTARIZE_TOKEN another token (a JWT of its own, never sent here): the stored one is not known from it.
    const other = 'eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjQxMDI0NDQ4MDB9.b3RoZXItdG9rZW4tc2lnbmF0dXJl';
    const damaged = await bed.main(['register', doc, '-d', `build token ${token.split('.')[2]}`], {
      env: { ...env, NOTARIZE_TOKEN: other },
    });
    expect(damaged.code, damaged.stderr).toBe(2);
    expect(damaged.stderr).toMatch(/holds a secret of yours \(an API key, a token or a proxy password\)/);
    expect(bed.sandbox.calls.length).toBe(before);
  });

  it("a proxy password too short to scrub: a warning names it, as for the key's (never its value)", async () => {
    // The sandbox is on loopback, which no proxy is used for: the run goes on, and the warning is the point.
    const env = { HTTPS_PROXY: 'http://bob:shrt@127.0.0.1:9' };
    const run = await bed.main(['register', await bed.file('proxy.txt', 'a short proxy password'), '--quiet'], {
      env,
      // A proxy URL with a user and password, on 127.0.0.1: LOCAL_URL has no room for them.
      noProxyCheck: true,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(
      'warning: the password in HTTPS_PROXY is shorter than 8 characters: notarize cannot tell it from ordinary text',
    );
    expect(run.stderr).not.toContain('shrt');
  });

  it('bytes that are not UTF-8 on the command line: exit 2, nothing sent (the built bin, via bash)', async () => {
    await bed.file('doc.txt', 'latin-1 description');
    // Node's spawn() takes argv as strings; bash's $'...' puts the raw byte 0xE9 in it.
    const run = await runProcess(
      'bash',
      ['-c', `exec "$NODE" "$BIN" register doc.txt -d $'caf\\xe9 cr\\xe8me'`],
      { ...bed.env(), NODE: process.execPath, BIN },
      { cwd: bed.workDir },
    );
    bed.record(run);
    expectRefused(run, /^notarize: --description is not valid UTF-8: byte\(s\) at character 4 could not be decoded/);
    expect(run.stderr).toMatch(/--description-file/);
  });

  it('a U+FFFD (what Node makes of such bytes) is refused in-process too', async () => {
    const doc = await bed.file('doc.txt', 'replacement');
    expectRefused(await bed.main(['register', doc, '-d', 'caf\ufffd']), /not valid UTF-8/);
  });

  it.each([
    ['ESC', 'red \u001b[31m'],
    ['BEL', 'bell\u0007'],
    ['NUL', 'nul\u0000'],
    ['DEL', 'del\u007f'],
    ['a C1 control', 'nel\u0085'],
    ['a line feed', 'two\nlines'],
    ['a carriage return', 'over\rwrite'],
  ])('a description holding %s: exit 2, nothing sent', async (_, description) => {
    const doc = await bed.file('doc.txt', `control ${_}`);
    expectRefused(
      await bed.main(['register', doc, '-d', description]),
      /--description holds a control or format character \(U\+00[0-9A-F]{2} at character \d+\); only tab is allowed/,
    );
  });

  it('a tab, and any other Unicode, is sent as given', async () => {
    const doc = await bed.file('doc.txt', 'tab');
    const description = 'Q3\treport — Überweisung 日本 😀';
    const run = await bed.main(['register', doc, '-d', description]);
    expect(run.code, run.stderr).toBe(0);
    expect(sentDescriptions()).toEqual([description]);
  });
});

describe('--description-file', () => {
  it('sends a 10 KiB description exactly (one final line break dropped)', async () => {
    const doc = await bed.file('doc.txt', 'long description');
    const text = Array.from({ length: 200 }, (_, i) => `part ${i}: Überweisung\tüber 50 € — `)
      .join('')
      .slice(0, 10 * 1024);
    const file = await bed.file('description.txt', `${text}\n`);
    const run = await bed.main(['register', doc, '--description-file', file, '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(sentDescriptions()).toEqual([text]);
    expect((JSON.parse(run.stdout) as { description: string }).description).toBe(text);
  });

  it('drops one CRLF, takes a real U+FFFD, and reads a description piped into standard input', async () => {
    const first = await bed.file('first.txt', 'first');
    const file = await bed.file('crlf.txt', 'written on Windows \ufffd\r\n');
    expect((await bed.main(['register', first, '--description-file', file])).code).toBe(0);
    const second = await bed.file('second.txt', 'second');
    const piped = await bed.main(['register', second, '--description-file', '-'], { input: 'from a pipe\n' });
    expect(piped.code, piped.stderr).toBe(0);
    expect(sentDescriptions()).toEqual(['written on Windows \ufffd', 'from a pipe']);
  });

  it('with --hash', async () => {
    const file = await bed.file('d.txt', 'for a digest\n');
    const run = await bed.main(['register', '--hash', 'ab'.repeat(32), '--description-file', file]);
    expect(run.code, run.stderr).toBe(0);
    expect(sentDescriptions()).toEqual(['for a digest']);
  });

  it('bytes that are not UTF-8: exit 2, nothing sent', async () => {
    const doc = await bed.file('doc.txt', 'latin-1 file');
    const file = await bed.file('latin1.txt', Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
    expectRefused(
      await bed.main(['register', doc, '--description-file', file]),
      /the description in '.*latin1\.txt' is not valid UTF-8/,
    );
  });

  it('a line break inside, or more than one at the end: exit 2, nothing sent', async () => {
    const doc = await bed.file('doc.txt', 'multi-line');
    for (const content of ['one\ntwo', 'one\n\n', 'esc \u001b[2J\n']) {
      const file = await bed.file('lines.txt', content);
      expectRefused(
        await bed.main(['register', doc, '--description-file', file]),
        /the description in '.*lines\.txt' holds a control or format character/,
      );
    }
  });

  it('larger than 64 KiB: exit 2, nothing sent; exactly 64 KiB is taken', async () => {
    const doc = await bed.file('doc.txt', 'too long');
    const big = await bed.file('big.txt', 'x'.repeat(DESCRIPTION_FILE_LIMIT + 1));
    expectRefused(
      await bed.main(['register', doc, '--description-file', big]),
      /the description from '.*big\.txt' is larger than 65536 bytes/,
    );
    await writeFile(big, 'y'.repeat(DESCRIPTION_FILE_LIMIT));
    const run = await bed.main(['register', doc, '--description-file', big]);
    expect(run.code, run.stderr).toBe(0);
    expect(sentDescriptions()).toEqual(['y'.repeat(DESCRIPTION_FILE_LIMIT)]);
  });

  it.each([
    ['with --description', ['doc.txt', '-d', 'x', '--description-file', 'd.txt'], /either --description or/],
    ["'-' with '-' as a document", ['-', '--description-file', '-'], /'-' cannot be both a document and/],
    ["'-' with --files-from -", ['--files-from', '-', '--description-file', '-'], /both --files-from and/],
    ['a missing file', ['doc.txt', '--description-file', 'nope.txt'], /cannot read the description from .*nope/],
  ])('%s: exit 2, nothing sent', async (_, args, message) => {
    await bed.file('doc.txt', 'conflict');
    await bed.file('d.txt', 'description');
    const argv = args.map((a) => (a.endsWith('.txt') ? join(bed.workDir, a) : a));
    expectRefused(await bed.main(['register', ...argv], { input: 'stdin\n' }), message);
  });

  it("a '-' in a --files-from list, once standard input gave the description, is a failed item", async () => {
    const doc = await bed.file('doc.txt', 'listed');
    const list = await bed.file('list.txt', `${doc}\n-\n`);
    const run = await bed.main(['register', '--files-from', list, '--description-file', '-', '--json'], {
      input: 'described\n',
    });
    expect(run.code).toBe(1);
    const results = JSON.parse(run.stdout) as { file: string; status: string; error?: { message: string } }[];
    expect(results.map((r) => [r.file, r.status])).toEqual([
      [doc, 'registered'],
      ['-', 'failed'],
    ]);
    expect(results[1]!.error!.message).toMatch(/'-' cannot be both a document and --description-file/);
    expect(sentDescriptions()).toEqual(['described']);
  });

  it('is in register --help', async () => {
    const run = await bed.main(['register', '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/--description-file <file\|->/);
    expect(run.stdout).toMatch(/valid UTF-8 with no control characters but tab/);
  });
});

describe('the file name as default description', () => {
  /** `register` of a file of this name (exit 0), and the description its request step sent. */
  async function registerNamed(name: string, content: string) {
    const run = await bed.main(['register', await bed.file(name, content)]);
    expect(run.code, run.stderr).toBe(0);
    const request = bed.sandbox.calls.find((c) => c.route === 'request')!;
    return { run, sent: (JSON.parse(request.body) as { description: string }).description };
  }

  it('a name holding a control character is sent escaped, never raw', async () => {
    const { sent } = await registerNamed('bell\u0007name.txt', 'odd name');
    expect(sent).toBe('bell\\u0007name.txt');
  });

  it("a name holding '##[' is sent as it is: only the screen escapes it (no workflow command there)", async () => {
    const { run, sent } = await registerNamed('n##[x.txt', 'hashes in a name');
    expect(sent).toBe('n##[x.txt');
    expect(run.stdout).toMatch(/^description +n\\u0023#\[x\.txt$/m);
  });
});

describe('characters that act like controls', () => {
  it.each([
    ['a line separator', 'a\u2028b', /U\+2028/],
    ['a bidi override', 'a\u202eb', /U\+202E/],
    ['a zero-width space', 'a\u200bb', /U\+200B/],
    ['a BOM', '\ufeffbom', /U\+FEFF/],
    ['nothing', '', /is empty/],
    ['a tab alone', '\t', /is empty/],
  ])('-d with %s: exit 2, nothing sent', async (_, description, message) => {
    const doc = await bed.file('d.txt', `description ${JSON.stringify(description)}`);
    const run = await bed.main(['register', doc, '-d', description]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(bed.calls('request')).toBe(0);
  });

  it('joiners that scripts and emoji need are kept', async () => {
    const doc = await bed.file('z.txt', 'joiners');
    const run = await bed.main(['register', doc, '-d', 'family \u{1F468}\u200d\u{1F469} می\u200cخواهم']);
    expect(run.code, run.stderr).toBe(0);
  });
});

/**
 * `notarize receipt <file|hash> [-o file]` (src/commands/receipt.ts): the v1
 * receipt of a ledger entry, made after the fact, that verify then accepts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { optionsSchema, runReceipt } from '../../src/commands/receipt.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { describeRun } from '../helpers/cli.js';
import { contextFor } from '../helpers/context.js';
import { sha256 } from '../helpers/documents.js';
import { expectReceipt } from '../helpers/receipts.js';

/** What an -o that cannot be written ends with. */
const HINT = '(name a new or regular file in a folder you can write in, or -o - for standard output)';

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
    serviceStore: () => ctx.serviceStore,
    redact: (text: string) => ctx.io.redact(text),
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

  it('on a terminal: a name that would act on it is shown as JSON escapes, the same JSON value; redirected, raw', async () => {
    const name = 'app\u202e\u009b31m\u2028.tgz';
    const path = await registered(name, 'hostile name\n');
    const piped = await bed.main(['receipt', path]);
    const shown = await bed.main(['receipt', path], { stdoutIsTTY: true });
    expect(shown.code, describeRun(shown)).toBe(0);
    expect(piped.stdout).toContain(name);
    expect(shown.stdout).not.toMatch(/[\u202e\u009b\u2028]/);
    expect(shown.stdout).toContain('app\\u202e\\u009b31m\\u2028.tgz');
    expect(JSON.parse(shown.stdout)).toEqual(JSON.parse(piped.stdout));
  });

  it('--json data on a terminal (show, register): what would act on it escaped, a CR between values gone; piped, exact', async () => {
    const path = await registered('cr.txt', 'a record with a CR\n');
    const other = await registered('other.txt', 'another document\n');
    const hash = sha256('a record with a CR\n');
    // What a service may send: a CR between values (valid JSON white space) and a bidi override in a string.
    const file = bed.ledgerFile(hash);
    const entry = JSON.parse(readFileSync(file, 'utf8')) as { recordJson: string };
    entry.recordJson = entry.recordJson
      .replace('"signer":null', `"signer":"MALLORY"\r${' '.repeat(40)}`)
      .replace('"custody"', '"note":"a\u202eb","custody"');
    writeFileSync(file, JSON.stringify(entry));
    // One record alone is the service's bytes, its CR too.
    expect((await bed.main(['show', hash, '--json'])).stdout).toMatch(/MALLORY"\r/);
    const values = (text: string, ndjson: boolean): unknown =>
      ndjson
        ? text
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line) as unknown)
        : JSON.parse(text);
    for (const args of [
      ['show', hash, '--json'],
      ['register', path, '--json'],
      ['register', path, other, '--json'],
      ['register', path, other, '--output', 'ndjson'],
    ]) {
      const piped = await bed.main(args);
      const shown = await bed.main(args, { stdoutIsTTY: true });
      expect(shown.code, describeRun(shown)).toBe(0);
      expect(piped.stdout, args.join(' ')).toMatch(/\u202e/);
      expect(shown.stdout, args.join(' ')).not.toMatch(/[\r\u202e]/);
      const ndjson = args.includes('ndjson');
      expect(values(shown.stdout, ndjson)).toEqual(values(piped.stdout, ndjson));
    }
  });

  it('of a digest: the name and size the ledger kept', async () => {
    await registered('kept.txt', 'kept\n');
    const hash = sha256('kept\n');
    const result = await runReceipt(receiptOptions(hash.toUpperCase()));
    expect(result.kind).toBe('value');
    expect(JSON.parse(result.text!.data!)).toMatchObject({ document: { name: 'kept.txt', sha256: hash, size: 5 } });
  });

  it('-o writes it, and verify accepts it with an empty store', async () => {
    const path = await registered('doc.txt', 'doc\n');
    const out = join(bed.workDir, 'doc.txt.receipt.json');
    writeFileSync(out, 'an older receipt');
    const run = await bed.main(['receipt', path, '-o', out]);
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(`wrote the receipt of ${sha256('doc\n')} to ${out}\n`);
    expect(lstatSync(out).isFile()).toBe(true);
    expect(statSync(out).mode & 0o777).toBe(0o666 & ~process.umask());

    const verify = await bed.main(['verify', path, '--receipt', out], {
      env: { NOTARIZE_CONFIG_DIR: join(bed.root, 'empty-store') },
    });
    expect(verify.code, describeRun(verify)).toBe(0);
    expect(verify.stderr).toMatch(/matches its receipt/);
  });

  it('-o of a record that echoed the key: written redacted with a warning naming it, and verify accepts it', async () => {
    const key = bed.sandbox.apiKey;
    const proxy = await bed.proxy((method, path, status, body) =>
      method === 'POST' && path.endsWith('/forfait') && status === 200
        ? JSON.stringify({ ...(JSON.parse(body) as Record<string, unknown>), description: `echo ${key}` })
        : undefined,
    );
    const path = await bed.file('echo.txt', 'echoed\n');
    const env = { NOTARIZE_BASE_URL: proxy.url };
    expect((await bed.main(['register', path, '--quiet'], { env })).code).toBe(0);
    const out = join(bed.workDir, 'echo.txt.notarization.json');
    const run = await bed.main(['receipt', path, '-o', out], { env });
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stderr).toContain(
      `warning: receipt ${out}: it held a secret of yours, an API key, a token or a proxy password (echoed in the service's record, or in a file's name)`,
    );
    const text = readFileSync(out, 'utf8');
    expect(text).not.toContain(key);
    expect(text).toContain('"description":"echo [redacted]"');
    const verify = await bed.main(['verify', path, '--receipt', out], {
      env: { NOTARIZE_CONFIG_DIR: join(bed.root, 'empty-store-echo') },
    });
    expect(verify.code, describeRun(verify)).toBe(0);
  });

  it('-o refuses a link, a FIFO or a device there (exit 2, left as it was); -o - prints it', async () => {
    const path = await registered('special.txt', 'special\n');
    const target = join(bed.workDir, 'precious');
    writeFileSync(target, 'precious');
    const link = join(bed.workDir, 'link.json');
    symlinkSync(target, link);
    const fifo = join(bed.workDir, 'fifo.json');
    execFileSync('mkfifo', [fifo]);
    // A device as root would be the system's /dev/null; its twin here is a link to it, refused the same way.
    const devLink = join(bed.workDir, 'null.json');
    symlinkSync('/dev/null', devLink);
    for (const [out, what] of [
      [link, 'a symbolic link'],
      [fifo, 'not a regular file'],
      [devLink, 'a symbolic link'],
      [bed.workDir, 'a directory'],
    ] as const) {
      const run = await bed.main(['receipt', path, '-o', out]);
      expect(run.code, describeRun(run)).toBe(2);
      expect(run.stderr).toBe(
        `notarize: cannot write the receipt to ${out}: it is ${what}, which -o would replace ${HINT}\n`,
      );
    }
    expect(readFileSync(target, 'utf8')).toBe('precious');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(lstatSync(fifo).isFIFO()).toBe(true);
    expect(lstatSync('/dev/null').isCharacterDevice()).toBe(true);
    const dash = await bed.main(['receipt', path, '-o', '-']);
    expect(dash.code, describeRun(dash)).toBe(0);
    expect(JSON.parse(dash.stdout)).toMatchObject({ document: { name: 'special.txt', sha256: sha256('special\n') } });
  });

  it('-o where no file can be made: the path given, the reason in words, the hint (never a temporary name)', async () => {
    const path = await registered('plain.txt', 'plain\n');
    const cases: [string, string][] = [
      [join(path, 'no'), 'a part of the path that should be a folder is not one'],
      [join(bed.workDir, 'missing', 'r.json'), 'its folder does not exist, or cannot hold files'],
      ...(existsSync('/proc/self')
        ? [['/proc/r.json', 'its folder does not exist, or cannot hold files'] as [string, string]]
        : []),
    ];
    for (const [out, reason] of cases) {
      const run = await bed.main(['receipt', path, '-o', out]);
      expect(run.code, describeRun(run)).toBe(2);
      expect(run.stderr).toBe(`notarize: cannot write the receipt to ${out}: ${reason} ${HINT}\n`);
    }
  });

  it('a directory: exit 2, with a hint that fits receipt (it takes no --recursive)', async () => {
    await bed.file('folder/a.txt', 'a\n');
    const run = await bed.main(['receipt', bed.path('folder'), '--json']);
    expect(run.code, describeRun(run)).toBe(2);
    expect(JSON.parse(run.stderr)).toEqual({
      error: {
        code: 'is_directory',
        exitCode: 2,
        message: `'${bed.path('folder')}' is a directory`,
        hint: 'name one file in it, or a digest; `notarize list` shows what the ledger holds',
      },
    });
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

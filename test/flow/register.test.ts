/**
 * The register -> complete flow of issue 2, as a user runs it, against a
 * sandbox on 127.0.0.1 port 0: through `main()`, and once through the built
 * bin, spawned, from login to the printed record.
 */
import { statSync, readdirSync } from 'node:fs';
import { utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseResults } from '../helpers/results.js';
import { type Bed, type BedMainOptions, useBed } from '../helpers/bed.js';
import { routes } from '../helpers/sandbox.js';
import { sha256 } from '../helpers/documents.js';
import { describeRun, STACK_LINE } from '../helpers/cli.js';

let bed: Bed;
useBed((created) => {
  bed = created;
  auth = {};
});

/** The "field  value" row of a record table. */
function row(field: string, value: string): RegExp {
  const escaped = value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${field} +${escaped}$`, 'm');
}

/**
 * Credentials for tests that are not about logging in: a token fetched over
 * HTTP and passed as NOTARIZE_TOKEN. The login command itself is tested
 * below, and the stored-token path by the tests that log in on the fly.
 */
let auth: Record<string, string> = {};
async function login(): Promise<void> {
  auth = { NOTARIZE_TOKEN: await bed.directLogin() };
}

/** bed.main with this test's credentials. */
function run(args: string[], options: BedMainOptions = {}) {
  return bed.main(args, { ...options, env: { ...auth, ...options.env } });
}

function pendingFiles(): string[] {
  const services = join(bed.storeDir, 'services');
  return readdirSync(services).flatMap((service) => {
    try {
      return readdirSync(join(services, service, 'pending')).filter((name) => name.endsWith('.json'));
    } catch {
      return [];
    }
  });
}

describe('register and complete', () => {
  it('logs in with the key on stdin, registers a file and prints the record with its verification URL', async () => {
    const loggedIn = await bed.run(['login', '--api-key-stdin'], { input: `${bed.sandbox.apiKey}\n` });
    expect(loggedIn.code, loggedIn.stderr).toBe(0);
    expect(loggedIn.stdout).toBe('');
    expect(loggedIn.stderr).toMatch(
      new RegExp(
        `^logged in to ${bed.sandbox.url} as sandbox@example\\.invalid, user 1390; valid until \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\n$`,
      ),
    );
    expect(loggedIn.stderr).not.toMatch(STACK_LINE);
    expect(routes(bed.sandbox.calls)).toEqual(['login']);
    expect(JSON.parse(bed.sandbox.calls[0]!.body)).toEqual({ apiKey: bed.sandbox.apiKey });
    expect(Object.keys(bed.storedTokens())).toEqual([bed.sandbox.url]);

    const content = 'the contract, version 1\n';
    const doc = await bed.file('contract.txt', content);
    const hash = sha256(content);
    const mark = bed.mark();
    const result = await bed.run(['register', doc]);
    expect(result.code, result.stderr).toBe(0);
    expect(routes(bed.callsSince(mark))).toEqual(['request', 'forfait']);
    const record = bed.sandbox.records.get(hash);
    expect(record).toBeDefined();
    expect(result.stdout).toMatch(row('hash', hash));
    expect(result.stdout).toMatch(row('description', 'contract.txt'));
    expect(result.stdout).toMatch(row('status', 'registered'));
    expect(result.stdout).toMatch(row('blockchainType', 'ALGORAND'));
    expect(result.stdout).toMatch(row('paymentId', String(record!.paymentId)));
    expect(result.stdout).toMatch(row('verification', `${bed.sandbox.url}/verification/${hash}`));
    // Every field the service sent is in the table, the unknown-until-later ones included.
    for (const field of Object.keys(record!)) expect(result.stdout).toMatch(new RegExp(`^${field} `, 'm'));
    // Data on stdout, chatter on stderr.
    expect(result.stderr).toContain(`registered ${hash}`);
    expect(result.stdout).not.toContain(`registered ${hash}`);
    expect(result.stderr).not.toMatch(STACK_LINE);
  });

  it('--json prints exactly the record the service answered and nothing else on stdout', async () => {
    await login();
    const content = 'json please';
    const doc = await bed.file('report.pdf', content);
    const hash = sha256(content);
    const result = await run(['register', doc, '--json']);
    expect(result.code, result.stderr).toBe(0);
    const record = bed.sandbox.records.get(hash);
    expect(JSON.parse(result.stdout)).toEqual(record);
    // One line: the sandbox's answer text (it answers JSON.stringify of the record), a newline, nothing else.
    expect(result.stdout).toBe(`${JSON.stringify(record)}\n`);
    expect(result.stderr).toContain(`registered ${hash}`);
    expect(result.stderr).not.toMatch(STACK_LINE);
  });

  it('register --no-complete in one run and complete <hash> in another: the forfait body is the request answer, byte for byte', async () => {
    // The first run logs in on the fly and stores the token; the second uses the stored token.
    const content = 'two processes';
    const doc = await bed.file('two.txt', content);
    const hash = sha256(content);

    const first = await run(['register', doc, '--no-complete', '--json'], {
      env: { NOTARIZE_API_KEY: bed.sandbox.apiKey },
    });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain(
      `complete it with: notarize complete ${hash} (or the same register command without --no-complete, which also writes its receipt with --receipt-dir)`,
    );
    expect(routes(bed.sandbox.calls)).toEqual(['login', 'request']);
    const sessionText = first.stdout.replace(/\n$/, '');
    expect(first.stdout).toBe(`${sessionText}\n`);
    expect(JSON.parse(sessionText)).toMatchObject({ userId: 1390, planNickname: 'FREE', id: null, canceledAt: 0 });
    expect(bed.sandbox.records.has(hash)).toBe(false);
    expect(pendingFiles()).toEqual([`${hash}.json`]);

    const mark = bed.mark();
    const second = await run(['complete', hash]);
    expect(second.code, second.stderr).toBe(0);
    const calls = bed.callsSince(mark);
    expect(routes(calls)).toEqual(['forfait']);
    expect(calls[0]!.path).toBe(`/api/v2/registration/${hash}/forfait`);
    expect(calls[0]!.status).toBe(200);
    expect(calls[0]!.body).toBe(sessionText);
    expect(second.stdout).toMatch(row('hash', hash));
    expect(second.stdout).toMatch(row('verification', `${bed.sandbox.url}/verification/${hash}`));
    expect(second.stderr).toContain(`registered ${hash}`);
    expect(bed.sandbox.records.has(hash)).toBe(true);
    expect(pendingFiles()).toEqual([]);
  });

  it('forwards the session exactly as received even when its bytes differ from a re-serialisation', async () => {
    // A proxy re-formats the request step's answer: same JSON value (so the
    // sandbox still accepts it), different bytes (indentation, \u escapes,
    // a trailing newline). A client that re-serialised a parsed copy would
    // send other bytes than the ones it received.
    const proxy = await bed.proxy((method, path, status, body) =>
      method === 'POST' && path === '/api/v2/registration/?subscription=true' && status === 200
        ? `${JSON.stringify(JSON.parse(body), null, 3).replace('"FREE"', '"\\u0046REE"').replace('"active"', '"\\u0061ctive"')}\n`
        : undefined,
    );
    const env = { NOTARIZE_BASE_URL: proxy.url };
    const content = 'reformatted session';
    const doc = await bed.file('reformatted.txt', content);
    const hash = sha256(content);

    const first = await bed.main(['register', doc, '--no-complete', '--json'], {
      env: { ...env, NOTARIZE_API_KEY: bed.sandbox.apiKey },
    });
    expect(first.code, first.stderr).toBe(0);
    const answered = proxy.exchanges.find((e) => e.path === '/api/v2/registration/?subscription=true')!.responseBody;
    expect(answered).toContain('\\u0046REE');
    expect(first.stdout).toBe(answered);

    const second = await bed.main(['complete', hash, '--json'], { env });
    expect(second.code, second.stderr).toBe(0);
    const forfait = proxy.exchanges.filter((e) => e.path === `/api/v2/registration/${hash}/forfait`);
    expect(forfait).toHaveLength(1);
    expect(forfait[0]!.requestBody).toBe(answered);
    expect(forfait[0]!.status).toBe(200);
    expect(second.stdout).toBe(`${forfait[0]!.responseBody}\n`);
  });

  it('re-running register on a registered file prints the record, says so, and sends nothing; --force registers again', async () => {
    await login();
    const content = 'registered once';
    const doc = await bed.file('once.txt', content);
    const hash = sha256(content);
    const first = await run(['register', doc, '--json']);
    expect(first.code, first.stderr).toBe(0);

    const mark = bed.mark();
    const again = await run(['register', doc]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(new RegExp(`${hash} is already registered`));
    expect(again.stdout).toMatch(row('hash', hash));
    expect(again.stdout).toMatch(row('verification', `${bed.sandbox.url}/verification/${hash}`));
    const againJson = await run(['register', doc, '--json']);
    expect(againJson.code, againJson.stderr).toBe(0);
    expect(againJson.stdout).toBe(first.stdout);
    expect(againJson.stderr).toMatch(/already registered/);
    expect(bed.callsSince(mark)).toEqual([]);

    // A fresh service (same URL, empty state) has never seen the hash: --force registers it again.
    await bed.restartSandbox();
    const forced = await run(['register', doc, '--force', '--json'], {
      env: { NOTARIZE_API_KEY: bed.sandbox.apiKey },
    });
    expect(forced.code, forced.stderr).toBe(0);
    const succeeded = bed.sandbox.calls.filter((call) => call.status === 200);
    expect(routes(succeeded)).toEqual(['login', 'request', 'forfait']);
    expect(JSON.parse(forced.stdout)).toEqual(bed.sandbox.records.get(hash));
    expect(forced.stdout).not.toBe(first.stdout);
    expect(forced.stderr).toContain(`registered ${hash}`);
    expect(forced.stderr).not.toMatch(/already registered/);
    // The ledger now holds the new record.
    const after = await run(['register', doc, '--json']);
    expect(after.code).toBe(0);
    expect(after.stdout).toBe(forced.stdout);
  });

  it('a pending session is reused: the next register goes straight to forfait', async () => {
    await login();
    const content = 'pending then register';
    const doc = await bed.file('pending.txt', content);
    const hash = sha256(content);
    const first = await run(['register', doc, '--no-complete', '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(routes(bed.sandbox.calls)).toEqual(['login', 'request']);

    const mark = bed.mark();
    const second = await run(['register', doc]);
    expect(second.code, second.stderr).toBe(0);
    const calls = bed.callsSince(mark);
    expect(routes(calls)).toEqual(['forfait']);
    expect(calls[0]!.body).toBe(first.stdout.replace(/\n$/, ''));
    expect(second.stderr).toContain(`registered ${hash} (with the pending session)`);
    expect(second.stdout).toMatch(row('verification', `${bed.sandbox.url}/verification/${hash}`));
    expect(pendingFiles()).toEqual([]);
  });

  it('a pending session requested with another description or without custody is not completed unsaid: exit 2, nothing sent', async () => {
    await login();
    const content = 'pending with its own description';
    const doc = await bed.file('asked.txt', content);
    const hash = sha256(content);
    expect((await run(['register', doc, '--no-complete', '-d', 'first desc'])).code).toBe(0);
    const mark = bed.mark();
    for (const args of [
      ['-d', 'second desc'],
      ['-d', 'first desc', '--custody'],
      ['-d', 'second desc', '--force'],
    ]) {
      const again = await run(['register', doc, ...args, '--json']);
      expect(again.code, again.stderr).toBe(2);
      expect(again.stdout).toBe('');
      expect(again.stderr).toContain(`a pending session for ${hash} was requested with`);
      expect(again.stderr).toContain(`notarize complete ${hash}`);
    }
    expect(bed.callsSince(mark)).toEqual([]);
    // As it was requested (or with no -d: the file's name): completed with its own description.
    const done = await run(['register', doc, '--json']);
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ hash, description: 'first desc' });
  });
  it('register - reads standard input and needs --description', async () => {
    await login();
    const mark = bed.mark();
    const without = await run(['register', '-'], { input: 'piped document' });
    expect(without.code).toBe(2);
    expect(without.stdout).toBe('');
    expect(without.stderr).toMatch(/^notarize: reading standard input \('-'\) needs --description/);
    expect(bed.callsSince(mark)).toEqual([]);

    const content = Buffer.from([0, 1, 2, 255, 10, 13, 0x80]);
    const result = await run(['register', '-', '--description', 'from a pipe', '--json'], { input: content });
    expect(result.code, result.stderr).toBe(0);
    const hash = sha256(content);
    const calls = bed.callsSince(mark);
    expect(routes(calls)).toEqual(['request', 'forfait']);
    expect(calls[0]!.path).toBe('/api/v2/registration/?subscription=true');
    expect(JSON.parse(calls[0]!.body)).toEqual({
      blockchainType: 'ALGORAND',
      custody: false,
      description: 'from a pipe',
      hash,
      signed: false,
      status: 'not_registered',
    });
    expect(JSON.parse(result.stdout)).toEqual(bed.sandbox.records.get(hash));
  });

  it('--hash takes a precomputed digest in any case and sends it lowercase', async () => {
    await login();
    const hash = sha256('computed elsewhere');
    const mark = bed.mark();
    const without = await run(['register', '--hash', hash.toUpperCase()]);
    expect(without.code).toBe(2);
    expect(without.stderr).toMatch(/--hash needs --description/);
    expect(bed.callsSince(mark)).toEqual([]);

    const result = await run(['register', '--hash', hash.toUpperCase(), '-d', 'built elsewhere', '--signed']);
    expect(result.code, result.stderr).toBe(0);
    const calls = bed.callsSince(mark);
    expect(routes(calls)).toEqual(['request', 'forfait']);
    expect(JSON.parse(calls[0]!.body)).toMatchObject({ hash, description: 'built elsewhere', signed: true });
    expect(calls[0]!.body).not.toContain(hash.toUpperCase());
    expect(calls[1]!.path).toBe(`/api/v2/registration/${hash}/forfait`);
    expect(result.stdout).toMatch(row('hash', hash));
    expect(result.stdout).toMatch(row('signed', 'true'));
    expect(result.stdout).toMatch(row('verification', `${bed.sandbox.url}/verification/${hash}`));
  });

  it('--custody sends the file metadata and says plainly that the file itself was not uploaded', async () => {
    await login();
    const content = '%PDF-1.4 pretend';
    const doc = await bed.file('deed.pdf', content);
    const mtimeMs = 1_700_000_000_500;
    await utimes(doc, new Date(mtimeMs), new Date(mtimeMs));
    const hash = sha256(content);
    const mark = bed.mark();
    const result = await run(['register', doc, '--custody']);
    expect(result.code, result.stderr).toBe(0);
    const calls = bed.callsSince(mark);
    expect(routes(calls)).toEqual(['request', 'forfait', 'file']);
    expect(JSON.parse(calls[0]!.body)).toMatchObject({ custody: true, hash });
    expect(calls[2]!.method).toBe('PUT');
    expect(calls[2]!.path).toBe(`/api/v2/file/${hash}`);
    expect(calls[2]!.status).toBe(200);
    const metadata = JSON.parse(calls[2]!.body) as Record<string, unknown>;
    expect(metadata).toMatchObject({
      hash,
      name: 'deed.pdf',
      type: 'application/pdf',
      size: Buffer.byteLength(content),
      lastModified: mtimeMs,
      userId: 1390,
    });
    expect(metadata.lastModified).toBe(Math.floor(statSync(doc).mtimeMs));
    expect(bed.sandbox.files.get(hash)).toMatchObject({ name: 'deed.pdf', lastModified: mtimeMs });
    expect(result.stdout).toMatch(row('custody', 'true'));
    expect(result.stderr).toMatch(/metadata was sent/);
    expect(result.stderr).toMatch(/the file itself was NOT uploaded/i);
    expect(result.stdout).not.toMatch(/upload/i);

    const help = await run(['register', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/--custody/);
    expect(help.stdout).toMatch(/does NOT upload the file/);
  });

  it('--custody for documents this store registered without it: said, for one and for a batch, nothing sent', async () => {
    await login();
    const one = await bed.file('plain-one.txt', 'registered without custody, one\n');
    const two = await bed.file('plain-two.txt', 'registered without custody, two\n');
    expect((await run(['register', one, two])).code).toBe(0);
    const mark = bed.mark();
    const single = await run(['register', one, '--custody']);
    expect(single.code, single.stderr).toBe(0);
    expect(single.stderr).toContain(
      'custody: the file metadata could not be sent, and the file itself was NOT uploaded.',
    );
    const batch = await run(['register', one, two, '--custody']);
    expect(batch.code, batch.stderr).toBe(0);
    for (const doc of [one, two]) {
      expect(batch.stderr).toContain(
        `custody: ${doc}: it was registered before without custody, so no file metadata was sent, and the file itself was NOT uploaded`,
      );
    }
    expect(bed.callsSince(mark)).toEqual([]);
  });

  it('a document last modified before 1970: registered with --custody, its metadata sent, its record read back by show and list', async () => {
    await login();
    const doc = await bed.file('old-archive.txt', 'unpacked from an old archive\n');
    await utimes(doc, new Date(-1000), new Date(-1000));
    const hash = sha256('unpacked from an old archive\n');
    const mark = bed.mark();
    const result = await run(['register', doc, '--custody']);
    expect(result.code, result.stderr).toBe(0);
    const calls = bed.callsSince(mark);
    expect(routes(calls)).toEqual(['request', 'forfait', 'file']);
    expect(JSON.parse(calls[2]!.body)).toMatchObject({ hash, lastModified: -1000 });
    // Its own record is no "damaged store file": the ledger reads it, the re-run sends nothing.
    for (const args of [['show', doc], ['list'], ['register', doc, '--custody']]) {
      const again = await run(args);
      expect(again.code, `${args.join(' ')}: ${again.stderr}`).toBe(0);
      expect(again.stderr).not.toMatch(/damaged/);
    }
    expect(routes(bed.callsSince(mark))).toEqual(['request', 'forfait', 'file']);
  });

  it('--custody over several documents: said once at the end, in every format, that the files were NOT uploaded', async () => {
    await login();
    // complete --all of several sessions requested with --custody says it too.
    const held = [await bed.file('h1.txt'), await bed.file('h2.txt')];
    const requested = await run(['register', ...held, '--custody', '--no-complete']);
    expect(requested.code, requested.stderr).toBe(0);
    const completed = await run(['complete', '--all']);
    expect(completed.code, completed.stderr).toBe(0);
    expect(completed.stderr).toContain(
      'custody: the file metadata of 2 documents was sent. The files themselves were NOT uploaded',
    );
    // The metadata an earlier run could not send, sent by the re-run of several (already registered): said too.
    const owed = [await bed.file('o1.txt'), await bed.file('o2.txt')];
    bed.sandbox.addFaults([{ route: 'file', kind: 'status', value: 503, count: 2 }]);
    const first = await run(['register', ...owed, '--custody', '-j', '1'], { env: { NOTARIZE_RETRIES: '0' } });
    expect(first.code, first.stderr).toBe(4);
    const rerun = await run(['register', ...owed, '--custody']);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stderr).toContain(
      'custody: the file metadata of 2 documents was sent. The files themselves were NOT uploaded',
    );
    for (const format of [[], ['--output', 'ndjson']]) {
      const docs = [await bed.file(`c1-${format.length}.txt`), await bed.file(`c2-${format.length}.txt`)];
      const result = await run(['register', ...docs, '--custody', ...format]);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toContain(
        'custody: the file metadata of 2 documents was sent. The files themselves were NOT uploaded',
      );
    }
  });

  it('--wallet-name without --custody is refused before anything is sent (exit 2): no registration paid without it', async () => {
    await login();
    const doc = await bed.file('wallet-alone.pdf', 'wallet name alone');
    const mark = bed.mark();
    const result = await run(['register', doc, '--wallet-name', 'w']);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('--wallet-name goes with --custody');
    expect(routes(bed.callsSince(mark))).toEqual([]);
  });

  it('--wallet-name with a control character is refused before anything is sent (exit 2), as a description is', async () => {
    await login();
    const doc = await bed.file('wallet.pdf', 'wallet name checked');
    const mark = bed.mark();
    const result = await run(['register', doc, '--custody', '--wallet-name', 'w\u001b[31m']);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('--wallet-name holds a control or format character (U+001B at character 2)');
    expect(routes(bed.callsSince(mark))).toEqual([]);
  });

  it('logs in on the fly with NOTARIZE_API_KEY when no token is stored', async () => {
    const content = 'on the fly';
    const doc = await bed.file('fly.txt', content);
    expect(bed.storedTokens()).toEqual({});
    const result = await bed.main(['register', doc], { env: { NOTARIZE_API_KEY: bed.sandbox.apiKey } });
    expect(result.code, result.stderr).toBe(0);
    expect(routes(bed.sandbox.calls)).toEqual(['login', 'request', 'forfait']);
    expect(JSON.parse(bed.sandbox.calls[0]!.body)).toEqual({ apiKey: bed.sandbox.apiKey });
    expect(result.stdout).toMatch(row('hash', sha256(content)));
    expect(Object.keys(bed.storedTokens())).toEqual([bed.sandbox.url]);

    // The token it stored is used next time: no second login.
    const other = await bed.file('fly2.txt', 'second document');
    const mark = bed.mark();
    const next = await bed.main(['register', other]);
    expect(next.code, next.stderr).toBe(0);
    expect(routes(bed.callsSince(mark))).toEqual(['request', 'forfait']);
  });
});

describe('the store inside the folder processed', () => {
  // `register -r .` with NOTARIZE_CONFIG_DIR=.notarize registered the store's own files
  // (credentials.json, the ledger's records, the run's lock file), and every re-run paid for
  // the records the run before it had written.
  it('register passes over its files, walked or listed (a re-run sends nothing); verify fails it', async () => {
    const app = await bed.write('dist/app.bin', 'app\n');
    const store = bed.path('dist/.notarize');
    const env = { ...bed.withKey(), NOTARIZE_CONFIG_DIR: store };
    for (const status of ['registered', 'already-registered']) {
      const run = await bed.main(['register', '-r', bed.path('dist'), '--json'], { env });
      expect(run.code, describeRun(run)).toBe(0);
      // A skipped path is a result of its own, not in input order (as a link met walking).
      const results = parseResults(run.stdout).map((r) => [r.file, r.status]);
      expect(results.sort()).toEqual([
        [store, 'skipped'],
        [bed.path('dist/app.bin'), status],
      ]);
      expect(run.stderr).toContain(
        `warning: skipped ${store}: part of the notarize store, whose files are never documents`,
      );
    }
    // A list made by `find dist -type f`, the store's files in it.
    const storeFiles = readdirSync(store, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name));
    expect(storeFiles).toContain(join(store, 'credentials.json'));
    await bed.write('list.txt', [...storeFiles, bed.path('dist/app.bin')].join('\n'));
    const listed = await bed.main(['register', '--files-from', bed.path('list.txt'), '--json'], { env });
    expect(listed.code, describeRun(listed)).toBe(0);
    expect(
      parseResults(listed.stdout)
        .filter((r) => r.status !== 'skipped')
        .map((r) => r.file),
    ).toEqual([bed.path('dist/app.bin')]);
    expect(bed.requestedHashes()).toEqual([app]);
    expect(bed.calls('forfait')).toBe(1);
    // verify: the store is not checked as documents, and fails the check: it would ship, token and all.
    const verified = await bed.main(['verify', '-r', bed.path('dist'), '--json'], { env });
    expect(verified.code, describeRun(verified)).toBe(2);
    expect(
      parseResults(verified.stdout)
        .map((r) => [r.file, r.status, r.error?.code])
        .sort(),
    ).toEqual([
      [store, 'failed', 'store_inside'],
      [bed.path('dist/app.bin'), 'verified', undefined],
    ]);
  });
});

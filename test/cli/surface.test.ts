/**
 * The CLI surface as a newcomer meets it: `help <command>`, hints that name
 * the real command, --quiet, and the ranges of numeric options. In-process
 * through `main()` with buffer IO.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/commands/registry.js';
import { listenError } from '../../src/commands/sandbox.js';
import { EXIT, UsageError } from '../../src/errors.js';
import { expectFailure, expectJsonError } from '../helpers/assert.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { sha256 } from '../helpers/documents.js';
import { STACK_LINE, BIN, runProcess, spawnCli, type Run } from '../helpers/cli.js';

let bed: Bed;
useBed((created) => (bed = created));

/** Asserts a usage error: exit 2, one `notarize: ...` line on stderr, nothing on stdout, no stack. */
function expectOneLineUsage(output: Run, message: RegExp): void {
  expectFailure(output, EXIT.usage, message);
  expect(output.stderr.trimEnd().split('\n'), output.stderr).toHaveLength(1);
}

describe('notarize help <command>', () => {
  it('prints exactly what `<command> --help` prints, for every command', async () => {
    for (const { name } of COMMANDS) {
      const viaHelp = await bed.main(['help', name]);
      const viaFlag = await bed.main([name, '--help']);
      expect(viaHelp.code, viaHelp.stderr).toBe(0);
      expect(viaFlag.code, viaFlag.stderr).toBe(0);
      expect(viaHelp.stderr).toBe('');
      expect(viaHelp.stdout, name).toBe(viaFlag.stdout);
      // More than commander's bare -h of an unconfigured command.
      expect(viaHelp.stdout, name).toMatch(/Examples:/);
    }
  });

  it('walks nested subcommands: `help config set` is `config set --help`', async () => {
    for (const sub of ['get', 'set', 'unset', 'list', 'path']) {
      const viaHelp = await bed.main(['help', 'config', sub]);
      const viaFlag = await bed.main(['config', sub, '--help']);
      expect(viaHelp.code, viaHelp.stderr).toBe(0);
      expect(viaHelp.stdout).toBe(viaFlag.stdout);
      expect(viaHelp.stdout).toMatch(new RegExp(`^Usage: notarize config ${sub}\\b`));
    }
  });

  it('global options after any command, its help commands and nested ones included; -V there prints the version (r118)', async () => {
    const version = await bed.main(['--version']);
    expect(version.code).toBe(0);
    for (const argv of [
      ['hash', '-V'],
      ['hash', 'x.txt', '--version'],
      ['config', 'set', '-V'],
      ['help', '-V'],
    ]) {
      const run = await bed.main(argv);
      expect(run.code, `${argv.join(' ')}: ${run.stderr}`).toBe(0);
      expect(run.stdout, argv.join(' ')).toBe(version.stdout);
    }
    // A global option mistyped after a command is suggested, as before the command (r119).
    for (const [argv, meant] of [
      [['hash', 'x.txt', '--jso'], '--json'],
      [['hash', 'x.txt', '--versio'], '--version'],
      [['register', 'x.txt', '--jso=1'], '--json'],
    ] as const) {
      const run = await bed.main([...argv]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`(Did you mean ${meant}?)`);
    }
    for (const argv of [
      ['config', 'help', 'set', '--json'],
      ['pending', 'help', 'drop', '-q'],
      ['config', 'help', '--verbose'],
      ['help', 'register', '--json'],
    ]) {
      const run = await bed.main(argv);
      expect(run.code, `${argv.join(' ')}: ${run.stderr}`).toBe(0);
      expect(run.stdout, argv.join(' ')).toMatch(/^Usage: notarize /);
    }
  });

  it('what the client assumes to retry the paid step is said in --help, and in that of the commands that send forfait', async () => {
    for (const argv of [['--help'], ['register', '--help'], ['complete', '--help']]) {
      const run = await bed.main(argv);
      expect(run.code, run.stderr).toBe(0);
      // Help text is wrapped: read as one line.
      const help = run.stdout.replace(/\s+/g, ' ');
      const name = argv.join(' ');
      expect(help, name).toContain(
        'The service documents no status codes, so what they say of a call is assumed: a 401 that the token was refused (renewed once with the API key), a 403 that the account may not do this (exit 3, not retried).',
      );
      expect(help, name).toContain(
        'Every call but forfait (login, the request step, custody metadata) is tried again after no answer, a 5xx, a 408 or a 429',
      );
      expect(help, name).toContain(
        'forfait (the paid step) only when it cannot have been processed: after a 408 or a 429, or a 503 with Retry-After (all assumed to mean "not processed")',
      );
      expect(help, name).toContain(
        'never after another 5xx, a timeout or a connection dropped once sent: the session is kept',
      );
      // What a re-run after exit 4 rests on: said where the retries are.
      expect(help, name).toContain(
        'the next run (the same `register`, or `notarize complete <hash>`) sends it again. That assumes the service completes a hash once: a forfait for a hash it has is answered 409 (read as already registered), not paid again; how it answers a repeated forfait is undocumented.',
      );
      expect(help, name).toContain('A Retry-After longer than 30 s ends the retries');
    }
    // r115: what is assumed of a session's status, and of a logout the service does not document.
    const register = (await bed.main(['register', '--help'])).stdout.replace(/\s+/g, ' ');
    expect(register).toContain(
      'A session is completed whatever its `status` says (every sample has "active"; what other values mean is undocumented).',
    );
    const logout = (await bed.main(['logout', '--help'])).stdout.replace(/\s+/g, ' ');
    expect(logout).toContain(
      'No logout is sent: the service documents none, so the token still works there until it expires (its exp, about 10 hours after the login)',
    );
  });

  it('`help` alone is `--help`', async () => {
    const viaHelp = await bed.main(['help']);
    const viaFlag = await bed.main(['--help']);
    expect(viaHelp.code).toBe(0);
    expect(viaHelp.stdout).toBe(viaFlag.stdout);
    expect(viaHelp.stdout).toMatch(/^ {2}help \[options\] \[command\.\.\.\]/m);
  });

  it('an unknown command is a one-line usage error naming it', async () => {
    expectOneLineUsage(await bed.main(['help', 'nosuch']), /unknown command 'nosuch' \(see `notarize --help`\)/);
    expectOneLineUsage(
      await bed.main(['help', 'config', 'nope']),
      /unknown command 'config nope' \(see `notarize config --help`\)/,
    );
  });

  it('a mistyped command is answered with the closest one, at every level, as a top-level typo is', async () => {
    const cases: [string[], RegExp][] = [
      [['regster'], /unknown command 'regster' \(Did you mean register\?\) \(see `notarize --help`\)$/m],
      [['help', 'regster'], /unknown command 'regster' \(Did you mean register\?\) \(see `notarize --help`\)$/m],
      [
        ['help', 'config', 'st'],
        /unknown command 'config st' \(Did you mean set\?\) \(see `notarize config --help`\)$/m,
      ],
      // `pending` runs on its own and has a command of its own: a word after it is that command mistyped.
      [['pending', 'drp'], /unknown command 'pending drp' \(Did you mean drop\?\) \(see `notarize pending --help`\)$/m],
      [['pending', 'regster'], /unknown command 'pending regster' \(see `notarize pending --help`\)$/m],
    ];
    for (const [argv, message] of cases) expectOneLineUsage(await bed.main(argv), message);
  });

  it('`<command> help <name>` is `help <command> <name>`: an unknown name is said, not the whole help', async () => {
    expect((await bed.main(['config', 'help', 'set'])).stdout).toBe(
      (await bed.main(['config', 'set', '--help'])).stdout,
    );
    expectOneLineUsage(
      await bed.main(['config', 'help', 'sett']),
      /unknown command 'config sett' \(Did you mean set\?\) \(see `notarize config --help`\)$/m,
    );
    expect(expectJsonError(await bed.main(['--json', 'config', 'help', 'bogus']), EXIT.usage).message).toBe(
      "unknown command 'config bogus'",
    );
  });

  it('a word after a command that is no command name is not echoed (it may be anything, a key)', async () => {
    for (const word of ['sk_live.0123456789abcdef', 'sandbox_0123456789abcdef0123456789abcdef']) {
      // Wherever a command goes: after a command, after `help`, at the top.
      for (const [argv, message] of [
        [['pending', word], /unknown command after 'pending' \(see `notarize pending --help`\)$/m],
        [['pending', 'help', word], /unknown command after 'pending' \(see `notarize pending --help`\)$/m],
        [['config', word], /unknown command after 'config' \(see `notarize config --help`\)$/m],
        [['help', 'config', word], /unknown command after 'config' \(see `notarize config --help`\)$/m],
        [[word], /unknown command \(see `notarize --help`\)$/m],
      ] as const) {
        const run = await bed.main([...argv]);
        expectOneLineUsage(run, message);
        expect(run.stderr).not.toContain('0123456789abcdef');
      }
    }
  });

  it('no command at all shows the help on stderr and exits 2 (nothing ran)', async () => {
    for (const argv of [[], ['config']]) {
      const run = await bed.main(argv);
      expect(run.code, argv.join(' ')).toBe(EXIT.usage);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^Usage: notarize/);
      expect(run.stderr).not.toMatch(STACK_LINE);
    }
  });

  it('a mistyped command with --help or -h: refused as `help <word>` refuses it, exit 2, not the help and exit 0', async () => {
    for (const [argv, message] of [
      [['regster', '--help'], "unknown command 'regster' (Did you mean register?)"],
      [['--help', 'regster'], "unknown command 'regster' (Did you mean register?)"],
      [['--base-url', 'http://127.0.0.1:9', 'regster', '-h'], "unknown command 'regster' (Did you mean register?)"],
      [['config', 'sett', '--help'], "unknown command 'config sett' (Did you mean set?)"],
    ] as const) {
      const run = await bed.main([...argv]);
      expect(run.code, argv.join(' ')).toBe(EXIT.usage);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(
        new RegExp(`^notarize: ${message.replace(/[()?]/g, '\\$&')} \\(see \`notarize( config)? --help\`\\)\n$`),
      );
    }
    // A command's own help, at every level, as before.
    for (const argv of [
      ['register', '--help'],
      ['config', 'set', '-h'],
      ['--timeout', '5', 'config', '--help'],
    ]) {
      const run = await bed.main(argv);
      expect(run.code, argv.join(' ')).toBe(EXIT.ok);
      expect(run.stdout).toMatch(/^Usage: notarize /);
    }
  });

  it('no command with --json: one JSON error on stderr (the commands it could be), no help text, exit 2', async () => {
    for (const [argv, path, some] of [
      [['--json'], 'notarize', 'register'],
      [['config', '--json'], 'notarize config', 'get'],
      [['--json', 'config'], 'notarize config', 'path'],
    ] as const) {
      const run = await bed.main([...argv]);
      expect(run.code, argv.join(' ')).toBe(EXIT.usage);
      expect(run.stdout).toBe('');
      const { error } = JSON.parse(run.stderr) as {
        error: { code: string; exitCode: number; message: string; hint: string };
      };
      expect(error).toMatchObject({ code: 'usage', exitCode: 2, hint: `see \`${path} --help\`` });
      expect(error.message).toMatch(new RegExp(`^${path} needs a command: .*\\b${some}\\b`));
    }
  });
});

describe('hints name the real command', () => {
  it('a bad option value of each command points at that command’s --help', async () => {
    const cases: [string[], RegExp][] = [
      [['register', '-j', '0', 'x.txt'], /invalid --concurrency '0': .* \(see `notarize register --help`\)$/m],
      // Said in words, not as zod's 'expected number, received NaN'; no hex, exponent or blank taken for a number.
      ...['abc', '0x10', '1e2', ' 8', '257'].map((j): [string[], RegExp] => [
        ['register', '-j', j, 'x.txt'],
        /invalid --concurrency '.*': expected a whole number from 1 to 256 \(see `notarize register --help`\)$/m,
      ]),
      [['sandbox', '--port', '70000'], /invalid --port '70000': .* \(see `notarize sandbox --help`\)$/m],
    ];
    for (const [argv, message] of cases) expectOneLineUsage(await bed.main(argv), message);
  });

  it("commander's own errors (unknown option, missing argument) name the command too, on one line", async () => {
    expectOneLineUsage(
      await bed.main(['register', '--bogus']),
      /unknown option '--bogus' \(see `notarize register --help`\)$/m,
    );
    expectOneLineUsage(
      await bed.main(['config', 'set', 'timeout']),
      /missing required argument 'value' \(see `notarize config set --help`\)$/m,
    );
    expectOneLineUsage(await bed.main(['complete']), /\(see `notarize complete --help`\)$/m);
    expectOneLineUsage(await bed.main(['nosuch']), /unknown command 'nosuch' \(see `notarize --help`\)$/m);
    // --help is known everywhere, though commander keeps it apart from the other options.
    for (const argv of [['hash', '--help=1'], ['--help=1'], ['-h=1']]) {
      expectOneLineUsage(
        await bed.main(argv),
        /^notarize: option '(--help|-h)' takes no value \(see `notarize (hash )?--help`; what followed/m,
      );
    }
    // A global option given a value before the command: known, not to be moved after the command.
    expectOneLineUsage(
      await bed.main(['--quiet=1', 'hash', 'x.txt']),
      /^notarize: option '--quiet' takes no value \(see `notarize --help`; what followed --quiet is not shown/m,
    );
    // Before the command: the program's help lists only the global options; a command's go after it.
    expectOneLineUsage(
      await bed.main(['--output', 'ndjson', 'register', 'x.txt']),
      /^notarize: unknown option '--output' \(see `notarize --help`; a command's own options go after the command \(`notarize <command> --help`\)\)$/m,
    );
  });

  it('--json with another --output asks for two outputs: refused, exit 2, nothing sent', async () => {
    const file = join(bed.workDir, 'two-outputs.txt');
    await mkdir(bed.workDir, { recursive: true });
    await writeFile(file, 'two outputs\n');
    const env = { NOTARIZE_API_KEY: bed.sandbox.apiKey };
    for (const argv of [
      ['register', file, '--output', 'table', '--json'],
      ['--json', 'register', file, '--output', 'ndjson'],
      ['verify', file, '--json', '--output', 'table'],
    ]) {
      const run = await bed.main(argv, { env });
      expect(run.code, argv.join(' ')).toBe(EXIT.usage);
      expect(run.stdout).toBe('');
      expect(JSON.parse(run.stderr).error.message).toMatch(
        /^--json and --output (table|ndjson) ask for two different outputs$/,
      );
    }
    expect(bed.sandbox.calls).toHaveLength(0);
    // The same output twice is one output.
    const same = await bed.main(['verify', file, '--json', '--output', 'json']);
    expect(JSON.parse(same.stdout)).toHaveLength(1);
  });

  it('an unknown option given a value (a key typed into it) is named without what followed it', async () => {
    // No NOTARIZE_API_KEY: nothing tells notarize the value is a key, and it is still never echoed.
    const key = bed.sandbox.apiKey;
    for (const [argv, name] of [
      [['login', `--api-key=${key}`], '--api-key'],
      [['login', `-k${key}`], '-k'],
      [['register', `--token=${key}`, 'x.txt'], '--token'],
    ] as const) {
      const run = await bed.main([...argv], { env: {} });
      expectOneLineUsage(run, new RegExp(`unknown option '${name}' \\(see \`notarize ${argv[0]} --help\`; `));
      expect(run.stderr).not.toContain(key);
      expect(run.stderr).not.toContain(key.slice(-12));
      const json = expectJsonError(await bed.main(['--json', ...argv], { env: {} }), EXIT.usage);
      expect(JSON.stringify(json)).not.toContain(key.slice(-12));
      expect(json.message).toBe(`unknown option '${name}'`);
    }
  });

  it('a known flag given a value is said to take none, and a misspelt one keeps its suggestion, the value unshown', async () => {
    const quiet = await bed.main(['login', '--quiet=s3cret-value-x']);
    expectOneLineUsage(quiet, /option '--quiet' takes no value \(see `notarize login --help`; /);
    expect(quiet.stderr).not.toContain('s3cret-value-x');
    // Commander suggests by the whole word typed (a short value keeps it close enough to the option's name).
    const misspelt = await bed.run(['register', '--receipt-di=x', 'x.txt']);
    expectOneLineUsage(misspelt, /unknown option '--receipt-di' \(Did you mean --receipt-dir\?\) \(see /);
    expect(misspelt.stderr).not.toContain('=x');
  });

  it('with --json the hint is in the error object', async () => {
    const error = expectJsonError(await bed.main(['--json', 'hash', '--bogus']), EXIT.usage);
    expect(error.hint).toBe('see `notarize hash --help`');
    const invalid = expectJsonError(await bed.main(['--json', 'register', '-j', '-1', 'x']), EXIT.usage);
    expect(invalid.hint).toBe('see `notarize register --help`');
  });
});

describe('--quiet', () => {
  it('leaves only data on stdout and nothing on stderr, for every command with a success message', async () => {
    const quiet = async (argv: string[], stdin?: string) => {
      const run = await bed.main(['--quiet', ...argv], stdin === undefined ? {} : { input: stdin });
      expect(run.code, `${argv.join(' ')}: ${run.stderr}`).toBe(0);
      expect(run.stderr, argv.join(' ')).toBe('');
      return run;
    };
    const doc = await bed.file('quiet.txt', 'quiet');
    const hash = sha256('quiet');
    const dir = join(bed.workDir, 'batch');
    await bed.file('batch/a.txt', 'quiet a');
    await bed.file('batch/b.txt', 'quiet b');
    const receipts = join(bed.workDir, 'receipts');

    // Messages only: nothing at all on either stream.
    expect((await quiet(['login', '--api-key-stdin'], bed.sandbox.apiKey)).stdout).toBe('');
    expect((await quiet(['pending'])).stdout).toBe('');
    expect((await quiet(['list'])).stdout).toBe('');
    expect((await quiet(['config', 'set', 'retries', '2'])).stdout).toBe('');
    expect((await quiet(['config', 'unset', 'retries'])).stdout).toBe('');

    // Data stays: the session, the record, the results, the digests.
    expect((await quiet(['register', doc, '--no-complete'])).stdout).toContain(hash);
    expect((await quiet(['complete', hash])).stdout).toContain(hash);
    expect((await quiet(['register', doc])).stdout).toContain(hash); // already registered
    expect((await quiet(['register', '-r', dir, '--receipt-dir', receipts])).stdout).toContain(sha256('quiet a'));
    const withReceipt = await bed.file('receipt.txt', 'quiet receipt');
    expect((await quiet(['register', withReceipt, '--receipt-dir', receipts])).stdout).toContain(
      sha256('quiet receipt'),
    );
    expect((await quiet(['verify', doc])).stdout).toContain(hash);
    expect((await quiet(['verify', '-r', dir])).stdout).toContain(sha256('quiet b'));
    expect((await quiet(['hash', doc])).stdout).toBe(`${hash}  ${doc}\n`);
    expect((await quiet(['list'])).stdout).toContain(hash);
    expect((await quiet(['show', hash])).stdout).toContain(hash);
    expect((await quiet(['-q', 'logout'])).stdout).toBe('');
  });

  it("-q bundled after a command's own flag (-rq) is the global --quiet, as -qr and -r -q are", async () => {
    await bed.file('bundle/a.txt', 'bundled a');
    const dir = join(bed.workDir, 'bundle');
    const loud = await bed.main(['verify', '-r', dir]);
    expect(loud.stderr).toMatch(/^1 item: 1 unknown$/m);
    for (const argv of [
      ['verify', '-rq', dir],
      ['verify', '-qr', dir],
      ['-q', 'verify', '-r', dir],
    ]) {
      const run = await bed.main(argv);
      expect(run.code, `${argv.join(' ')}: ${run.stderr}`).toBe(EXIT.notNotarized);
      expect(run.stderr, argv.join(' ')).not.toMatch(/1 item/);
      expect(run.stdout).toContain(sha256('bundled a'));
    }
    const hashed = await bed.main(['hash', '-rq', dir]);
    expect(hashed.code, hashed.stderr).toBe(0);
    expect(hashed.stdout).toContain(sha256('bundled a'));
  });

  it('sandbox --quiet prints its URL and key (data) and nothing on stderr, until it stops', async () => {
    // The process boundary is the point: the sandbox serves until a signal.
    const sandbox = spawnCli(['--quiet', 'sandbox', '--port', '0'], bed.env(), { cwd: bed.workDir });
    try {
      expect(await sandbox.firstLine).toMatch(/^notarize sandbox listening on http:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      sandbox.child.kill('SIGTERM');
    }
    const exited = await sandbox.done;
    bed.record(exited);
    expect(exited.code, exited.stderr).toBe(0);
    expect(exited.stderr).toBe('');
    expect(exited.stdout).toMatch(/^notarize sandbox listening on \S+\nAPI key: sandbox_[0-9a-f]+\n$/);
  });

  it('without --quiet the same messages are on stderr, never on stdout', async () => {
    const login = await bed.main(['login', '--api-key-stdin'], { input: bed.sandbox.apiKey });
    expect(login.code, login.stderr).toBe(0);
    expect(login.stdout).toBe('');
    expect(login.stderr).toMatch(/^logged in to /);
    const logout = await bed.main(['logout']);
    expect(logout.stdout).toBe('');
    expect(logout.stderr).toMatch(/^logged out of /);
  });

  it('keeps warnings: logout with NOTARIZE_TOKEN set still warns that it is used', async () => {
    const token = await bed.directLogin();
    const run = await bed.main(['-q', 'logout'], { env: { NOTARIZE_TOKEN: token } });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe('warning: NOTARIZE_TOKEN is set in the environment and is still used\n');
  });
});

describe('numeric options and settings have sensible ranges', () => {
  const doc = () => bed.file('range.txt', 'range');

  it('--timeout 0 is refused (exit 2, one line), whether from the flag, NOTARIZE_TIMEOUT or config set; nothing is sent', async () => {
    const path = await doc();
    const mark = bed.mark();
    expectOneLineUsage(
      await bed.main(['--timeout', '0', 'register', path], { env: bed.withKey() }),
      /invalid timeout '0': expected a whole number from 1 to 3600000 \(given with --timeout\)$/m,
    );
    expectOneLineUsage(
      await bed.main(['register', path], { env: { ...bed.withKey(), NOTARIZE_TIMEOUT: '0' } }),
      /invalid timeout '0': .* \(set by NOTARIZE_TIMEOUT\)$/m,
    );
    expectOneLineUsage(await bed.main(['config', 'set', 'timeout', '0']), /invalid timeout '0'/);
    // `config get` reads by the same rule, with the same message.
    expectOneLineUsage(
      await bed.main(['config', 'get', 'timeout'], { env: { NOTARIZE_TIMEOUT: '0' } }),
      /invalid timeout '0': .* \(set by NOTARIZE_TIMEOUT\)$/m,
    );
    expect(bed.callsSince(mark)).toEqual([]);
    // 1 ms is the least, and allowed.
    const ok = await bed.main(['config', 'set', 'timeout', '1']);
    expect(ok.code, ok.stderr).toBe(0);
  });

  it('a bad global flag is refused by every command, also one that would not use it', async () => {
    expectOneLineUsage(await bed.main(['list', '--timeout', '0']), /invalid timeout '0'/);
    expectOneLineUsage(await bed.main(['pending', '--retries', '21']), /invalid retries '21'.* from 0 to 20/);
  });

  it.each([
    [['--timeout', '1e3'], /invalid timeout '1e3'/],
    // An empty value (an unset variable) is said to be empty, for every option.
    [['--timeout', ''], /^notarize: --timeout is empty \(give --timeout a value/m],
    [['--timeout', '-5'], /invalid timeout '-5'/],
    [['--retries', '2.5'], /invalid retries '2.5'/],
    [['--retries', '0x3'], /invalid retries '0x3'/],
  ])('%j is refused: plain whole numbers only', async (flag, message) => {
    expectOneLineUsage(await bed.main([...flag, 'register', await doc()], { env: bed.withKey() }), message);
  });

  it('NOTARIZE_RETRY_DELAY_MS that is not a whole number is refused rather than ignored', async () => {
    expectOneLineUsage(
      await bed.main(['register', await doc()], { env: { ...bed.withKey(), NOTARIZE_RETRY_DELAY_MS: 'soon' } }),
      /invalid retry delay 'soon'.* \(set by NOTARIZE_RETRY_DELAY_MS\)$/m,
    );
  });

  it.each([['0'], ['257'], ['-1'], ['x']])('-j %s is refused, naming register', async (value) => {
    expectOneLineUsage(
      await bed.main(['register', '-j', value, await doc()], { env: bed.withKey() }),
      /invalid --concurrency .*\(see `notarize register --help`\)$/m,
    );
  });

  it.each([['65536'], ['0x50'], ['-1'], ['1.5']])('sandbox --port %j is refused', async (value) => {
    expectOneLineUsage(
      await bed.main(['sandbox', '--port', value]),
      /invalid --port .*from 0 to 65535.*\(see `notarize sandbox --help`\)$/m,
    );
  });

  it('sandbox --port "" is refused as empty', async () => {
    expectOneLineUsage(await bed.main(['sandbox', '--port', '']), /^notarize: --port is empty/m);
  });
});

describe('notarize sandbox cannot listen', () => {
  it('on a busy port: exit 2, one line naming the port and hinting --port 0', async () => {
    const port = new URL(bed.url).port;
    const run = await bed.main(['sandbox', '--port', port]);
    expectOneLineUsage(run, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: port ${port} is already in use`));
    expect(run.stderr).toMatch(/--port 0 for a free one/);
    expect(run.stderr).not.toMatch(/unexpected error|EADDRINUSE/);
    const json = expectJsonError(await bed.main(['--json', 'sandbox', '--port', port]), EXIT.usage);
    expect(json).toMatchObject({ code: 'listen', hint: expect.stringContaining('--port 0') });
  });

  it('on an address that is not this machine’s, or an unknown host: a clear usage error', async () => {
    // 192.0.2.0/24 is reserved for documentation: never an address of this machine.
    expectOneLineUsage(
      await bed.main(['sandbox', '--port', '0', '--host', '192.0.2.1']),
      /cannot listen on 192\.0\.2\.1:0: 192\.0\.2\.1 is not an address of this machine/,
    );
  });

  it('without the right to a low port (EACCES): names the port and why', () => {
    // Tests may run as root, where port 80 is allowed: the mapping is checked directly.
    const denied = Object.assign(new Error('listen EACCES: permission denied 127.0.0.1:80'), { code: 'EACCES' });
    const error = listenError(denied, '127.0.0.1', 80) as UsageError;
    expect(error).toBeInstanceOf(UsageError);
    expect(error.exitCode).toBe(EXIT.usage);
    expect(error.message).toBe('cannot listen on 127.0.0.1:80: permission denied');
    expect(error.hint).toMatch(/below 1024 .*--port 0/);
    const unknown = Object.assign(new Error('listen EMFILE'), { code: 'EMFILE' });
    expect((listenError(unknown, '::1', 9) as UsageError).message).toBe('cannot listen on [::1]:9: EMFILE');
    const notNetwork = new TypeError('bad');
    expect(listenError(notNetwork, '127.0.0.1', 9)).toBe(notNetwork);
  });
});

describe('a reader that stops early', () => {
  it('`notarize hash ... | head -1`: no EPIPE stack trace, exit 0', async () => {
    // The process boundary is the point. Far more output than a pipe buffer
    // (64 KiB) holds, so writes go on after head has exited.
    const dir = join(bed.workDir, 'many');
    await mkdir(dir);
    const long = 'x'.repeat(150);
    await Promise.all(Array.from({ length: 1000 }, (_, i) => writeFile(join(dir, `${long}-${i}.txt`), `${i}`)));
    const script = '"$NODE" "$BIN" hash -r "$DIR" | head -1; echo "status=${PIPESTATUS[0]}" >&2';
    const run = await runProcess(
      'bash',
      ['-c', script],
      { NODE: process.execPath, BIN, DIR: dir, NOTARIZE_CONFIG_DIR: bed.storeDir },
      { cwd: bed.workDir },
    );
    expect(run.stdout).toMatch(/^[0-9a-f]{64} {2}\S+\n$/);
    expect(run.stderr).toBe('status=0\n');
  });
});

/**
 * `notarize completion bash|zsh|fish`, tried in the real shells, as a user
 * would: a fresh interactive bash or zsh under a pseudo-terminal (driven by
 * zsh's zpty module, see shells/pty-complete.zsh) loads the script, the line
 * is typed and Tab pressed once; fish answers `complete -C`. Each test asserts
 * the exact candidates offered, and for bash and zsh the line after the Tab.
 *
 * Every completion is the first Tab of a new shell: zsh once did nothing on
 * it. A shell that is not installed fails its tests (CI installs them with
 * scripts/install-test-shells.sh), unless NOTARIZE_SKIP_SHELLS is set.
 *
 * Also checks that the scripts' data names every command, subcommand and
 * option of the real CLI (commander's tree, configured from the registry).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/commands/registry.js';
import { describeRun, REPO_ROOT, runProcess } from '../helpers/cli.js';
import { runMain } from '../helpers/main.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

type Shell = 'bash' | 'zsh' | 'fish';
const SHELL_DIR = join(REPO_ROOT, 'test', 'cli', 'shells');
const GLOBAL_OPTIONS = ['--base-url', '--json', '--quiet', '-q', '--verbose', '--timeout', '--retries'];
const ROOT_OWN_OPTIONS = ['--version', '-V', '--help', '-h'];

/** A shell missing from this machine, or undefined. The pty driver needs zsh, for bash too. */
function missingShell(shell: Shell): string | undefined {
  const needed: Shell[] = shell === 'bash' ? ['bash', 'zsh'] : [shell];
  return needed.find((name) => spawnSync(name, ['-c', 'exit 0'], { timeout: 10_000 }).status !== 0);
}

/** Fails (or, with NOTARIZE_SKIP_SHELLS, skips) the tests of a shell that is not installed. */
function describeShell(shell: Shell, body: () => void): void {
  const missing = missingShell(shell);
  describe.skipIf(missing !== undefined && Boolean(process.env.NOTARIZE_SKIP_SHELLS))(`${shell}`, () => {
    beforeAll(() => {
      if (missing) {
        throw new Error(
          `${missing} is not installed: run scripts/install-test-shells.sh (or set NOTARIZE_SKIP_SHELLS=1 to skip)`,
        );
      }
    });
    body();
  });
}

let dir: string;
let home: string;
/**
 * Where completion runs: file names with a space, a directory with a space,
 * and names with the characters readline splits words at (= and :).
 */
let files: string;
const scripts = {} as Record<Shell, { path: string; text: string }>;

const tempDirs = useTempDirs('notarize-completion-', afterAll);
beforeAll(async () => {
  dir = tempDirs();
  home = join(dir, 'home');
  files = join(dir, 'files');
  await mkdir(home);
  await mkdir(join(files, 'a dir'), { recursive: true });
  await writeFile(join(files, 'my file.txt'), 'x');
  await writeFile(join(files, 'notes.md'), 'x');
  await writeFile(join(files, 'x=y.txt'), 'x');
  await writeFile(join(files, 'a:b.txt'), 'x');
  await mkdir(join(files, 'some=dir'));
  await mkdir(join(files, 'k=v dir'));
  await mkdir(join(dir, 'fpath'));
  for (const shell of ['bash', 'zsh', 'fish'] as const) {
    const run = await runMain(
      ['completion', shell],
      { NOTARIZE_CONFIG_DIR: join(dir, 'store') },
      { noBaseUrlCheck: true },
    );
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stderr).toBe('');
    const path = join(dir, `notarize.${shell}`);
    await writeFile(path, run.stdout);
    scripts[shell] = { path, text: run.stdout };
  }
  // For zsh's $fpath: the file is named after its function.
  await writeFile(join(dir, 'fpath', '_notarize'), scripts.zsh.text);
});

interface Completed {
  line: string;
  /** What the completion offered, sorted, without duplicates (zsh's _files adds some twice). */
  offered: string[];
  /** bash and zsh: the line after the Tab. */
  after?: string;
}

function parseCases(lines: string[], output: string): Completed[] {
  const blocks = output.split(/^@@case \d+\n/m).slice(1);
  expect(blocks.length, output).toBe(lines.length);
  return blocks.map((block, i) => {
    const rows = block.split('\n').filter((row) => row !== '');
    const status = rows.find((row) => row.startsWith('@@status '));
    expect(status, `${lines[i]}:\n${block}`).toBe('@@status ok');
    const after = rows.find((row) => row.startsWith('@@line '))?.slice('@@line '.length);
    const offered = [...new Set(rows.filter((row) => !row.startsWith('@@')))].sort();
    return { line: lines[i]!, offered, ...(after === undefined ? {} : { after }) };
  });
}

/** Seconds a pty session may take per line before the driver gives up on it. */
const PTY_SECONDS = 8;

/**
 * Completes each line with one Tab in a fresh interactive bash or zsh. zsh
 * `mode`: the script saved in $fpath, eval'd or sourced (after compinit).
 */
async function completeInPty(shell: 'bash' | 'zsh', lines: string[], mode = 'eval', userRc = ''): Promise<Completed[]> {
  const run = await runProcess(
    'zsh',
    ['-f', join(SHELL_DIR, 'pty-complete.zsh'), shell, join(SHELL_DIR, `setup.${shell}`), ...lines],
    {
      HOME: home,
      TERM: 'xterm',
      NOTARIZE_MODE: mode,
      NOTARIZE_USER_RC: userRc,
      NOTARIZE_SCRIPT: scripts[shell].path,
      NOTARIZE_FPATH: join(dir, 'fpath'),
      NOTARIZE_PTY_SECONDS: String(PTY_SECONDS),
    },
    { cwd: files, timeoutMs: (PTY_SECONDS * lines.length + 10) * 1000 },
  );
  expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
  return parseCases(lines, run.stdout);
}

/** Completes each line with fish's `complete -C`; the candidates without their descriptions. */
async function completeInFish(lines: string[]): Promise<Completed[]> {
  const run = await runProcess(
    'fish',
    [
      '--no-config',
      '-c',
      'source $argv[1]; for line in $argv[2..]; echo "@@case 0"; complete -C $line; echo "@@status ok"; end',
      scripts.fish.path,
      ...lines,
    ],
    { HOME: home },
    { cwd: files, timeoutMs: 30_000 },
  );
  expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
  const cases = parseCases(
    lines,
    run.stdout
      .split('\n')
      .map((row) => row.split('\t')[0])
      .join('\n'),
  );
  return cases;
}

async function complete(shell: Shell, lines: string[], mode?: string, userRc?: string): Promise<Completed[]> {
  return shell === 'fish' ? completeInFish(lines) : completeInPty(shell, lines, mode, userRc);
}

/**
 * Options users set in their rc files that change how a script reads: the
 * scripts must complete the same under them (each once stopped them dead).
 */
const USER_OPTIONS: Record<'bash' | 'zsh', string> = {
  bash: 'set -u',
  zsh: 'setopt ksharrays nounset shwordsplit',
};

/** Candidates as the user reads them: zsh shows `a\ dir`, fish `a dir/`. */
function plain(candidate: string): string {
  return candidate.replace(/\\(.)/g, '$1').replace(/\/$/, '');
}

/** Every registry command configured as for a run, walked independently of the completion code. */
async function configuredCommands(): Promise<Command[]> {
  return Promise.all(
    COMMANDS.map(async (entry) => {
      const command = new Command(entry.name);
      const never = () => {
        throw new Error('not run');
      };
      (await entry.load()).configure(command, never, COMMANDS);
      return command;
    }),
  );
}

function flagsOf(command: Command): string[] {
  return [...command.options.flatMap((o) => [o.long, o.short]), '--help', '-h'].filter((f): f is string => Boolean(f));
}

/** The commands, and commander's own `help`. */
const COMMAND_NAMES = [...COMMANDS.map((c) => c.name), 'help'].sort();

interface Case {
  line: string;
  /** The candidates offered, as plain names (see plain()). */
  offered: string[];
  /** When fish shows them otherwise (it completes `--output=` with the option). */
  fish?: string[];
  /** When bash shows them otherwise (only what follows the last = or : of the word, which readline replaces). */
  bash?: string[];
  /** bash and zsh: the line after the Tab. */
  after?: string;
}

/** The cases every shell must get right; pending's subcommands come from the command itself. */
async function cases(): Promise<Case[]> {
  const configured = await configuredCommands();
  const subcommandsOf = (name: string) =>
    configured
      .find((c) => c.name() === name)!
      .commands.map((c) => c.name())
      .sort();
  const dirs = ['a dir', 'k=v dir', 'some=dir'];
  const everything = [...dirs, 'a:b.txt', 'my file.txt', 'notes.md', 'x=y.txt'];
  return [
    // Commands, and nothing else (no file names) where a command goes.
    { line: 'notarize ', offered: COMMAND_NAMES },
    { line: 'notarize reg', offered: ['register'], after: 'notarize register ' },
    // Global options before the command, with and without values.
    { line: 'notarize --json reg', offered: ['register'], after: 'notarize --json register ' },
    { line: 'notarize --timeout 5 ', offered: COMMAND_NAMES },
    { line: 'notarize --retries 3 -q --verbose con', offered: ['config'] },
    { line: 'notarize --base-url=http://127.0.0.1:9 reg', offered: ['register'] },
    {
      line: 'notarize --base-url http://127.0.0.1:9 register --o',
      offered: ['--output'],
      after: 'notarize --base-url http://127.0.0.1:9 register --output ',
    },
    // Option values: choices, or nothing at all (never file names).
    { line: 'notarize register --output ', offered: ['json', 'ndjson', 'table'] },
    { line: 'notarize register --output=nd', offered: ['ndjson'], fish: ['--output=ndjson'] },
    { line: 'notarize register --blockchain ', offered: ['ALGORAND'] },
    { line: 'notarize register --base-url ', offered: [] },
    { line: 'notarize register -rj ', offered: [] },
    { line: 'notarize register --receipt-dir ', offered: dirs },
    // Subcommands and their arguments.
    { line: 'notarize config ', offered: ['get', 'list', 'path', 'set', 'unset'] },
    { line: 'notarize --json config get ', offered: ['baseUrl', 'retries', 'timeout'] },
    { line: 'notarize config set ti', offered: ['timeout'], after: 'notarize config set timeout ' },
    { line: 'notarize config set timeout ', offered: [] },
    { line: 'notarize completion ', offered: ['bash', 'fish', 'zsh'] },
    { line: 'notarize help ', offered: COMMANDS.map((c) => c.name).sort() },
    { line: 'notarize help reg', offered: ['register'], after: 'notarize help register ' },
    { line: 'notarize pending ', offered: subcommandsOf('pending') },
    // help takes a command path (help config set): a command's subcommands, as the command itself offers them.
    { line: 'notarize help config ', offered: subcommandsOf('config') },
    { line: 'notarize help pending ', offered: subcommandsOf('pending') },
    { line: 'notarize help config s', offered: ['set'], after: 'notarize help config set ' },
    { line: 'notarize --json help config ', offered: subcommandsOf('config') },
    { line: 'notarize help config set ', offered: [] },
    { line: 'notarize help register ', offered: [] },
    { line: 'notarize list ', offered: [] },
    { line: 'notarize complete ', offered: [] },
    // File names, with spaces, typed plain or quoted.
    { line: 'notarize hash ', offered: everything },
    { line: 'notarize hash my', offered: ['my file.txt'], after: 'notarize hash my\\ file.txt ' },
    { line: 'notarize show "my', offered: ['my file.txt'], after: 'notarize show "my file.txt" ' },
    { line: 'notarize --timeout 5 show ', offered: everything },
    { line: 'notarize verify --files-from my', offered: ['my file.txt'] },
    // Names with = or :, where readline replaces only what follows the last one (bash lists that part).
    { line: 'notarize hash x=', offered: ['x=y.txt'], bash: ['y.txt'], after: 'notarize hash x=y.txt ' },
    { line: 'notarize hash a:', offered: ['a:b.txt'], bash: ['b.txt'], after: 'notarize hash a:b.txt ' },
    { line: 'notarize hash k=v', offered: ['k=v dir'], bash: ['v dir'], after: 'notarize hash k=v\\ dir/' },
    // An escaped = is no word break (zsh drops the escape, bash keeps it).
    { line: 'notarize hash x\\=', offered: ['x=y.txt'] },
    { line: 'notarize show "x=', offered: ['x=y.txt'], after: 'notarize show "x=y.txt" ' },
    {
      line: 'notarize register --receipt-dir some=',
      offered: ['some=dir'],
      bash: ['dir'],
      after: 'notarize register --receipt-dir some=dir/',
    },
    {
      line: 'notarize register --receipt-dir=some=',
      offered: ['some=dir'],
      bash: ['dir'],
      fish: ['--receipt-dir=some=dir'],
      after: 'notarize register --receipt-dir=some=dir/',
    },
    // Options where options go; none after --.
    { line: 'notarize -', offered: [...GLOBAL_OPTIONS, ...ROOT_OWN_OPTIONS].sort() },
    { line: 'notarize register -- --o', offered: [] },
  ];
}

function expectCases(shell: Shell, got: Completed[], expected: Case[]): void {
  got.forEach((completed, i) => {
    const want = expected[i]!;
    const offered = completed.offered.map(plain).sort();
    expect({ line: want.line, offered }).toEqual({
      line: want.line,
      offered: ((shell === 'fish' && want.fish) || (shell === 'bash' && want.bash) || want.offered).slice().sort(),
    });
    if (shell !== 'fish' && want.after !== undefined) {
      expect({ line: want.line, after: completed.after }).toEqual({ line: want.line, after: want.after });
    }
  });
}

describe('the generated scripts', () => {
  it('pass their shell syntax checks, each where installed', async () => {
    const checks: [Shell, string[]][] = [
      ['bash', ['-n', scripts.bash.path]],
      ['zsh', ['-n', scripts.zsh.path]],
      ['fish', ['--no-execute', scripts.fish.path]],
    ];
    for (const [shell, args] of checks) {
      if (missingShell(shell) && process.env.NOTARIZE_SKIP_SHELLS) continue;
      const run = await runProcess(shell, args, {}, { timeoutMs: 10_000 });
      expect(run.code, `${shell}: ${run.stderr}`).toBe(0);
    }
  });

  it('carry every command, subcommand and option of the CLI, and the global options', async () => {
    const commands = await configuredCommands();
    for (const shell of ['bash', 'zsh', 'fish'] as const) {
      const rows = tableOf(shell, scripts[shell].text);
      const has = (kind: string, path: string, name: string) =>
        rows.some((r) => r[0] === kind && r[1] === path && r[2] === name);
      for (const flag of [...GLOBAL_OPTIONS, ...ROOT_OWN_OPTIONS]) {
        expect(has('O', 'notarize', flag), `${shell}: global ${flag}`).toBe(true);
      }
      const walk = (command: Command, parent: string) => {
        const path = `${parent} ${command.name()}`;
        expect(has('C', parent, command.name()), `${shell}: command ${path}`).toBe(true);
        for (const flag of flagsOf(command)) expect(has('O', path, flag), `${shell}: ${path} ${flag}`).toBe(true);
        for (const sub of command.commands) walk(sub, path);
      };
      for (const command of commands) walk(command, 'notarize');
      // And nothing else: no command the CLI does not have (commander's own `help` is one it has).
      const known = new Set([...commands.map((c) => c.name()), 'help']);
      expect(has('C', 'notarize', 'help'), `${shell}: help`).toBe(true);
      for (const row of rows.filter((r) => r[0] === 'C' && r[1] === 'notarize')) expect(known).toContain(row[2]);
    }
  });

  it('are generated without opening the store (none is created)', () => {
    expect(existsSync(join(dir, 'store'))).toBe(false);
  });

  // The names of Object.prototype too (the fuzzer found `completion valueOf`: an unexpected error, exit 1).
  it.each(['tcsh', 'valueOf', 'toString', '__proto__', 'constructor', 'hasOwnProperty'])(
    'an unknown shell (%s) is a usage error (exit 2)',
    async (shell) => {
      const run = await runMain(
        ['completion', shell],
        { NOTARIZE_CONFIG_DIR: join(dir, 'store') },
        { noBaseUrlCheck: true },
      );
      expect(run.code, describeRun(run)).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toBe(`notarize: unknown shell '${shell}' (use bash, zsh or fish)\n`);
    },
  );
});

/**
 * The rows of a script's table (see completionTable in src/commands/completion.ts),
 * read back from the script's quoted `table` value.
 */
function tableOf(shell: Shell, script: string): string[][] {
  const quoted =
    shell === 'fish' ? /set -l table '((?:[^'\\]|\\.)*)'/.exec(script) : /local table='(.*?)'\n/s.exec(script);
  expect(quoted, `${shell}: no table`).not.toBeNull();
  const text = shell === 'fish' ? quoted![1]!.replace(/\\(.)/g, '$1') : quoted![1]!.replace(/'\\''/g, "'");
  return text.split('\n').map((line) => line.split('\t'));
}

/** Completes every case of cases() in `shell` (loaded by `mode`, under the user's options `userRc`) and checks each. */
async function completesEveryCase(shell: Shell, mode?: string, userRc?: string): Promise<Case[]> {
  const expected = await cases();
  const lines = expected.map((c) => c.line);
  expectCases(shell, await complete(shell, lines, mode, userRc), expected);
  return expected;
}

for (const shell of ['bash', 'zsh', 'fish'] as const) {
  describeShell(shell, () => {
    it('completes commands, subcommands, option values and file names, first Tab of a fresh shell', async () => {
      await completesEveryCase(shell);
    }, 120_000);

    if (shell !== 'fish') {
      it(`completes the same under the user's own options (${USER_OPTIONS[shell]})`, async () => {
        const expected = await completesEveryCase(shell, 'eval', USER_OPTIONS[shell]);
        if (shell === 'zsh') {
          // Saved in $fpath, its first Tab runs the file as the function's body, under the user's options.
          const some = expected.filter((c) =>
            ['notarize reg', 'notarize register --output ', 'notarize hash my'].includes(c.line),
          );
          const lines = some.map((c) => c.line);
          expectCases(shell, await complete(shell, lines, 'fpath', USER_OPTIONS.zsh), some);
        }
      }, 120_000);
    }

    it("offers every command's options, with the global ones", async () => {
      const commands = await configuredCommands();
      const lines = commands.map((c) => `notarize ${c.name()} --`);
      const got = await complete(shell, lines);
      got.forEach((completed, i) => {
        const command = commands[i]!;
        const longs = [...flagsOf(command), ...GLOBAL_OPTIONS, ...ROOT_OWN_OPTIONS].filter((f) => f.startsWith('--'));
        expect({ line: completed.line, offered: completed.offered }).toEqual({
          line: lines[i],
          offered: [...new Set(longs)].sort(),
        });
      });
    }, 120_000);
  });
}

describeShell('zsh', () => {
  it.each(['fpath', 'source'])(
    'completes on the first Tab when the script is loaded by %s',
    async (mode) => {
      const lines = ['notarize reg', 'notarize register --output ', 'notarize hash my'];
      const got = await complete('zsh', lines, mode);
      expect(got.map((c) => c.after)).toEqual([
        'notarize register ',
        'notarize register --output ',
        'notarize hash my\\ file.txt ',
      ]);
      expect(got[1]!.offered).toEqual(['json', 'ndjson', 'table']);
    },
    60_000,
  );
});

describeShell('bash', () => {
  it('registers without a file-name fallback, loaded by source too', async () => {
    const run = await runProcess(
      'bash',
      ['--norc', '-c', 'source "$1" && complete -p notarize', 'x', scripts.bash.path],
      {},
      { timeoutMs: 10_000 },
    );
    expect(run.code, run.stderr).toBe(0);
    // -o default or bashdefault would offer file names where none belong.
    expect(run.stdout).toBe('complete -F _notarize notarize\n');
    const got = await complete('bash', ['notarize config set timeout ', 'notarize hash my'], 'source');
    expect(got.map((c) => [c.offered, c.after])).toEqual([
      [[], 'notarize config set timeout '],
      [['my file.txt'], 'notarize hash my\\ file.txt '],
    ]);
  }, 60_000);
});

describeShell('fish', () => {
  it('completes when autoloaded from ~/.config/fish/completions, the documented install', async () => {
    const config = join(dir, 'fish-config');
    await mkdir(join(config, 'fish', 'completions'), { recursive: true });
    await writeFile(join(config, 'fish', 'completions', 'notarize.fish'), scripts.fish.text);
    // fish autoloads completions only for a command it can find.
    const bin = join(dir, 'bin');
    await mkdir(bin, { recursive: true });
    await writeFile(join(bin, 'notarize'), '#!/bin/sh\nexit 0\n');
    await chmod(join(bin, 'notarize'), 0o755);
    const run = await runProcess(
      'fish',
      ['-c', 'complete -C "notarize --json config get "'],
      { HOME: home, XDG_CONFIG_HOME: config, PATH: `${bin}:${process.env.PATH ?? ''}` },
      { cwd: files, timeoutMs: 30_000 },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.split('\n').filter(Boolean).sort()).toEqual(['baseUrl', 'retries', 'timeout']);
  }, 60_000);
});

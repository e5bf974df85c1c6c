/**
 * Issue 9: a batch never aborts on one bad input. A named path that is
 * missing, unreadable or not a regular file (a FIFO, a device, a directory
 * without --recursive) is one failed item, with its path and a one-line
 * reason, and the others go on. Exit codes never lie: 2 only when nothing was
 * sent; a `register` batch that sent something and had a local failure exits 1.
 * In-process through main() unless the process boundary is the point.
 */
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Bed, useBed } from '../helpers/bed.js';
import { sha256 } from '../helpers/documents.js';
import { STACK_LINE, cliCopyForOtherUsers, describeRun, runProcess, type Run } from '../helpers/cli.js';
import { jsonError, missingFileResult, parseNdjson, parseResults } from '../helpers/results.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

/** Lines of `text` without the last empty one. */
function lines(text: string): string[] {
  return text.split('\n').slice(0, -1);
}

/** A single named document that does not exist: the one-line usage error, exit 2, nothing on stdout. */
function expectAloneMissing(run: Run, path: string): void {
  expect(run.code).toBe(2);
  expect(run.stdout).toBe('');
  expect(lines(run.stderr)).toEqual([`notarize: cannot read '${path}': no such file or directory`]);
}

describe('hash: like sha256sum, good lines on stdout, each bad input on stderr', () => {
  it('hash a missing b: both digests in input order, one line for the missing file, exit 2', async () => {
    const a = await bed.write('a.txt', 'a\n');
    const b = await bed.write('b.txt', 'b\n');
    const run = await bed.main(['hash', bed.path('a.txt'), bed.path('missing.txt'), bed.path('b.txt')]);
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stdout).toBe(`${a}  ${bed.path('a.txt')}\n${b}  ${bed.path('b.txt')}\n`);
    expect(lines(run.stderr)).toEqual([
      `notarize: ${bed.path('missing.txt')}: no such file or directory`,
      'notarize: 1 of 3 files could not be read',
    ]);
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('a FIFO, a character device and a directory without --recursive fail on their own, never hang', async () => {
    const a = await bed.write('a.txt', 'a\n');
    execFileSync('mkfifo', [bed.path('pipe')]);
    await mkdir(bed.path('dir'));
    // Had the FIFO been opened for reading, this run would wait for a writer forever.
    const run = await bed.main(['hash', bed.path('pipe'), bed.path('a.txt'), '/dev/null', bed.path('dir')]);
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stdout).toBe(`${a}  ${bed.path('a.txt')}\n`);
    expect(lines(run.stderr)).toEqual([
      `notarize: ${bed.path('pipe')}: not a regular file`,
      'notarize: /dev/null: not a regular file',
      `notarize: ${bed.path('dir')}: is a directory (add --recursive to process the files in it)`,
      'notarize: 3 of 4 files could not be read',
    ]);
  });

  it("one file named alone that is missing is reported as in a batch: its line, the run's, exit 2", async () => {
    const missing = bed.path('missing.txt');
    const run = await bed.main(['hash', missing]);
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stdout).toBe('');
    expect(lines(run.stderr)).toEqual([
      `notarize: ${missing}: no such file or directory`,
      'notarize: 1 of 1 file could not be read',
    ]);
    // --json: the array (empty), its JSON error line naming it in `file`, then the run's.
    const json = await bed.main(['hash', '--json', missing]);
    expect(json.code, describeRun(json)).toBe(2);
    expect(JSON.parse(json.stdout)).toEqual([]);
    expect(lines(json.stderr).map((line) => JSON.parse(line) as unknown)).toEqual([
      {
        error: {
          code: 'unreadable_file',
          exitCode: 2,
          message: `cannot read '${missing}': no such file or directory`,
          file: missing,
        },
      },
      { error: { code: 'batch_failed', exitCode: 2, message: '1 of 1 file could not be read' } },
    ]);
  });

  // Unreadable files are only found when opened for hashing (the stat before succeeds).
  // root reads any file whatever its mode, so as root the CLI runs as nobody through setpriv.
  const asRoot = process.getuid?.() === 0;
  const canDrop =
    asRoot &&
    (() => {
      try {
        execFileSync('setpriv', ['--version'], { stdio: 'ignore' });
        return true;
      } catch {
        return false;
      }
    })();
  it.skipIf(process.platform === 'win32' || (asRoot && !canDrop))(
    'a file without read permission (EACCES on open) is a failed item; the others are hashed',
    async () => {
      const a = await bed.write('a.txt', 'a\n');
      const b = await bed.write('b.txt', 'b\n');
      await bed.write('locked.txt', 'locked\n');
      await chmod(bed.path('locked.txt'), 0o000);
      // nobody must reach the files: the bed's directories are private (mkdtemp's 0700).
      await chmod(bed.root, 0o755);
      await chmod(bed.workDir, 0o755);
      // The checkout may sit below a private directory (CI's fresh clone): nobody runs a copy.
      const argv = [cliCopyForOtherUsers(bed.root), 'hash', 'a.txt', 'locked.txt', 'b.txt'];
      const env = { NOTARIZE_CONFIG_DIR: join(bed.workDir, '.store') };
      const run = asRoot
        ? await runProcess(
            'setpriv',
            ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, ...argv],
            env,
            { cwd: bed.workDir, noBaseUrlCheck: true },
          )
        : await runProcess(process.execPath, argv, env, { cwd: bed.workDir, noBaseUrlCheck: true });
      expect(run.code, describeRun(run)).toBe(2);
      expect(run.stdout).toBe(`${a}  a.txt\n${b}  b.txt\n`);
      expect(lines(run.stderr)).toEqual([
        'notarize: locked.txt: permission denied',
        'notarize: 1 of 3 files could not be read',
      ]);
      expect(run.stderr).not.toMatch(STACK_LINE);
    },
  );
});

describe('verify: a document that cannot be read is a failed result', () => {
  it('verifies the good ones, fails the missing one (json, table, annotation), exit 2', async () => {
    await bed.write('a.txt', 'verify a\n');
    await bed.write('b.txt', 'verify b\n');
    const registered = await bed.main(['register', bed.path('a.txt'), bed.path('b.txt'), '--json']);
    expect(registered.code, describeRun(registered)).toBe(0);
    const calls = bed.sandbox.calls.length;

    const args = ['verify', bed.path('a.txt'), bed.path('missing.txt'), bed.path('b.txt')];
    const json = await bed.main([...args, '--json'], { env: { GITHUB_ACTIONS: 'true' } });
    expect(json.code, describeRun(json)).toBe(2);
    const results = parseResults(json.stdout);
    expect(results.map((r) => [r.file, r.status])).toEqual([
      [bed.path('a.txt'), 'verified'],
      [bed.path('missing.txt'), 'failed'],
      [bed.path('b.txt'), 'verified'],
    ]);
    expect(results[1]).toEqual(missingFileResult(bed.path('missing.txt')));
    expect(json.stderr).toMatch(/^::error file=.*missing\.txt,title=notarize%3A failed::cannot read .*no such file/m);
    expect(jsonError(json.stderr)).toMatchObject({ exitCode: 2, message: '1 of 3 documents could not be checked' });

    const table = await bed.main(args);
    expect(table.code).toBe(2);
    expect(table.stdout).toMatch(
      /^failed +- +\S*missing\.txt +cannot read '\S*missing\.txt': no such file or directory$/m,
    );
    expect(table.stdout.match(/^verified /gm)).toHaveLength(2);
    expect(table.stderr).toContain('3 items: 2 verified, 1 failed');
    expect(bed.sandbox.calls.length).toBe(calls);
  });
});

describe('register: a local failure among sent items is exit 1; 2 only when nothing was sent', () => {
  it('registers the good ones and fails the missing one: exit 1, since something was sent', async () => {
    const a = await bed.write('a.txt', 'register a\n');
    const b = await bed.write('b.txt', 'register b\n');
    const run = await bed.main(['register', bed.path('a.txt'), bed.path('missing.txt'), bed.path('b.txt'), '--json'], {
      env: { GITHUB_ACTIONS: 'true' },
    });
    expect(run.code, describeRun(run)).toBe(1);
    const results = parseResults(run.stdout);
    expect(results.map((r) => [r.file, r.hash, r.status])).toEqual([
      [bed.path('a.txt'), a, 'registered'],
      [bed.path('missing.txt'), null, 'failed'],
      [bed.path('b.txt'), b, 'registered'],
    ]);
    expect(results[1]!.error).toEqual({
      code: 'unreadable_file',
      exitCode: 2,
      message: `cannot read '${bed.path('missing.txt')}': no such file or directory`,
    });
    expect(run.stderr).toMatch(/^::error file=.*missing\.txt,title=notarize%3A failed::cannot read /m);
    expect(jsonError(run.stderr)).toMatchObject({ code: 'batch_failed', exitCode: 1, message: '1 of 3 items failed' });
    expect(bed.requestedHashes().sort()).toEqual([a, b].sort());
  });

  it('ndjson and a --files-from list: the same, one line per item', async () => {
    const a = await bed.write('a.txt', 'ndjson a\n');
    await writeFile(bed.path('list.txt'), `${bed.path('a.txt')}\r\n${bed.path('gone.txt')}\r\n${bed.path('dir')}\n`);
    await mkdir(bed.path('dir'));
    const run = await bed.main(['register', '--files-from', bed.path('list.txt'), '--output', 'ndjson']);
    expect(run.code, describeRun(run)).toBe(1);
    const results = parseNdjson(run.stdout);
    expect(results.map((r) => [r.file, r.status, r.error?.code]).sort()).toEqual(
      [
        [bed.path('a.txt'), 'registered', undefined],
        [bed.path('dir'), 'failed', 'is_directory'],
        [bed.path('gone.txt'), 'failed', 'unreadable_file'],
      ].sort(),
    );
    expect(bed.requestedHashes()).toEqual([a]);
  });

  it('every item missing: exit 2, and the sandbox saw no call at all', async () => {
    const run = await bed.main(['register', bed.path('one.txt'), bed.path('two.txt'), '--json']);
    expect(run.code, describeRun(run)).toBe(2);
    expect(parseResults(run.stdout).map((r) => [r.status, r.error?.exitCode])).toEqual([
      ['failed', 2],
      ['failed', 2],
    ]);
    expect(jsonError(run.stderr)).toMatchObject({ code: 'batch_failed', exitCode: 2 });
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('a missing file among already-registered ones: nothing sent, so still exit 2', async () => {
    await bed.write('a.txt', 'already a\n');
    expect((await bed.main(['register', bed.path('a.txt')])).code).toBe(0);
    const calls = bed.sandbox.calls.length;
    const run = await bed.main(['register', bed.path('a.txt'), bed.path('missing.txt')]);
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stdout).toMatch(/^already-registered /m);
    expect(run.stdout).toMatch(/^failed +- +\S*missing\.txt +cannot read/m);
    expect(bed.sandbox.calls.length).toBe(calls);
  });

  it('one missing file named alone is a one-line usage error, exit 2, nothing sent', async () => {
    const run = await bed.main(['register', bed.path('missing.pdf')]);
    expectAloneMissing(run, bed.path('missing.pdf'));
    expect(bed.sandbox.calls).toEqual([]);
  });
});

describe('--files-from: bounded, never a crash', () => {
  it('a line too long for a path, and a list of NULs (e.g. /dev/zero), are failed items', async () => {
    const a = await bed.write('a.txt', 'a\n');
    await writeFile(bed.path('list.txt'), `${bed.path('a.txt')}\n${'x'.repeat(5000)}\n${bed.path('a.txt')}\n`);
    const long = await bed.main(['hash', '--files-from', bed.path('list.txt')]);
    expect(long.code, describeRun(long)).toBe(2);
    expect(long.stdout).toBe(`${a}  ${bed.path('a.txt')}\n${a}  ${bed.path('a.txt')}\n`);
    expect(long.stderr).toMatch(/^notarize: x{60}\.\.\.: a line of 5000 bytes in the --files-from list: too long/m);

    // Megabytes with no separator (or, with -0, only empty names): not a list, and not read to its end.
    await writeFile(bed.path('zeros'), Buffer.alloc(3 * 1024 * 1024));
    for (const extra of [[], ['-0']]) {
      const zeros = await bed.main(['hash', '--files-from', bed.path('zeros'), ...extra]);
      expect(zeros.code, describeRun(zeros)).toBe(2);
      expect(zeros.stdout).toBe('');
      // With what to do, but for -0, which is what it says to add.
      expect(zeros.stderr).toMatch(
        extra.length === 0
          ? /: no path in \d+ bytes: not a list of paths; the rest is not read \(for a NUL-separated list \(find -print0\), add -0\)$/m
          : /: no path in \d+ bytes: not a list of paths; the rest is not read$/m,
      );
    }
  });

  it("an empty list is 'no input given'; '-' twice in a list fails the second", async () => {
    await writeFile(bed.path('empty.txt'), '\n\n');
    const empty = await bed.main(['hash', '--files-from', bed.path('empty.txt')]);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/no input given: the --files-from list '.*empty\.txt' holds no path/);
    // Read from standard input: said so, and the hint does not send the user to --files-from they used.
    const fromStdin = await bed.main(['register', '--aggregate', '--files-from', '-'], { input: '\n\n' });
    expect(fromStdin.code).toBe(2);
    expect(fromStdin.stderr).toBe(
      'notarize: no input given: the --files-from list on standard input holds no path (give the list one path per line, or name files)\n',
    );

    const a = await bed.write('a.txt', 'a\n');
    await writeFile(bed.path('list.txt'), `-\n${bed.path('a.txt')}\n-\n`);
    const twice = await bed.main(['hash', '--files-from', bed.path('list.txt')], { input: 'from stdin\n' });
    expect(twice.code, describeRun(twice)).toBe(2);
    expect(lines(twice.stdout)).toEqual([`${sha256('from stdin\n')}  -`, `${a}  ${bed.path('a.txt')}`]);
    expect(twice.stderr).toMatch(/^notarize: -: '-' \(standard input\) can be named only once$/m);
  });
});

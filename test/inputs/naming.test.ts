/**
 * How documents are named: several paths, directories with --recursive and
 * --include/--exclude globs, symlinks and special files met while walking
 * (reported, never followed), --files-from a file or '-' (with -0), the
 * usage errors (exit 2) raised before anything is sent, and named paths that
 * cannot be processed, which fail on their own (more in test/batch/failed-items.test.ts).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { escapedName } from '../../src/core/inputs.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { BIN, describeRun, REPO_ROOT, runProcess } from '../helpers/cli.js';
import { jsonError, missingFileResult, parseResults } from '../helpers/results.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

describe('usage errors: nothing is hashed or sent', () => {
  it('a directory without --recursive named alone exits 2 and sends nothing; in a batch it is a failed item', async () => {
    await bed.write('dist/app.tar.gz', 'app\n');
    const single = await bed.write('single.txt', 'single\n');
    const alone = await bed.main(['register', bed.path('dist')]);
    expect(alone.code, describeRun(alone)).toBe(2);
    expect(alone.stdout).toBe('');
    expect(alone.stderr).toMatch(
      new RegExp(
        `^notarize: '${bed.path('dist')}' is a directory \\(add --recursive to process the files in it\\)$`,
        'm',
      ),
    );
    expect(bed.sandbox.calls).toEqual([]);

    const json = await bed.main(['register', bed.path('dist'), '--json']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stderr)).toEqual({
      error: {
        code: 'is_directory',
        exitCode: 2,
        message: `'${bed.path('dist')}' is a directory`,
        hint: 'add --recursive to process the files in it',
      },
    });
    expect(bed.sandbox.calls).toEqual([]);

    // Among other documents it fails on its own; the others are sent, so the exit is 1, not 2.
    const batch = await bed.main(['register', bed.path('single.txt'), bed.path('dist'), '--json']);
    expect(batch.code, describeRun(batch)).toBe(1);
    expect(parseResults(batch.stdout).map((r) => [r.file, r.status, r.error?.code])).toEqual([
      [bed.path('single.txt'), 'registered', undefined],
      [bed.path('dist'), 'failed', 'is_directory'],
    ]);
    expect(bed.requestedHashes()).toEqual([single]);
  });

  it('a missing file alone exits 2 and sends nothing; among existing ones it fails on its own', async () => {
    const present = await bed.write('present.txt', 'present\n');
    const alone = await bed.main(['register', bed.path('missing.txt'), '--json']);
    expect(alone.code, describeRun(alone)).toBe(2);
    expect(alone.stdout).toBe('');
    expect(JSON.parse(alone.stderr)).toMatchObject({
      error: {
        code: 'unreadable_file',
        exitCode: 2,
        message: `cannot read '${bed.path('missing.txt')}': no such file or directory`,
      },
    });
    expect(bed.sandbox.calls).toEqual([]);
    expect(() => bed.onlyServiceDir()).toThrow();

    const run = await bed.main(['register', bed.path('present.txt'), bed.path('missing.txt'), '--json']);
    expect(run.code, describeRun(run)).toBe(1);
    expect(parseResults(run.stdout)).toEqual([
      expect.objectContaining({ file: bed.path('present.txt'), hash: present, status: 'registered' }),
      missingFileResult(bed.path('missing.txt')),
    ]);
    expect(bed.requestedHashes()).toEqual([present]);
  });

  it('-0 without --files-from, and no input at all, are usage errors', async () => {
    await bed.write('a.txt', 'a\n');
    const nul = await bed.main(['register', bed.path('a.txt'), '-0']);
    expect(nul.code).toBe(2);
    expect(nul.stderr).toMatch(/-0 goes with --files-from/);
    const none = await bed.main(['register']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/no input given/);
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('--include/--exclude without --recursive are refused, never ignored: nothing hashed, nothing sent', async () => {
    await bed.write('t5/a.log', 'a\n');
    await bed.write('t5/b.txt', 'b\n');
    const hint =
      '(add -r to walk folders, or name only the documents wanted, on the command line or in the --files-from list)';
    const listed = `${bed.path('t5/a.log')}\n${bed.path('t5/b.txt')}\n`;
    const register = await bed.main(['register', '--files-from', '-', '--exclude', '*.log'], { input: listed });
    expect(register.code, describeRun(register)).toBe(2);
    expect(register.stdout).toBe('');
    expect(register.stderr).toBe(
      `notarize: --exclude goes with --recursive: it filters only the files found in folders walked ${hint}\n`,
    );
    for (const args of [
      ['hash', bed.path('t5/b.txt'), '--exclude', 'b.txt'],
      ['hash', bed.path('t5/b.txt'), '--include', 'nothing'],
      ['verify', bed.path('t5/b.txt'), '--include', 'nothing', '--exclude', 'b.txt'],
    ]) {
      const run = await bed.main(args);
      expect(run.code, describeRun(run)).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^notarize: --(include|exclude)( and --exclude)? go(es)? with --recursive: /);
    }
    // With --hash they choose nothing either.
    const digest = await bed.main(['register', '--hash', 'ab'.repeat(32), '-d', 'x', '--exclude', '*.log']);
    expect(digest.code, describeRun(digest)).toBe(2);
    expect(digest.stderr).toMatch(
      /^notarize: -r, --include, --exclude and -0 choose documents: they do nothing with --hash/,
    );
    expect(bed.sandbox.calls).toEqual([]);
  });
});

describe('--recursive', () => {
  it('walks directories in name order; --include/--exclude globs without a slash match the name', async () => {
    const keep1 = await bed.write('dist/app.tar.gz', 'app tarball\n');
    const keep2 = await bed.write('dist/.hidden.tar.gz', 'hidden tarball\n');
    const keep3 = await bed.write('dist/deep/er/lib.tar.gz', 'deep tarball\n');
    await bed.write('dist/app.zip', 'zip\n');
    await bed.write('dist/notes.txt', 'notes\n');
    await bed.write('dist/deep/er/debug.tar.gz', 'excluded by name\n');
    const args = ['-r', bed.path('dist'), '--include', '*.tar.gz', '--include', '*.none', '--exclude', 'debug*'];
    const run = await bed.main(['register', ...args, '--json']);
    expect(run.code, describeRun(run)).toBe(0);
    const results = parseResults(run.stdout);
    expect(results.map((r) => [r.file, r.hash, r.status])).toEqual([
      [bed.path('dist/.hidden.tar.gz'), keep2, 'registered'],
      [bed.path('dist/app.tar.gz'), keep1, 'registered'],
      [bed.path('dist/deep/er/lib.tar.gz'), keep3, 'registered'],
    ]);
    expect(bed.requestedHashes().sort()).toEqual([keep1, keep2, keep3].sort());

    // `hash` takes the same inputs the same way.
    const hash = await bed.main(['hash', ...args]);
    expect(hash.code, describeRun(hash)).toBe(0);
    expect(hash.stdout).toBe(
      `${keep2}  ${bed.path('dist/.hidden.tar.gz')}\n${keep1}  ${bed.path('dist/app.tar.gz')}\n` +
        `${keep3}  ${bed.path('dist/deep/er/lib.tar.gz')}\n`,
    );
  });

  it('globs with a slash match the path relative to the walked directory', async () => {
    const b = bed;
    const top = await b.write('dist/app.tar.gz', 'top\n');
    const deep = await b.write('dist/deep/lib.tar.gz', 'deep\n');
    const skipped = await b.write('dist/skip/other.tar.gz', 'in an excluded directory\n');
    // --include 'deep/*': only the file under deep/; --exclude 'skip/**': everything but skip/.
    const include = await b.main(['hash', '-r', bed.path('dist'), '--include', 'deep/*']);
    const exclude = await b.main(['hash', '-r', bed.path('dist'), '--exclude', 'skip/**']);
    expect(include.code, describeRun(include)).toBe(0);
    expect(exclude.code, describeRun(exclude)).toBe(0);
    expect(include.stdout).toBe(`${deep}  ${b.path('dist/deep/lib.tar.gz')}\n`);
    expect(exclude.stdout).toBe(`${top}  ${b.path('dist/app.tar.gz')}\n${deep}  ${b.path('dist/deep/lib.tar.gz')}\n`);
    expect(exclude.stdout).not.toContain(skipped);
  });

  it('reports a symlink and a FIFO inside a walked directory as skipped, and follows neither', async () => {
    const b = bed;
    const regular = await b.write('dir/regular.txt', 'regular\n');
    const outside = await b.write('elsewhere/target.txt', 'symlink target, outside the walked tree\n');
    const inLinkedDir = await b.write('elsewhere/sub/inner.txt', 'inside a linked directory\n');
    await symlink('../elsewhere/target.txt', join(b.workDir, 'dir/link-to-file'));
    await symlink('../elsewhere/sub', join(b.workDir, 'dir/link-to-dir'));
    execFileSync('mkfifo', [join(b.workDir, 'dir/pipe')]);

    // Spawned: a FIFO that were opened would block the run, and a process can be killed at the timeout.
    const run = await b.run(['register', '-r', 'dir', '--json'], { timeoutMs: 20_000 });
    expect(run.code, describeRun(run)).toBe(0);
    expect(parseResults(run.stdout)).toEqual([
      expect.objectContaining({ file: 'dir/regular.txt', hash: regular, status: 'registered' }),
      {
        schemaVersion: 1,
        file: 'dir/link-to-dir',
        hash: null,
        status: 'skipped',
        reason: 'symbolic link (not followed)',
      },
      {
        schemaVersion: 1,
        file: 'dir/link-to-file',
        hash: null,
        status: 'skipped',
        reason: 'symbolic link (not followed)',
      },
      { schemaVersion: 1, file: 'dir/pipe', hash: null, status: 'skipped', reason: 'not a regular file' },
    ]);
    expect(run.stderr).toContain('warning: skipped dir/link-to-file: symbolic link (not followed)');
    expect(run.stderr).toContain('warning: skipped dir/link-to-dir: symbolic link (not followed)');
    expect(run.stderr).toContain('warning: skipped dir/pipe: not a regular file');
    expect(run.stderr).toContain('4 items: 1 registered, 3 skipped');
    expect(b.requestedHashes()).toEqual([regular]);
    expect(b.requestedHashes()).not.toContain(outside);
    expect(b.requestedHashes()).not.toContain(inLinkedDir);

    // The table says the same, and a skipped input is not a failure (exit 0).
    const table = await b.run(['register', '-r', 'dir']);
    expect(table.code, describeRun(table)).toBe(0);
    expect(table.stdout).toMatch(/^skipped +- +dir\/pipe +not a regular file$/m);
    expect(table.stdout).toMatch(/^already-registered +[0-9a-f]{64} +dir\/regular.txt$/m);
  });

  it('follows a symlink named directly on the command line (documented)', async () => {
    const target = await bed.write('real.txt', 'named through a link\n');
    await symlink('real.txt', join(bed.workDir, 'named-link.txt'));
    const run = await bed.main(['hash', bed.path('named-link.txt')]);
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stdout).toBe(`${target}  ${bed.path('named-link.txt')}\n`);
  });
});

describe('--files-from', () => {
  it('reads paths from a file, one per line, blank lines ignored', async () => {
    const one = await bed.write('docs/one.txt', 'one\n');
    const two = await bed.write('docs/two.txt', 'two\n');
    await bed.write('docs/not-listed.txt', 'not listed\n');
    await writeFile(join(bed.workDir, 'list.txt'), `${bed.path('docs/one.txt')}\n\n${bed.path('docs/two.txt')}\n`);
    const run = await bed.main(['register', '--files-from', bed.path('list.txt'), '--json']);
    expect(run.code, describeRun(run)).toBe(0);
    expect(parseResults(run.stdout).map((r) => [r.file, r.hash, r.status])).toEqual([
      [bed.path('docs/one.txt'), one, 'registered'],
      [bed.path('docs/two.txt'), two, 'registered'],
    ]);
    expect(bed.calls('request')).toBe(2);
  });

  it('a line holding a NUL byte (a NUL-separated list read without -0) fails alone, saying so; nothing sent', async () => {
    await bed.write('nul/a.txt', 'a\n');
    await writeFile(join(bed.workDir, 'nul-list.txt'), `${bed.path('nul/a.txt')}\0${bed.path('nul/b.txt')}\n`);
    const run = await bed.main(['register', '--files-from', bed.path('nul-list.txt'), '--json']);
    expect(run.code, describeRun(run)).toBe(2);
    expect(parseResults(run.stdout)).toMatchObject([
      { status: 'failed', error: { message: expect.stringMatching(/the name holds a NUL byte, .*needs -0\)$/) } },
    ]);
    expect(run.stderr).not.toMatch(/ERR_INVALID_ARG_VALUE|must be a string/);
    expect(bed.calls('request')).toBe(0);
  });

  it("reads NUL-separated names from standard input with '-' and -0 (spaces and newlines in names)", async () => {
    const names = ['with space.txt', 'new\nline.txt', 'sub dir/plain.txt'];
    const hashes: string[] = [];
    for (const [i, name] of names.entries()) hashes.push(await bed.write(name, `nul separated ${i}\n`));
    const paths = names.map((name) => bed.path(name));
    const input = `${paths.join('\0')}\0`;

    const run = await bed.main(['register', '--files-from', '-', '-0', '--json'], { input });
    expect(run.code, describeRun(run)).toBe(0);
    expect(parseResults(run.stdout).map((r) => [r.file, r.hash, r.status])).toEqual(
      paths.map((path, i) => [path, hashes[i], 'registered']),
    );
    expect(bed.requestedHashes().sort()).toEqual([...hashes].sort());

    const hash = await bed.main(['hash', '--files-from', '-', '-0', '--json'], { input });
    expect(hash.code, describeRun(hash)).toBe(0);
    expect(JSON.parse(hash.stdout)).toEqual(paths.map((file, i) => ({ file, hash: hashes[i] })));
  });

  it('a missing file in the list fails on its own; a list that cannot be read is a usage error', async () => {
    const here = await bed.write('here.txt', 'here\n');
    await writeFile(join(bed.workDir, 'list.txt'), `${bed.path('here.txt')}\n${bed.path('gone.txt')}\n`);
    const run = await bed.main(['register', '--files-from', bed.path('list.txt')]);
    expect(run.code, describeRun(run)).toBe(1);
    const gone = bed.path('gone.txt');
    expect(run.stdout).toMatch(
      new RegExp(`^failed +- +${gone} +cannot read '${gone}': no such file or directory$`, 'm'),
    );
    expect(bed.requestedHashes()).toEqual([here]);
    const calls = bed.sandbox.calls.length;
    const unreadableList = await bed.main(['register', '--files-from', bed.path('no-such-list.txt')]);
    expect(unreadableList.code).toBe(2);
    expect(unreadableList.stderr).toContain(
      `cannot read the --files-from list from '${bed.path('no-such-list.txt')}': no such file`,
    );
    expect(bed.sandbox.calls.length).toBe(calls);
  });
});

/** The JSON error lines of a --json run's stderr, in order. */
function jsonErrors(stderr: string): { code: string; message: string; hint?: string; file?: string }[] {
  return stderr
    .split('\n')
    .filter(Boolean)
    .map(
      (line) => (JSON.parse(line) as { error: { code: string; message: string; hint?: string; file?: string } }).error,
    );
}

describe('names that are not UTF-8: failed, never read as another file', () => {
  it("is said where README lists why an input fails: register's and hash's sections", () => {
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
    const section = (heading: string) => {
      const from = readme.indexOf(`\n### \`notarize ${heading}`);
      return readme.slice(from, readme.indexOf('\n### ', from + 1));
    };
    for (const command of ['register', 'hash']) {
      expect(section(command), command).toContain('not UTF-8');
      expect(section(command), command).toContain('(#names-that-are-not-utf-8)');
    }
    expect(section('register')).toContain('\n#### Names that are not UTF-8\n');
  });

  /** dir/a<0xff> (not UTF-8), beside dir/a\uFFFD (UTF-8, what a lossy decoding of the first gives) and dir/b. */
  async function threeFiles(dir: string) {
    await mkdir(bed.path(dir), { recursive: true });
    const bad = Buffer.concat([Buffer.from(bed.path(`${dir}/a`)), Buffer.of(0xff)]);
    await writeFile(bad, 'never registered\n');
    const real = await bed.write(`${dir}/a\uFFFD`, 'a real U+FFFD in its name\n');
    const b = await bed.write(`${dir}/b`, 'plain b\n');
    return { real, b, shown: bed.path(`${dir}/a\uFFFD`) };
  }

  it('in a folder walked: that file fails (name_not_utf8), the one really named with U+FFFD is hashed once', async () => {
    const { real, b, shown } = await threeFiles('walked');
    const run = await bed.main(['hash', '-r', bed.path('walked'), '--json']);
    expect(run.code, describeRun(run)).toBe(2);
    expect(JSON.parse(run.stdout)).toEqual([
      { file: shown, hash: real },
      { file: bed.path('walked/b'), hash: b },
    ]);
    // Its bytes that are not UTF-8 are shown as \xNN: not mistaken for the other a-file. (--json: a JSON error line.)
    expect(jsonErrors(run.stderr)[0]!.message).toContain(
      `'${bed.path('walked/a')}\\xff': its name is not valid UTF-8 (found in a folder walked), so notarize cannot open it by name`,
    );
    expect(jsonErrors(run.stderr)[0]!.hint).toBe('rename it to a UTF-8 name, or leave it out (--exclude)');
    // --exclude leaves it out as any other file; --include too, when it does not match.
    const excluded = await bed.main(['hash', '-r', bed.path('walked'), '--exclude', 'a*', '--json']);
    expect(excluded.code, describeRun(excluded)).toBe(0);
    expect(JSON.parse(excluded.stdout)).toEqual([{ file: bed.path('walked/b'), hash: b }]);
    const included = await bed.main(['hash', '-r', bed.path('walked'), '--include', 'b', '--json']);
    expect(included.code, describeRun(included)).toBe(0);
    expect(JSON.parse(included.stdout)).toEqual([{ file: bed.path('walked/b'), hash: b }]);
    // A link so named is passed over as any link is (not followed), shown with \xNN.
    await symlink('b', Buffer.concat([Buffer.from(bed.path('walked/l')), Buffer.of(0xfe)]));
    const linked = await bed.main(['hash', '-r', bed.path('walked'), '--exclude', 'a*', '--json']);
    expect(linked.code, describeRun(linked)).toBe(0);
    expect(linked.stderr).toContain(`${bed.path('walked/l')}\\xfe: symbolic link (not followed)`);
  });

  it('in a --files-from list: decoded strictly, so a real U+FFFD is taken and bytes that are not UTF-8 fail', async () => {
    const { real, shown } = await threeFiles('listed');
    const list = Buffer.concat([
      Buffer.from(bed.path('listed/a')),
      Buffer.of(0xff, 0),
      Buffer.from(shown),
      Buffer.of(0),
    ]);
    const run = await bed.main(['hash', '--files-from', '-', '-0', '--json'], { input: list });
    expect(run.code, describeRun(run)).toBe(2);
    expect(JSON.parse(run.stdout)).toEqual([{ file: shown, hash: real }]);
    expect(jsonErrors(run.stderr)[0]!.message).toContain(
      `'${bed.path('listed/a')}\\xff': its name is not valid UTF-8 (in the --files-from list)`,
    );
    // --exclude does nothing to a list (it filters walks): the list is where to leave it out.
    expect(jsonErrors(run.stderr)[0]!.hint).toBe('rename it to a UTF-8 name, or leave it out of the --files-from list');
  });

  it('a document named with U+FFFD fails on its own; an option value or another argument with one is refused', async () => {
    const { shown } = await threeFiles('named');
    const alone = await bed.main(['register', shown, '--json']);
    expect(alone.code, describeRun(alone)).toBe(2);
    expect(jsonError(alone.stderr)).toMatchObject({ code: 'name_not_utf8' });
    expect(alone.stderr).toContain('U+FFFD, which is what bytes of a command line that are not UTF-8 become');
    expect(bed.sandbox.calls).toEqual([]);
    // Beside a readable one: that one goes on, as beside any document that cannot be read.
    const beside = await bed.main(['register', bed.path('named/b'), shown, '--json']);
    expect(beside.code, describeRun(beside)).toBe(1);
    expect(parseResults(beside.stdout).map((r) => r.status)).toEqual(['registered', 'failed']);

    const list = bed.path('list\uFFFD.txt');
    await writeFile(list, `${bed.path('named/b')}\n`);
    const calls = bed.sandbox.calls.length;
    for (const [args, given] of [
      [['hash', '--files-from', list, '--json'], `--files-from ${list}`],
      [['register', bed.path('named/b'), '--receipt-dir', bed.path('r\uFFFD'), '--json'], '--receipt-dir'],
      [['verify', bed.path('named/b'), `--receipt=${bed.path('r\uFFFD.json')}`, '--json'], '--receipt'],
      [['verify', bed.path('named/b'), '--receipt', `-dr\uFFFD.json`, '--json'], '--receipt -dr'],
      [['show', shown, '--json'], shown],
    ] as const) {
      const run = await bed.main([...args]);
      expect(run.code, describeRun(run)).toBe(2);
      expect(jsonError(run.stderr)).toMatchObject({ code: 'argument_not_utf8' });
      expect(run.stderr).toContain(`'${given}`);
      expect(run.stdout).toBe('');
    }
    expect(bed.sandbox.calls.length).toBe(calls);
    // A base URL may carry a password: its value is never echoed.
    for (const args of [
      ['--base-url', 'http://user:s3cret@127.0.0.1:1/\uFFFD', 'list'],
      ['config', 'set', 'baseUrl', 'http://user:s3cret@127.0.0.1:1/\uFFFD'],
    ]) {
      const run = await bed.main(args);
      expect(run.code, describeRun(run)).toBe(2);
      expect(run.stderr).toContain('holds U+FFFD');
      expect(run.stderr).not.toContain('s3cret');
    }
  });

  it('an option given an empty value (an unset variable in a script) is refused, nothing sent', async () => {
    const doc = bed.path('named/b');
    for (const args of [
      ['register', doc, '--receipt-dir', ''],
      ['register', '--aggregate', doc, '--receipt-dir='],
      ['verify', doc, '--receipt-dir', ''],
      ['register', '--files-from', ''],
      ['hash', doc, '--exclude', ''],
      ['--base-url', '', 'register', doc],
    ]) {
      const run = await bed.main([...args, '--json']);
      expect(run.code, describeRun(run)).toBe(2);
      expect(jsonError(run.stderr)).toMatchObject({
        code: 'empty_option',
        message: expect.stringMatching(/^--[a-z-]+ is empty$/),
      });
    }
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('bytes that are not UTF-8 in NOTARIZE_CONFIG_DIR, through a real shell: refused, no folder made, by name only', async () => {
    const run = await runProcess(
      'bash',
      [
        '-c',
        `NOTARIZE_CONFIG_DIR="$DIR"/store$'\\xff' NOTARIZE_BASE_URL=http://u:s3cret@127.0.0.1:1/$'\\xfe' exec "$NODE" "$BIN" list`,
      ],
      { ...bed.env(), NODE: process.execPath, BIN, DIR: bed.path('env-store') },
      { cwd: bed.workDir },
    );
    bed.record(run);
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).toMatch(
      /^notarize: the variable NOTARIZE_(BASE_URL|CONFIG_DIR) holds U\+FFFD, which is what bytes of an environment that are not UTF-8 become/m,
    );
    expect(run.stderr).not.toContain('s3cret');
    expect(existsSync(bed.path('env-store'))).toBe(false);
  });

  it('a working directory removed before the run: absolute paths work, --receipt-dir too; a relative one is exit 2', async () => {
    await bed.write('abs/doc.txt', 'named in full\n');
    const doc = bed.path('abs/doc.txt');
    const receipts = bed.path('abs-receipts');
    await mkdir(receipts);
    // As a CI step may find it: its folder removed by an earlier step, the shell still in it.
    const inRemovedFolder = (args: string) =>
      runProcess(
        'bash',
        ['-c', `mkdir "$DIR" && cd "$DIR" && rmdir "$DIR" && exec "$NODE" "$BIN" ${args}`],
        { ...bed.env(), NODE: process.execPath, BIN, DIR: bed.path(`gone-${Math.random().toString(36).slice(2)}`) },
        { cwd: bed.workDir },
      );
    const registered = await inRemovedFolder(`register "${doc}" --receipt-dir "${receipts}" --quiet`);
    bed.record(registered);
    expect(registered.code, describeRun(registered)).toBe(0);
    expect(existsSync(join(receipts, 'doc.txt.notarization.json'))).toBe(true);
    const verified = await inRemovedFolder(`verify "${doc}" --receipt-dir "${receipts}" --quiet`);
    expect(verified.code, describeRun(verified)).toBe(0);
    const calls = bed.sandbox.calls.length;
    const relative = await inRemovedFolder(`register "${doc}" --receipt-dir receipts`);
    expect(relative.code, describeRun(relative)).toBe(2);
    expect(relative.stderr).toMatch(
      /^notarize: the current directory no longer exists .*\(`cd` into an existing folder/m,
    );
    expect(relative.stderr).not.toContain('unexpected error');
    expect(bed.sandbox.calls.length).toBe(calls);
  });

  it('bytes that are not UTF-8 in a --files-from value, through a real shell: refused before anything runs', async () => {
    await threeFiles('shell');
    const run = await runProcess(
      'bash',
      ['-c', `exec "$NODE" "$BIN" hash --files-from "$DIR"/a$'\\xff'`],
      { ...bed.env(), NODE: process.execPath, BIN, DIR: bed.path('shell') },
      { cwd: bed.workDir },
    );
    bed.record(run);
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).toContain(`notarize: '--files-from ${bed.path('shell')}/a\uFFFD' holds U+FFFD`);
    expect(run.stdout).toBe('');
  });

  it('escapedName writes each byte outside a UTF-8 character as \\xNN, and keeps the characters', () => {
    const bytes = (...parts: (string | number[])[]) =>
      Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : Buffer.from(part))));
    expect(escapedName(bytes('caf', [0xe9], '.txt'))).toBe('caf\\xe9.txt');
    expect(escapedName(bytes('é', [0xc3], 'x', [0xf0, 0x9f, 0x98], '😀'))).toBe('é\\xc3x\\xf0\\x9f\\x98😀');
    expect(escapedName(bytes([0xed, 0xa0, 0x80], '\uFFFD'))).toBe('\\xed\\xa0\\x80\uFFFD');
    expect(escapedName(bytes([0xc0, 0xaf]))).toBe('\\xc0\\xaf');
  });
});

describe('several inputs of one directory level', () => {
  it('an empty directory with --recursive is exit 2, nothing sent: a build that made nothing must not pass', async () => {
    await mkdir(join(bed.workDir, 'empty'));
    const run = await bed.main(['register', '-r', bed.path('empty'), '--json']);
    expect(run.code, describeRun(run)).toBe(2);
    expect(jsonError(run.stderr)).toMatchObject({
      code: 'no_documents',
      message: 'no documents: the folders walked hold no file',
    });
    expect(run.stdout).toBe('');
    expect(bed.sandbox.calls.filter((c) => c.route !== 'login')).toEqual([]);
    const aggregate = await bed.main(['register', '--aggregate', '-r', bed.path('empty')]);
    expect(aggregate.code, describeRun(aggregate)).toBe(2);
    await bed.write('some/a.txt', 'a\n');
    const noMatch = await bed.main(['register', '-r', bed.path('some'), '--include', '*.zip']);
    expect(noMatch.code, describeRun(noMatch)).toBe(2);
    expect(noMatch.stderr).toContain('no file that --include and --exclude let through');
    expect(bed.sandbox.calls.filter((c) => c.route !== 'login')).toEqual([]);
  });
});

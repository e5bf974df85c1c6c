/**
 * What the user named becoming the documents to process
 * (src/core/inputs.ts), on real directories: usage errors up front, items
 * that fail on their own, walking, filters and --files-from lists. (The
 * splitting of a list into names is in test/unit/core/list.test.ts.)
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createServer } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  expandInputs,
  itemName,
  MAX_LIST_GAP_BYTES,
  MAX_LIST_PATH_BYTES,
  type InputItem,
  type InputOptions,
  type SkippedPath,
} from '../../src/core/inputs.js';
import { InputFileError, UsageError } from '../../src/errors.js';
import { useTempDirs } from '../helpers/temp-dirs.js';
import { rejectionOf } from '../helpers/catch.js';

const tempDir = useTempDirs('notarize-inputs-');
const posix = process.platform !== 'win32';
const noStdin = () => Readable.from([]);

/** A directory holding `files` (relative path -> content), made for the test. */
function tree(files: Record<string, string>): string {
  const root = tempDir();
  for (const [path, content] of Object.entries(files)) {
    const file = join(root, path);
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, content);
  }
  return root;
}

/** A missing path, a directory, a file and (on POSIX) a FIFO, in a new directory `root`. */
function oddPaths(): { root: string; paths: string[] } {
  const root = tree({ 'a.txt': 'a' });
  const paths = [join(root, 'missing'), root, join(root, 'a.txt')];
  if (posix) {
    execFileSync('mkfifo', [join(root, 'fifo')]);
    paths.push(join(root, 'fifo'));
  }
  return { root, paths };
}

async function expanded(paths: string[], options: InputOptions = {}, stdin: Readable = noStdin()) {
  const skipped: SkippedPath[] = [];
  const expansion = await expandInputs(paths, options, stdin, (s) => skipped.push(s));
  const items: InputItem[] = [];
  for await (const item of expansion.items) items.push(item);
  return { ...expansion, items, skipped };
}

/** The item as a short comparable value: a file's relative path (or path), '-', or the failure's code and path. */
function summary(item: InputItem): string {
  if (item.kind === 'file') return item.relative ?? item.path;
  if (item.kind === 'stdin') return '-';
  return `${item.error.code} ${item.path}`;
}

describe('expandInputs: the arguments as a whole', () => {
  it.each<[string, string[], InputOptions, string]>([
    ['nothing named', [], {}, 'no input given'],
    ["'-' twice", ['-', '-'], {}, "'-' (standard input) can be named only once"],
    ["'-' as a document and as the list", ['-'], { filesFrom: '-' }, "'-' cannot be both a document and --files-from"],
    ['-0 without a list', ['a'], { nul: true }, '-0 goes with --files-from'],
    [
      '--exclude without --recursive',
      [],
      { filesFrom: '-', exclude: ['*.log'] },
      '--exclude goes with --recursive: it filters only the files found in folders walked',
    ],
    [
      '--include and --exclude without --recursive',
      ['a'],
      { include: ['a'], exclude: ['b'] },
      '--include and --exclude go with --recursive: they filter only the files found in folders walked',
    ],
    // .gitignore's folder and anchored forms match no file here: left to run, they would exclude nothing.
    [
      "an --exclude glob naming a folder ('node_modules/')",
      ['a'],
      { recursive: true, exclude: ['node_modules/'] },
      "--exclude 'node_modules/' names a folder, and globs match files",
    ],
    [
      "an --include glob starting with '/'",
      ['a'],
      { recursive: true, include: ['/a.txt'] },
      "--include '/a.txt' starts with '/', and globs match paths below the folder walked",
    ],
  ])('%s is a usage error before anything runs', async (_, paths, options, message) => {
    const error = await rejectionOf(expandInputs(paths, options, noStdin()), UsageError);
    expect(error.message).toBe(message);
  });

  it("a folder glob's hint names a glob that works, whatever its slashes", async () => {
    for (const [glob, hint] of [
      ['dist/', "write 'dist/**' for the files in it (or '**/dist/**' at any depth)"],
      ['/dist/', "write 'dist/**' for the files in it (or '**/dist/**' at any depth)"],
      ['**/cache/', "write '**/cache/**' for the files in it"],
    ]) {
      const error = await rejectionOf(
        expandInputs(['a'], { recursive: true, exclude: [glob!] }, noStdin()),
        UsageError,
      );
      expect(error.hint, glob).toBe(hint);
    }
  });

  it('a --files-from list that cannot be opened is a usage error up front', async () => {
    const dir = tempDir();
    for (const [source, reason] of [
      [join(dir, 'missing.txt'), 'no such file or directory'],
      [dir, 'is a directory'],
    ] as const) {
      const error = await rejectionOf(expandInputs([], { filesFrom: source }, noStdin()), UsageError);
      expect(error.message).toBe(`cannot read the --files-from list from '${source}': ${reason}`);
    }
  });

  it('an empty --files-from list, with nothing else named, is "no input given" when read', async () => {
    const list = join(tree({ 'list.txt': '\n\n' }), 'list.txt');
    await expect(expanded([], { filesFrom: list })).rejects.toThrow(
      `no input given: the --files-from list '${list}' holds no path`,
    );
    // With a document named, an empty list adds nothing.
    const doc = join(tree({ 'a.txt': 'a' }), 'a.txt');
    expect((await expanded([doc], { filesFrom: list })).items.map(summary)).toEqual([doc]);
  });
});

describe('expandInputs: named paths', () => {
  it('one file is the single form, with its size; one directory walked is a batch', async () => {
    const root = tree({ 'a.txt': 'abc', 'sub/b.txt': 'b' });
    const one = await expanded([join(root, 'a.txt')]);
    expect(one).toMatchObject({ single: true, stdinNamed: false });
    expect(one.items).toEqual([{ kind: 'file', path: join(root, 'a.txt'), size: 3 }]);
    expect((await expanded([root], { recursive: true })).single).toBe(false);
    // A missing path named alone with --recursive stays single: it fails as itself.
    expect((await expanded([join(root, 'missing')], { recursive: true })).single).toBe(true);
    expect((await expanded(['-'], { recursive: true })).single).toBe(true);
  });

  it('a missing path, a directory without --recursive and a special file each fail on their own', async () => {
    const { root, paths } = oddPaths();
    const { items, single } = await expanded(paths);
    expect(single).toBe(false);
    expect(items.map(summary)).toEqual([
      `unreadable_file ${join(root, 'missing')}`,
      `is_directory ${root}`,
      join(root, 'a.txt'),
      ...(posix ? [`not_a_file ${join(root, 'fifo')}`] : []),
    ]);
    const [missing, directory] = items as [InputItem & { kind: 'unusable' }, InputItem & { kind: 'unusable' }];
    expect(missing.error).toBeInstanceOf(InputFileError);
    expect(missing.error.reason).toBe('no such file or directory');
    expect(directory.error.hint).toBe('add --recursive to process the files in it');
  });

  it("'-' is standard input, named once, and flagged", async () => {
    const { items, stdinNamed } = await expanded(['-']);
    expect(items).toEqual([{ kind: 'stdin' }]);
    expect(stdinNamed).toBe(true);
    expect(itemName(items[0]!)).toBe('-');
  });
});

describe('expandInputs: walking a directory', () => {
  it('goes depth first in name order, with paths below it, reporting links and special files instead of following them', async () => {
    const root = tree({ 'b.txt': 'b', 'a/z.txt': 'z', 'a/c/d.txt': 'd', '.hidden': 'h', 'C.txt': 'C' });
    if (posix) {
      symlinkSync(join(root, 'b.txt'), join(root, 'link.txt'));
      execFileSync('mkfifo', [join(root, 'a', 'fifo')]);
    }
    const { items, skipped } = await expanded([root], { recursive: true });
    expect(items.map(summary)).toEqual(['.hidden', 'C.txt', 'a/c/d.txt', 'a/z.txt', 'b.txt']);
    expect(items.map(itemName)).toEqual(items.map((item) => (item as { path: string }).path));
    const [z, a] = [join(root, 'a', 'z.txt'), join(root, 'a')].map((path) => lstatSync(path, { bigint: true }));
    expect(items.find((item) => summary(item) === 'a/z.txt')).toEqual({
      kind: 'file',
      path: join(root, 'a', 'z.txt'),
      size: 1,
      relative: 'a/z.txt',
      // The file the walk saw, and the folder it is in, which must be what is opened (test/inputs/swapped.test.ts).
      listed: { dev: z!.dev, ino: z!.ino, folders: [{ path: join(root, 'a'), dev: a!.dev, ino: a!.ino }] },
    });
    if (posix) {
      expect(skipped).toEqual([
        { path: join(root, 'a', 'fifo'), reason: 'not a regular file' },
        { path: join(root, 'link.txt'), reason: 'symbolic link (not followed)' },
      ]);
    }
  });

  it.runIf(posix && process.getuid?.() !== 0)('a subdirectory that cannot be listed fails on its own', async () => {
    const root = tree({ 'a.txt': 'a', 'closed/x.txt': 'x' });
    execFileSync('chmod', ['000', join(root, 'closed')]);
    try {
      const { items } = await expanded([root], { recursive: true });
      expect(items.map(summary)).toEqual(['a.txt', `unreadable_file ${join(root, 'closed')}`]);
    } finally {
      execFileSync('chmod', ['700', join(root, 'closed')]);
    }
  });

  it.each<[string, InputOptions, string[]]>([
    ['no filter', {}, ['a/keep.md', 'a/skip.log', 'b/keep.md', 'top.md']],
    ['--include by name, at any depth', { include: ['*.md'] }, ['a/keep.md', 'b/keep.md', 'top.md']],
    ['--include by path', { include: ['a/*'] }, ['a/keep.md', 'a/skip.log']],
    ['--exclude by name', { exclude: ['*.log'] }, ['a/keep.md', 'b/keep.md', 'top.md']],
    ['--exclude by path', { exclude: ['b/**'] }, ['a/keep.md', 'a/skip.log', 'top.md']],
    ['both: the exclusion wins', { include: ['*.md'], exclude: ['a/keep.md'] }, ['b/keep.md', 'top.md']],
  ])('%s', async (_, filter, expected) => {
    const root = tree({ 'a/keep.md': '', 'a/skip.log': '', 'b/keep.md': '', 'top.md': '' });
    const { items } = await expanded([root], { recursive: true, ...filter });
    expect(items.map(summary)).toEqual(expected);
  });

  it.runIf(posix)('walks the folder the system reads: a .. after a link is not resolved as text', async () => {
    const root = tree({ 'd/x.txt': 'top', 'sub/d/x.txt': 'below', 'sub/deep/keep': '' });
    symlinkSync(join(root, 'sub', 'deep'), join(root, 'link'));
    // link/../d is sub/d for the system; path.join would make it d.
    const through = `${root}/link/../d`;
    const { items } = await expanded([through], { recursive: true });
    expect(items.map((item) => (item.kind === 'file' ? item.path : summary(item)))).toEqual([`${through}/x.txt`]);
    expect(readFileSync(`${through}/x.txt`, 'utf8')).toBe('below');
    // Spelt with separators at its end, one stands between the folder and its entries.
    for (const spelt of [`${root}/d/`, `${root}/d//`]) {
      const walked = await expanded([spelt], { recursive: true });
      expect(walked.items.map((item) => (item.kind === 'file' ? item.path : summary(item)))).toEqual([
        `${root}/d/x.txt`,
      ]);
    }
  });

  it('filters only what is walked: a file named on the command line is always taken', async () => {
    const root = tree({ 'named.log': '' });
    // With -r (without it --exclude is refused: checkInputOptions).
    const { items } = await expanded([join(root, 'named.log')], { recursive: true, exclude: ['*.log'] });
    expect(items.map(summary)).toEqual([join(root, 'named.log')]);
    // Named in a --files-from list, the same (as README's --exclude row says).
    const listed = await expanded(
      [],
      { filesFrom: '-', recursive: true, exclude: ['*.log'] },
      Readable.from([`${join(root, 'named.log')}\n`]),
    );
    expect(listed.items.map(summary)).toEqual([join(root, 'named.log')]);
  });
});

describe("expandInputs: the store's folder", () => {
  // `register -r .` with the store in ./.notarize (or a walk of the home folder) registered
  // credentials.json, the ledger's records and the run's own lock file, and every re-run paid
  // for the records the run before it wrote.
  const store = { ownStore: true, reason: 'part of the notarize store, whose files are never documents' };

  it('a walk does not enter it, named as it is spelt or through a link', async () => {
    const root = tree({
      'app.bin': 'a',
      '.notarize/credentials.json': '{}',
      '.notarize/services/s/ledger/x.json': '{}',
    });
    const { items, skipped } = await expanded([root], { recursive: true, storeDir: join(root, '.notarize') });
    expect(items.map(summary)).toEqual(['app.bin']);
    expect(skipped).toEqual([{ path: join(root, '.notarize'), ...store }]);
    if (posix) {
      const link = join(tempDir(), 'link');
      symlinkSync(root, link);
      const through = await expanded([root], { recursive: true, storeDir: join(link, '.notarize') });
      expect(through.items.map(summary)).toEqual(['app.bin']);
      expect(through.skipped).toEqual([{ path: join(root, '.notarize'), ...store }]);
    }
  });

  it('nor the store itself, or a folder in it, walked by name', async () => {
    const root = tree({ 'store/credentials.json': '{}', 'store/services/s/ledger/x.json': '{}', 'doc.txt': 'd' });
    const storeDir = join(root, 'store');
    for (const walked of [storeDir, `${storeDir}/`, join(storeDir, 'services')]) {
      const { items, skipped } = await expanded([walked, join(root, 'doc.txt')], { recursive: true, storeDir });
      expect(items.map(summary)).toEqual([join(root, 'doc.txt')]);
      expect(skipped).toEqual([{ path: walked, ...store }]);
    }
  });

  it('a file in it named or listed is passed over; the others are documents', async () => {
    const root = tree({ 'doc.txt': 'd', 'store/credentials.json': '{}', 'store/services/s/ledger/x.json': '{}' });
    const storeDir = join(root, 'store');
    const inStore = [join(storeDir, 'credentials.json'), join(storeDir, 'services/s/ledger/x.json')];
    const { items, skipped } = await expanded(
      [inStore[0]!, join(root, 'doc.txt')],
      { filesFrom: '-', storeDir },
      Readable.from([`${inStore[1]}\n`]),
    );
    expect(items.map(summary)).toEqual([join(root, 'doc.txt')]);
    expect(skipped).toEqual(inStore.map((path) => ({ path, ...store })));
  });

  it.runIf(posix && process.getuid?.() === 0)(
    "a file listed through a bind mount of the folder holding it is the store's all the same",
    async (context) => {
      // By real path it was not (a bind mount shows no link), and was registered and paid for.
      const root = tree({ 'src/.notarize/credentials.json': '{}', 'src/doc.txt': 'd' });
      mkdirSync(join(root, 'dst'));
      try {
        execFileSync('mount', ['--bind', join(root, 'src'), join(root, 'dst')], { stdio: 'ignore' });
      } catch {
        context.skip(); // no mount here (a container without the right): nothing to show
      }
      // Unmounted before the temporary folders go (after each test): a mount point cannot be removed.
      try {
        const listed = [join(root, 'dst', '.notarize', 'credentials.json'), join(root, 'dst', 'doc.txt')];
        const { items, skipped } = await expanded(
          [],
          { filesFrom: '-', storeDir: join(root, 'src', '.notarize') },
          Readable.from([`${listed.join('\n')}\n`]),
        );
        expect(items.map(summary)).toEqual([join(root, 'dst', 'doc.txt')]);
        expect(skipped).toEqual([{ path: listed[0], ...store }]);
      } finally {
        execFileSync('umount', [join(root, 'dst')]);
      }
    },
  );

  it.runIf(posix)('a link named or listed that leads to a file of it is passed over too', async () => {
    // creds.json -> the store's credentials.json was registered and paid for.
    const root = tree({ 'store/credentials.json': '{}', 'dist/app.bin': 'a' });
    symlinkSync(join(root, 'store', 'credentials.json'), join(root, 'dist', 'creds.json'));
    const storeDir = join(root, 'store');
    const { items, skipped } = await expanded(
      [join(root, 'dist', 'creds.json')],
      { filesFrom: '-', storeDir },
      Readable.from([`${join(root, 'dist', 'creds.json')}\n${join(root, 'dist', 'app.bin')}\n`]),
    );
    expect(items.map(summary)).toEqual([join(root, 'dist', 'app.bin')]);
    expect(skipped.map((s) => s.path)).toEqual([join(root, 'dist', 'creds.json'), join(root, 'dist', 'creds.json')]);
  });

  it('is found when the run makes it after the documents were named', async () => {
    const root = tree({ 'doc.txt': 'd' });
    const storeDir = join(root, '.notarize');
    const expansion = await expandInputs([root], { recursive: true, storeDir }, noStdin());
    mkdirSync(storeDir);
    writeFileSync(join(storeDir, 'credentials.json'), '{}');
    const items: InputItem[] = [];
    for await (const item of expansion.items) items.push(item);
    expect(items.map(summary)).toEqual(['doc.txt']);
  });

  it('nothing but its files is no documents, a usage error', async () => {
    const root = tree({ 'store/credentials.json': '{}' });
    const storeDir = join(root, 'store');
    for (const paths of [[join(storeDir, 'credentials.json')], [root]]) {
      const error = await rejectionOf(expanded(paths, { recursive: true, storeDir }), UsageError);
      expect(error.code).toBe('no_documents');
      expect(error.message).toMatch(/in the notarize store/);
    }
  });

  it('without a store named, its files are files like any (hash has none)', async () => {
    const root = tree({ 'store/credentials.json': '{}' });
    const { items } = await expanded([root], { recursive: true });
    expect(items.map(summary)).toEqual(['store/credentials.json']);
  });
});

describe('expandInputs: --files-from', () => {
  it('reads the list after the named paths: CRLF, blank lines, directories with --recursive, and - once', async () => {
    const root = tree({ 'a.txt': 'a', 'b.txt': 'b', 'dir/c.txt': 'c' });
    const list = `${join(root, 'b.txt')}\r\n\n${join(root, 'dir')}\n-\n-\n`;
    const { items, single } = await expanded(
      [join(root, 'a.txt')],
      { filesFrom: '-', recursive: true },
      Readable.from([list]),
    );
    expect(single).toBe(false);
    expect(items.map(summary)).toEqual([join(root, 'a.txt'), join(root, 'b.txt'), 'c.txt', 'usage -', 'usage -']);
  });

  it("listed paths are stat'ed like named ones, never opened: the same items, and a FIFO's writer stays blocked", async () => {
    const { root, paths } = oddPaths();
    let writer: ChildProcess | undefined;
    if (posix) {
      const server = createServer();
      await new Promise<void>((resolve) => server.listen(join(root, 'socket'), resolve));
      onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
      paths.push(join(root, 'socket'));
      // A writer blocks until the FIFO is opened for reading: an open would let it write, and drop its data.
      writer = spawn('sh', ['-c', `echo payload > '${join(root, 'fifo')}'`], { stdio: 'ignore' });
      onTestFinished(() => void writer?.kill());
    }
    const listed = await expanded([], { filesFrom: '-' }, Readable.from([`${paths.join('\n')}\n`]));
    const named = await expanded(paths);
    expect(listed.items.map(summary)).toEqual(named.items.map(summary));
    expect(listed.items.map(summary)).toContain(`is_directory ${root}`);
    if (posix) {
      expect(listed.items.map(summary).slice(-2)).toEqual([
        `not_a_file ${join(root, 'fifo')}`,
        `not_a_file ${join(root, 'socket')}`,
      ]);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(writer!.exitCode).toBeNull();
    }
  });

  it("takes '-' in a list file as standard input, once", async () => {
    const root = tree({ 'list.txt': '-\n-\n' });
    const { items } = await expanded([], { filesFrom: join(root, 'list.txt') });
    expect(items).toMatchObject([{ kind: 'stdin' }, { kind: 'unusable', path: '-' }]);
    expect((items[1] as { error: InputFileError }).error.message).toBe("'-' (standard input) can be named only once");
  });

  it.runIf(posix)(
    "a carriage return before a line's end: the name without it, unless only the name with it is there",
    async () => {
      // A list written by `find` names a file ending in '\r'; dropping it took another file, x.txt, unsaid.
      const root = tree({ 'plain.txt': 'p', 'x.txt': 'plain', 'x.txt\r': 'with a carriage return', 'only\r': 'o' });
      const names = ['plain.txt', 'x.txt', 'only', 'nul\0name', 'plain.txt'];
      const list = names.map((name) => `${join(root, name)}\r\n`).join('');
      const { items } = await expanded([], { filesFrom: '-' }, Readable.from([list]));
      expect(items.map(summary)).toEqual([
        join(root, 'plain.txt'),
        `ambiguous_name ${join(root, 'x.txt')}\r`,
        join(root, 'only\r'),
        // A line the system refuses (a NUL in it) fails on its own, and the rest go on: it ended the run.
        expect.stringMatching(/^[a-z_]+ .*nul/),
        join(root, 'plain.txt'),
      ]);
    },
  );

  it('splits at NUL with -0, keeping newlines in names', async () => {
    const root = tree({ 'odd\nname.txt': 'x' });
    const list = join(root, 'list');
    writeFileSync(list, `${join(root, 'odd\nname.txt')}\0`);
    const { items } = await expanded([], { filesFrom: list, nul: true });
    expect(items.map(summary)).toEqual([join(root, 'odd\nname.txt')]);
  });

  it('a line too long for a path fails on its own, named by its beginning', async () => {
    const long = 'p'.repeat(MAX_LIST_PATH_BYTES + 1);
    const { items } = await expanded([], { filesFrom: '-' }, Readable.from([`${long}\n`]));
    expect(items.map(summary)).toEqual([`path_too_long ${'p'.repeat(60)}...`]);
  });

  it.each([
    [false, 'for a NUL-separated list (find -print0), add -0'],
    [true, undefined],
  ])('a list with no name in its first MiB is not a list (-0: %s); the rest is not read', async (nul, hint) => {
    const garbage = Buffer.alloc(MAX_LIST_GAP_BYTES + 10, 'x');
    const { items } = await expanded([], { filesFrom: '-', nul }, Readable.from([garbage]));
    expect(items).toHaveLength(1);
    const [item] = items as [InputItem & { kind: 'unusable' }];
    expect(item.error.code).toBe('not_a_list');
    expect(item.error.hint).toBe(hint);
    expect(item.error.message).toMatch(/^the --files-from list '-' holds no path in \d+ bytes/);
  });
});

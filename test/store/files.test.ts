import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { StoreError } from '../../src/errors.js';
import { FD_SHORTAGE_REMEDY } from '../../src/fd-shortage.js';
import {
  accessHint,
  DirFlushes,
  refusalHint,
  ensurePrivateDir,
  readPrivateFile,
  readStoreFile,
  removeFile,
  tightenDirIfExists,
  writeFileAtomic,
} from '../../src/store/files.js';
import { rejection, thrown } from '../helpers/catch.js';
import { DIST, REPO_ROOT } from '../helpers/cli.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const posix = process.platform !== 'win32';
const mode = (path: string) => statSync(path).mode & 0o777;

describe('writeFileAtomic', () => {
  const tempDir = useTempDirs();

  it('writes the content and leaves no temporary file behind', async () => {
    const dir = tempDir();
    const file = join(dir, 'entry.json');
    await writeFileAtomic(file, '{"a":1}\n');
    await writeFileAtomic(file, '{"a":2}\n');
    expect(readFileSync(file, 'utf8')).toBe('{"a":2}\n');
    expect(readdirSync(dir)).toEqual(['entry.json']);
  });

  it('writes content given in pieces, as replace and as a new name (which needs the whole at once)', async () => {
    const dir = tempDir();
    const pieces = function* () {
      yield '{"rows": [\n';
      yield 'é€😀,\n';
      yield ']}\n';
    };
    await writeFileAtomic(join(dir, 'a.json'), pieces());
    await writeFileAtomic(join(dir, 'b.json'), pieces(), { replace: false });
    for (const name of ['a.json', 'b.json'])
      expect(readFileSync(join(dir, name), 'utf8')).toBe('{"rows": [\né€😀,\n]}\n');
    expect(readdirSync(dir).sort()).toEqual(['a.json', 'b.json']);
  });

  it.runIf(posix)('creates the file with mode 0600, also when replacing a wider one', async () => {
    const dir = tempDir();
    const file = join(dir, 'entry.json');
    writeFileSync(file, 'old', { mode: 0o644 });
    await writeFileAtomic(file, 'new');
    expect(mode(file)).toBe(0o600);
  });

  it('keeps every file whole when many writes are in flight at once, several to the same file', async () => {
    const dir = tempDir();
    const texts = Array.from({ length: 40 }, (_, i) => `${JSON.stringify({ i, pad: 'x'.repeat(5000 + i) })}\n`);
    await Promise.all(texts.map((text, i) => writeFileAtomic(join(dir, `f${i % 8}.json`), text)));
    const names = readdirSync(dir).sort();
    expect(names).toEqual(Array.from({ length: 8 }, (_, i) => `f${i}.json`).sort());
    for (const name of names) expect(texts).toContain(readFileSync(join(dir, name), 'utf8'));
  });

  it("settles every write of an owner sharing its directories' flushes, and flushes again later", async () => {
    const dirs = [tempDir(), tempDir()];
    const flushes = new DirFlushes();
    const write = (i: number) => writeFileAtomic(join(dirs[i % 2]!, `f${i}.json`), `${i}\n`, { flushes });
    await Promise.all(Array.from({ length: 30 }, (_, i) => write(i)));
    // Writes after the first wave are not kept waiting by a flush that ended.
    await Promise.all([write(30), write(31), flushes.flush(dirs[0]!)]);
    for (let i = 0; i < 32; i++) expect(readFileSync(join(dirs[i % 2]!, `f${i}.json`), 'utf8')).toBe(`${i}\n`);
  });

  it('cleans up its temporary file when the rename fails', async () => {
    const dir = tempDir();
    const target = join(dir, 'occupied');
    mkdirSync(join(target, 'child'), { recursive: true });
    expect(await rejection(writeFileAtomic(target, 'x'))).toBeInstanceOf(Error);
    expect(readdirSync(dir)).toEqual(['occupied']);
  });
});

describe('ensurePrivateDir', () => {
  const tempDir = useTempDirs();

  it.runIf(posix)('returns false for a new directory and true when it tightened one', () => {
    const dir = join(tempDir(), 'private');
    expect(ensurePrivateDir(dir)).toBe(false);
    expect(mode(dir)).toBe(0o700);
    const wide = join(tempDir(), 'wide');
    mkdirSync(wide, { mode: 0o755 });
    expect(ensurePrivateDir(wide)).toBe(true);
    expect(mode(wide)).toBe(0o700);
    expect(ensurePrivateDir(wide)).toBe(false);
  });

  it.runIf(posix)('refuses a link, a file and a shared directory, naming it, and changes no mode', () => {
    const real = join(tempDir(), 'real');
    mkdirSync(real, { mode: 0o755 });
    const link = join(tempDir(), 'link');
    symlinkSync(real, link);
    const file = join(tempDir(), 'file');
    writeFileSync(file, '');
    const shared = join(tempDir(), 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    for (const [dir, why] of [
      [link, /symbolic link/],
      [file, /not a directory/],
      [shared, /world-writable or sticky, as shared directories are \(mode 1777\)/],
    ] as const) {
      const error = thrown(() => ensurePrivateDir(dir));
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).message).toContain(dir);
      expect((error as StoreError).message).toMatch(why);
    }
    expect(mode(real)).toBe(0o755);
    expect(statSync(shared).mode & 0o7777).toBe(0o1777);
  });

  it.runIf(posix)('a file where a folder goes: the hint says to move it aside, not to choose another store', () => {
    const file = join(tempDir(), 'ledger');
    writeFileSync(file, '');
    for (const check of [() => ensurePrivateDir(file), () => tightenDirIfExists(file)]) {
      const error = thrown(check) as StoreError;
      expect(error.message).toMatch(/not a directory/);
      expect(error.hint).toMatch(/^move that file aside \(notarize makes the folder anew\)/);
    }
  });
});

describe('readPrivateFile', () => {
  const tempDir = useTempDirs();

  it.runIf(posix)('refuses a link and a FIFO without blocking; tightens only when asked', () => {
    const dir = tempDir();
    const target = join(dir, 'target.json');
    writeFileSync(target, '{}', { mode: 0o644 });
    const link = join(dir, 'link.json');
    symlinkSync(target, link);
    expect((thrown(() => readPrivateFile(link)) as StoreError).message).toMatch(/link\.json: it is a symbolic link/);
    const fifo = join(dir, 'fifo.json');
    execFileSync('mkfifo', [fifo]);
    expect((thrown(() => readPrivateFile(fifo)) as StoreError).message).toMatch(/not a regular file/);
    expect(readPrivateFile(target)).toBe('{}');
    expect(mode(target)).toBe(0o644);
    let told = 0;
    expect(readPrivateFile(target, () => told++)).toBe('{}');
    expect([mode(target), told]).toEqual([0o600, 1]);
  });
});

describe('readStoreFile', () => {
  const tempDir = useTempDirs();
  const schema = z.object({ n: z.int() });

  it('returns undefined for a missing file', () => {
    expect(readStoreFile(join(tempDir(), 'missing.json'), schema)).toBeUndefined();
  });

  it('reads a valid file', () => {
    const file = join(tempDir(), 'ok.json');
    writeFileSync(file, '{"n": 3}');
    expect(readStoreFile(file, schema)).toEqual({ n: 3 });
  });

  it('names the file and the field when the shape is wrong', () => {
    const file = join(tempDir(), 'shape.json');
    writeFileSync(file, '{"n": "3"}');
    const error = thrown(() => readStoreFile(file, schema));
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).message).toContain(file);
    expect((error as StoreError).message).toContain('n:');
    expect((error as StoreError).hint).toBeDefined();
  });

  it('names a directory in place of the file as unreadable', () => {
    const dir = tempDir();
    const error = thrown(() => readStoreFile(dir, schema));
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).file).toBe(dir);
  });
});

describe('removeFile', () => {
  const tempDir = useTempDirs();

  it('removes a file and ignores one already gone', () => {
    const file = join(tempDir(), 'x');
    writeFileSync(file, '');
    removeFile(file);
    expect(readdirSync(join(file, '..'))).toEqual([]);
    expect(() => removeFile(file)).not.toThrow();
  });

  it('still reports other errors', () => {
    const dir = join(tempDir(), 'a-directory');
    mkdirSync(dir);
    expect(() => removeFile(dir)).toThrow();
  });
});

/** Whether every folder from `/` down to `dir` lets anyone search it (o+x). */
function searchableByAll(dir: string): boolean {
  for (let at = dir; ; at = dirname(at)) {
    try {
      if ((statSync(at).mode & 0o001) === 0) return false;
    } catch {
      return false;
    }
    if (dirname(at) === at) return true;
  }
}

describe('accessHint: what to change when the system refuses this user a store path (EACCES)', () => {
  // Real refusals need a user the permissions bind: root passes every check, so as root the
  // refusals are made by a child process running as nobody, in a folder that user owns.
  const asRoot = process.getuid?.() === 0;
  const nobody = 65534;
  it.skipIf(process.platform === 'win32' || (asRoot && spawnSync('id', ['-u', 'nobody']).status !== 0))(
    "names the highest folder that refuses the user, a folder's listing or a file's own rights, and nothing of anyone else's",
    () => {
      // Somewhere that user can reach (the suite's own temp folder may be private), with a copy of the
      // build it can read (a CI checkout may sit in a private folder too).
      const base = [tmpdir(), '/tmp'].find(searchableByAll);
      // Nor can it run a node it cannot reach (CI's Node 24 sits in a private folder): the same code runs on Node 20.
      if (base === undefined || (asRoot && !searchableByAll(process.execPath))) return;
      const root = mkdtempSync(join(base, 'notarize-access-'));
      chmodSync(root, 0o755);
      const dist = join(root, 'dist');
      cpSync(DIST, dist, { recursive: true });
      // files.js reaches zod through validation.js: the one package the copy needs.
      cpSync(join(REPO_ROOT, 'node_modules', 'zod'), join(root, 'node_modules', 'zod'), { recursive: true });
      const mine = join(root, 'mine');
      mkdirSync(mine);
      // Another user's, when that can be made: a file in the user's folder, and a private folder.
      const theirs = join(root, 'theirs');
      mkdirSync(theirs, { mode: 0o700 });
      if (asRoot) {
        execFileSync('chown', [String(nobody), mine]);
        writeFileSync(join(mine, 'other.json'), '{}', { mode: 0o600 });
        // The user's own link into that private folder: what it leads to is not the user's.
        symlinkSync(theirs, join(mine, 'link'));
        execFileSync('chown', ['-h', String(nobody), join(mine, 'link')]);
      }
      const program = `
        import { execFileSync } from 'node:child_process';
        import { chmodSync, mkdirSync, openSync, readdirSync, lstatSync, renameSync, writeFileSync } from 'node:fs';
        import { join } from 'node:path';
        import { pathToFileURL } from 'node:url';
        const [dist, mine, theirs] = process.argv.slice(1);
        const { accessHint } = await import(pathToFileURL(dist + '/store/files.js').href);
        const hint = (fn) => { try { fn(); return 'no refusal'; } catch (error) { return accessHint(error) ?? null; } };
        mkdirSync(join(mine, 'gp', 'p'), { recursive: true });
        mkdirSync(join(mine, 'unlisted'));
        mkdirSync(join(mine, 'readonly'));
        writeFileSync(join(mine, 'readonly', 'a'), '');
        writeFileSync(join(mine, 'config.json'), '{}');
        chmodSync(join(mine, 'gp'), 0o600);
        chmodSync(join(mine, 'unlisted'), 0o300);
        chmodSync(join(mine, 'readonly'), 0o500);
        chmodSync(join(mine, 'config.json'), 0o000);
        execFileSync('mkfifo', ['-m', '000', join(mine, 'fifo')]);
        const hints = {
          unsearchable: hint(() => lstatSync(join(mine, 'gp', 'p', 'store'))),
          unlisted: hint(() => readdirSync(join(mine, 'unlisted'))),
          create: hint(() => openSync(join(mine, 'readonly', 'new'), 'wx')),
          rename: hint(() => renameSync(join(mine, 'readonly', 'a'), join(mine, 'readonly', 'b'))),
          file: hint(() => openSync(join(mine, 'config.json'), 'r')),
          othersFile: hint(() => openSync(join(mine, 'other.json'), 'r')),
          othersFolder: hint(() => lstatSync(join(theirs, 'store'))),
          throughLink: hint(() => lstatSync(join(mine, 'link', 'store'))),
          fifo: hint(() => openSync(join(mine, 'fifo'), 'r')),
        };
        for (const folder of ['gp', 'unlisted', 'readonly']) chmodSync(join(mine, folder), 0o700);
        chmodSync(join(mine, 'config.json'), 0o600);
        process.stdout.write(JSON.stringify(hints));
      `;
      try {
        const out = execFileSync(process.execPath, ['--input-type=module', '-e', program, dist, mine, theirs], {
          encoding: 'utf8',
          ...(asRoot ? { uid: nobody, gid: nobody } : {}),
        });
        const hints = JSON.parse(out) as Record<string, string | null>;
        const folder = (path: string) => `give this user read, write and search access to ${path} (chmod u+rwx)`;
        expect(hints.unsearchable).toBe(folder(join(mine, 'gp')));
        expect(hints.unlisted).toBe(`give this user read and search access to ${join(mine, 'unlisted')} (chmod u+rwx)`);
        expect(hints.create).toBe(folder(join(mine, 'readonly')));
        expect(hints.rename).toBe(folder(join(mine, 'readonly')));
        expect(hints.file).toBe(`give this user read and write access to ${join(mine, 'config.json')} (chmod u+rw)`);
        // A FIFO in a store file's place is no store file: no chmod makes it one.
        expect(hints.fifo).toBeNull();
        if (asRoot) {
          // Another user's file, or a store under another user's private folder: no chmod of this user's can help.
          expect(hints.othersFile).toBeNull();
          expect(hints.othersFolder).toBeNull();
          expect(hints.throughLink).toBeNull();
        }
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    },
  );

  it('anything but a permission with a path is left to the caller', () => {
    expect(accessHint(Object.assign(new Error('ENOSPC'), { code: 'ENOSPC', path: tmpdir() }))).toBeUndefined();
    expect(accessHint(Object.assign(new Error('EACCES'), { code: 'EACCES' }))).toBeUndefined();
  });
});

describe('refusalHint: what to change when the system refuses a store path', () => {
  it('no descriptor to open it with (EMFILE, ENFILE, or wrapped): the limit, never "move it aside"', () => {
    for (const code of ['EMFILE', 'ENFILE']) {
      const errno = Object.assign(new Error(`${code}: too many open files`), { code, path: tmpdir() });
      expect(refusalHint(errno)).toBe(FD_SHORTAGE_REMEDY);
      expect(refusalHint(new Error('could not read', { cause: errno }))).toBe(FD_SHORTAGE_REMEDY);
    }
  });

  it("a permission is accessHint's, and anything else is left to the caller", () => {
    const refused = Object.assign(new Error('EACCES'), { code: 'EACCES', path: join(tmpdir(), 'x', 'y') });
    expect(refusalHint(refused)).toBe(accessHint(refused));
    expect(refusalHint(Object.assign(new Error('ENOSPC'), { code: 'ENOSPC', path: tmpdir() }))).toBeUndefined();
  });
});

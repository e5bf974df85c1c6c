import { execFileSync } from 'node:child_process';
import {
  chmodSync,
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
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { StoreError } from '../../src/errors.js';
import {
  accessHint,
  DirFlushes,
  ensurePrivateDir,
  readPrivateFile,
  readStoreFile,
  removeFile,
  tightenDirIfExists,
  writeFileAtomic,
} from '../../src/store/files.js';
import { rejection, thrown } from '../helpers/catch.js';
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

describe('accessHint: what to change when the system refuses this user a store path (EACCES)', () => {
  it('names the folder to search or list, or the file itself, never a link or another store', () => {
    const dir = mkdtempSync(join(tmpdir(), 'notarize-access-'));
    try {
      writeFileSync(join(dir, 'config.json'), '{}');
      const refused = (syscall: string, path: string) =>
        accessHint(
          Object.assign(new Error(`EACCES: permission denied, ${syscall} '${path}'`), {
            code: 'EACCES',
            syscall,
            path,
          }),
        );
      // A folder whose listing was refused: its read bit.
      expect(refused('scandir', join(dir, 'ledger'))).toBe(
        `give this user read and search access to ${join(dir, 'ledger')} (chmod u+rwx)`,
      );
      // A file of this user's there that could not be opened (mode 000): its own rights.
      expect(refused('open', join(dir, 'config.json'))).toBe(
        `give this user read and write access to ${join(dir, 'config.json')} (chmod u+rw)`,
      );
      // A look-up, or a create or rename there: the folder holding it.
      for (const [syscall, path] of [
        ['lstat', join(dir, 'locks')],
        ['open', join(dir, '.config.json.1.deadbeef.0.tmp')],
        ['rename', join(dir, 'config.json')],
      ]) {
        expect(refused(syscall!, path!), syscall).toBe(
          `give this user read, write and search access to ${dir} (chmod u+rwx)`,
        );
      }
      // Not a permission, or no path: the caller's hint stands.
      expect(accessHint(Object.assign(new Error('ENOSPC'), { code: 'ENOSPC', path: dir }))).toBeUndefined();
      expect(accessHint(Object.assign(new Error('EACCES'), { code: 'EACCES' }))).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

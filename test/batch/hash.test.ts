/**
 * `notarize hash` prints exactly what GNU sha256sum prints (names with a
 * backslash or a newline escaped, with a leading backslash), so `sha256sum -c`
 * accepts it; '-' reads standard input; --json is an array; nothing is sent.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sha256 } from '../helpers/documents.js';
import { useTempDir } from '../helpers/temp-dirs.js';
import { describeRun, runCli, runProcess } from '../helpers/cli.js';

let dir: string;
let env: Record<string, string>;
useTempDir('notarize-batch-hash-', (created) => {
  dir = created;
  env = { NOTARIZE_CONFIG_DIR: join(dir, '.store') };
});

const NAMES = ['plain.txt', 'with space.txt', 'back\\slash.txt', 'new\nline.txt', 'both\\and\nnewline.txt'];

async function writeNamed(): Promise<Map<string, string>> {
  const hashes = new Map<string, string>();
  for (const [i, name] of NAMES.entries()) {
    const content = `content ${i} of ${JSON.stringify(name)}\n`;
    await writeFile(join(dir, name), content);
    hashes.set(name, sha256(content));
  }
  return hashes;
}

describe('notarize hash and sha256sum', () => {
  it('does not need the store: a damaged config.json does not stop it', async () => {
    await mkdir(env.NOTARIZE_CONFIG_DIR!, { recursive: true });
    await writeFile(join(env.NOTARIZE_CONFIG_DIR!, 'config.json'), '{ damaged');
    await writeFile(join(dir, 'plain.txt'), 'plain\n');
    const run = await runCli(['hash', 'plain.txt'], env, { cwd: dir, noBaseUrlCheck: true });
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stdout).toBe(`${sha256('plain\n')}  plain.txt\n`);
    expect(run.stderr).toBe('');
  });

  it("prints exactly sha256sum's output for the same files in the same order", async () => {
    await writeNamed();
    const ours = await runCli(['hash', ...NAMES], env, { cwd: dir, noBaseUrlCheck: true });
    const theirs = await runProcess('sha256sum', NAMES, {}, { cwd: dir });
    expect(theirs.code).toBe(0);
    expect(ours.code, describeRun(ours)).toBe(0);
    expect(ours.stderr).toBe('');
    expect(ours.stdout).toBe(theirs.stdout);
    // The escaped forms, spelled out: a leading backslash, then \\ and \n in the name.
    expect(ours.stdout).toContain(`\\${sha256(`content 2 of ${JSON.stringify(NAMES[2])}\n`)}  back\\\\slash.txt\n`);
    expect(ours.stdout).toMatch(/^\\[0-9a-f]{64} {2}new\\nline\.txt$/m);
  });

  it('is accepted by sha256sum -c, which also catches a changed file', async () => {
    await writeNamed();
    const sums = await runCli(['hash', ...NAMES], env, { cwd: dir, noBaseUrlCheck: true });
    expect(sums.code, describeRun(sums)).toBe(0);
    await writeFile(join(dir, 'SHA256SUMS'), sums.stdout);

    const check = await runProcess('sha256sum', ['-c', '--strict', 'SHA256SUMS'], {}, { cwd: dir });
    expect(check.code, `${check.stdout}${check.stderr}`).toBe(0);
    const lines = check.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(NAMES.length);
    for (const line of lines) expect(line).toMatch(/: OK$/);
    expect(check.stdout).toContain('plain.txt: OK');
    expect(check.stdout).toContain('with space.txt: OK');
    expect(check.stdout).toMatch(/^\\?back\\{1,2}slash\.txt: OK$/m);
    expect(check.stderr).toBe('');

    await writeFile(join(dir, 'with space.txt'), 'changed\n');
    const changed = await runProcess('sha256sum', ['-c', 'SHA256SUMS'], {}, { cwd: dir });
    expect(changed.code).toBe(1);
    expect(changed.stdout).toContain('with space.txt: FAILED');
  });

  it('hashes a directory tree (--recursive) like sha256sum over the sorted file list', async () => {
    const files: string[] = [];
    for (let i = 0; i < 60; i++) {
      const name = `tree/${i % 3 === 0 ? 'a' : 'b'}/file-${String(i).padStart(2, '0')}.bin`;
      files.push(name);
    }
    for (const [i, name] of files.entries()) {
      await mkdir(join(dir, name, '..'), { recursive: true });
      await writeFile(join(dir, name), Buffer.alloc(1000 + i, i));
    }
    files.sort();
    const ours = await runCli(['hash', '-r', 'tree'], env, { cwd: dir, noBaseUrlCheck: true });
    const theirs = await runProcess('sha256sum', files, {}, { cwd: dir });
    expect(ours.code, describeRun(ours)).toBe(0);
    expect(ours.stdout.split('\n')).toHaveLength(61);
    expect(ours.stdout).toBe(theirs.stdout);
  });

  it("'-' reads standard input, as sha256sum does", async () => {
    const input = 'from standard input\n';
    const ours = await runCli(['hash', '-'], env, { cwd: dir, input, noBaseUrlCheck: true });
    const theirs = await runProcess('sha256sum', ['-'], {}, { cwd: dir, input });
    expect(ours.code, describeRun(ours)).toBe(0);
    expect(ours.stdout).toBe(theirs.stdout);
    expect(ours.stdout).toBe(`${sha256(input)}  -\n`);
  });

  it('--json prints an array of {file, hash} in input order', async () => {
    const hashes = await writeNamed();
    const run = await runCli(['hash', ...NAMES, '-', '--json'], env, {
      cwd: dir,
      input: 'stdin\n',
      noBaseUrlCheck: true,
    });
    expect(run.code, describeRun(run)).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([
      ...NAMES.map((file) => ({ file, hash: hashes.get(file) })),
      { file: '-', hash: sha256('stdin\n') },
    ]);
  });

  it('exits 2 for a missing file or a directory without --recursive, printing the digests of the others', async () => {
    const hashes = await writeNamed();
    // As sha256sum: the good lines on stdout, one line per bad input on stderr, and go on.
    const missing = await runCli(['hash', 'plain.txt', 'nope.txt'], env, { cwd: dir, noBaseUrlCheck: true });
    expect(missing.code).toBe(2);
    expect(missing.stdout).toBe(`${hashes.get('plain.txt')}  plain.txt\n`);
    expect(missing.stderr).toMatch(/^notarize: nope.txt: no such file or directory$/m);
    const theirs = await runProcess('sha256sum', ['plain.txt', 'nope.txt'], {}, { cwd: dir });
    expect(missing.stdout).toBe(theirs.stdout);
    const directory = await runCli(['hash', '.'], env, { cwd: dir, noBaseUrlCheck: true });
    expect(directory.code).toBe(2);
    expect(directory.stderr).toMatch(/is a directory/);
  });

  it('needs no service: it works with no base URL, key or network', async () => {
    await writeNamed();
    // No NOTARIZE_BASE_URL or key; a proxy variable pointing at a closed port would break any request.
    const run = await runCli(
      ['hash', 'plain.txt'],
      { ...env, HTTP_PROXY: 'http://127.0.0.1:9', HTTPS_PROXY: 'http://127.0.0.1:9' },
      { cwd: dir, noBaseUrlCheck: true },
    );
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stdout).toMatch(/^[0-9a-f]{64} {2}plain\.txt\n$/);
  });
});

/**
 * `-` read from a standard input that is a directory: Node reads one as
 * empty, so without a check the digest of zero bytes would be printed,
 * verified, or registered and paid for. The built bin, since what standard
 * input is belongs to the process.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BIN } from '../helpers/cli.js';
import { cliEnv, notarizeEnv } from '../helpers/env.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const tempDir = useTempDirs();

/** The bin run with `args` and a directory as its standard input. */
function withDirectoryAsStdin(args: string[]) {
  const folder = tempDir();
  const fd = openSync(folder, 'r');
  try {
    const env = notarizeEnv(cliEnv(tempDir()));
    return spawnSync(process.execPath, [BIN, ...args], { stdio: [fd, 'pipe', 'pipe'], env, encoding: 'utf8' });
  } finally {
    closeSync(fd);
  }
}

describe("'-' when standard input is a directory", () => {
  it('hash, verify and register fail with exit 2 saying so; nothing is printed as a digest, nothing sent', () => {
    for (const args of [
      ['hash', '-'],
      ['verify', '-'],
      ['register', '-', '-d', 'from stdin'],
    ]) {
      const run = withDirectoryAsStdin(args);
      expect(run.status, `${args.join(' ')}: ${run.stderr}`).toBe(2);
      expect(run.stdout).not.toMatch(/e3b0c442/);
      expect(run.stdout + run.stderr).toMatch(/standard input (\('-'\) )?is a directory/);
    }
  });

  it('--files-from - says so, not that the list holds no path (nor reads it as empty)', () => {
    const run = withDirectoryAsStdin(['hash', '--files-from', '-']);
    expect(run.status, run.stderr).toBe(2);
    expect(run.stderr).toContain("cannot read the --files-from list from '-': standard input is a directory");
  });

  it('--description-file - says so too, not that the description is empty', () => {
    const run = withDirectoryAsStdin(['register', '--hash', 'ab'.repeat(32), '--description-file', '-']);
    expect(run.status, run.stderr).toBe(2);
    expect(run.stderr).toContain("cannot read the description from '-': standard input is a directory");
  });
});

/** The bin run with `args` and /dev/null as its standard input ('ignore': what a closed one becomes too). */
function withNullStdin(args: string[]) {
  const env = notarizeEnv(cliEnv(tempDir()));
  return spawnSync(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env, encoding: 'utf8' });
}

describe("'-' when standard input is /dev/null, or closed (a cron job, `ssh -n`, a CI step with no input)", () => {
  it('register refuses it, exit 2, nothing sent: the empty document was registered and paid for', () => {
    const run = withNullStdin(['register', '-', '-d', 'nightly build', '--json']);
    expect(run.status, run.stderr).toBe(2);
    expect(run.stdout + run.stderr).toContain("standard input ('-') is /dev/null (or closed)");
    expect(run.stdout + run.stderr).not.toMatch(/e3b0c442/);
  });

  it('a description or a list from it is refused too, not read as empty', () => {
    const description = withNullStdin(['register', '--hash', 'ab'.repeat(32), '--description-file', '-']);
    expect(description.status, description.stderr).toBe(2);
    expect(description.stderr).toContain(
      "cannot read the description from '-': standard input is /dev/null (or closed)",
    );
    const list = withNullStdin(['hash', '--files-from', '-']);
    expect(list.status, list.stderr).toBe(2);
    expect(list.stderr).toContain(
      "cannot read the --files-from list from '-': standard input is /dev/null (or closed)",
    );
  });

  it("login --api-key-stdin is refused naming that flag, not a '-' nobody typed, with what to do", () => {
    const run = withNullStdin(['login', '--api-key-stdin']);
    expect(run.status, run.stderr).toBe(2);
    expect(run.stderr).toBe(
      'notarize: cannot read the API key with --api-key-stdin: standard input is /dev/null (or closed) ' +
        '(pipe it in, or redirect a file to it (`< file`))\n',
    );
  });

  it('hash - reads it as the empty document, as sha256sum does (nothing is paid for there)', () => {
    const run = withNullStdin(['hash', '-']);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  -\n');
  });
});

describe("'-' when standard input is a pipe that gives no byte (`cat missing | notarize register -`)", () => {
  const withEmptyPipe = (args: string[]) => {
    // Port 9 on 127.0.0.1 takes nothing: a run that tried to send would fail exit 4, not 2.
    const env = notarizeEnv(cliEnv(tempDir()));
    return spawnSync(process.execPath, [BIN, ...args], { input: '', env, encoding: 'utf8' });
  };

  it('register refuses it, exit 2, nothing sent, and says how to register the empty document on purpose', () => {
    const run = withEmptyPipe(['register', '-', '-d', 'release notes', '--json']);
    expect(run.status, run.stderr).toBe(2);
    expect(run.stdout).toBe('');
    const { error } = JSON.parse(run.stderr) as { error: { code: string; message: string; hint: string } };
    expect(error).toMatchObject({ code: 'no_input', message: "standard input ('-') was empty: nothing to register" });
    expect(error.hint).toContain('--hash e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('hash - and verify - read it as the empty document, as sha256sum does', () => {
    const run = withEmptyPipe(['hash', '-']);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  -\n');
    const verify = withEmptyPipe(['verify', '-', '--json']);
    expect(JSON.parse(verify.stdout)[0]).toMatchObject({
      hash: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    });
  });
});

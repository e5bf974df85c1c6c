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
import { useTempDirs } from '../helpers/temp-dirs.js';

const tempDir = useTempDirs();

/** The bin run with `args` and a directory as its standard input. */
function withDirectoryAsStdin(args: string[]) {
  const folder = tempDir();
  const fd = openSync(folder, 'r');
  try {
    const env = { ...process.env, NOTARIZE_CONFIG_DIR: tempDir(), NOTARIZE_BASE_URL: 'http://127.0.0.1:9' };
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

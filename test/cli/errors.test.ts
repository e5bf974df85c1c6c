/**
 * The one way an error becomes JSON (errors.ts errorJson): in a batch item's
 * result and, through main(), the one line --json prints on stderr.
 */
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli.js';
import { AuthError, errorJson, StoreError, UsageError } from '../../src/errors.js';
import { bufferIO } from '../helpers/io.js';

describe('errorJson', () => {
  it('is code, exit code, message and, only when there is one, the hint, in that order', () => {
    const withHint = errorJson(new AuthError('no token', { hint: 'log in' }));
    expect(withHint).toEqual({ code: 'auth', exitCode: 3, message: 'no token', hint: 'log in' });
    expect(Object.keys(withHint)).toEqual(['code', 'exitCode', 'message', 'hint']);
    expect(errorJson(new StoreError('/s/f.json', 'damaged'))).toEqual({
      code: 'store',
      exitCode: 2,
      message: 'damaged',
    });
  });

  it('is what main() prints with --json, for its own errors and for a parse error alike', async () => {
    const out = bufferIO();
    const code = await main({ argv: ['frobnicate', '--json'], env: { NO_COLOR: '1' }, io: out.io });
    expect(code).toBe(2);
    expect(out.stdout()).toBe('');
    const printed = JSON.parse(out.stderr()) as { error: unknown };
    expect(printed).toEqual({
      error: errorJson(new UsageError("unknown command 'frobnicate'", { hint: 'see `notarize --help`' })),
    });
  });
});

describe('which runs print their error as JSON', () => {
  async function run(argv: string[]) {
    const out = bufferIO();
    const code = await main({ argv, env: { NO_COLOR: '1', NOTARIZE_CONFIG_DIR: '/nonexistent/notarize' }, io: out.io });
    return { code, stderr: out.stderr() };
  }
  const missing = '/nonexistent/notarize-missing.txt';

  it('--output json is --json: its error is a JSON line, as --json is, once parsed or when the parse fails', async () => {
    // It printed the error as text: a script that chose --output json had nothing to parse.
    for (const argv of [
      ['hash', missing, '--json'],
      ['verify', missing, '--output', 'json'],
      ['verify', missing, '--output=json'],
      ['verify', missing, '--output', 'json', '--bogus'],
    ]) {
      const { code, stderr } = await run(argv);
      expect(code, argv.join(' ')).toBe(2);
      const lines = stderr.trim().split('\n');
      expect(() => JSON.parse(lines.at(-1)!) as unknown, `${argv.join(' ')}: ${stderr}`).not.toThrow();
      expect(JSON.parse(lines.at(-1)!)).toMatchObject({ error: { exitCode: 2 } });
    }
  });

  it("a flag refused by the command's own checks is JSON with --output json; receipt's --output is a file", async () => {
    // `-j 0` failed before the command chose its output: a line of text.
    const refused = await run(['register', missing, '--output', 'json', '-j', '0']);
    expect(refused.code).toBe(2);
    expect(JSON.parse(refused.stderr)).toMatchObject({ error: { code: 'usage', exitCode: 2 } });
    // receipt --output <file>: a file named json, not a format.
    const receipt = await run(['receipt', 'ab'.repeat(32), '--output', 'json', '--bogus']);
    expect(receipt.code).toBe(2);
    expect(receipt.stderr).toMatch(/^notarize: unknown option '--bogus'/);
  });

  it('a --json or --verbose after `--` is a file name: the error stays text, with no stack', async () => {
    for (const word of ['--json', '--verbose']) {
      const { code, stderr } = await run(['hash', '--', word, missing]);
      expect(code).toBe(2);
      expect(stderr).toContain(`notarize: ${word}: no such file or directory`);
      expect(stderr).toMatch(/^notarize: 2 of 2 files could not be read$/m);
      expect(stderr).not.toContain('{"error"');
      expect(stderr).not.toMatch(/^\s+at /m);
    }
  });
});

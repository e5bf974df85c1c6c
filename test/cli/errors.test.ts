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

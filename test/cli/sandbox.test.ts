/**
 * runSandbox in process, stopped by a promise instead of a signal: what it
 * hands over once it listens (its URL and key, as data), that it serves,
 * and what it says when it stops. (Signals: test/cli/signals.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { runSandbox, tryLine } from '../../src/commands/sandbox.js';
import { parseBaseUrl } from '../../src/settings.js';
import { present, type ValueResult } from '../../src/output/present.js';
import { bufferIO } from '../helpers/io.js';

describe('runSandbox', () => {
  it('listens, hands over its URL and key, serves, and stops when told', async () => {
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    let listening: ValueResult | undefined;
    let status: number | undefined;
    const run = runSandbox({
      port: 0,
      host: '127.0.0.1',
      faults: 'active:status=503',
      envFaults: undefined,
      envApiKey: 'sandbox_key_for_this_test',
      stopped,
      onListening: (result) => {
        listening = result;
        const { url } = result.json as { url: string };
        void fetch(`${url}/api/v2/payment/subscription/active`).then((answer) => {
          status = answer.status;
          stop();
        });
      },
    });
    const result = await run;
    expect(status).toBe(503);
    const { url, apiKey } = listening?.json as { url: string; apiKey: string };
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(apiKey).toBe('sandbox_key_for_this_test');
    expect(result).toEqual({ kind: 'value', info: ['sandbox stopped'] });

    const out = bufferIO();
    await present({ io: out.io, env: {}, format: 'table' }, listening!);
    expect(out.stdout()).toBe(`notarize sandbox listening on ${url}\nAPI key: ${apiKey}\n`);
    expect(out.stderr()).toBe(
      `try: NOTARIZE_BASE_URL=${url} NOTARIZE_API_KEY=<the key> notarize register <file>\ninjecting 1 fault rule(s)\n`,
    );
  });

  it('its try line names a base URL notarize accepts: the loopback one of a sandbox on every address', () => {
    // A pure function of the URL: no test listens anywhere but 127.0.0.1.
    expect(tryLine('http://0.0.0.0:8787')).toBe(
      'try: NOTARIZE_BASE_URL=http://127.0.0.1:8787 NOTARIZE_API_KEY=<the key> notarize register <file>',
    );
    expect(tryLine('http://[::]:8787')).toBe(
      'try: NOTARIZE_BASE_URL=http://[::1]:8787 NOTARIZE_API_KEY=<the key> notarize register <file>',
    );
    expect(tryLine('http://[::1]:8787')).toMatch(/^try: NOTARIZE_BASE_URL=http:\/\/\[::1\]:8787 /);
    // Another address: notarize refuses plain http there (parseBaseUrl), and says so rather than suggest it.
    expect(tryLine('http://192.0.2.7:8787')).toBe(
      'notarize sends credentials over plain http to a loopback address only: this sandbox, on 192.0.2.7, is for other clients',
    );
    expect(() => parseBaseUrl('http://192.0.2.7:8787')).toThrow(/plain http/);
    expect(parseBaseUrl('http://127.0.0.1:8787')).toBe('http://127.0.0.1:8787');
  });

  it('an invalid fault rule is a usage error before anything listens', async () => {
    const run = runSandbox({
      port: 0,
      host: '127.0.0.1',
      envFaults: 'nonsense',
      envApiKey: undefined,
      onListening: () => {
        throw new Error('must not listen');
      },
    });
    await expect(run).rejects.toMatchObject({
      exitCode: 2,
      hint: 'see `notarize sandbox --help` for the fault syntax',
    });
  });
});

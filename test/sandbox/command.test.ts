/**
 * `notarize sandbox`, the command: it prints where it listens, serves the
 * CLI, and ends well on SIGTERM and SIGINT. Spawned: the signals are the point.
 */
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { type Bed, useBed } from '../helpers/bed.js';
import { spawnCli, STACK_LINE } from '../helpers/cli.js';

let bed: Bed;
useBed((created) => (bed = created));

describe('notarize sandbox', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`prints {"url","apiKey"} on its first line, serves a login, and exits 0 on ${signal}`, async () => {
      const sandbox = spawnCli(
        ['sandbox', '--port', '0', '--json'],
        { NOTARIZE_CONFIG_DIR: bed.storeDir },
        { noBaseUrlCheck: true, timeoutMs: 15_000 },
      );
      try {
        const first = JSON.parse(await sandbox.firstLine) as { url: string; apiKey: string };
        expect(Object.keys(first).sort()).toEqual(['apiKey', 'url']);
        expect(first.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
        expect(first.apiKey).not.toBe('');

        const answer = await request(`${first.url}/api/v2/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ apiKey: first.apiKey }),
          signal: AbortSignal.timeout(5000),
        });
        const text = await answer.body.text();
        expect(answer.statusCode).toBe(200);
        const { token } = JSON.parse(text) as { token: string };
        bed.addSecret(token);
        expect(token.split('.')).toHaveLength(3);

        if (signal === 'SIGTERM') {
          // The CLI itself works against it.
          const login = await bed.run(['login', '--api-key-stdin'], {
            input: first.apiKey,
            env: { NOTARIZE_BASE_URL: first.url },
          });
          expect(login.code, login.stderr).toBe(0);
          expect(login.stderr).toContain(`logged in to ${first.url}`);
        }
      } finally {
        sandbox.child.kill(signal);
      }
      const exited = await sandbox.done;
      expect(exited.signal).toBeNull();
      expect(exited.code, exited.stderr).toBe(0);
      expect(exited.stdout.trimEnd().split('\n')).toHaveLength(1);
      expect(exited.stderr).toMatch(/sandbox stopped/);
      expect(exited.stderr).not.toMatch(STACK_LINE);
    });
  }
});

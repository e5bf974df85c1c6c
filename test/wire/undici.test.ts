/**
 * src/api/undici.ts loads undici's Agent, ProxyAgent and dispatcher methods
 * from their own modules, not from its index (start-up time). Those paths are
 * undici's layout, not its API: these tests fail when an upgrade moves them,
 * and show the pieces work in a process where undici's index never loaded.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as undici from 'undici';
import { describe, expect, it } from 'vitest';
import { Agent, Pool, ProxyAgent } from '../../src/api/undici.js';
import { DIST, describeRun, runProcess } from '../helpers/cli.js';
import { startLocalServer } from '../helpers/local-server.js';

describe('the undici pieces the client loads', () => {
  it('are the classes undici exports', () => {
    expect(Agent).toBe(undici.Agent);
    expect(ProxyAgent).toBe(undici.ProxyAgent);
    expect(Pool).toBe(undici.Pool);
  });

  it("work in a process that never loads undici's index, and keep it out", async () => {
    const server = await startLocalServer();
    try {
      server.handle((req, res) =>
        res.writeHead(200, { 'content-type': 'text/plain' }).end(`got ${req.method} ${req.url}`),
      );
      const module = JSON.stringify(join(DIST, 'api', 'undici.js'));
      const code = `
        import { createRequire } from 'node:module';
        const { Agent, ProxyAgent } = await import(${module});
        const agent = new Agent();
        const answer = await agent.request({ origin: ${JSON.stringify(server.url)}, path: '/a?b=1', method: 'GET' });
        const text = await answer.body.text();
        await agent.close();
        const loaded = Object.keys(createRequire(import.meta.url).cache).filter((f) => f.includes('/undici/'));
        console.log(JSON.stringify({ status: answer.statusCode, text, connect: typeof ProxyAgent.prototype.connect,
          index: loaded.some((f) => f.endsWith('/undici/index.js')), fetch: loaded.some((f) => f.includes('/lib/web/')) }));`;
      const run = await runProcess(process.execPath, ['--input-type=module', '-e', code]);
      expect(run.code, describeRun(run)).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual({
        status: 200,
        text: 'got GET /a?b=1',
        connect: 'function',
        index: false,
        fetch: false,
      });
    } finally {
      await server.close();
    }
  });

  it('are all of undici the bundle holds: no fetch, WebSocket, cache store or mock', () => {
    const bundle = join(DIST, 'bundle');
    const regions = readdirSync(bundle)
      .filter((name) => name.endsWith('.js'))
      .flatMap((name) => readFileSync(join(bundle, name), 'utf8').match(/^\/\/ node_modules\/undici\/\S+/gm) ?? []);
    expect(regions).toContain('// node_modules/undici/lib/dispatcher/agent.js');
    // The body mixin's helpers (lib/web/fetch/body.js...) come with `request`; fetch itself does not.
    const unwanted =
      /undici\/index\.js|\/lib\/(web\/(fetch\/index|websocket|eventsource|cache)|cache|mock|interceptor)\b/;
    expect(regions.filter((region) => unwanted.test(region))).toEqual([]);
  });
});

/**
 * HTTP_PROXY / NO_PROXY through a local forward proxy that counts what it
 * forwards (src/api/dispatcher.ts switches to undici's EnvHttpProxyAgent
 * when a proxy variable is set).
 */
import { describe, expect, it } from 'vitest';
import { type Bed, useBed } from '../helpers/bed.js';
import { describeRun } from '../helpers/cli.js';
import { parseResults } from '../helpers/results.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

async function threeDocuments(b: Bed, tag: string): Promise<string[]> {
  const names = ['p1.txt', 'p2.txt', 'p3.txt'];
  for (const name of names) await b.write(name, `${tag} ${name}\n`);
  return names;
}

describe('the proxy variables', () => {
  it.each(['HTTP_PROXY', 'http_proxy'])('%s: every request goes through the proxy', async (variable) => {
    const proxy = await bed.forwardProxy();
    const names = await threeDocuments(bed, variable);
    const run = await bed.run(['register', ...names, '--json'], { env: { [variable]: proxy.url } });
    expect(run.code, describeRun(run)).toBe(0);
    expect(parseResults(run.stdout).map((r) => r.status)).toEqual(['registered', 'registered', 'registered']);

    // Everything the sandbox received came through the proxy, and nothing else did.
    const seen = proxy.exchanges.map((r) => `${r.method} ${r.url}`).sort();
    const received = bed.sandbox.calls.map((c) => `${c.method} ${bed.url}${c.path}`).sort();
    expect(seen).toEqual(received);
    expect(proxy.exchanges.filter((r) => r.url.includes('/forfait'))).toHaveLength(3);
    expect(proxy.exchanges.filter((r) => r.url.includes('/api/v2/registration/?subscription=true'))).toHaveLength(3);
    expect(proxy.exchanges.every((r) => r.status === 200)).toBe(true);
    // undici reaches an http:// origin through a CONNECT tunnel or with absolute-form requests; either is a proxy.
    for (const tunnel of proxy.tunnels) expect(tunnel).toBe(new URL(bed.url).host);
  });

  it('NO_PROXY=127.0.0.1: the proxy sees nothing, the sandbox everything', async () => {
    const proxy = await bed.forwardProxy();
    const names = await threeDocuments(bed, 'no proxy');
    const run = await bed.run(['register', ...names, '--json'], {
      env: { HTTP_PROXY: proxy.url, NO_PROXY: '127.0.0.1' },
    });
    expect(run.code, describeRun(run)).toBe(0);
    expect(proxy.exchanges).toEqual([]);
    expect(proxy.tunnels).toEqual([]);
    expect(bed.calls('request')).toBe(3);
    expect(bed.calls('forfait')).toBe(3);
  });

  it('a proxy that is down makes the run fail as transient (4): the variable is really used', async () => {
    const proxy = await bed.forwardProxy();
    const down = proxy.url;
    await proxy.close();
    const names = await threeDocuments(bed, 'proxy down');
    const run = await bed.run(['register', ...names, '--retries', '0', '--json'], { env: { HTTP_PROXY: down } });
    expect(run.code, describeRun(run)).toBe(4);
    expect(bed.sandbox.calls).toEqual([]);
  });
});

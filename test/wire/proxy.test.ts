/**
 * Proxies and loopback (src/api/dispatcher.ts, src/api/proxy-env.ts): a
 * loopback base URL is never reached through a proxy, whatever the proxy
 * variables say, so a token sent over plain http never crosses one; other
 * hosts go through the proxy their scheme's variable names; a proxy's own
 * failures (407, a refused tunnel, a malformed URL) are reported as such,
 * naming the variable and never quoting it.
 *
 * Only 127.0.0.0/8 is ever contacted: the recording proxy listens on
 * 127.0.0.3, and for a non-loopback base URL (`https://notarize.test`) it
 * answers the CONNECT itself (403, or 407) and never connects out.
 */
import { describe, expect, it } from 'vitest';
import { exemptByNoProxy, proxyRoute, proxySecrets } from '../../src/api/proxy-env.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { describeRun } from '../helpers/cli.js';
import { parseResults } from '../helpers/results.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

const ELSEWHERE = 'https://notarize.test';
const PROXY_HOST = '127.0.0.3';

/** Two documents' absolute paths (runMain runs in this process's directory). */
async function twoDocuments(tag: string): Promise<string[]> {
  return Promise.all(['p1.txt', 'p2.txt'].map((name) => bed.file(name, `${tag} ${name}\n`)));
}

describe('a loopback base URL is never reached through a proxy', () => {
  it.each(['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy'])(
    '%s set: the proxy receives nothing, the sandbox everything (key and token never cross it)',
    async (variable) => {
      const proxy = await bed.forwardProxy({ host: PROXY_HOST });
      const names = await twoDocuments(variable);
      const run = await bed.main(['register', ...names, '--json'], { env: { [variable]: proxy.url } });
      expect(run.code, describeRun(run)).toBe(0);
      expect(parseResults(run.stdout).map((r) => r.status)).toEqual(['registered', 'registered']);
      expect(proxy.exchanges).toEqual([]);
      expect(proxy.tunnels).toEqual([]);
      expect(proxy.refused).toEqual([]);
      expect(bed.calls('login')).toBe(1);
      expect(bed.calls('forfait')).toBe(2);
    },
  );

  it('the same in a real process (the variables read from its environment), with every proxy variable set', async () => {
    const proxy = await bed.forwardProxy({ host: PROXY_HOST });
    const names = await twoDocuments('spawned');
    const run = await bed.run(['register', ...names, '--json'], {
      env: { HTTP_PROXY: proxy.url, HTTPS_PROXY: proxy.url, http_proxy: proxy.url, https_proxy: proxy.url },
    });
    expect(run.code, describeRun(run)).toBe(0);
    expect(proxy.exchanges).toEqual([]);
    expect(proxy.tunnels).toEqual([]);
    expect(bed.calls('forfait')).toBe(2);
  });

  it('a proxy that is down, or wants credentials, does not matter to a loopback service', async () => {
    const down = await bed.forwardProxy({ host: PROXY_HOST });
    const downUrl = down.url;
    await down.close();
    const wanting = await bed.forwardProxy({ host: PROXY_HOST, refuseWith: 407 });
    const names = await twoDocuments('down');
    const run = await bed.main(['register', ...names, '--retries', '0'], {
      env: { HTTP_PROXY: downUrl, HTTPS_PROXY: wanting.url },
    });
    expect(run.code, describeRun(run)).toBe(0);
    expect(wanting.tunnels).toEqual([]);
    expect(wanting.refused).toEqual([]);
  });

  it('http://foo.localhost is not loopback: refused as a plain-http base URL (exit 2), nothing sent', async () => {
    const port = new URL(bed.url).port;
    for (const base of [`http://foo.localhost:${port}`, `http://127.0.0.1.localhost:${port}`]) {
      const names = await twoDocuments(base);
      const run = await bed.main(['register', ...names], { env: { NOTARIZE_BASE_URL: base }, noBaseUrlCheck: true });
      expect(run.code, describeRun(run)).toBe(2);
      expect(run.stderr).toContain('invalid base URL: plain http to');
    }
    expect(bed.sandbox.calls).toEqual([]);
  });
});

describe('a non-loopback base URL goes through the proxy', () => {
  it.each([
    ['HTTPS_PROXY', 'HTTPS_PROXY'],
    ['https_proxy', 'https_proxy'],
    // HTTPS_PROXY unset: the http one serves https too, as in undici and curl.
    ['HTTP_PROXY', 'HTTP_PROXY'],
  ])('%s: a CONNECT for notarize.test:443 reaches the proxy; its refusal is named, not a timeout', async (variable) => {
    const proxy = await bed.forwardProxy({ host: PROXY_HOST });
    const names = await twoDocuments(variable);
    const run = await bed.main(['register', names[0]!, '--retries', '0'], {
      env: { NOTARIZE_BASE_URL: ELSEWHERE, [variable]: proxy.url },
      noBaseUrlCheck: true,
    });
    expect(run.code, describeRun(run)).toBe(4);
    expect(proxy.tunnels).toEqual(['notarize.test:443']);
    expect(run.stderr).toContain(`the proxy in ${variable} answered 403 to CONNECT notarize.test`);
    expect(run.stderr).not.toContain('timed out');
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('lowercase wins over uppercase, as undici reads them', async () => {
    const used = await bed.forwardProxy({ host: PROXY_HOST });
    const ignored = await bed.forwardProxy({ host: '127.0.0.2' });
    const names = await twoDocuments('case');
    const run = await bed.main(['register', names[0]!, '--retries', '0'], {
      env: { NOTARIZE_BASE_URL: ELSEWHERE, https_proxy: used.url, HTTPS_PROXY: ignored.url },
      noBaseUrlCheck: true,
    });
    expect(run.code, describeRun(run)).toBe(4);
    expect(used.tunnels).toEqual(['notarize.test:443']);
    expect(ignored.tunnels).toEqual([]);
  });

  it('NO_PROXY is honoured for non-loopback hosts (decided without connecting anywhere)', () => {
    const proxy = 'http://127.0.0.3:3128';
    const route = (env: NodeJS.ProcessEnv) => proxyRoute({ HTTPS_PROXY: proxy, ...env }, ELSEWHERE)?.variable;
    expect(route({})).toBe('HTTPS_PROXY');
    expect(route({ NO_PROXY: 'notarize.test' })).toBeUndefined();
    expect(route({ no_proxy: '.test' })).toBeUndefined();
    expect(route({ NO_PROXY: '*.test' })).toBeUndefined();
    expect(route({ NO_PROXY: '*' })).toBeUndefined();
    expect(route({ NO_PROXY: 'notarize.test:443' })).toBeUndefined();
    expect(route({ NO_PROXY: 'notarize.test:8443' })).toBe('HTTPS_PROXY');
    expect(route({ NO_PROXY: 'other.test, example.com' })).toBe('HTTPS_PROXY');
    expect(route({ NO_PROXY: 'xnotarize.test' })).toBe('HTTPS_PROXY');
    expect(exemptByNoProxy({ NO_PROXY: '[::1]' }, new URL('https://[::1]:8443'))).toBe(true);
    // A no_proxy with no entry is unset, as an empty proxy variable is: it does not hide NO_PROXY.
    for (const none of ['', ' ', '\t', ' , '])
      expect(route({ no_proxy: none, NO_PROXY: 'notarize.test' })).toBeUndefined();
    expect(route({ no_proxy: 'other.test', NO_PROXY: 'notarize.test' })).toBe('HTTPS_PROXY');
    // A final dot names the same host, on either side.
    expect(proxyRoute({ HTTPS_PROXY: proxy, NO_PROXY: 'notarize.test' }, 'https://notarize.test.')).toBeUndefined();
    expect(route({ NO_PROXY: 'notarize.test.' })).toBeUndefined();
    expect(route({ NO_PROXY: '.test.' })).toBeUndefined();
    // Loopback needs no NO_PROXY entry.
    for (const base of ['http://127.0.0.1:9', 'http://127.8.9.10', 'http://localhost:9', 'http://[::1]:9']) {
      expect(proxyRoute({ HTTP_PROXY: proxy, HTTPS_PROXY: proxy }, base)).toBeUndefined();
    }
    // `*.localhost` is an ordinary name: it goes through the proxy.
    expect(proxyRoute({ HTTPS_PROXY: proxy }, 'https://foo.localhost')?.variable).toBe('HTTPS_PROXY');
  });
});

describe('a proxy answering 407', () => {
  it('to CONNECT: exit 3 naming HTTPS_PROXY, one proxy request (no retry), never "timed out"', async () => {
    const proxy = await bed.forwardProxy({ host: PROXY_HOST, refuseWith: 407 });
    const names = await twoDocuments('407');
    const run = await bed.main(['register', names[0]!, '--retries', '3'], {
      env: { NOTARIZE_BASE_URL: ELSEWHERE, HTTPS_PROXY: proxy.url, NOTARIZE_RETRY_DELAY_MS: '1' },
      noBaseUrlCheck: true,
    });
    expect(run.code, describeRun(run)).toBe(3);
    expect(proxy.tunnels).toEqual(['notarize.test:443']);
    expect(run.stderr).toContain('the proxy in HTTPS_PROXY answered 407');
    expect(run.stderr).toContain('proxy authentication required');
    expect(run.stderr).not.toContain('timed out');
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    // The proxy refused, not the key: the hint names the proxy's variable, not NOTARIZE_API_KEY.
    expect(run.stderr).not.toMatch(/NOTARIZE_API_KEY/);
  });

  it('names HTTP_PROXY when that is the one used, and never prints the password it holds', async () => {
    const proxy = await bed.forwardProxy({ host: PROXY_HOST, refuseWith: 407 });
    const password = 'pr0xy-s3cret-passw0rd';
    bed.addSecret(password);
    const withCredentials = proxy.url.replace('http://', `http://ci-user:${password}@`);
    const names = await twoDocuments('407 http');
    for (const json of [false, true]) {
      const run = await bed.main(['register', names[0]!, ...(json ? ['--json'] : []), '--verbose'], {
        env: { NOTARIZE_BASE_URL: ELSEWHERE, HTTP_PROXY: withCredentials, NOTARIZE_RETRY_DELAY_MS: '1' },
        noBaseUrlCheck: true,
        noProxyCheck: true,
      });
      expect(run.code, describeRun(run)).toBe(3);
      expect(run.stderr).toContain('HTTP_PROXY');
      expect(run.stderr).not.toContain('ci-user');
    }
    expect(proxy.tunnels).toEqual(['notarize.test:443', 'notarize.test:443']);
  });
});

describe('a proxy that opens no tunnels', () => {
  it('closing every CONNECT: exit 4 naming the variable, each attempt one CONNECT, nothing sent (undici 7 spun for ever)', async () => {
    const proxy = await bed.forwardProxy({ host: PROXY_HOST, closeTunnels: true });
    const names = await twoDocuments('closed');
    for (const json of [false, true]) {
      const run = await bed.main(['register', names[0]!, '--retries', '2', ...(json ? ['--json'] : [])], {
        env: { NOTARIZE_BASE_URL: ELSEWHERE, HTTPS_PROXY: proxy.url, NOTARIZE_RETRY_DELAY_MS: '1' },
        noBaseUrlCheck: true,
      });
      expect(run.code, describeRun(run)).toBe(4);
      const message =
        'the proxy in HTTPS_PROXY closed the connection to CONNECT notarize.test before the tunnel opened';
      expect(run.stderr).toContain(json ? message.replaceAll('"', '\\"') : message);
      expect(run.stderr).not.toContain('timed out');
    }
    // The login's three attempts, each run: retried like any request the service never saw.
    expect(proxy.tunnels).toEqual(Array(6).fill('notarize.test:443'));
    expect(bed.calls('login')).toBe(0);
  });
});

describe('a proxy that never answers', () => {
  it("a CONNECT left unanswered: each attempt ends at --timeout (exit 4), not at undici's 300 s", async () => {
    const proxy = await bed.forwardProxy({ host: PROXY_HOST, silentTunnels: true });
    const names = await twoDocuments('silent');
    const run = await bed.main(['register', names[0]!, '--timeout', '500', '--retries', '1'], {
      env: { NOTARIZE_BASE_URL: ELSEWHERE, HTTPS_PROXY: proxy.url, NOTARIZE_RETRY_DELAY_MS: '1' },
      noBaseUrlCheck: true,
    });
    expect(run.code, describeRun(run)).toBe(4);
    // Two attempts of 500 ms (undici's own bound, 300 s an attempt, would outlast the test's time limit).
    expect(proxy.tunnels).toEqual(['notarize.test:443', 'notarize.test:443']);
    expect(run.stderr).toContain('timed out');
  });
});

describe('a malformed proxy URL', () => {
  it.each([
    ['HTTPS_PROXY', 'proxy.internal:3128'],
    ['https_proxy', 'ci-user:s3cret-proxy-pw@proxy.internal:3128'],
    ['HTTP_PROXY', 'http://ci-user:s3cret-proxy-pw@[not-an-address'],
    ['http_proxy', 'socks4://proxy.internal:1080'],
    ['HTTPS_PROXY', 'http://'],
    // Bad %-escapes, which undici's own decoding turned into "unexpected error", exit 1.
    ['HTTPS_PROXY', 'http://ci-user:s3cret-proxy-pw%ZZ@127.0.0.1:18407'],
    ['HTTPS_PROXY', 'http://ci-user%ZZ:s3cret-proxy-pw@127.0.0.1:18407'],
    ['HTTPS_PROXY', 'http://127.0.0.1:18502/%zz'],
    // undici takes no path, query or fragment: its "invalid url" was "unexpected error", exit 1.
    ['https_proxy', 'http://ci-user:s3cret-proxy-pw@127.0.0.1:18502/proxy'],
    ['HTTPS_PROXY', 'http://127.0.0.1:18502/?s3cret-proxy-pw'],
    ['HTTPS_PROXY', 'http://127.0.0.1:18502/#s3cret-proxy-pw'],
  ])('%s=%s: exit 2 naming the variable, never its value; nothing sent', async (variable, value) => {
    // The whole value is audited unless it is a bare scheme (the hint says how to write one).
    if (value !== 'http://') bed.addSecret(value);
    bed.addSecret('s3cret-proxy-pw');
    bed.addSecret('proxy.internal');
    const names = await twoDocuments(variable);
    const run = await bed.main(['register', names[0]!], {
      env: { NOTARIZE_BASE_URL: ELSEWHERE, [variable]: value },
      noBaseUrlCheck: true,
      noProxyCheck: true,
    });
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).toContain(`${variable} is not a valid proxy URL`);
    expect(run.stderr).not.toContain('Invalid URL');
    expect(run.stderr).not.toContain('ci-user');
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('the same in the built CLI, whose bundler once dropped the %-escape check (exit 1 "unexpected error")', async () => {
    bed.addSecret('s3cret-proxy-pw');
    const names = await twoDocuments('bundled');
    for (const value of ['http://ci-user:s3cret-proxy-pw@127.0.0.1:18502/%zz', 'http://ci-user%ZZ@127.0.0.1:18502']) {
      const run = await bed.run(['register', names[0]!], {
        env: { NOTARIZE_BASE_URL: ELSEWHERE, HTTPS_PROXY: value },
        noBaseUrlCheck: true,
        noProxyCheck: true,
      });
      expect(run.code, describeRun(run)).toBe(2);
      expect(run.stderr).toContain('HTTPS_PROXY is not a valid proxy URL');
    }
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('the variable not used for this service is checked too (a good HTTPS_PROXY, a bad HTTP_PROXY)', async () => {
    const proxy = await bed.forwardProxy({ host: PROXY_HOST });
    const names = await twoDocuments('pair');
    const run = await bed.main(['register', names[0]!], {
      env: { NOTARIZE_BASE_URL: ELSEWHERE, HTTPS_PROXY: proxy.url, HTTP_PROXY: 'not a url' },
      noBaseUrlCheck: true,
      noProxyCheck: true,
    });
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).toContain('HTTP_PROXY is not a valid proxy URL');
    expect(proxy.tunnels).toEqual([]);
    expect(proxy.exchanges).toEqual([]);
  });
});

describe('proxySecrets', () => {
  it('each password once, named by the first variable holding it; a value without a scheme read as http://', () => {
    const url = 'http://bob:shrt@127.0.0.1:9';
    expect(proxySecrets({ HTTPS_PROXY: url, HTTP_PROXY: url, https_proxy: url, http_proxy: url })).toEqual([
      { secret: 'shrt', name: 'the password in https_proxy' },
    ]);
    // Raw and decoded, both scrubbed.
    expect(proxySecrets({ HTTPS_PROXY: 'http://bob:p%40ss@127.0.0.1:9' })).toEqual([
      { secret: 'p%40ss', name: 'the password in HTTPS_PROXY' },
      { secret: 'p@ss', name: 'the password in HTTPS_PROXY' },
    ]);
    // curl's form, user:password@host:port, holds a password too; and what a URL parser (proxyRoute's)
    // reads as http://u:pw@host, one slash or none after the scheme.
    for (const value of [
      'bob:hunter2long@127.0.0.1:3128',
      'http:/bob:hunter2long@127.0.0.1:3128',
      'HTTP:bob:hunter2long@127.0.0.1',
    ])
      expect(proxySecrets({ HTTPS_PROXY: value }), value).toEqual([
        { secret: 'hunter2long', name: 'the password in HTTPS_PROXY' },
      ]);
    // No password: nothing to scrub, and nothing to warn about.
    for (const value of [
      'proxy',
      '1.2.3.4',
      'http://127.0.0.1:3128',
      'http://bob@127.0.0.1:9',
      'http://bob:@127.0.0.1:9',
    ])
      expect(proxySecrets({ HTTPS_PROXY: value }), value).toEqual([]);
    // Unreadable with a `@`: given whole.
    expect(proxySecrets({ HTTPS_PROXY: 'http://b ob:pw@[bad' })).toEqual([
      { secret: 'http://b ob:pw@[bad', name: 'HTTPS_PROXY' },
    ]);
  });
});

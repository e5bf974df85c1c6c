/**
 * TLS certificates (src/api/http.ts certificateRefused, src/api/dispatcher.ts
 * withoutIpServername): a certificate Node will not trust is reported as
 * such, with what to do (NODE_EXTRA_CA_CERTS), never as "try again later";
 * an https proxy given by IP is reached without Node's DEP0123 warning on
 * every run, and its certificate is still checked against that IP.
 *
 * The servers here listen on 127.0.0.3 and 127.0.0.4 with the test
 * certificate of test/fixtures/tls (IP:127.0.0.3 only); the proxy answers
 * every CONNECT 403 itself and never connects out.
 */
import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { type Bed, useBed } from '../helpers/bed.js';
import { describeRun, REPO_ROOT } from '../helpers/cli.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

const CERT = `${REPO_ROOT}test/fixtures/tls/cert.pem`;
const tls = { cert: readFileSync(CERT), key: readFileSync(`${REPO_ROOT}test/fixtures/tls/key.pem`) };

const servers: NetServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((done) => server.close(done))));
});

async function listen(server: NetServer, host: string): Promise<string> {
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, host, done));
  return `${host}:${(server.address() as AddressInfo).port}`;
}

/** An https proxy that answers every CONNECT 403 (a policy refusal) over TLS; the targets it was asked for. */
async function httpsProxy(host: string): Promise<{ url: string; connects: string[] }> {
  const connects: string[] = [];
  const server = createTlsServer(tls, (socket) => {
    socket.on('error', () => {});
    socket.once('data', (head: Buffer) => {
      connects.push(/^CONNECT (\S+)/.exec(head.toString('latin1'))?.[1] ?? '?');
      socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
    });
  });
  return { url: `https://${await listen(server, host)}`, connects };
}

describe('a certificate Node does not trust', () => {
  it("the service's own (no CA given): exit 4 naming the certificate and NODE_EXTRA_CA_CERTS; nothing reaches it", async () => {
    const requests: string[] = [];
    const server = createHttpsServer(tls, (req, res) => {
      requests.push(`${req.method} ${req.url}`);
      res.end();
    });
    const origin = await listen(server, '127.0.0.3');
    const document = await bed.file('doc.txt', 'tls\n');
    const run = await bed.main(['register', document, '--retries', '0'], {
      env: { NOTARIZE_BASE_URL: `https://${origin}` },
      noBaseUrlCheck: true,
    });
    expect(run.code, describeRun(run)).toBe(4);
    expect(run.stderr).toContain(
      `the certificate of ${origin} was not trusted (DEPTH_ZERO_SELF_SIGNED_CERT), so the request was not sent`,
    );
    expect(run.stderr).toContain('NODE_EXTRA_CA_CERTS');
    expect(run.stderr).not.toContain('try again later');
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(requests).toEqual([]);
  });

  it("an https proxy's: the same, naming the proxy's variable", async () => {
    const proxy = await httpsProxy('127.0.0.3');
    const document = await bed.file('doc.txt', 'tls proxy\n');
    const run = await bed.main(['register', document, '--retries', '0'], {
      env: { NOTARIZE_BASE_URL: 'https://notarize.test', HTTPS_PROXY: proxy.url },
      noBaseUrlCheck: true,
      noProxyCheck: true,
    });
    expect(run.code, describeRun(run)).toBe(4);
    expect(run.stderr).toContain(
      "a certificate (notarize.test's or the proxy's in HTTPS_PROXY) was not trusted (DEPTH_ZERO_SELF_SIGNED_CERT)",
    );
    expect(run.stderr).toContain('NODE_EXTRA_CA_CERTS');
    expect(proxy.connects).toEqual([]);
  });
});

describe('a handshake that goes wrong (src/api/dispatcher.ts, src/api/http.ts notTls)', () => {
  it('https:// to a server of plain http: exit 4 saying to check the scheme, not "try again later"; no request reaches it', async () => {
    const requests: string[] = [];
    const server = createHttpServer((req, res) => {
      requests.push(`${req.method} ${req.url}`);
      res.end('{}');
    });
    const origin = await listen(server, '127.0.0.3');
    const document = await bed.file('doc.txt', 'not tls\n');
    const run = await bed.main(['register', document, '--retries', '0'], {
      env: { NOTARIZE_BASE_URL: `https://${origin}` },
      noBaseUrlCheck: true,
    });
    expect(run.code, describeRun(run)).toBe(4);
    expect(run.stderr).toContain(`${origin} did not answer in TLS, so the request was not sent`);
    expect(run.stderr).toContain('a server of plain http is http://, not https://');
    expect(run.stderr).not.toContain('try again later');
    expect(requests).toEqual([]);
  });

  it("a server that never answers the TLS hello: each attempt ends at --timeout, not at undici's own 10 s", async () => {
    const hellos: number[] = [];
    const server = createNetServer((socket) => {
      socket.on('error', () => {});
      socket.once('data', (hello: Buffer) => hellos.push(hello.length));
    });
    const origin = await listen(server, '127.0.0.3');
    const document = await bed.file('doc.txt', 'silent tls\n');
    const started = performance.now();
    const run = await bed.main(['register', document, '--retries', '1', '--timeout', '300'], {
      env: { NOTARIZE_BASE_URL: `https://${origin}`, NOTARIZE_RETRY_DELAY_MS: '0' },
      noBaseUrlCheck: true,
    });
    expect(run.code, describeRun(run)).toBe(4);
    expect(run.stderr).toContain('timed out');
    expect(hellos).toHaveLength(2);
    // Two attempts of about 0.3 s (undici's connect timer fires up to a second late); 10 s each before.
    expect(performance.now() - started).toBeLessThan(8000);
  });
});

describe('an https proxy given by IP, its CA in NODE_EXTRA_CA_CERTS (the built CLI: the warning is per process)', () => {
  it('is reached and its certificate accepted for that IP, without DEP0123 on stderr', async () => {
    const proxy = await httpsProxy('127.0.0.3');
    const document = await bed.file('doc.txt', 'tls proxy by IP\n');
    const run = await bed.run(['register', document, '--retries', '0'], {
      env: { NOTARIZE_BASE_URL: 'https://notarize.test', HTTPS_PROXY: proxy.url, NODE_EXTRA_CA_CERTS: CERT },
      noBaseUrlCheck: true,
      noProxyCheck: true,
    });
    expect(run.code, describeRun(run)).toBe(4);
    // The tunnel was asked for: the TLS handshake with the proxy succeeded.
    expect(proxy.connects).toEqual(['notarize.test:443']);
    expect(run.stderr).toContain('the proxy in HTTPS_PROXY answered 403 to CONNECT notarize.test');
    expect(run.stderr).not.toMatch(/DEP0123|DeprecationWarning/);
  });

  it('a certificate for another IP is still refused (the identity is checked without a server name)', async () => {
    const proxy = await httpsProxy('127.0.0.4');
    const document = await bed.file('doc.txt', 'tls proxy, wrong IP\n');
    const run = await bed.run(['register', document, '--retries', '0'], {
      env: { NOTARIZE_BASE_URL: 'https://notarize.test', HTTPS_PROXY: proxy.url, NODE_EXTRA_CA_CERTS: CERT },
      noBaseUrlCheck: true,
      noProxyCheck: true,
    });
    expect(run.code, describeRun(run)).toBe(4);
    expect(run.stderr).toContain('was not trusted (ERR_TLS_CERT_ALTNAME_INVALID)');
    expect(proxy.connects).toEqual([]);
    expect(run.stderr).not.toMatch(/DEP0123|DeprecationWarning/);
  });
});

import { Agent } from 'undici';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HttpTransport, MAX_ANSWER_BYTES, parseRetryAfter, type TransportOptions } from '../../src/api/http.js';
import {
  AuthError,
  ProtocolError,
  ServiceRefusedError,
  TransientError,
  UnreadableAnswerError,
} from '../../src/errors.js';
import { rejection } from '../helpers/catch.js';
import { closedPort, startLocalServer, type LocalServer } from '../helpers/local-server.js';

const TOKEN = 'eyJhbGciOiJIUzI1NiJ9.eyJ1c2VySWQiOjF9.secret-signature-part';
const USER_AGENT = 'notarize/0.1.0 (unit test)';

let server: LocalServer;
let agent: Agent;
let logged: string[];

beforeAll(async () => {
  server = await startLocalServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  agent = new Agent();
  logged = [];
  server.received.length = 0;
});
afterEach(async () => {
  await agent.destroy();
});

function transport(overrides: Partial<TransportOptions> = {}): HttpTransport {
  return new HttpTransport({
    baseUrl: server.url,
    timeoutMs: 5000,
    userAgent: USER_AGENT,
    dispatcher: agent,
    log: (line) => logged.push(line),
    ...overrides,
  });
}

/** Makes the server answer every request with this status, body and headers. */
function answerWith(status: number, body: string, headers: Record<string, string> = {}): void {
  server.handle((_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body);
  });
}

describe('HttpTransport: 2xx', () => {
  it('an answer that is not UTF-8 is taken all the same (a record is the only copy), each bad byte as U+FFFD, and said', async () => {
    server.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(Buffer.concat([Buffer.from('{"description":"caf'), Buffer.from([0xe9]), Buffer.from('"}')]));
    });
    const warnings: string[] = [];
    const answer = await transport({ warn: (line) => warnings.push(line) }).send({
      method: 'GET',
      path: '/api/v2/x',
      token: TOKEN,
    });
    expect(answer).toEqual({ status: 200, text: '{"description":"caf\ufffd"}' });
    expect(warnings).toEqual([
      expect.stringMatching(/^GET \S+ answered 200 with bytes that are not UTF-8, as JSON must be: read as U\+FFFD, /),
    ]);
    // A refusal's body so spelt still gives the service's words.
    server.handle((_req, res) =>
      res
        .writeHead(400)
        .end(
          Buffer.from([0x7b, 0x22, 0x6d, 0x65, 0x73, 0x73, 0x61, 0x67, 0x65, 0x22, 0x3a, 0x22, 0x62, 0xff, 0x22, 0x7d]),
        ),
    );
    const refused = await rejection(
      transport({ warn: (line) => warnings.push(line) }).send({ method: 'GET', path: '/api/v2/x', token: TOKEN }),
    );
    expect((refused as Error).message).toMatch(/answered 400: b\ufffd$/);
    expect(warnings).toHaveLength(1);
  });

  it('returns the exact text of the answer, spacing and non-ASCII included', async () => {
    const body = ' {"b": 2,  "a": "é ✓"}\n';
    answerWith(200, body);
    const answer = await transport().send({ method: 'GET', path: '/api/v2/payment/subscription/active', token: TOKEN });
    expect(answer).toEqual({ status: 200, text: body });
  });

  it('returns an empty text for a 204', async () => {
    server.handle((_req, res) => res.writeHead(204).end());
    expect(await transport().send({ method: 'PUT', path: '/api/v2/file/x', body: '{}', token: TOKEN })).toEqual({
      status: 204,
      text: '',
    });
  });

  it('sends the body byte for byte with bearer token, JSON content type and user agent', async () => {
    answerWith(200, '{}');
    const body = '{ "sessionId":"1683554257039",\n "custumer":null }';
    await transport().send({ method: 'POST', path: '/api/v2/registration/abc/forfait', body, token: TOKEN });
    expect(server.received).toHaveLength(1);
    const [seen] = server.received;
    expect(seen?.method).toBe('POST');
    expect(seen?.url).toBe('/api/v2/registration/abc/forfait');
    expect(seen?.body).toBe(body);
    expect(seen?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(seen?.headers['content-type']).toBe('application/json');
    expect(seen?.headers['user-agent']).toBe(USER_AGENT);
  });

  it('keeps the slash before the query in the request step path', async () => {
    answerWith(200, '{}');
    await transport().send({
      method: 'POST',
      path: '/api/v2/registration/?subscription=true',
      body: '{}',
      token: TOKEN,
    });
    expect(server.received[0]?.url).toBe('/api/v2/registration/?subscription=true');
  });

  it('sends no authorization header without a token (login)', async () => {
    answerWith(200, '{"token":"t"}');
    await transport().send({ method: 'POST', path: '/api/v2/auth/login', body: '{"apiKey":"k"}' });
    expect(server.received[0]?.headers).not.toHaveProperty('authorization');
    expect(server.received[0]?.headers['user-agent']).toBe(USER_AGENT);
  });
});

describe('HttpTransport: error statuses', () => {
  it.each([401, 403])('maps %i to AuthError, exit 3, with the status', async (status) => {
    answerWith(status, '{"message":"bad token"}');
    const error = await rejection(transport().send({ method: 'GET', path: '/api/v2/x', token: TOKEN }));
    expect(error).toBeInstanceOf(AuthError);
    expect(error).toMatchObject({ exitCode: 3, status });
  });

  it.each([
    [400, '{"message":"description is required"}', 'description is required'],
    [404, '{"message":"no such registration"}', 'no such registration'],
    [409, '{"error":"hash already registered"}', 'hash already registered'],
  ])("maps %i to ServiceRefusedError, exit 1, with the service's message", async (status, body, said) => {
    answerWith(status, body);
    const error = await rejection(transport().send({ method: 'POST', path: '/api/v2/x', body: '{}', token: TOKEN }));
    expect(error).toBeInstanceOf(ServiceRefusedError);
    expect(error).toMatchObject({ exitCode: 1, status });
    expect((error as ServiceRefusedError).message).toContain(said);
    expect((error as ServiceRefusedError).message).toContain(String(status));
  });

  it('maps a 4xx with a non-JSON body to ServiceRefusedError without quoting the body', async () => {
    answerWith(404, '<html>Not Found</html>', { 'content-type': 'text/html' });
    const error = await rejection(transport().send({ method: 'GET', path: '/api/v2/x', token: TOKEN }));
    expect(error).toBeInstanceOf(ServiceRefusedError);
    expect((error as Error).message).not.toContain('<html>');
  });

  it.each([500, 502, 429])('maps %i to TransientError, exit 4', async (status) => {
    answerWith(status, '{"message":"busy"}');
    const error = await rejection(transport().send({ method: 'GET', path: '/api/v2/x', token: TOKEN }));
    expect(error).toBeInstanceOf(TransientError);
    expect(error).toMatchObject({ exitCode: 4, status });
  });

  it('marks a 429 as not processed, and reads its Retry-After', async () => {
    answerWith(429, '{}', { 'retry-after': '7' });
    const error = await rejection(transport().send({ method: 'POST', path: '/api/v2/x', body: '{}', token: TOKEN }));
    expect(error).toBeInstanceOf(TransientError);
    expect(error).toMatchObject({ notProcessed: true, retryAfterSeconds: 7 });
  });

  it('marks a 429 without Retry-After as not processed too', async () => {
    answerWith(429, '{}');
    const error = await rejection(transport().send({ method: 'POST', path: '/api/v2/x', body: '{}', token: TOKEN }));
    expect(error).toMatchObject({ notProcessed: true, retryAfterSeconds: undefined });
  });

  it('marks a 408 (the request not received whole in time) as transient and not processed, not as a refusal', async () => {
    answerWith(408, '{}');
    const error = await rejection(
      transport().send({ method: 'PUT', path: '/api/v2/file/x', body: '{}', token: TOKEN }),
    );
    expect(error).toBeInstanceOf(TransientError);
    expect(error).toMatchObject({ exitCode: 4, status: 408, notProcessed: true });
  });

  it('marks a 503 with Retry-After as not processed', async () => {
    answerWith(503, '', { 'retry-after': '2' });
    const error = await rejection(transport().send({ method: 'POST', path: '/api/v2/x', body: '{}', token: TOKEN }));
    expect(error).toBeInstanceOf(TransientError);
    expect(error).toMatchObject({ status: 503, notProcessed: true, retryAfterSeconds: 2 });
  });

  it('does not mark a 503 with an invalid Retry-After as not processed', async () => {
    answerWith(503, '', { 'retry-after': '1.5' });
    const error = await rejection(transport().send({ method: 'POST', path: '/api/v2/x', body: '{}', token: TOKEN }));
    expect(error).toBeInstanceOf(TransientError);
    expect(error).toMatchObject({ status: 503, notProcessed: false, retryAfterSeconds: undefined });
  });

  it('does not mark a 503 without Retry-After, nor a 500, as not processed: the service may have acted', async () => {
    answerWith(503, '');
    const e503 = await rejection(transport().send({ method: 'POST', path: '/api/v2/x', body: '{}', token: TOKEN }));
    expect(e503).toMatchObject({ status: 503, notProcessed: false });
    answerWith(500, '{"message":"oops"}', { 'retry-after': '1' });
    const e500 = await rejection(transport().send({ method: 'POST', path: '/api/v2/x', body: '{}', token: TOKEN }));
    expect(e500).toBeInstanceOf(TransientError);
    expect(e500).toMatchObject({ status: 500, notProcessed: false });
  });

  it('maps an unexpected status (a redirect, not followed) to ProtocolError, exit 5', async () => {
    answerWith(302, '', { location: 'http://127.0.0.1:1/elsewhere' });
    const error = await rejection(transport().send({ method: 'GET', path: '/api/v2/x', token: TOKEN }));
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).toMatchObject({
      exitCode: 5,
      hint: 'notarize follows no redirect: check the base URL (--base-url, NOTARIZE_BASE_URL or the stored setting)',
    });
    expect(server.received).toHaveLength(1);
  });

  it('maps an odd 4xx (418) to ServiceRefusedError', async () => {
    answerWith(418, '{"message":"I am a teapot"}');
    const error = await rejection(transport().send({ method: 'GET', path: '/api/v2/x' }));
    expect(error).toBeInstanceOf(ServiceRefusedError);
    expect(error).toMatchObject({ status: 418, exitCode: 1 });
    expect((error as Error).message).toContain('I am a teapot');
    expect(server.received).toHaveLength(1);
  });
});

describe('HttpTransport: network failures', () => {
  it('maps a refused connection to TransientError, notProcessed (the request never left)', async () => {
    const port = await closedPort();
    const error = await rejection(
      transport({ baseUrl: `http://127.0.0.1:${port}` }).send({ method: 'POST', path: '/api/v2/x', body: '{}' }),
    );
    expect(error).toBeInstanceOf(TransientError);
    expect(error).toMatchObject({ exitCode: 4, notProcessed: true });
    expect((error as Error).message).toContain('ECONNREFUSED');
  });

  it('maps a server that never answers to a TransientError once timeoutMs passes', async () => {
    server.handle(() => {
      // never answer
    });
    const error = await rejection(
      transport({ timeoutMs: 200 }).send({ method: 'POST', path: '/api/v2/x', body: '{}', token: TOKEN }),
    );
    expect(error).toBeInstanceOf(TransientError);
    expect(error).toMatchObject({ exitCode: 4, notProcessed: false });
    expect((error as Error).message).toContain('timed out');
    expect(server.received).toHaveLength(1);
  });

  it('maps a 200 whose body is cut in the middle to UnreadableAnswerError (exit 5): the service said yes', async () => {
    server.handle((_req, res) => {
      res.writeHead(200, { 'content-length': '1000' });
      res.write('{"hash":');
      setImmediate(() => res.destroy());
    });
    const error = await rejection(transport().send({ method: 'POST', path: '/api/v2/x', body: '{}', token: TOKEN }));
    expect(error).toBeInstanceOf(UnreadableAnswerError);
    expect(error).not.toBeInstanceOf(TransientError);
    expect(error).toMatchObject({ exitCode: 5 });
    expect((error as Error).message).toMatch(/answered 200, but its body could not be read \(it broke off\)/);
  });

  it('maps a 200 whose body stalls past the timeout to UnreadableAnswerError', async () => {
    server.handle((_req, res) => {
      res.writeHead(200, { 'content-length': '1000' });
      res.write('{"hash":');
    });
    const stalled = await rejection(
      transport({ timeoutMs: 300 }).send({ method: 'POST', path: '/api/v2/x', body: '{}', token: TOKEN }),
    );
    expect(stalled).toBeInstanceOf(UnreadableAnswerError);
    expect((stalled as Error).message).toMatch(/\(it stalled\)/);
  });

  describe('content codings: none asked for, those that come all the same undone', () => {
    const RECORD = '{"hash":"x","status":"registered"}';
    const answering = (headers: Record<string, string | string[]>, body: Buffer) =>
      server.handle((req, res) => {
        seen.push(req.headers['accept-encoding']);
        res.writeHead(200, { ...headers, 'content-length': String(body.length) });
        res.end(body);
      });
    const send = () => transport().send({ method: 'POST', path: '/api/v2/x', body: '{}', token: TOKEN });
    let seen: (string | undefined)[] = [];
    beforeEach(() => {
      seen = [];
    });

    it.each([
      ['gzip', gzipSync(RECORD)],
      ['x-gzip', gzipSync(RECORD)],
      ['deflate', deflateSync(RECORD)],
      ['deflate', deflateRawSync(RECORD)],
      ['br', brotliCompressSync(RECORD)],
      ['identity', Buffer.from(RECORD)],
    ])('asks for identity, and reads a body sent %s', async (coding, body) => {
      answering({ 'content-encoding': coding }, body);
      expect((await send()).text).toBe(RECORD);
      expect(seen).toEqual(['identity']);
    });

    it('undoes codings applied one after the other, in one header or several', async () => {
      const twice = brotliCompressSync(gzipSync(RECORD));
      answering({ 'content-encoding': 'gzip, br' }, twice);
      expect((await send()).text).toBe(RECORD);
      answering({ 'content-encoding': ['gzip', 'br'] }, twice);
      expect((await send()).text).toBe(RECORD);
    });

    it('a coding it cannot undo, one that does not decode, or one that decodes past the bound: UnreadableAnswerError', async () => {
      answering({ 'content-encoding': 'compress' }, Buffer.from(RECORD));
      const unknown = await rejection(send());
      expect(unknown).toBeInstanceOf(UnreadableAnswerError);
      expect((unknown as Error).message).toMatch(/encoded as 'compress', which notarize cannot decode$/);
      // Read whole all the same, for a forfait's to be kept aside as it came.
      expect((unknown as UnreadableAnswerError).body).toEqual(Buffer.from(RECORD));
      answering({ 'content-encoding': 'gzip' }, Buffer.from(RECORD));
      const broken = await rejection(send());
      expect(broken).toBeInstanceOf(UnreadableAnswerError);
      expect((broken as Error).message).toMatch(/its body does not decode as 'gzip' says it is$/);
      expect((broken as UnreadableAnswerError).body).toEqual(Buffer.from(RECORD));
      // A bomb: 40 KiB that would decode to 5 MiB.
      answering({ 'content-encoding': 'gzip' }, gzipSync(Buffer.alloc(MAX_ANSWER_BYTES + 1024 * 1024, 0x20)));
      const bomb = await rejection(send());
      expect(bomb).toBeInstanceOf(UnreadableAnswerError);
      expect((bomb as Error).message).toMatch(/its body decoded \('gzip'\) is larger than 4 MiB$/);
    });

    it('passes over a byte order mark before the JSON (RFC 8259 section 8.1)', async () => {
      answering({}, Buffer.from(`\ufeff${RECORD}`));
      expect((await send()).text).toBe(RECORD);
    });
  });

  it('a refusal whose body breaks off is still the refusal its status says', async () => {
    server.handle((_req, res) => {
      res.writeHead(422, { 'content-length': '1000' });
      res.write('{"message":');
      setImmediate(() => res.destroy());
    });
    const error = await rejection(transport().send({ method: 'POST', path: '/api/v2/x', body: '{}', token: TOKEN }));
    expect(error).toBeInstanceOf(ServiceRefusedError);
    expect(error).toMatchObject({ status: 422 });
  });

  it('cuts off an answer bigger than MAX_ANSWER_BYTES with a ProtocolError', async () => {
    server.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(Buffer.alloc(MAX_ANSWER_BYTES + 1, 0x20));
    });
    const error = await rejection(transport().send({ method: 'GET', path: '/api/v2/x', token: TOKEN }));
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).toMatchObject({ exitCode: 5 });
    expect((error as Error).message).toContain('larger than');
  });

  it('accepts an answer of exactly MAX_ANSWER_BYTES', async () => {
    server.handle((_req, res) => {
      res.writeHead(200).end(Buffer.alloc(MAX_ANSWER_BYTES, 0x20));
    });
    const answer = await transport().send({ method: 'GET', path: '/api/v2/x', token: TOKEN });
    expect(answer.text.length).toBe(MAX_ANSWER_BYTES);
  });
});

describe('HttpTransport: a process held past its timeout (SIGSTOP, a paused container)', () => {
  // The server is another process: it answers while this one is held. Once the thread runs again,
  // its timers are due and the answer is in the socket; the answer must win.
  it('reads the answer that came while it was held, rather than give it up as timed out', async () => {
    const server = spawn(
      process.execPath,
      [
        '-e',
        `const s = require('node:http').createServer((req, res) => {
           req.resume();
           req.on('end', () => { console.log('received'); setTimeout(() => res.end('{"record":true}'), 100); });
         });
         s.listen(0, '127.0.0.1', () => console.log(s.address().port));
         setTimeout(() => process.exit(0), 20000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      const lines = createInterface({ input: server.stdout })[Symbol.asyncIterator]();
      const port = Number((await lines.next()).value);
      const sending = transport({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 300 }).send({
        method: 'POST',
        path: '/api/v2/registration/x/forfait',
        body: '{}',
        token: TOKEN,
      });
      expect((await lines.next()).value).toBe('received');
      // Held for 800 ms, past the 300 ms timeout: the answer comes after 100 ms of it.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 800);
      await expect(sending).resolves.toEqual({ status: 200, text: '{"record":true}' });
    } finally {
      server.kill();
    }
  });
});

describe('HttpTransport: log', () => {
  it('logs method, URL and status, never the token or the body', async () => {
    answerWith(201, '{"token":"answer-secret-value"}');
    const body = '{"apiKey":"api-key-secret-value"}';
    await transport().send({ method: 'POST', path: '/api/v2/auth/login', body, token: TOKEN });
    expect(logged).toHaveLength(1);
    const [line] = logged;
    expect(line).toContain('POST');
    expect(line).toContain(`${server.url}/api/v2/auth/login`);
    expect(line).toContain('201');
    expect(line).not.toContain(TOKEN);
    expect(line).not.toContain('secret-signature-part');
    expect(line).not.toContain('api-key-secret-value');
    expect(line).not.toContain('answer-secret-value');
  });

  it('logs an error status the same way', async () => {
    answerWith(401, `{"message":"token ${TOKEN} rejected"}`);
    await rejection(transport().send({ method: 'GET', path: '/api/v2/x', token: TOKEN }));
    expect(logged).toHaveLength(1);
    expect(logged[0]).toContain('GET');
    expect(logged[0]).toContain('401');
    expect(logged[0]).not.toContain(TOKEN);
  });

  it('logs a network failure without the token', async () => {
    const port = await closedPort();
    await rejection(
      transport({ baseUrl: `http://127.0.0.1:${port}` }).send({ method: 'GET', path: '/api/v2/y', token: TOKEN }),
    );
    expect(logged).toHaveLength(1);
    expect(logged[0]).toContain(`http://127.0.0.1:${port}/api/v2/y`);
    expect(logged[0]).toContain('failed');
    expect(logged[0]).not.toContain(TOKEN);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.UTC(2024, 0, 1, 12, 0, 0);

  it('reads delta-seconds', () => {
    expect(parseRetryAfter('120', now)).toBe(120);
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter(' 5 ', now)).toBe(5);
  });

  it('reads an HTTP date as seconds from now, rounded up', () => {
    expect(parseRetryAfter(new Date(now + 90_000).toUTCString(), now)).toBe(90);
    expect(parseRetryAfter('Mon, 01 Jan 2024 12:01:00 GMT', now)).toBe(60);
    expect(parseRetryAfter(new Date(now + 1500).toISOString(), now)).toBe(2);
  });

  it('gives 0 for a date already past', () => {
    expect(parseRetryAfter('Mon, 01 Jan 2024 11:00:00 GMT', now)).toBe(0);
  });

  it('gives undefined when absent or unreadable', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
  });

  it.each(['1.5', '-5', '5s'])('gives undefined for %j, which is neither delta-seconds nor an HTTP date', (value) => {
    // V8's lenient Date.parse reads '1.5' or '-5' as dates in 2001; taken as
    // "0 s", a 503 would then count as not processed and forfait be retried.
    expect(parseRetryAfter(value, now)).toBeUndefined();
  });
});

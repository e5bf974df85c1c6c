/**
 * A recording reverse proxy in front of a sandbox, on 127.0.0.1 port 0. It
 * keeps the exact bytes of every request and answer that crossed it, so a
 * test can compare what notarize sent with what the service answered, and it
 * can reformat an answer (same JSON value, different bytes) to prove that
 * notarize forwards what it received rather than a re-serialised copy.
 */
import { createServer, request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request and its answer, as they crossed the proxy. */
export interface Exchange {
  method: string;
  /** Request target, query included. */
  path: string;
  requestBody: string;
  status: number;
  /** The answer body exactly as the proxy passed it on (after any rewrite). */
  responseBody: string;
  /** The body the upstream sandbox sent. */
  upstreamBody: string;
}

export interface RecordingProxy {
  url: string;
  exchanges: Exchange[];
  close(): Promise<void>;
}

/** Returns the text to answer instead of `body`, or undefined to pass it on unchanged. */
export type Rewrite = (method: string, path: string, status: number, body: string) => string | undefined;

function readAll(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

/** Starts a proxy to `target` (which must be a 127.0.0.1 URL). */
export async function startRecordingProxy(target: string, rewrite?: Rewrite): Promise<RecordingProxy> {
  const upstream = new URL(target);
  if (upstream.hostname !== '127.0.0.1' || upstream.protocol !== 'http:') {
    throw new Error(`the recording proxy only forwards to a local sandbox, not ${target}`);
  }
  const exchanges: Exchange[] = [];
  const server = createServer((req, res) => {
    void (async () => {
      const body = await readAll(req);
      const headers = { ...req.headers, host: upstream.host };
      delete headers.connection;
      const answer = await new Promise<IncomingMessage>((resolve, reject) => {
        const out = request(
          { host: '127.0.0.1', port: upstream.port, method: req.method, path: req.url, headers, agent: false },
          resolve,
        );
        out.on('error', reject);
        out.end(body);
      });
      const upstreamBody = (await readAll(answer)).toString('utf8');
      const status = answer.statusCode ?? 502;
      const method = req.method ?? '';
      const path = req.url ?? '';
      const responseBody = rewrite?.(method, path, status, upstreamBody) ?? upstreamBody;
      exchanges.push({ method, path, requestBody: body.toString('utf8'), status, responseBody, upstreamBody });
      res.writeHead(status, {
        'content-type': answer.headers['content-type'] ?? 'application/json',
        'content-length': String(Buffer.byteLength(responseBody)),
      });
      res.end(responseBody);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

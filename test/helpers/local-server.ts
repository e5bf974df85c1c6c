/**
 * A real `node:http` server on 127.0.0.1, port 0, whose answers the test
 * writes: for transport tests (any handler), and as a stand-in for the
 * service whose answers a test chooses route by route (`startFakeService`),
 * where the sandbox only ever sends well-formed ones, or the malformed ones
 * its faults know. It records every request it received.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

/** The service endpoint a request is for (by method and target), 'other' for anything else. */
export type ServiceRoute = 'login' | 'request' | 'forfait' | 'other';

export interface ReceivedRequest {
  route: ServiceRoute;
  method: string;
  /** The request target: path and query. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export type Handler = (req: ReceivedRequest, res: ServerResponse) => void;

export interface LocalServer {
  /** `http://127.0.0.1:<port>`, never anything else. */
  url: string;
  port: number;
  received: ReceivedRequest[];
  handle(handler: Handler): void;
  close(): Promise<void>;
}

function routeOf(method: string, target: string): ServiceRoute {
  if (method === 'POST' && target === '/api/v2/auth/login') return 'login';
  if (method === 'POST' && target === '/api/v2/registration/?subscription=true') return 'request';
  if (method === 'POST' && /^\/api\/v2\/registration\/[0-9a-f]{64}\/forfait$/.test(target)) return 'forfait';
  return 'other';
}

/** Starts a server on 127.0.0.1 with an ephemeral port; it answers 500 until the test sets a handler. */
export async function startLocalServer(): Promise<LocalServer> {
  const received: ReceivedRequest[] = [];
  let handler: Handler = (_req, res) => {
    res.writeHead(500).end('no handler set');
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    res.on('error', () => {});
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const method = req.method ?? '';
      const url = req.url ?? '';
      const seen = {
        route: routeOf(method, url),
        method,
        url,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      received.push(seen);
      handler(seen, res);
    });
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    handle(next) {
      handler = next;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** A 127.0.0.1 port that was just open and is now closed: connecting to it is refused. */
export async function closedPort(): Promise<number> {
  const server = await startLocalServer();
  const { port } = server;
  await server.close();
  return port;
}

/** How to answer one request: status, body bytes, headers; or a function writing the answer itself. */
export type FakeAnswer =
  | { status: number; body: string | Buffer; headers?: Record<string, string> }
  | ((req: ReceivedRequest, res: ServerResponse) => void);

/** A local server standing in for the service; `answer` may be replaced at any time. */
export interface FakeService extends LocalServer {
  answer: (route: ServiceRoute, req: ReceivedRequest) => FakeAnswer;
}

/** Starts a stand-in for the service whose every answer `answer` chooses (JSON content type unless it says otherwise). */
export async function startFakeService(answer: FakeService['answer']): Promise<FakeService> {
  const service: FakeService = Object.assign(await startLocalServer(), { answer });
  service.handle((req, res) => {
    const chosen = service.answer(req.route, req);
    if (typeof chosen === 'function') {
      chosen(req, res);
      return;
    }
    res.writeHead(chosen.status, { 'content-type': 'application/json', ...chosen.headers });
    res.end(chosen.body);
  });
  return service;
}

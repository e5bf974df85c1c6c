/**
 * A tiny stand-in for the service on 127.0.0.1, port 0, whose answers a test
 * chooses route by route (the sandbox only ever sends well-formed ones, or
 * the malformed ones its faults know). It records what it received.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FakeRoute = 'login' | 'request' | 'forfait' | 'other';

export interface FakeRequest {
  route: FakeRoute;
  method: string;
  path: string;
  body: string;
}

/** How to answer one request: status, body bytes, headers; or a function writing the answer itself. */
export type FakeAnswer =
  | { status: number; body: string | Buffer; headers?: Record<string, string> }
  | ((req: FakeRequest, res: ServerResponse) => void);

export interface FakeService {
  url: string;
  received: FakeRequest[];
  answer: (route: FakeRoute, req: FakeRequest) => FakeAnswer;
  close(): Promise<void>;
}

function routeOf(method: string, path: string): FakeRoute {
  if (method === 'POST' && path === '/api/v2/auth/login') return 'login';
  if (method === 'POST' && path === '/api/v2/registration/?subscription=true') return 'request';
  if (method === 'POST' && /^\/api\/v2\/registration\/[0-9a-f]{64}\/forfait$/.test(path)) return 'forfait';
  return 'other';
}

/** Starts a fake service; set `answer` to decide what each route answers. */
export async function startFakeService(answer: FakeService['answer']): Promise<FakeService> {
  const received: FakeRequest[] = [];
  const service: FakeService = { url: '', received, answer, close: async () => {} };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    res.on('error', () => {});
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const method = req.method ?? '';
      const path = req.url ?? '';
      const seen: FakeRequest = { route: routeOf(method, path), method, path, body: Buffer.concat(chunks).toString() };
      received.push(seen);
      const chosen = service.answer(seen.route, seen);
      if (typeof chosen === 'function') {
        chosen(seen, res);
        return;
      }
      res.writeHead(chosen.status, { 'content-type': 'application/json', ...chosen.headers });
      res.end(chosen.body);
    });
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  service.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  service.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return service;
}

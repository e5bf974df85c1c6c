/**
 * A real `node:http` server on 127.0.0.1, port 0, for transport tests. Each
 * test sets the handler; the server records every request it received.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
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

/** Starts a server on 127.0.0.1 with an ephemeral port. */
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
      const seen = {
        method: req.method ?? '',
        url: req.url ?? '',
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

/**
 * A tiny HTTP forward proxy on 127.0.0.1 port 0, as a CI runner's egress
 * proxy would be. It serves both ways a client may use a proxy for an
 * http:// URL: absolute-form requests (`POST http://127.0.0.1:N/api/...`)
 * and CONNECT tunnels (undici's ProxyAgent tunnels by default). Tunnelled
 * connections are handed to an inner HTTP server so every request inside
 * them is seen and recorded too. It forwards to 127.0.0.1 only and refuses
 * any other target with 403.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface ProxiedRequest {
  /** How the request reached the proxy. */
  via: 'absolute-form' | 'tunnel';
  method: string;
  /** The full target URL. */
  url: string;
  status: number;
  /** The answer body exactly as the upstream server sent it. */
  responseBody: string;
}

export interface ForwardProxy {
  url: string;
  requests: ProxiedRequest[];
  /** Targets of CONNECT requests (host:port), refused ones included. */
  tunnels: string[];
  close(): Promise<void>;
}

function readAll(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

export async function startForwardProxy(): Promise<ForwardProxy> {
  const requests: ProxiedRequest[] = [];
  const tunnels: string[] = [];
  const sockets = new Set<Socket>();
  const tunnelTarget = new WeakMap<Socket, string>();

  const forward = async (via: ProxiedRequest['via'], target: URL, req: IncomingMessage, res: ServerResponse) => {
    if (target.protocol !== 'http:' || target.hostname !== '127.0.0.1') {
      res.writeHead(403, { 'content-type': 'text/plain' }).end('this proxy forwards to 127.0.0.1 only');
      return;
    }
    const body = await readAll(req);
    const headers: Record<string, string | string[] | undefined> = { ...req.headers, host: target.host };
    delete headers['proxy-connection'];
    delete headers.connection;
    const answer = await new Promise<IncomingMessage>((resolve, reject) => {
      const out = request(
        {
          host: '127.0.0.1',
          port: target.port,
          method: req.method,
          path: `${target.pathname}${target.search}`,
          headers,
          agent: false,
        },
        resolve,
      );
      out.on('error', reject);
      out.end(body);
    });
    const responseBody = await readAll(answer);
    const status = answer.statusCode ?? 502;
    requests.push({
      via,
      method: req.method ?? '',
      url: target.href,
      status,
      responseBody: responseBody.toString('utf8'),
    });
    const answerHeaders = { ...answer.headers };
    delete answerHeaders.connection;
    delete answerHeaders['transfer-encoding'];
    answerHeaders['content-length'] = String(responseBody.length);
    res.writeHead(status, answerHeaders);
    res.end(responseBody);
  };

  // Requests that arrive inside a CONNECT tunnel are in origin-form.
  const inner = createServer((req, res) => {
    const authority = tunnelTarget.get(req.socket) ?? '';
    forward('tunnel', new URL(req.url ?? '/', `http://${authority}`), req, res).catch(() => res.destroy());
  });

  const outer = createServer((req, res) => {
    const target = req.url ?? '';
    if (!/^http:\/\//i.test(target)) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('a forward proxy expects absolute-form requests');
      return;
    }
    forward('absolute-form', new URL(target), req, res).catch(() => res.destroy());
  });
  outer.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  outer.on('connect', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    const authority = req.url ?? '';
    tunnels.push(authority);
    if (!/^127\.0\.0\.1:\d+$/.test(authority)) {
      socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    tunnelTarget.set(socket, authority);
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) socket.unshift(head);
    inner.emit('connection', socket);
  });

  await new Promise<void>((resolve, reject) => {
    outer.once('error', reject);
    outer.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = outer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    tunnels,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        inner.close();
        outer.close(() => resolve());
        outer.closeAllConnections();
      }),
  };
}

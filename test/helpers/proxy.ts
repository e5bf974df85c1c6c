/**
 * A recording HTTP proxy on 127.0.0.1 (or another loopback address) port 0, in the three ways a client
 * may reach a server through it:
 *
 * - as a reverse proxy in front of one `target` (requests in origin-form,
 *   `POST /api/...`, with NOTARIZE_BASE_URL set to the proxy);
 * - as a forward proxy, the way a CI runner's egress proxy is used with
 *   HTTP_PROXY: absolute-form requests (`POST http://127.0.0.1:N/api/...`)
 *   and CONNECT tunnels (undici's ProxyAgent tunnels by default). Tunnelled
 *   connections are handed to an inner HTTP server, so every request inside
 *   them is seen and recorded too.
 *
 * It keeps the exact bytes of every request and answer that crossed it, so a
 * test can compare what notarize sent with what the service answered, and it
 * can reformat an answer (same JSON value, different bytes) to prove that
 * notarize forwards what it received rather than a re-serialised copy.
 *
 * It forwards to 127.0.0.1 only: a reverse target elsewhere is refused at
 * start, a forward request or a tunnel to anywhere else is answered 403.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One request and its answer, as they crossed the proxy. */
export interface Exchange {
  /** How the request reached the proxy. */
  via: 'reverse' | 'absolute-form' | 'tunnel';
  method: string;
  /** The full URL the request was forwarded to. */
  url: string;
  /** The request target sent upstream (origin-form: path and query). */
  path: string;
  requestBody: string;
  status: number;
  /** The answer body exactly as the proxy passed it on (after any rewrite). */
  responseBody: string;
  /** The body the upstream server sent. */
  upstreamBody: string;
}

export interface RecordingProxy {
  url: string;
  exchanges: Exchange[];
  /** Targets of CONNECT requests (host:port), refused ones included. */
  tunnels: string[];
  /** Plain requests answered with `refuseWith` (method and target), not forwarded. */
  refused: string[];
  /** Stops the proxy and drops its connections, tunnels included; calling it again is harmless. */
  close(): Promise<void>;
}

/** Returns the text to answer instead of `body`, or undefined to pass it on unchanged. */
export type Rewrite = (method: string, path: string, status: number, body: string) => string | undefined;

export interface ProxyOptions {
  /** Where origin-form requests go (a 127.0.0.1 URL); without it they are answered 400, as a forward proxy does. */
  target?: string;
  rewrite?: Rewrite;
  /** The loopback address to listen on (default 127.0.0.1), e.g. 127.0.0.3 to tell it apart from the service. */
  host?: string;
  /**
   * Answer every request and every CONNECT with this status instead of
   * forwarding (still recorded): 407 plays a proxy that wants credentials.
   */
  refuseWith?: number;
  /** Close every CONNECT's connection at once, answering nothing (still recorded): a proxy that opens no tunnels. */
  closeTunnels?: boolean;
  /** Never answer a CONNECT, keeping its connection open (still recorded): a proxy stuck upstream. */
  silentTunnels?: boolean;
}

/** Reason phrases of the statuses a test may make the proxy refuse with. */
const REFUSAL_REASONS: Record<number, string> = {
  403: 'Forbidden',
  407: 'Proxy Authentication Required',
  502: 'Bad Gateway',
};

// Hop-by-hop headers: they describe one connection, not the message, so a proxy does not pass them on.
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding'];

function readAll(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

function withoutHopByHop<T extends Record<string, unknown>>(headers: T): T {
  const copy = { ...headers };
  for (const name of HOP_BY_HOP) delete copy[name];
  return copy;
}

function isLocalHttp(url: URL): boolean {
  return url.protocol === 'http:' && url.hostname === '127.0.0.1';
}

/** Starts a proxy; see the file comment for what it serves. */
export async function startProxy(options: ProxyOptions = {}): Promise<RecordingProxy> {
  const host = options.host ?? '127.0.0.1';
  if (!/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host))
    throw new Error(`the proxy listens on loopback only, not ${host}`);
  const upstream = options.target === undefined ? undefined : new URL(options.target);
  if (upstream && !isLocalHttp(upstream)) {
    throw new Error(`the proxy only forwards to a local server, not ${options.target}`);
  }
  const exchanges: Exchange[] = [];
  const tunnels: string[] = [];
  const refused: string[] = [];
  const sockets = new Set<Socket>();
  const tunnelTarget = new WeakMap<Socket, string>();

  /** Forwards `req` to `origin` + `path` and answers `res` with the (possibly rewritten) answer. */
  const forward = async (
    via: Exchange['via'],
    origin: URL,
    path: string,
    req: IncomingMessage,
    res: ServerResponse,
  ) => {
    if (!isLocalHttp(origin)) {
      res.writeHead(403, { 'content-type': 'text/plain' }).end('this proxy forwards to 127.0.0.1 only');
      return;
    }
    const body = await readAll(req);
    const headers = withoutHopByHop({ ...req.headers, host: origin.host });
    const answer = await new Promise<IncomingMessage>((resolve, reject) => {
      const out = request(
        { host: '127.0.0.1', port: origin.port, method: req.method, path, headers, agent: false },
        resolve,
      );
      out.on('error', reject);
      out.end(body);
    });
    const upstreamBody = (await readAll(answer)).toString('utf8');
    const status = answer.statusCode ?? 502;
    const method = req.method ?? '';
    const responseBody = options.rewrite?.(method, path, status, upstreamBody) ?? upstreamBody;
    exchanges.push({
      via,
      method,
      url: `${origin.origin}${path}`,
      path,
      requestBody: body.toString('utf8'),
      status,
      responseBody,
      upstreamBody,
    });
    res.writeHead(status, {
      ...withoutHopByHop(answer.headers),
      'content-length': String(Buffer.byteLength(responseBody)),
    });
    res.end(responseBody);
  };

  // A request that cannot be forwarded (a malformed target, an upstream that went away) drops its connection.
  const serve = (res: ServerResponse, handle: () => Promise<void>) => {
    Promise.resolve()
      .then(handle)
      .catch(() => res.destroy());
  };

  // Requests that arrive inside a CONNECT tunnel are in origin-form, for the tunnel's target.
  const inner = createServer((req, res) => {
    serve(res, () =>
      forward('tunnel', new URL(`http://${tunnelTarget.get(req.socket) ?? ''}`), req.url ?? '/', req, res),
    );
  });

  const refusal = options.refuseWith;
  const refusalHeaders = refusal === 407 ? { 'proxy-authenticate': 'Basic realm="test proxy"' } : {};

  const outer = createServer((req, res) => {
    const target = req.url ?? '';
    if (refusal !== undefined) {
      refused.push(`${req.method ?? ''} ${target}`);
      res.writeHead(refusal, { 'content-type': 'text/plain', ...refusalHeaders }).end('refused by the test proxy');
    } else if (/^http:\/\//i.test(target)) {
      serve(res, () => {
        const url = new URL(target);
        return forward('absolute-form', url, `${url.pathname}${url.search}`, req, res);
      });
    } else if (upstream) {
      serve(res, () => forward('reverse', upstream, target, req, res));
    } else {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('a forward proxy expects absolute-form requests');
    }
  });
  outer.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  outer.on('connect', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    const authority = req.url ?? '';
    tunnels.push(authority);
    if (options.closeTunnels) {
      socket.destroy();
      return;
    }
    if (options.silentTunnels) return;
    if (refusal !== undefined) {
      const extra = Object.entries(refusalHeaders).map(([name, value]) => `${name}: ${value}\r\n`);
      socket.end(
        `HTTP/1.1 ${refusal} ${REFUSAL_REASONS[refusal] ?? 'Refused'}\r\n${extra.join('')}Content-Length: 0\r\n\r\n`,
      );
      return;
    }
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
    outer.listen(0, host, () => resolve());
  });
  const { port } = outer.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    exchanges,
    tunnels,
    refused,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        // Tunnelled sockets left the outer server's books at CONNECT: destroy them by hand.
        for (const socket of sockets) socket.destroy();
        inner.close();
        outer.close(() => resolve());
        outer.closeAllConnections();
      })),
  };
}

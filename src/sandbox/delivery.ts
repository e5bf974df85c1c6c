/**
 * How faults spoil an answer on its way out: wrong shapes, truncated bodies
 * and endless bodies.
 */
import type { ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import type { Answer } from './http.js';
import type { RouteName } from './routes.js';

const HUGE_CHUNK = Buffer.alloc(64 * 1024, 'a');

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Turns a successful answer into valid JSON of the wrong shape: login loses
 * its token, sessions get a string userId, records a string creationDate,
 * anything else becomes an array. Error answers are returned unchanged.
 */
export function wrongShape(route: RouteName, answer: Answer): Answer {
  if (answer.status !== 200) return answer;
  const json = isRecord(answer.json) ? { ...answer.json } : undefined;
  if (json && route === 'login') {
    delete json.token;
  } else if (json && (route === 'request' || route === 'active' || route === 'subscription')) {
    json.userId = String(json.userId);
  } else if (json && route === 'forfait') {
    json.creationDate = String(json.creationDate);
  } else {
    return { status: 200, json: [] };
  }
  return { status: 200, json };
}

/** Cuts a body in half, the way a broken proxy might. */
/**
 * Sends the status, the headers (announcing the whole length) and half the
 * body, then nothing more: the client's body timeout, or close(), ends it.
 */
export function stall(res: ServerResponse, status: number, contentType: string, text: string): void {
  if (res.destroyed || res.headersSent) return;
  res.writeHead(status, { 'content-type': contentType, 'content-length': String(Buffer.byteLength(text)) });
  res.write(truncate(text));
}

/** The coding of the undecodable fault: no client knows it. */
export const UNKNOWN_CODING = 'x-sandbox-unknown';

/**
 * Sends the body with a Content-Encoding, though the client asks for none
 * (identity): gzip-compressed, or as it is under a coding no client knows.
 */
export function encoded(
  res: ServerResponse,
  status: number,
  contentType: string,
  text: string,
  coding: 'gzip' | typeof UNKNOWN_CODING,
): void {
  if (res.destroyed || res.headersSent) return;
  const body = coding === 'gzip' ? gzipSync(text) : Buffer.from(text);
  res.writeHead(status, {
    'content-type': contentType,
    'content-encoding': coding,
    'content-length': String(body.length),
  });
  res.end(body);
}

export function truncate(text: string): string {
  return text.slice(0, Math.floor(text.length / 2));
}

function waitForDrainOrClose(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * Answers 200 with a JSON-looking body streamed in 64 KiB chunks until the
 * client disconnects or `limitBytes` of padding were sent (then the JSON is
 * closed). Honours backpressure and stops as soon as the connection closes.
 */
export async function streamHuge(res: ServerResponse, limitBytes: number): Promise<void> {
  if (res.destroyed || res.headersSent) return;
  let closed = false;
  res.once('close', () => {
    closed = true;
  });
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write('{"padding":"');
  let sent = 0;
  while (!closed && sent < limitBytes) {
    const size = Math.min(HUGE_CHUNK.length, limitBytes - sent);
    sent += size;
    if (!res.write(HUGE_CHUNK.subarray(0, size)) && !closed && !res.destroyed) await waitForDrainOrClose(res);
  }
  if (!closed) res.end('"}');
}

/**
 * The sandbox's HTTP plumbing: answers as data, the JSON error body, reading
 * a bounded request body and writing an answer to a socket.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The largest request body the sandbox accepts; larger ones are answered 413. */
export const MAX_BODY_BYTES = 1024 * 1024;

// Beyond this the sandbox stops draining an oversized body and drops the
// connection, so a runaway client cannot keep it busy forever.
const MAX_DRAIN_BYTES = 64 * MAX_BODY_BYTES;

/** An answer before it is written: a JSON value or an HTML page, with its status and extra headers. */
export interface Answer {
  status: number;
  json?: unknown;
  html?: string;
  headers?: Record<string, string>;
}

/** Thrown by route handlers to answer with a JSON error; the server turns it into an Answer. */
export class SandboxHttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'SandboxHttpError';
  }
}

const ERROR_CODES: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  429: 'too_many_requests',
  500: 'internal_error',
  502: 'bad_gateway',
  503: 'service_unavailable',
  504: 'gateway_timeout',
};

/** The short error code the sandbox uses for an HTTP status, e.g. 404 -> 'not_found'. */
export function errorCodeFor(status: number): string {
  return ERROR_CODES[status] ?? `http_${status}`;
}

/** Builds the sandbox's JSON error answer: `{"status", "error", "message"}`. */
export function errorAnswer(
  status: number,
  message: string,
  code = errorCodeFor(status),
  headers?: Record<string, string>,
): Answer {
  return { status, json: { status, error: code, message }, ...(headers ? { headers } : {}) };
}

/** A request body as text, or `tooLarge` when it went over MAX_BODY_BYTES (the text is then empty). */
export interface ReceivedBody {
  text: string;
  tooLarge: boolean;
}

/** Reads the whole request body, keeping at most MAX_BODY_BYTES; rejects if the client goes away. */
export function readBody(req: IncomingMessage): Promise<ReceivedBody> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
      else if (size > MAX_DRAIN_BYTES) req.socket.destroy();
    });
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) resolve({ text: '', tooLarge: true });
      else resolve({ text: Buffer.concat(chunks).toString('utf8'), tooLarge: false });
    });
    req.on('error', reject);
    req.on('close', () => reject(new Error('the client closed the connection')));
  });
}

/** Serialises an answer to its content type and body text. */
export function renderAnswer(answer: Answer): { contentType: string; text: string } {
  if (answer.html !== undefined) return { contentType: 'text/html; charset=utf-8', text: answer.html };
  return { contentType: 'application/json', text: JSON.stringify(answer.json ?? null) };
}

/** Writes a complete answer with an exact Content-Length; does nothing if the connection is gone. */
export function writeText(
  res: ServerResponse,
  status: number,
  contentType: string,
  text: string,
  headers: Record<string, string> = {},
): void {
  if (res.destroyed || res.headersSent) return;
  res.writeHead(status, { ...headers, 'content-type': contentType, 'content-length': String(Buffer.byteLength(text)) });
  res.end(text);
}

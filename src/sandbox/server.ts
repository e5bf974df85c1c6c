/**
 * The local emulator of the hosted notarization service ("the sandbox"): the
 * documented endpoints over node:http, in memory, with fault injection for
 * reliability tests. It is both the `notarize sandbox` command's server and
 * the test server, and it builds its bodies from the shared wire schemas.
 */
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FileMetadata, NotarizationRecord } from '../api/schemas.js';
import { FaultBook, type Fault } from './faults.js';
import { serve, type SandboxCall } from './serve.js';
import { SandboxState } from './state.js';

export { FAULT_KINDS, FAULT_SPEC_HELP, parseFaults, type Fault, type FaultKind } from './faults.js';
export { ROUTE_NAMES, type RouteName } from './routes.js';
export { SANDBOX_USER } from './state.js';
export type { SandboxCall } from './serve.js';

/** How to start a sandbox; every field is optional. */
export interface SandboxOptions {
  /** Default '127.0.0.1'. */
  host?: string;
  /** Default 0 (an ephemeral port). */
  port?: number;
  /** Default: a random key generated at start ('sandbox_' + 32 hex). */
  apiKey?: string;
  /** Lifetime of issued tokens; default 36000 (10 h, like the real service). Negative values issue expired tokens. */
  tokenTtlSeconds?: number;
  /** Fault injection rules (see FAULT_SPEC_HELP). */
  faults?: Fault[];
  /** Called once per call when its outcome is known (answered, dropped, or the connection closed). */
  onCall?: (call: SandboxCall) => void;
}

/** A running sandbox. */
export interface Sandbox {
  /** Base URL without a trailing slash, e.g. 'http://127.0.0.1:41234'. */
  url: string;
  apiKey: string;
  /** Every request received, in order. */
  calls: SandboxCall[];
  /** File metadata received by `PUT /api/v2/file/{hash}`, by hash. */
  files: ReadonlyMap<string, FileMetadata>;
  /** Completed notarization records, by hash. */
  records: ReadonlyMap<string, NotarizationRecord>;
  /** Appends fault rules after the current ones; throws an Error (adding none) if one is invalid. */
  addFaults(faults: Fault[]): void;
  /** Stops listening and destroys open and hung connections, so it always resolves promptly. */
  close(): Promise<void>;
}

function listen(server: Server, host: string, port: number): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

/** Starts a sandbox and resolves once it listens; rejects if the address is taken or an option is invalid. */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const host = options.host ?? '127.0.0.1';
  const apiKey = options.apiKey ?? `sandbox_${randomBytes(16).toString('hex')}`;
  if (apiKey === '') throw new Error('the sandbox API key must not be empty');
  const tokenTtlSeconds = Math.trunc(options.tokenTtlSeconds ?? 36_000);
  if (!Number.isFinite(tokenTtlSeconds)) throw new Error('tokenTtlSeconds must be a finite number');
  const faults = new FaultBook();
  faults.add(options.faults ?? []);

  const state = new SandboxState();
  const calls: SandboxCall[] = [];
  const stopping = new AbortController();
  // Every pending latency waits on this signal; lift the listener limit warning.
  setMaxListeners(0, stopping.signal);
  const ctx = {
    state,
    auth: { apiKey, secret: randomBytes(32), tokenTtlSeconds },
    faults,
    calls,
    signal: stopping.signal,
    onCall: options.onCall,
  };
  const server = createServer((req, res) => {
    serve(ctx, req, res).catch(() => res.destroy());
  });

  const address = await listen(server, host, options.port ?? 0);
  const hostInUrl = address.address.includes(':') ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${hostInUrl}:${address.port}`,
    apiKey,
    calls,
    files: state.files,
    records: state.records,
    addFaults: (more) => faults.add(more),
    close() {
      closing ??= new Promise<void>((resolve) => {
        stopping.abort();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

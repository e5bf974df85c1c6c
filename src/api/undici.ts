/**
 * The pieces of undici the client uses (an Agent, a ProxyAgent and the Pool
 * it reaches its proxy with, and the `request` method of every dispatcher), loaded from their own modules
 * rather than from undici's index. The index loads all of undici: fetch,
 * WebSocket, EventSource, cache stores, mock agents (most of the 970 kB it
 * bundled into); evaluating it was about a quarter of the CPU a one-document
 * `register` spent (docs/performance.md, "Start-up").
 *
 * undici has no "exports" map, so these paths can be imported, but they are
 * its layout rather than its API: test/wire/undici.test.ts checks that they
 * are the very classes its index exports, so an upgrade that moves them fails
 * there and not in someone's CI. Only this file imports them.
 */
import type { buildConnector, Dispatcher } from 'undici';
import DispatcherClass from 'undici/lib/dispatcher/dispatcher.js';
import api from 'undici/lib/api/index.js';

export { default as Agent } from 'undici/lib/dispatcher/agent.js';
export { default as ProxyAgent } from 'undici/lib/dispatcher/proxy-agent.js';
export { default as Pool } from 'undici/lib/dispatcher/pool.js';
export type { Dispatcher };
/** undici's connect function: what a pool opens its sockets with. */
export type Connector = buildConnector.connector;

// What undici's index does first: the request, connect... methods belong to
// every dispatcher (ProxyAgent opens its tunnel with its client's connect).
Object.assign(DispatcherClass.prototype, api);

/**
 * `register -j N`: at most N requests at the service at once, with more
 * documents than that in flight, so that one document's local work (hashing,
 * its lock, its session made durable) never leaves a connection idle
 * (api/slots.ts, docs/performance.md §6). Watched from the sandbox's side.
 */
import { describe, expect, it } from 'vitest';
import type { SandboxCall } from '../../src/sandbox/server.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { parseNdjson } from '../helpers/results.js';

let bed: Bed;
/** Called with every sandbox call once answered (set by a test, reset before each). */
let onCall: ((call: SandboxCall) => void) | undefined;
useBed(
  (created) => {
    bed = created;
    onCall = undefined;
  },
  { keyInEnv: true, sandbox: { onCall: (call) => onCall?.(call) } },
);

/**
 * The most requests the sandbox held at once (calls arrived and not yet
 * answered, seen as each is answered), and the most sessions open at once
 * (request steps answered, their forfait not yet answered).
 */
function watchService(): { atOnce: () => number; sessions: () => number } {
  let answered = 0;
  let atOnce = 0;
  let open = 0;
  let sessions = 0;
  onCall = (call) => {
    atOnce = Math.max(atOnce, bed.sandbox.calls.length - answered);
    answered++;
    if (call.route === 'request' && call.status === 200) sessions = Math.max(sessions, ++open);
    if (call.route === 'forfait') open--;
  };
  return { atOnce: () => atOnce, sessions: () => sessions };
}

async function documents(count: number): Promise<string[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => bed.file(`docs/${i}.txt`, `document ${i}\n`)));
}

describe('register -j', () => {
  it('-j 3: three requests at the service at once, never more, and more documents than that in flight', async () => {
    bed.sandbox.addFaults([{ route: '*', kind: 'latency', value: 25 }]);
    const docs = await documents(24);
    const seen = watchService();
    const run = await bed.main(['register', ...docs, '-j', '3', '--output', 'ndjson']);
    expect(run.code, run.stderr).toBe(0);
    expect(parseNdjson(run.stdout).map((r) => r.status)).toEqual(Array.from({ length: 24 }, () => 'registered'));
    expect(seen.atOnce()).toBe(3);
    // Sessions opened while others waited for their forfait's slot: the documents in flight outnumber the slots.
    expect(seen.sessions()).toBeGreaterThan(3);
    expect(seen.sessions()).toBeLessThanOrEqual(6);
  });

  it('-j 1: one document at a time from start to end, its lines in input order', async () => {
    bed.sandbox.addFaults([{ route: '*', kind: 'latency', value: 5 }]);
    const docs = await documents(6);
    const seen = watchService();
    const run = await bed.main(['register', ...docs, '-j', '1', '--output', 'ndjson']);
    expect(run.code, run.stderr).toBe(0);
    expect(parseNdjson(run.stdout).map((r) => r.file)).toEqual(docs);
    expect(seen.atOnce()).toBe(1);
    expect(seen.sessions()).toBe(1);
  });
});

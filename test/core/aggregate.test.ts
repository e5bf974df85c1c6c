/**
 * Aggregate registration (src/core/aggregate.ts) with its dependencies
 * injected: a real ServiceStore in a temporary directory, the real ApiClient
 * against the bed's sandbox. The tree is on disk before its root is sent;
 * re-runs choose trees by where their roots stand; the store-wide lock makes
 * concurrent runs agree on one tree; a damaged tree proves nothing.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { plantTree, rootDescription, Trees } from '../../src/core/trees.js';
import { registerRoot } from '../../src/core/aggregate.js';
import { leafHash, rootFromPath } from '../../src/core/merkle.js';
import { parseFaults } from '../../src/sandbox/server.js';
import { holdLock, lockText } from '../../src/store/lock.js';
import { register } from '../../src/core/notarize.js';
import { ServiceStore } from '../../src/store/service-store.js';
import { aggregateDeps, aggregateInput, docs, registerAggregate } from '../helpers/aggregate.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { rejectionOf } from '../helpers/catch.js';
import { sha256 } from '../helpers/documents.js';
import { sandboxApi } from '../helpers/sandbox-api.js';

let bed: Bed;
useBed((created) => (bed = created));

const deps = () => aggregateDeps(bed);
const input = aggregateInput;

/** The calls since `mark` that register (a first login of each client is not the flow's). */
const routes = (mark: number) =>
  bed
    .callsSince(mark)
    .filter((c) => c.route !== 'login')
    .map((c) => `${c.route}:${c.status}`);

describe('registerAggregate', () => {
  it('saves the tree, then registers its root: one request, one forfait; each document has a proof to the root', async () => {
    const d = deps();
    const mark = bed.mark();
    const documents = docs('a', 'b', 'c');
    const { placements, roots } = await registerAggregate(d, input(documents));
    expect(routes(mark)).toEqual(['request:200', 'forfait:200']);
    const root = placements[0]!.tree.entry.root;
    expect(placements.map((p) => [p?.tree.entry.root, p?.leafIndex])).toEqual([
      [root, 0],
      [root, 1],
      [root, 2],
    ]);
    expect(roots.get(root)).toMatchObject({ ok: true, outcome: { kind: 'completed' } });
    const saved = d.store.readTree(root)!;
    expect(saved).toMatchObject({ root, treeSize: 3, description: rootDescription(3) });
    expect(saved.leaves.map((l) => [l.index, l.name, l.sha256, l.size])).toEqual(
      documents.map((doc, i) => [i, doc.name, doc.sha256, doc.size]),
    );
    for (const [i, doc] of documents.entries()) {
      const proof = placements[i]!.tree.proof(i, d.store.treeFile(root));
      const leaf = leafHash(Buffer.from(doc.sha256, 'hex'), Buffer.from(proof.leafSalt, 'hex'));
      const folded = rootFromPath(
        i,
        3,
        leaf,
        proof.path.map((h) => Buffer.from(h, 'hex')),
      );
      expect(folded?.toString('hex')).toBe(root);
    }
  });

  it('a root the service never answered is requested again, the same root: its tree was saved before', async () => {
    const d = deps();
    bed.sandbox.addFaults(parseFaults('request:status=503*1'));
    const first = await registerAggregate(d, input(docs('p', 'q')));
    const root = first.placements[0]!.tree.entry.root;
    expect(first.roots.get(root)).toMatchObject({ ok: false });
    expect(d.store.readTree(root)).toBeDefined();
    expect((await Trees.load(d.store)).place(sha256('p'))?.tree.state).toBe('planned');
    const mark = bed.mark();
    const second = await registerAggregate(d, input(docs('q', 'p')));
    expect(routes(mark)).toEqual(['request:200', 'forfait:200']);
    expect(bed.requestedHashes().at(-1)).toBe(root);
    // Each document keeps its leaf of the first tree, whatever the order given now.
    expect(second.placements.map((p) => p?.leafIndex)).toEqual([1, 0]);
    expect(second.roots.get(root)).toMatchObject({ ok: true, outcome: { kind: 'completed' } });
  });

  it('a pending root is completed (no request); a registered one sends nothing', async () => {
    const d = deps();
    const first = await registerAggregate(d, input(docs('x', 'y'), { complete: false }));
    const root = first.placements[0]!.tree.entry.root;
    expect(first.roots.get(root)).toMatchObject({ ok: true, outcome: { kind: 'pending' } });
    expect((await Trees.load(d.store)).place(sha256('x'))?.tree.state).toBe('pending');
    let mark = bed.mark();
    await registerAggregate(d, input(docs('x')));
    expect(routes(mark)).toEqual(['forfait:200']);
    mark = bed.mark();
    const third = await registerAggregate(d, input(docs('y', 'x')));
    expect(routes(mark)).toEqual([]);
    expect(third.roots.get(root)).toMatchObject({ ok: true, outcome: { kind: 'already-registered' } });
  });

  it("what a run killed after its root's record left (its lock, its session) is tidied by the re-run that sends nothing", async () => {
    const d = deps();
    const first = await registerAggregate(d, input(docs('k1', 'k2'), { complete: false }));
    const root = first.placements[0]!.tree.entry.root;
    const session = readFileSync(d.store.pendingFile(root), 'utf8');
    await registerAggregate(d, input(docs('k1', 'k2')));
    // Killed between saving the record and removing the session, before releasing the lock.
    writeFileSync(d.store.pendingFile(root), session);
    const lock = d.store.lockFile(root);
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    writeFileSync(lock, lockText(Number(dead.stdout), 'killed'));
    const mark = bed.mark();
    const again = await registerAggregate(d, input(docs('k1', 'k2')));
    expect(routes(mark)).toEqual([]);
    expect(again.roots.get(root)).toMatchObject({ ok: true, outcome: { kind: 'already-registered' } });
    expect(existsSync(d.store.pendingFile(root))).toBe(false);
    expect(readdirSync(join(lock, '..')).filter((name) => name.startsWith(root))).toEqual([]);

    // A live owner's lock (pid 1) is neither waited for nor touched, nor is the session it may be using.
    writeFileSync(d.store.pendingFile(root), session);
    writeFileSync(lock, lockText(1, 'alive'));
    const started = performance.now();
    const heldMark = bed.mark();
    const held = await registerAggregate(d, input(docs('k1')));
    expect(routes(heldMark)).toEqual([]);
    // Waiting for it would take the flow's lock wait (then give up): not waited.
    expect(performance.now() - started).toBeLessThan(d.lockWaitMs!);
    expect(held.roots.get(root)).toMatchObject({ ok: true, outcome: { kind: 'already-registered' } });
    expect(readFileSync(lock, 'utf8')).toBe(lockText(1, 'alive'));
    expect(readFileSync(d.store.pendingFile(root), 'utf8')).toBe(session);

    // Tidying is optional: a lock path that is not a lock fails no run, not even one that registers a new root too.
    rmSync(lock);
    mkdirSync(lock);
    const mixedMark = bed.mark();
    const mixed = await registerAggregate(d, input(docs('k1', 'k3')));
    // Only the new root's steps: nothing for the registered one.
    expect(routes(mixedMark)).toEqual(['request:200', 'forfait:200']);
    expect(mixed.roots.get(root)).toMatchObject({ ok: true, outcome: { kind: 'already-registered' } });
    const newRoot = mixed.placements[1]!.tree.entry.root;
    expect(mixed.roots.get(newRoot)).toMatchObject({ ok: true, outcome: { kind: 'completed' } });
  });

  it('new documents beside registered ones get a tree of their own; --force puts all under a new tree', async () => {
    const d = deps();
    const first = await registerAggregate(d, input(docs('m', 'n')));
    const oldRoot = first.placements[0]!.tree.entry.root;
    const second = await registerAggregate(d, input(docs('m', 'o')));
    expect(second.placements[0]!.tree.entry.root).toBe(oldRoot);
    expect(second.placements[1]!.tree.entry).toMatchObject({ treeSize: 1, leaves: [{ sha256: sha256('o') }] });
    const forced = await registerAggregate(d, input(docs('m', 'n'), { force: true }));
    const newRoot = forced.placements[0]!.tree.entry.root;
    expect(newRoot).not.toBe(oldRoot);
    expect(forced.roots.get(newRoot)).toMatchObject({ ok: true, outcome: { kind: 'completed' } });
    // Both trees are registered now; the latest speaks for the documents.
    expect((await Trees.load(d.store)).place(sha256('m'))?.tree.entry.root).toBe(newRoot);
  });

  it('two runs at once over the same documents agree on one tree, and it is registered once', async () => {
    const d = deps();
    const other = { ...d, store: new ServiceStore(d.store.dir, bed.url), api: sandboxApi(bed) };
    const mark = bed.mark();
    const [a, b] = await Promise.all([
      registerAggregate(d, input(docs('s', 't'))),
      registerAggregate(other, input(docs('t', 's'))),
    ]);
    const root = a.placements[0]!.tree.entry.root;
    expect(b.placements.map((p) => p?.tree.entry.root)).toEqual([root, root]);
    expect(routes(mark)).toEqual(['request:200', 'forfait:200']);
    const kinds = [a, b].map((r) => (r.roots.get(root) as { outcome: { kind: string } }).outcome.kind).sort();
    expect(kinds).toEqual(['already-registered', 'completed']);
  });

  it('documents another process took up by the time their tree is saved are left out: planted again without them', async () => {
    const d = deps();
    const documents = docs('u1', 'u2', 'u3');
    // u3 was registered on its own meanwhile; u2's lock is held: a per-document run is at work on it.
    const alone = {
      description: 'u3',
      custody: false,
      signed: false,
      blockchain: 'ALGORAND',
      complete: true,
      force: false,
    } as const;
    await register(d, { ...alone, hash: documents[2]!.sha256 });
    const releaseU2 = await holdLock(d.store.lockFile(documents[1]!.sha256), 0);
    try {
      const mark = bed.mark();
      const { placements, leftOut, roots } = await registerAggregate(d, input(documents));
      expect(leftOut).toEqual([1, 2]);
      expect(placements.slice(1)).toEqual([undefined, undefined]);
      const tree = placements[0]!.tree;
      expect([tree.entry.treeSize, tree.entry.leaves.map((l) => l.name)]).toEqual([1, ['u1']]);
      // The first tree (of all three) is gone: only the one registered is in the store.
      expect(readdirSync(d.store.treesDir)).toEqual([`${tree.entry.root}.json`]);
      expect(roots.get(tree.entry.root)).toMatchObject({ ok: true, outcome: { kind: 'completed' } });
      expect(routes(mark)).toEqual(['request:200', 'forfait:200']);
      // The root's lock, held from its planting to its registration, is let go; u2's is not touched.
      expect(d.store.hasLock(tree.entry.root)).toBe(false);
      expect(d.store.hasLock(documents[1]!.sha256)).toBe(true);
    } finally {
      releaseU2();
    }
  });

  it('a root the service confirmed with a 409 (its record lost) is never sent again; --force keeps a pending root', async () => {
    const d = deps();
    bed.sandbox.addFaults(parseFaults('forfait:drop-after*1'));
    const first = await registerAggregate(d, input(docs('lost')));
    const root = first.placements[0]!.tree.entry.root;
    expect(first.roots.get(root)).toMatchObject({ ok: false });
    const second = await registerAggregate(d, input(docs('lost')));
    expect(second.roots.get(root)).toMatchObject({
      ok: true,
      outcome: { kind: 'already-registered', entry: undefined, service: { retiredSession: expect.any(String) } },
    });
    expect([...(await d.store.retirements()).get(root)!]).toEqual([expect.stringMatching(/^forfait answered 409/)]);
    expect((await Trees.load(d.store)).place(sha256('lost'))?.tree.state).toBe('confirmed');
    let mark = bed.mark();
    const third = await registerAggregate(d, input(docs('lost')));
    expect(routes(mark)).toEqual([]);
    expect(third.roots.get(root)).toMatchObject({
      ok: true,
      outcome: { kind: 'already-registered', service: { message: expect.stringContaining('409') } },
    });
    // --force registers the confirmed documents anew (a new tree), but completes a pending root as it is.
    const pending = await registerAggregate(d, input(docs('held'), { complete: false }));
    const pendingRoot = pending.placements[0]!.tree.entry.root;
    mark = bed.mark();
    const forced = await registerAggregate(d, input(docs('lost', 'held'), { force: true }));
    expect(forced.placements[1]!.tree.entry.root).toBe(pendingRoot);
    expect(forced.placements[0]!.tree.entry.root).not.toBe(root);
    expect(routes(mark)).toEqual(['request:200', 'forfait:200', 'forfait:200']);
  });

  it('uses the description given for the root', async () => {
    const d = deps();
    const { placements } = await registerAggregate(d, input(docs('desc'), { description: 'release 2' }));
    const root = placements[0]!.tree.entry.root;
    expect(JSON.parse(d.store.readRecord(root)!.recordJson)).toMatchObject({ description: 'release 2' });
    expect(rootDescription(1)).toBe('Merkle root of 1 document (RFC 9162, SHA-256, salted leaves)');
  });

  it('refuses an empty list', async () => {
    await rejectionOf(registerAggregate(deps(), input([])), RangeError);
  });
});

describe('registerRoot', () => {
  it("a wait for the root's lock names the root being registered, not a bare digest never given (r104)", async () => {
    const told: string[] = [];
    const onWaiting = (message: string): void => void told.push(message);
    const deps = { ...aggregateDeps(bed), lockTiming: { noticeMs: 20, pollMs: 5, onWaiting } };
    const tree = plantTree(docs('a root waited for'), undefined, new Date());
    await deps.store.saveTree(tree.entry);
    // Another run at work on the root (held here, in this process).
    const release = await holdLock(deps.store.lockFile(tree.entry.root), 0);
    const registering = registerRoot(deps, tree, { signed: false, blockchain: 'ALGORAND', complete: true });
    for (let i = 0; i < 500 && told.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    release();
    expect(await registering).toMatchObject({ ok: true });
    expect(told).toHaveLength(1);
    expect(told[0]).toContain(`is registering the Merkle root ${tree.entry.root} already`);
  });
});

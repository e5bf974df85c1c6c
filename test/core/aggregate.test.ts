/**
 * Aggregate registration (src/core/aggregate.ts) with its dependencies
 * injected: a real ServiceStore in a temporary directory, the real ApiClient
 * against the bed's sandbox. The tree is on disk before its root is sent;
 * re-runs choose trees by where their roots stand; the store-wide lock makes
 * concurrent runs agree on one tree; a damaged tree proves nothing.
 */
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  findLeaf,
  recordOf,
  LoadedTree,
  registerAggregate,
  rootDescription,
  treeManifestText,
  Trees,
  type AggregateDocument,
  type AggregateInput,
} from '../../src/core/aggregate.js';
import { LedgerIndex } from '../../src/core/ledger.js';
import { leafHash, rootFromPath } from '../../src/core/merkle.js';
import type { FlowDeps } from '../../src/core/notarize.js';
import { StoreError } from '../../src/errors.js';
import { parseFaults } from '../../src/sandbox/server.js';
import { lockText } from '../../src/store/lock.js';
import { ServiceStore, type TreeEntry } from '../../src/store/service-store.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { rejectionOf } from '../helpers/catch.js';
import { sha256 } from '../helpers/documents.js';
import { sandboxApi } from '../helpers/sandbox-api.js';

let bed: Bed;
useBed((created) => (bed = created));

let stores = 0;
function deps(): FlowDeps & { store: ServiceStore } {
  stores += 1;
  return {
    api: sandboxApi(bed),
    store: new ServiceStore(join(bed.root, `service-${stores}`), bed.url),
    lockWaitMs: 5000,
  };
}

const docs = (...names: string[]): AggregateDocument[] =>
  names.map((name) => ({ name, sha256: sha256(name), size: name.length }));

function input(documents: AggregateDocument[], overrides: Partial<AggregateInput> = {}): AggregateInput {
  return { documents, signed: false, blockchain: 'ALGORAND', complete: true, force: false, ...overrides };
}

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
    expect(placements.map((p) => [p.tree.entry.root, p.leafIndex])).toEqual([
      [root, 0],
      [root, 1],
      [root, 2],
    ]);
    expect(roots.get(root)).toMatchObject({ ok: true, sent: true, outcome: { kind: 'completed' } });
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
    expect(second.placements.map((p) => p.leafIndex)).toEqual([1, 0]);
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
    expect(third.roots.get(root)).toMatchObject({ ok: true, sent: false, outcome: { kind: 'already-registered' } });
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
    expect(again.roots.get(root)).toMatchObject({ ok: true, sent: false, outcome: { kind: 'already-registered' } });
    expect(existsSync(d.store.pendingFile(root))).toBe(false);
    expect(readdirSync(join(lock, '..')).filter((name) => name.startsWith(root))).toEqual([]);

    // A live owner's lock (pid 1) is neither waited for nor touched, nor is the session it may be using.
    writeFileSync(d.store.pendingFile(root), session);
    writeFileSync(lock, lockText(1, 'alive'));
    const started = performance.now();
    const held = await registerAggregate(d, input(docs('k1')));
    // Waiting for it would take the flow's lock wait (then give up): not waited.
    expect(performance.now() - started).toBeLessThan(d.lockWaitMs!);
    expect(held.roots.get(root)).toMatchObject({ ok: true, sent: false, outcome: { kind: 'already-registered' } });
    expect(readFileSync(lock, 'utf8')).toBe(lockText(1, 'alive'));
    expect(readFileSync(d.store.pendingFile(root), 'utf8')).toBe(session);

    // Tidying is optional: a lock path that is not a lock fails no run, not even one that registers a new root too.
    rmSync(lock);
    mkdirSync(lock);
    const mixed = await registerAggregate(d, input(docs('k1', 'k3')));
    expect(mixed.roots.get(root)).toMatchObject({ ok: true, sent: false, outcome: { kind: 'already-registered' } });
    const newRoot = mixed.placements[1]!.tree.entry.root;
    expect(mixed.roots.get(newRoot)).toMatchObject({ ok: true, sent: true, outcome: { kind: 'completed' } });
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
    expect(b.placements.map((p) => p.tree.entry.root)).toEqual([root, root]);
    expect(routes(mark)).toEqual(['request:200', 'forfait:200']);
    const kinds = [a, b].map((r) => (r.roots.get(root) as { outcome: { kind: string } }).outcome.kind).sort();
    expect(kinds).toEqual(['already-registered', 'completed']);
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
      sent: false,
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

describe('trees in the store', () => {
  async function registered(): Promise<{ d: ReturnType<typeof deps>; root: string }> {
    const d = deps();
    const { placements } = await registerAggregate(d, input(docs('k1', 'k2', 'k3')));
    return { d, root: placements[0]!.tree.entry.root };
  }

  it('findLeaf gives a registered document its leaf, its root record and its proof; nothing for others', async () => {
    const { d, root } = await registered();
    const found = await findLeaf(d.store, sha256('k2'));
    expect(found?.leaf).toMatchObject({ index: 1, name: 'k2', sha256: sha256('k2') });
    expect(found?.entry.hash).toBe(root);
    expect(found?.proof).toMatchObject({ leafIndex: 1, treeSize: 3, root });
    expect(await findLeaf(d.store, sha256('nope'))).toBeUndefined();
    // A planned tree (its root never answered) proves nothing yet.
    bed.sandbox.addFaults(parseFaults('request:status=503*1'));
    await registerAggregate(d, input(docs('planned')));
    expect(await findLeaf(d.store, sha256('planned'))).toBeUndefined();
  });

  it('among registered trees holding a document, its latest completion speaks for it, in aggregate and verify alike', async () => {
    const d = deps();
    /** A run whose tree is made at `made` and whose root is completed at `completed` (the first clock read makes the tree). */
    const at = (made: string, completed: string) => {
      let reads = 0;
      return { ...d, now: () => new Date(reads++ === 0 ? made : completed) };
    };
    const first = await registerAggregate(
      at('2030-01-02T00:00:00.000Z', '2030-01-03T00:00:00.000Z'),
      input(docs('p', 'q')),
    );
    // Made before the first, completed after it.
    const second = await registerAggregate(
      at('2030-01-01T00:00:00.000Z', '2030-01-05T00:00:00.000Z'),
      input(docs('p', 'r'), { force: true }),
    );
    const [early, late] = [first, second].map((run) => run.placements[0]!.tree.entry.root);
    expect(early).not.toBe(late);
    expect((await Trees.load(d.store)).place(sha256('p'))?.tree.entry.root).toBe(late);
    const { index } = await LedgerIndex.load(d.store);
    expect(index.verdict(sha256('p'), 'p')).toMatchObject({ status: 'verified', entry: { hash: late } });
    expect(index.verdict(sha256('q'), 'q')).toMatchObject({ status: 'verified', entry: { hash: early } });
    // Every registered tree's names count, in any order: q under its own name, modified.
    expect(index.verdict(sha256('q, edited'), 'q')).toMatchObject({ status: 'modified', sha256: sha256('q') });
  });

  it("recordOf: a root's own record alone, a leaf's the root's record with its proof, else nothing", async () => {
    const { d, root } = await registered();
    expect(await recordOf(d.store, root)).toEqual({ entry: d.store.readRecord(root) });
    const leaf = await recordOf(d.store, sha256('k3'));
    expect(leaf?.entry.hash).toBe(root);
    expect(leaf?.underRoot).toEqual(await findLeaf(d.store, sha256('k3')));
    expect(await recordOf(d.store, sha256('nowhere'))).toBeUndefined();
  });

  it('a tree whose leaves were changed is damaged: by its leaves digest, and else by its root', async () => {
    const { d, root } = await registered();
    const file = d.store.treeFile(root);
    const forged = readFileSync(file, 'utf8').replace(sha256('k3'), sha256('forged'));
    writeFileSync(file, forged);
    let error = await rejectionOf(findLeaf(d.store, sha256('forged')), StoreError);
    expect(error.file).toBe(file);
    expect(error.message).toContain('its leaves are not those it was written with (leavesSha256 does not match)');
    // Without the digest (a file written by hand, or the digest removed too), the root still tells.
    writeFileSync(file, forged.replace(/,\n {2}"leavesSha256": "[0-9a-f]{64}"\n/, '\n'));
    error = await rejectionOf(findLeaf(d.store, sha256('forged')), StoreError);
    expect(error.message).toContain(`${file} is damaged: its leaves make root`);
  });

  it('a search passes over a tree only when it is exactly as written: any damage inside a leaf line makes it parsed, and refused', async () => {
    const { d, root } = await registered();
    const file = d.store.treeFile(root);
    const text = readFileSync(file, 'utf8');
    const k1 = sha256('k1');
    const wanted = new Set([k1]);
    const damaged = [
      text.replace(`"sha256":"${k1}"`, `"sha256":"${k1.toUpperCase()}"`), // upper case
      text.replace(`"sha256":"${k1}"`, `"sha256";"${k1}"`), // not JSON
      text.replace(/ {4}\{"index":0,[^\n]*\n/, (line) => line.replace(k1, sha256('k2'))), // another digest
      text.replace(k1, `${k1.slice(0, -1)}${k1.endsWith('0') ? '1' : '0'}`), // one digit
    ];
    for (const [i, version] of damaged.entries()) {
      writeFileSync(file, version);
      expect(() => d.store.readTree(root, wanted), `damage ${i}`).toThrow(StoreError);
    }
    // Valid JSON laid out otherwise (a space after a colon): parsed in full, and found.
    writeFileSync(file, text.replace(`"sha256":"${k1}"`, `"sha256": "${k1}"`));
    expect(d.store.readTree(root, wanted)?.root).toBe(root);
    // Exactly as written: passed over when it names none of the digests sought.
    writeFileSync(file, text);
    expect(d.store.readTree(root, new Set([sha256('elsewhere')]))).toBeUndefined();
    expect(d.store.readTree(root, wanted)?.root).toBe(root);
  });

  it('a tree file that is not JSON, or is of another root, is a problem of the listing, not a tree', async () => {
    const { d, root } = await registered();
    const other = sha256('other root');
    writeFileSync(d.store.treeFile(other), readFileSync(d.store.treeFile(root)));
    writeFileSync(d.store.treeFile(sha256('junk')), '{');
    const trees = await Trees.load(d.store);
    expect(trees.all.map((t) => t.entry.root)).toEqual([root]);
    expect(trees.problems.map((p) => p.file).sort()).toEqual(
      [d.store.treeFile(other), d.store.treeFile(sha256('junk'))].sort(),
    );
  });

  it('a search for some digests parses only the trees that name one, and every tree not written whole', async () => {
    const { d, root } = await registered();
    const other = (await registerAggregate(d, input(docs('o1', 'o2')))).placements[0]!.tree.entry.root;
    expect(d.store.readTree(root, new Set([sha256('o1')]))).toBeUndefined();
    expect(d.store.readTree(other, new Set([sha256('o1')]))?.root).toBe(other);
    expect((await d.store.listTrees(new Set([sha256('k2')]))).entries.map((t) => t.root)).toEqual([root]);
    // Cut short, it may have lost the very leaf searched for: it is parsed, and damaged.
    const file = d.store.treeFile(root);
    writeFileSync(file, readFileSync(file, 'utf8').slice(0, -20));
    expect(() => d.store.readTree(root, new Set([sha256('o1')]))).toThrow(StoreError);
    // A tree edited by hand into another layout is parsed too, and still found.
    writeFileSync(file, JSON.stringify(JSON.parse(readFileSync(d.store.treeFile(other), 'utf8'))));
    expect(() => d.store.readTree(root, new Set([sha256('nothing')]))).toThrow(StoreError); // of another root
  });

  it('the manifest holds every leaf, one per line, under its root', () => {
    const entry: TreeEntry = {
      root: 'a'.repeat(64),
      treeSize: 2,
      description: 'd',
      createdAt: '2030-01-01T00:00:00.000Z',
      leaves: [0, 1].map((index) => ({
        index,
        name: `n${index}`,
        sha256: sha256(`n${index}`),
        size: 1,
        salt: 'b'.repeat(64),
      })),
    };
    const text = [...treeManifestText(entry)].join('');
    expect(JSON.parse(text)).toEqual({
      type: 'notarize-tree',
      version: 1,
      proofType: 'rfc9162-sha256-salted-leaf',
      ...entry,
      leavesSha256: createHash('sha256')
        .update(entry.leaves.map((leaf) => `${JSON.stringify(leaf)}\n`).join(''))
        .digest('hex'),
    });
    expect(text.split('\n').filter((line) => line.startsWith('    {"index":'))).toHaveLength(2);
    expect(new LoadedTree(entry, { state: 'planned' }).entry).toBe(entry);
  });
});

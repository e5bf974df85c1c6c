/**
 * The manifests of --receipt-dir as a run on a store without their trees
 * uses them (src/core/manifests.ts): which ones may place a document
 * (anyManifestFor, nothing sent), and asking the bed's sandbox about their
 * roots (adoptManifests): a 409 places documents, a session places none and
 * keeps nothing, an answer that is neither fails the documents. The flow
 * around them: test/flow/aggregate.test.ts.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { adoptManifests, anyManifestFor, ManifestIndex, RootAsks } from '../../src/core/manifests.js';
import { treeManifestText, type AggregateDocument } from '../../src/core/trees.js';
import { aggregateDeps, aggregateInput, docs, registerAggregate } from '../helpers/aggregate.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { parseFaults } from '../../src/sandbox/server.js';
import type { NotarizeError } from '../../src/errors.js';

let bed: Bed;
useBed((created) => (bed = created));

let dirs = 0;

/**
 * A --receipt-dir (`dir`, else a new one) holding the manifest of a tree over
 * `documents`, registered with the sandbox unless `registered` is false.
 */
async function manifestOf(
  documents: AggregateDocument[],
  registered = true,
  dir = join(bed.root, `receipts-${++dirs}`),
) {
  const run = await registerAggregate(aggregateDeps(bed), aggregateInput(documents, { complete: registered }));
  const { entry } = run.placements[0]!.tree;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${entry.root}.tree.json`), [...treeManifestText(entry)].join(''));
  return { dir, root: entry.root };
}

const digests = (documents: AggregateDocument[]) => new Set(documents.map((doc) => doc.sha256));

describe('anyManifestFor', () => {
  it('says whether a manifest may place one of the unplaced documents; never with --force', async () => {
    const ab = docs('any-a', 'any-b');
    const { dir } = await manifestOf(ab);
    const query = (overrides = {}) => aggregateInput(ab, { manifestDir: dir, ...overrides });
    const mark = bed.mark();
    expect(await anyManifestFor(query(), digests(ab))).toBe(true);
    expect(await anyManifestFor(query(), new Set())).toBe(false);
    expect(await anyManifestFor(query({ force: true }), digests(ab))).toBe(false);
    // A run without one of its documents can use it for the others (a re-run with one changed or gone).
    expect(await anyManifestFor(aggregateInput(docs('any-a'), { manifestDir: dir }), digests(docs('any-a')))).toBe(
      true,
    );
    expect(bed.callsSince(mark)).toEqual([]);
    // One of a larger tree's documents: read (a re-run of one document, its receipt lost, pays nothing).
    const many = docs('many-1', 'many-2', 'many-3', 'many-4', 'many-5');
    const { dir: manyDir } = await manifestOf(many);
    const one = [many[0]!];
    expect(await anyManifestFor(aggregateInput(one, { manifestDir: manyDir }), digests(one))).toBe(true);
    // Not one of more than 10,000 leaves, and more than 4 per document of the run: a run of one never
    // builds a tree of a million (only its leaf lines are read here, so its root need not fold).
    const huge = join(bed.root, 'huge-manifest');
    mkdirSync(huge);
    const leaves = (count: number) =>
      Array.from({ length: count }, (_, index) => ({
        index,
        name: `l${index}`,
        sha256: one[0]!.sha256,
        size: 1,
        salt: 'ab'.repeat(32),
      }));
    const entry = (count: number) => ({
      root: 'cd'.repeat(32),
      treeSize: count,
      description: 'd',
      createdAt: '2026-01-01T00:00:00Z',
      leaves: leaves(count),
    });
    writeFileSync(join(huge, `${'cd'.repeat(32)}.tree.json`), [...treeManifestText(entry(10_001))].join(''));
    // Said yes of, so that adoptManifests names it in a warning; never asked about, nothing placed.
    expect(await anyManifestFor(aggregateInput(one, { manifestDir: huge }), digests(one))).toBe(true);
    const warnings: string[] = [];
    const unplaced = digests(one);
    const hugeMark = bed.mark();
    const adopted = await adoptManifests(
      aggregateDeps(bed),
      aggregateInput(one, { manifestDir: huge, warn: (message) => warnings.push(message) }),
      unplaced,
    );
    expect(adopted.placements.size).toBe(0);
    expect(unplaced.size).toBe(1);
    expect(bed.callsSince(hugeMark)).toEqual([]);
    expect(warnings).toEqual([
      expect.stringMatching(
        /^tree manifests in --receipt-dir not read, as larger than a run of 1 document reads \(10000 leaves\)/,
      ),
    ]);
    writeFileSync(join(huge, `${'cd'.repeat(32)}.tree.json`), [...treeManifestText(entry(10_000))].join(''));
    expect(await anyManifestFor(aggregateInput(one, { manifestDir: huge }), digests(one))).toBe(true);
  });

  it('says yes for a manifest not as notarize writes it, so that it is passed over with a warning', async () => {
    const dir = join(bed.root, 'odd-manifest');
    mkdirSync(dir);
    writeFileSync(join(dir, `${'ab'.repeat(32)}.tree.json`), '{"not": "a tree"}');
    expect(await anyManifestFor(aggregateInput(docs('odd'), { manifestDir: dir }), digests(docs('odd')))).toBe(true);
  });
});

describe('adoptManifests', () => {
  it('a 409 places the documents under the root the service has, as an adopted, confirmed tree', async () => {
    const ab = docs('adopt-a', 'adopt-b');
    const { dir, root } = await manifestOf(ab);
    const unplaced = digests(ab);
    const mark = bed.mark();
    const deps = aggregateDeps(bed);
    const adopted = await adoptManifests(deps, aggregateInput(ab, { manifestDir: dir }), unplaced);
    expect(bed.callsSince(mark).map((c) => `${c.route}:${c.status}`)).toEqual(['login:200', 'request:409']);
    expect(deps.api.anythingSent).toBe(true);
    expect(unplaced.size).toBe(0);
    expect(adopted.roots.get(root)).toMatchObject({ kind: 'has' });
    const placement = adopted.placements.get(ab[1]!.sha256)!;
    expect(placement).toMatchObject({ leafIndex: 1, tree: { adopted: true, state: 'confirmed' } });
    expect(placement.tree.entry.root).toBe(root);
  });

  it('a root the service does not know places nothing, and nothing of it is kept', async () => {
    const ab = docs('unknown-a', 'unknown-b');
    // Requested but never completed: the service has no record of that root.
    const { dir } = await manifestOf(ab, false);
    const deps = aggregateDeps(bed);
    const unplaced = digests(ab);
    const adopted = await adoptManifests(deps, aggregateInput(ab, { manifestDir: dir }), unplaced);
    expect(deps.api.anythingSent).toBe(true);
    expect(adopted.placements.size).toBe(0);
    expect(adopted.roots.size).toBe(0);
    expect(unplaced.size).toBe(2);
    expect((await deps.store.listPending()).entries).toEqual([]);
  });

  /**
   * `count` documents, each alone in the manifest of an earlier run in one
   * folder (registered or left pending), adopted by a run over all of them;
   * with the request steps it sent and what it warned.
   */
  async function onePerManifest(tag: string, count: number, registered: boolean) {
    const dir = join(bed.root, tag);
    const all = docs(...Array.from({ length: count }, (_, i) => `${tag}-${i}`));
    for (const doc of all) await manifestOf([doc], registered, dir);
    const unplaced = digests(all);
    const warnings: string[] = [];
    const mark = bed.mark();
    const input = aggregateInput(all, { manifestDir: dir, warn: (message) => warnings.push(message) });
    const adopted = await adoptManifests(aggregateDeps(bed), input, unplaced);
    const requests = bed.callsSince(mark).filter((c) => c.route === 'request');
    return { dir, adopted, unplaced, warnings, requests };
  }

  it('asks about every manifest that places a document: a release grown by one document a run pays nothing again', async () => {
    const { adopted, unplaced, warnings, requests } = await onePerManifest('grown', 20, true);
    expect(unplaced.size).toBe(0);
    expect(adopted.placements.size).toBe(20);
    expect(requests.map((c) => c.status)).toEqual(Array.from({ length: 20 }, () => 409));
    expect(warnings).toEqual([]);
  });

  it('after 16 roots the service does not have, asks no more: the documents the rest hold fail, never paid again', async () => {
    // Manifests of runs that never completed their root.
    const { dir, adopted, unplaced, requests, warnings } = await onePerManifest('stale', 18, false);
    expect(requests).toHaveLength(16);
    // One warning names the 16 the service does not have: the ones to move aside.
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^the service does not have the roots of these 16 tree manifests /);
    expect(warnings[0]!.match(new RegExp(`${dir}/[0-9a-f]{64}\\.tree\\.json`, 'g'))).toHaveLength(16);
    expect(unplaced.size).toBe(16);
    expect(adopted.placements.size).toBe(2);
    const left = [...adopted.roots.values()];
    expect(left).toHaveLength(2);
    for (const said of left) {
      expect(said).toMatchObject({ kind: 'failed', error: { code: 'manifests_unasked', exitCode: 1 } });
      expect((said as { error: Error }).error.message).toMatch(
        /^not registered: the tree manifest .*\.tree\.json may hold it, but 16 roots asked about were unknown to the service/,
      );
    }
  });

  it('a 2xx that cannot be read as a session is no answer: the ask failed, and its documents with it', async () => {
    const ab = docs('html-a', 'html-b');
    const { dir, root } = await manifestOf(ab);
    bed.sandbox.addFaults(parseFaults('request:html*1'));
    const unplaced = digests(ab);
    const adopted = await adoptManifests(aggregateDeps(bed), aggregateInput(ab, { manifestDir: dir }), unplaced);
    expect(unplaced.size).toBe(0);
    expect(adopted.roots.get(root)).toMatchObject({ kind: 'failed', error: { exitCode: 5 } });
    expect(adopted.placements.get(ab[0]!.sha256)).toMatchObject({ tree: { adopted: true, state: 'planned' } });
  });

  it('an ask answered with JSON of the wrong shape fails too, saying what to do (it has no hint of its own)', async () => {
    // A root requested, never completed: the service processes the ask, then answers of the wrong shape.
    const ab = docs('shape-a', 'shape-b');
    const { dir, root } = await manifestOf(ab, false);
    bed.sandbox.addFaults(parseFaults('request:wrong-shape*1'));
    const adopted = await adoptManifests(aggregateDeps(bed), aggregateInput(ab, { manifestDir: dir }), digests(ab));
    const said = adopted.roots.get(root) as { kind: string; error: NotarizeError };
    expect(said.kind).toBe('failed');
    expect(said.error.exitCode).toBe(5);
    expect(said.error.hint).toBe(
      `asking about root ${root} (its manifest in --receipt-dir) got no answer that says whether the service has it; ` +
        'run the same command again once it answers normally',
    );
  });
});

describe('RootAsks.warnStaleManifests', () => {
  // No service needed: what the asks answered is given.
  const absent = () => Promise.resolve({ kind: 'absent' } as const);

  it('names a manifest of a root the service does not have, also when a receipt asked about that root first', async () => {
    const dir = bed.path('stale-asks');
    mkdirSync(dir, { recursive: true });
    const root = 'ab'.repeat(32);
    const manifest = join(dir, `${root}.tree.json`);
    writeFileSync(manifest, '{}');
    const asks = new RootAsks();
    let asked = 0;
    const ask = () => (asked++, absent());
    await asks.ask(root, join(dir, 'a.txt.notarization.json'), ask);
    await asks.ask(root, manifest, ask);
    expect(asked).toBe(1);
    const warnings: string[] = [];
    asks.warnStaleManifests((message) => warnings.push(message));
    asks.warnStaleManifests((message) => warnings.push(message));
    expect(warnings).toEqual([
      'the service does not have the root of this tree manifest in --receipt-dir: unless a run elsewhere still ' +
        'completes it, the manifest proves nothing, and `verify` over that folder reports it unknown (move it ' +
        `aside, or leave it out with --exclude): ${manifest}`,
    ]);
  });

  it('names several such manifests in one warning', async () => {
    const dir = bed.path('stale-several');
    mkdirSync(dir, { recursive: true });
    const manifests = ['cd', 'ef'].map((pair) => join(dir, `${pair.repeat(32)}.tree.json`));
    for (const manifest of manifests) writeFileSync(manifest, '{}');
    const asks = new RootAsks();
    for (const manifest of manifests) await asks.ask(basename(manifest).slice(0, 64), manifest, absent);
    const warnings: string[] = [];
    asks.warnStaleManifests((message) => warnings.push(message));
    expect(warnings).toEqual([
      'the service does not have the roots of these 2 tree manifests in --receipt-dir: unless runs elsewhere ' +
        'still complete them, they prove nothing, and `verify` over that folder reports them unknown (move them ' +
        `aside, or leave them out with --exclude): ${manifests.join(', ')}`,
    ]);
  });

  it('after 16 unknown roots, the warning that stops the asking names such a manifest too', async () => {
    const dir = bed.path('stale-refusal');
    mkdirSync(dir, { recursive: true });
    const roots = Array.from({ length: 17 }, (_, i) => i.toString(16).padStart(2, '0').repeat(32));
    const asks = new RootAsks();
    for (const [i, root] of roots.slice(0, 16).entries()) {
      await asks.ask(root, join(dir, `d${i}.txt.notarization.json`), absent);
    }
    const manifest = join(dir, `${roots[0]}.tree.json`);
    await asks.ask(roots[0]!, manifest, absent);
    const warnings: string[] = [];
    expect(asks.refusal(roots[16]!, join(dir, 'd16.txt.notarization.json'), (m) => warnings.push(m))).toBeDefined();
    asks.warnStaleManifests((message) => warnings.push(message));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^the service does not have the roots of these 17 tree manifests and receipts /);
    expect(warnings[0]).toContain(manifest);
  });

  it('says nothing of receipts, of manifests gone since, nor of roots the service has', async () => {
    const dir = bed.path('stale-none');
    mkdirSync(dir, { recursive: true });
    const asks = new RootAsks();
    await asks.ask('cd'.repeat(32), join(dir, 'b.txt.notarization.json'), absent);
    await asks.ask('ef'.repeat(32), join(dir, `${'ef'.repeat(32)}.tree.json`), absent);
    const has = join(dir, `${'12'.repeat(32)}.tree.json`);
    writeFileSync(has, '{}');
    await asks.ask('12'.repeat(32), has, () => Promise.resolve({ kind: 'has', message: undefined } as const));
    const warnings: string[] = [];
    asks.warnStaleManifests((message) => warnings.push(message));
    expect(warnings).toEqual([]);
  });
});

describe('ManifestIndex (per-document register on a store without the trees)', () => {
  it("places every document of a manifest from one reading of it: one tree, each leaf's index (r82)", async () => {
    const documents = docs('m-a', 'm-b', 'm-c', 'm-a');
    const { dir, root } = await manifestOf(documents);
    const index = new ManifestIndex(dir, documents.length, () => {});
    const [manifest] = await index.holding(documents[1]!.sha256);
    expect(manifest).toEqual({ root, file: join(dir, `${root}.tree.json`) });
    const placements = await Promise.all(documents.map(async (doc) => (await index.placement(manifest!, doc.sha256))!));
    // A document named twice: its first leaf, as before.
    expect(placements.map((p) => p.leafIndex)).toEqual([0, 1, 2, 0]);
    // Read and folded once: per document it was read again, quadratic in a tree's size (3,000: 106 s).
    for (const placement of placements) expect(placement.tree).toBe(placements[0]!.tree);
    expect(placements[2]!.tree.proof(2, manifest!.file).root).toBe(root);
    expect((await index.placement(manifest!, 'f'.repeat(64)))!.leafIndex).toBe(-1);
  });

  it('a manifest that does not fold to its root places no document that asks, and is said once (r84)', async () => {
    const documents = docs('bad-a', 'bad-b', 'bad-c');
    const { dir, root } = await manifestOf(documents);
    const file = join(dir, `${root}.tree.json`);
    writeFileSync(file, readFileSync(file, 'utf8').replace(documents[0]!.sha256, documents[1]!.sha256));
    const warnings: string[] = [];
    const index = new ManifestIndex(dir, documents.length, (message) => warnings.push(message));
    for (const doc of documents) expect(await index.placement({ root, file }, doc.sha256)).toBeUndefined();
    // Once, not once per document: 3,000 documents under one such manifest printed 3,000 lines.
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(new RegExp(`^a tree manifest was passed over: .*${root}`));
  });
});

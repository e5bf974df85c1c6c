/**
 * The manifests of --receipt-dir as a run on a store without their trees
 * uses them (src/core/manifests.ts): which ones may place a document
 * (anyManifestFor, nothing sent), and asking the bed's sandbox about their
 * roots (adoptManifests): a 409 places documents, any 2xx places none and
 * keeps nothing. The flow around them: test/flow/aggregate.test.ts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { registerAggregate } from '../../src/core/aggregate.js';
import { adoptManifests, anyManifestFor } from '../../src/core/manifests.js';
import { treeManifestText, type AggregateDocument } from '../../src/core/trees.js';
import { aggregateDeps, aggregateInput, docs } from '../helpers/aggregate.js';
import { type Bed, useBed } from '../helpers/bed.js';

let bed: Bed;
useBed((created) => (bed = created));

let dirs = 0;

/** A --receipt-dir holding the manifest of a tree over `documents`, registered with the sandbox unless `registered` is false. */
async function manifestOf(documents: AggregateDocument[], registered = true) {
  const run = await registerAggregate(aggregateDeps(bed), aggregateInput(documents, { complete: registered }));
  const { entry } = run.placements[0]!.tree;
  const dir = join(bed.root, `receipts-${++dirs}`);
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
    // A run without one of its documents cannot use it.
    expect(await anyManifestFor(aggregateInput(docs('any-a'), { manifestDir: dir }), digests(docs('any-a')))).toBe(
      false,
    );
    expect(bed.callsSince(mark)).toEqual([]);
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
    const adopted = await adoptManifests(aggregateDeps(bed), aggregateInput(ab, { manifestDir: dir }), unplaced);
    expect(bed.callsSince(mark).map((c) => `${c.route}:${c.status}`)).toEqual(['login:200', 'request:409']);
    expect(adopted.sent).toBe(true);
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
    expect(adopted.sent).toBe(true);
    expect(adopted.placements.size).toBe(0);
    expect(adopted.roots.size).toBe(0);
    expect(unplaced.size).toBe(2);
    expect((await deps.store.listPending()).entries).toEqual([]);
  });
});

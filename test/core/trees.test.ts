/**
 * The trees of aggregate registrations as the store keeps them
 * (src/core/trees.ts): each document's leaf, record and proof under its
 * registered root, what `show` and `receipt` find, and a damaged tree file
 * that proves nothing. Trees are made by registering against the bed's
 * sandbox, on a real ServiceStore in a temporary directory.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LedgerIndex } from '../../src/core/ledger.js';
import { findLeaf, LoadedTree, recordOf, treeManifestText, Trees } from '../../src/core/trees.js';
import { StoreError } from '../../src/errors.js';
import { parseFaults } from '../../src/sandbox/server.js';
import { type TreeEntry } from '../../src/store/service-store.js';
import { aggregateDeps, aggregateInput as input, docs, registerAggregate } from '../helpers/aggregate.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { rejectionOf } from '../helpers/catch.js';
import { sha256 } from '../helpers/documents.js';

let bed: Bed;
useBed((created) => (bed = created));

const deps = () => aggregateDeps(bed);

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

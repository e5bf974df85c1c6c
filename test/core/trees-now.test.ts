/**
 * TreesNow (src/core/trees-now.ts): the last look at the store's trees a run
 * takes under a document's lock, on a real store in a temporary directory,
 * roots registered against the bed's sandbox, real lock files.
 */
import { describe, expect, it } from 'vitest';
import { registerRoot } from '../../src/core/aggregate.js';
import { plantTree } from '../../src/core/trees.js';
import { TreesNow, UnderRootSince } from '../../src/core/trees-now.js';
import { ProtocolError, TransientError } from '../../src/errors.js';
import { holdLock } from '../../src/store/lock.js';
import { aggregateDeps, docs } from '../helpers/aggregate.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { rejectionOf } from '../helpers/catch.js';

let bed: Bed;
useBed((created) => (bed = created));

const FLAGS = { signed: false, blockchain: 'ALGORAND', complete: true } as const;

describe('TreesNow.settle', () => {
  it('returns for a document under no tree, and for one under a tree planned by a run that is gone', async () => {
    const deps = aggregateDeps(bed);
    const [a, b] = docs('free a', 'free b');
    const trees = new TreesNow(deps.store);
    await trees.settle(deps, a!.sha256, 'then');
    // Planted now, within the same tick as nothing else: seen (the folder's names changed), and freed.
    await deps.store.saveTree(plantTree([a!], undefined, new Date()).entry);
    expect((await trees.current()).place(a!.sha256)?.tree.state).toBe('planned');
    await trees.settle(deps, a!.sha256, 'then');
    await trees.settle(deps, b!.sha256, 'then');
  });

  it('a document under a root registered since it was read: UnderRootSince naming the root', async () => {
    const deps = aggregateDeps(bed);
    const [a] = docs('registered since');
    const tree = plantTree([a!], undefined, new Date());
    await deps.store.saveTree(tree.entry);
    const trees = new TreesNow(deps.store);
    expect((await trees.current()).place(a!.sha256)?.tree.state).toBe('planned');
    expect(await registerRoot(deps, tree, FLAGS)).toMatchObject({ ok: true });
    // The trees as read say planned; its state now is looked at, not the one read.
    const error = await rejectionOf(trees.settle(deps, a!.sha256, 'then'), UnderRootSince);
    expect(error).toMatchObject({ root: tree.entry.root, exitCode: 4, notProcessed: true });
  });

  it("a tree whose root's lock is held (a run registering it) is waited for, then looked at again", async () => {
    const deps = aggregateDeps(bed);
    const [a] = docs('waited for');
    const tree = plantTree([a!], undefined, new Date());
    await deps.store.saveTree(tree.entry);
    const release = await holdLock(deps.store.lockFile(tree.entry.root), 0);
    const trees = new TreesNow(deps.store);
    const settled = trees.settle(deps, a!.sha256, 'then').then(
      () => 'returned',
      (error: unknown) => error,
    );
    try {
      // Still waiting while the root is registered under its lock.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await registerRoot({ ...deps, heldAcross: new Set([tree.entry.root]) }, tree, FLAGS)).toMatchObject({
        ok: true,
      });
    } finally {
      release();
    }
    expect(await settled).toBeInstanceOf(UnderRootSince);
  });

  it('the store-wide aggregate lock held (a run placing documents): waited for, then a tree gone frees the document', async () => {
    const deps = aggregateDeps(bed);
    const [a] = docs('aggregate at work');
    const tree = plantTree([a!], undefined, new Date());
    await deps.store.saveTree(tree.entry);
    const release = await holdLock(deps.store.lockFile('aggregate'), 0);
    const trees = new TreesNow(deps.store);
    let done = false;
    const settled = trees.settle(deps, a!.sha256, 'then').finally(() => (done = true));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(done).toBe(false);
    // That run plants the document's tree again without it (another process took it up), and lets go.
    deps.store.removeTree(tree.entry.root);
    release();
    await settled;
  });

  it('a run at work on the tree for longer than the lock wait: exit 4 naming the root and the document, nothing sent', async () => {
    const deps = { ...aggregateDeps(bed), lockWaitMs: 50 };
    const [a] = docs('held too long');
    const tree = plantTree([a!], undefined, new Date());
    await deps.store.saveTree(tree.entry);
    const release = await holdLock(deps.store.lockFile(tree.entry.root), 0);
    try {
      const error = await rejectionOf(new TreesNow(deps.store).settle(deps, a!.sha256, 'then'), TransientError);
      expect(error).toMatchObject({ exitCode: 4, notProcessed: true });
      expect(error.message).toBe(
        `another notarize process is registering the Merkle root ${tree.entry.root}, whose tree holds ${a!.sha256}`,
      );
      expect(bed.sandbox.calls).toEqual([]);
    } finally {
      release();
    }
    // The store-wide lock of a run placing documents, the same way.
    const placing = await holdLock(deps.store.lockFile('aggregate'), 0);
    try {
      const error = await rejectionOf(new TreesNow(deps.store).settle(deps, a!.sha256, 'then'), TransientError);
      expect(error.message).toBe(
        `another notarize process is placing documents in Merkle trees, one of them holding ${a!.sha256}`,
      );
    } finally {
      placing();
    }
  });

  it('a planned root whose request step was answered unreadably stops it, saying what waits', async () => {
    const deps = aggregateDeps(bed);
    const [a] = docs('unread root');
    const tree = plantTree([a!], undefined, new Date());
    await deps.store.saveTree(tree.entry);
    await deps.store.markUnanswered({
      hash: tree.entry.root,
      description: 'root',
      requestedAt: new Date().toISOString(),
    });
    const error = await rejectionOf(new TreesNow(deps.store).settle(deps, a!.sha256, 'the rest waits'), ProtocolError);
    expect(error.message).toContain(
      `under the Merkle root ${tree.entry.root}, whose request step was answered unreadably`,
    );
    expect(error.hint).toContain('the rest waits');
  });
});

/**
 * The store's Merkle trees as they are now, for the last look a run takes,
 * holding a document's lock, before it sends something for that document on
 * its own: a request step (per-document register, and the documents
 * `register --aggregate` settles on their own) or the completion of its own
 * session (`complete --all`). `register --aggregate` saves a new tree and
 * takes its root's lock, then looks at its documents' locks, leaving out
 * those held (aggregate.ts); a run here took the document's lock, then looks
 * at the trees: so one of the two always sees the other, and a document is
 * never both paid for on its own and under that root.
 */
import { existsSync, readdirSync } from 'node:fs';
import { TransientError } from '../errors.js';
import type { ServiceStore } from '../store/service-store.js';
import { locked, type FlowDeps } from './notarize.js';
import { rootState, Trees, underUnreadRoot } from './trees.js';

/** How many times `settled` looks again at a tree holding the document, at work in another run, before it gives up (exit 4). */
const MAX_LOOKS = 8;

/**
 * A root another process planted over the document answers for it now
 * (registered or pending since, or a run at work on it for too long):
 * nothing was sent for the document on its own.
 */
export class UnderRootSince extends TransientError {
  readonly root: string;
  constructor(hash: string, root: string) {
    super(
      `${hash} was placed under the Merkle root ${root} by another notarize process (register --aggregate) ` +
        'while this run was about to send it on its own',
      { hint: 'run the command again: that root answers for it', notProcessed: true },
    );
    this.root = root;
  }
}

/**
 * What a run holding the lock of `root` is doing, as a lock wait says it (LockTiming.doing) and its
 * timeout: the lock's name, a digest, would read as a document's ("the same hash"); `hash`: the
 * document waiting, when one is.
 */
export function registeringRoot(root: string, hash?: string): string {
  return `is registering the Merkle root ${root}${hash === undefined ? '' : `, whose tree holds ${hash}`}`;
}

export class TreesNow {
  readonly #store: ServiceStore;
  #trees: Promise<Trees> | undefined;
  /** The trees folder's names when #trees was read (treesStamp). */
  #stamp: string | undefined;

  constructor(store: ServiceStore) {
    this.#store = store;
  }

  /**
   * The trees, read again whenever one was planted or removed since they
   * were read (another process's --aggregate, under way now). Each tree's
   * state is as it was when read.
   */
  current(): Promise<Trees> {
    const stamp = treesStamp(this.#store.treesDir);
    if (this.#trees === undefined || stamp !== this.#stamp) {
      this.#trees = Trees.load(this.#store);
      this.#stamp = stamp;
    }
    return this.#trees;
  }

  /** Reads the trees again at the next look (their states may have moved). */
  forget(): void {
    this.#trees = undefined;
  }

  /**
   * Called holding the lock of the document of digest `hash`: throws
   * UnderRootSince when a tree registered, confirmed or pending holds it
   * now. A tree only planned, by a run at work on it (the `aggregate` lock
   * held, or its root's: held from its planting to its registration), is
   * waited for (`deps`' lock wait), then looked at again; one planned by a
   * run that is gone frees its documents: returns. One whose request step
   * was answered unreadably stops it (exit 5: `toFinish` says what waits).
   */
  async settle(
    deps: Pick<FlowDeps, 'store' | 'lockWaitMs' | 'lockTiming'>,
    hash: string,
    toFinish: string,
  ): Promise<void> {
    const store = this.#store;
    for (let looks = 0; ; looks++) {
      const placed = (await this.current()).place(hash);
      if (placed === undefined) return;
      const root = placed.tree.entry.root;
      if (looks > MAX_LOOKS) throw new UnderRootSince(hash, root);
      // Removed meanwhile (planted again without it): look again.
      if (!existsSync(store.treeFile(root))) {
        this.forget();
        continue;
      }
      // Its state now, not as read for an earlier document: it may have been registered since. (By the
      // root's files: the tree itself, maybe of 100,000 leaves, is not read again for each document.)
      if ((await rootState(store, root)) !== 'planned') throw new UnderRootSince(hash, root);
      if (store.readUnanswered(root) !== undefined) throw underUnreadRoot(root, toFinish);
      // In this order: a run planting a tree takes its root's lock before letting go of the `aggregate` one.
      const atWork = existsSync(store.lockFile('aggregate'))
        ? 'aggregate'
        : existsSync(store.lockFile(root))
          ? root
          : '';
      if (atWork === '') return;
      // The lock's own words would say that run works on "the same hash", or on a digest the user
      // never gave: it works on the root of a tree holding the document.
      const doing =
        atWork === root
          ? registeringRoot(root, hash)
          : `is placing documents in Merkle trees, one of them holding ${hash}`;
      try {
        await locked({ ...deps, lockTiming: { ...deps.lockTiming, doing } }, atWork, async () => {});
      } catch (error) {
        if (!(error instanceof TransientError)) throw error;
        throw new TransientError(`another notarize process ${doing}`, {
          hint: 'wait for it to finish, then run the command again: that root answers for the document',
          notProcessed: true,
          cause: error,
        });
      }
      this.forget();
    }
  }
}

/**
 * The names in the store's trees folder, as one string: a tree planted or
 * removed changes it ('' when there is none). Not the folder's modification
 * time, which the kernel takes from a clock that moves every few
 * milliseconds: a tree planted in the same tick as the last change would
 * leave it as it was.
 */
function treesStamp(treesDir: string): string {
  try {
    return readdirSync(treesDir)
      .filter((name) => TREE_FILE.test(name))
      .sort()
      .join(' ');
  } catch {
    return '';
  }
}

const TREE_FILE = /^[0-9a-f]{64}\.json$/;

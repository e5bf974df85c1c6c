/**
 * What the unit tests of aggregate registration share (test/core/aggregate,
 * trees and manifests): flow dependencies with a real ServiceStore in the
 * bed's temporary directory and the real ApiClient against its sandbox, and
 * documents made from names.
 */
import { join } from 'node:path';
import type { AggregateInput } from '../../src/core/aggregate.js';
import type { FlowDeps } from '../../src/core/notarize.js';
import type { AggregateDocument } from '../../src/core/trees.js';
import { ServiceStore } from '../../src/store/service-store.js';
import type { Bed } from './bed.js';
import { sha256 } from './documents.js';
import { sandboxApi } from './sandbox-api.js';

let stores = 0;

/** Flow dependencies on a new, empty store of the bed's sandbox. */
export function aggregateDeps(bed: Bed): FlowDeps & { store: ServiceStore } {
  stores += 1;
  return {
    api: sandboxApi(bed),
    store: new ServiceStore(join(bed.root, `service-${stores}`), bed.url),
    lockWaitMs: 5000,
  };
}

/** Documents named `names`, each the digest of its name. */
export const docs = (...names: string[]): AggregateDocument[] =>
  names.map((name) => ({ name, sha256: sha256(name), size: name.length }));

/** An aggregate run over `documents`, completed, with `overrides`. */
export function aggregateInput(
  documents: AggregateDocument[],
  overrides: Partial<AggregateInput> = {},
): AggregateInput {
  return { documents, signed: false, blockchain: 'ALGORAND', complete: true, force: false, ...overrides };
}

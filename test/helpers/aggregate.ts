/**
 * What the unit tests of aggregate registration share (test/core/aggregate,
 * trees and manifests): flow dependencies with a real ServiceStore in the
 * bed's temporary directory and the real ApiClient against its sandbox, and
 * documents made from names; and the two steps of register --aggregate's
 * core (placeDocuments, then registerRoots) run back to back, without the
 * command's checks between them (src/commands/register-aggregate.ts).
 */
import { join } from 'node:path';
import { type AggregateInput, placeDocuments, registerRoots, type RootResult } from '../../src/core/aggregate.js';
import type { FlowDeps } from '../../src/core/notarize.js';
import type { AggregateDocument, Placement } from '../../src/core/trees.js';
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

/** What registerAggregate gave: each document's place, those left out, each root's outcome. */
export interface AggregateResult {
  /** Each document's place, by the index of the document in the input (Placed.placements). */
  placements: (Placement | undefined)[];
  /** The documents left for their own registration (Placed.leftOut). */
  leftOut: number[];
  /** Each root this run dealt with, and what happened to it. */
  roots: Map<string, RootResult>;
}

/** Places `input.documents` under Merkle roots and registers the roots, as the command does, its holds released after. */
export async function registerAggregate(deps: FlowDeps, input: AggregateInput): Promise<AggregateResult> {
  const { placements, leftOut, asked, holds } = await placeDocuments(deps, input);
  try {
    return { placements, leftOut, roots: await registerRoots(deps, input, placements, asked, holds) };
  } finally {
    for (const release of holds.values()) release();
  }
}

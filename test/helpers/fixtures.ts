/** The hand-written wire samples of shared/service-api.md, kept in test/fixtures/. */
import { readFileSync } from 'node:fs';

export type FixtureName = 'session-free-plan.json' | 'record.json' | 'session-quirks.json';

/** The exact text of a fixture file. */
export function readFixture(name: FixtureName): string {
  return readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8');
}

/** A fixture parsed as a JSON object. */
export function fixtureObject(name: FixtureName): Record<string, unknown> {
  return JSON.parse(readFixture(name)) as Record<string, unknown>;
}

/**
 * The documentation's sample record (a completed registration) of `hash`,
 * with `extra` members added, as one line of JSON: the bare record a receipt
 * written before v1 is.
 */
export function sampleRecord(hash: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ ...fixtureObject('record.json'), hash, ...extra });
}

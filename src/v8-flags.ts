/**
 * V8 settings for a process that usually lives a fraction of a second.
 *
 * undici parses HTTP answers with llhttp, a WebAssembly module. V8 compiles
 * its functions with Liftoff, its fast baseline compiler, and recompiles hot
 * ones with TurboFan once they have spent a budget of work. That budget is
 * small: a one-document `register` (login, request, forfait: three answers)
 * already had llhttp's parser recompiled, 65 ms of CPU in a run of about 230
 * on Node 20 (V8 11), 35-56 ms on Node 22 and 24 (V8 12, 13), as
 * `node --trace-wasm-compilation-times` shows: more than all of its HTTP work.
 *
 * So the budget is raised: a short run stays on Liftoff's code, and a long
 * one (a batch of documents, a few dozen answers in) still gets TurboFan's.
 * V8 reads the flag when it compiles, which has not happened yet when the
 * entry points call this first thing; no other flag is touched. Only on the
 * V8 versions this was measured on: a flag a later V8 no longer knows would
 * be reported on stderr.
 */
import { setFlagsFromString } from 'node:v8';

/** V8's WebAssembly tier-up budget here (defaults: 1,800,000 in V8 11, 13,000,000 in V8 13); about 10 to 25 answers. */
export const WASM_TIERING_BUDGET = 100_000_000;

/** The V8 majors of Node 20, 22 and 24, where the flag was measured. */
const KNOWN_V8_MAJORS = new Set(['11', '12', '13']);

/** Raises V8's WebAssembly tier-up budget (see the module comment); returns whether it did. */
export function deferWasmTierUp(v8Version = process.versions.v8): boolean {
  if (!KNOWN_V8_MAJORS.has(v8Version.split('.')[0]!)) return false;
  setFlagsFromString(`--wasm-tiering-budget=${WASM_TIERING_BUDGET}`);
  return true;
}

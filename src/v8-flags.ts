/**
 * V8 settings for a process that usually lives a fraction of a second.
 *
 * undici parses HTTP answers with llhttp, a WebAssembly module. V8 compiles
 * its functions with Liftoff, its fast baseline compiler, and recompiles hot
 * ones with TurboFan. V8 11 (Node 20) decides a function is hot after a small
 * budget of work: a one-document `register` (three answers) already had llhttp's
 * parser recompiled, 65 ms of CPU in a run of about 210 (measured with
 * `node --trace-wasm-compilation-times`), more than all of its HTTP work.
 * V8 13 (Node 24) waits far longer by default and never did it in such a run.
 *
 * So on V8 11 the budget is raised: a short run stays on Liftoff's code,
 * and a long one (a batch of documents, a few dozen answers in) still gets
 * TurboFan's. V8 reads the flag when it compiles, which has not happened yet
 * when the bin calls this first thing; no other flag is touched.
 */
import { setFlagsFromString } from 'node:v8';

/** V8 11's tiering budget (its default is 1,800,000; V8 13's is 13,000,000): about 10 to 25 answers. */
export const WASM_TIERING_BUDGET = 100_000_000;

/** Raises V8 11's WebAssembly tier-up budget (see the module comment); returns whether it did. */
export function deferWasmTierUp(v8Version = process.versions.v8): boolean {
  if (!v8Version.startsWith('11.')) return false;
  setFlagsFromString(`--wasm-tiering-budget=${WASM_TIERING_BUDGET}`);
  return true;
}

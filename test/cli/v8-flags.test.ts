/**
 * src/v8-flags.ts: the bin raises WebAssembly's tier-up budget, so a short
 * run does not pay for TurboFan recompiling undici's HTTP parser (35-65 ms of
 * CPU in a one-document register). The process is the point: V8 flags are
 * per process, and only the entry points set this one.
 */
import { describe, expect, it } from 'vitest';
import { deferWasmTierUp } from '../../src/v8-flags.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { BIN, describeRun, runProcess } from '../helpers/cli.js';

describe('deferWasmTierUp', () => {
  it('sets the flag on the V8s of Node 20, 22 and 24 only (a flag another V8 lacks is an error on stderr)', () => {
    expect(deferWasmTierUp('10.2.154.26-node.26')).toBe(false);
    expect(deferWasmTierUp('14.1.1')).toBe(false);
    expect(deferWasmTierUp(process.versions.v8)).toBe(true);
  });

  describe('the bin', () => {
    let bed: Bed;
    useBed((created) => (bed = created), { keyInEnv: true });

    it("registers a document, logging in first, with undici's parser compiled by Liftoff alone", async () => {
      const hash = await bed.write('doc.txt', 'one document\n');
      // V8 traces every compiled WebAssembly function ("... using Liftoff, took 0 ms").
      const run = await runProcess(
        process.execPath,
        ['--trace-wasm-compilation-times', BIN, 'register', 'doc.txt', '--json'],
        bed.env(),
        { cwd: bed.workDir },
      );
      expect(run.code, describeRun(run)).toBe(0);
      expect(bed.sandbox.records.has(hash)).toBe(true);
      const output = run.stdout + run.stderr;
      expect(output).toMatch(/using Liftoff/);
      expect(output).not.toMatch(/using TurboFan/);
    });
  });
});

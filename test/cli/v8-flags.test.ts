/**
 * src/v8-flags.ts: on V8 11 (Node 20) the bin raises WebAssembly's tier-up
 * budget, so a short run does not pay for TurboFan recompiling undici's HTTP
 * parser (65 ms of CPU in a one-document register). The process is the
 * point: V8 flags are per process, and only the bin sets this one.
 */
import { describe, expect, it } from 'vitest';
import { deferWasmTierUp } from '../../src/v8-flags.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { BIN, describeRun, runProcess } from '../helpers/cli.js';

describe('deferWasmTierUp', () => {
  it('leaves V8 versions other than 11 alone', () => {
    expect(deferWasmTierUp('13.6.233.17-node.53')).toBe(false);
    expect(deferWasmTierUp('12.4.254.21-node.33')).toBe(false);
  });

  describe('the bin', () => {
    let bed: Bed;
    useBed((created) => (bed = created), { keyInEnv: true });

    it("registers a document with undici's parser compiled by Liftoff alone", async () => {
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

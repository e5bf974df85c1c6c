#!/usr/bin/env node
// The `notarize` command: runs main() and sets the exit code. main() never
// throws and never calls process.exit, so pending output is always flushed.
// SIGINT and SIGTERM are the exception: they end the process at once, with
// one line and exit 130 or 143 (src/interrupt.ts); installed first, before
// any module adds listeners of its own, as is the listener that keeps
// SIGXFSZ harmless (a write past `ulimit -f` fails with EFBIG instead).
// V8 flags are set before any WebAssembly is compiled (src/v8-flags.ts).
import { writeSync } from 'node:fs';

const json = process.argv.includes('--json');

// While the bundle loads (up to a few hundred ms on a slow machine), nothing
// is sent or locked yet, but a signal must still end the run as documented:
// one line, 130 or 143, not a silent death by the signal. These two say what
// src/interrupt.ts says when nothing is under way, and make way for it.
const early = (signal, code) => () => {
  const message = `interrupted (${signal})`;
  const line = json
    ? JSON.stringify({ error: { code: 'interrupted', exitCode: code, message } })
    : `notarize: ${message}`;
  try {
    writeSync(2, `${process.stderr.isTTY ? '\n' : ''}${line}\n`);
  } catch {
    // stderr closed: the exit code says it.
  }
  process.exit(code);
};
const whileLoading = { SIGINT: early('SIGINT', 130), SIGTERM: early('SIGTERM', 143) };
for (const [signal, handler] of Object.entries(whileLoading)) process.on(signal, handler);

const { deferWasmTierUp, exitOnSignals, keepFileSizeSignalHarmless, main } = await import('../dist/bundle/cli.js');

deferWasmTierUp();
exitOnSignals({ json });
// Only now: with no listener at all for an instant, Node would let the signal kill the process.
for (const [signal, handler] of Object.entries(whileLoading)) process.off(signal, handler);
keepFileSizeSignalHarmless();
process.exitCode = await main();

#!/usr/bin/env node
// The `notarize` command: runs main() and sets the exit code. main() never
// throws and never calls process.exit, so pending output is always flushed.
// SIGINT and SIGTERM are the exception: they end the process at once, with
// one line and exit 130 or 143 (src/interrupt.ts); installed first, before
// any module adds listeners of its own, as is the listener that keeps
// SIGXFSZ harmless (a write past `ulimit -f` fails with EFBIG instead).
// V8 flags are set before any WebAssembly is compiled (src/v8-flags.ts).
import { deferWasmTierUp, exitOnSignals, keepFileSizeSignalHarmless, main } from '../dist/bundle/cli.js';

deferWasmTierUp();
exitOnSignals({ json: process.argv.includes('--json') });
keepFileSizeSignalHarmless();
process.exitCode = await main();

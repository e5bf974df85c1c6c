#!/usr/bin/env node
// The `notarize` command: runs main() and sets the exit code. main() never
// throws and never calls process.exit, so pending output is always flushed.
// SIGINT and SIGTERM are the exception: they end the process at once, with
// one line and exit 130 or 143 (src/interrupt.ts); installed first, before
// any module adds listeners of its own, as is the listener that keeps
// SIGXFSZ harmless (a write past `ulimit -f` fails with EFBIG instead).
import { exitOnSignals, keepFileSizeSignalHarmless, main } from '../dist/bundle/cli.js';

exitOnSignals({ json: process.argv.includes('--json') });
keepFileSizeSignalHarmless();
process.exitCode = await main();

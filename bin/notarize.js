#!/usr/bin/env node
// The `notarize` command: runs main() and sets the exit code. main() never
// throws and never calls process.exit, so pending output is always flushed.
import { main } from '../dist/bundle/cli.js';

process.exitCode = await main();

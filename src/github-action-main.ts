// The entry of the GitHub Action (action.yml -> action/index.mjs): as
// bin/notarize.js, V8's flag and signal handling first, then the run and its exit code.
import { exitOnSignals, keepFileSizeSignalHarmless } from './interrupt.js';
import { runAction } from './github-action.js';
import { deferWasmTierUp } from './v8-flags.js';

deferWasmTierUp();
exitOnSignals();
keepFileSizeSignalHarmless();
process.exitCode = await runAction();

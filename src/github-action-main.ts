// The entry of the GitHub Action (action.yml -> action/index.mjs): as
// bin/notarize.js, signal handling first, then the run and its exit code.
import { exitOnSignals, keepFileSizeSignalHarmless } from './interrupt.js';
import { runAction } from './github-action.js';

exitOnSignals();
keepFileSizeSignalHarmless();
process.exitCode = await runAction();

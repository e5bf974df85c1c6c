#!/usr/bin/env node
// The `notarize` command: runs main() and sets the exit code. main() never
// throws and never calls process.exit, so pending output is always flushed.
// SIGINT and SIGTERM are the exception: they end the process at once, with
// one line and exit 130 or 143 (src/interrupt.ts); installed first, before
// any module adds listeners of its own, as is the listener that keeps
// SIGXFSZ harmless (a write past `ulimit -f` fails with EFBIG instead).
// V8 flags are set before any WebAssembly is compiled (src/v8-flags.ts).
import { realpathSync, writeSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

// As src/cli.ts reads it when a command fails before it runs: --json or --output json, among the
// words before any `--` (after it, every word is a file: `hash -- --json`).
const words = process.argv.slice(2);
const json = words
  .slice(0, words.includes('--') ? words.indexOf('--') : words.length)
  .some(
    (word, i, all) => word === '--json' || word === '--output=json' || (word === '--output' && all[i + 1] === 'json'),
  );

/**
 * Writes one error as notarize prints errors before the bundle can (with
 * --json, its error object); on a terminal, `onANewLine` starts it on a line
 * of its own (a signal may come in the middle of one).
 */
function sayError({ code, exitCode, message, hint }, onANewLine = false) {
  const line = json
    ? JSON.stringify({ error: { code, exitCode, message, ...(hint === undefined ? {} : { hint }) } })
    : `notarize: ${message}${hint === undefined ? '' : ` (${hint})`}`;
  try {
    writeSync(2, `${onANewLine && process.stderr.isTTY ? '\n' : ''}${line}\n`);
  } catch {
    // stderr closed: the exit code says it.
  }
}

// The bundle needs Node 20.18.1 or later (package.json's engines, of which npm only warns): on an
// older one it fails to load with a stack trace about a missing export that names no version, and
// even --version cannot say what is wrong. One line and exit 2 (nothing was sent) instead.
const NODE_NEEDED = '20.18.1';
const [have, needed] = [process.versions.node, NODE_NEEDED].map((version) => version.split('.').map(Number));
const differs = needed.findIndex((part, i) => have[i] !== part);
if (differs !== -1 && have[differs] < needed[differs]) {
  sayError({
    code: 'node_too_old',
    exitCode: 2,
    message: `notarize needs Node.js ${NODE_NEEDED} or later; this is Node.js ${process.versions.node}`,
    hint: 'install a newer Node.js and run it again',
  });
  process.exit(2);
}

// While the bundle loads (up to a few hundred ms on a slow machine), nothing
// is sent or locked yet, but a signal must still end the run as documented:
// one line, 130 or 143, not a silent death by the signal. These two say what
// src/interrupt.ts says when nothing is under way, and make way for it.
const early = (signal, code) => () => {
  sayError({ code: 'interrupted', exitCode: code, message: `interrupted (${signal})` }, true);
  process.exit(code);
};
const whileLoading = { SIGINT: early('SIGINT', 130), SIGTERM: early('SIGTERM', 143) };
for (const [signal, handler] of Object.entries(whileLoading)) process.on(signal, handler);

/** The bundle's URL beside the bin at `binUrl`, and the bundle imported from there (its import's failure). */
const bundleBeside = async (binUrl) => {
  const url = new URL('../dist/bundle/cli.js', binUrl);
  try {
    return { url, bundle: await import(url.href) };
  } catch (error) {
    return { url, error };
  }
};
let loaded = await bundleBeside(import.meta.url);
// Run through a link under --preserve-symlinks-main (npm's bin links), import.meta.url is the link's:
// the bundle is beside the file the link leads to.
if (loaded.error?.code === 'ERR_MODULE_NOT_FOUND' && loaded.error.url === loaded.url.href) {
  const real = pathToFileURL(realpathSync(fileURLToPath(import.meta.url))).href;
  if (real !== import.meta.url) loaded = await bundleBeside(real);
}
const { url: BUNDLE, bundle, error } = loaded;
if (error !== undefined) {
  // Too few descriptors to even read the bundle's files (`ulimit -n` of 25 or less): nothing was sent.
  if (error?.code === 'EMFILE' || error?.code === 'ENFILE') {
    sayError({
      code: 'fd_shortage',
      exitCode: 2,
      message: `too many files are open to load notarize (${error.code}); nothing was sent`,
      hint: 'raise the limit of open files (ulimit -n), then run the command again',
    });
    process.exit(2);
  }
  // Never built (a checkout before `npm run build`, `npm ci --ignore-scripts`): one line saying so
  // rather than Node's stack trace.
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || error.url !== BUNDLE.href) throw error;
  sayError({
    code: 'not_built',
    exitCode: 2,
    message: `notarize is not built here: ${fileURLToPath(BUNDLE)} is missing`,
    hint: `run \`npm ci && npm run build\` in ${fileURLToPath(new URL('../..', BUNDLE))}, or install the tarball \`npm pack\` makes`,
  });
  process.exit(2);
}
const { deferWasmTierUp, exitOnSignals, keepFileSizeSignalHarmless, main } = bundle;

deferWasmTierUp();
exitOnSignals({ json });
// Only now: with no listener at all for an instant, Node would let the signal kill the process.
for (const [signal, handler] of Object.entries(whileLoading)) process.off(signal, handler);
keepFileSizeSignalHarmless();
// Should main() ever wait on something that cannot come (a bug: a stream event already missed), the
// event loop empties and Node ends the process with its own exit 13, which no table lists, saying
// nothing. One line and the documented exit 1 instead (something may have been sent). A signal's
// process.exit(130/143) is left as it is.
let ended = false;
process.on('exit', (code) => {
  if (ended || (code !== 0 && code !== 13)) return;
  sayError({
    code: 'unexpected',
    exitCode: 1,
    message: 'unexpected error: the run stopped before its end, waiting for something that could not come',
    hint: 'what it printed stands; run the same command again to finish the rest',
  });
  process.exitCode = 1;
});
// Not a top-level await: Node would print its own warning about it before the line above.
void main().then((code) => {
  ended = true;
  process.exitCode = code;
});

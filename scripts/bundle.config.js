/**
 * The CLI as it runs: tsc's output (dist/) and the packages it imports,
 * bundled into dist/bundle/ and split at the command registry's dynamic
 * imports, so each command still loads only its own code.
 *
 * Why a bundle: most of a short command's start-up went to Node resolving,
 * reading and compiling a few hundred small files of the packages (zod alone
 * took ~100 ms on the bench machine). Measured in docs/performance.md.
 *
 * The GitHub Action (action.yml) runs action/index.mjs: the same code in one
 * file, committed, because a workflow that `uses:` this repository gets its
 * files as they are, with no install and no build (.ci/run checks that the
 * committed file is what the sources build).
 */
import { defineConfig } from 'rolldown';

export default defineConfig([
  {
    input: 'dist/cli.js',
    platform: 'node',
    output: {
      dir: 'dist/bundle',
      format: 'esm',
      cleanDir: true,
      // Everything the entry imports statically (the CLI's core, commander) in one chunk, core-*.js:
      // Node opens a module's static imports all at once, and ten small chunks made `--version`
      // need ten descriptors more than Node itself under a low `ulimit -n` (test/cli/fd-shortage.test.ts).
      codeSplitting: { groups: [{ name: 'core', tags: ['$initial'] }] },
    },
  },
  {
    input: 'dist/github-action-main.js',
    platform: 'node',
    output: { file: 'action/index.mjs', format: 'esm', inlineDynamicImports: true },
  },
]);

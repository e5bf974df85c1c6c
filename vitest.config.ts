import { defineConfig } from 'vitest/config';

// Tests are grouped by subject (test/README.md). Most call main() in-process
// and import src/ directly; the ones where the process boundary is the point
// spawn the built bin/ (npm test builds first).
//
// The files of a worker share one module graph (isolate: false): loading
// src/ and the packages again for every file was a fifth of the suite's CPU
// (vitest's "import" 17.4 s -> 4.4 s; wall 90 s -> 77 s). So helpers keep no
// per-file state at module level (hooks are registered by the file that
// calls them: useBed, auditSecrets, onTestFinished), and a file that
// replaces a module gets a graph of its own.

/** Files that replace a module (vi.mock): test/cli/test-layout.test.ts checks the list is complete. */
export const OWN_MODULES = ['test/core/hash-pool.no-thread.test.ts', 'test/store/disk-full.test.ts'];

export default defineConfig({
  test: {
    projects: [
      { extends: true, test: { name: 'shared', include: ['test/**/*.test.ts'], exclude: OWN_MODULES, isolate: false } },
      { extends: true, test: { name: 'own-modules', include: OWN_MODULES, isolate: true } },
    ],
    // Temporary directories on tmpfs where there is one (see the file).
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Three on two cores: many files mostly wait (leases, injected latency,
    // processes they spawn), and a worker waiting holds its core idle; each
    // worker also loads the module graph once more. Wall time of the suite
    // on 2 cores, same day: 2 workers 70-72 s, 3 59-60 s, 4 62-63 s, 6 65 s, 8 70 s.
    maxWorkers: 3,
    // `npm run coverage` (the whole suite), or cheaply for the flow alone:
    // `npx vitest run --coverage --coverage.include=src/core/notarize.ts test/core/notarize`.
    // Only the register/complete flow has a threshold: its unit tests
    // (test/core/notarize*.test.ts) take every branch of it on their own.
    // Not every function: the one releasing its lock runs only on SIGINT or
    // SIGTERM, which end the process (test/cli/signals.test.ts spawns one).
    coverage: {
      provider: 'v8',
      include: ['src/**'],
      thresholds: {
        'src/core/notarize.ts': { branches: 100, lines: 100 },
      },
    },
  },
});

import { defineConfig } from 'vitest/config';

// Tests are grouped by subject (test/README.md). Most call main() in-process
// and import src/ directly; the ones where the process boundary is the point
// spawn the built bin/ (npm test builds first).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores: more workers only make the process-spawning tests contend.
    maxWorkers: 2,
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

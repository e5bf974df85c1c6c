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
  },
});

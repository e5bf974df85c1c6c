import { defineConfig } from 'vitest/config';

// e2e tests spawn the built bin/ (npm test builds first); unit and
// integration tests import src/ directly.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores: more workers only make the process-spawning tests contend.
    maxWorkers: 2,
  },
});

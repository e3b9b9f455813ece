import { defineConfig } from 'vitest/config';
import root from './vitest.config.js';

// The unit project alone, for Stryker (`npm run mutate`, stryker.config.mjs):
// its vitest runner takes a config file but no project name. Unit tests are
// pure and fast: no Redis, sandbox or built CLI.
export default defineConfig({
  ...root,
  test: {
    ...root.test,
    // Stryker's instrumented code runs slower than the plain build, and the
    // machine it runs on may be shared: a generous per-test limit, so that a
    // slow property test does not fail the initial run.
    projects: (root.test?.projects ?? [])
      .filter((p) => typeof p === 'object' && 'test' in p && p.test?.name === 'unit')
      .map((p) =>
        typeof p === 'object' && 'test' in p
          ? { ...p, test: { ...p.test, testTimeout: 60_000 } }
          : p,
      ),
  },
});

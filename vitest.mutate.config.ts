import { defineConfig } from 'vitest/config';
import root from './vitest.config.js';

// The unit project alone, for Stryker (`npm run mutate`, stryker.config.mjs):
// its vitest runner takes a config file but no project name. Unit tests are
// pure and fast: no Redis, sandbox or built CLI.
export default defineConfig({
  ...root,
  test: {
    ...root.test,
    projects: (root.test?.projects ?? []).filter(
      (p) => typeof p === 'object' && 'test' in p && p.test?.name === 'unit',
    ),
  },
});

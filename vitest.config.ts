import { defineConfig } from 'vitest/config';

// Five projects, named apart: unit tests are pure and fast; integration tests
// talk to a real redis-server and an in-process sandbox; e2e tests drive the
// built CLI (dist/) as separate processes; chaos tests break a whole sync
// on purpose and check nothing is lost or doubled; browser tests drive the
// web console in Chromium.
export default defineConfig({
  // Workspace packages (the platform sandbox) load from their TypeScript
  // source, so a test never runs against a stale build of them. Every
  // project below extends this root config to get it. The rest of the list
  // is Vite's default for server code.
  ssr: { resolve: { conditions: ['source', 'module', 'node', 'development|production'] } },
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          testTimeout: 10_000,
          // Vitest's default is one worker less than the cores: one on a
          // two-core machine. Unit and integration files wait mostly on Redis
          // and sockets, so two at a time halve their time there.
          maxWorkers: 2,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          // The same group as unit (one maxWorkers for both).
          maxWorkers: 2,
          globalSetup: ['test/harness/global-redis.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/harness/global-redis.ts'],
          testTimeout: 180_000,
          hookTimeout: 60_000,
          // CLI processes are heavy on two cores: one file at a time.
          fileParallelism: false,
        },
      },
      {
        extends: true,
        test: {
          // Worker processes SIGKILLed, a private Redis restarted, platform
          // faults injected (docs/CHAOS.md); heavy, so one file at a time.
          name: 'chaos',
          include: ['test/chaos/**/*.test.ts'],
          globalSetup: ['test/harness/global-redis.ts'],
          testTimeout: 240_000,
          hookTimeout: 60_000,
          fileParallelism: false,
        },
      },
      {
        extends: true,
        test: {
          // The web console in Debian's Chromium (playwright-core) against a
          // real worker, Redis and sandbox; one browser at a time.
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          globalSetup: ['test/harness/global-redis.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          fileParallelism: false,
        },
      },
    ],
  },
});

import { defineConfig } from 'vitest/config';

// Six projects, named apart: unit tests are pure and fast; integration tests
// talk to a real redis-server and an in-process sandbox; e2e tests drive the
// built CLI (dist/) as separate processes; chaos tests break a whole sync
// on purpose and check nothing is lost or doubled; browser tests drive the
// web console in Chromium; pace tests measure a rate, or runs' shares of it,
// against the sandbox's limit.
//
// They run in two groups, one after the other. Most tests wait on Redis,
// sockets, child processes and timers more than they compute, so the first
// group, every project but pace, runs four files at once: a chaos file
// waiting on a frozen Redis leaves the CPU to unit files meanwhile (vitest
// needs the projects of a group to agree on the number). Pace tests hold a
// rate to within a few per cent, which a busy CPU would skew, so they run
// last, apart from the rest, two at a time: each spends its time waiting on
// a sandbox's limit and leaves the CPU nearly idle.
const PACE = [
  'test/integration/queue-pacer.test.ts',
  'test/integration/queue-limiter.test.ts',
  'test/integration/engine-limits.test.ts',
  'test/integration/engine-fair-share.test.ts',
  'test/e2e/cli-rate-limit.test.ts',
];

// The first group: four files at once in every project of it, and a worker's
// files share its module cache instead of importing src/ afresh each. No
// file leaves state behind: a unit file puts env, timers and zones back; the
// others start their own servers and Redis prefixes, and stop what they
// started.
const FIRST_GROUP = { sequence: { groupOrder: 0 }, isolate: false, maxWorkers: 4 };

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
          // Property tests run thousands of cases; four files share two cores.
          testTimeout: 30_000,
          ...FIRST_GROUP,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          exclude: PACE,
          ...FIRST_GROUP,
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
          exclude: PACE,
          globalSetup: ['test/harness/global-redis.ts'],
          testTimeout: 180_000,
          hookTimeout: 60_000,
          ...FIRST_GROUP,
        },
      },
      {
        extends: true,
        test: {
          // Worker processes SIGKILLed, a private Redis restarted, platform
          // faults injected (docs/CHAOS.md).
          name: 'chaos',
          include: ['test/chaos/**/*.test.ts'],
          globalSetup: ['test/harness/global-redis.ts'],
          testTimeout: 240_000,
          hookTimeout: 60_000,
          ...FIRST_GROUP,
        },
      },
      {
        extends: true,
        test: {
          // The web console in Debian's Chromium (playwright-core) against a
          // real worker, Redis and sandbox.
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          globalSetup: ['test/harness/global-redis.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          ...FIRST_GROUP,
        },
      },
      {
        extends: true,
        test: {
          name: 'pace',
          include: PACE,
          globalSetup: ['test/harness/global-redis.ts'],
          testTimeout: 180_000,
          hookTimeout: 60_000,
          sequence: { groupOrder: 1 },
          maxWorkers: 2,
        },
      },
    ],
  },
});

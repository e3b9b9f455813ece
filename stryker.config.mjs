// Mutation testing (`npm run mutate`; not part of CI): Stryker changes the
// pure sync core, the retry policy, the rate learner, the write queue's
// share between runs, the pacer's window echoes and clock estimate, when
// the writer calls for help, the skip rules and the field transforms one
// small edit at a time and runs the unit tests against each change; a
// change no test notices ("survived") marks behaviour no test pins.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: {
    // The unit project alone (vitest.mutate.config.ts), and of its files
    // only those that import the mutated modules (directly or not).
    configFile: 'vitest.mutate.config.ts',
    related: true,
  },
  coverageAnalysis: 'perTest',
  // The vitest runner (9.6.1) does not activate a static mutant (a
  // module-level value, such as a table of names): it would be scored
  // survived whatever the tests (stryker-js#6209). They are left out of the
  // score; the tables they stand for have their own unit tests.
  ignoreStatic: true,
  // With bail on, the runner loses some mutant runs and scores a run that
  // executed no test as survived (stryker-js#6073); every covering test of a
  // mutant runs instead.
  disableBail: true,
  // The machine is shared and often loaded: the first plain run may be slow.
  dryRunTimeoutMinutes: 20,
  mutate: [
    'src/sync/**/*.ts',
    'src/platform/retry-policy.ts',
    'src/platform/rate-learner.ts',
    'src/queue/fair-share.ts',
    'src/queue/window-echo.ts',
    'src/queue/clock-skew.ts',
    'src/queue/writer-help.ts',
    'src/crm/skip-rules.ts',
    'src/crm/transforms.ts',
  ],
  // Later runs test again only the mutants whose code or covering tests
  // changed since the file below was written.
  incremental: true,
  incrementalFile: 'reports/mutation/stryker-incremental.json',
  reporters: ['clear-text', 'progress', 'html'],
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  tempDirName: '.stryker-tmp',
  // The machine is shared: one test runner at a time.
  concurrency: 1,
  // A report, not a gate.
  thresholds: { break: null },
};

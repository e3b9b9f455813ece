/**
 * The import rules between layers (docs/ARCHITECTURE.md, "Layers"), checked
 * by `npm run lint`. Layers, from the bottom:
 *
 *   foundation  src/*.ts but config.ts and cli.ts (log, defaults, csv, …), src/redis/
 *   config      src/config.ts
 *   core        src/sync/ (pure), src/crm/, src/platform/
 *   state       src/state/
 *   queue       src/queue/
 *   jobs        src/jobs/, src/alerts/
 *   engine      src/engine/
 *   schedule    src/schedule/
 *   ops         src/ops/
 *   cli         src/cli/, src/cli.ts
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A cycle makes two modules one: cut it by moving the shared piece down.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'nothing-imports-cli',
      severity: 'error',
      comment: 'The CLI is the top layer: what it and another layer share lives below it.',
      from: { path: '^src/', pathNot: '^src/(cli/|cli\\.ts$)' },
      to: { path: '^src/(cli/|cli\\.ts$)' },
    },
    {
      name: 'core-not-to-upper-layers',
      severity: 'error',
      comment:
        'sync, crm, platform and state know nothing of runs, the ops server, schedules or alerts.',
      from: { path: '^src/(sync|crm|platform|state)/' },
      to: { path: '^src/(engine|ops|schedule|alerts)/' },
    },
    {
      name: 'sync-is-pure',
      severity: 'error',
      comment: 'The sync core takes data and returns data: no Redis, HTTP, reading or queues.',
      from: { path: '^src/sync/' },
      to: { path: '^src/(redis|state|queue|crm|engine|ops|schedule|alerts|jobs|cli)/' },
    },
    {
      name: 'config-imports-no-layer',
      severity: 'error',
      comment:
        'config reads the environment once; the foundation (src/*.ts, src/redis/) is all it builds on. Types may come from anywhere.',
      from: { path: '^src/config\\.ts$' },
      to: {
        path: '^src/[a-z-]+/',
        pathNot: '^src/redis/',
        dependencyTypesNot: ['type-only'],
      },
    },
    {
      name: 'redis-is-foundation',
      severity: 'error',
      comment: 'Redis clients and targets build on the foundation alone.',
      from: { path: '^src/redis/' },
      to: { path: '^src/([a-z-]+/|config\\.ts$|cli\\.ts$)', pathNot: '^src/redis/' },
    },
    {
      name: 'foundation-imports-no-layer',
      severity: 'error',
      comment: 'The small modules at the top of src/ (log, defaults, csv, …) stand alone.',
      from: { path: '^src/[a-z-]+\\.ts$', pathNot: '^src/(config|cli)\\.ts$' },
      to: { path: '^src/([a-z-]+/|config\\.ts$|cli\\.ts$)', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'cli-commands-load-the-library-lazily',
      severity: 'error',
      comment:
        "--help and a usage error need the commands' definitions only: a command loads the library (and runtime.ts and paced-client.ts, which open it) in its action, with import().",
      from: {
        path: '^src/(cli\\.ts$|cli/)',
        pathNot: '^src/cli/(runtime|paced-client|validate-paths|validate-export)\\.ts$',
      },
      to: {
        pathNot:
          '^(src/sync/|src/state/failure-kinds\\.ts$|src/cli/(?!(runtime|paced-client|validate-paths|validate-export)\\.ts$)|node_modules/commander/|@crm-sync/platform-sandbox$)',
        dependencyTypesNot: ['type-only', 'dynamic-import', 'core'],
      },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^src/ops/console/' },
  },
};

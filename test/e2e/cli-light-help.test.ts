/**
 * `crm-sync --help`, a command's `--help` and a usage error load the CLI's
 * command definitions only: the library (and with it bullmq, ioredis, got,
 * express, zod, pino) is loaded by a command's action. A command that only
 * enqueues or reads state loads neither the HTTP client nor the planner: it
 * often runs beside a worker, on the same cores. A loader hook in the CLI's
 * process writes down every module it resolves.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cliEnv,
  killAll,
  requireBuild,
  ROOT,
  runCli,
  tempDir,
  type TempDir,
} from '../harness/cli.js';

/** Packages only the library needs. */
const LIBRARY = /\/node_modules\/(bullmq|ioredis|got|express|zod|pino|yaml|prom-client)\//;
/** What only a command that talks to the platform or plans needs: the HTTP client, the planner, the worker. */
const PLATFORM_SIDE =
  /\/node_modules\/got\/|\/dist\/engine\/(plan-pass|worker-service)\.js$|\/dist\/platform\/client\.js$/;

describe('crm-sync help stays light', () => {
  let files: TempDir;
  let dir: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(() => {
    requireBuild();
    files = tempDir('e2e-light-help');
    dir = files.dir;
    // The hook runs on the loader's own thread; it appends each resolved URL to a file.
    writeFileSync(
      join(dir, 'hooks.mjs'),
      `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const found = await next(specifier, context);
  appendFileSync(process.env.LOADED_MODULES, found.url + '\\n');
  return found;
}
`,
    );
    writeFileSync(
      join(dir, 'register.mjs'),
      `import { register } from 'node:module';
register(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});
`,
    );
    env = cliEnv({
      // Nothing listens there: a command that runs stops at connecting (exit 4).
      REDIS_URL: 'redis://127.0.0.1:1',
      CRM_SYNC_JOBS_DIR: dir,
      PLATFORM_BASE_URL: 'http://127.0.0.1:9',
      PLATFORM_API_KEY: 'e2e-light-help-key-0123456789',
      LOG_LEVEL: 'warn',
    });
  });

  afterAll(async () => {
    await killAll();
    files.remove();
  });

  /** The modules `crm-sync ARGS` resolved. */
  async function loaded(
    name: string,
    args: string[],
  ): Promise<{ code: number | null; urls: string[] }> {
    const file = join(dir, `${name}.txt`);
    writeFileSync(file, '');
    const r = await runCli(args, {
      ...env,
      LOADED_MODULES: file,
      NODE_OPTIONS: `--import=${pathToFileURL(join(dir, 'register.mjs')).href}`,
    });
    return { code: r.code, urls: readFileSync(file, 'utf8').split('\n').filter(Boolean) };
  }

  it('loads no library package for --help, a command --help or a usage error', async () => {
    for (const [name, args, code] of [
      ['root', ['--help'], 0],
      ['run', ['run', '--help'], 0],
      ['failures', ['failures', '--help'], 0],
      ['usage', ['runs', '--bogus'], 2],
    ] as const) {
      const r = await loaded(name, [...args]);
      expect(r.code, name).toBe(code);
      // The hook saw the CLI load commander: it was listening.
      expect(
        r.urls.some((u) => u.includes('/node_modules/commander/')),
        name,
      ).toBe(true);
      expect(
        r.urls.filter((u) => LIBRARY.test(u)),
        name,
      ).toEqual([]);
    }
  });

  it('loads the library for a command that runs', async () => {
    const r = await loaded('runs', ['runs']);
    expect(r.code).toBe(4);
    expect(r.urls.some((u) => u.includes('/node_modules/ioredis/'))).toBe(true);
  });

  it('enqueues a run, or lists runs, without the HTTP client, the planner or the worker', async () => {
    for (const [name, args] of [
      ['run', ['run', 'hubspot-companies', '--jobs', join(ROOT, 'jobs')]],
      ['runs', ['runs']],
    ] as const) {
      const r = await loaded(name, [...args]);
      // It got as far as connecting to Redis (exit 4): the job was loaded, the library with it.
      expect(r.code, name).toBe(4);
      expect(
        r.urls.some((u) => u.includes('/node_modules/bullmq/')),
        name,
      ).toBe(true);
      expect(
        r.urls.filter((u) => PLATFORM_SIDE.test(u)),
        name,
      ).toEqual([]);
    }
  });
});

/**
 * `npm run demo`: a whole sync with no Docker. Starts the platform sandbox in
 * this process on a free port, points the example jobs (jobs/*.yaml, reading
 * examples/) at it under a fresh random key prefix of REDIS_URL (default the
 * local Redis; when nothing answers there, a private redis-server that it
 * starts and removes at the end: scripts/demo-redis.ts), runs each job with
 * the in-process workers, prints each run summary, runs the companies job
 * again to show that nothing unchanged is written, prints the sandbox's
 * request counts, and deletes its keys.
 *
 * It starts and follows runs with the same functions as the CLI
 * (`startWorkerService`, `startRun`, `waitForRun`, `runSummary`), so what it
 * shows is what `crm-sync run` does.
 *
 * The ops server (web console and API) runs beside it on OPS_PORT (9464, or
 * a free port when that one is taken) and its address is printed first. On
 * a terminal, or with `--serve`, the demo then keeps the console, the workers
 * and the sandbox up until Ctrl-C, so the page can start more runs;
 * `--no-serve` (or no terminal) ends after the runs.
 */
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { formatSummary } from '../src/cli/runtime.js';
import { formatTable } from '../src/cli/table.js';
import { loadConfig } from '../src/config.js';
import { jobLoader, startRun, type RunDeps } from '../src/engine/run-service.js';
import { runSummary, waitForRun } from '../src/engine/run-summary.js';
import { startWorkerService } from '../src/engine/worker-service.js';
import { loadJobs, type JobDefinition } from '../src/jobs/definition.js';
import { createLogger } from '../src/log.js';
import { startOpsServer, type OpsServer } from '../src/ops/server.js';
import { createShutdown } from '../src/ops/shutdown.js';
import { primariesOf, safeRedisUrl, type RedisClient } from '../src/redis/connection.js';
import { startSandbox, type Sandbox, type StatsEntry } from '@crm-sync/platform-sandbox';
import type { RunRecord } from '../src/state/runs.js';
import { openDemoRedis } from './demo-redis.js';

const root = resolve(import.meta.dirname, '..');
const jobsDir = resolve(root, 'jobs');
const RUN_TIMEOUT_MS = 120_000;
const args = process.argv.slice(2);
const serve = args.includes('--serve') || (!args.includes('--no-serve') && process.stdout.isTTY);

async function main(): Promise<number> {
  const prefix = `{crm-sync-demo-${randomBytes(4).toString('hex')}}`;
  const apiKey = `demo-${randomBytes(16).toString('hex')}`;
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });

  // Fails fast, with one clear line, when there is no Redis to talk to and none to start.
  const redis = await openDemoRedis(redisUrl);
  if (redis.started) say(redis.started);
  let sandbox: Sandbox | undefined;
  const shutdown = createShutdown(logger, { deadlineMs: 10_000 });
  let cleaned: Promise<void> | undefined;
  const cleanUp = () =>
    (cleaned ??= (async () => {
      let removed = 0;
      try {
        await shutdown.shutdown('demo finished');
        await sandbox?.close();
        removed = await deleteByPrefix(redis.client, prefix);
      } finally {
        // A private redis-server is stopped and removed whatever failed before.
        await redis.close();
      }
      say(
        `\ncleaned up: ${removed} key(s) under ${prefix} deleted, sandbox stopped` +
          (redis.started ? ', private redis-server stopped and removed' : ''),
      );
    })());
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    process.once(signal, () => {
      void cleanUp().finally(() => process.exit(code));
    });
  }

  try {
    sandbox = await startSandbox({ apiKey, port: 0 });
    const config = loadConfig({
      ...process.env,
      REDIS_URL: redis.url,
      CRM_SYNC_PREFIX: prefix,
      PLATFORM_BASE_URL: sandbox.url,
      PLATFORM_API_KEY: apiKey,
      PLATFORM_API_KEY_FILE: undefined,
      CRM_SYNC_JOBS_DIR: jobsDir,
      CRM_SYNC_MAPPINGS_DIR: resolve(root, 'config/mappings'),
      PLATFORM_RATE_LIMIT: process.env.PLATFORM_RATE_LIMIT ?? '50',
    });
    say(
      `crm-sync demo: sandbox at ${sandbox.url}, Redis ${safeRedisUrl(redis.url)}, prefix ${prefix}\n`,
    );
    const { jobs, problems } = loadJobs(jobsDir, { mappingsDir: config.mappingsDir });
    if (problems.length > 0)
      throw new Error(`job definitions have problems:\n  ${problems.join('\n  ')}`);
    const service = await startWorkerService({ config, logger, shutdown, jobsDir });
    const deps: RunDeps = {
      store: service.ctx.store,
      runQueue: service.runQueue,
      loadJob: jobLoader(config, jobsDir),
    };
    const ops = await startConsole(config.ops, {
      redis: service.ctx.store.connection,
      queues: [],
      checkPlatform: async () => {
        await service.ctx.client.root();
      },
      logger,
      api: { ...deps, client: service.ctx.client, config, jobsDir, logger },
    });
    shutdown.register('ops server', () => ops.close());
    say(`web console: ${ops.url}/ (follow the runs there)\n`);

    // Companies first: members may refer to them.
    const ordered = [...jobs].sort((a, b) => entityOrder(a) - entityOrder(b));
    let failed = 0;
    for (const def of ordered) {
      const run = await runJob(deps, def);
      if (run.status !== 'completed') failed++;
      say(`${formatSummary(runSummary(run))}\n`);
    }
    const again = ordered.find((d) => d.entity === 'companies');
    if (again) {
      say(`${again.name} once more, with the same export: nothing changed, so nothing is written`);
      const run = await runJob(deps, again);
      const c = run.counts;
      say(`${formatSummary(runSummary(run))}`);
      say(`  writes: ${c.created + c.updated} (created ${c.created}, updated ${c.updated})\n`);
    }
    say('requests the sandbox served:');
    say(formatStats(await stats(sandbox)));
    if (serve) {
      say(`\nweb console: ${ops.url}/ (the workers and the sandbox stay up; Ctrl-C to stop)`);
      await new Promise<never>(() => {});
    }
    return failed === 0 ? 0 : 1;
  } finally {
    await cleanUp();
  }
}

type ConsoleOptions = Omit<Parameters<typeof startOpsServer>[0], 'host' | 'port' | 'token'>;

/** The ops server on the configured port, or on a free one when that is taken. */
async function startConsole(
  at: { host: string; port: number; token?: string },
  opts: ConsoleOptions,
): Promise<OpsServer> {
  const base = { ...opts, host: at.host, ...(at.token !== undefined && { token: at.token }) };
  try {
    return await startOpsServer({ ...base, port: at.port });
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'EADDRINUSE') throw err;
    return startOpsServer({ ...base, port: 0 });
  }
}

function entityOrder(def: JobDefinition): number {
  return def.entity === 'companies' ? 0 : 1;
}

async function runJob(deps: RunDeps, def: JobDefinition): Promise<RunRecord> {
  const { runId } = await startRun(deps, def.name);
  const run = await waitForRun(deps.store, runId, { pollMs: 200, timeoutMs: RUN_TIMEOUT_MS });
  if (!run) throw new Error(`run ${runId} of ${def.name} has no record`);
  return run;
}

async function stats(sandbox: Sandbox): Promise<StatsEntry[]> {
  const res = await fetch(`${sandbox.url}/__sandbox/stats`);
  return ((await res.json()) as { requests: StatsEntry[] }).requests;
}

function formatStats(entries: StatsEntry[]): string {
  return formatTable(
    [
      { header: 'METHOD' },
      { header: 'ROUTE' },
      { header: 'STATUS', align: 'right' },
      { header: 'COUNT', align: 'right' },
    ],
    entries.map((e) => [e.method, e.route, String(e.status), String(e.count)]),
  );
}

async function deleteByPrefix(client: RedisClient, prefix: string): Promise<number> {
  const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  let removed = 0;
  // A cluster's keys are on its primaries: SCAN each (the demo's keys share one slot).
  for (const redis of primariesOf(client)) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) removed += await redis.unlink(...keys);
    } while (cursor !== '0');
  }
  return removed;
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`demo: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);

/**
 * Redis restarted mid-run: a redis-server of this test's own (AOF on, fsync
 * always), stopped while a worker process is writing and started again on
 * the same port and data. The worker waits, resumes, and the run completes
 * with every record on the platform once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cliEnv,
  companiesCsv,
  companiesJob,
  countRequests,
  killAll,
  requireBuild,
  runCli,
  sandboxDump,
  sandboxStats,
  spawnCli,
  startSandboxProcess,
  tempDir,
  waitUntil,
} from '../harness/cli.js';
import { randomPrefix } from '../harness/redis.js';
import { removeDir, startRedisServer, type RedisServer } from '../harness/redis-server.js';

const apiKey = 'e2e-restart-key-0123456789';
const ROWS = 400;
const files = tempDir('e2e-restart');
let server: RedisServer;

beforeAll(async () => {
  requireBuild();
  files.write('restart.yaml', companiesJob(files.write('restart.csv', companiesCsv(ROWS))));
  server = await startRedisServer({ appendonly: true });
});

afterAll(async () => {
  await killAll();
  await server.stop();
  removeDir(server.dir);
  files.remove();
});

describe('Redis restarted mid-run', () => {
  it('the worker waits for Redis, resumes, and the run completes with every record once', async () => {
    const sandbox = await startSandboxProcess(apiKey, ['--latency', '50']);
    const env = cliEnv({
      REDIS_URL: server.url,
      CRM_SYNC_PREFIX: randomPrefix(),
      CRM_SYNC_JOBS_DIR: files.dir,
      PLATFORM_BASE_URL: sandbox.url,
      PLATFORM_API_KEY: apiKey,
      PLATFORM_RATE_LIMIT: 40,
      OPS_PORT: 0,
      WORKER_LOCK_MS: 3_000,
      LOG_LEVEL: 'info',
    });
    const worker = spawnCli(['worker'], env);
    await worker.waitForLine(/"msg":"ops server listening"/);
    const enqueued = await runCli(['run', 'restart', '--json'], env);
    expect(enqueued.code, enqueued.stderr).toBe(0);
    const { runId } = JSON.parse(enqueued.stdout) as { runId: string };
    const posts = async () => countRequests(await sandboxStats(sandbox.url), 'POST', '/companies');
    await waitUntil(async () => (await posts()) >= ROWS / 5, 'some writes', 60_000, 50);

    await server.stop();
    await worker.waitForLine(/Redis connection lost/);
    // While Redis is away a producer fails fast with exit code 4.
    const down = await runCli(['show', runId, '--json'], env);
    expect(down.code).toBe(4);
    await new Promise((r) => setTimeout(r, 1_500));
    const duringOutage = await posts();
    expect(duringOutage).toBeLessThan(ROWS);
    await server.start();
    await worker.waitForLine(/Redis connection restored/);

    const done = await runCli(['show', runId, '--wait', '--json'], env, 120_000);
    expect(done.code, done.stderr).toBe(0);
    const summary = JSON.parse(done.stdout) as {
      status: string;
      counts: Record<'created' | 'adopted' | 'failed', number>;
    };
    expect(summary.status).toBe('completed');
    expect(summary.counts.created + summary.counts.adopted).toBe(ROWS);
    expect(summary.counts.failed).toBe(0);
    const companies = (await sandboxDump(sandbox.url)).companies ?? [];
    const ids = companies.map((c) => c.external_id);
    expect(ids).toHaveLength(ROWS);
    expect(new Set(ids)).toEqual(
      new Set(Array.from({ length: ROWS }, (_, i) => `hubspot:company:${1000 + i}`)),
    );
  });
});

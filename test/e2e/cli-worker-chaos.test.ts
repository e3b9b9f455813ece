/**
 * Worker processes stopped mid-run: SIGKILL (the run is finished by a fresh
 * worker through stalled-job recovery) and SIGTERM (the worker exits 0 within
 * its shutdown deadline; a new worker finishes the run). Either way every
 * record of the export is on the platform exactly once. Each test has its own
 * sandbox (50 ms latency) and key prefix; WORKER_LOCK_MS is low so a killed
 * worker's jobs move on after 3 s.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
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
  type CliProcess,
} from '../harness/cli.js';
import { deleteByPrefix, randomPrefix, useRedis } from '../harness/redis.js';

const { redis, url: redisUrl } = useRedis();
const apiKey = 'e2e-chaos-key-0123456789';
const ROWS = 400;
const RATE = 40;
const SHUTDOWN_MS = 5_000;
const files = tempDir('e2e-chaos');
const prefixes: string[] = [];

beforeAll(() => {
  requireBuild();
  files.write('chaos.yaml', companiesJob(files.write('chaos.csv', companiesCsv(ROWS))));
});

afterEach(async () => {
  await killAll();
});

afterAll(async () => {
  for (const p of prefixes) await deleteByPrefix(redis, p);
  files.remove();
});

interface Setup {
  env: NodeJS.ProcessEnv;
  sandboxUrl: string;
}

async function setup(): Promise<Setup> {
  const sandbox = await startSandboxProcess(apiKey, ['--latency', '50']);
  const prefix = randomPrefix();
  prefixes.push(prefix);
  const env = cliEnv({
    REDIS_URL: redisUrl,
    CRM_SYNC_PREFIX: prefix,
    CRM_SYNC_JOBS_DIR: files.dir,
    PLATFORM_BASE_URL: sandbox.url,
    PLATFORM_API_KEY: apiKey,
    PLATFORM_RATE_LIMIT: RATE,
    OPS_PORT: 0,
    WORKER_LOCK_MS: 3_000,
    SHUTDOWN_TIMEOUT_MS: SHUTDOWN_MS,
    LOG_LEVEL: 'info',
  });
  return { env, sandboxUrl: sandbox.url };
}

async function startWorker(env: NodeJS.ProcessEnv): Promise<CliProcess> {
  const w = spawnCli(['worker'], env);
  await w.waitForLine(/"msg":"ops server listening"/, { timeoutMs: 30_000 });
  return w;
}

async function enqueue(env: NodeJS.ProcessEnv): Promise<string> {
  const r = await runCli(['run', 'chaos', '--json'], env);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { runId: string }).runId;
}

const posts = async (url: string) => countRequests(await sandboxStats(url), 'POST', '/companies');

/** Every row of the export is on the platform, once. */
async function expectEachRecordOnce(url: string): Promise<void> {
  const companies = (await sandboxDump(url)).companies ?? [];
  const ids = companies.map((c) => c.external_id);
  expect(new Set(ids).size).toBe(ids.length);
  expect(new Set(ids)).toEqual(
    new Set(Array.from({ length: ROWS }, (_, i) => `hubspot:company:${1000 + i}`)),
  );
}

async function finish(env: NodeJS.ProcessEnv, runId: string) {
  const r = await runCli(['show', runId, '--wait', '--json'], env, 120_000);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as {
    status: string;
    counts: Record<'created' | 'adopted' | 'failed', number>;
  };
}

describe('a worker process stopped mid-run', () => {
  it('SIGKILL: a fresh worker finishes the run, no record lost or doubled', async () => {
    const { env, sandboxUrl } = await setup();
    const first = await startWorker(env);
    const runId = await enqueue(env);
    await waitUntil(async () => (await posts(sandboxUrl)) >= ROWS / 5, 'some writes', 60_000, 50);
    first.kill('SIGKILL');
    const exit = await first.exited;
    expect(exit.signal).toBe('SIGKILL');
    const landed = await posts(sandboxUrl);
    expect(landed).toBeLessThan(ROWS);

    await startWorker(env);
    const summary = await finish(env, runId);
    expect(summary.status).toBe('completed');
    expect(summary.counts.created + summary.counts.adopted).toBe(ROWS);
    expect(summary.counts.failed).toBe(0);
    await expectEachRecordOnce(sandboxUrl);
  });

  it('SIGTERM: the worker exits 0 within its deadline; a new worker finishes the run', async () => {
    const { env, sandboxUrl } = await setup();
    const first = await startWorker(env);
    const runId = await enqueue(env);
    await waitUntil(async () => (await posts(sandboxUrl)) >= ROWS / 5, 'some writes', 60_000, 50);
    const signalled = Date.now();
    first.kill('SIGTERM');
    const exit = await first.exited;
    const tookMs = Date.now() - signalled;
    expect(exit.code).toBe(0);
    // The deadline, plus slack for a loaded machine to run the process at all.
    expect(tookMs).toBeLessThan(SHUTDOWN_MS + 5_000);
    expect(first.stderr.some((l) => l.includes('"msg":"shutting down"'))).toBe(true);
    const landed = await posts(sandboxUrl);
    expect(landed).toBeLessThan(ROWS);

    await startWorker(env);
    const summary = await finish(env, runId);
    expect(summary.status).toBe('completed');
    expect(summary.counts.created + summary.counts.adopted).toBe(ROWS);
    expect(summary.counts.failed).toBe(0);
    await expectEachRecordOnce(sandboxUrl);
    // Nothing was sent twice: one POST per record.
    expect(await posts(sandboxUrl)).toBe(ROWS);
  });
});

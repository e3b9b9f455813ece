/**
 * Two worker processes share one PLATFORM_RATE_LIMIT: against a sandbox with
 * 50 ms latency, the aggregate POST rate over the steady part of a run (from
 * 20% to 80% of the writes, read from the sandbox's stats) stays within 10%
 * of the limit, and both workers take part. A loose bound on a shared
 * machine, not a benchmark.
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
} from '../harness/cli.js';
import { useRedis } from '../harness/redis.js';

const { prefix, url: redisUrl } = useRedis();
const apiKey = 'e2e-rate-key-0123456789';
const ROWS = 400;
const LIMIT = 20;
const files = tempDir('e2e-rate');

beforeAll(() => {
  requireBuild();
  files.write('rated.yaml', companiesJob(files.write('rated.csv', companiesCsv(ROWS))));
});

afterAll(async () => {
  await killAll();
  files.remove();
});

describe('two workers, one rate limit', () => {
  it('the aggregate POST rate stays within 10% of PLATFORM_RATE_LIMIT', async () => {
    const sandbox = await startSandboxProcess(apiKey, ['--latency', '50']);
    const env = cliEnv({
      REDIS_URL: redisUrl,
      CRM_SYNC_PREFIX: prefix,
      CRM_SYNC_JOBS_DIR: files.dir,
      PLATFORM_BASE_URL: sandbox.url,
      PLATFORM_API_KEY: apiKey,
      PLATFORM_RATE_LIMIT: LIMIT,
      PLATFORM_LATENCY_HINT_MS: 50,
      OPS_PORT: 0,
      LOG_LEVEL: 'debug',
    });
    const workers = [spawnCli(['worker'], env), spawnCli(['worker'], env)];
    await Promise.all(workers.map((w) => w.waitForLine(/"msg":"ops server listening"/)));
    const enqueued = await runCli(['run', 'rated', '--json'], env);
    expect(enqueued.code, enqueued.stderr).toBe(0);

    const samples: { at: number; posts: number }[] = [];
    for (;;) {
      const posts = countRequests(await sandboxStats(sandbox.url), 'POST', '/companies');
      samples.push({ at: performance.now(), posts });
      if (posts >= ROWS) break;
      expect(samples.at(-1)!.at - samples[0]!.at).toBeLessThan(120_000);
      await new Promise((r) => setTimeout(r, 200));
    }
    const from = samples.find((s) => s.posts >= ROWS * 0.2)!;
    const to = samples.find((s) => s.posts >= ROWS * 0.8)!;
    const rate = ((to.posts - from.posts) * 1000) / (to.at - from.at);
    expect(rate, `steady POST rate ${rate.toFixed(1)}/s, limit ${LIMIT}/s`).toBeLessThanOrEqual(
      LIMIT * 1.1,
    );

    // Both processes wrote: each logged POSTs of its own.
    for (const w of workers) {
      const own = w.stderr.filter(
        (l) => l.includes('"msg":"platform request"') && l.includes('"method":"POST"'),
      );
      expect(own.length).toBeGreaterThan(0);
    }
    const ids = ((await sandboxDump(sandbox.url)).companies ?? []).map((c) => c.external_id);
    expect(new Set(ids).size).toBe(ROWS);
    expect(ids).toHaveLength(ROWS);
    process.stdout.write(`two workers, limit ${LIMIT}/s: steady POST rate ${rate.toFixed(2)}/s\n`);
  });
});

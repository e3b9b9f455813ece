import { afterAll, describe, expect, it } from 'vitest';
import { startRedisServer, removeDir } from '../harness/redis-server.js';
import { useRedis } from '../harness/redis.js';
import { closeRedis, createRedis } from '../../src/redis/connection.js';
import { createRunQueue, createWriteQueue } from '../../src/queue/queues.js';
import { createMetrics } from '../../src/ops/metrics.js';
import { isLoopback } from '../../src/loopback.js';
import { OpsServerError, startOpsServer } from '../../src/ops/server.js';

const { url, prefix } = useRedis();
const redis = createRedis('worker', url);
const runs = createRunQueue<{ n: number }>({ connection: redis, prefix });
const writes = createWriteQueue<{ n: number }>({ connection: redis, prefix });

afterAll(async () => {
  await runs.close();
  await writes.close();
  await closeRedis(redis);
});

describe('ops server', () => {
  it('serves health, readiness (cached), metrics with queue depth, and the dashboard', async () => {
    let checks = 0;
    const metrics = createMetrics({ defaultMetrics: false });
    const ops = await startOpsServer({
      port: 0,
      redis,
      queues: [runs, writes],
      metrics,
      checkPlatform: async () => {
        checks += 1;
      },
    });
    try {
      expect(ops.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const health = await fetch(`${ops.url}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: 'ok' });

      for (let i = 0; i < 3; i++) {
        const ready = await fetch(`${ops.url}/readyz`);
        expect(ready.status).toBe(200);
        expect(await ready.json()).toEqual({ status: 'ready' });
      }
      expect(checks).toBe(1);

      await writes.addBulk([1, 2, 3].map((n) => ({ name: 'w', data: { n } })));
      metrics.rowsRead.inc({ job: 'companies' }, 7);
      metrics.writes.inc({ operation: 'POST /companies', status: '201' });
      metrics.runDuration.observe({ job: 'companies', status: 'completed' }, 42);
      const scrape = await fetch(`${ops.url}/metrics`);
      expect(scrape.status).toBe(200);
      expect(scrape.headers.get('content-type')).toMatch(/text\/plain/);
      const text = await scrape.text();
      expect(text).toContain('crm_sync_queue_depth{queue="platform-writes",state="waiting"} 3');
      expect(text).toContain('crm_sync_queue_depth{queue="sync-runs",state="waiting"} 0');
      expect(text).toContain('crm_sync_rows_read_total{job="companies"} 7');
      expect(text).toContain(
        'crm_sync_platform_requests_total{operation="POST /companies",status="201"} 1',
      );
      expect(text).toContain(
        'crm_sync_run_duration_seconds_bucket{le="60",job="companies",status="completed"} 1',
      );

      const board = await fetch(`${ops.url}/queues`);
      expect(board.status).toBe(200);
      expect(await board.text()).toMatch(/<html/i);
      const api = await fetch(`${ops.url}/queues/api/queues`);
      expect(api.status).toBe(200);
      const names = ((await api.json()) as { queues: { name: string }[] }).queues.map(
        (q) => q.name,
      );
      expect(names.sort()).toEqual(['platform-writes', 'sync-runs']);
    } finally {
      await ops.close();
    }
  });

  it('is unready, with reasons, when the platform check fails or Redis is down', async () => {
    const server = await startRedisServer();
    const own = createRedis('worker', server.url);
    const ops = await startOpsServer({
      port: 0,
      redis: own,
      queues: [],
      metrics: createMetrics({ defaultMetrics: false }),
      checkPlatform: async () => {
        throw new Error('401 Unauthorized: the API key was refused');
      },
    });
    try {
      const first = await fetch(`${ops.url}/readyz`);
      expect(first.status).toBe(503);
      expect(await first.json()).toEqual({
        status: 'unready',
        problems: ['platform: 401 Unauthorized: the API key was refused'],
      });
      await server.stop();
      const second = await fetch(`${ops.url}/readyz`);
      expect(second.status).toBe(503);
      const body = (await second.json()) as { problems: string[] };
      expect(body.problems).toHaveLength(2);
      expect(body.problems[0]).toMatch(/^redis: /);
      // Liveness does not depend on Redis.
      expect((await fetch(`${ops.url}/healthz`)).status).toBe(200);
    } finally {
      await ops.close();
      await closeRedis(own);
      await server.stop();
      removeDir(server.dir);
    }
  });

  it('answers readiness within seconds when the platform check hangs (it waits on Redis)', async () => {
    let calls = 0;
    const ops = await startOpsServer({
      port: 0,
      redis,
      queues: [],
      metrics: createMetrics({ defaultMetrics: false }),
      // A check that never settles: the pacer it goes through waits on a frozen Redis.
      checkPlatform: () => {
        calls += 1;
        return new Promise<void>(() => {});
      },
    });
    try {
      for (let i = 0; i < 2; i++) {
        const started = Date.now();
        const res = await fetch(`${ops.url}/readyz`, { signal: AbortSignal.timeout(10_000) });
        const tookMs = Date.now() - started;
        expect(res.status).toBe(503);
        expect(await res.json()).toEqual({
          status: 'unready',
          problems: ['platform: no answer within 3000 ms'],
        });
        expect(tookMs).toBeGreaterThanOrEqual(2_900);
        expect(tookMs).toBeLessThan(8_000);
      }
      // The hanging check is shared, not started again by every probe.
      expect(calls).toBe(1);
    } finally {
      await ops.close();
    }
  });

  it('refuses a non-loopback address without a token', async () => {
    await expect(
      startOpsServer({
        host: '0.0.0.0',
        port: 0,
        redis,
        queues: [],
        checkPlatform: async () => {},
      }),
    ).rejects.toBeInstanceOf(OpsServerError);
    expect(isLoopback('127.0.0.1')).toBe(true);
    expect(isLoopback('::1')).toBe(true);
    expect(isLoopback('0.0.0.0')).toBe(false);
    expect(isLoopback('10.0.0.5')).toBe(false);
  });

  it('with a token, every route but the probes needs it', async () => {
    const token = 'ops-token-for-tests-1234';
    const ops = await startOpsServer({
      host: '0.0.0.0',
      port: 0,
      token,
      redis,
      queues: [runs],
      metrics: createMetrics({ defaultMetrics: false }),
      checkPlatform: async () => {},
    });
    const base = `http://127.0.0.1:${ops.port}`;
    try {
      // Orchestrators probe liveness and readiness without credentials.
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      for (const path of ['/metrics', '/queues', '/queues/api/queues']) {
        expect((await fetch(`${base}${path}`)).status).toBe(401);
        const wrong = await fetch(`${base}${path}`, { headers: { authorization: 'Bearer nope' } });
        expect(wrong.status).toBe(401);
        const right = await fetch(`${base}${path}`, {
          headers: { authorization: `Bearer ${token}` },
        });
        expect(right.status).toBe(200);
      }
    } finally {
      await ops.close();
    }
  });
});

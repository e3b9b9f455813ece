/**
 * What the write queue keeps of rate limiting now that the pacer paces each
 * request (test/integration/queue-pacer.test.ts): a job-start limit an
 * earlier release left on the queue is removed, so it cannot go on holding
 * writes to its old rate, and concurrency is sized for the most the rate can be.
 */
import { Worker } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { closeRedis, createRedis } from '../../src/redis/connection.js';
import { clearGlobalRateLimit, writeConcurrency } from '../../src/queue/limiter.js';
import { QueueName, createWriteQueue, workerOptions } from '../../src/queue/queues.js';
import { useRedis } from '../harness/redis.js';

const { url, prefix } = useRedis();
const connections = [createRedis('worker', url), createRedis('worker', url)] as const;
const [producer, workerConnection] = connections;

afterAll(async () => {
  for (const c of connections) await closeRedis(c);
});

describe('an earlier release’s job-start limit', () => {
  it('is removed, and job starts are no longer held to it', async () => {
    const queue = createWriteQueue<{ n: number }>({ connection: producer, prefix });
    // One job start per 2 s, as an old release could have left it.
    await queue.setGlobalRateLimit(1, 2_000);
    expect(await clearGlobalRateLimit(queue)).toBe(true);
    expect(await clearGlobalRateLimit(queue)).toBe(false);
    const worker = new Worker(
      QueueName.writes,
      async () => undefined,
      workerOptions(QueueName.writes, { connection: workerConnection, prefix, concurrency: 4 }),
    );
    try {
      let done = 0;
      const all = new Promise<void>((resolve) =>
        worker.on('completed', () => ++done === 6 && resolve()),
      );
      const started = performance.now();
      await queue.addBulk(Array.from({ length: 6 }, (_, n) => ({ name: 'w', data: { n } })));
      await all;
      // Held to the old limit, six starts would take 10 s.
      expect(performance.now() - started).toBeLessThan(2_000);
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});

describe('write concurrency', () => {
  it('covers twice rate × (latency + a write’s own 25 ms) for the most the rate can be, unless overridden', () => {
    // 10/s × 0.225 s × 2 = 4.5 → 5, + 2.
    expect(writeConcurrency({ rateLimit: 10, latencyMs: 200 })).toBe(7);
    // 100/s × 0.325 s × 2 = 65, + 2.
    expect(writeConcurrency({ rateLimit: 100, latencyMs: 300 })).toBe(67);
    // auto: sized from PLATFORM_RATE_LIMIT_MAX (default 200) and the latency hint (200 ms).
    expect(writeConcurrency({ rateLimit: 200 })).toBe(92);
    expect(writeConcurrency({ rateLimit: 100, latencyMs: 300, override: 8 })).toBe(8);
  });
});

/**
 * What the write queue keeps of rate limiting now that the pacer paces each
 * request (test/integration/queue-pacer.test.ts): a job-start limit an
 * earlier release left on the queue is removed, so it cannot go on holding
 * writes to its old rate, concurrency is sized for the most the rate can be,
 * and chunk jobs hold a quarter second of writes at the limit.
 */
import { Worker } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { closeRedis, createRedis } from '../../src/redis/connection.js';
import {
  chunkJobs,
  chunkSize,
  clearGlobalRateLimit,
  writeConcurrency,
} from '../../src/queue/limiter.js';
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

describe('chunk jobs', () => {
  it('hold a quarter second of writes at the limit, from 1 to the most', () => {
    // 20/s × 0.25 s = 5; 7/s: 1.75 → 2; 1/s and below: 1.
    expect(chunkSize(20, 50)).toBe(5);
    expect(chunkSize(7, 50)).toBe(2);
    expect(chunkSize(1, 50)).toBe(1);
    expect(chunkSize(0.2, 50)).toBe(1);
    // 200/s × 0.25 s = 50: the most from there up.
    expect(chunkSize(199, 50)).toBe(50);
    expect(chunkSize(200, 50)).toBe(50);
    expect(chunkSize(5_000, 50)).toBe(50);
    expect(chunkSize(100, 20)).toBe(20);
    // No limit known: the most.
    expect(chunkSize(0, 50)).toBe(50);
    expect(chunkSize(Number.NaN, 50)).toBe(50);
  });

  it('a worker holds enough of them to fill its slots at any limit, and one more', () => {
    // auto's defaults (92 slots, 200 ms): 2 chunks of 50 fill the slots; of a quarter second,
    // 2 × 0.225 s / 0.25 s = 1.8 → 2 cover the writes in flight at any lower limit; + 1.
    expect(chunkJobs({ concurrency: 92, most: 50, latencyMs: 200 })).toBe(3);
    expect(chunkJobs({ concurrency: 92, most: 50 })).toBe(3);
    // 1,500/s at 50 ms: 227 slots are 5 chunks of 50.
    expect(chunkJobs({ concurrency: 227, most: 50, latencyMs: 50 })).toBe(6);
    // A platform answering in a second: 2 × 1.025 s / 0.25 s = 8.2 → 9 short chunks, + 1.
    expect(chunkJobs({ concurrency: 100, most: 50, latencyMs: 1_000 })).toBe(10);
    // Never more chunks than slots (WRITE_CONCURRENCY=2), + 1.
    expect(chunkJobs({ concurrency: 2, most: 50, latencyMs: 1_000 })).toBe(3);
  });
});

import { Worker, type Job } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { useRedis } from '../harness/redis.js';
import { closeRedis, createRedis } from '../../src/queue/connection.js';
import {
  RateLimitRetriesExhaustedError,
  applyGlobalRateLimit,
  applyRateLimited,
  rateLimitWindow,
  rateLimitedStarts,
  writeConcurrency,
} from '../../src/queue/limiter.js';
import { QueueName, createWriteQueue, workerOptions } from '../../src/queue/queues.js';

const { url, prefix: basePrefix } = useRedis();
const connections = [createRedis('worker', url), createRedis('worker', url)] as const;
const [producer, workerConnection] = connections;

afterAll(async () => {
  for (const c of connections) await closeRedis(c);
});

// One prefix per test, inside the file's prefix (so cleanup finds it): a queue
// rate limit set by one test must not leak into the next.
let n = 0;
function setup(): { prefix: string } {
  n += 1;
  return { prefix: `${basePrefix}-${n}` };
}

describe('429 handling', () => {
  it('a 429 pauses the whole queue for Retry-After, then the job completes', async () => {
    const { prefix } = setup();
    const queue = createWriteQueue<{ n: number }>({ connection: producer, prefix });
    const starts: { id: string; at: number }[] = [];
    let limitedAt = 0;
    const worker = new Worker<{ n: number }>(
      QueueName.writes,
      async (job: Job<{ n: number }>) => {
        starts.push({ id: job.id!, at: Date.now() });
        if (job.data.n === 0 && limitedAt === 0) {
          limitedAt = Date.now();
          await applyRateLimited(queue, job, 300, 3);
        }
        return job.data.n;
      },
      workerOptions(QueueName.writes, { connection: workerConnection, prefix, concurrency: 1 }),
    );
    try {
      const completed = new Set<number>();
      const allDone = new Promise<void>((resolve) =>
        worker.on('completed', (job) => {
          completed.add(job.data.n);
          if (completed.size === 3) resolve();
        }),
      );
      await queue.addBulk([0, 1, 2].map((i) => ({ name: 'write', data: { n: i } })));
      await allDone;
      const after = starts.filter((s) => s.at > limitedAt);
      // Nothing at all started during the pause: the queue, not the job, waited.
      for (const s of after) expect(s.at - limitedAt).toBeGreaterThanOrEqual(280);
      expect(after.length).toBe(3);
      const job0 = (await queue.getJobs(['completed'])).find((j) => j.data.n === 0);
      // Two starts, one attempt: the rate-limited start did not use an attempt.
      expect(job0?.attemptsStarted).toBe(2);
      expect(job0?.attemptsMade).toBe(1);
    } finally {
      await worker.close();
      await queue.close();
    }
  });

  it('caps endless 429s: the job fails with a clear reason', async () => {
    const { prefix } = setup();
    const queue = createWriteQueue<{ n: number }>({ connection: producer, prefix });
    const worker = new Worker<{ n: number }>(
      QueueName.writes,
      async (job: Job<{ n: number }>) => applyRateLimited(queue, job, 20, 3),
      workerOptions(QueueName.writes, { connection: workerConnection, prefix, concurrency: 1 }),
    );
    try {
      const failed = new Promise<{ job: Job; err: Error }>((resolve) =>
        worker.on('failed', (job, err) => job && resolve({ job, err })),
      );
      await queue.add('write', { n: 1 });
      const { job, err } = await failed;
      expect(err).toBeInstanceOf(RateLimitRetriesExhaustedError);
      expect(job.failedReason).toMatch(/rate limited by the platform 4 times in a row/);
      expect(job.attemptsStarted).toBe(4);
      // Unrecoverable: the 8 BullMQ attempts were not spent on it.
      expect(await job.getState()).toBe('failed');
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});

describe('global rate limit', () => {
  it('is stored in Redis for every worker of the queue to read', async () => {
    const { prefix } = setup();
    const queue = createWriteQueue<{ n: number }>({ connection: producer, prefix });
    try {
      expect(await applyGlobalRateLimit(queue, 2.5)).toEqual({ max: 3, duration: 1_200 });
      expect(await queue.getGlobalRateLimit()).toMatchObject({ max: 3, duration: 1_200 });
    } finally {
      await queue.close();
    }
  });

  it('holds job starts to the limit across two workers', async () => {
    const { prefix } = setup();
    const queue = createWriteQueue<{ n: number }>({ connection: producer, prefix });
    await applyGlobalRateLimit(queue, 10);
    const extra = createRedis('worker', url);
    const starts: number[] = [];
    const processor = async (): Promise<void> => {
      starts.push(Date.now());
    };
    const workers = [workerConnection, extra].map(
      (connection) =>
        new Worker(
          QueueName.writes,
          processor,
          workerOptions(QueueName.writes, { connection, prefix, concurrency: 4 }),
        ),
    );
    try {
      let done = 0;
      const all = new Promise<void>((resolve) =>
        workers.forEach((w) => w.on('completed', () => ++done === 25 && resolve())),
      );
      await queue.addBulk(Array.from({ length: 25 }, (_, i) => ({ name: 'w', data: { n: i } })));
      await all;
      starts.sort((a, b) => a - b);
      // 25 starts at 10 per second need at least two full windows after the first.
      expect(starts.at(-1)! - starts[0]!).toBeGreaterThanOrEqual(1_800);
      // No one-second window ever saw more than 10 starts.
      for (let i = 0; i + 10 < starts.length; i++) {
        expect(starts[i + 10]! - starts[i]!).toBeGreaterThanOrEqual(900);
      }
    } finally {
      for (const w of workers) await w.close();
      await queue.close();
      await closeRedis(extra);
    }
  });
});

describe('limit arithmetic', () => {
  it('turns a rate into whole-number windows', () => {
    expect(rateLimitWindow(10)).toEqual({ max: 10, duration: 1_000 });
    expect(rateLimitWindow(2.5)).toEqual({ max: 3, duration: 1_200 });
    expect(rateLimitWindow(0.5)).toEqual({ max: 1, duration: 2_000 });
    expect(() => rateLimitWindow(0)).toThrow(RangeError);
  });

  it('sizes concurrency to cover rate × latency, unless overridden', () => {
    expect(writeConcurrency({ rateLimit: 10, latencyMs: 200 })).toBe(5);
    expect(writeConcurrency({ rateLimit: 100, latencyMs: 300 })).toBe(47);
    expect(writeConcurrency({ rateLimit: 100, latencyMs: 300, override: 8 })).toBe(8);
  });

  it('counts earlier starts that neither completed nor failed as rate-limited', () => {
    expect(rateLimitedStarts({ attemptsStarted: 1, attemptsMade: 0 })).toBe(0);
    expect(rateLimitedStarts({ attemptsStarted: 4, attemptsMade: 0 })).toBe(3);
    expect(rateLimitedStarts({ attemptsStarted: 4, attemptsMade: 3 })).toBe(0);
  });
});

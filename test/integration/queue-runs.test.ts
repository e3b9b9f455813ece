import { Worker, type Job } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { useRedis } from '../harness/redis.js';
import { closeRedis, createRedis } from '../../src/redis/connection.js';
import {
  QueueName,
  activeRunId,
  createRunQueue,
  enqueueRun,
  workerOptions,
} from '../../src/queue/queues.js';

const { url, prefix } = useRedis();
const connection = createRedis('worker', url);
const queue = createRunQueue<{ full: boolean }>({ connection, prefix });

afterAll(async () => {
  await queue.close();
  await closeRedis(connection);
});

describe('enqueueRun', () => {
  it('attaches a second enqueue to the waiting run, and starts a new run after it ends', async () => {
    const first = await enqueueRun(queue, 'companies', { full: false });
    const second = await enqueueRun(queue, 'companies', { full: true });
    expect(first.attached).toBe(false);
    expect(second).toEqual({ runId: first.runId, attached: true });
    expect(await queue.getJobCountByTypes('wait', 'active', 'delayed')).toBe(1);
    expect(await activeRunId(queue, 'companies')).toBe(first.runId);

    // Another job definition is independent.
    const other = await enqueueRun(queue, 'members', { full: false });
    expect(other.attached).toBe(false);
    expect(other.runId).not.toBe(first.runId);

    // While the run is active, enqueueing still attaches to it.
    const workerConnection = createRedis('worker', url);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const started: string[] = [];
    let onStart!: () => void;
    const firstStarted = new Promise<void>((r) => (onStart = r));
    const worker = new Worker(
      QueueName.runs,
      async (job: Job) => {
        started.push(job.id!);
        if (job.id === first.runId) {
          onStart();
          await gate;
        }
      },
      workerOptions(QueueName.runs, { connection: workerConnection, prefix, concurrency: 2 }),
    );
    try {
      await firstStarted;
      const during = await enqueueRun(queue, 'companies', { full: true });
      expect(during).toEqual({ runId: first.runId, attached: true });

      const done = new Promise<void>((resolve) =>
        worker.on('completed', (job) => job.id === first.runId && resolve()),
      );
      release();
      await done;

      const next = await enqueueRun(queue, 'companies', { full: false });
      expect(next.attached).toBe(false);
      expect(next.runId).not.toBe(first.runId);
      const nextJob = await queue.getJob(next.runId);
      expect(nextJob?.data).toEqual({ full: false });
    } finally {
      await worker.close();
      await closeRedis(workerConnection);
    }
    // Only the two first runs and the one after ever existed as jobs.
    expect(new Set(started).has(first.runId)).toBe(true);
    expect(started.filter((id) => id === first.runId)).toHaveLength(1);
  });

  it('uses the configured prefix for every queue key', async () => {
    const keys = await connection.keys(`${prefix}:${QueueName.runs}:*`);
    expect(keys.length).toBeGreaterThan(0);
    const stray = await connection.keys(`bull:${QueueName.runs}:*`);
    expect(stray).toEqual([]);
  });
});

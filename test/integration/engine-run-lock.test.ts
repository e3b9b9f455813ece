/**
 * A run job whose lock its worker lost (the lock lapsed while Redis was down,
 * and stalled-job recovery hands the run on): that worker must leave the run
 * alone, not fail it, and whoever holds the job next finishes it from its
 * checkpoint.
 */
import { randomUUID } from 'node:crypto';
import { Worker, type Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { processRun } from '../../src/engine/run.js';
import { closeRedis, createRedis } from '../../src/redis/connection.js';
import { QueueName, workerOptions } from '../../src/queue/queues.js';
import {
  companyRows,
  expectedCompany,
  hubspotCells,
  hubspotJob,
  HUBSPOT_HEADER,
  useEngines,
} from '../harness/engine.js';

const engine = useEngines();

describe('engine: a run job whose lock was lost', () => {
  it('is not failed by the worker that lost it; the next holder completes it', async () => {
    // Slow writes, so the run is still waiting on them when it first checks.
    const h = await engine({ sandbox: { latencyMs: 300 } });
    const service = await h.startWorkers();
    // Write workers only: this test plays the run worker.
    await service.runWorker.close();
    const rows = companyRows(20);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    const runId = await h.enqueue('companies');

    const redis = createRedis('worker', h.config.redisUrl);
    const settings = { prefix: h.config.prefix, connection: redis };
    const manual = new Worker(QueueName.runs, null, workerOptions(QueueName.runs, settings));
    let next: Worker | undefined;
    try {
      const token = randomUUID();
      const job = (await manual.getNextJob(token)) as Job | undefined;
      expect(job?.id).toBe(runId);
      // The lock lapses, as when the worker could not renew it in time.
      await redis.del(`${h.config.prefix}:${QueueName.runs}:${runId}:lock`);
      await expect(processRun(service.ctx, job!, token)).rejects.toThrow(/^Missing lock for job/);
      const left = await h.store.runs.get(runId);
      expect(left?.error).toBeUndefined();
      expect(left?.status).toBe('writing');

      // Stalled-job recovery gives the run job back; a run worker takes it and finishes.
      next = new Worker(QueueName.runs, (j: Job, t?: string) => processRun(service.ctx, j, t), {
        ...workerOptions(QueueName.runs, settings),
        lockDuration: 1_000,
        stalledInterval: 500,
      });
      const run = await h.waitForRun(runId);
      expect(run.error).toBeUndefined();
      expect(run.status).toBe('completed');
      expect(run.counts).toMatchObject({ read: 20, created: 20, failed: 0 });
      const dump = await h.dump();
      expect(dump.companies).toHaveLength(20);
      for (const r of rows) {
        expect(dump.companies.filter((c) => c.crm_company_id === r.id)).toEqual([
          expect.objectContaining(expectedCompany(r)),
        ]);
      }
    } finally {
      await next?.close();
      await manual.close();
      await closeRedis(redis);
    }
  });
});

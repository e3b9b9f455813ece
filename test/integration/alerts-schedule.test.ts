/**
 * Missed scheduled slots as alerts. What the scheduler can tell: a slot that
 * fired while the previous run was still going (it attached), a slot whose
 * run could not be started, and, when a scheduler starts, the slots that
 * passed while none was running. Each becomes one alert, delivered through
 * the alerts queue to a local webhook, once however often it is reported.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import {
  alertEmitter,
  createAlertQueue,
  startAlertWorker,
  type AlertSettings,
} from '../../src/alerts/delivery.js';
import type { GenericPayload } from '../../src/alerts/payload.js';
import type { MissedSlot } from '../../src/alerts/rules.js';
import { JobError } from '../../src/jobs/definition.js';
import { closeRedis, createRedis } from '../../src/redis/connection.js';
import { startScheduler } from '../../src/schedule/scheduler.js';
import { lastSlotKey } from '../../src/schedule/slot.js';
import { useRedis } from '../harness/redis.js';

const { url, prefix } = useRedis();
const redis = createRedis('worker', url);
afterAll(() => closeRedis(redis));

// Never due during the test: slots are fired by hand.
const jobs = [{ name: 'companies', schedule: '0 2 * * *' }];

describe('missed slots', () => {
  it('reports an overlap, a run that could not start, and slots passed while no scheduler ran', async () => {
    const p = `${prefix}-missed`;
    const missed: MissedSlot[] = [];
    await redis.set(lastSlotKey(p, 'companies'), '2026-11-20T02:00:00.000Z');
    let answer: 'attached' | 'throw' = 'attached';
    const s = await startScheduler({
      jobs,
      redis,
      prefix: p,
      now: () => new Date('2026-11-23T01:00:00Z'),
      enqueue: async () => {
        if (answer === 'throw') throw new Error('no job "companies" in /jobs');
        return { runId: 'run-still-going', attached: true };
      },
      onMissed: async (m) => {
        missed.push(m);
      },
    });
    try {
      // Slots of the 21st and 22nd passed with no scheduler running.
      expect(missed).toEqual([
        {
          job: 'companies',
          slot: '2026-11-22T02:00:00.000Z',
          cause: 'no-scheduler',
          count: 2,
          first: '2026-11-21T02:00:00.000Z',
        },
      ]);
      expect((await s.fire('companies', new Date('2026-11-23T02:00:00Z'))).outcome).toBe(
        'attached',
      );
      answer = 'throw';
      expect((await s.fire('companies', new Date('2026-11-24T02:00:00Z'))).outcome).toBe('failed');
      expect(missed.slice(1)).toEqual([
        {
          job: 'companies',
          slot: '2026-11-23T02:00:00.000Z',
          cause: 'overlap',
          runId: 'run-still-going',
        },
        {
          job: 'companies',
          slot: '2026-11-24T02:00:00.000Z',
          cause: 'not-started',
          error: 'no job "companies" in /jobs',
        },
      ]);
    } finally {
      await s.stop();
    }
  });

  it('delivers one alert per missed slot, however often it is reported', async () => {
    const bodies: string[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        bodies.push(body);
        res.end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const alerts: AlertSettings = {
      webhook: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
      format: 'json',
      publicUrl: 'https://ops.example',
      attempts: 3,
      backoffMs: 20,
      timeoutMs: 2_000,
    };
    const p = `${prefix}-deliver`;
    const queue = createAlertQueue({ connection: redis, prefix: p, alerts });
    // The job file no longer loads: the global webhook still carries its alerts.
    const loadJob = (): never => {
      throw new JobError('job.not-found', ['no job']);
    };
    const worker = startAlertWorker({ connection: redis, prefix: p, loadJob, alerts, env: {} });
    try {
      const emitter = alertEmitter({ queue, loadJob, alerts });
      const overlap: MissedSlot = {
        job: 'companies',
        slot: '2026-11-23T02:00:00.000Z',
        cause: 'overlap',
        runId: 'run-still-going',
      };
      await emitter.slotMissed(overlap);
      await emitter.slotMissed(overlap);
      await emitter.slotMissed({
        job: 'companies',
        slot: '2026-11-24T02:00:00.000Z',
        cause: 'not-started',
        error: 'cannot read https://user:hunter22@crm.example/export.csv',
      });
      const deadline = Date.now() + 20_000;
      while (
        Object.values(await queue.getJobCounts('waiting', 'active', 'delayed')).some((n) => n > 0)
      ) {
        expect(Date.now()).toBeLessThan(deadline);
        await new Promise((r) => setTimeout(r, 25));
      }
      const got = bodies.map((b) => JSON.parse(b) as GenericPayload);
      expect(got.map((a) => a.slot).sort()).toEqual([
        '2026-11-23T02:00:00.000Z',
        '2026-11-24T02:00:00.000Z',
      ]);
      const first = got.find((a) => a.slot === '2026-11-23T02:00:00.000Z')!;
      expect(first).toMatchObject({
        kind: 'missed',
        job: 'companies',
        runId: 'run-still-going',
        missed: 1,
        url: 'https://ops.example/#/runs/run-still-going',
      });
      const second = got.find((a) => a.slot === '2026-11-24T02:00:00.000Z')!;
      expect(second.reason).toMatch(/could not be started: cannot read https:\/\/crm\.example/);
      expect(bodies.join('\n')).not.toContain('hunter22');
    } finally {
      await worker.close();
      await queue.close();
      server.closeAllConnections();
      server.close();
    }
  });
});

import { afterAll, describe, expect, it } from 'vitest';
import { useRedis } from '../harness/redis.js';
import { captureLogger } from '../harness/log-capture.js';
import { closeRedis, createRedis } from '../../src/redis/connection.js';
import { createRunQueue, enqueueRun } from '../../src/queue/queues.js';
import { startScheduler, ScheduleError } from '../../src/schedule/scheduler.js';
import { pauseJob, pauseKey, resumeJob } from '../../src/schedule/pause.js';
import { lastSlotKey, slotOf } from '../../src/schedule/slot.js';
import type { MissedSlot } from '../../src/alerts/rules.js';

const { url, prefix } = useRedis();
const redisA = createRedis('worker', url);
const redisB = createRedis('worker', url);

afterAll(async () => {
  await closeRedis(redisA);
  await closeRedis(redisB);
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('scheduler', () => {
  it('enqueues on a fast cron, and two schedulers never double a slot', async () => {
    const p = `${prefix}-double`;
    const enqueued: string[] = [];
    const enqueue = async (job: string, slot: string) => {
      enqueued.push(`${job}@${slot}`);
      return { runId: `run-${enqueued.length}`, attached: false };
    };
    const jobs = [{ name: 'companies', schedule: '* * * * * *' }, { name: 'manual' }];
    const a = await startScheduler({ jobs, redis: redisA, prefix: p, enqueue });
    const b = await startScheduler({ jobs, redis: redisB, prefix: p, enqueue });
    expect(a.scheduled).toEqual(['companies']);
    await sleep(3_200);
    await a.stop();
    await b.stop();
    // About three slots fired in each scheduler; each was enqueued once.
    expect(enqueued.length).toBeGreaterThanOrEqual(2);
    expect(new Set(enqueued).size).toBe(enqueued.length);
    expect(enqueued.every((e) => e.startsWith('companies@'))).toBe(true);
    const last = await redisA.get(lastSlotKey(p, 'companies'));
    expect(enqueued.map((e) => e.split('@')[1])).toContain(last);
    // Stopped: nothing fires any more.
    const count = enqueued.length;
    await sleep(1_200);
    expect(enqueued.length).toBe(count);
  });

  it('counts the same slot fired in many replicas at once as one enqueue', async () => {
    const p = `${prefix}-race`;
    let calls = 0;
    const enqueue = async () => ({ runId: `run-${++calls}`, attached: false });
    const jobs = [{ name: 'companies', schedule: '0 2 * * *' }];
    const schedulers = await Promise.all(
      [redisA, redisB, redisA, redisB].map((redis) =>
        startScheduler({ jobs, redis, prefix: p, enqueue }),
      ),
    );
    const date = new Date('2026-03-02T02:00:00Z');
    const outcomes = await Promise.all(schedulers.map((s) => s.fire('companies', date)));
    expect(outcomes.filter((o) => o.outcome === 'enqueued')).toHaveLength(1);
    expect(outcomes.filter((o) => o.outcome === 'claimed-elsewhere')).toHaveLength(3);
    expect(calls).toBe(1);
    for (const s of schedulers) await s.stop();
  });

  it('does not start a second run while the previous one is still going', async () => {
    const p = `${prefix}-attach`;
    const queue = createRunQueue<{ slot: string }>({ connection: redisA, prefix: p });
    const { logger, lines } = captureLogger();
    const s = await startScheduler({
      jobs: [{ name: 'companies', schedule: '0 2 * * *' }],
      redis: redisA,
      prefix: p,
      logger,
      enqueue: (job, slot) => enqueueRun(queue, job, { slot }),
    });
    try {
      const first = await s.fire('companies', new Date('2026-03-02T02:00:00Z'));
      const second = await s.fire('companies', new Date('2026-03-03T02:00:00Z'));
      expect(first.outcome).toBe('enqueued');
      expect(second).toMatchObject({ outcome: 'attached', runId: first.runId });
      expect(await queue.getJobCountByTypes('wait', 'active')).toBe(1);
      expect(lines.some((l) => String(l.msg).includes('previous run still active'))).toBe(true);
    } finally {
      await s.stop();
      await queue.close();
    }
  });

  it('logs the slots missed while no scheduler was running', async () => {
    const p = `${prefix}-missed`;
    const now = new Date('2026-03-05T12:00:00Z');
    await redisA.set(lastSlotKey(p, 'companies'), slotOf(new Date('2026-03-02T02:00:00Z')));
    const { logger, lines } = captureLogger();
    const s = await startScheduler({
      jobs: [{ name: 'companies', schedule: '0 2 * * *' }],
      redis: redisA,
      prefix: p,
      logger,
      now: () => now,
      enqueue: async () => ({ runId: 'x', attached: false }),
    });
    await s.stop();
    const warn = lines.find((l) => l.level === 'warn' && l.job === 'companies');
    expect(warn).toMatchObject({
      missed: 3,
      first: '2026-03-03T02:00:00.000Z',
      last: '2026-03-05T02:00:00.000Z',
    });
  });

  it('a paused job enqueues nothing and misses nothing; resumed, it fires again', async () => {
    const p = `${prefix}-paused`;
    const enqueued: string[] = [];
    const missed: MissedSlot[] = [];
    const enqueue = async (job: string, slot: string) => {
      enqueued.push(slot);
      return { runId: `run-${enqueued.length}`, attached: false };
    };
    const onMissed = async (m: MissedSlot) => {
      missed.push(m);
    };
    const paused = await pauseJob(
      redisA,
      p,
      'companies',
      'cli:ops',
      new Date('2026-03-01T09:00:00Z'),
    );
    expect(paused).toEqual({ by: 'cli:ops', since: '2026-03-01T09:00:00.000Z' });
    // Pausing again keeps who paused it first, and since when.
    expect(await pauseJob(redisA, p, 'companies', 'ops-api')).toEqual(paused);
    expect(await redisA.hgetall(pauseKey(p, 'companies'))).toEqual({
      by: 'cli:ops',
      since: '2026-03-01T09:00:00.000Z',
    });
    const { logger, lines } = captureLogger();
    const jobs = [{ name: 'companies', schedule: '* * * * * *' }];
    // Two replicas: the paused slot is still claimed once, so logged once.
    const a = await startScheduler({ jobs, redis: redisA, prefix: p, enqueue, onMissed, logger });
    const b = await startScheduler({ jobs, redis: redisB, prefix: p, enqueue, onMissed, logger });
    try {
      await sleep(2_300);
      expect(enqueued).toEqual([]);
      expect(missed).toEqual([]);
      const skipped = lines.filter((l) => l.msg === 'job paused; slot skipped');
      expect(skipped.length).toBeGreaterThanOrEqual(2);
      expect(skipped.every((l) => l.level === 'info' && l.pausedBy === 'cli:ops')).toBe(true);
      expect(new Set(skipped.map((l) => l.slot)).size).toBe(skipped.length);
      const lastPaused = String(skipped.at(-1)!.slot);

      const resumedAt = new Date();
      expect(await resumeJob(redisA, p, 'companies', resumedAt)).toBe(true);
      expect(await resumeJob(redisA, p, 'companies')).toBe(false);
      await sleep(2_300);
      expect(enqueued.length).toBeGreaterThanOrEqual(1);
      // No slot passed while paused is run afterwards.
      expect(enqueued.every((slot) => slot > lastPaused)).toBe(true);
      expect(new Set(enqueued).size).toBe(enqueued.length);
      expect(missed).toEqual([]);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it('does not report slots of a paused job as missed, nor after it is resumed', async () => {
    const p = `${prefix}-paused-missed`;
    const schedule = { jobs: [{ name: 'companies', schedule: '0 2 * * *' }], prefix: p };
    await redisA.set(lastSlotKey(p, 'companies'), slotOf(new Date('2026-03-02T02:00:00Z')));
    await pauseJob(redisA, p, 'companies', 'ops-api', new Date('2026-03-02T03:00:00Z'));
    const missed: MissedSlot[] = [];
    const start = (now: Date) =>
      startScheduler({
        ...schedule,
        redis: redisA,
        now: () => now,
        enqueue: async () => ({ runId: 'x', attached: false }),
        onMissed: async (m) => {
          missed.push(m);
        },
      });
    // Three daily slots passed while paused and no scheduler ran.
    await (await start(new Date('2026-03-05T12:00:00Z'))).stop();
    expect(missed).toEqual([]);
    // Resumed before the 6th's slot: the paused days are not missed.
    await resumeJob(redisA, p, 'companies', new Date('2026-03-05T13:00:00Z'));
    expect(await redisA.get(lastSlotKey(p, 'companies'))).toBe('2026-03-05T13:00:00.000Z');
    await (await start(new Date('2026-03-05T23:00:00Z'))).stop();
    expect(missed).toEqual([]);
    // Slots after the resume that no scheduler ran are missed as before.
    await (await start(new Date('2026-03-07T12:00:00Z'))).stop();
    expect(missed).toEqual([
      {
        job: 'companies',
        slot: '2026-03-07T02:00:00.000Z',
        cause: 'no-scheduler',
        count: 2,
        first: '2026-03-06T02:00:00.000Z',
      },
    ]);
  });

  it('refuses bad schedules, listing every one', async () => {
    const err = await startScheduler({
      jobs: [
        { name: 'a', schedule: 'not a cron' },
        { name: 'b', schedule: '0 2 * * *', timezone: 'Nowhere/Land' },
      ],
      redis: redisA,
      prefix,
      enqueue: async () => ({ runId: 'x', attached: false }),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScheduleError);
    const problems = (err as ScheduleError).problems;
    expect(problems.some((p) => p.startsWith('a: schedule'))).toBe(true);
    expect(problems).toContain('b: timezone: "Nowhere/Land" is not an IANA time zone');
  });
});

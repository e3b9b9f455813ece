/**
 * Cron schedules for job definitions. node-cron fires in every replica, so
 * each firing first claims its slot in Redis (`SET NX PX`): one replica wins
 * and enqueues, the others stand down. Enqueueing attaches to a run that is
 * still going instead of starting a second one. The last claimed slot of each
 * job is kept in Redis, so a scheduler that starts after an outage can say
 * which slots were missed. A slot that starts no run of its own is told to
 * `onMissed` (alerts): attached to a run still going, not started, or
 * passed while no scheduler ran (seen only when one starts again). A paused
 * job's slots (src/schedule/pause.ts) are claimed but start nothing and are
 * not missed.
 */
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../redis/connection.js';
import { callScript } from '../redis/scripts.js';
import cron, { type Logger as CronLogger, type ScheduledTask } from 'node-cron';
import type { MissedSlot } from '../alerts/rules.js';
import { silentLogger, type Logger } from '../log.js';
import { pauseOf } from './pause.js';
import { lastSlotKey, missedSlots, scheduleProblems, slotClaimKey, slotOf } from './slot.js';

export interface ScheduledJob {
  name: string;
  /** A cron expression (5 fields, or 6 with seconds first). Jobs without one are skipped. */
  schedule?: string;
  timezone?: string;
}

export type Enqueue = (
  jobName: string,
  slot: string,
) => Promise<{ runId: string; attached: boolean }>;

export interface SchedulerOptions {
  jobs: readonly ScheduledJob[];
  /** A waiting-role connection: a firing during a Redis restart waits rather than fails. */
  redis: RedisClient;
  prefix: string;
  enqueue: Enqueue;
  logger?: Logger;
  /** The clock, for the missed-slot check at start. */
  now?: () => Date;
  /** How long a slot claim lives; it only has to outlast clock skew between replicas. */
  claimTtlMs?: number;
  /**
   * Told of each slot that started no run of its own (alerts): one that
   * attached to the run still going, one whose run could not be started,
   * and, when a scheduler starts, the slots that passed while none ran.
   */
  onMissed?: (m: MissedSlot) => Promise<void>;
}

export interface SlotOutcome {
  job: string;
  slot: string;
  outcome: 'enqueued' | 'attached' | 'claimed-elsewhere' | 'paused' | 'failed';
  runId?: string;
}

export interface Scheduler {
  /** The jobs that have a schedule and are running. */
  readonly scheduled: readonly string[];
  /** Fires one slot by hand, as a cron tick would (used by tests and `execute`). */
  fire(jobName: string, date: Date): Promise<SlotOutcome>;
  /** Stops every task and waits for firings in flight. */
  stop(): Promise<void>;
}

export class ScheduleError extends Error {
  readonly code = 'schedule.invalid';
  constructor(readonly problems: string[]) {
    super(`invalid schedules:\n  ${problems.join('\n  ')}`);
    this.name = 'ScheduleError';
  }
}

export async function startScheduler(opts: SchedulerOptions): Promise<Scheduler> {
  const logger = opts.logger ?? silentLogger;
  const now = opts.now ?? (() => new Date());
  const claimTtlMs = opts.claimTtlMs ?? 10 * 60_000;
  const owner = randomBytes(6).toString('hex');
  const jobs = opts.jobs.filter((j): j is ScheduledJob & { schedule: string } => !!j.schedule);

  const problems = jobs.flatMap((j) =>
    scheduleProblems(j.schedule, j.timezone).map((p) => `${j.name}: ${p}`),
  );
  if (problems.length > 0) throw new ScheduleError(problems);

  const onMissed = async (m: MissedSlot): Promise<void> => {
    await opts
      .onMissed?.(m)
      .catch((err: unknown) => logger.error({ err, job: m.job }, 'could not report a missed slot'));
  };
  await reportMissed(opts.redis, opts.prefix, jobs, now(), logger, onMissed);

  const inFlight = new Set<Promise<SlotOutcome>>();
  const byName = new Map(jobs.map((j) => [j.name, j]));

  const fireSlot = async (jobName: string, date: Date): Promise<SlotOutcome> => {
    const slot = slotOf(date);
    const log = logger.child({ job: jobName, slot });
    try {
      const claimed = await opts.redis.set(
        slotClaimKey(opts.prefix, jobName, slot),
        owner,
        'PX',
        claimTtlMs,
        'NX',
      );
      if (claimed !== 'OK') {
        log.debug('slot claimed by another scheduler');
        return { job: jobName, slot, outcome: 'claimed-elsewhere' };
      }
      // Only forward (lua/advance-last-slot-1.lua): two replicas never rewind it.
      await callScript(opts.redis, 'advance-last-slot', lastSlotKey(opts.prefix, jobName), slot);
      const paused = await pauseOf(opts.redis, opts.prefix, jobName);
      if (paused) {
        log.info({ pausedBy: paused.by, pausedSince: paused.since }, 'job paused; slot skipped');
        return { job: jobName, slot, outcome: 'paused' };
      }
      const { runId, attached } = await opts.enqueue(jobName, slot);
      if (attached) {
        log.info({ runId }, 'previous run still active; not starting another');
        await onMissed({ job: jobName, slot, cause: 'overlap', runId });
        return { job: jobName, slot, outcome: 'attached', runId };
      }
      log.info({ runId }, 'scheduled run enqueued');
      return { job: jobName, slot, outcome: 'enqueued', runId };
    } catch (err) {
      log.error({ err }, 'could not enqueue the scheduled run');
      await onMissed({
        job: jobName,
        slot,
        cause: 'not-started',
        error: err instanceof Error ? err.message : String(err),
      });
      return { job: jobName, slot, outcome: 'failed' };
    }
  };

  const fire = (jobName: string, date: Date): Promise<SlotOutcome> => {
    if (!byName.has(jobName)) return Promise.reject(new Error(`no schedule for job ${jobName}`));
    const p = fireSlot(jobName, date);
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
    return p;
  };

  const tasks: ScheduledTask[] = jobs.map((job) =>
    cron.schedule(
      job.schedule,
      async (ctx) => {
        await fire(job.name, ctx.date);
      },
      {
        name: `crm-sync:${job.name}`,
        ...(job.timezone !== undefined && { timezone: job.timezone }),
        // The slot claim, not node-cron, decides overlap and replicas.
        noOverlap: false,
        // node-cron's own warnings (a tick missed under load) as JSON log lines.
        logger: cronLogger(logger.child({ job: job.name })),
      },
    ),
  );
  for (const job of jobs) {
    logger.info(
      { job: job.name, schedule: job.schedule, timezone: job.timezone ?? 'UTC' },
      'schedule started',
    );
  }

  let stopping: Promise<void> | undefined;
  return {
    scheduled: jobs.map((j) => j.name),
    fire,
    stop: () =>
      (stopping ??= (async () => {
        for (const task of tasks) await task.destroy();
        await Promise.allSettled([...inFlight]);
      })()),
  };
}

function cronLogger(logger: Logger): CronLogger {
  const write =
    (level: 'info' | 'warn' | 'error' | 'debug') =>
    (message: string | Error, err?: Error): void => {
      if (message instanceof Error) logger[level]({ err: message }, 'node-cron');
      else if (err) logger[level]({ err }, message);
      else logger[level](message);
    };
  return { info: write('info'), warn: write('warn'), error: write('error'), debug: write('debug') };
}

async function reportMissed(
  redis: RedisClient,
  prefix: string,
  jobs: readonly (ScheduledJob & { schedule: string })[],
  now: Date,
  logger: Logger,
  onMissed: (m: MissedSlot) => Promise<void>,
): Promise<void> {
  for (const job of jobs) {
    const lastSlot = await redis.get(lastSlotKey(prefix, job.name));
    if (!lastSlot) continue;
    const paused = await pauseOf(redis, prefix, job.name);
    if (paused) {
      logger.info(
        { job: job.name, pausedBy: paused.by, pausedSince: paused.since },
        'job paused; its slots are not checked for missed ones',
      );
      continue;
    }
    try {
      const missed = missedSlots({
        schedule: job.schedule,
        ...(job.timezone !== undefined && { timezone: job.timezone }),
        lastSlot,
        now,
      });
      if (missed.count > 0) {
        logger.warn(
          {
            job: job.name,
            missed: missed.count,
            truncated: missed.truncated,
            first: missed.first,
            last: missed.last,
            lastSlot,
          },
          `missed ${missed.truncated ? 'more than ' : ''}${missed.count} scheduled slot(s) while no scheduler was running; run the job by hand if it should catch up`,
        );
        await onMissed({
          job: job.name,
          slot: missed.last!,
          cause: 'no-scheduler',
          count: missed.count,
          first: missed.first!,
        });
      }
    } catch (err) {
      logger.warn({ job: job.name, err }, 'could not work out missed slots');
    }
  }
}

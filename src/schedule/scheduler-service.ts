/**
 * The scheduler as a service: job definitions from the jobs folder, a
 * waiting Redis connection, the runs queue, and the schedules, each
 * registered with the process's shutdown so they close in reverse order.
 * Used by `crm-sync scheduler` and by `crm-sync start` beside the workers.
 * A firing starts its run as `crm-sync run` does (`startRun`): the job is
 * loaded again (its files read again only when they changed), and the run's
 * record exists from the moment it is enqueued.
 */
import type { RedisClient } from '../redis/connection.js';
import { alertEmitter, createAlertQueue } from '../alerts/delivery.js';
import type { Config } from '../config.js';
import type { RunJobData } from '../engine/payloads.js';
import { jobLoader, RunConflictError, startRun } from '../engine/run-service.js';
import { JobError, loadJobs } from '../jobs/definition.js';
import type { JobLoader } from '../jobs/job-loader.js';
import type { Logger } from '../log.js';
import type { Shutdown } from '../ops/shutdown.js';
import {
  checkEvictionPolicy,
  checkTopology,
  closeRedis,
  createRedis,
  whenReady,
} from '../redis/connection.js';
import { createRunQueue, type TypedQueue } from '../queue/queues.js';
import { StateStore } from '../state/store.js';
import { startScheduler, type Scheduler } from './scheduler.js';

export interface SchedulerServiceOptions {
  config: Config;
  logger: Logger;
  shutdown: Shutdown;
  /** Overrides `config.jobsDir` (the `--jobs` option). */
  jobsDir?: string;
  /**
   * The process's job loader, when it has one (`crm-sync start`: the
   * workers'), so that a job's files are read once for both; by default the
   * service's own.
   */
  loadJob?: JobLoader;
}

export interface SchedulerService {
  scheduler: Scheduler;
  /** The service's waiting connection (for readiness checks). */
  redis: RedisClient;
  /** The runs queue it enqueues on (for the dashboard and queue depth). */
  queue: TypedQueue<RunJobData>;
}

/**
 * Loads every job definition (refusing to start if any is invalid: a
 * schedule silently dropped is worse than a loud start-up failure) and
 * starts the schedules of those that have one.
 */
export async function startSchedulerService(
  opts: SchedulerServiceOptions,
): Promise<SchedulerService> {
  const { config, logger, shutdown } = opts;
  const jobsDir = opts.jobsDir ?? config.jobsDir;
  const loadJob = opts.loadJob ?? jobLoader(config, jobsDir);
  const { jobs, problems } = loadJobs(jobsDir, loadJob);
  if (problems.length > 0) throw new JobError('job.invalid', problems);

  const redis = createRedis('worker', config.redis, { logger });
  shutdown.register('scheduler redis', () => closeRedis(redis));
  logger.info({ redis: config.redisUrl }, 'waiting for Redis');
  await whenReady(redis);
  await checkTopology(redis, config.redis);
  await checkEvictionPolicy(redis, logger);

  const queue = createRunQueue<RunJobData>({
    connection: redis,
    prefix: config.prefix,
    keepRuns: config.runHistory,
  });
  shutdown.register('runs queue (scheduler)', () => queue.close());
  const deps = {
    store: new StateStore(redis, { prefix: config.prefix, runHistory: config.runHistory, logger }),
    runQueue: queue,
    loadJob,
  };
  // State of a layout this release cannot use (older: `crm-sync migrate`; newer: upgrade) stops it here.
  await deps.store.layout.assertRead();

  // Missed slots become alerts, delivered by a worker's alert worker.
  const alertQueue = createAlertQueue({
    connection: redis,
    prefix: config.prefix,
    alerts: config.alerts,
  });
  shutdown.register('alerts queue (scheduler)', () => alertQueue.close());
  const alerts = alertEmitter({
    queue: alertQueue,
    loadJob: deps.loadJob,
    alerts: config.alerts,
    logger,
  });

  const scheduler = await startScheduler({
    jobs: jobs.map((j) => ({
      name: j.name,
      ...(j.schedule !== undefined && { schedule: j.schedule }),
      ...(j.timezone !== undefined && { timezone: j.timezone }),
    })),
    redis,
    prefix: config.prefix,
    logger,
    // A slot that meets a run of the job going, whatever its options, overlaps it.
    enqueue: (job, slot) =>
      startRun(deps, job, { trigger: 'schedule', slot }).catch((err: unknown) => {
        if (err instanceof RunConflictError) return { runId: err.running.id, attached: true };
        throw err;
      }),
    onMissed: (m) => alerts.slotMissed(m),
  });
  shutdown.register('scheduler', () => scheduler.stop());
  if (scheduler.scheduled.length === 0) {
    logger.warn({ jobsDir }, 'no job definition has a schedule; the scheduler has nothing to do');
  } else {
    logger.info({ jobs: scheduler.scheduled }, 'scheduler running');
  }
  return { scheduler, redis, queue };
}

/**
 * The worker as a service: Redis connections, the state store, the platform
 * client, the two queues and their workers, each registered with the
 * process's shutdown so they close in reverse order of opening. Used by
 * `crm-sync worker`, `crm-sync start` and `crm-sync run --with-worker`.
 */
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import {
  alertEmitter,
  createAlertQueue,
  startAlertWorker,
  type AlertQueue,
} from '../alerts/delivery.js';
import { requirePlatform, type Config } from '../config.js';
import type { Logger } from '../log.js';
import { processMetrics, type Metrics } from '../ops/metrics.js';
import { workerCloser, type Shutdown } from '../ops/shutdown.js';
import { PlatformClient } from '../platform/client.js';
import {
  checkEvictionPolicy,
  checkTopology,
  closeRedis,
  createRedis,
  whenReady,
} from '../redis/connection.js';
import { chunkJobs, clearGlobalRateLimit, writeConcurrency } from '../queue/limiter.js';
import { pacerModeOf, RedisPacer } from '../queue/pacer.js';
import {
  createRunQueue,
  createWriteQueue,
  QueueName,
  workerOptions,
  type TypedQueue,
} from '../queue/queues.js';
import { WORKER_NAME } from '../queue/worker-layout.js';
import { WriterLease } from '../queue/writer-lease.js';
import { preloadJobs } from '../jobs/job-loader.js';
import { StateStore } from '../state/store.js';
import { createEngineContext, type EngineContext, type EngineSettings } from './context.js';
import type { RunJobData, WriteChunkData } from './payloads.js';
import { processRun } from './run.js';
import { jobLoader } from './run-service.js';
import { processWriteChunk, settleAbandoned } from './write-chunk.js';
import { WriteSlots } from './write-slots.js';

export interface WorkerServiceOptions {
  config: Config;
  logger: Logger;
  shutdown: Shutdown;
  /** Overrides `config.jobsDir` (the `--jobs` option). */
  jobsDir?: string;
  metrics?: Metrics;
  settings?: Partial<EngineSettings>;
  /** This machine's idle cores since the last call, for the writer lease (default: from os.cpus()). */
  spareCores?: () => number;
}

export interface WorkerService {
  ctx: EngineContext;
  runQueue: TypedQueue<RunJobData>;
  writeQueue: TypedQueue<WriteChunkData>;
  /** Alerts waiting for delivery (src/alerts/delivery.ts). */
  alertQueue: AlertQueue;
  runWorker: Worker;
  writeWorker: Worker;
  /** Whether this process writes (src/queue/writer-lease.ts). */
  writerLease: WriterLease;
  alertWorker: Worker;
  concurrency: number;
}

export async function startWorkerService(opts: WorkerServiceOptions): Promise<WorkerService> {
  const { config, logger, shutdown } = opts;
  const platform = requirePlatform(config);
  const jobsDir = opts.jobsDir ?? config.jobsDir;

  const redis = createRedis('worker', config.redis, { logger });
  shutdown.register('worker redis', () => closeRedis(redis));
  const stateRedis = createRedis('state', config.redis, { logger });
  shutdown.register('state redis', () => closeRedis(stateRedis));
  logger.info({ redis: config.redisUrl }, 'waiting for Redis');
  await Promise.all([whenReady(redis), whenReady(stateRedis)]);
  await checkTopology(redis, config.redis);
  await checkEvictionPolicy(redis, logger);

  const concurrency = writeConcurrency({
    rateLimit: config.platform.rateLimit,
    latencyMs: config.writes.latencyHintMs,
    ...(config.writes.concurrency !== undefined && { override: config.writes.concurrency }),
  });
  // Every platform request of every replica takes its turn here (src/queue/pacer.ts).
  let told: { rate: number; source: string } | undefined;
  const pacer = new RedisPacer({
    redis,
    prefix: config.prefix,
    mode: pacerModeOf(config.platform),
    logger,
    onRate: (rate, source) => {
      opts.metrics?.platformRate.set(rate);
      // A long window paced by its room moves the rate every second: info only when its
      // reason changes or it moves by a tenth since the last info line, debug otherwise.
      const moved = !told || told.source !== source || Math.abs(rate - told.rate) >= told.rate / 10;
      if (moved) told = { rate, source };
      logger[moved ? 'info' : 'debug'](
        { rate: Math.round(rate * 100) / 100, source },
        'platform rate',
      );
    },
  });
  await pacer.start();
  opts.metrics?.platformRate.set(pacer.rate);
  shutdown.register('platform pacer', () => pacer.stop());
  const client = new PlatformClient({
    baseUrl: platform.baseUrl,
    apiKey: platform.apiKey,
    timeoutMs: config.platform.timeoutMs,
    // A socket for every write in flight, plus the listing: fewer would cap the rate below the limit.
    maxSockets: concurrency + 2,
    logger,
    pacer,
  });
  shutdown.register('platform client', () => client.close());

  const settings = { prefix: config.prefix, connection: redis, keepRuns: config.runHistory };
  const runQueue = createRunQueue<RunJobData>(settings);
  shutdown.register('runs queue', () => runQueue.close());
  const writeQueue = createWriteQueue<WriteChunkData>({
    ...settings,
    retry: config.retry,
  });
  shutdown.register('writes queue', () => writeQueue.close());
  // Job starts are not paced any more (requests are): a limit an earlier release set would hold them.
  await clearGlobalRateLimit(writeQueue);
  const alertQueue = createAlertQueue({ ...settings, alerts: config.alerts });
  shutdown.register('alerts queue', () => alertQueue.close());
  for (const [name, q] of [
    ['runs queue', runQueue],
    ['writes queue', writeQueue],
    ['alerts queue', alertQueue],
  ] as const) {
    // A queue passes on its connection's faults; with no listener BullMQ prints
    // them raw on stderr. The outage itself is logged once by the connection.
    q.on('error', (err) => logger.debug({ err, queue: name }, 'queue connection error'));
  }
  // One loader for the process: a run's definition is read again only when its files change.
  const loadJobOf = jobLoader(config, jobsDir);
  // Read now, before any write is paced, rather than at each job's first run.
  for (const { job, problems } of preloadJobs(loadJobOf, jobsDir))
    logger.warn({ job, problems }, 'job does not load: its runs will fail until it is fixed');
  const store = new StateStore(stateRedis, {
    prefix: config.prefix,
    runHistory: config.runHistory,
    logger,
  });
  // State of a layout this release cannot use (older: `crm-sync migrate`; newer: upgrade) stops it here.
  await store.layout.assertRead();
  const alerts = alertEmitter({
    queue: alertQueue,
    loadJob: loadJobOf,
    alerts: config.alerts,
    store,
    logger,
  });

  const ctx = createEngineContext({
    logger,
    store,
    client,
    writeQueue,
    // Every write of the process shares the slots, whichever chunk it is in.
    writeSlots: new WriteSlots(concurrency),
    loadJob: loadJobOf,
    platformLimit: () => pacer.limit(),
    onRunEnd: (run) => alerts.runEnded(run),
    sourceEnv: config.sourceEnv,
    wakeRun: async (runId) => {
      const job = await runQueue.getJob(runId);
      // Only a run asleep in the delayed set can be woken; any other state is already moving.
      if (job && (await job.isDelayed())) await job.promote().catch(() => undefined);
    },
    ...(opts.metrics && { metrics: opts.metrics }),
    settings: {
      rateLimit: config.platform.rateLimit,
      retry: config.retry,
      lockMs: config.workerLockMs,
      ...opts.settings,
    },
  });

  const lock = {
    lockDuration: config.workerLockMs,
    stalledInterval: config.workerLockMs,
    // The layout it writes, in its connection's name: `crm-sync migrate` lists the others.
    name: WORKER_NAME,
  };
  const chunks = chunkJobs({
    concurrency,
    most: ctx.settings.writeChunk,
    latencyMs: config.writes.latencyHintMs,
  });
  // Started by the writer lease below: only the process holding it takes chunks, unless it calls for help.
  const writeWorker = new Worker(
    QueueName.writes,
    (job: Job, token?: string, signal?: AbortSignal) => processWriteChunk(ctx, job, signal, token),
    {
      ...workerOptions(QueueName.writes, {
        ...settings,
        concurrency: chunks,
        retry: config.retry,
      }),
      ...lock,
      autorun: false,
    },
  );
  const runWorker = new Worker(
    QueueName.runs,
    (job: Job, token?: string) => processRun(ctx, job, token),
    { ...workerOptions(QueueName.runs, { ...settings, concurrency: 4 }), ...lock },
  );
  writeWorker.on('failed', (job, err) => {
    if (!job) return;
    const final = err instanceof UnrecoverableError || job.attemptsMade >= (job.opts.attempts ?? 1);
    if (final) {
      settleAbandoned(ctx, job, err).catch((e: unknown) =>
        logger.error({ err: e, jobId: job.id }, 'could not settle an abandoned write'),
      );
    }
  });
  // Delivers alerts beside the runs: a webhook that is down holds one of its slots, not a run.
  const alertWorker = startAlertWorker({
    ...settings,
    loadJob: loadJobOf,
    alerts: config.alerts,
    env: config.sourceEnv,
    logger,
    metrics: opts.metrics ?? processMetrics(),
    runs: store.runs,
  });
  shutdown.register('alert worker', workerCloser(alertWorker));
  for (const [name, w] of [
    ['run worker', runWorker],
    ['write worker', writeWorker],
  ] as const) {
    // A worker without an error listener crashes the process on the first fault.
    w.on('error', (err) => logger.error({ err, worker: name }, 'worker error'));
    w.on('failed', (job, err) =>
      logger.warn({ err, job: job?.name, jobId: job?.id, worker: name }, 'job failed'),
    );
    // Stop taking jobs, let the ones in flight finish until the deadline, then abort them.
    shutdown.register(name, workerCloser(w));
  }
  const lease = new WriterLease({
    redis,
    prefix: config.prefix,
    logger,
    ...(opts.spareCores && { spareCores: opts.spareCores }),
    sample: async () => ({
      at: performance.now(),
      waiting: await writeQueue.getJobCountByTypes('wait', 'prioritized'),
      taken: pacer.turnsTaken,
      rate: pacer.rate,
      throttled: pacer.throttled,
      answered: pacer.answeredAll,
    }),
    onRole: async (role, why) => {
      opts.metrics?.writing.set(role === 'write' ? 1 : 0);
      // A paused worker finishes the chunks it holds; the writer's stalled check covers the rest.
      if (role === 'write') await writeWorker.resume();
      else await writeWorker.pause(true);
      logger.info(
        { role, why },
        role === 'write'
          ? 'taking write chunks'
          : 'standing by: another process holds the writer lease',
      );
    },
  });
  await lease.start();
  // Closed before the workers (the reverse of this order): the next process takes over at once.
  shutdown.register('writer lease', () => lease.stop());
  logger.info(
    {
      concurrency,
      rateLimit: config.platform.rateLimit,
      rateMode: config.platform.rateMode,
      jobsDir,
    },
    'workers running',
  );
  return {
    ctx,
    runQueue,
    writeQueue,
    alertQueue,
    runWorker,
    writeWorker,
    writerLease: lease,
    alertWorker,
    concurrency,
  };
}

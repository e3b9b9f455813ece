/**
 * The two BullMQ queues, their names, key prefix and job options, and the
 * "one active run per job definition" rule. Every bound the production guide
 * asks for is set here once: finished jobs are kept by age and count, the
 * events stream has a maximum length, and writes retry with backoff as the
 * durable outer retry layer (the in-process layer is src/platform/with-retry.ts;
 * stacking more would multiply the attempts). How long a write waits before
 * its next attempt is the retry policy's (`retry-policy` backoff strategy).
 */
import { randomBytes } from 'node:crypto';
import {
  Queue,
  type BackoffStrategy,
  type ConnectionOptions,
  type DefaultJobOptions,
  type KeepJobs,
  type QueueOptions,
  type WorkerOptions,
} from 'bullmq';
import type { RedisClient } from '../redis/connection.js';
import { callScript } from '../redis/scripts.js';
import { RETRY_DEFAULTS } from '../config.js';
import { DEFAULT_PREFIX } from '../defaults.js';
import { jitterOf, writeRetryDelay, type RetrySettings } from '../platform/retry-policy.js';

/** A queue whose job data is `D`, spelled out so generic callers type-check. */
export type TypedQueue<D> = Queue<D, unknown, string, D, unknown, string>;

export const QueueName = {
  runs: 'sync-runs',
  writes: 'platform-writes',
} as const;
export type QueueName = (typeof QueueName)[keyof typeof QueueName];

/** How long and how many finished jobs are kept (seconds, count). */
export const RETENTION = {
  runs: {
    completed: { age: 30 * 24 * 3600, count: 1_000 },
    failed: { age: 30 * 24 * 3600, count: 1_000 },
  },
  writes: {
    completed: { age: 3_600, count: 1_000 },
    failed: { age: 7 * 24 * 3600, count: 50_000 },
  },
} satisfies Record<'runs' | 'writes', { completed: KeepJobs; failed: KeepJobs }>;

/** Approximate maximum length of each queue's events stream. */
export const EVENTS_MAX_LEN = 2_000;

/** The write queue's backoff strategy: the retry policy's wait (`writeBackoff`). */
export const WRITE_BACKOFF = 'retry-policy';

/**
 * The wait before a write's next attempt, as the policy's `retry-later`
 * decision named it: BullMQ passes the attempt that failed (1-based), and the
 * jitter is drawn from the job id and that attempt, as the processor drew it.
 */
export function writeBackoff(retry: RetrySettings = RETRY_DEFAULTS): BackoffStrategy {
  return (attempt, _type, _err, job) =>
    writeRetryDelay(attempt, retry, jitterOf(`${job?.id ?? ''}:${attempt}`));
}

/** The run queue's bounds, keeping `keep` finished runs (CRM_SYNC_RUN_HISTORY) when given. */
export function runRetention(keep?: number): { completed: KeepJobs; failed: KeepJobs } {
  if (keep === undefined) return RETENTION.runs;
  return {
    completed: { ...RETENTION.runs.completed, count: keep },
    failed: { ...RETENTION.runs.failed, count: keep },
  };
}

export function runJobOptions(keep?: number): DefaultJobOptions {
  const retention = runRetention(keep);
  return {
    // A run resumes from its checkpoint through stalled-job recovery; a run
    // that throws has failed for a reason a blind retry would repeat.
    attempts: 1,
    removeOnComplete: retention.completed,
    removeOnFail: retention.failed,
  };
}

export function writeJobOptions(retry: RetrySettings = RETRY_DEFAULTS): DefaultJobOptions {
  return {
    attempts: retry.writeAttempts,
    backoff: { type: WRITE_BACKOFF },
    removeOnComplete: RETENTION.writes.completed,
    removeOnFail: RETENTION.writes.failed,
  };
}

export interface QueueSettings {
  /** An ioredis connection (shared: the caller closes it) or connection options. */
  connection: ConnectionOptions;
  prefix?: string;
  /** Finished run jobs kept (CRM_SYNC_RUN_HISTORY); default `RETENTION.runs`. */
  keepRuns?: number;
}

function queueOptions(settings: QueueSettings, defaultJobOptions: DefaultJobOptions): QueueOptions {
  return {
    connection: settings.connection,
    prefix: settings.prefix ?? DEFAULT_PREFIX,
    defaultJobOptions,
    streams: { events: { maxLen: EVENTS_MAX_LEN } },
  };
}

export function createRunQueue<D>(settings: QueueSettings): TypedQueue<D> {
  return new Queue<D, unknown, string, D, unknown, string>(
    QueueName.runs,
    queueOptions(settings, runJobOptions(settings.keepRuns)),
  );
}

export function createWriteQueue<D>(
  settings: QueueSettings & { retry?: RetrySettings },
): TypedQueue<D> {
  return new Queue<D, unknown, string, D, unknown, string>(
    QueueName.writes,
    queueOptions(settings, writeJobOptions(settings.retry)),
  );
}

/**
 * Worker options matching the queues: same prefix, the same bounds on
 * finished jobs (workers apply their own when a job has none), and stalled
 * jobs (a SIGKILLed worker) given back to the queue rather than failed. A
 * write worker carries the policy's backoff strategy (`retry`: the settings
 * its jobs were decided with; default RETRY_DEFAULTS).
 */
export function workerOptions(
  queue: QueueName,
  settings: QueueSettings & { concurrency?: number; retry?: RetrySettings },
): WorkerOptions {
  const retention = queue === QueueName.runs ? runRetention(settings.keepRuns) : RETENTION.writes;
  return {
    connection: settings.connection,
    prefix: settings.prefix ?? DEFAULT_PREFIX,
    concurrency: settings.concurrency ?? 1,
    removeOnComplete: retention.completed,
    removeOnFail: retention.failed,
    maxStalledCount: 5,
    ...(queue === QueueName.writes && {
      settings: { backoffStrategy: writeBackoff(settings.retry) },
    }),
  };
}

/** A run id: sortable by time, readable, and never a bare integer (BullMQ refuses those). */
export function newRunId(now: Date = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  return `run-${stamp}-${randomBytes(3).toString('hex')}`;
}

/** The deduplication id that makes a job definition's run unique while it is waiting or active. */
export function runDeduplicationId(jobName: string): string {
  return `run:${jobName}`;
}

export interface EnqueuedRun {
  runId: string;
  /** True when a run of this job was already waiting or active and is returned instead. */
  attached: boolean;
}

/**
 * Enqueues a run of a job definition, unless one is already waiting or active.
 *
 * BullMQ `deduplication` (no TTL) keeps its key until the job completes or
 * fails; an add that meets the key stores nothing and returns the existing
 * job's id in place of the one we asked for. So we ask for a fresh run id and
 * compare: a different id back means we attached to the run already going.
 */
export async function enqueueRun<D>(
  queue: TypedQueue<D>,
  jobName: string,
  data: D,
): Promise<EnqueuedRun> {
  const runId = newRunId();
  const job = await queue.add(jobName, data, {
    jobId: runId,
    deduplication: { id: runDeduplicationId(jobName) },
  });
  const id = job.id ?? runId;
  return { runId: id, attached: id !== runId };
}

/**
 * Frees a job definition's run slot held by `staleRunId`, a run whose record
 * has ended while its queue job has not returned yet (it sleeps in the
 * delayed set until a worker wakes it and sees the end). BullMQ drops the key
 * when that job finishes only if it still names it, so a run enqueued after
 * this is not disturbed.
 */
export async function releaseStaleRun<D>(
  queue: TypedQueue<D>,
  jobName: string,
  staleRunId: string,
): Promise<void> {
  // The Redis backend's client is the ioredis connection we gave the queue.
  const client = (await queue.backend.client) as unknown as RedisClient;
  // Deleted only while it still names the stale run (the compare-and-delete of
  // a lock): two callers releasing the same stale run never delete a new one's.
  await callScript(
    client,
    'release-lock',
    queue.toKey(`de:${runDeduplicationId(jobName)}`),
    staleRunId,
  );
}

/** The run of a job definition that is waiting or active now, if any. */
export async function activeRunId<D>(
  queue: TypedQueue<D>,
  jobName: string,
): Promise<string | null> {
  return queue.getDeduplicationJobId(runDeduplicationId(jobName));
}

/**
 * Removes from `queue` the jobs not started yet (waiting, or delayed for
 * their next attempt) whose ids `belongs` keeps; returns how many went. A
 * job a worker has taken meanwhile holds its lock and stays: it runs to its
 * end.
 */
export async function removeWaitingJobs<D>(
  queue: TypedQueue<D>,
  belongs: (jobId: string) => boolean,
): Promise<number> {
  const ids = await queue.getRanges(['wait', 'prioritized', 'delayed'], 0, -1);
  let removed = 0;
  for (const id of ids) {
    if (belongs(id) && (await queue.remove(id)) === 1) removed++;
  }
  return removed;
}

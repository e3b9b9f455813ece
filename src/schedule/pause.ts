/**
 * Paused schedules. A paused job keeps its schedule in its file, but its
 * slots start no run and raise no missed-slot alert until it is resumed.
 * The state is one Redis hash per job under the deployment's prefix, holding
 * who paused it and since when; nothing else (no secret) is stored there.
 * Resuming moves the job's last slot to the resume instant, so the slots
 * passed while paused are neither run nor reported as missed later.
 */
import type { RedisClient } from '../redis/connection.js';
import { callScript } from '../redis/scripts.js';
import { lastSlotKey, slotOf } from './slot.js';

/** Who paused a job and since when (ISO 8601, UTC). */
export interface PauseState {
  by: string;
  since: string;
}

/** The Redis key of a job's pause (the prefix carries the hash tag). */
export function pauseKey(prefix: string, jobName: string): string {
  return `${prefix}:schedule:paused:${jobName}`;
}

/** The job's pause, or null when its schedule runs. */
export async function pauseOf(
  redis: RedisClient,
  prefix: string,
  jobName: string,
): Promise<PauseState | null> {
  const h = await redis.hgetall(pauseKey(prefix, jobName));
  if (h.by === undefined || h.since === undefined) return null;
  return { by: h.by, since: h.since };
}

/**
 * Pauses a job's schedule. Pausing a paused job changes nothing: it stays
 * paused by whoever paused it first, since then.
 */
export async function pauseJob(
  redis: RedisClient,
  prefix: string,
  jobName: string,
  by: string,
  now: Date = new Date(),
): Promise<PauseState> {
  const key = pauseKey(prefix, jobName);
  await redis.multi().hsetnx(key, 'by', by).hsetnx(key, 'since', now.toISOString()).exec();
  const state = await pauseOf(redis, prefix, jobName);
  if (!state) throw new Error(`the pause of job ${jobName} was not stored`);
  return state;
}

/**
 * Resumes a job's schedule from its next slot after `now`; the slots passed
 * while it was paused are not run. True when it was paused (resuming a job
 * that is not paused changes nothing).
 */
export async function resumeJob(
  redis: RedisClient,
  prefix: string,
  jobName: string,
  now: Date = new Date(),
): Promise<boolean> {
  // lua/resume-job-2.lua: only a job that was paused has its last slot moved.
  const resumed = await callScript(
    redis,
    'resume-job',
    pauseKey(prefix, jobName),
    lastSlotKey(prefix, jobName),
    slotOf(now),
  );
  return resumed === 1;
}

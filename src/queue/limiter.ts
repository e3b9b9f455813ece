/**
 * The global write limit and what a 429 does to it.
 *
 * BullMQ's limiter counts job starts per window and lives in Redis, so every
 * worker replica on the queue shares it (`queue.setGlobalRateLimit`). It only
 * reaches its maximum when concurrency covers rate × latency, hence
 * `writeConcurrency`. A 429 pauses the whole queue for the server's wait
 * (`rateLimit(ms)`) and hands the job back with BullMQ's `RateLimitError`,
 * which BullMQ recognises by its message and does not count as an attempt;
 * so such retries are counted with `job.attemptsStarted`, and the retry
 * policy (src/platform/retry-policy.ts) says when they are too many.
 */
import { RateLimitError, UnrecoverableError, type Job, type Queue } from 'bullmq';
import { DEFAULT_LATENCY_HINT_MS } from '../defaults.js';
import { rateLimitDecision } from '../platform/retry-policy.js';

export interface GlobalRateLimit {
  /** Job starts allowed per `duration` ms. */
  max: number;
  duration: number;
}

/**
 * Requests per second as BullMQ's (max, duration) pair, whole numbers both:
 * 10 → 10 per 1000 ms; 2.5 → 3 per 1200 ms; 0.5 → 1 per 2000 ms.
 */
export function rateLimitWindow(rps: number): GlobalRateLimit {
  if (!Number.isFinite(rps) || rps <= 0) throw new RangeError(`rate must be positive, got ${rps}`);
  if (Number.isInteger(rps)) return { max: rps, duration: 1_000 };
  const max = Math.ceil(rps);
  return { max, duration: Math.round((max / rps) * 1_000) };
}

/** Sets the queue's limit in Redis, where every worker on the queue reads it. */
export async function applyGlobalRateLimit(queue: Queue, rps: number): Promise<GlobalRateLimit> {
  const window = rateLimitWindow(rps);
  await queue.setGlobalRateLimit(window.max, window.duration);
  return window;
}

/**
 * Concurrency that keeps the limiter busy: rate × latency jobs are in flight
 * at full speed; 1.5× headroom for latency spread, +2 for the slow tail.
 * An explicit `WRITE_CONCURRENCY` wins.
 */
export function writeConcurrency(opts: {
  rateLimit: number;
  latencyMs?: number;
  override?: number;
}): number {
  if (opts.override !== undefined) return Math.max(1, Math.floor(opts.override));
  const latency = opts.latencyMs ?? DEFAULT_LATENCY_HINT_MS;
  return Math.ceil(opts.rateLimit * (latency / 1_000) * 1.5) + 2;
}

/** Anything with BullMQ's `rateLimit(ms)`: a Queue (preferred) or a Worker. */
export interface RateLimitTarget {
  rateLimit(expireTimeMs: number): Promise<void>;
}

/** The endless-429 guard tripped: the job fails for good with the policy's reason. */
export class RateLimitRetriesExhaustedError extends UnrecoverableError {
  readonly code = 'queue.rate-limit-exhausted';
  readonly retryable = false;
  constructor(reason: string) {
    super(reason);
    // BullMQ recognises it as an UnrecoverableError by class (instanceof).
    this.name = 'RateLimitRetriesExhaustedError';
  }
}

/**
 * Starts of this job that neither completed nor failed: the rate-limited
 * ones (a stalled start counts too, which only makes the cap stricter).
 * The current start is not one of them yet.
 */
export function rateLimitedStarts(job: Pick<Job, 'attemptsStarted' | 'attemptsMade'>): number {
  return Math.max(0, job.attemptsStarted - job.attemptsMade - 1);
}

/**
 * Carries out a `pause-queue` decision inside a processor: pauses the whole
 * queue for `delayMs` and throws BullMQ's `RateLimitError` unchanged, so the
 * job goes back to waiting without using an attempt.
 */
export async function pauseQueue(target: RateLimitTarget, delayMs: number): Promise<never> {
  await target.rateLimit(Math.max(1, Math.ceil(delayMs)));
  throw new RateLimitError();
}

/**
 * Handles a 429 inside a processor that has only the Retry-After: asks the
 * policy, then pauses the queue (`pauseQueue`) or, after `maxRetries` such
 * retries of one job, throws `RateLimitRetriesExhaustedError` and the job fails.
 */
export async function applyRateLimited(
  target: RateLimitTarget,
  job: Pick<Job, 'attemptsStarted' | 'attemptsMade'>,
  retryAfterMs: number,
  maxRetries: number,
): Promise<never> {
  const d = rateLimitDecision(
    retryAfterMs,
    { operation: 'update', rateLimited: rateLimitedStarts(job) },
    { rateLimitMaxRetries: maxRetries, rateLimitWaitMs: retryAfterMs },
  );
  if (d.action === 'give-up') throw new RateLimitRetriesExhaustedError(d.reason);
  return pauseQueue(target, d.delayMs);
}

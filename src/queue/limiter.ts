/**
 * What the write queue keeps of rate limiting now that the pacer
 * (src/queue/pacer.ts) paces every platform request: how many writes a
 * worker keeps in flight so that the pacer's rate can be reached, and the
 * removal of the BullMQ job-start limit an earlier release set on the queue
 * (it lives in Redis and would go on holding job starts to its old rate).
 */
import type { Queue } from 'bullmq';
import { DEFAULT_LATENCY_HINT_MS } from '../defaults.js';

/**
 * Concurrency that keeps the pacer busy: rate × latency requests are in
 * flight at full speed; 1.5× headroom for latency spread, +2 for the slow
 * tail. `rateLimit` is the most the rate can be (PLATFORM_RATE_LIMIT, or
 * PLATFORM_RATE_LIMIT_MAX with `auto`). An explicit `WRITE_CONCURRENCY` wins.
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

/** Removes a job-start limit left on the queue by an earlier release; true if there was one. */
export async function clearGlobalRateLimit(
  queue: Pick<Queue, 'removeGlobalRateLimit'>,
): Promise<boolean> {
  return (await queue.removeGlobalRateLimit()) > 0;
}

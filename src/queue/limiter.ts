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
 * What a write holds its slot for besides the platform's latency: its claim
 * and its settle (each waits up to 5 ms for others to share its script
 * call, then a round trip to Redis), the pacer's booking and the worker's
 * event loop between them.
 */
export const WRITE_OVERHEAD_MS = 25;

/**
 * Concurrency that keeps the pacer busy: rate × (latency + WRITE_OVERHEAD_MS)
 * writes hold a slot at full speed; 2× headroom for the spread of both
 * (a busy worker's event loop stretches every step), +2 for the slow tail.
 * A slot short at a turn's time is a turn not taken: the platform's window
 * sees the gap, and the rate is lost. `rateLimit` is the most the rate can
 * be (PLATFORM_RATE_LIMIT, or PLATFORM_RATE_LIMIT_MAX with `auto`). An
 * explicit `WRITE_CONCURRENCY` wins.
 */
export function writeConcurrency(opts: {
  rateLimit: number;
  latencyMs?: number;
  override?: number;
}): number {
  if (opts.override !== undefined) return Math.max(1, Math.floor(opts.override));
  const latency = opts.latencyMs ?? DEFAULT_LATENCY_HINT_MS;
  return Math.ceil(opts.rateLimit * ((latency + WRITE_OVERHEAD_MS) / 1_000) * 2) + 2;
}

/** Removes a job-start limit left on the queue by an earlier release; true if there was one. */
export async function clearGlobalRateLimit(
  queue: Pick<Queue, 'removeGlobalRateLimit'>,
): Promise<boolean> {
  return (await queue.removeGlobalRateLimit()) > 0;
}

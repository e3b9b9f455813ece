/**
 * What the write queue keeps of rate limiting now that the pacer
 * (src/queue/pacer.ts) paces every platform request: how many writes a
 * worker keeps in flight so that the pacer's rate can be reached, how many
 * writes a chunk job holds and how many chunk jobs a worker takes at once,
 * and the removal of the BullMQ job-start limit an earlier release set on
 * the queue (it lives in Redis and would go on holding job starts to its
 * old rate).
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

/**
 * How long a chunk job's writes last at the platform's limit. A worker keeps
 * each chunk it took until the chunk's last write has ended, so a run that
 * starts meanwhile (its first chunk next in the queue, src/queue/fair-share.ts)
 * waits for one of them to end before its first write: chunks of 50 writes
 * at a limit of 20/s would hold it 2.5 s or more a chunk ahead of it. A
 * quarter second of writes a chunk keeps it under a second at 20/s
 * (`BENCH_FAIRNESS_RATE=20 npm run bench -- fairness`; a chunk has one
 * write at least, so below 4/s a chunk lasts longer). From 200/s up a
 * chunk has its most lines (the engine's `writeChunk`, 50): BullMQ's
 * bookkeeping, about 40 Redis commands a chunk, stays once per 50 writes
 * where the rate makes it count.
 */
export const CHUNK_SPAN_MS = 250;

/** Lines of a chunk job at a limit of `rate` requests/s: CHUNK_SPAN_MS of writes, from 1 to `most`. */
export function chunkSize(rate: number, most: number): number {
  if (!(rate > 0) || rate === Infinity) return most;
  return Math.min(most, Math.max(1, Math.ceil((rate * CHUNK_SPAN_MS) / 1_000)));
}

/**
 * Chunk jobs a worker holds at once: enough to fill its write slots with
 * chunks of `most` lines (a high limit), and enough chunks of CHUNK_SPAN_MS
 * for the writes in flight at any lower one, rate × (latency +
 * WRITE_OVERHEAD_MS) with writeConcurrency's 2× headroom; never more than
 * the slots; and one more to start while another ends.
 */
export function chunkJobs(opts: { concurrency: number; most: number; latencyMs?: number }): number {
  const latency = opts.latencyMs ?? DEFAULT_LATENCY_HINT_MS;
  const full = Math.ceil(opts.concurrency / opts.most);
  const short = Math.ceil((2 * (latency + WRITE_OVERHEAD_MS)) / CHUNK_SPAN_MS);
  return Math.min(opts.concurrency, Math.max(full, short)) + 1;
}

/** Removes a job-start limit left on the queue by an earlier release; true if there was one. */
export async function clearGlobalRateLimit(
  queue: Pick<Queue, 'removeGlobalRateLimit'>,
): Promise<boolean> {
  return (await queue.removeGlobalRateLimit()) > 0;
}

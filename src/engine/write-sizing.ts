/**
 * How a run's writes are cut and how many it keeps waiting in the write
 * queue, from the platform's limit as the workers know it now (the pacer's
 * shared state): a run takes both when it starts to write, and again each
 * time it goes on enqueueing after its waiting writes held it.
 */
import { chunkSize } from '../queue/limiter.js';
import type { KnownLimit } from '../queue/pacer.js';
import type { EngineContext, EngineSettings } from './context.js';

/** Planned writes the enqueuer reads a page at a time (whole plan chunks: 512 at most). */
export const ENQUEUE_PAGE = 500;

/** The platform's limit as the workers know it now; an engine without a pacer takes `settings.rateLimit` as known. */
export async function limitNow(ctx: EngineContext): Promise<KnownLimit> {
  return (await ctx.platformLimit?.()) ?? { perSecond: ctx.settings.rateLimit, known: true };
}

/** Lines of a run's chunk jobs at `limit`: a quarter second of writes (src/queue/limiter.ts), `writeChunk` at most. */
export function chunkLines(
  settings: Pick<EngineSettings, 'writeChunk'>,
  limit: KnownLimit,
): number {
  return chunkSize(limit.perSecond, settings.writeChunk);
}

/**
 * Writes a run keeps waiting before it sleeps: `maxWaitingWrites`, or,
 * while `auto` has learned no limit, what the most it may go to
 * (PLATFORM_RATE_LIMIT_MAX) sends in two polls, a page at least. A first
 * sync then cuts its chunks again by the limit learned (its chunks made at
 * the most are long at a low limit) after a page or two of writes, not
 * after thousands; two polls of writes keep the queue fed meanwhile.
 */
export function waitingBound(
  settings: Pick<EngineSettings, 'maxWaitingWrites' | 'pollMs'>,
  limit: KnownLimit,
): number {
  if (limit.known) return settings.maxWaitingWrites;
  const fed = Math.ceil((limit.perSecond * 2 * settings.pollMs) / 1_000);
  return Math.min(settings.maxWaitingWrites, Math.max(ENQUEUE_PAGE, fed));
}

/**
 * Learning what the platform holds: list every record of an entity (all
 * pages, at no more than the configured rate) into the state store's index.
 * The API has no filter, so listing is the only way to find a record we did
 * not create, or to tell whether a create with an unknown outcome landed.
 */
import { withRetry } from '../platform/with-retry.js';
import { decide } from '../platform/retry-policy.js';
import { sleep } from '../sleep.js';
import type { Entity } from '../sync/identity.js';
import type { IndexInfo, PlatformRecord } from '../state/platform-index.js';
import type { EngineContext } from './context.js';

/** Lists the entity into a new index generation and swaps it in. */
export async function refreshIndex(
  ctx: EngineContext,
  entity: Entity,
  signal?: AbortSignal,
): Promise<IndexInfo> {
  const started = Date.now();
  const info = await ctx.store.index.replace(entity, platformPages(ctx, entity, signal));
  ctx.logger.info(
    { entity, records: info.count, ambiguous: info.ambiguous, ms: Date.now() - started },
    'platform index refreshed',
  );
  return info;
}

/** What listing needs: the client (paced), the rate and retry settings, a logger. */
export type ListingContext = Pick<EngineContext, 'client' | 'settings' | 'logger'>;

/**
 * The listing in pages of records, paced to the platform rate. Each page's
 * faults go as the retry policy says: transient ones are retried in-process
 * (a GET is idempotent); a 429 pauses the write queue too (every worker backs
 * off) and the listing waits it out; anything else goes up to the caller.
 */
export async function* platformPages(
  ctx: ListingContext,
  entity: Entity,
  signal?: AbortSignal,
): AsyncGenerator<PlatformRecord[]> {
  const minGapMs = 1000 / ctx.settings.rateLimit;
  let last = 0;
  const pace = async (): Promise<void> => {
    const wait = last + minGapMs - Date.now();
    if (wait > 0) await sleep(wait);
    last = Date.now();
  };
  const opts = signal ? { signal } : {};
  // One page's GET, paced, its transient faults retried and its 429s waited out.
  const eachPage = async <R>(get: () => Promise<R>): Promise<R> => {
    await pace();
    return getWithRateLimit(ctx, () =>
      withRetry(get, { operation: 'list', settings: ctx.settings.retry, ...opts }),
    );
  };
  if (entity === 'companies') {
    let url: string | undefined;
    for (;;) {
      const page = await eachPage(() => ctx.client.companiesPage(url, opts));
      yield page.results as PlatformRecord[];
      if (!page.next) return;
      url = page.next;
    }
  }
  // Members: the API does not say whether GET /members is a page, an array or
  // one record; the client's iterator takes all three, each page's GET going
  // through the same retry, pacing and 429 handling. Batch for the index.
  let batch: PlatformRecord[] = [];
  for await (const m of ctx.client.members({ ...opts, eachPage })) {
    batch.push(m as PlatformRecord);
    if (batch.length >= 500) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

/**
 * A page's GET whose in-process retries are done: a 429 is waited out, up to
 * the policy's cap (the client's pacer has noted its Retry-After and holds
 * every replica's requests, writes included, until then).
 */
async function getWithRateLimit<T>(ctx: ListingContext, fn: () => Promise<T>): Promise<T> {
  for (let rateLimited = 0; ; rateLimited++) {
    try {
      return await fn();
    } catch (err) {
      const d = decide(err, { operation: 'list', rateLimited }, ctx.settings.retry);
      if (d.action !== 'pause-queue') throw err;
      ctx.logger.warn({ retryAfterMs: d.delayMs }, 'platform rate limit while listing; waiting');
      await sleep(d.delayMs);
    }
  }
}

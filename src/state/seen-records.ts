/**
 * The platform ids a run's export maps to, for the orphan report
 * (`RecordStates.orphans` reads them): each id in the seen bucket of its
 * record bucket's number, a set Redis keeps as an intset. Run scratch: every
 * bucket carries the scratch TTL, given once per planning pass and process.
 */
import type { RedisClient } from '../redis/connection.js';
import { callScript } from '../redis/scripts.js';
import { BucketTtls } from './bucket-ttls.js';
import { redisCall } from './errors.js';
import type { KeyLayout } from './keys.js';
import { chunks } from './pipeline.js';

export class SeenRecords {
  /** Which seen buckets got their TTL. */
  private readonly seenTtls: BucketTtls;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeyLayout,
    private readonly ttlMs: number,
  ) {
    this.seenTtls = new BucketTtls(keys.buckets.records);
  }

  /** Notes platform ids the run's export maps to: one script a batch of 5,000. */
  async mark(runId: string, platformIds: readonly number[]): Promise<void> {
    if (platformIds.length === 0) return;
    const count = this.keys.buckets.records;
    for (const part of chunks(platformIds, 5000)) {
      const buckets = part.map((id) => this.keys.recBucketOf(id));
      const expire = this.seenTtls.flags(runId, buckets);
      try {
        await redisCall('noting seen records', () =>
          callScript(
            this.redis,
            'mark-seen',
            this.keys.seenBucket(runId, buckets[0]!),
            String(this.ttlMs),
            this.keys.seenBucketPrefix(runId),
            String(count),
            expire,
            ...part.map(String),
          ),
        );
      } catch (err) {
        this.seenTtls.failed(buckets);
        throw err;
      }
      this.seenTtls.sent(buckets);
    }
  }
}

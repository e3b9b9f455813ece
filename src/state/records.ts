/**
 * Record state per entity: identity key → platform id, platform id → state
 * of the last confirmed write (content hash, when, which run), and pending
 * creates (outcome unknown). Every operation works on a batch in a fixed,
 * small number of round trips, never one per row.
 */
import type { RedisClient } from '../queue/connection.js';
import type { PendingCreate } from '../sync/action.js';
import type { Entity } from '../sync/identity.js';
import type { Known } from '../sync/plan.js';
import { redisCall } from './errors.js';
import type { KeyLayout } from './keys.js';
import { packPending, packRecord, parsePending, platformIdOf, unpackRecord } from './packing.js';
import { chunks, execAll, hsets } from './pipeline.js';
import type { Numbering } from './numbering.js';
import { lookupRecords, type LookupOptions } from './record-lookup.js';

/** A confirmed write (or an adoption) to record. */
export interface CommitEntry {
  /** Every identity key of the record: each is mapped to the platform id. */
  keys: readonly string[];
  platformId: number;
  /** Content hash of the body that was written (or adopted). */
  hash: string;
  runId: string;
  /** The job of that run: it becomes the record's writer (see src/sync/match.ts). */
  job: string;
  /** When it was confirmed (ms); defaults to now. */
  at?: number;
}

/** Whether an entity has been synced before, and how much. */
export interface StateInfo {
  /** Records with a confirmed write. */
  records: number;
  firstCommitAt: number;
}

/** A record in state that the run did not see. */
export interface Orphan {
  platformId: number;
  syncedAt: number;
  /** The run that last wrote it (undefined if that run is unknown). */
  lastRunId: string | undefined;
}

/** Pending create of one identity key. */
export interface PendingEntry extends PendingCreate {
  key: string;
}

// KEYS[1]: pending hash; KEYS[2..]: the identity-map bucket of each key. ARGV[1]: the
// pending value; ARGV[2..]: the keys, in the order of their buckets.
const CLAIM_CREATE = `
for i = 2, #ARGV do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 1 then return 'pending' end
  if redis.call('HEXISTS', KEYS[i], ARGV[i]) == 1 then return 'exists' end
end
for i = 2, #ARGV do redis.call('HSET', KEYS[1], ARGV[i], ARGV[1]) end
return 'claimed'
`;

export class RecordStates {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeyLayout,
    private readonly runNumbers: Numbering,
    private readonly jobNumbers: Numbering,
    private readonly now: () => number,
  ) {}

  /** What is known of each record (see `lookupRecords` in record-lookup.ts). */
  lookup(
    entity: Entity,
    records: readonly { keys: readonly string[] }[],
    opts: LookupOptions = {},
  ): Promise<Known[]> {
    const { redis, keys, jobNumbers } = this;
    return lookupRecords({ redis, keys, jobNumbers }, entity, records, opts);
  }

  /**
   * Records confirmed writes: every identity key → platform id, the record's
   * hash, time, run and job; clears pending creates of those keys. Atomic per chunk
   * of 1,000 entries (MULTI), one round trip each.
   */
  async commit(entity: Entity, entries: readonly CommitEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const k = this.keys;
    const runNumbers = new Map<string, number>();
    for (const runId of new Set(entries.map((e) => e.runId))) {
      runNumbers.set(runId, await this.runNumbers.numberOf(runId));
    }
    const jobNumbers = new Map<string, number>();
    for (const job of new Set(entries.map((e) => e.job))) {
      jobNumbers.set(job, await this.jobNumbers.numberOf(job));
    }
    const now = this.now();
    let added = 0;
    for (const part of chunks(entries, 1000)) {
      const ids: [string, string, string][] = [];
      const recs: [string, string, string][] = [];
      const pendingKeys: string[] = [];
      for (const e of part) {
        for (const key of e.keys) {
          ids.push([k.ids(entity, k.idBucketOf(key)), key, String(e.platformId)]);
          pendingKeys.push(key);
        }
        const value = packRecord({
          hash: e.hash,
          syncedAt: e.at ?? now,
          runNumber: runNumbers.get(e.runId)!,
          jobNumber: jobNumbers.get(e.job)!,
        });
        recs.push([k.recs(entity, k.recBucketOf(e.platformId)), String(e.platformId), value]);
      }
      const tx = this.redis.multi();
      hsets(tx, ids);
      hsets(tx, recs);
      if (pendingKeys.length > 0) tx.hdel(k.pending(entity), ...pendingKeys);
      tx.hsetnx(k.entityInfo(entity), 'firstCommitAt', String(now));
      const out = await execAll(tx, 'recording confirmed writes');
      added += Number(out[1]);
    }
    if (added > 0) {
      await redisCall('counting synced records', () =>
        this.redis.hincrby(k.entityInfo(entity), 'records', added),
      );
    }
  }

  /** `null` before the first confirmed write of the entity: the next run is a first sync. */
  async info(entity: Entity): Promise<StateInfo | null> {
    const h: Record<string, string> = await redisCall('reading entity state', () =>
      this.redis.hgetall(this.keys.entityInfo(entity)),
    );
    if (!h.firstCommitAt) return null;
    return { records: Number(h.records ?? 0), firstCommitAt: Number(h.firstCommitAt) };
  }

  /** Marks a create whose outcome is unknown, under every identity key of the record. */
  async markPending(
    entity: Entity,
    keys: readonly string[],
    runId: string,
    since: number,
  ): Promise<void> {
    if (keys.length === 0) return;
    const value = packPending({ runId, since });
    await redisCall('marking a pending create', () =>
      this.redis.hset(this.keys.pending(entity), ...keys.flatMap((key) => [key, value])),
    );
  }

  /**
   * Claims the right to send a create, atomically: refused when any identity
   * key already maps to a platform record (`exists`: another attempt created
   * and recorded it) or has a pending create (`pending`: an attempt whose
   * outcome is unknown); otherwise marks every key pending (`claimed`). Two
   * workers holding the same job (one starved past its lock) can never both
   * send it.
   */
  async claimCreate(
    entity: Entity,
    keys: readonly string[],
    runId: string,
    since: number,
  ): Promise<'claimed' | 'pending' | 'exists'> {
    if (keys.length === 0) return 'claimed';
    const k = this.keys;
    const value = packPending({ runId, since });
    const reply: string = (await redisCall('claiming a create', () =>
      this.redis.eval(
        CLAIM_CREATE,
        keys.length + 1,
        k.pending(entity),
        ...keys.map((key) => k.ids(entity, k.idBucketOf(key))),
        value,
        ...keys,
      ),
    )) as string;
    return reply as 'claimed' | 'pending' | 'exists';
  }

  /** The pending create of any of `keys` (first in priority order), or null. */
  async pending(entity: Entity, keys: readonly string[]): Promise<PendingCreate | null> {
    if (keys.length === 0) return null;
    const values: (string | null)[] = await redisCall('reading pending creates', () =>
      this.redis.hmget(this.keys.pending(entity), ...keys),
    );
    for (const v of values) {
      const p = parsePending(v);
      if (p) return p;
    }
    return null;
  }

  async clearPending(entity: Entity, keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await redisCall('clearing pending creates', () =>
      this.redis.hdel(this.keys.pending(entity), ...keys),
    );
  }

  /** Every pending create of the entity, by identity key (pending creates are few). */
  async listPending(entity: Entity): Promise<PendingEntry[]> {
    const h: Record<string, string> = await redisCall('listing pending creates', () =>
      this.redis.hgetall(this.keys.pending(entity)),
    );
    return Object.entries(h).map(([key, v]) => ({ key, ...parsePending(v)! }));
  }

  /**
   * Records in state that run `runId` neither saw (`seenKey`, a set of
   * platform ids) nor wrote, in batches, reading 256 buckets per round trip.
   */
  async *orphans(entity: Entity, runId: string, seenKey: string): AsyncGenerator<Orphan[]> {
    const k = this.keys;
    // Read-only: a run that wrote nothing has no number, and then every record is a candidate.
    const thisRun = (await this.runNumbers.peek(runId)) ?? -1;
    const buckets = Array.from({ length: k.buckets.records }, (_, b) => b);
    for (const part of chunks(buckets, 256)) {
      const p = this.redis.pipeline();
      for (const b of part) p.hgetall(k.recs(entity, b));
      const out = (await execAll(p, 'listing orphans')) as Record<string, string>[];
      const candidates: { platformId: number; syncedAt: number; runNumber: number }[] = [];
      for (const h of out) {
        for (const [id, value] of Object.entries(h)) {
          const s = unpackRecord(value);
          if (s.runNumber !== thisRun) {
            candidates.push({
              platformId: platformIdOf(id)!,
              syncedAt: s.syncedAt,
              runNumber: s.runNumber,
            });
          }
        }
      }
      if (candidates.length === 0) continue;
      const seen: number[] = await redisCall('listing orphans', () =>
        this.redis.smismember(seenKey, ...candidates.map((c) => String(c.platformId))),
      );
      const orphans = candidates.filter((_, n) => seen[n] === 0);
      if (orphans.length === 0) continue;
      const runIds = await this.runNumbers.namesOf(orphans.map((o) => o.runNumber));
      yield orphans.map((o, n) => ({
        platformId: o.platformId,
        syncedAt: o.syncedAt,
        lastRunId: runIds[n],
      }));
    }
  }
}

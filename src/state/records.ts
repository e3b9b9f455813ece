/**
 * Record state per entity: identity key → platform id, platform id → state
 * of the last confirmed write (content hash, when, which run), and pending
 * creates (outcome unknown). Every operation works on a batch in a fixed,
 * small number of round trips, never one per row.
 */
import type { RedisClient } from '../redis/connection.js';
import { defineScripts } from '../redis/scripts.js';
import type { PendingCreate } from '../sync/action.js';
import type { Entity } from '../sync/identity.js';
import type { Known } from '../sync/plan.js';
import { redisCall } from './errors.js';
import type { KeyLayout } from './keys.js';
import type { LayoutCheck } from './layout.js';
import { packRecord, parsePending, platformIdOf, unpackRecord } from './packing.js';
import { chunks, execAll, hsets } from './pipeline.js';
import type { Numbering } from './numbering.js';
import { lookupRecords, type LookupOptions, type LookupRecord } from './record-lookup.js';

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

/** A record of the run's job in state that the run did not see. */
export interface Orphan {
  platformId: number;
  syncedAt: number;
}

/** A record of the run's job in state, to be checked against what the run saw. */
interface Candidate {
  /** Its record bucket, whose number its seen bucket has too. */
  bucket: number;
  platformId: number;
  syncedAt: number;
  runNumber?: number;
}

/** The job of a run, or undefined when the run is not known (any more). */
export type JobOfRun = (runId: string) => Promise<string | undefined>;

/** Pending create of one identity key. */
export interface PendingEntry extends PendingCreate {
  key: string;
}

/** What `RecordStates` builds on besides its connection and keys. */
export interface RecordStatesParts {
  runNumbers: Numbering;
  jobNumbers: Numbering;
  /** The clock (ms since the epoch). */
  now: () => number;
  /** Refuses state of a layout this release cannot use; a first write records the layout. */
  layout: LayoutCheck;
  /** The job of a run, for record state that names only its run (`orphans`). */
  jobOfRun: JobOfRun;
}

/**
 * Records the orphan report reads per round trip, about. It reads every
 * record of the entity (other jobs' too), and unpacks a round trip's
 * replies in one go: the worker's event loop, whose timers send the other
 * runs' paced writes, is held that long. At a million records (about 244 a
 * bucket) a round trip of 256 buckets held it up to 114 ms, longer than
 * the pacer's 3% margin absorbs at 200-1,000 requests/s; one of 32 (7,800
 * records) 25 ms, about 2,000 records 17 ms, the scan 5% longer (`npm run
 * bench -- orphans`).
 */
export const ORPHAN_SCAN_RECORDS = 2_000;
/**
 * Record buckets of the orphan report's first round trip. Each next one
 * reads as many buckets as hold about ORPHAN_SCAN_RECORDS at the records
 * per bucket read so far, and at most four times the last: a small
 * entity's scan takes a few round trips, not one per 32 of its 4,096
 * buckets.
 */
export const ORPHAN_SCAN_BUCKETS = 32;
const ORPHAN_SCAN_GROWTH = 4;

/** How the orphan report reads: `buckets` a round trip (the bench's sizes), or about `records`. */
export interface OrphanScan {
  buckets?: number;
  records?: number;
}

export class RecordStates {
  private readonly runNumbers: Numbering;
  private readonly jobNumbers: Numbering;
  private readonly now: () => number;
  private readonly layout: LayoutCheck;
  private readonly jobOfRun: JobOfRun;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeyLayout,
    parts: RecordStatesParts,
  ) {
    this.runNumbers = parts.runNumbers;
    this.jobNumbers = parts.jobNumbers;
    this.now = parts.now;
    this.layout = parts.layout;
    this.jobOfRun = parts.jobOfRun;
    // Its pipelines queue scripts (pipeline.ts, record-lookup.ts): defined before any is made.
    defineScripts(redis);
  }

  /**
   * What is known of each record (aligned with `records`; see `lookupRecords`
   * in record-lookup.ts). At most three round trips. Writes nothing, not even
   * the layout record: a dry run relies on it.
   */
  async lookup(
    entity: Entity,
    records: readonly LookupRecord[],
    opts: LookupOptions = {},
  ): Promise<Known[]> {
    await this.layout.assertRead();
    const { redis, keys, jobNumbers } = this;
    return lookupRecords({ redis, keys, jobNumbers }, entity, records, opts);
  }

  /**
   * Records confirmed writes: every identity key → platform id, the record's
   * hash, time, run and job; clears pending creates of those keys. Atomic per chunk
   * of 1,000 entries (MULTI), one round trip each. The first call under a prefix, even
   * with no entries, records the layout.
   */
  async commit(entity: Entity, entries: readonly CommitEntry[]): Promise<void> {
    await this.layout.check();
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
   * Records in state that `run` neither saw (its seen buckets, and the one
   * set of seen ids of a run an earlier release began) nor wrote and whose
   * last writer was a run of the same job, in batches, reading about
   * ORPHAN_SCAN_RECORDS records per round trip. The writer's job is the
   * record state's job number: unchanged rows are never committed again,
   * so the run number may name a run the history has forgotten. State
   * written before job numbers were kept names only its run: `jobOfRun`
   * answers for it (a run no longer known leaves that record out).
   * Meaningful for full-snapshot sources only. Writes nothing.
   * `scan` is for the orphans bench, which compares sizes, and tests.
   */
  async *orphans(
    entity: Entity,
    run: { id: string; job: string },
    scan: OrphanScan = {},
  ): AsyncGenerator<Orphan[]> {
    await this.layout.assertRead();
    const k = this.keys;
    const legacy = k.seen(run.id);
    const hasLegacy = (await redisCall('listing orphans', () => this.redis.exists(legacy))) === 1;
    const thisRun = (await this.runNumbers.peek(run.id)) ?? -1;
    // A job never numbered has written no record.
    const thisJob = (await this.jobNumbers.peek(run.job)) ?? -1;
    const jobOf = new Map<number, string | undefined>();
    const total = k.buckets.records;
    const perTrip = scan.records ?? ORPHAN_SCAN_RECORDS;
    let size = scan.buckets ?? ORPHAN_SCAN_BUCKETS;
    let records = 0;
    for (let from = 0; from < total; from += size) {
      if (from > 0 && scan.buckets === undefined) {
        const fits = records > 0 ? Math.floor((perTrip * from) / records) : Infinity;
        size = Math.max(1, Math.min(size * ORPHAN_SCAN_GROWTH, fits));
      }
      const part = Array.from({ length: Math.min(size, total - from) }, (_, i) => from + i);
      const p = this.redis.pipeline();
      for (const b of part) p.hgetall(k.recs(entity, b));
      const out = (await execAll(p, 'listing orphans')) as Record<string, string>[];
      const candidates: Candidate[] = [];
      for (const [n, h] of out.entries()) {
        const ids = Object.entries(h);
        records += ids.length;
        for (const [id, value] of ids) {
          const s = unpackRecord(value);
          if (s.runNumber === thisRun) continue;
          if (s.jobNumber !== undefined && s.jobNumber !== thisJob) continue;
          candidates.push({
            bucket: part[n]!,
            platformId: platformIdOf(id)!,
            syncedAt: s.syncedAt,
            ...(s.jobNumber === undefined && { runNumber: s.runNumber }),
          });
        }
      }
      if (candidates.length === 0) continue;
      const unseen = await this.unseen(run.id, candidates, hasLegacy);
      const older = [...new Set(unseen.flatMap((o) => o.runNumber ?? []))].filter(
        (n) => !jobOf.has(n),
      );
      const names = await this.runNumbers.namesOf(older);
      for (const [i, n] of older.entries()) {
        const name = names[i];
        jobOf.set(n, name === undefined ? undefined : await this.jobOfRun(name));
      }
      const orphans = unseen.filter(
        (o) => o.runNumber === undefined || jobOf.get(o.runNumber) === run.job,
      );
      if (orphans.length > 0)
        yield orphans.map((o) => ({ platformId: o.platformId, syncedAt: o.syncedAt }));
    }
  }

  /** The candidates the run did not see: in none of their seen buckets (nor the one set). */
  private async unseen(
    runId: string,
    candidates: readonly Candidate[],
    hasLegacy: boolean,
  ): Promise<Candidate[]> {
    const byBucket = new Map<number, number[]>();
    candidates.forEach((c, n) => {
      const at = byBucket.get(c.bucket);
      if (at) at.push(n);
      else byBucket.set(c.bucket, [n]);
    });
    const p = this.redis.pipeline();
    for (const [b, at] of byBucket)
      p.smismember(
        this.keys.seenBucket(runId, b),
        ...at.map((n) => String(candidates[n]!.platformId)),
      );
    if (hasLegacy)
      p.smismember(this.keys.seen(runId), ...candidates.map((c) => String(c.platformId)));
    const replies = (await execAll(p, 'listing orphans')) as number[][];
    const seen = new Uint8Array(candidates.length);
    [...byBucket.values()].forEach((at, i) => at.forEach((n, j) => (seen[n] = replies[i]![j]!)));
    if (hasLegacy) replies.at(-1)!.forEach((v, n) => (seen[n] = seen[n]! | v));
    return candidates.filter((_, n) => seen[n] === 0);
  }
}

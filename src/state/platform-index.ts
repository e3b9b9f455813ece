/**
 * The index of platform records learned from listing (GET /companies,
 * GET /members): identity key → platform id, and platform id → the
 * platform's values of its request fields. It is how a first sync adopts
 * records that already exist instead of duplicating them.
 *
 * A listing streams into a new generation (keys with a TTL while building);
 * only a complete listing is committed, by swapping the generation pointer in
 * one write. A half-done listing never replaces a good index. The previous
 * generation is left to expire after a grace period instead of being deleted
 * at once, so a lookup that read the old pointer a moment earlier still finds
 * its data.
 */
import type { RedisClient } from '../redis/connection.js';
import { defineScripts } from '../redis/scripts.js';
import { canonicalJson } from '../sync/canonical.js';
import { identityKeysOfPlatformRecord, type Entity } from '../sync/identity.js';
import { remoteValues } from '../sync/remote.js';
import { redisCall, StateError } from './errors.js';
import type { KeyLayout } from './keys.js';
import type { LayoutCheck } from './layout.js';
import { CHUNK, chunks, execAll, hclaims, hsets } from './pipeline.js';

/** A record as listed by the platform (a Company or a Member response). */
export interface PlatformRecord {
  id?: number | null;
  [field: string]: unknown;
}

/** The committed index of an entity. */
export interface IndexInfo {
  generation: number;
  /** When the listing that built it started (ms): it reflects every write confirmed before. */
  refreshedAt: number;
  /** Platform records indexed. */
  count: number;
  /** Identity keys carried by more than one platform record (the first listed wins). */
  ambiguous: number;
  /** Listed records with no id or no identity, which can never match. */
  unmatchable: number;
}

/** A listing in progress: pass it to `add` and `commit` (or `abort`). */
export interface IndexBuild {
  entity: Entity;
  generation: number;
  startedAt: number;
  count: number;
  ambiguous: number;
  unmatchable: number;
  /** The generation's bucket keys written so far: the others do not exist. */
  written: Set<string>;
}

export interface PlatformIndexOptions {
  /** TTL of a generation while it is being built (refreshed on every page). */
  buildTtlMs: number;
  /** How long a replaced generation stays readable. */
  graceMs: number;
  now: () => number;
  /** Refuses state of a layout this release cannot use; a first listing records the layout. */
  layout: LayoutCheck;
}

export function readIndexInfo(h: Record<string, string>): IndexInfo | null {
  const generation = Number(h.gen);
  if (!h.gen || !Number.isSafeInteger(generation)) return null;
  return {
    generation,
    refreshedAt: Number(h.refreshedAt),
    count: Number(h.count ?? 0),
    ambiguous: Number(h.ambiguous ?? 0),
    unmatchable: Number(h.unmatchable ?? 0),
  };
}

export class PlatformIndex {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeyLayout,
    private readonly opts: PlatformIndexOptions,
  ) {
    // Its pipelines queue Lua scripts (pipeline.ts): defined before any pipeline is made.
    defineScripts(redis);
  }

  /** The committed index (`refreshedAt`: when its listing started), or null if never listed. */
  async info(entity: Entity): Promise<IndexInfo | null> {
    const h = await redisCall('reading the platform index', () =>
      this.redis.hgetall(this.keys.index(entity)),
    );
    return readIndexInfo(h);
  }

  /** Starts a new generation (the layout checked, and recorded under a new prefix, first). */
  async begin(entity: Entity): Promise<IndexBuild> {
    await this.opts.layout.check();
    const startedAt = this.opts.now();
    const generation: number = await redisCall('starting a platform listing', () =>
      this.redis.hincrby(this.keys.index(entity), 'seq', 1),
    );
    return {
      entity,
      generation,
      startedAt,
      count: 0,
      ambiguous: 0,
      unmatchable: 0,
      written: new Set(),
    };
  }

  /** Adds one page of listed records to the generation being built (one round trip). */
  async add(build: IndexBuild, records: readonly PlatformRecord[]): Promise<void> {
    const { entity, generation } = build;
    const recs: [string, string, string][] = [];
    const ids: [string, string, string][] = [];
    for (const r of records) {
      const id = r.id;
      const keys = identityKeysOfPlatformRecord(entity, r);
      if (typeof id !== 'number' || !Number.isSafeInteger(id) || keys.length === 0) {
        build.unmatchable++;
        continue;
      }
      const pid = String(id);
      recs.push([
        this.keys.indexRecs(entity, generation, this.keys.recBucketOf(id)),
        pid,
        canonicalJson(remoteValues(entity, r)),
      ]);
      for (const k of keys)
        ids.push([this.keys.indexIds(entity, generation, this.keys.idBucketOf(k)), k, pid]);
    }
    if (recs.length === 0) return;
    const p = this.redis.pipeline();
    hsets(p, recs);
    // First listed wins; the answer tells a repeat of the same record (pages shift) from a second one.
    hclaims(p, ids);
    for (const key of new Set([...recs, ...ids].map(([key]) => key))) {
      p.pexpire(key, this.opts.buildTtlMs);
      build.written.add(key);
    }
    const [added, holders] = (await execAll(p, 'indexing listed platform records')) as [
      number,
      string[],
    ];
    build.count += added;
    ids.forEach(([, , pid], n) => {
      if (holders[n] !== pid) build.ambiguous++;
    });
  }

  /** Makes the generation the entity's index, atomically; the old one expires after the grace period. */
  async commit(build: IndexBuild): Promise<IndexInfo> {
    const { entity, generation } = build;
    // Only the buckets the listing wrote exist: a small platform's index is a few keys of 12,288.
    for (const part of chunks([...build.written], CHUNK)) {
      const p = this.redis.pipeline();
      for (const k of part) p.persist(k);
      await execAll(p, 'keeping the new platform index');
    }
    const before = await this.info(entity);
    if (before && before.generation > generation) {
      // A listing that started later has already been committed: ours is older.
      await this.abort(build);
      throw new StateError(
        'state.index-build',
        `platform index of ${entity}: generation ${generation} is older than the committed ${before.generation}`,
        false,
      );
    }
    const info: IndexInfo = {
      generation,
      refreshedAt: build.startedAt,
      count: build.count,
      ambiguous: build.ambiguous,
      unmatchable: build.unmatchable,
    };
    const p = this.redis.multi();
    p.hset(this.keys.index(entity), {
      gen: generation,
      refreshedAt: info.refreshedAt,
      count: info.count,
      ambiguous: info.ambiguous,
      unmatchable: info.unmatchable,
    });
    await execAll(p, 'swapping the platform index');
    if (before) await this.expire(entity, before.generation, this.opts.graceMs);
    return info;
  }

  /** Drops a generation that will not be committed. */
  async abort(build: IndexBuild): Promise<void> {
    await this.expire(build.entity, build.generation, 0);
  }

  /** Lists the platform into a new generation and commits it; a failed listing leaves the old index. */
  async replace(
    entity: Entity,
    pages: AsyncIterable<readonly PlatformRecord[]>,
  ): Promise<IndexInfo> {
    const build = await this.begin(entity);
    try {
      for await (const page of pages) await this.add(build, page);
    } catch (err) {
      await this.abort(build).catch(() => undefined);
      throw err;
    }
    return this.commit(build);
  }

  private async expire(entity: Entity, generation: number, ms: number): Promise<void> {
    const all = [...this.keys.indexGeneration(entity, generation)];
    for (const part of chunks(all, CHUNK)) {
      const p = this.redis.pipeline();
      for (const k of part) {
        if (ms > 0) p.pexpire(k, ms);
        else p.unlink(k);
      }
      await execAll(p, 'dropping an old platform index');
    }
  }
}

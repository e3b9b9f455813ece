/**
 * Planning data of a run in progress, kept in Redis so a killed run resumes
 * without re-reading its export: which row claimed each identity (to find
 * duplicates across the whole export), the rows found in conflict, the
 * planned writes, and the platform ids the run saw (for orphans). Every key
 * carries a TTL (refreshed on each write): scratch outlives a crash, not the
 * week.
 */
import type { Redis } from 'ioredis';
import type { WriteAction } from '../sync/action.js';
import { parseStored, redisError, StateError } from './errors.js';
import type { KeyLayout } from './keys.js';
import { chunks, execAll, hclaims } from './pipeline.js';

/** A row of the export with its identity keys, as claimed. */
export interface Claim {
  keys: readonly string[];
  line: number;
}

/** A row that shares an identity with other rows of the same export. */
export interface ClaimConflict {
  line: number;
  /** The shared identity key (the first in priority order). */
  identity: string;
  /** The other rows carrying it, as far as known. */
  otherLines: number[];
  /**
   * The row was claimed by an earlier call: its planned write (if any) must
   * be dropped and it must be reported now, once.
   */
  earlier: boolean;
}

interface ConflictInfo {
  identity: string;
  otherLines: number[];
}

export class RunScratch {
  constructor(
    private readonly redis: Redis,
    private readonly keys: KeyLayout,
    private readonly ttlMs: number,
  ) {}

  /**
   * Claims each row's identities for the run. A key claimed by another line
   * makes both rows conflicts. Returns every row of this batch that is in
   * conflict (also when it was found in conflict before: a re-read export
   * gives the same answer), and every earlier row that has just become one.
   * At most three round trips per batch.
   */
  async claimIdentities(runId: string, entries: readonly Claim[]): Promise<ClaimConflict[]> {
    if (entries.length === 0) return [];
    const claims = this.keys.claims(runId);
    const conflicted = this.keys.conflicted(runId);

    // 1: claim every key (first claimer wins) and read who holds it; known conflicts of this batch.
    const p1 = this.redis.pipeline();
    hclaims(
      p1,
      entries.flatMap((e) => e.keys.map((key) => [claims, key, String(e.line)] as const)),
    );
    p1.hmget(conflicted, ...entries.map((e) => String(e.line)));
    p1.pexpire(claims, this.ttlMs);
    const [holders, known] = (await execAll(p1, 'claiming identities')) as [
      string[],
      (string | null)[],
    ];

    const found = new Map<number, ConflictInfo>();
    const note = (line: number, identity: string, other: number): void => {
      const info = found.get(line) ?? { identity, otherLines: [] };
      if (!info.otherLines.includes(other)) info.otherLines.push(other);
      found.set(line, info);
    };
    let i = 0;
    for (const e of entries) {
      for (const key of e.keys) {
        const holder = Number(holders[i++]);
        if (holder !== e.line) {
          note(e.line, key, holder);
          note(holder, key, e.line);
        }
      }
    }
    const before = new Map<number, ConflictInfo>();
    const batchLines = new Set(entries.map((e) => e.line));
    known.forEach((v, n) => {
      if (v) before.set(entries[n]!.line, parseInfo(v));
    });

    // 2: what was known of the earlier rows involved.
    const earlierLines = [...found.keys()].filter((l) => !batchLines.has(l));
    if (earlierLines.length > 0) {
      let values: (string | null)[];
      try {
        values = await this.redis.hmget(conflicted, ...earlierLines.map(String));
      } catch (err) {
        throw redisError('claiming identities', err);
      }
      values.forEach((v, n) => {
        if (v) before.set(earlierLines[n]!, parseInfo(v));
      });
    }

    // 3: store the merged conflicts.
    const result: ClaimConflict[] = [];
    const merged = new Map<number, ConflictInfo>();
    for (const [line, info] of found) {
      const old = before.get(line);
      const otherLines = [...new Set([...(old?.otherLines ?? []), ...info.otherLines])];
      merged.set(line, { identity: old?.identity ?? info.identity, otherLines });
    }
    if (merged.size > 0) {
      const p3 = this.redis.multi();
      p3.hset(
        conflicted,
        ...[...merged].flatMap(([line, info]) => [String(line), JSON.stringify(info)]),
      );
      p3.pexpire(conflicted, this.ttlMs);
      await execAll(p3, 'recording conflicts');
    }
    for (const e of entries) {
      const info = merged.get(e.line) ?? before.get(e.line);
      if (info) result.push({ line: e.line, ...info, earlier: false });
    }
    for (const line of earlierLines) {
      if (!before.has(line)) result.push({ line, ...merged.get(line)!, earlier: true });
    }
    return result;
  }

  /** The line that claimed each key in this run (null where none did), aligned with `keys`. */
  async claimHolders(runId: string, keys: readonly string[]): Promise<(number | null)[]> {
    if (keys.length === 0) return [];
    let values: (string | null)[];
    try {
      values = await this.redis.hmget(this.keys.claims(runId), ...keys);
    } catch (err) {
      throw redisError('reading identity claims', err);
    }
    return values.map((v) => (v === null ? null : Number(v)));
  }

  /** Stores write actions of the run, keyed by line (saving a line again replaces it). */
  async savePlannedWrites(runId: string, actions: readonly WriteAction[]): Promise<void> {
    const key = this.keys.plan(runId);
    for (const part of chunks(actions, 500)) {
      const p = this.redis.pipeline();
      p.hset(key, ...part.flatMap((a) => [String(a.line), JSON.stringify(a)]));
      p.pexpire(key, this.ttlMs);
      await execAll(p, 'saving planned writes');
    }
  }

  /**
   * A page of planned writes. Start with cursor `'0'`; the scan is over when
   * the returned cursor is `'0'` again. As with any Redis SCAN, a write can be
   * returned twice: the consumer must be idempotent per line (it is: one
   * queue job per run and line).
   */
  async scanPlannedWrites(
    runId: string,
    cursor = '0',
    count = 500,
  ): Promise<{ cursor: string; writes: WriteAction[] }> {
    let reply: [string, string[]];
    try {
      reply = await this.redis.hscan(this.keys.plan(runId), cursor, 'COUNT', count);
    } catch (err) {
      throw redisError('reading planned writes', err);
    }
    const [next, flat] = reply;
    const writes: WriteAction[] = [];
    for (let n = 1; n < flat.length; n += 2)
      writes.push(parseStored(flat[n]!, 'planned write') as WriteAction);
    return { cursor: next, writes };
  }

  /** The planned writes of these lines (lines without one are left out), in the order given. */
  async plannedWritesOf(runId: string, lines: readonly number[]): Promise<WriteAction[]> {
    if (lines.length === 0) return [];
    let values: (string | null)[];
    try {
      values = await this.redis.hmget(this.keys.plan(runId), ...lines.map(String));
    } catch (err) {
      throw redisError('reading planned writes', err);
    }
    return values.flatMap((v) =>
      v === null ? [] : [parseStored(v, 'planned write') as WriteAction],
    );
  }

  /** Removes planned writes of rows that turned out to be conflicts. */
  async dropPlannedWrites(runId: string, lines: readonly number[]): Promise<void> {
    if (lines.length === 0) return;
    try {
      await this.redis.hdel(this.keys.plan(runId), ...lines.map(String));
    } catch (err) {
      throw redisError('dropping planned writes', err);
    }
  }

  async countPlannedWrites(runId: string): Promise<number> {
    try {
      return await this.redis.hlen(this.keys.plan(runId));
    } catch (err) {
      throw redisError('counting planned writes', err);
    }
  }

  /** Notes platform ids the run's export maps to (for the orphan report). */
  async markSeen(runId: string, platformIds: readonly number[]): Promise<void> {
    if (platformIds.length === 0) return;
    const key = this.keys.seen(runId);
    for (const part of chunks(platformIds, 5000)) {
      const p = this.redis.pipeline();
      p.sadd(key, ...part.map(String));
      p.pexpire(key, this.ttlMs);
      await execAll(p, 'noting seen records');
    }
  }

  /** Deletes every scratch key of the run (at its end). */
  async clear(runId: string): Promise<void> {
    try {
      await this.redis.unlink(...this.keys.scratch(runId));
    } catch (err) {
      throw redisError('clearing run scratch', err);
    }
  }
}

function parseInfo(value: string): ConflictInfo {
  const v = parseStored(value, 'conflict record') as Partial<ConflictInfo>;
  if (typeof v.identity !== 'string' || !Array.isArray(v.otherLines)) {
    throw new StateError('state.corrupt', `conflict record ${value} is not readable`, false);
  }
  return { identity: v.identity, otherLines: v.otherLines };
}

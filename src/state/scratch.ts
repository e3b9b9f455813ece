/**
 * Planning data of a run in progress, kept in Redis so a killed run resumes
 * without re-reading its export: which row claimed each identity (to find
 * duplicates across the whole export), the rows found in conflict, the
 * planned writes, and the platform ids the run saw (for orphans). Every key
 * carries a TTL (refreshed on each write): scratch outlives a crash, not the
 * week.
 */
import type { RedisClient } from '../queue/connection.js';
import type { WriteAction } from '../sync/action.js';
import {
  decideClaims,
  type Claim,
  type ClaimConflict,
  type ConflictRecord,
} from '../sync/claims.js';
import { parseStored, redisCall, StateError } from './errors.js';
import type { KeyLayout } from './keys.js';
import { chunks, execAll } from './pipeline.js';

// KEYS: claims hash, conflicted hash. ARGV: TTL of the claims (ms), then per row: its line,
// its number of keys, its keys. Each key goes to the first line that claims it (HSETNX).
// Replies {holders, lines, records}: each key's holder after the claim, in order, and the
// conflict record (nil for none) of every line involved: the rows' and their keys' holders'.
const CLAIM = `
local holders, lines, records, seen = {}, {}, {}, {}
local function involve(line)
  if seen[line] then return end
  seen[line] = true
  lines[#lines + 1] = line
  records[#records + 1] = redis.call('HGET', KEYS[2], line)
end
local i = 2
while i <= #ARGV do
  local line, n = ARGV[i], tonumber(ARGV[i + 1])
  involve(line)
  for j = i + 2, i + 1 + n do
    redis.call('HSETNX', KEYS[1], ARGV[j], line)
    local holder = redis.call('HGET', KEYS[1], ARGV[j])
    holders[#holders + 1] = holder
    involve(holder)
  end
  i = i + 2 + n
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return {holders, lines, records}
`;

export class RunScratch {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeyLayout,
    private readonly ttlMs: number,
  ) {}

  /**
   * Claims each row's identities for the run and decides its conflicts with
   * `decideClaims` (src/sync/claims.ts, the rules). One round trip claims the
   * keys (first claimer wins) and reads what the decision needs; a second
   * stores the conflict records, only when the batch found any.
   */
  async claimIdentities(runId: string, entries: readonly Claim[]): Promise<ClaimConflict[]> {
    if (entries.length === 0) return [];
    const conflicted = this.keys.conflicted(runId);
    const reply: [string[], string[], (string | null)[]] = (await redisCall(
      'claiming identities',
      () =>
        this.redis.eval(
          CLAIM,
          2,
          this.keys.claims(runId),
          conflicted,
          String(this.ttlMs),
          ...entries.flatMap((e) => [String(e.line), String(e.keys.length), ...e.keys]),
        ),
    )) as typeof reply;
    const [holderOf, lines, records] = reply;
    const holders = new Map<string, number>();
    let n = 0;
    for (const e of entries) for (const key of e.keys) holders.set(key, Number(holderOf[n++]));
    const conflicts = new Map<number, ConflictRecord>();
    lines.forEach((line, i) => {
      const record = records[i];
      if (record !== null && record !== undefined) conflicts.set(Number(line), parseInfo(record));
    });

    // The keys are claimed already: the decision's `claimed` is empty, its records are to keep.
    const decision = decideClaims({ holders, conflicts }, entries);
    if (decision.recorded.size > 0) {
      const tx = this.redis.multi();
      tx.hset(
        conflicted,
        ...[...decision.recorded].flatMap(([line, info]) => [String(line), JSON.stringify(info)]),
      );
      tx.pexpire(conflicted, this.ttlMs);
      await execAll(tx, 'recording conflicts');
    }
    return decision.conflicts;
  }

  /** The line that claimed each key in this run (null where none did), aligned with `keys`. */
  async claimHolders(runId: string, keys: readonly string[]): Promise<(number | null)[]> {
    if (keys.length === 0) return [];
    const values: (string | null)[] = await redisCall('reading identity claims', () =>
      this.redis.hmget(this.keys.claims(runId), ...keys),
    );
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
    const reply: [string, string[]] = await redisCall('reading planned writes', () =>
      this.redis.hscan(this.keys.plan(runId), cursor, 'COUNT', count),
    );
    const [next, flat] = reply;
    const writes: WriteAction[] = [];
    for (let n = 1; n < flat.length; n += 2)
      writes.push(parseStored(flat[n]!, 'planned write') as WriteAction);
    return { cursor: next, writes };
  }

  /** The planned writes of these lines (lines without one are left out), in the order given. */
  async plannedWritesOf(runId: string, lines: readonly number[]): Promise<WriteAction[]> {
    if (lines.length === 0) return [];
    const values: (string | null)[] = await redisCall('reading planned writes', () =>
      this.redis.hmget(this.keys.plan(runId), ...lines.map(String)),
    );
    return values.flatMap((v) =>
      v === null ? [] : [parseStored(v, 'planned write') as WriteAction],
    );
  }

  /** Removes planned writes of rows that turned out to be conflicts. */
  async dropPlannedWrites(runId: string, lines: readonly number[]): Promise<void> {
    if (lines.length === 0) return;
    await redisCall('dropping planned writes', () =>
      this.redis.hdel(this.keys.plan(runId), ...lines.map(String)),
    );
  }

  async countPlannedWrites(runId: string): Promise<number> {
    return redisCall('counting planned writes', () => this.redis.hlen(this.keys.plan(runId)));
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
    await redisCall('clearing run scratch', () => this.redis.unlink(...this.keys.scratch(runId)));
  }
}

function parseInfo(value: string): ConflictRecord {
  const v = parseStored(value, 'conflict record') as Partial<ConflictRecord>;
  if (typeof v.identity !== 'string' || !Array.isArray(v.otherLines)) {
    throw new StateError('state.corrupt', `conflict record ${value} is not readable`, false);
  }
  return { identity: v.identity, otherLines: v.otherLines };
}

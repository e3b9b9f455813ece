/**
 * Identity claims of a run whose job keeps one survivor of its duplicates
 * (a `duplicates` rule other than `none`): the same claim buckets as the
 * conflict claims (scratch.ts), each key's claim holding its holder's line,
 * whether it is sticky, its rank and its CRM record
 * (`<line>|<sticky>|<rank>|<record>`). One Lua script decides a batch by the
 * rules of `decideSurvivors` (src/sync/survivors.ts) and moves each key to
 * its winner; the rows that lost are kept in the run's `duplicates` hash
 * (line → its record and the key it lost on) until the export is planned,
 * then reported, each naming the row that holds that key at the end: the
 * survivor.
 */
import type { RedisClient } from '../redis/connection.js';
import type { Entrant, KeepRule, Loss } from '../sync/survivors.js';
import { claimNames } from './claim-digest.js';
import { parseStored, redisCall } from './errors.js';
import { LUA_BUCKET_PATTERN, type KeyLayout } from './keys.js';
import { execAll } from './pipeline.js';
import { claimLayout, type BucketTtls } from './scratch.js';

// KEYS: the run's claims marker. ARGV: TTL of the claims (ms); one character per key, '1' where
// its bucket is to get the TTL; a claim bucket's name without its number; the batch's layout
// (as CLAIM's in scratch.ts: per row its line, its number of keys, and per key its bucket and
// claim field); the rule (`newest`, `oldest`, `first`, `last`); then per row the rest of its
// claim value, `<sticky>|<rank>|<record>`. A key nobody holds is claimed at once (HSETNX, the
// usual row), and given back if the row loses on another key. Replies {lost, unset}: per row
// that lost, five values (its line, its record, the winner's line and record, and the position,
// 0-based over all keys of the batch, of the key they share); and the buckets flagged for the
// TTL that no winner wrote (they did not get it); 1 when the marker was missing (a new
// planning pass: every bucket touched then is flagged, and the caller forgets which buckets it
// had given the TTL).
const CONTEND = `${LUA_BUCKET_PATTERN}local marker = redis.call('GET', KEYS[1])
local fresh = marker == false or marker == 'released'
if fresh then redis.call('SET', KEYS[1], '1', 'PX', ARGV[1]) end
local ttl, expire, layout, keep = ARGV[1], ARGV[2], ARGV[4], ARGV[5]
local format, byte, sub, match = string.format, string.byte, string.sub, string.match
local bucketName = bucketPattern(ARGV[3])
local function parse(v)
  local line, s, rank, ref = match(v, '^(%d+)|(%d)|([^|]*)|(.*)$')
  return { line = tonumber(line), s = tonumber(s), rank = tonumber(rank), ref = ref }
end
local function beats(c, h)
  if c.s ~= h.s then return c.s > h.s end
  if keep == 'last' then return c.line > h.line end
  if (keep == 'newest' or keep == 'oldest') and c.rank ~= h.rank then
    if c.rank == nil then return false end
    if h.rank == nil then return true end
    if keep == 'newest' then return c.rank > h.rank end
    return c.rank < h.rank
  end
  return c.line < h.line
end
local out, want = {}, {}
local at, k, row = 1, 0, 0
while at <= #layout do
  local l1, l2, l3, l4, l5, n = byte(layout, at, at + 5)
  local line = (((l1 * 128 + l2) * 128 + l3) * 128 + l4) * 128 + l5
  at = at + 6
  row = row + 1
  local tail = ARGV[5 + row]
  local value = format('%d', line) .. '|' .. tail
  local numbers, buckets, fields, fresh, held, others = {}, {}, {}, {}, {}, {}
  for j = 1, n do
    local b1, b2 = byte(layout, at, at + 1)
    numbers[j] = b1 * 128 + b2
    buckets[j] = format(bucketName, numbers[j])
    fields[j] = sub(layout, at + 2, at + 11)
    at = at + 12
    if fresh or byte(expire, k + j) == 49 then want[numbers[j]] = true end
    if redis.call('HSETNX', buckets[j], fields[j], value) == 1 then
      fresh[j] = true
    else
      local h = parse(redis.call('HGET', buckets[j], fields[j]))
      if h.line ~= line then
        held[j] = true
        local known = false
        for _, o in ipairs(others) do if o.h.line == h.line then known = true break end end
        if not known then others[#others + 1] = { h = h, key = k + j - 1 } end
      end
    end
  end
  local over = nil
  if #others > 0 then
    local me = parse(value)
    for _, o in ipairs(others) do
      if not beats(me, o.h) then over = o break end
    end
  end
  if over then
    for j = 1, n do
      if fresh[j] then redis.call('HDEL', buckets[j], fields[j]) end
    end
    out[#out + 1] = line; out[#out + 1] = match(tail, '^%d|[^|]*|(.*)$')
    out[#out + 1] = over.h.line; out[#out + 1] = over.h.ref; out[#out + 1] = over.key
  else
    for j = 1, n do
      if held[j] then redis.call('HSET', buckets[j], fields[j], value) end
      if want[numbers[j]] then
        redis.call('PEXPIRE', buckets[j], ttl)
        want[numbers[j]] = nil
      end
    end
    for _, o in ipairs(others) do
      out[#out + 1] = o.h.line; out[#out + 1] = o.h.ref
      out[#out + 1] = line; out[#out + 1] = match(tail, '^%d|[^|]*|(.*)$'); out[#out + 1] = o.key
    end
  end
  k = k + n
end
local unset = {}
for b in pairs(want) do unset[#unset + 1] = b end
return {out, unset, fresh and 1 or 0}
`;

// KEYS: the claim bucket of each key. ARGV: their claim fields. Replies each claim's value.
const VALUES = `local out = {}
for i = 1, #KEYS do out[i] = redis.call('HGET', KEYS[i], ARGV[i]) end
return out`;

/** A row kept in the `duplicates` hash: its record and the key it lost on. */
interface LostRow {
  record: string;
  identity: string;
}

/** A duplicate as reported once the export is planned: the survivor is the key's holder then. */
export interface DuplicateRow {
  line: number;
  record: string;
  identity: string;
  survivor: { line: number; record: string };
}

export class SurvivorClaims {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeyLayout,
    private readonly ttlMs: number,
    /** The claim buckets' TTL flags, shared with the conflict claims (one kind of bucket). */
    private readonly ttls: BucketTtls,
  ) {}

  /**
   * Claims each row's identities for the run under `keep`; returns the rows
   * that lost (rows of the batch, and rows of earlier batches the batch beat,
   * `earlier`). One round trip decides; a second keeps the losers, only when
   * there are any.
   */
  async contend(runId: string, keep: KeepRule, entries: readonly Entrant[]): Promise<Loss[]> {
    if (entries.length === 0) return [];
    const keys: string[] = [];
    for (const e of entries) for (const key of e.keys) keys.push(key);
    const names = claimNames(keys);
    const layout = claimLayout(entries, names);
    const expire = this.ttls.flags(runId, names.buckets);
    const tails = entries.map(
      (e) => `${e.sticky ? 1 : 0}|${e.rank === undefined ? '' : String(e.rank)}|${e.ref}`,
    );
    let out: (string | number)[];
    let unset: number[];
    let fresh: number;
    try {
      [out, unset, fresh] = (await redisCall('claiming identities', () =>
        this.redis.eval(
          CONTEND,
          1,
          this.keys.claims(runId),
          String(this.ttlMs),
          expire,
          this.keys.claimBucketPrefix(runId),
          layout,
          keep,
          ...tails,
        ),
      )) as [(string | number)[], number[], number];
    } catch (err) {
      this.ttls.failed(names.buckets);
      throw err;
    }
    // Flagged buckets only losers touched have no TTL yet: flagged again next time.
    if (fresh === 1) this.ttls.forgetAll();
    const missed = new Set(unset.map(Number));
    this.ttls.sent(names.buckets.filter((b) => !missed.has(b)));
    this.ttls.failed([...missed]);
    const reply = out;
    if (reply.length === 0) return [];
    const lines = new Set(entries.map((e) => e.line));
    const lost: Loss[] = [];
    for (let i = 0; i < reply.length; i += 5) {
      const line = Number(reply[i]);
      lost.push({
        line,
        ref: String(reply[i + 1]),
        winner: Number(reply[i + 2]),
        winnerRef: String(reply[i + 3]),
        identity: keys[Number(reply[i + 4])]!,
        earlier: !lines.has(line),
      });
    }
    const tx = this.redis.multi();
    tx.hset(
      this.keys.duplicates(runId),
      ...lost.flatMap((l) => [
        String(l.line),
        JSON.stringify({ record: l.ref, identity: l.identity } satisfies LostRow),
      ]),
    );
    tx.pexpire(this.keys.duplicates(runId), this.ttlMs);
    await execAll(tx, 'recording duplicates');
    return lost;
  }

  /**
   * Every row that lost, a page at a time, each with the row holding its key
   * now (call before the claims are released, once the export is planned).
   */
  async *duplicates(runId: string, pageSize = 1000): AsyncGenerator<DuplicateRow[]> {
    let cursor = '0';
    do {
      const [next, flat] = await redisCall('reading duplicates', () =>
        this.redis.hscan(this.keys.duplicates(runId), cursor, 'COUNT', pageSize),
      );
      cursor = next;
      if (flat.length === 0) continue;
      const rows: { line: number; lost: LostRow }[] = [];
      for (let i = 0; i < flat.length; i += 2)
        rows.push({
          line: Number(flat[i]),
          lost: parseStored(flat[i + 1]!, 'duplicate row') as LostRow,
        });
      const names = claimNames(rows.map((r) => r.lost.identity));
      const values = (await redisCall('reading duplicates', () =>
        this.redis.eval(
          VALUES,
          rows.length,
          ...names.buckets.map((b) => this.keys.claimBucket(runId, b)),
          ...names.fields,
        ),
      )) as (string | null)[];
      yield rows
        .map((r, i) => {
          const v = values[i] ?? '';
          const bar = v.indexOf('|');
          const ref = v.split('|').slice(3).join('|');
          return {
            line: r.line,
            record: r.lost.record,
            identity: r.lost.identity,
            survivor: { line: bar < 0 ? 0 : Number(v.slice(0, bar)), record: ref },
          };
        })
        .sort((a, b) => a.line - b.line);
    } while (cursor !== '0');
  }
}

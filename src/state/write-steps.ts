/**
 * The two Redis steps of one platform write, each a single Lua round trip,
 * so that a write costs a handful of Redis commands:
 *
 * - `claim`, before the request: is the run still taking writes, has this
 *   line settled already, and for a create the atomic claim of its
 *   identity keys (refused when a key is pending or already mapped;
 *   otherwise every key is marked pending).
 * - `finish`, after the answer, for a batch of writes that ended meanwhile:
 *   records the confirmed ones (identity keys → platform id, the record's
 *   state, their pending marks cleared: the same entries `RecordStates.commit`
 *   writes), clears the pending marks of creates that did not land, and
 *   settles each line once (as `RunProgress.settle`: counted, its failure
 *   row kept, an unknown create answered later moved to its counter), and
 *   drops the run's plan chunks whose lines have all settled (see
 *   planned-writes.ts). One script, so a record is never committed without
 *   its line settled.
 */
import type { RedisClient } from '../redis/connection.js';
import type { Entity } from '../sync/identity.js';
import { redisCall } from './errors.js';
import { RunField, type KeyLayout } from './keys.js';
import type { Numbering } from './numbering.js';
import { packPending, packRecord } from './packing.js';
import { SETTLE_PLAN_CHUNKS } from './planned-writes.js';
import type { WriteOutcome } from './progress.js';
import { storable, type FailureRow, type RunCounter } from './runs.js';

// KEYS: run hash, settled set, pending hash, then identity-map buckets. ARGV: the pending
// value, then per write: line, '1' for a create ('0' for an update), its number of identity
// keys n, then n pairs (bucket index in KEYS, key). Replies one answer per write, in order.
const CLAIM = `
local status = redis.call('HGET', KEYS[1], 'status')
local ended = (not status) or status == 'failed' or status == 'completed'
  or status == 'cancelled' or redis.call('HEXISTS', KEYS[1], 'cancelRequested') == 1
local out = {}
local i = 2
while i <= #ARGV do
  local line, create, n = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local first, last = i + 3, i + 2 + 2 * n
  i = last + 1
  local r
  if ended then r = 'ended'
  elseif redis.call('SISMEMBER', KEYS[2], line) == 1 then r = 'settled'
  elseif create == '0' then r = 'go'
  else
    for j = first, last, 2 do
      local key = ARGV[j + 1]
      if redis.call('HEXISTS', KEYS[3], key) == 1 then r = 'pending' break end
      if redis.call('HEXISTS', KEYS[tonumber(ARGV[j])], key) == 1 then r = 'exists' break end
    end
    if not r then
      local fields = {}
      for j = first, last, 2 do fields[#fields + 1] = ARGV[j + 1]; fields[#fields + 1] = ARGV[1] end
      if #fields > 0 then redis.call('HSET', KEYS[3], unpack(fields)) end
      r = 'go'
    end
  end
  out[#out + 1] = r
end
return out
`;

// KEYS: settled set, pending hash. ARGV: line, then the create's identity keys. Releases the
// pending marks of a create that did not land, unless its line has settled meanwhile (another
// attempt, which took the chunk over, settled it pending: finalize verifies those marks).
const RELEASE = `
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 0 end
return redis.call('HDEL', KEYS[2], unpack(ARGV, 2))
`;

// KEYS: a job's lock. ARGV: the holder's token, lock ms. As BullMQ's own extendLock: renewed
// only while the token still holds it.
const RENEW_LOCK = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

// KEYS: settled set, run hash, failures list, unknown-creates set, pending hash, entity info,
// plan hash, plan chunk index, then the bucket keys the entries name by index. ARGV: now, the
// unknown/settled/planned counter fields, the number of entries, then per entry 8 values:
// line, counter field, failure JSON ('' for none), record bucket index (0 for no commit),
// platform id, packed record, plan chunk ('' for none), number of identity keys n; then n
// pairs (bucket index, key). Returns {settled, planned, firsts...}.
const FINISH = `${SETTLE_PLAN_CHUNKS}
local now, unknown, settledField, plannedField = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local count = tonumber(ARGV[5])
local incr, order, firsts, failures, clear = {}, {}, {}, {}, {}
local chunkSettled, chunks = {}, {}
local added, committed = 0, false
local function add(field, n)
  if incr[field] == nil then incr[field] = 0; order[#order + 1] = field end
  incr[field] = incr[field] + n
end
local a = 6
for e = 1, count do
  local line, counter, failure = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  local recIx, id, rec = tonumber(ARGV[a + 3]), ARGV[a + 4], ARGV[a + 5]
  local chunk, n = ARGV[a + 6], tonumber(ARGV[a + 7])
  a = a + 8
  local first = redis.call('SADD', KEYS[1], line) == 1
  for j = 1, n do
    local ix, key = tonumber(ARGV[a]), ARGV[a + 1]
    a = a + 2
    if recIx > 0 then redis.call('HSET', KEYS[ix], key, id) end
    -- A create that did not land releases its marks only while its line is unsettled: once
    -- another attempt settled it (pending), the marks are what finalize verifies.
    if recIx > 0 or first then clear[#clear + 1] = key end
  end
  if recIx > 0 then
    committed = true
    added = added + redis.call('HSET', KEYS[recIx], id, rec)
  end
  if not first then
    firsts[#firsts + 1] = 0
    if counter ~= unknown and redis.call('SREM', KEYS[4], line) == 1 then
      add(unknown, -1)
      add(counter, 1)
      if failure ~= '' then failures[#failures + 1] = failure end
      -- Its pending marks stay (see above) for finalize, which finds the line by its plan.
      if recIx == 0 then pinPlanChunk(KEYS[7], KEYS[8], line) end
    end
  else
    firsts[#firsts + 1] = 1
    if counter == unknown then redis.call('SADD', KEYS[4], line) end
    add(counter, 1)
    add(settledField, 1)
    if failure ~= '' then failures[#failures + 1] = failure end
    if chunk ~= '' then
      if chunkSettled[chunk] == nil then chunkSettled[chunk] = 0; chunks[#chunks + 1] = chunk end
      chunkSettled[chunk] = chunkSettled[chunk] + 1
    end
  end
end
settlePlanChunks(KEYS[7], KEYS[8], KEYS[4], chunks, chunkSettled)
if #clear > 0 then redis.call('HDEL', KEYS[5], unpack(clear)) end
if committed then redis.call('HSETNX', KEYS[6], 'firstCommitAt', now) end
if added > 0 then redis.call('HINCRBY', KEYS[6], 'records', added) end
for _, field in ipairs(order) do
  if incr[field] ~= 0 then redis.call('HINCRBY', KEYS[2], field, incr[field]) end
end
if #failures > 0 then redis.call('RPUSH', KEYS[3], unpack(failures)) end
local got = redis.call('HMGET', KEYS[2], settledField, plannedField)
local reply = {tonumber(got[1] or '0'), tonumber(got[2] or '0')}
for _, f in ipairs(firsts) do reply[#reply + 1] = f end
return reply
`;

/** What the claim before a write found. */
export type WriteClaim =
  /** The run has ended, is gone or was asked to cancel: no more writes. */
  | 'ended'
  /** This line has settled in this round. */
  | 'settled'
  /** A create of one of its keys is pending (outcome unknown). */
  | 'pending'
  /** One of its keys maps to a platform record already. */
  | 'exists'
  /** Send it (a create's keys are marked pending). */
  | 'go';

export interface ClaimRequest {
  runId: string;
  entity: Entity;
  line: number;
  /** Identity keys of a create (marked pending); none for an update. */
  createKeys?: readonly string[];
}

/** A write that has ended, to settle (and commit, when it was confirmed). */
export interface FinishedWrite {
  line: number;
  outcome: WriteOutcome;
  failure?: FailureRow;
  /** Identity keys: mapped to `commit.platformId` when confirmed, their pending marks cleared. */
  keys: readonly string[];
  /** Whether the pending marks of `keys` are cleared (a create that did not land, or committed). */
  clearPending: boolean;
  commit?: { platformId: number; hash: string; job: string };
  /**
   * The first line of the plan chunk holding this write (`PlannedWrites.located`):
   * when this settles the line, the chunk is counted down, and dropped once all its
   * lines have settled (see planned-writes.ts). Left out, the chunk is kept to the
   * run's end: for a settle that may leave pending marks finalize verifies by the plan.
   */
  planChunk?: number;
}

export interface FinishReply {
  settled: number;
  planned: number;
  /** Per write: whether this call settled its line (false: settled before). */
  first: boolean[];
}

const UNKNOWN = RunField.counter('pendingCreates');

/** A script defined on the connection; its first argument is the number of keys. */
type ScriptCall = (...args: (string | number)[]) => Promise<unknown>;

export class WriteSteps {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeyLayout,
    private readonly runNumbers: Numbering,
    private readonly jobNumbers: Numbering,
    private readonly now: () => number,
  ) {}

  /**
   * A script as a command of the connection (defined once): ioredis sends
   * EVALSHA, and the script's text only when Redis does not know it yet.
   */
  private script(name: string, lua: string): (...args: (string | number)[]) => Promise<unknown> {
    const r = this.redis as unknown as Record<string, ScriptCall | undefined>;
    if (!r[name]) this.redis.defineCommand(name, { lua });
    return (r[name] as ScriptCall).bind(this.redis);
  }

  /** Claims one write (see `claimAll`). */
  async claim(req: ClaimRequest): Promise<WriteClaim> {
    const [answer] = await this.claimAll(req.runId, req.entity, [req]);
    return answer!;
  }

  /**
   * Claims writes of one run and entity in one script, each on its own and in
   * order (a later one sees what an earlier one marked pending): the run is
   * read once for them all.
   */
  async claimAll(
    runId: string,
    entity: Entity,
    reqs: readonly Omit<ClaimRequest, 'runId' | 'entity'>[],
  ): Promise<WriteClaim[]> {
    if (reqs.length === 0) return [];
    const k = this.keys;
    const fixed = [k.run(runId), k.settled(runId), k.pending(entity)];
    const buckets = new Map<string, number>();
    const args: string[] = [packPending({ runId, since: this.now() })];
    for (const req of reqs) {
      const keys = req.createKeys ?? [];
      args.push(String(req.line), req.createKeys ? '1' : '0', String(keys.length));
      for (const key of keys) {
        const bucket = k.ids(entity, k.idBucketOf(key));
        let ix = buckets.get(bucket);
        if (ix === undefined) buckets.set(bucket, (ix = fixed.length + buckets.size + 1));
        args.push(String(ix), key);
      }
    }
    return (await redisCall('claiming writes', () =>
      this.script('crmSyncClaimWrites', CLAIM)(
        fixed.length + buckets.size,
        ...fixed,
        ...buckets.keys(),
        ...args,
      ),
    )) as WriteClaim[];
  }

  /**
   * Releases the pending marks a create's claim set, when the platform
   * answered that it did not apply (a 429, a refusal, a transient fault), so
   * the create may go again; kept when the line has settled meanwhile.
   */
  async release(
    runId: string,
    entity: Entity,
    line: number,
    keys: readonly string[],
  ): Promise<void> {
    if (keys.length === 0) return;
    const k = this.keys;
    await redisCall('releasing a create claim', () =>
      this.script('crmSyncReleaseClaim', RELEASE)(
        2,
        k.settled(runId),
        k.pending(entity),
        String(line),
        ...keys,
      ),
    );
  }

  /**
   * Renews a queue job's lock (`key`, BullMQ's `<queue>:<id>:lock`) for `ms`
   * while `token` holds it; false when another worker holds it now.
   */
  async renewLock(key: string, token: string, ms: number): Promise<boolean> {
    const n = await redisCall('renewing a write lock', () =>
      this.script('crmSyncRenewLock', RENEW_LOCK)(1, key, token, String(ms)),
    );
    return n === 1;
  }

  async finish(
    runId: string,
    entity: Entity,
    writes: readonly FinishedWrite[],
  ): Promise<FinishReply> {
    const k = this.keys;
    const runNumber = await this.runNumbers.numberOf(runId);
    const jobNumbers = new Map<string, number>();
    for (const w of writes) {
      if (w.commit && !jobNumbers.has(w.commit.job)) {
        jobNumbers.set(w.commit.job, await this.jobNumbers.numberOf(w.commit.job));
      }
    }
    const fixed = [
      k.settled(runId),
      k.run(runId),
      k.failures(runId),
      k.unknownCreates(runId),
      k.pending(entity),
      k.entityInfo(entity),
      k.plan(runId),
      k.planIndex(runId),
    ];
    const buckets = new Map<string, number>();
    const indexOf = (key: string): number => {
      let ix = buckets.get(key);
      if (ix === undefined) {
        ix = fixed.length + buckets.size + 1;
        buckets.set(key, ix);
      }
      return ix;
    };
    const now = this.now();
    const args: string[] = [
      String(now),
      UNKNOWN,
      RunField.counter('writesSettled' satisfies RunCounter),
      RunField.counter('writesPlanned' satisfies RunCounter),
      String(writes.length),
    ];
    for (const w of writes) {
      const counter =
        w.outcome === 'pending' ? UNKNOWN : RunField.counter(w.outcome satisfies RunCounter);
      const c = w.commit;
      const keys = c || w.clearPending ? w.keys : [];
      args.push(
        String(w.line),
        counter,
        w.failure ? JSON.stringify(storable(w.failure)) : '',
        c ? String(indexOf(k.recs(entity, k.recBucketOf(c.platformId)))) : '0',
        c ? String(c.platformId) : '',
        c
          ? packRecord({
              hash: c.hash,
              syncedAt: now,
              runNumber,
              jobNumber: jobNumbers.get(c.job)!,
            })
          : '',
        w.planChunk === undefined ? '' : String(w.planChunk),
        String(keys.length),
      );
      for (const key of keys) {
        args.push(c ? String(indexOf(k.ids(entity, k.idBucketOf(key)))) : '0', key);
      }
    }
    const reply = (await redisCall('settling writes', () =>
      this.script('crmSyncFinishWrites', FINISH)(
        fixed.length + buckets.size,
        ...fixed,
        ...buckets.keys(),
        ...args,
      ),
    )) as number[];
    return {
      settled: reply[0]!,
      planned: reply[1]!,
      first: reply.slice(2).map((f) => f === 1),
    };
  }
}

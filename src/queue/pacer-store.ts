/**
 * The pacer's shared state in Redis: its keys, its one Lua script and how
 * the learner's state is read back (src/queue/pacer.ts uses them;
 * `crm-sync status` reads the state).
 *
 * `<prefix>:pacer` (a hash): `tat` (the next free turn, ms of Redis' clock),
 * `notBefore` (no turn before it: a 429's Retry-After), `ok` (successful
 * requests of every replica), `v` (the learner state's version), and the
 * learner's state (src/platform/rate-learner.ts). `<prefix>:pacer:log`:
 * successes per second, a ring of 128 fields `second % 128` → `second:count`,
 * and per 100 ms, a ring of 32 fields `d<tenth % 32>` → `tenth:count`.
 */
import {
  RECENT_SLOT_MS,
  windowed,
  type LearnerState,
  type RateSource,
} from '../platform/rate-learner.js';
import type { RedisClient } from '../redis/connection.js';

/**
 * A booking's span: a process books this much of the schedule at once (its
 * callers permitting), and books again when less than half of it is left.
 */
export const HORIZON_MS = 200;
export const LOG_SLOTS = 128;
/** The recent successes, per 100 ms (`RECENT_SLOT_MS`), a ring of 32 fields `d<slot>`. */
export const RECENT_SLOTS = 32;

export const pacerKey = (prefix: string): string => `${prefix}:pacer`;
export const pacerLogKey = (prefix: string): string => `${prefix}:pacer:log`;

export const STATE_FIELDS = [
  'rate',
  'ceiling',
  'periodMs',
  'changedAt',
  'okAtChange',
  'ceilingAt',
  'decreasedAt',
  'refillUntil',
  'source',
] as const;

/**
 * One script, three operations, all on Redis' clock:
 * - `grant want ok fixedRate startRate lateMs`: adds `ok` successes (total
 *   and this second's log slot), moves the next free turn `lateMs` later,
 *   books up to `want` turns, answers
 *   [now, first, interval, count, version, ok total, ...state fields].
 * - `set version holdMs field value …`: holds every turn until now + holdMs
 *   (if later than the hold already set), then, if the state's version is
 *   still `version` (or it is `-`), writes the fields and bumps the version.
 *   Answers 1, or 0 when another replica changed the state first.
 * - `log`: the success log, as [slot, "second:count", …, "d"slot, "tenth:count", …].
 */
const SCRIPT = `
local key, logKey = KEYS[1], KEYS[2]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op = ARGV[1]
if op == 'log' then return redis.call('HGETALL', logKey) end
if op == 'set' then
  local hold = tonumber(ARGV[3])
  if hold > 0 then
    local nb = tonumber(redis.call('HGET', key, 'notBefore') or '0')
    if now + hold > nb then redis.call('HSET', key, 'notBefore', now + hold) end
  end
  if #ARGV < 5 then return 1 end
  local v = redis.call('HGET', key, 'v') or '0'
  if ARGV[2] ~= '-' and ARGV[2] ~= v then return 0 end
  redis.call('HSET', key, unpack(ARGV, 4))
  redis.call('HINCRBY', key, 'v', 1)
  return 1
end
local want, ok, fixed = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local f = redis.call('HMGET', key, 'tat', 'notBefore', 'ok', 'v', ${STATE_FIELDS.map((s) => `'${s}'`).join(', ')})
local rate = fixed
if rate <= 0 then rate = tonumber(f[5]) or tonumber(ARGV[5]) end
local tat, nb = (tonumber(f[1]) or 0) + tonumber(ARGV[6] or '0'), tonumber(f[2]) or 0
local total = (tonumber(f[3]) or 0) + ok
local interval = 1000 / rate
local first = math.max(tat, now, nb)
local n = 0
local writes = {}
if want > 0 then
  n = math.min(want, math.floor(${HORIZON_MS} / interval) + 1)
  writes[#writes + 1] = 'tat'
  writes[#writes + 1] = tostring(first + n * interval)
end
if ok > 0 then
  writes[#writes + 1] = 'ok'
  writes[#writes + 1] = tostring(total)
end
if #writes > 0 then redis.call('HSET', key, unpack(writes)) end
if ok > 0 then
  local sec = math.floor(now / 1000)
  local ds = math.floor(now / ${RECENT_SLOT_MS})
  local slot, dslot = sec % ${LOG_SLOTS}, 'd' .. (ds % ${RECENT_SLOTS})
  local cur = redis.call('HMGET', logKey, slot, dslot)
  local function add(v, at)
    if v then
      local s, k = string.match(v, '^(%d+):(%d+)$')
      if tonumber(s) == at then return at .. ':' .. (tonumber(k) + ok) end
    end
    return at .. ':' .. ok
  end
  redis.call('HSET', logKey, slot, add(cur[1], sec), dslot, add(cur[2], ds))
end
local out = {tostring(now), tostring(first), tostring(interval), n, f[4] or '0', tostring(total)}
for i = 5, #f do out[#out + 1] = f[i] or '' end
return out
`;

export type PacerScript = (
  key: string,
  logKey: string,
  ...args: (string | number)[]
) => Promise<unknown>;

export function scriptOf(redis: RedisClient): PacerScript {
  const r = redis as unknown as Record<string, PacerScript | undefined>;
  if (!r.crmSyncPacer) redis.defineCommand('crmSyncPacer', { numberOfKeys: 2, lua: SCRIPT });
  return (r.crmSyncPacer as PacerScript).bind(redis);
}

export function stateOf(values: string[]): LearnerState | undefined {
  const [
    rate,
    ceiling,
    periodMs,
    changedAt,
    okAtChange,
    ceilingAt,
    decreasedAt,
    refillUntil,
    source,
  ] = values;
  if (!rate) return undefined;
  return {
    rate: Number(rate),
    ceiling: Number(ceiling || 0),
    periodMs: Number(periodMs || 1_000),
    changedAt: Number(changedAt || 0),
    okAtChange: Number(okAtChange || 0),
    ceilingAt: Number(ceilingAt || 0),
    decreasedAt: Number(decreasedAt || 0),
    refillUntil: Number(refillUntil || 0),
    source: (source || 'start') as RateSource,
  };
}

/** The shared state as `crm-sync show` reports it. */
export type PacerView =
  | (LearnerState & { notBefore: number; mode: 'auto' })
  | {
      mode: 'fixed';
      rate: number;
      notBefore: number;
    };

/** The shared rate and how it was reached, or undefined before any worker started. */
export async function readPacerState(
  redis: RedisClient,
  prefix: string,
): Promise<PacerView | undefined> {
  const values = await redis.hmget(pacerKey(prefix), ...STATE_FIELDS, 'notBefore', 'mode', 'fixed');
  const [notBefore, mode, fixed] = values.slice(STATE_FIELDS.length);
  if (mode === 'fixed' && fixed)
    return { mode: 'fixed', rate: Number(fixed), notBefore: Number(notBefore ?? 0) };
  const st = stateOf(values.slice(0, STATE_FIELDS.length).map((v) => v ?? ''));
  return st && { ...st, mode: 'auto', notBefore: Number(notBefore ?? 0) };
}

/** One line for people: the shared rate and where it came from. */
export function describeRate(st: PacerView | undefined, now = Date.now()): string {
  if (!st) return 'platform rate: not learned yet (PLATFORM_RATE_LIMIT=auto starts low)';
  const r = (x: number) => (Math.round(x * 10) / 10).toString();
  const held =
    st.notBefore > now ? `; held ${Math.ceil((st.notBefore - now) / 1000)} s more by a 429` : '';
  if (st.mode === 'fixed') {
    return `platform rate: ${r(st.rate)}/s (PLATFORM_RATE_LIMIT less 10%${held})`;
  }
  const how =
    st.source === 'policy'
      ? `as the platform states (${r(st.ceiling)}/s)`
      : windowed(st)
        ? `learned; the room in the platform's ${r(st.periodMs / 1_000)} s window, its limit met near ${r(st.ceiling)}/s`
        : st.ceiling > 0
          ? `learned; the platform's limit was met near ${r(st.ceiling)}/s`
          : 'learning; no 429 met yet';
  return `platform rate: ${r(st.rate)}/s (${how}${held})`;
}

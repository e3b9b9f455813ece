/**
 * The pacer's shared state in Redis: its keys, its one Lua script
 * (lua/pacer-2.lua) and how the learner's state is read back
 * (src/queue/pacer.ts uses them; `crm-sync status` reads the state).
 *
 * `<prefix>:pacer` (a hash): `tat` (the next free turn, ms of Redis' clock),
 * `notBefore` (no turn before it: a 429's Retry-After), `ok` (successful
 * requests of every replica), `booked` (turns booked by every replica),
 * `echo` (the window's echoes, `from:until,…`: src/queue/pacer.ts), `moved`
 * (ms the echoes moved the schedule, in all), `v` (the learner state's
 * version), and the learner's state
 * (src/platform/rate-learner.ts). `<prefix>:pacer:log`: successes by the
 * time their request went out, per second, a ring of 128 fields
 * `second % 128` → `second:count`, and per 10 ms, a ring of 256 fields
 * `d<slot % 256>` → `slot:count`.
 */
import {
  ROUND_MS,
  windowed,
  type LearnerState,
  type RateSource,
} from '../platform/rate-learner.js';
import type { RedisClient } from '../redis/connection.js';
import { callScript } from '../redis/scripts.js';
import { FIXED_MARGIN } from './window-echo.js';

/**
 * A booking's span: a process books this much of the schedule at once (its
 * callers permitting), and books again when less than half of it is left.
 * The script takes the span as an argument, this one when not given.
 * HORIZON_MS, LOG_SLOTS, RECENT_SLOTS, MAX_ECHOES and STATE_FIELDS (and
 * RECENT_SLOT_MS) are written out in lua/pacer-2.lua.
 */
export const HORIZON_MS = 200;
/**
 * The booking span of a slow start (src/platform/rate-learner.ts): half its
 * round, the longest round's until answers say the round trip is shorter.
 * Its rate doubles every round, and turns booked ahead go out at the
 * rate they were booked at: booked HORIZON_MS ahead, a doubling would wait
 * for the next booking, and rounds would take 200-400 ms. Booked half a
 * round ahead, a doubling takes effect within half a round. The script
 * calls this costs are few: the slow start's rates are low, and it lasts
 * about a second.
 */
export const SLOW_START_HORIZON_MS = ROUND_MS / 2;
/**
 * Where `auto` starts when nothing was learned yet: one turn per slow-start
 * booking span (20/s). A booking holds one turn at least, so below this a
 * turn lies further ahead than half a round and the first doublings wait
 * for it (at 5/s, 200 ms a doubling). Any higher, and a strict platform's
 * first round sends more before the first answer says anything.
 */
export const SLOW_START_RATE = 1_000 / SLOW_START_HORIZON_MS;
export const LOG_SLOTS = 128;
/** The recent successes, per 10 ms (`RECENT_SLOT_MS`), a ring of 256 fields `d<slot>`. */
export const RECENT_SLOTS = 256;
/** The window's echoes kept at most (the closest two are merged beyond). */
export const MAX_ECHOES = 16;

export const pacerKey = (prefix: string): string => `${prefix}:pacer`;
export const pacerLogKey = (prefix: string): string => `${prefix}:pacer:log`;

export const STATE_FIELDS = [
  'rate',
  'ceiling',
  'periodMs',
  'changedAt',
  'okAtChange',
  'bookedAtChange',
  'ceilingAt',
  'probeMs',
  'decreasedAt',
  'refillUntil',
  'source',
] as const;

export type PacerScript = (
  key: string,
  logKey: string,
  ...args: (string | number)[]
) => Promise<unknown>;

/**
 * The pacer's script (lua/pacer-2.lua: `grant`, `set` and `log`, all on
 * Redis' clock) over `redis`.
 */
export function scriptOf(redis: RedisClient): PacerScript {
  return (key, logKey, ...args) => callScript(redis, 'pacer', key, logKey, ...args);
}

export function stateOf(values: string[]): LearnerState | undefined {
  const [
    rate,
    ceiling,
    periodMs,
    changedAt,
    okAtChange,
    bookedAtChange,
    ceilingAt,
    probeMs,
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
    bookedAtChange: Number(bookedAtChange || 0),
    ceilingAt: Number(ceilingAt || 0),
    probeMs: Number(probeMs || 0),
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

/** Turns booked by every replica, and ms the window's echoes moved the schedule, so far. */
export async function readPacerCounters(
  redis: RedisClient,
  prefix: string,
): Promise<{ booked: number; moved: number }> {
  const [booked, moved] = await redis.hmget(pacerKey(prefix), 'booked', 'moved');
  return { booked: Number(booked ?? 0), moved: Number(moved ?? 0) };
}

/** One line for people: the shared rate and where it came from. */
export function describeRate(st: PacerView | undefined, now = Date.now()): string {
  if (!st) return 'platform rate: not learned yet (PLATFORM_RATE_LIMIT=auto starts low)';
  const r = (x: number) => (Math.round(x * 10) / 10).toString();
  const held =
    st.notBefore > now ? `; held ${Math.ceil((st.notBefore - now) / 1000)} s more by a 429` : '';
  if (st.mode === 'fixed') {
    const margin = Math.round((1 - FIXED_MARGIN) * 100);
    return `platform rate: ${r(st.rate)}/s (PLATFORM_RATE_LIMIT less ${margin}%${held})`;
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

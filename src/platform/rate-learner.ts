/**
 * Learning the platform's rate limit (`PLATFORM_RATE_LIMIT=auto`): a pure
 * AIMD controller. Its state is a few numbers the pacer (src/queue/pacer.ts)
 * keeps in Redis for every replica; each function here takes a state and an
 * observation and answers the next state, or `undefined` when nothing moves.
 *
 * - Start low (`start`; the pacer's SLOW_START_RATE, 20/s) and, from the
 *   first success, double the rate every round (a round trip, 50-100 ms:
 *   `roundOf`) whose turns were taken ("slow start", as TCP finds a path's
 *   capacity), as long as the rate is actually used, until the first 429:
 *   a step grows it by 2 to the power of the rounds since the last, at most
 *   twofold. A learned rate (a stored state with a ceiling) skips it.
 * - On a 429: wait out its Retry-After (the pacer holds every request until
 *   then) and back off. The limit ("ceiling") of a one-second window is
 *   what the platform let through in the second before the refused request
 *   went out: the success log counts requests by when they went out, in
 *   slots of 10 ms, so this is the limit to within a few requests; the rate
 *   goes straight to `SETTLE` of it. Without that count, the ceiling is the
 *   rate we were sending at, and the rate drops to 0.8 of it; when the
 *   platform's window is long (a Retry-After of more than two seconds
 *   says so: SECOND_WINDOW_WAIT_MS), the ceiling is what it let through
 *   in that window (the per-second log). A 429 that ends the slow start
 *   without a count halves the rate (TCP's ssthresh: the rate doubled since
 *   the requests that met the limit were booked), and never above that 0.8.
 *   Further 429s of requests sent before that back-off belong to the same
 *   episode and change nothing.
 * - Then climb back to `SETTLE` (0.97) of the ceiling ("settle just
 *   under"), halving the gap each second, and probe: after 20 s there
 *   without a 429 the ceiling grows 3%, so a limit raised by the platform is
 *   found too. A probe that meets a 429 found the same limit again (at
 *   0.97 of an exact count, a 3% probe goes past it): the wait before the
 *   next one doubles, up to `PROBE_MAX_MS`; one that held for a whole wait
 *   brings it back to 20 s.
 * - A long window (a minute; up to `LOG_SPAN_MS`) holds a count, not a
 *   rate, and answers late: a minute's window refuses nothing until its
 *   limit of requests sits in it, so the slow start overshoots it (up to
 *   PLATFORM_RATE_LIMIT_MAX), fills it in a burst, and the platform then
 *   refuses until the oldest of them leave, up to a minute. That wait
 *   cannot be saved once the burst is in, and the window then frees as it
 *   was filled, a window later: first the slow start's trickle, then its
 *   burst. A rate alone either meets 429s in the trickle or wastes the
 *   burst. So once a Retry-After has shown a long window, the learner
 *   counts instead (`windowPace`): each second it sends what the window has
 *   room for (its limit, exact here since the window was full at the 429,
 *   less a second of requests in flight, minus what the success log says is
 *   still in it at the second's end), at most `SETTLE` of the limit's rate,
 *   and holds every request (no trickle of refused ones) while there is no
 *   room. For the one window after the slow start's overshoot the cap is
 *   `REFILL` times the limit's rate, so its burst is used as it leaves;
 *   after that, the pace is even again, at 0.95 of the limit. A 429 backs
 *   off to 0.8 for a step, probes raise the limit as above; a probe past
 *   the true limit meets one 429, whose Retry-After in an evenly filled
 *   window is about a second (refilling every burst as fast as it leaves
 *   would keep the window full too, but replays the burst and the wait
 *   after it each minute, and every probe's 429 then waits half a minute).
 * - A limit the platform states (`RateLimit-Policy: 100;w=1`, or its
 *   `X-`/`RateLimit-Limit` with a known window) replaces all guessing.
 *
 * Rates are requests per second; times are milliseconds (the pacer's clock,
 * Redis' TIME, shared by every replica).
 */
import { MAX_WAIT_MS, parseRetryAfter } from './retry-after.js';

/** Bounds of the learned rate. */
export interface LearnerSettings {
  /** First rate when nothing was learned yet. */
  start: number;
  /** Never below this. */
  min: number;
  /** Never above this (PLATFORM_RATE_LIMIT_MAX). */
  max: number;
}

export type RateSource = 'start' | 'ramp' | 'limited' | 'probe' | 'policy' | 'window';

export interface LearnerState {
  /** The rate requests are spaced at now. */
  rate: number;
  /** The limit as learned (0: no 429 yet). */
  ceiling: number;
  /** The platform's window as far as known: 1 s until a Retry-After says longer. */
  periodMs: number;
  /** When the rate last changed (or its step was restarted). */
  changedAt: number;
  /** Successes counted (all replicas) when the rate last changed. */
  okAtChange: number;
  /** Turns booked (all replicas) when the rate last changed: the demand a slow-start round saw. */
  bookedAtChange: number;
  /** When the ceiling was last set: probing waits `probeMs` after it. */
  ceilingAt: number;
  /** The wait before the next probe (0: `PROBE_MS`): doubled by each probe that met a 429. */
  probeMs: number;
  /** When the last back-off happened (0: never): 429s of earlier requests are its echo. */
  decreasedAt: number;
  /**
   * Until when a long window is refilled at up to `REFILL` times its limit's
   * rate (0: not): the window after the slow start's burst, which leaves it
   * as it went in.
   */
  refillUntil: number;
  source: RateSource;
}

/** A next state, and how long to hold every request first (ms from now; a long window's wait). */
export type Step = LearnerState & { holdMs?: number };

/** Growth per round before the first 429 (slow start). */
export const SLOW_START = 2;
/**
 * A slow start's longest round: the rate doubles each round whose demand
 * used at least `USED` of it (the turns booked since the last step, by every
 * replica's callers, counted as they are booked; successes reach the count
 * a round trip and a booking later). A round is the platform's round trip
 * as the pacer sees it (`roundOf`): TCP's slow start, too, doubles once a
 * round trip, and the first 429 then comes back about a doubling past what
 * met the limit (more where the round trip is longer than ROUND_MS).
 * Steps come with bookings, which a slow start makes often
 * (SLOW_START_HORIZON_MS, src/queue/pacer-store.ts): a step half a round
 * or more after the last grows the rate by 2^(elapsed / round), so the
 * growth follows the clock whenever the bookings come
 * (a step only after a whole round would skip a booking that came a little
 * early, and wait for the next). Never more than twofold at a step: the
 * rate sent at trails the rate by a booking, and a one-second window then
 * holds the last second of the ramp when it refuses. Doubling once for
 * each round gone by made the last step up to 4x, and a two-replica pacer
 * then learned a 60/s limit 20% low: the count is off by what goes out
 * bunched at the window's edge.
 */
export const ROUND_MS = 100;
/**
 * A slow start's shortest round: its steps come every half round, each a
 * booking (a script call) of every replica, and the rate sent at trails
 * the rate by a booking.
 */
export const MIN_ROUND_MS = 50;

/** A slow start's round for answers that take `answerMs` (Infinity: none yet). */
export function roundOf(answerMs: number): number {
  return Math.min(ROUND_MS, Math.max(MIN_ROUND_MS, answerMs));
}
/** A slow-start round whose demand fell short is measured again over up to this long. */
export const ROUND_SPAN_MS = 500;
/** One step a second at most, once the slow start is over. */
export const STEP_MS = 1_000;
/** The rate after a back-off, as a share of the ceiling. */
export const BACKOFF = 0.8;
/**
 * Where the rate settles, as a share of the ceiling: as close as a
 * one-second window allows the pacer's turns to go (src/queue/window-echo.ts,
 * the fixed limit's share) with a request or two of the ceiling's count to
 * spare.
 */
export const SETTLE = 0.97;
/**
 * Time at the settled rate without a 429 before the ceiling is probed
 * upwards. A probe past an unchanged limit meets a 429 and its hold (a
 * whole second on a per-second limit): at 30 s an 80 s first sync probes
 * once, not twice.
 */
export const PROBE_MS = 30_000;
/** The longest wait between probes, after probes that met a 429 one after another. */
export const PROBE_MAX_MS = 320_000;
/** Growth of the ceiling per probe. */
export const PROBE = 1.03;
/**
 * A 429 of a request sent this soon after a back-off is its echo: other
 * replicas learn of the back-off when they next book turns.
 */
export const ECHO_MS = 300;
/** The step grows the rate only if this share of it was used (no growth while demand is lower). */
export const USED = 0.5;
/** The longest window whose successes the log holds (a ring of 128 seconds, src/queue/pacer-store.ts). */
export const LOG_SPAN_MS = 120_000;
/**
 * The window after the slow start's overshoot is refilled at up to this
 * many times the limit's rate: it frees as fast as it was filled (the
 * burst, a window later), and twice the limit's rate uses most of that.
 */
export const REFILL = 2;
/** Seconds of a long window's rate kept free in it: requests in flight, successes not yet logged. */
export const WINDOW_SLACK_S = 1;
/** A long window is probed upwards only when it holds this share of its target or more. */
export const USED_WINDOW = 0.9;
const DAY_MS = 86_400_000;

const clamp = (x: number, s: LearnerSettings): number => Math.min(s.max, Math.max(s.min, x));

/** The wait before the next probe. */
export function probeWait(st: LearnerState): number {
  return st.probeMs > 0 ? st.probeMs : PROBE_MS;
}

/** Whether the state is in its slow start: nothing learned yet (no 429, no stated policy). */
export function slowStart(st: LearnerState): boolean {
  return st.ceiling === 0 && st.source !== 'policy';
}

/** How long a step of the state lasts at least: half a round in the slow start, else a second. */
export function stepMs(st: LearnerState, roundMs = ROUND_MS): number {
  return slowStart(st) ? roundMs / 2 : STEP_MS;
}

/** The state of a cluster that learned nothing yet, or carries on from `stored`. */
export function initialState(s: LearnerSettings, now: number, stored?: LearnerState): LearnerState {
  if (stored) return { ...stored, rate: clamp(stored.rate, s), changedAt: now };
  return {
    rate: clamp(s.start, s),
    ceiling: 0,
    periodMs: 1_000,
    changedAt: now,
    okAtChange: 0,
    bookedAtChange: 0,
    ceilingAt: now,
    probeMs: PROBE_MS,
    decreasedAt: 0,
    refillUntil: 0,
    source: 'start',
  };
}

/** What a step is told (`onTick`). */
export interface TickAt {
  now: number;
  ok: number;
  booked: number;
  log?: SuccessLog;
  roundMs?: number;
  starved?: boolean;
}

/**
 * A second (or a slow start's round) went by: grow, settle or probe. `ok`
 * is the cluster's count of successful requests so far, `booked` of turns
 * booked, `roundMs` the slow start's round (`roundOf`; ROUND_MS when not
 * given), `starved` that the booking at hand had more callers waiting than
 * turns to give. Undefined until a step is due.
 */
export function onTick(st: LearnerState, at: TickAt, s: LearnerSettings): Step | undefined {
  const elapsed = at.now - st.changedAt;
  const round = at.roundMs ?? ROUND_MS;
  if (elapsed < stepMs(st, round)) return undefined;
  const base = { changedAt: at.now, okAtChange: at.ok, bookedAtChange: at.booked };
  if (at.log && windowed(st)) {
    // Probe only a window that was kept full: an idle one says nothing of its limit.
    const full = windowCount(at.log, at.now, st.periodMs, at.now) >= windowTarget(st) * USED_WINDOW;
    const probe =
      full &&
      at.now >= st.refillUntil &&
      at.now - st.ceilingAt >= probeWait(st) &&
      st.ceiling * SETTLE < s.max;
    const next = probe ? { ...st, ceiling: st.ceiling * PROBE, ceilingAt: at.now } : st;
    const pace = windowPace(next, at.log, at.now);
    return {
      ...next,
      ...base,
      rate: clamp(pace.rate, s),
      holdMs: pace.holdMs,
      source: probe ? 'probe' : 'window',
    };
  }
  if (slowStart(st)) {
    // Turns are booked a span ahead at once (one turn at least): a round's demand
    // is measured over as many rounds as it takes to see it (ROUND_SPAN_MS at most),
    // unless the booking had more callers than turns: then the rate is used, however
    // idle the step was before (a worker waiting for its run).
    const demand = ((at.booked - st.bookedAtChange) * 1_000) / elapsed;
    if (at.ok > 0 && (at.starved || demand >= st.rate * USED)) {
      const growth = Math.min(SLOW_START, SLOW_START ** (elapsed / round));
      return { ...st, ...base, rate: clamp(st.rate * growth, s), source: 'ramp' };
    }
    return elapsed >= ROUND_SPAN_MS ? { ...st, ...base } : undefined;
  }
  const used = ((at.ok - st.okAtChange) * 1_000) / elapsed;
  // Demand was below the rate: nothing says the platform takes more.
  if (used < st.rate * USED || st.source === 'policy') return { ...st, ...base };
  const target = clamp(st.ceiling * SETTLE, s);
  if (st.rate < target) {
    const rate = Math.min(target, st.rate + Math.max(0.5, (target - st.rate) / 2));
    return { ...st, ...base, rate, source: 'ramp' };
  }
  if (at.now - st.ceilingAt >= probeWait(st) && st.rate < s.max) {
    const ceiling = st.ceiling * PROBE;
    return {
      ...st,
      ...base,
      ceiling,
      ceilingAt: at.now,
      // The last probe held a whole wait: the platform took more, probe as often again.
      probeMs: st.source === 'probe' ? PROBE_MS : probeWait(st),
      rate: clamp(ceiling * SETTLE, s),
      source: 'probe',
    };
  }
  return { ...st, ...base };
}

/** Successes per second, keyed by the second (ms / 1000, floored): the platform's view of us. */
export type SuccessLog = ReadonlyMap<number, number>;
/** The recent successes per `RECENT_SLOT_MS`, keyed by ms / RECENT_SLOT_MS, floored. */
export type RecentLog = ReadonlyMap<number, number>;
/**
 * The recent log's slot. A one-second window's count from whole seconds
 * assumes the second before was filled evenly; a slow start fills it late
 * (doubling), and the bench's first syncs measured a 100/s limit as 87 or
 * 105 that way; in slots of 100 ms, logged when the answers were counted
 * rather than when the requests went out, as 95. Logged by when each
 * request went out, in slots of 10 ms, the count is off by what arrived
 * out of order across the window's edges, and a part of one slot. "Went
 * out" is when the request was written to its socket, not when its turn
 * fired: a busy worker writes late, and by their turns a slow machine's
 * first syncs (bench rate, case f, 4,000 and 20,000 rows) learned a
 * 1,000/s limit as 891-1,027 (25 runs), by when they were written as
 * 992-1,005 (20 runs).
 */
export const RECENT_SLOT_MS = 10;
/** The recent log covers this much (256 slots of 10 ms, less some either side). */
export const RECENT_SPAN_MS = 2_000;

/**
 * What a platform with a window of `periodMs` let through in its window,
 * per second, when it answered a 429 at `now` with `retryAfterMs`: its
 * oldest entry leaves in about `retryAfterMs` (rounded up to a second), so
 * the window began `periodMs − retryAfterMs` ago, give or take a second.
 * Undefined when the log holds nothing of that window.
 */
export function windowEstimate(
  log: SuccessLog,
  now: number,
  retryAfterMs: number,
  periodMs: number,
  slotMs = 1_000,
): number | undefined {
  const count = windowCount(log, now + Math.max(0, retryAfterMs - 1_000), periodMs, now, slotMs);
  return count > 0 ? (count * 1_000) / periodMs : undefined;
}

/** Whether the state's window is a long one the log covers: it is paced by its room (`windowPace`). */
export function windowed(st: LearnerState): boolean {
  return (
    st.ceiling > 0 && st.source !== 'policy' && st.periodMs > STEP_MS && st.periodMs <= LOG_SPAN_MS
  );
}

/**
 * A long window's pace over the next step: the room left in it at the
 * step's end below `SETTLE` of its limit (what was sent a window ago
 * leaves it), at most `REFILL` times the limit's rate; and, when it has no
 * room, how long to hold until enough has left it (whole seconds).
 */
export function windowPace(
  st: LearnerState,
  log: SuccessLog,
  now: number,
): { rate: number; holdMs: number } {
  const target = windowTarget(st);
  for (let holdMs = 0; holdMs < st.periodMs; holdMs += STEP_MS) {
    const room = target - windowCount(log, now + holdMs + STEP_MS, st.periodMs, now);
    const cap = st.ceiling * (now + holdMs < st.refillUntil ? REFILL : SETTLE);
    if (room > 0) return { rate: Math.min(cap, (room * 1_000) / STEP_MS), holdMs };
  }
  return { rate: st.ceiling * BACKOFF, holdMs: st.periodMs };
}

/** The most a long window is filled to: its limit, less `WINDOW_SLACK_S` of its rate. */
function windowTarget(st: LearnerState): number {
  return (st.ceiling * st.periodMs) / 1_000 - st.ceiling * WINDOW_SLACK_S;
}

/** Successes logged in the window of `periodMs` that ends at `end` (up to `now`), its first slot in part. */
function windowCount(
  log: SuccessLog,
  end: number,
  periodMs: number,
  now: number,
  slotMs = 1_000,
): number {
  const start = (end - periodMs) / slotMs;
  const from = Math.floor(start);
  const to = Math.floor(now / slotMs);
  let count = 0;
  for (const [sec, n] of log) {
    if (sec > from && sec <= to) count += n;
    else if (sec === from) count += n * (1 - (start - from));
  }
  return count;
}

/**
 * A 429 answered a request whose turn fired at `requestedAt` and that was
 * written out at `sentAt` (the same when not known). Undefined when an
 * earlier one already backed off for it (its turn came before the back-off).
 */
export function onLimited(
  st: LearnerState,
  at: {
    now: number;
    requestedAt: number;
    sentAt?: number;
    retryAfterMs: number;
    log?: SuccessLog;
    recent?: RecentLog;
  },
  s: LearnerSettings,
): Step | undefined {
  // A wait longer than the window we assumed: the window is longer (DRF: a minute, an hour, a
  // day). Up to SECOND_WINDOW_WAIT_MS is a one-second window's still: a wait rounded up, or
  // a date read across the skew between the platform's clock and ours.
  const periodMs =
    at.retryAfterMs <= Math.max(st.periodMs, SECOND_WINDOW_WAIT_MS)
      ? st.periodMs
      : at.retryAfterMs <= 60_000
        ? 60_000
        : at.retryAfterMs <= 3_600_000
          ? 3_600_000
          : DAY_MS;
  if (at.requestedAt < st.decreasedAt + ECHO_MS) {
    return periodMs === st.periodMs ? undefined : { ...st, periodMs };
  }
  if (st.source === 'policy') return { ...st, periodMs, decreasedAt: at.now };
  // The window was full: what the platform let through in it is the limit.
  // A one-second window counted from the recent log (by when requests went
  // out, up to the refused one): the limit itself, give or take a request.
  const fine =
    at.recent && periodMs <= RECENT_SPAN_MS
      ? windowEstimate(at.recent, at.sentAt ?? at.requestedAt, 1_000, periodMs, RECENT_SLOT_MS)
      : undefined;
  const inWindow = at.log ? windowEstimate(at.log, at.now, at.retryAfterMs, periodMs) : undefined;
  // Seconds alone (a 1 s window): never more than the rate we sent at.
  const measured = fine ?? (periodMs > 1_000 ? inWindow : Math.min(st.rate, inWindow ?? st.rate));
  const ceiling = clamp(measured ?? st.rate, s);
  // The slow start's end, not measured: the rate doubled since the refused request was booked.
  const halved = slowStart(st) ? st.rate / SLOW_START : Infinity;
  const next: LearnerState = {
    ...st,
    periodMs,
    ceiling,
    ceilingAt: at.now,
    rate: clamp(fine !== undefined ? ceiling * SETTLE : Math.min(halved, ceiling * BACKOFF), s),
    changedAt: at.now,
    decreasedAt: at.now,
    // A probe met the limit: probe half as often.
    probeMs: st.source === 'probe' ? Math.min(PROBE_MAX_MS, 2 * probeWait(st)) : probeWait(st),
    source: 'limited',
  };
  if (!at.log || !windowed(next)) return next;
  // A long window: once the platform's wait is over, send what its room
  // takes, backed off; the slow start's overshoot leaves it in a burst.
  const resume = at.now + at.retryAfterMs;
  const refillUntil = st.ceiling === 0 ? resume + periodMs : st.refillUntil;
  const pace = windowPace({ ...next, refillUntil }, at.log, resume);
  const rate = Math.min(pace.rate, refillUntil > at.now ? Infinity : ceiling * BACKOFF);
  return { ...next, refillUntil, rate: clamp(rate, s), holdMs: at.retryAfterMs + pace.holdMs };
}

/**
 * The longest Retry-After still read as a one-second window's. A minute's
 * window asks for more at its first 429 unless it took 58 s or more to
 * fill; read as one second's, it is then learned from its last second,
 * near the pace that filled it.
 */
export const SECOND_WINDOW_WAIT_MS = 2_000;

/** The platform stated its limit: `limit` requests per `windowMs`. */
export function onPolicy(
  st: LearnerState,
  policy: { limit: number; windowMs: number },
  now: number,
  s: LearnerSettings,
): LearnerState | undefined {
  const ceiling = (policy.limit * 1_000) / policy.windowMs;
  if (st.source === 'policy' && Math.abs(ceiling - st.ceiling) < 1e-9) return undefined;
  return {
    ...st,
    ceiling,
    ceilingAt: now,
    periodMs: policy.windowMs,
    rate: clamp(ceiling * SETTLE, s),
    changedAt: now,
    source: 'policy',
  };
}

// Headers ------------------------------------------------------------------

export type Headers = Record<string, string | string[] | undefined>;

export interface RateSignals {
  /** Retry-After, in ms (seconds or an HTTP date). */
  retryAfterMs?: number;
  /** The stated limit: `limit` requests per `windowMs`. */
  policy?: { limit: number; windowMs: number };
  /** Requests left in the current window, and when it resets (ms from now). */
  remaining?: number;
  resetMs?: number;
}

/** A header by its lower-case name (Node's are lower-case; others may not be). */
function header(h: Headers, name: string): string | undefined {
  let v = h[name];
  if (v === undefined) {
    for (const k of Object.keys(h)) if (k.toLowerCase() === name) v = h[k];
  }
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s.trim() === '' ? undefined : s.trim();
}

function num(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/**
 * A reset as a delta in seconds, or (GitHub's, large) a Unix time in
 * seconds: ms from now, at most MAX_WAIT_MS (a Unix time in ms would
 * otherwise read as millennia).
 */
function resetOf(v: string | undefined, now: number): number | undefined {
  const n = num(v);
  if (n === undefined) return undefined;
  return Math.min(n > 1e9 ? Math.max(0, n * 1_000 - now) : n * 1_000, MAX_WAIT_MS);
}

/** `100;w=60` or `"default";q=100;w=60` (IETF drafts), the first policy given. */
function parsePolicy(v: string | undefined): { limit: number; windowMs: number } | undefined {
  if (v === undefined) return undefined;
  const first = v.split(',')[0]!;
  const parts = first.split(';').map((p) => p.trim());
  let limit: number | undefined;
  let window: number | undefined;
  for (const p of parts) {
    const [k, val] = p.split('=').map((x) => x.trim());
    if (val === undefined) limit ??= num(k);
    else if (k === 'q') limit = num(val);
    else if (k === 'w') window = num(val);
  }
  if (!limit || !window) return undefined;
  return { limit, windowMs: window * 1_000 };
}

/**
 * The platform's own rate signals, where it sends them: Retry-After;
 * `RateLimit-Policy` / `X-RateLimit-Policy`; `RateLimit-Limit`,
 * `-Remaining`, `-Reset` with or without `X-`; the combined `RateLimit:
 * limit=…, remaining=…, reset=…`. A bare limit without a window says too
 * little (per second? per hour?) and is left out.
 */
export function readRateHeaders(h: Headers, now: number): RateSignals {
  const out: RateSignals = {};
  const retry = parseRetryAfter(header(h, 'retry-after'), now);
  if (retry !== undefined) out.retryAfterMs = retry;
  const policy = parsePolicy(header(h, 'ratelimit-policy') ?? header(h, 'x-ratelimit-policy'));
  if (policy) out.policy = policy;
  const combined = header(h, 'ratelimit');
  const fields = new Map<string, string>();
  if (combined) {
    for (const part of combined.split(/[,;]/)) {
      const [k, v] = part.split('=').map((x) => x.trim().toLowerCase());
      if (k && v !== undefined) fields.set(k, v);
    }
  }
  const remaining = num(
    header(h, 'ratelimit-remaining') ??
      header(h, 'x-ratelimit-remaining') ??
      fields.get('remaining'),
  );
  if (remaining !== undefined) out.remaining = remaining;
  const reset = resetOf(
    header(h, 'ratelimit-reset') ?? header(h, 'x-ratelimit-reset') ?? fields.get('reset'),
    now,
  );
  if (reset !== undefined) out.resetMs = reset;
  return out;
}

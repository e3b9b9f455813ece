/**
 * The request pacer: every platform request of every worker replica waits
 * here for its turn (`acquire`), and reports the answer (`observe`).
 *
 * Turns are spaced evenly at the current rate from one
 * "next free turn" time kept in Redis (a hash next to the queue keys,
 * `<prefix>:pacer`), so replicas share the rate and the platform sees one
 * client. The clock is Redis' (TIME in the script): replicas' clocks do not
 * matter. A process books a few turns at once (as many as fit in the next
 * `HORIZON_MS` and it has callers for), so the cost is one script call per
 * batch, not per request.
 *
 * A 429 sets a shared "not before" time from its Retry-After: no replica
 * sends before it, and a caller that simply retries is held by `acquire`.
 * In `auto` mode the rate itself is learned (src/platform/rate-learner.ts):
 * its state lives in the same hash, so it is shared and survives restarts;
 * successes are logged per second (`<prefix>:pacer:log`, a ring of 128
 * fields, and a ring of 32 tenths for a short window at the slow start's
 * end) for the learner to tell how much a long window let through and,
 * once a window is known to be long, how much room it has each second (a
 * step then reads the log and may hold every turn until the window frees).
 * In `fixed` mode the rate is PLATFORM_RATE_LIMIT less a 10% margin
 * (FIXED_MARGIN): evenly spaced turns at exactly a platform's limit would
 * meet a 429 whenever a request is delayed on its way (a sliding window
 * counts arrivals). Turns due within TOGETHER_MS of each other go out
 * together, on one timer.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { DEFAULT_RATE_LIMIT_START } from '../defaults.js';
import type { Logger } from '../log.js';
import {
  initialState,
  onLimited,
  onPolicy,
  onTick,
  readRateHeaders,
  stepMs,
  windowed,
  type Headers,
  type LearnerSettings,
  type LearnerState,
  type RateSource,
  type RecentLog,
  type SuccessLog,
} from '../platform/rate-learner.js';
import { nextSkew, type Skew } from './clock-skew.js';
import type { RedisClient } from '../redis/connection.js';
import {
  HORIZON_MS,
  pacerKey,
  pacerLogKey,
  scriptOf,
  STATE_FIELDS,
  stateOf,
  type PacerScript,
} from './pacer-store.js';

export { pacerKey, pacerLogKey, readPacerState } from './pacer-store.js';

export interface Pacer {
  /** Resolves when this request may be sent; rejects with the signal's reason on abort. */
  acquire(signal?: AbortSignal): Promise<void>;
  /** The answer of a request sent at `requestedAt` (ms, Date.now()). */
  observe(
    status: number,
    headers: Record<string, string | string[] | undefined>,
    requestedAt: number,
  ): void;
  /** Requests per second now. */
  readonly rate: number;
}

export type PacerMode = { kind: 'fixed'; rate: number } | ({ kind: 'auto' } & LearnerSettings);

/**
 * A fixed PLATFORM_RATE_LIMIT is paced this share of it. Turns spaced
 * evenly at `r` put at most r × (1 s + s) requests in a one-second window
 * (sliding or fixed) when their arrivals spread by `s`; 10% under the
 * limit is s = 111 ms: up to TOGETHER_MS (10 ms) early, up to LATE_MS
 * (25 ms) late without moving the schedule, and about 75 ms for the way to
 * the platform (a busy process between a turn and its request's write, a
 * slow hop). At 5% under (52 ms), with turns placed by the shortest round
 * trip to Redis (clock-skew.ts) and LATE_MS at 10, the two-worker test
 * (test/e2e/cli-rate-limit.test.ts) met a 429 in 1 of the 2 runs that
 * reached that check on a two-core machine at load average 13-15; at 10%
 * in none of 2.
 */
export const FIXED_MARGIN = 0.9;
/**
 * Turns due within this many milliseconds after the one a timer fires for
 * go out with it, up to that much early. At 1,000 requests a second a timer
 * per turn woke the worker for every request, and each answer came back on
 * its own; in groups it wakes once for several, and its claim and settle
 * batches grow (the CPU per write of each span: docs/BENCHMARKS.md,
 * sync-cost). 10 ms is 1% of the shortest window a platform's rate is
 * counted in (a second): a sliding window then holds at most 10 ms of turns
 * more than the rate gives, inside the margin under the limit of a fixed
 * rate (FIXED_MARGIN, 111 ms of turns) and of a learned one (it settles at
 * 0.95 of the limit).
 */
export const TOGETHER_MS = 10;
/**
 * Lateness of a turn beyond which the turns after it move (by the excess).
 * Less is absorbed by the margin under the limit (FIXED_MARGIN); more would
 * let a window hold the late request and a full period of later ones. Each
 * move costs the rate what it moves by: a timer a few ms late is the rule
 * on a loaded machine, so this is not 0.
 */
const LATE_MS = 25;

export interface PacerOptions {
  redis: RedisClient;
  prefix: string;
  mode: PacerMode;
  logger?: Logger;
  /** Told the rate whenever it changes (a metrics gauge). */
  onRate?: (rate: number, source: RateSource | 'fixed') => void;
}

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
  signal?: AbortSignal | undefined;
  onAbort?: () => void;
}

/** The pacer shared through Redis; `stop()` ends its timers (pending callers are rejected). */
export class RedisPacer implements Pacer {
  private readonly call: PacerScript;
  private readonly key: string;
  private readonly logKey: string;
  private readonly waiters: Waiter[] = [];
  /** Booked turns, local ms (performance.now()). */
  private turns: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private fetching = false;
  private okPending = 0;
  /** The most a turn was taken late since the last booking (ms). */
  private late = 0;
  /** Redis time − local Date.now(), from the last answer. */
  private offset = 0;
  /** Redis time − local performance.now(): where booked turns fall locally. */
  private skew: Skew | undefined;
  private state: LearnerState | undefined;
  private version = '0';
  private current: number;
  private stopped = false;
  private ticking = false;
  /** Local ms before which nothing is sent: a 429's Retry-After, before Redis has it. */
  private holdUntil = 0;
  private updating: Promise<void> = Promise.resolve();

  constructor(private readonly opts: PacerOptions) {
    this.call = scriptOf(opts.redis);
    this.key = pacerKey(opts.prefix);
    this.logKey = pacerLogKey(opts.prefix);
    this.current = opts.mode.kind === 'fixed' ? fixedPace(opts.mode.rate) : opts.mode.start;
  }

  get rate(): number {
    return this.current;
  }

  /** The learner's state as last read (auto mode). */
  get learned(): LearnerState | undefined {
    return this.state;
  }

  /** Reads the shared state (and starts it when there is none): a restarted worker carries on. */
  async start(): Promise<void> {
    await this.fetch(0);
    const mode = this.opts.mode;
    // What `crm-sync show` reports: the mode the workers run in (and a fixed pace).
    const shown = mode.kind === 'fixed' ? ['fixed', String(fixedPace(mode.rate))] : ['auto', ''];
    await this.call(this.key, this.logKey, 'set', '-', 0, 'mode', shown[0]!, 'fixed', shown[1]!);
    await this.fetch(0);
    if (mode.kind !== 'auto') return;
    const now = Date.now() + this.offset;
    const fresh = initialState(mode, now, this.state);
    if (!this.state || fresh.rate !== this.state.rate) await this.write(fresh, 0);
  }

  acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.stopped) return Promise.reject(new Error('pacer stopped'));
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = { resolve, reject, signal };
      if (signal) {
        w.onAbort = () => {
          const i = this.waiters.indexOf(w);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(signal.reason);
        };
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      this.waiters.push(w);
      this.pump();
    });
  }

  observe(status: number, headers: Headers, requestedAt: number): void {
    const now = Date.now() + this.offset;
    const signals = readRateHeaders(headers, Date.now());
    const mode = this.opts.mode;
    if (status !== 429) {
      this.okPending++;
      let hold = 0;
      if (signals.remaining === 0 && signals.resetMs !== undefined) hold = signals.resetMs;
      const next =
        mode.kind === 'auto' && signals.policy && this.state
          ? onPolicy(this.state, signals.policy, now, mode)
          : undefined;
      if (hold > 0 || next)
        this.enqueueWrite(() => (next ? this.cas(next, hold) : this.hold(hold)));
      return;
    }
    const retryAfterMs = signals.retryAfterMs ?? signals.resetMs ?? 1_000;
    // Booked turns were spaced for a rate that proved too high.
    this.turns = [];
    this.holdUntil = Math.max(this.holdUntil, performance.now() + retryAfterMs);
    this.enqueueWrite(async () => {
      await this.hold(retryAfterMs);
      if (mode.kind !== 'auto') return;
      const at = { now, requestedAt: requestedAt + this.offset, retryAfterMs };
      // This process's successes belong in the log the learner reads.
      if (this.okPending > 0) await this.fetch(0);
      for (let tries = 0; tries < 3; tries++) {
        if (!this.state) return;
        const { log, recent } = await this.readLogs();
        const next = onLimited(this.state, { ...at, log, recent }, mode);
        // A long window's hold counts from the 429, as its Retry-After does.
        const hold = next?.holdMs ? next.holdMs - (Date.now() + this.offset - now) : 0;
        if (!next || (await this.cas(next, hold))) return;
        await this.fetch(0);
      }
    });
  }

  /** Stops booking; callers still waiting are rejected. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    for (const w of this.waiters.splice(0)) {
      if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
      w.reject(new Error('pacer stopped'));
    }
  }

  /** Waits for the writes to Redis started so far (tests, shutdown). */
  settled(): Promise<void> {
    return this.updating;
  }

  // Turns ------------------------------------------------------------------

  private pump(): void {
    if (this.stopped) return;
    const now = performance.now();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (now < this.holdUntil) {
      if (this.waiters.length > 0) this.timer = setTimeout(() => this.pump(), this.holdUntil - now);
      return;
    }
    // A turn nobody took within the horizon (its caller aborted, or none came)
    // is a gap the platform saw, not a debt: served late it would go out in a
    // burst with the others and push every replica's schedule back.
    while (this.turns.length > 0 && now - this.turns[0]! > HORIZON_MS) this.turns.shift();
    while (
      this.waiters.length > 0 &&
      this.turns.length > 0 &&
      this.turns[0]! <= now + TOGETHER_MS
    ) {
      // A turn taken late (a busy event loop) goes out late: the turns after
      // it must move as much, or a window would hold it and a full period more.
      // One taken early (TOGETHER_MS) moves nothing.
      const late = now - this.turns.shift()!;
      if (late > LATE_MS) this.late = Math.max(this.late, late - LATE_MS);
      const w = this.waiters.shift()!;
      if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
      w.resolve();
    }
    if (this.waiters.length === 0) return;
    if (this.turns.length > 0) {
      this.timer = setTimeout(() => this.pump(), Math.max(0, this.turns[0]! - now));
    }
    const last = this.turns.at(-1);
    const booked = last === undefined || last - now < HORIZON_MS / 2;
    if (!this.fetching && this.waiters.length > this.turns.length && booked) {
      this.fetching = true;
      this.fetch(this.waiters.length - this.turns.length)
        .catch((err: unknown) => {
          this.opts.logger?.warn({ err }, 'pacer: Redis unavailable; retrying');
          return delay(200);
        })
        .finally(() => {
          this.fetching = false;
          this.pump();
        });
    }
  }

  /** One script call: books up to `want` turns, reports successes, reads the shared state. */
  private async fetch(want: number): Promise<void> {
    const ok = this.okPending;
    this.okPending = 0;
    const late = Math.round(this.late);
    this.late = 0;
    const mode = this.opts.mode;
    const fixed = mode.kind === 'fixed' ? fixedPace(mode.rate) : 0;
    const start = mode.kind === 'auto' ? mode.start : fixed;
    let reply: string[];
    const sentAt = performance.now();
    try {
      reply = (await this.call(
        this.key,
        this.logKey,
        'grant',
        want,
        ok,
        fixed,
        start,
        late,
      )) as string[];
    } catch (err) {
      this.okPending += ok;
      throw err;
    }
    const redisNow = Number(reply[0]);
    this.offset = redisNow - Date.now();
    this.skew = nextSkew(this.skew, { sentAt, receivedAt: performance.now(), redisNow });
    const first = Number(reply[1]);
    const interval = Number(reply[2]);
    const n = Number(reply[3]);
    for (let i = 0; i < n; i++) this.turns.push(first + i * interval - this.skew.skew);
    this.version = String(reply[4]);
    const total = Number(reply[5]);
    this.state = stateOf(reply.slice(6));
    const rate = mode.kind === 'fixed' ? fixed : (this.state?.rate ?? 1_000 / interval);
    if (rate !== this.current) {
      this.current = rate;
      this.opts.onRate?.(rate, mode.kind === 'fixed' ? 'fixed' : (this.state?.source ?? 'start'));
    }
    if (mode.kind === 'auto' && this.state && !this.ticking) {
      if (redisNow - this.state.changedAt >= stepMs(this.state)) {
        this.ticking = true;
        this.enqueueWrite(() => this.tick(redisNow, total).finally(() => (this.ticking = false)));
      }
    }
  }

  /** A learner's step (auto mode); a long window's step reads the success log and may hold. */
  private async tick(now: number, ok: number): Promise<void> {
    const mode = this.opts.mode;
    if (mode.kind !== 'auto' || !this.state) return;
    const log = windowed(this.state) ? (await this.readLogs()).log : undefined;
    const next = onTick(this.state, { now, ok, ...(log && { log }) }, mode);
    if (next) await this.cas(next, next.holdMs ?? 0);
  }

  // Shared state -----------------------------------------------------------

  private enqueueWrite(fn: () => Promise<unknown>): void {
    this.updating = this.updating
      .then(fn)
      .then(() => undefined)
      .catch((err: unknown) => this.opts.logger?.warn({ err }, 'pacer: could not update the rate'));
  }

  private async hold(ms: number): Promise<void> {
    await this.call(this.key, this.logKey, 'set', '-', Math.ceil(ms));
  }

  /** Writes the state if no replica changed it since it was read; true when written. */
  private async cas(next: LearnerState, holdMs: number): Promise<boolean> {
    return this.write(next, holdMs, this.version);
  }

  private async write(next: LearnerState, holdMs: number, version = '-'): Promise<boolean> {
    const fields = STATE_FIELDS.flatMap((f) => [f, String(next[f])]);
    const done = await this.call(
      this.key,
      this.logKey,
      'set',
      version,
      Math.ceil(holdMs),
      ...fields,
    );
    if (Number(done) !== 1) return false;
    this.state = next;
    this.version = String(Number(this.version) + 1);
    if (next.rate !== this.current) {
      this.current = next.rate;
      this.opts.onRate?.(next.rate, next.source);
    }
    return true;
  }

  /** The success log, per second and (`d` fields) per RECENT_SLOT_MS. */
  private async readLogs(): Promise<{ log: SuccessLog; recent: RecentLog }> {
    const flat = (await this.call(this.key, this.logKey, 'log')) as string[];
    const log = new Map<number, number>();
    const recent = new Map<number, number>();
    for (let i = 1; i < flat.length; i += 2) {
      const [at, count] = flat[i]!.split(':').map(Number);
      if (at === undefined || count === undefined) continue;
      (flat[i - 1]!.startsWith('d') ? recent : log).set(at, count);
    }
    return { log, recent };
  }
}

/** The pacer's mode for the config's `platform` settings (PLATFORM_RATE_LIMIT, PLATFORM_RATE_LIMIT_MAX). */
export function pacerModeOf(p: { rateMode: 'auto' | 'fixed'; rateLimit: number }): PacerMode {
  if (p.rateMode === 'fixed') return { kind: 'fixed', rate: p.rateLimit };
  const start = Math.min(DEFAULT_RATE_LIMIT_START, p.rateLimit);
  return { kind: 'auto', start, min: Math.min(1, start), max: p.rateLimit };
}

/** The rate a fixed PLATFORM_RATE_LIMIT is paced at. */
export function fixedPace(limit: number): number {
  return limit * FIXED_MARGIN;
}

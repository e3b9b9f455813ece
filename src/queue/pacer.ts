/**
 * The request pacer: every platform request of every worker replica waits
 * here for its turn (`acquire`), and reports the answer (`observe`).
 *
 * Turns are spaced evenly at the current rate from one
 * "next free turn" time kept in Redis (a hash next to the queue keys,
 * `<prefix>:pacer`), so replicas share the rate and the platform sees one
 * client. The clock is Redis' (TIME in the script): replicas' clocks do not
 * matter. A process books a few turns at once (as many as fit in the next
 * `HORIZON_MS`, or a slow start's shorter `SLOW_START_HORIZON_MS`, and it
 * has callers for), so the cost is one script call per batch, not per
 * request.
 *
 * A 429 sets a shared "not before" time from its Retry-After, counted from
 * when the answer came: no replica sends before it, and a caller that
 * simply retries is held by `acquire`.
 * In `auto` mode the rate itself is learned (src/platform/rate-learner.ts):
 * its state lives in the same hash, so it is shared and survives restarts;
 * successes are logged by the time their request went out, per second
 * (`<prefix>:pacer:log`, a ring of 128 fields) and per 10 ms (a ring of 256
 * for the window a 429 ends: how many it let through), for the learner to
 * tell how much a window let through and, once a window is known to be
 * long, how much room it has each second (a step then reads the log and
 * may hold every turn until the window frees). In `fixed` mode the rate is
 * PLATFORM_RATE_LIMIT less a 3% margin (FIXED_MARGIN). A request that went
 * out, or was answered, later than that margin covers moves the turns a
 * window after it (its echo, src/queue/window-echo.ts, kept beside the
 * schedule in Redis for every replica), so that the platform's window never
 * holds it and a full window of later requests. Turns due within
 * TOGETHER_MS of each other go out together, on one timer.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from '../log.js';
import {
  RECENT_SLOT_MS,
  initialState,
  onLimited,
  onPolicy,
  onTick,
  readRateHeaders,
  roundOf,
  slowStart,
  stepMs,
  windowed,
  type Headers,
  type LearnerSettings,
  type LearnerState,
  type RateSource,
  type RecentLog,
  type SuccessLog,
  type TickAt,
} from '../platform/rate-learner.js';
import { nextSkew, type Skew } from './clock-skew.js';
import type { RedisClient } from '../redis/connection.js';
import {
  HORIZON_MS,
  pacerKey,
  pacerLogKey,
  readPacerState,
  scriptOf,
  SLOW_START_RATE,
  STATE_FIELDS,
  stateOf,
  type PacerScript,
} from './pacer-store.js';
import {
  echoOf,
  FIXED_MARGIN,
  fixedPace,
  mergeEchoes,
  TOGETHER_MS,
  turnsOf,
  type Sent,
} from './window-echo.js';

export { pacerKey, pacerLogKey, readPacerState } from './pacer-store.js';
export { FIXED_MARGIN, fixedPace, TOGETHER_MS } from './window-echo.js';

/** A request's turn, as `acquire` gives it: handed back to `observe` with its answer. */
export interface Ticket {
  /** The turn it was booked at (ms of Redis' clock). */
  turn: number;
  /** When its turn was released (ms, performance.now()). */
  firedAt: number;
}

/** When a request was written out (ms since the epoch), and how long its answer took to begin (ms). */
export interface RequestTiming {
  sentAt: number;
  waitedMs: number;
}

export interface Pacer {
  /**
   * Resolves when this request may be sent; rejects with the signal's reason
   * on abort. A read (`first`) takes the next turn ahead of the writes
   * waiting: a listing's page holds up a whole phase (a plan, a run's
   * start, its verification), a write only its own record.
   */
  acquire(signal?: AbortSignal, first?: boolean): Promise<Ticket>;
  /**
   * The answer of the request sent on `ticket`, with its timing when known:
   * when it was written out (ms since the epoch, its socket took the last
   * byte) and how long after that its answer began (ms).
   */
  observe(
    status: number,
    headers: Record<string, string | string[] | undefined>,
    ticket: Ticket,
    timing?: RequestTiming,
  ): void;
  /** Requests per second now. */
  readonly rate: number;
}

/** The platform's limit as the workers know it (`RedisPacer.limit`). */
export interface KnownLimit {
  /**
   * Requests/s: PLATFORM_RATE_LIMIT, the limit `auto` learned, or
   * PLATFORM_RATE_LIMIT_MAX until it has learned one.
   */
  perSecond: number;
  /** False while `auto` has learned none: `perSecond` is then only the most it may go to. */
  known: boolean;
}

export type PacerMode = { kind: 'fixed'; rate: number } | ({ kind: 'auto' } & LearnerSettings);

/** An answer's usual wait is the shortest of the last this many seconds. */
const WAIT_SPAN_S = 10;
/** An answer is taken as late by the worker's event loop by as much as its timers were in this span before it. */
const LAG_SPAN_MS = 100;

/**
 * After a 429, what the window let through is counted once the answers of
 * the requests before it are in and every replica has reported them at
 * its next booking (a booking is due every HORIZON_MS / 2 while a process
 * has callers): this long, or half the 429's Retry-After when that is
 * less (the hold covers the wait).
 */
const ANSWERS_MS = 250;
/** An echo waits at most this long for the next booking to take it to Redis. */
const ECHO_FLUSH_MS = 20;

export interface PacerOptions {
  redis: RedisClient;
  prefix: string;
  mode: PacerMode;
  logger?: Logger;
  /** Told the rate whenever it changes (a metrics gauge). */
  onRate?: (rate: number, source: RateSource | 'fixed') => void;
}

interface Waiter {
  first: boolean;
  resolve(t: Ticket): void;
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
  /** Booked turns: when each is due (local ms, performance.now()) and its turn (Redis ms). */
  private turns: { due: number; turn: number }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private fetching = false;
  /** Successes not reported yet, by the RECENT_SLOT_MS slot of Redis' clock they went out in. */
  private okPending = new Map<number, number>();
  /** Echoes not reported yet (window-echo.ts). */
  private echoes: { from: number; until: number }[] = [];
  private flushing: NodeJS.Timeout | undefined;
  /** The shortest wait for an answer of each of the last seconds: [second, ms]. */
  private waits: [number, number][] = [];
  /** The first 429 of an episode, waiting to be counted up (auto), and that count. */
  private limited:
    { now: number; requestedAt: number; sentAt: number; retryAfterMs: number } | undefined;
  private counting: Promise<void> = Promise.resolve();
  /** How late this process's timers fired lately: [local ms, ms late]. */
  private lags: [number, number][] = [];
  /** Redis time − local Date.now(), from the last answer. */
  private offset = 0;
  /** Redis time − local performance.now(): where booked turns fall locally. */
  private skew: Skew | undefined;
  private state: LearnerState | undefined;
  private version = '0';
  private current: number;
  private stopped = false;
  private ticking = false;
  /** `start` has run; and a start again, for shared state found gone, is under way. */
  private started = false;
  private restarting = false;
  /** Local ms before which nothing is sent: a 429's Retry-After, before Redis has it. */
  private holdUntil = 0;
  /** The latest `holdUntil` written to Redis. */
  private holdShared = 0;
  private updating: Promise<void> = Promise.resolve();
  private taken = 0;
  private refused = 0;
  private okAll = 0;

  constructor(private readonly opts: PacerOptions) {
    this.call = scriptOf(opts.redis);
    this.key = pacerKey(opts.prefix);
    this.logKey = pacerLogKey(opts.prefix);
    this.current = opts.mode.kind === 'fixed' ? fixedPace(opts.mode.rate) : opts.mode.start;
  }

  get rate(): number {
    return this.current;
  }

  /**
   * The platform's limit as the replicas know it now. The shared state is
   * read again: a process that has sent nothing since it started knows only
   * what was learned before then.
   */
  async limit(): Promise<KnownLimit> {
    const mode = this.opts.mode;
    if (mode.kind === 'fixed') return { perSecond: mode.rate, known: true };
    const st = await readPacerState(this.opts.redis, this.opts.prefix);
    const ceiling = st?.mode === 'auto' ? st.ceiling : 0;
    return ceiling > 0
      ? { perSecond: Math.min(ceiling, mode.max), known: true }
      : { perSecond: mode.max, known: false };
  }

  /** Turns this process has handed to its callers since it started. */
  get turnsTaken(): number {
    return this.taken;
  }

  /** 429s this process has been answered since it started. */
  get throttled(): number {
    return this.refused;
  }

  /**
   * Requests every replica has had answered other than by a 429, as of
   * this process's last booking (each reports its own then): a shared count.
   */
  get answeredAll(): number {
    return this.okAll;
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
    if (mode.kind === 'auto') {
      const fresh = initialState(mode, Date.now() + this.offset, this.state);
      if (!this.state || fresh.rate !== this.state.rate) await this.write(fresh, 0);
    }
    this.started = true;
  }

  acquire(signal?: AbortSignal, first = false): Promise<Ticket> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.stopped) return Promise.reject(new Error('pacer stopped'));
    return new Promise<Ticket>((resolve, reject) => {
      const w: Waiter = { first, resolve, reject, signal };
      if (signal) {
        w.onAbort = () => {
          const i = this.waiters.indexOf(w);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(signal.reason);
        };
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      if (first) {
        // After the reads already waiting, before every write.
        const at = this.waiters.findIndex((x) => !x.first);
        this.waiters.splice(at < 0 ? this.waiters.length : at, 0, w);
      } else this.waiters.push(w);
      this.pump();
    });
  }

  observe(status: number, headers: Headers, ticket: Ticket, timing?: RequestTiming): void {
    if (status === 429) this.refused++;
    const local = performance.now();
    const wall = Date.now();
    const skew = this.skew?.skew ?? this.offset + wall - local;
    const now = local + skew;
    const firedAt = ticket.firedAt + skew;
    // Written out when the wall clock said `timing.sentAt`: on Redis' clock through this
    // process's. A busy event loop writes a request out later than its turn fired, and the
    // platform's window counts it by when it arrives: the log goes by when it went out.
    const sentAt = timing ? timing.sentAt - wall + local + skew : firedAt;
    // When the answer came (wall clock), not when this process got to it: a busy event loop
    // (a burst of 429s) would add its own lag to a 429's wait.
    const answeredWall = timing ? Math.min(wall, timing.sentAt + timing.waitedMs) : wall;
    // A 429's, as of its answer: a Retry-After date is a time, and the wait it leaves is
    // counted from the answer below. A reset after a success holds from now.
    const signals = readRateHeaders(headers, status === 429 ? answeredWall : wall);
    const mode = this.opts.mode;
    if (status !== 429) {
      // Counted by the platform's window, whatever its answer: logged when it went out.
      const slot = Math.floor(sentAt / RECENT_SLOT_MS);
      this.okPending.set(slot, (this.okPending.get(slot) ?? 0) + 1);
      if (timing) {
        if (status >= 200 && status < 300) this.noteWait(timing.waitedMs, local);
        // Later than usual by more than this worker's event loop was late: the platform's part.
        const lateBy = timing.waitedMs - this.usualWait() - this.loopLag(local);
        this.echo({ turn: ticket.turn, firedAt, sentAt, lateBy: Math.max(0, lateBy) });
      }
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
    // The wait counts from the answer, on this process's clock.
    const answered = answeredWall - wall + local;
    if (answered + retryAfterMs > this.holdUntil) {
      this.holdUntil = answered + retryAfterMs;
      this.enqueueWrite(() => this.shareHold());
    }
    if (mode.kind !== 'auto') return;
    // One count for the 429s of an episode (the requests in flight when the
    // window filled): the first to go out is the one the window refused first.
    const at = { now, requestedAt: firedAt, sentAt, retryAfterMs };
    if (this.limited) {
      if (at.sentAt < this.limited.sentAt) this.limited = at;
      return;
    }
    this.limited = at;
    // What the window let through is counted once the requests that went out
    // before it have been answered and logged, by every replica (each
    // reports at its next booking); the hold covers the wait.
    this.counting = delay(Math.min(retryAfterMs / 2, ANSWERS_MS), undefined, { ref: false }).then(
      () =>
        this.enqueueWrite(async () => {
          const first = this.limited;
          this.limited = undefined;
          if (!first || this.stopped) return;
          if (this.okPending.size > 0) await this.fetch(0);
          for (let tries = 0; tries < 3; tries++) {
            if (!this.state) return;
            const { log, recent } = await this.readLogs();
            const next = onLimited(this.state, { ...first, log, recent }, mode);
            // A long window's hold counts from the 429, as its Retry-After does.
            const hold = next?.holdMs ? next.holdMs - (performance.now() + skew - first.now) : 0;
            if (!next || (await this.cas(next, hold))) return;
            await this.fetch(0);
          }
        }),
    );
  }

  /** A request's echo (window-echo.ts), kept for the next booking; undefined while the slack covers it. */
  private echo(r: Sent): void {
    const mode = this.opts.mode;
    const st = this.state;
    // No limit known yet (a slow start): nothing says how close to one the turns go.
    const share =
      mode.kind === 'fixed'
        ? 1 / FIXED_MARGIN
        : st && st.ceiling > 0 && st.rate > 0
          ? st.ceiling / st.rate
          : Infinity;
    const e = echoOf(r, share);
    if (!e) return;
    this.echoes.push(e);
    // The turns it holds are a window away: booked by any replica from now on.
    if (!this.flushing && !this.fetching) {
      this.flushing = setTimeout(() => {
        this.flushing = undefined;
        if (this.echoes.length === 0 || this.fetching || this.stopped) return;
        this.fetching = true;
        this.fetch(0)
          .catch((err: unknown) => this.opts.logger?.warn({ err }, 'pacer: Redis unavailable'))
          .finally(() => {
            this.fetching = false;
            this.pump();
          });
      }, ECHO_FLUSH_MS);
    }
  }

  /** The usual wait for an answer lately (Infinity before any). */
  private usualWait(): number {
    let min = Infinity;
    for (const [, ms] of this.waits) min = Math.min(min, ms);
    return min;
  }

  private noteWait(ms: number, local: number): void {
    const sec = Math.floor(local / 1_000);
    const last = this.waits.at(-1);
    if (last && last[0] === sec) last[1] = Math.min(last[1], ms);
    else this.waits.push([sec, ms]);
    while (this.waits[0]![0] <= sec - WAIT_SPAN_S) this.waits.shift();
  }

  /** How late this process's event loop was lately, as its timers say. */
  private loopLag(local: number): number {
    while (this.lags.length > 0 && this.lags[0]![0] < local - LAG_SPAN_MS) this.lags.shift();
    let max = 0;
    for (const [, ms] of this.lags) max = Math.max(max, ms);
    return max;
  }

  /** Stops booking; callers still waiting are rejected. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.flushing) clearTimeout(this.flushing);
    for (const w of this.waiters.splice(0)) {
      if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
      w.reject(new Error('pacer stopped'));
    }
  }

  /** Waits for the writes to Redis started so far, a 429's count included (tests, shutdown). */
  async settled(): Promise<void> {
    await this.counting;
    await this.updating;
  }

  // Turns ------------------------------------------------------------------

  private pump(timerDue?: number): void {
    if (this.stopped) return;
    const now = performance.now();
    if (timerDue !== undefined && now > timerDue) {
      this.lags.push([now, now - timerDue]);
      if (this.lags.length > 64) this.lags.shift();
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (now < this.holdUntil) {
      const due = this.holdUntil;
      if (this.waiters.length > 0) this.timer = setTimeout(() => this.pump(due), due - now);
      return;
    }
    // A turn nobody took within the horizon (its caller aborted, or none came)
    // is a gap the platform saw, not a debt: served late it would go out in a
    // burst with the others and push every replica's schedule back.
    while (this.turns.length > 0 && now - this.turns[0]!.due > HORIZON_MS) this.turns.shift();
    const skew = this.skew?.skew ?? 0;
    while (
      this.waiters.length > 0 &&
      this.turns.length > 0 &&
      this.turns[0]!.due <= now + TOGETHER_MS
    ) {
      const { due, turn } = this.turns.shift()!;
      // A turn taken late (a busy event loop) goes out late: the turns a
      // window later wait as much (its echo), or the window would hold it
      // and a full window of later ones.
      if (now > due) this.echo({ turn, firedAt: now + skew });
      const w = this.waiters.shift()!;
      if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
      this.taken++;
      w.resolve({ turn, firedAt: now });
    }
    if (this.waiters.length === 0) return;
    if (this.turns.length > 0) {
      const due = Math.max(now, this.turns[0]!.due);
      this.timer = setTimeout(() => this.pump(due), due - now);
    }
    const last = this.turns.at(-1)?.due;
    const booked = last === undefined || last - now < this.horizon() / 2;
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

  /** One script call: books up to `want` turns, reports successes and echoes, reads the shared state. */
  private async fetch(want: number): Promise<void> {
    const oks = this.okPending;
    this.okPending = new Map();
    const echoes = mergeEchoes(this.echoes);
    this.echoes = [];
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
        [...oks].map(([slot, n]) => `${slot}:${n}`).join(','),
        fixed,
        start,
        echoes.map((e) => `${e.from}:${e.until}`).join(','),
        this.horizon(),
      )) as string[];
    } catch (err) {
      for (const [slot, n] of oks) this.okPending.set(slot, (this.okPending.get(slot) ?? 0) + n);
      this.echoes.push(...echoes);
      throw err;
    }
    const redisNow = Number(reply[0]);
    this.offset = redisNow - Date.now();
    this.skew = nextSkew(this.skew, { sentAt, receivedAt: performance.now(), redisNow });
    const first = Number(reply[1]);
    const interval = Number(reply[2]);
    const n = Number(reply[3]);
    this.version = String(reply[4]);
    const total = Number(reply[5]);
    this.okAll = total;
    const booked = Number(reply[6]);
    const fields = 7 + STATE_FIELDS.length;
    this.state = stateOf(reply.slice(7, fields));
    // The shared state gone (a Redis that kept nothing, its key deleted): start again from
    // the slow start, as a first worker does; without it the learner would take no step.
    if (mode.kind === 'auto' && !this.state && this.started && !this.restarting) {
      this.restarting = true;
      this.enqueueWrite(() => this.start().finally(() => (this.restarting = false)));
    }
    const moves = new Map<number, number>();
    for (let i = fields; i + 1 < reply.length; i += 2)
      moves.set(Number(reply[i]), Number(reply[i + 1]));
    for (const turn of turnsOf(first, interval, n, moves))
      this.turns.push({ due: turn - this.skew.skew, turn });
    const rate = mode.kind === 'fixed' ? fixed : (this.state?.rate ?? 1_000 / interval);
    if (rate !== this.current) {
      this.current = rate;
      this.opts.onRate?.(rate, mode.kind === 'fixed' ? 'fixed' : (this.state?.source ?? 'start'));
    }
    if (mode.kind === 'auto' && this.state && !this.ticking) {
      const roundMs = this.round();
      if (redisNow - this.state.changedAt >= stepMs(this.state, roundMs)) {
        this.ticking = true;
        const at = { now: redisNow, ok: total, booked, roundMs, starved: want > n };
        this.enqueueWrite(() => this.tick(at).finally(() => (this.ticking = false)));
      }
    }
  }

  /** How far ahead turns are booked: half a round in a slow start, whose rate doubles every round. */
  private horizon(): number {
    const st = this.opts.mode.kind === 'auto' ? this.state : undefined;
    return st && slowStart(st) ? this.round() / 2 : HORIZON_MS;
  }

  /** A slow start's round: the platform's usual answer time lately, within bounds. */
  private round(): number {
    return roundOf(this.usualWait());
  }

  /** A learner's step (auto mode); a long window's step reads the success log and may hold. */
  private async tick(at: Omit<TickAt, 'log'>): Promise<void> {
    const mode = this.opts.mode;
    if (mode.kind !== 'auto' || !this.state) return;
    const log = windowed(this.state) ? (await this.readLogs()).log : undefined;
    const next = onTick(this.state, { ...at, ...(log && { log }) }, mode);
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

  /** Gives every replica this process's hold (`holdUntil`) unless it has it already. */
  private async shareHold(): Promise<void> {
    const until = this.holdUntil;
    const ms = until - performance.now();
    if (until <= this.holdShared || ms <= 0) return;
    await this.hold(ms);
    this.holdShared = until;
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

  /** The success log, per second and (`d` fields) per RECENT_SLOT_MS, by when requests went out. */
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
  const start = Math.min(SLOW_START_RATE, p.rateLimit);
  return { kind: 'auto', start, min: Math.min(1, start), max: p.rateLimit };
}

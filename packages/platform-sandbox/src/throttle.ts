/**
 * The sandbox's rate limits, keyed by API key as a DRF service throttles.
 *
 * - `sliding` (the default) is DRF's SimpleRateThrottle: a log of the times
 *   of the requests let through in the last period, per key. A request is
 *   refused while the log holds N; the wait is the time until the oldest
 *   entry leaves the window, rounded up to whole seconds (DRF's `Throttled`
 *   rounds up too). Refused requests are not logged.
 * - `fixed`: N per period in windows aligned on the clock, the counter reset
 *   at each window's start: up to 2N can pass across a window's edge.
 * - `bucket`: a token bucket holding one period's worth, refilled
 *   continuously (the sandbox's only mode before the sliding log).
 */

/** A rate as DRF writes it: `num` requests per `periodMs`. */
export interface Rate {
  num: number;
  periodMs: number;
}

export const RATE_LIMIT_MODES = ['sliding', 'fixed', 'bucket'] as const;
export type RateLimitMode = (typeof RATE_LIMIT_MODES)[number];

const PERIODS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * `100/s`, `3000/m`, `10/hour`, `5/day` (DRF reads only the period's first
 * letter), or a bare number of requests per second: a whole number N is
 * N per second, a fraction r is ceil(r) per ceil(r)/r seconds (0.2 → 1 per 5 s).
 * Undefined for anything else; 0 means no limit (undefined too).
 */
export function parseRate(value: number | string): Rate | undefined {
  if (typeof value === 'number') return perSecond(value);
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return perSecond(Number(text));
  const m = /^(\d+)\s*\/\s*([smhd])[a-z]*$/i.exec(text);
  if (!m) return undefined;
  const num = Number(m[1]);
  if (num <= 0) return undefined;
  return { num, periodMs: PERIODS[m[2]!.toLowerCase()]! };
}

function perSecond(rps: number): Rate | undefined {
  if (!Number.isFinite(rps) || rps <= 0) return undefined;
  if (Number.isInteger(rps)) return { num: rps, periodMs: 1_000 };
  const num = Math.ceil(rps);
  return { num, periodMs: Math.round((num / rps) * 1_000) };
}

/** Whether `value` is a rate `parseRate` reads (0 included: no limit). */
export function isRate(value: number | string): boolean {
  if (value === 0 || (typeof value === 'string' && /^\s*0+(\.0+)?\s*$/.test(value))) return true;
  return parseRate(value) !== undefined;
}

/** One key's limiter: ok, or the milliseconds until a request would pass. */
interface Limiter {
  take(now: number): number | undefined;
}

/** DRF's sliding log: times of the requests let through, oldest first. */
class SlidingLog implements Limiter {
  private readonly times: number[] = [];
  private head = 0;
  constructor(private readonly rate: Rate) {}

  take(now: number): number | undefined {
    const edge = now - this.rate.periodMs;
    while (this.head < this.times.length && this.times[this.head]! <= edge) this.head++;
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times.splice(0, this.head);
      this.head = 0;
    }
    if (this.times.length - this.head >= this.rate.num) {
      return this.times[this.head]! + this.rate.periodMs - now;
    }
    this.times.push(now);
    return undefined;
  }
}

class FixedWindow implements Limiter {
  private start = -1;
  private count = 0;
  constructor(private readonly rate: Rate) {}

  take(now: number): number | undefined {
    const start = Math.floor(now / this.rate.periodMs) * this.rate.periodMs;
    if (start !== this.start) {
      this.start = start;
      this.count = 0;
    }
    if (this.count >= this.rate.num) return start + this.rate.periodMs - now;
    this.count++;
    return undefined;
  }
}

class TokenBucket implements Limiter {
  private tokens: number;
  private last = -1;
  constructor(private readonly rate: Rate) {
    this.tokens = rate.num;
  }

  take(now: number): number | undefined {
    const perMs = this.rate.num / this.rate.periodMs;
    if (this.last >= 0)
      this.tokens = Math.min(this.rate.num, this.tokens + (now - this.last) * perMs);
    this.last = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return undefined;
    }
    return (1 - this.tokens) / perMs;
  }
}

/** The limit of every key: a limiter per key, made on the key's first request. */
export class Throttle {
  private readonly keys = new Map<string, Limiter>();

  constructor(
    readonly rate: Rate,
    readonly mode: RateLimitMode,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Undefined when the request may pass (and is counted), else whole seconds to wait (≥ 1). */
  check(key: string): number | undefined {
    let limiter = this.keys.get(key);
    if (!limiter) {
      limiter = this.make();
      this.keys.set(key, limiter);
    }
    const waitMs = limiter.take(this.now());
    return waitMs === undefined ? undefined : Math.max(1, Math.ceil(waitMs / 1_000));
  }

  private make(): Limiter {
    if (this.mode === 'fixed') return new FixedWindow(this.rate);
    if (this.mode === 'bucket') return new TokenBucket(this.rate);
    return new SlidingLog(this.rate);
  }
}

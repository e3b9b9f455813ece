/**
 * The fault knobs: a rate limit per API key (throttle.ts), latency, 503s and
 * connections cut after a commit. Decisions come from a seeded PRNG so a test that sets
 * `seed` sees the same faults on every run.
 */
import type { SandboxFaults } from './options.js';
import { parseRate, Throttle, type RateLimitMode } from './throttle.js';

/** mulberry32: tiny, fast, good enough to decide faults. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Faults {
  private settings: Required<Omit<SandboxFaults, 'rateLimitMode'>> = {
    rateLimit: 0,
    latencyMs: 0,
    faultRate: 0,
    dropAfterCommit: 0,
  };
  private mode: RateLimitMode = 'sliding';
  private throttler: Throttle | undefined;

  constructor(
    initial: SandboxFaults,
    private readonly random: () => number,
  ) {
    this.set(initial);
  }

  /** Changes the knobs given; a key present with `undefined` turns that knob off. */
  set(partial: SandboxFaults): void {
    for (const key of ['latencyMs', 'faultRate', 'dropAfterCommit'] as const) {
      if (key in partial) this.settings[key] = partial[key] ?? 0;
    }
    if ('rateLimit' in partial) this.settings.rateLimit = partial.rateLimit ?? 0;
    if ('rateLimitMode' in partial) this.mode = partial.rateLimitMode ?? 'sliding';
    if ('rateLimit' in partial || 'rateLimitMode' in partial) {
      // A new limit starts with empty logs, as a restarted gateway would.
      const rate = parseRate(this.settings.rateLimit);
      this.throttler = rate ? new Throttle(rate, this.mode) : undefined;
    }
  }

  get latencyMs(): number {
    return this.settings.latencyMs;
  }

  /** Whole seconds to wait (at least 1) when `key` is over its limit, else undefined. */
  throttle(key: string): number | undefined {
    return this.throttler?.check(key);
  }

  /** Draws only when the knob is on, so one knob does not shift another's sequence. */
  serviceUnavailable(): boolean {
    return this.settings.faultRate > 0 && this.random() < this.settings.faultRate;
  }

  dropAfterCommit(): boolean {
    return this.settings.dropAfterCommit > 0 && this.random() < this.settings.dropAfterCommit;
  }
}

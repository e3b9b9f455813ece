/**
 * The fault knobs: a token-bucket rate limit, latency, 503s and connections
 * cut after a commit. Decisions come from a seeded PRNG so a test that sets
 * `seed` sees the same faults on every run.
 */
import type { SandboxFaults } from './options.js';

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

/** Token bucket holding one second of requests, refilled continuously. */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    readonly rate: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = Math.max(1, rate);
    this.last = this.now();
  }

  /** Takes a token, or answers how many ms until one is available. */
  take(): { ok: true } | { ok: false; waitMs: number } {
    const t = this.now();
    const capacity = Math.max(1, this.rate);
    this.tokens = Math.min(capacity, this.tokens + ((t - this.last) / 1000) * this.rate);
    this.last = t;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, waitMs: ((1 - this.tokens) / this.rate) * 1000 };
  }
}

export class Faults {
  private settings: Required<SandboxFaults> = {
    rateLimit: 0,
    latencyMs: 0,
    faultRate: 0,
    dropAfterCommit: 0,
  };
  private bucket: TokenBucket | undefined;

  constructor(
    initial: SandboxFaults,
    private readonly random: () => number,
  ) {
    this.set(initial);
  }

  /** Changes the knobs given; a key present with `undefined` turns that knob off. */
  set(partial: SandboxFaults): void {
    for (const key of ['rateLimit', 'latencyMs', 'faultRate', 'dropAfterCommit'] as const) {
      if (key in partial) this.settings[key] = partial[key] ?? 0;
    }
    if ('rateLimit' in partial) {
      this.bucket =
        this.settings.rateLimit > 0 ? new TokenBucket(this.settings.rateLimit) : undefined;
    }
  }

  get latencyMs(): number {
    return this.settings.latencyMs;
  }

  /** Whole seconds to wait when the bucket is empty (at least 1), else undefined. */
  throttle(): number | undefined {
    if (!this.bucket) return undefined;
    const r = this.bucket.take();
    return r.ok ? undefined : Math.max(1, Math.ceil(r.waitMs / 1000));
  }

  /** Draws only when the knob is on, so one knob does not shift another's sequence. */
  serviceUnavailable(): boolean {
    return this.settings.faultRate > 0 && this.random() < this.settings.faultRate;
  }

  dropAfterCommit(): boolean {
    return this.settings.dropAfterCommit > 0 && this.random() < this.settings.dropAfterCommit;
  }
}

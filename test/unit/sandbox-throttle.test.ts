/**
 * The sandbox's throttle on a clock of our own: DRF's sliding log, the fixed
 * window it replaced as the default, and the token bucket; rates as DRF writes them.
 */
import { describe, expect, it } from 'vitest';
import { parseRate } from '../../packages/platform-sandbox/src/throttle.js';
import { Throttle, type RateLimitMode } from '../../packages/platform-sandbox/src/throttle.js';

function clocked(rate: string, mode: RateLimitMode = 'sliding') {
  let now = 1_000_000;
  const t = new Throttle(parseRate(rate)!, mode, () => now);
  return {
    at: (ms: number) => (now = 1_000_000 + ms),
    check: (key = 'k') => t.check(key),
  };
}

describe('parseRate', () => {
  it('reads N/period as DRF does, and a bare number per second', () => {
    expect(parseRate('100/s')).toEqual({ num: 100, periodMs: 1_000 });
    expect(parseRate('3000/m')).toEqual({ num: 3000, periodMs: 60_000 });
    expect(parseRate('3000/min')).toEqual({ num: 3000, periodMs: 60_000 });
    expect(parseRate('10/hour')).toEqual({ num: 10, periodMs: 3_600_000 });
    expect(parseRate('5/d')).toEqual({ num: 5, periodMs: 86_400_000 });
    expect(parseRate('40')).toEqual({ num: 40, periodMs: 1_000 });
    expect(parseRate(40)).toEqual({ num: 40, periodMs: 1_000 });
    expect(parseRate(2.5)).toEqual({ num: 3, periodMs: 1_200 });
    expect(parseRate(0.2)).toEqual({ num: 1, periodMs: 5_000 });
  });

  it('refuses what is not a rate, and 0 is no limit', () => {
    for (const bad of ['', 'fast', '10/x', '/s', '-1/s', '1.5/s', 'NaN']) {
      expect(parseRate(bad), bad).toBeUndefined();
    }
    expect(parseRate(0)).toBeUndefined();
    expect(parseRate('0/s')).toBeUndefined();
  });
});

describe('sliding log (DRF)', () => {
  it('lets N through in any period and computes the wait from the oldest request', () => {
    const t = clocked('3/s');
    t.at(0);
    expect(t.check()).toBeUndefined();
    t.at(400);
    expect(t.check()).toBeUndefined();
    t.at(900);
    expect(t.check()).toBeUndefined();
    // Full: the oldest (t=0) leaves at 1000; 100 ms → 1 s, rounded up.
    t.at(900);
    expect(t.check()).toBe(1);
    // No seam: at 1000 the window is (0, 1000], the oldest just left, one slot.
    t.at(1_000);
    expect(t.check()).toBeUndefined();
    expect(t.check()).toBe(1);
    // A refused request is not logged: at 1400 the t=400 entry leaves.
    t.at(1_400);
    expect(t.check()).toBeUndefined();
  });

  it('never admits more than N in any window of the period (fixed would admit 2N at a seam)', () => {
    for (const [mode, most] of [
      ['sliding', 10],
      ['fixed', 20],
    ] as const) {
      const t = clocked('10/s', mode);
      const passed: number[] = [];
      // Requests every 5 ms from 500 ms to 1500 ms: a fixed window resets at 1000.
      for (let ms = 500; ms < 1_500; ms += 5) {
        t.at(ms);
        if (t.check() === undefined) passed.push(ms);
      }
      let worst = 0;
      for (const start of passed)
        worst = Math.max(worst, passed.filter((p) => p >= start && p < start + 1_000).length);
      expect(worst, mode).toBe(most);
    }
  });

  it('a per-minute limit waits out the minute, in whole seconds', () => {
    const t = clocked('3000/m');
    for (let i = 0; i < 3000; i++) {
      t.at(i * 10);
      expect(t.check()).toBeUndefined();
    }
    // At 30 s the log is full; its oldest (t=0) leaves at 60 s.
    t.at(30_000);
    expect(t.check()).toBe(30);
    t.at(59_999.5);
    expect(t.check()).toBe(1);
    t.at(60_000);
    expect(t.check()).toBeUndefined();
  });

  it('keeps one log per key', () => {
    const t = clocked('1/s');
    t.at(0);
    expect(t.check('a')).toBeUndefined();
    expect(t.check('a')).toBe(1);
    expect(t.check('b')).toBeUndefined();
  });
});

describe('token bucket', () => {
  it('holds one period of requests, refilled continuously', () => {
    const t = clocked('2/s', 'bucket');
    t.at(0);
    expect(t.check()).toBeUndefined();
    expect(t.check()).toBeUndefined();
    expect(t.check()).toBe(1);
    t.at(500);
    expect(t.check()).toBeUndefined();
    expect(t.check()).toBe(1);
  });
});

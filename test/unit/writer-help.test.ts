import { describe, expect, it } from 'vitest';
import {
  answersHelp,
  BEHIND_MS,
  BEHIND_SHARE,
  callsForHelp,
  SPARE_CORES,
  isBehind,
  type PaceSample,
} from '../../src/queue/writer-help.js';

/**
 * Samples a second apart from t = 0 at a rate of 100/s, taking turns at the
 * rates given a second (the first sample takes none), writes waiting.
 */
function taking(perSecond: number[], over: Partial<PaceSample>[] = []): PaceSample[] {
  let taken = 0;
  return [0, ...perSecond].map((n, i) => {
    taken += n;
    return { at: 1_000 * i, waiting: 5, taken, rate: 100, throttled: 0, ...over[i] };
  });
}

const slow = [80, 80, 80, 80, 80];

describe('writer help', () => {
  it('holds the figures the module header states', () => {
    expect([BEHIND_MS, BEHIND_SHARE, SPARE_CORES]).toEqual([5_000, 0.9, 0.5]);
  });

  it('is behind after five seconds each under 90 of 100 turns, writes waiting', () => {
    expect(isBehind(taking(slow))).toBe(true);
    expect(isBehind(taking([89.9, 89.9, 89.9, 89.9, 89.9]))).toBe(true);
    expect(isBehind(taking([90, 90, 90, 90, 90]))).toBe(false);
    expect(isBehind(taking([100, 100, 100, 100, 100]))).toBe(false);
  });

  it('is not behind before it has five seconds of samples', () => {
    expect(isBehind([])).toBe(false);
    expect(isBehind(taking([]))).toBe(false);
    expect(isBehind(taking([0, 0, 0, 0]))).toBe(false);
    const [a] = taking([]);
    expect(isBehind([a!, { ...a!, at: 4_999 }])).toBe(false);
    expect(isBehind([a!, { ...a!, at: 5_000 }])).toBe(true);
  });

  it('is not behind when one second of the five kept its pace: a process warming up', () => {
    // A cold writer's first seconds, then its pace: 5 s at 0.74 of it on average.
    expect(isBehind(taking([40, 60, 80, 95, 95]))).toBe(false);
    expect(isBehind(taking([40, 60, 80, 89, 89]))).toBe(true);
    expect(isBehind(taking([95, 40, 40, 40, 40]))).toBe(false);
    expect(isBehind(taking([40, 40, 40, 40, 95]))).toBe(false);
  });

  it('counts from the newest sample at least five seconds old', () => {
    // A second at its pace long ago is forgotten.
    expect(isBehind(taking([95, ...slow]))).toBe(true);
    expect(isBehind(taking([95, 95, ...slow]))).toBe(true);
  });

  it('measures each second against the lower of its two rates', () => {
    // 85 a second; the rate falls to 90 at the third sample: 0.9 × 90 = 81, kept.
    expect(isBehind(taking([85, 85, 85, 85, 85], [{}, {}, { rate: 90 }]))).toBe(false);
    expect(isBehind(taking([85, 85, 85, 85, 85], [{}, {}, {}, {}, {}, { rate: 90 }]))).toBe(false);
    expect(isBehind(taking([85, 85, 85, 85, 85]))).toBe(true);
    // Late ticks: 1.5 s apart, 127.5 turns each (85/s) against 100/s.
    const late = taking(slow).map((s, i) => ({ ...s, at: 1_500 * i, taken: 127.5 * i }));
    expect(isBehind(late)).toBe(true);
  });

  it('is not behind while the queue was empty at any sample of the span', () => {
    for (const i of [0, 1, 3, 5]) {
      const over = Array.from({ length: 6 }, (_, j) => (j === i ? { waiting: 0 } : {}));
      expect(isBehind(taking(slow, over)), `empty at sample ${i}`).toBe(false);
    }
    // A sample older than the span does not count.
    expect(isBehind(taking([80, ...slow], [{ waiting: 0 }]))).toBe(true);
  });

  it('is not behind when a 429 came in the span: a Retry-After holds every process', () => {
    const withA429 = (at: number) =>
      taking(slow).map((s, i) => ({ ...s, throttled: i < at ? 2 : 3 }));
    expect(isBehind(withA429(5))).toBe(false);
    expect(isBehind(withA429(1))).toBe(false);
    const before = taking([80, ...slow]).map((s, i) => ({ ...s, throttled: i === 0 ? 1 : 2 }));
    expect(isBehind(before)).toBe(true);
  });

  it('calls for help when behind, and keeps calling while writes wait', () => {
    expect(callsForHelp(taking(slow), false)).toBe(true);
    expect(callsForHelp(taking([100, 100, 100, 100, 100]), false)).toBe(false);
    expect(callsForHelp(taking([100]), true)).toBe(true);
    expect(
      callsForHelp(taking([100, 100, 100, 100, 100], [{}, {}, {}, {}, {}, { waiting: 0 }]), true),
    ).toBe(false);
    expect(callsForHelp([], true)).toBe(false);
  });

  it('answers a call with half a core idle, or when it helps already; never uncalled', () => {
    expect(answersHelp(true, false, 0.5)).toBe(true);
    expect(answersHelp(true, false, 0.49)).toBe(false);
    expect(answersHelp(true, true, 0)).toBe(true);
    expect(answersHelp(false, true, 2)).toBe(false);
    expect(answersHelp(false, false, 2)).toBe(false);
  });
});

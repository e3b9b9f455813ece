import { describe, expect, it } from 'vitest';
import { median } from '../../bench/lib/measure.js';
import { totalsOf, writePhase, type Sample } from '../../bench/lib/meter.js';

const sample = (t: number, writes: number, rateLimited = 0): Sample => ({
  t,
  writes,
  rateLimited,
  listing: 0,
  requests: writes + rateLimited,
});

describe('writePhase', () => {
  it('measures the steady rate between 10% and 90% of the writes, leaving ramp and tail out', () => {
    // 1 s idle, 10 s at 100 writes/s, then a slow tail of 100 writes over 5 s.
    const samples: Sample[] = [sample(0, 0), sample(1000, 0)];
    for (let s = 1; s <= 10; s++) samples.push(sample(1000 + s * 1000, s * 100));
    samples.push(sample(16_000, 1100));
    const p = writePhase(samples);
    expect(p.writes).toBe(1100);
    // 10% = 110 writes (t = 2.1 s), 90% = 990 writes (t = 10.9 s): 880 writes in 8.8 s.
    expect(p.steadyRate).toBeCloseTo(100, 6);
    expect(p.overallRate).toBeLessThan(p.steadyRate);
  });

  it('counts the 429s of the recording only', () => {
    const p = writePhase([sample(0, 50, 7), sample(1000, 150, 9), sample(2000, 250, 12)]);
    expect(p.writes).toBe(200);
    expect(p.rateLimited).toBe(5);
    expect(p.steadyRate).toBeCloseTo(100, 6);
  });
});

describe('totalsOf', () => {
  it('counts successful writes, 429s of any method and listing pages apart', () => {
    const t = totalsOf([
      { method: 'POST', route: '/companies', status: 201, count: 10 },
      { method: 'PUT', route: '/companies/{id}', status: 200, count: 4 },
      { method: 'POST', route: '/companies', status: 429, count: 3 },
      { method: 'POST', route: '/companies', status: 400, count: 2 },
      { method: 'GET', route: '/companies', status: 200, count: 5 },
      { method: 'GET', route: '/companies', status: 429, count: 1 },
      { method: 'GET', route: '/companies/{id}', status: 200, count: 6 },
    ]);
    expect(t).toEqual({ writes: 14, rateLimited: 4, listing: 6, requests: 31 });
  });
});

describe('median', () => {
  it('takes the middle value, or the mean of the two middle ones', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});

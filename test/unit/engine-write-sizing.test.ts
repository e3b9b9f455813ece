/**
 * What a run keeps waiting in the write queue: its bound once the limit is
 * known; while `auto` has learned none, two polls of writes at the most it
 * may go to, and a page at least, so that it soon cuts its chunks again by
 * the limit learned.
 */
import { describe, expect, it } from 'vitest';
import { chunkLines, waitingBound } from '../../src/engine/write-sizing.js';

const settings = { maxWaitingWrites: 5_000, pollMs: 500, writeChunk: 50 };

describe('waitingBound', () => {
  it('is maxWaitingWrites once the limit is known, whatever it is', () => {
    for (const perSecond of [1, 20, 200, 2_000, 100_000])
      expect(waitingBound(settings, { perSecond, known: true })).toBe(5_000);
  });

  it('while `auto` has learned no limit, is two polls at its most, a page (500) at least', () => {
    // The default PLATFORM_RATE_LIMIT_MAX, 200/s: 200 in two polls of 500 ms, below a page.
    expect(waitingBound(settings, { perSecond: 200, known: false })).toBe(500);
    // 2,000/s: 2,000 in two polls; 3,000/s with polls of 1 s: 6,000, held to maxWaitingWrites.
    expect(waitingBound(settings, { perSecond: 2_000, known: false })).toBe(2_000);
    expect(waitingBound({ ...settings, pollMs: 1_000 }, { perSecond: 3_000, known: false })).toBe(
      5_000,
    );
    // A bound set lower than a page stays.
    expect(
      waitingBound({ ...settings, maxWaitingWrites: 50 }, { perSecond: 200, known: false }),
    ).toBe(50);
  });
});

describe('chunkLines', () => {
  it('is a quarter second of writes at the limit, known or not, writeChunk at most', () => {
    expect(chunkLines(settings, { perSecond: 20, known: true })).toBe(5);
    expect(chunkLines(settings, { perSecond: 200, known: false })).toBe(50);
    expect(chunkLines(settings, { perSecond: 100, known: true })).toBe(25);
  });
});

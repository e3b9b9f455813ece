/**
 * The pacer's estimate of Redis' clock against the local one: the midpoint
 * of a call's round trip, the shortest round trip kept until it ages.
 */
import { describe, expect, it } from 'vitest';
import { nextSkew, SKEW_AGEING_MS_PER_S } from '../../src/queue/clock-skew.js';

// Redis' clock is 1,000,000 ms ahead of the local one; hand-computed cases.
describe('nextSkew', () => {
  it('places Redis time at the midpoint of the round trip', () => {
    // Sent at 100, back at 104: Redis read 1,000,102 at local 102.
    expect(nextSkew(undefined, { sentAt: 100, receivedAt: 104, redisNow: 1_000_102 })).toEqual({
      skew: 1_000_000,
      rtt: 4,
      at: 104,
    });
  });

  it('keeps the estimate of a shorter round trip over a reply that waited in a busy loop', () => {
    const kept = { skew: 1_000_000, rtt: 2, at: 1_000 };
    // The script ran at local 1,101 (Redis 1,001,101), its reply was handled 30 ms late.
    const slow = { sentAt: 1_100, receivedAt: 1_132, redisNow: 1_001_101 };
    expect(nextSkew(kept, slow)).toBe(kept);
    const quick = { sentAt: 1_200, receivedAt: 1_201, redisNow: 1_001_200.5 };
    expect(nextSkew(kept, quick)).toEqual({ skew: 1_000_000, rtt: 1, at: 1_201 });
  });

  it('lets a kept estimate age, so a slower one replaces it in time', () => {
    const kept = { skew: 1_000_000, rtt: 2, at: 5_000 };
    // A 12 ms round trip ending `ms` after the kept one's, Redis read at its midpoint + 1.
    const after = (ms: number) => ({
      sentAt: 5_000 + ms - 12,
      receivedAt: 5_000 + ms,
      redisNow: 1_000_000 + 5_000 + ms - 6 + 1,
    });
    // Worse than 2 ms until 10 s of ageing make up the difference; as good then, and newer.
    const even = 10_000 / SKEW_AGEING_MS_PER_S;
    expect(nextSkew(kept, after(9_000))).toBe(kept);
    expect(nextSkew(kept, after(even - 1))).toBe(kept);
    expect(nextSkew(kept, after(even))).toEqual({ skew: 1_000_001, rtt: 12, at: 5_000 + even });
  });
});

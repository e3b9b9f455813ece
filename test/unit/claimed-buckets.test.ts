/**
 * The claim buckets a run's pass wrote to in this process: marks per run,
 * never unmarked, handed over once by `take`, and at most a bounded number
 * of runs remembered (a forgotten run is released by naming every bucket).
 */
import { describe, expect, it } from 'vitest';
import { ClaimedBuckets } from '../../src/state/claimed-buckets.js';

describe('ClaimedBuckets', () => {
  it('hands over each run its own marked buckets, ascending and once', () => {
    const c = new ClaimedBuckets(16_384);
    c.mark('a', [16_383, 0, 7, 8]);
    c.mark('b', [5]);
    c.mark('a', [7, 9, 15]);
    expect(c.take('a')).toEqual([0, 7, 8, 9, 15, 16_383]);
    expect(c.take('b')).toEqual([5]);
    expect(c.take('a')).toBeUndefined();
  });

  it('answers undefined for a run it has no marks of, and an empty list for a run marked with none', () => {
    const c = new ClaimedBuckets(64);
    expect(c.take('never')).toBeUndefined();
    c.mark('empty', []);
    expect(c.take('empty')).toEqual([]);
  });

  it('forgets the run marked first once more runs than it keeps are marked', () => {
    const c = new ClaimedBuckets(64, 3);
    for (const run of ['r1', 'r2', 'r3']) c.mark(run, [1]);
    // A run marked again is not made younger: r1 is still the oldest.
    c.mark('r1', [2]);
    c.mark('r4', [3]);
    expect(c.take('r1')).toBeUndefined();
    expect(c.take('r2')).toEqual([1]);
    expect(c.take('r4')).toEqual([3]);
  });
});

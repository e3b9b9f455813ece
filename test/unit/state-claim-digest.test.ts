import { describe, expect, it } from 'vitest';
import { claimNames } from '../../src/state/claim-digest.js';
import { CLAIM_BUCKETS } from '../../src/state/keys.js';

describe('claim names of identity keys', () => {
  it('are stable, short ASCII fields in a bucket within range', () => {
    const a = claimNames(['x:hubspot:company:5120000000', 'c:5120000000']);
    const b = claimNames(['x:hubspot:company:5120000000', 'c:5120000000']);
    expect(a).toEqual(b);
    for (const f of a.fields) {
      expect(f).toHaveLength(10);
      expect([...f].every((ch) => ch.charCodeAt(0) < 128)).toBe(true);
    }
    for (const bucket of a.buckets) {
      expect(bucket).toBeGreaterThanOrEqual(0);
      expect(bucket).toBeLessThan(CLAIM_BUCKETS);
    }
  });

  it('never give two of 300,000 similar keys the same bucket and field', () => {
    const keys = Array.from({ length: 100_000 }, (_, n) => [
      `x:hubspot:company:${5_120_000_000 + n}`,
      `c:${5_120_000_000 + n}`,
      `e:${n}@example.com`,
    ]).flat();
    const names = claimNames(keys);
    const seen = new Set(names.fields.map((f, n) => `${names.buckets[n]}/${f}`));
    expect(seen.size).toBe(keys.length);
    // The fields alone already tell them apart (64 bits).
    expect(new Set(names.fields).size).toBe(keys.length);
  });
});

describe('claim names are part of a run in progress', () => {
  it('stay what they were: a planning pass resumed by another release finds its claims', () => {
    const names = claimNames([
      'x:hubspot:company:5120000000',
      'c:5120000000',
      'd:example.com',
      'e:é@x.org',
    ]);
    expect(names.buckets).toEqual([14211, 6192, 9188, 16333]);
    expect(names.fields).toEqual([
      'B\u000f&F\u000b\u0007M t\u0004',
      'C\u001c\u001f\u0013\u0000[@\nw\u000f',
      'S?V9\u000fiH\u0016 \u000f',
      '\u0005)\u0017u\u000bY\u0004~3\u0000',
    ]);
  });
});

import { describe, expect, it } from 'vitest';
import {
  checkThresholds,
  DEFAULT_THRESHOLDS,
  type ThresholdCounts,
} from '../../src/sync/thresholds.js';

const limits = { maxInvalidShare: 0.1, maxChangeShare: 0.5, minRows: 20 };
const counts = (c: Partial<ThresholdCounts>): ThresholdCounts => ({
  read: 1000,
  invalid: 0,
  creates: 0,
  updates: 0,
  firstSync: false,
  ...c,
});

describe('checkThresholds', () => {
  it('stops on too many invalid rows, saying why and how to override', () => {
    expect(checkThresholds(counts({ invalid: 370 }), limits)).toEqual({
      ok: false,
      reason:
        "37% of rows are invalid (370 of 1,000), above the job's limit of 10%: the export looks broken; run with --force to sync anyway",
    });
  });

  it('names source.encoding when most invalid rows are not UTF-8', () => {
    expect(checkThresholds(counts({ invalid: 370, notUtf8: 352 }), limits)).toEqual({
      ok: false,
      reason:
        "37% of rows are invalid (370 of 1,000), above the job's limit of 10%; most (352) are not UTF-8: set source.encoding (e.g. windows-1252), or run with --force to sync anyway",
    });
    // A few such rows among other faults: the export is broken in other ways.
    const r = checkThresholds(counts({ invalid: 370, notUtf8: 185 }), limits);
    expect(!r.ok && r.reason).toMatch(/: the export looks broken; run with --force/);
  });

  it('passes at the limit and shows decimals just above it', () => {
    expect(checkThresholds(counts({ invalid: 100 }), limits)).toEqual({ ok: true });
    const r = checkThresholds(counts({ invalid: 104 }), limits);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(/^10\.4% of rows are invalid \(104 of 1,000\)/);
    // Beyond two decimals: three.
    const thin = checkThresholds(counts({ read: 100_000, invalid: 10_001 }), limits);
    expect(!thin.ok && thin.reason).toMatch(/^10\.001% of rows are invalid \(10,001 of 100,000\)/);
    // The change share too passes at its limit.
    expect(checkThresholds(counts({ creates: 200, updates: 300 }), limits)).toEqual({ ok: true });
  });

  it('stops when too many records would change', () => {
    const r = checkThresholds(counts({ creates: 20, updates: 600 }), limits);
    expect(r).toEqual({
      ok: false,
      reason:
        "62% of rows would change (620 of 1,000: 20 to create, 600 to update), above the job's limit of 50%: check the export and its mapping; run with --force to sync anyway",
    });
  });

  it('does not apply the change share on the first sync', () => {
    expect(checkThresholds(counts({ creates: 1000, firstSync: true }), limits)).toEqual({
      ok: true,
    });
    // The invalid share still applies on a first sync.
    expect(
      checkThresholds(counts({ creates: 500, invalid: 500, firstSync: true }), limits).ok,
    ).toBe(false);
  });

  it('ignores small exports below minRows, and empty ones', () => {
    expect(checkThresholds(counts({ read: 19, invalid: 19 }), limits)).toEqual({ ok: true });
    expect(checkThresholds(counts({ read: 0 }), limits)).toEqual({ ok: true });
    expect(checkThresholds(counts({ read: 20, invalid: 19 }), limits).ok).toBe(false);
  });

  it('stops an export of 0 rows where the last completed run read some, whatever minRows says', () => {
    expect(checkThresholds(counts({ read: 0, lastCompletedRead: 1234 }), limits)).toEqual({
      ok: false,
      reason:
        'the export has 0 rows; the last completed run read 1,234: check the export (an empty or truncated file, a wrong path or filter); run with --force to sync anyway',
    });
    // One row is not none; none after none (or with no completed run) is no news.
    expect(checkThresholds(counts({ read: 1, lastCompletedRead: 1234 }), limits).ok).toBe(true);
    expect(checkThresholds(counts({ read: 0, lastCompletedRead: 0 }), limits).ok).toBe(true);
    expect(checkThresholds(counts({ read: 0, firstSync: true }), limits).ok).toBe(true);
  });

  it('has defensible defaults', () => {
    expect(DEFAULT_THRESHOLDS).toEqual(limits);
    expect(checkThresholds(counts({ updates: 400 })).ok).toBe(true);
  });
});

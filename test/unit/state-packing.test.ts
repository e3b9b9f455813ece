import { describe, expect, it } from 'vitest';
import { packRecord, unpackRecord } from '../../src/state/packing.js';

describe('record state packing', () => {
  it('reads back what it packs, with and without a job', () => {
    const withJob = {
      hash: 'h'.repeat(22),
      syncedAt: 1_702_480_685_536,
      runNumber: 71,
      jobNumber: 2,
    };
    expect(unpackRecord(packRecord(withJob))).toEqual(withJob);
    const { jobNumber: _, ...withoutJob } = withJob;
    expect(unpackRecord(packRecord(withoutJob))).toEqual(withoutJob);
    expect(unpackRecord(packRecord(withoutJob))).not.toHaveProperty('jobNumber');
  });

  it('reads stored values as they were always read', () => {
    expect(unpackRecord('AbC.lq3x1k9s.1z.2')).toEqual({
      hash: 'AbC',
      syncedAt: 1_702_480_685_536,
      runNumber: 71,
      jobNumber: 2,
    });
    expect(unpackRecord('AbC.lq3x1k9s.1z')).toEqual({
      hash: 'AbC',
      syncedAt: 1_702_480_685_536,
      runNumber: 71,
    });
    // A part after the fourth is not read; a number is read up to its first non-digit.
    expect(unpackRecord('AbC.lq3x1k9s.1z.2.extra')).toEqual({
      hash: 'AbC',
      syncedAt: 1_702_480_685_536,
      runNumber: 71,
      jobNumber: 2,
    });
    expect(unpackRecord('AbC.12zz!.3.4')).toEqual({
      hash: 'AbC',
      syncedAt: 50_543,
      runNumber: 3,
      jobNumber: 4,
    });
  });

  it.each(['', '.1.2', 'AbC', 'AbC.x!', 'AbC.1', 'AbC.1.2.', 'AbC.1..3', 'AbC.1.2.-', 'AbC..2'])(
    'refuses %j as corrupt state',
    (value) => {
      expect(() => unpackRecord(value)).toThrow(
        expect.objectContaining({ code: 'state.corrupt' }) as Error,
      );
    },
  );
});

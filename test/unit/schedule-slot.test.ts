import { describe, expect, it } from 'vitest';
import {
  lastSlotKey,
  missedSlots,
  scheduleProblems,
  slotClaimKey,
  slotOf,
} from '../../src/schedule/slot.js';

describe('slotOf', () => {
  it('names an instant in UTC, to the second', () => {
    expect(slotOf(new Date('2026-03-01T02:00:00.734Z'))).toBe('2026-03-01T02:00:00.000Z');
    expect(slotOf(new Date('2026-03-01T04:00:00+02:00'))).toBe('2026-03-01T02:00:00.000Z');
  });

  it('keys claims by job and slot under the prefix', () => {
    expect(slotClaimKey('{crm-sync}', 'companies', '2026-03-01T02:00:00.000Z')).toBe(
      '{crm-sync}:schedule:claim:companies:2026-03-01T02:00:00.000Z',
    );
    expect(lastSlotKey('{crm-sync}', 'companies')).toBe('{crm-sync}:schedule:last:companies');
  });
});

describe('missedSlots', () => {
  it('counts the slots strictly between the last claimed slot and now', () => {
    const missed = missedSlots({
      schedule: '0 2 * * *',
      lastSlot: '2026-03-01T02:00:00.000Z',
      now: new Date('2026-03-04T01:00:00Z'),
    });
    expect(missed).toEqual({
      count: 2,
      truncated: false,
      first: '2026-03-02T02:00:00.000Z',
      last: '2026-03-03T02:00:00.000Z',
    });
  });

  it('does not count the slot happening now, nor anything when none was missed', () => {
    expect(
      missedSlots({
        schedule: '0 2 * * *',
        lastSlot: '2026-03-01T02:00:00.000Z',
        now: new Date('2026-03-02T02:00:00.400Z'),
      }).count,
    ).toBe(0);
  });

  it('reads the schedule in its timezone', () => {
    // 02:00 in New York is 07:00 UTC in March before DST (EST, UTC-5).
    const missed = missedSlots({
      schedule: '0 2 * * *',
      timezone: 'America/New_York',
      lastSlot: '2026-03-01T07:00:00.000Z',
      now: new Date('2026-03-03T00:00:00Z'),
    });
    expect(missed).toMatchObject({ count: 1, first: '2026-03-02T07:00:00.000Z' });
  });

  it('handles a seconds field and stops at the limit', () => {
    const missed = missedSlots({
      schedule: '* * * * * *',
      lastSlot: '2026-03-01T00:00:00.000Z',
      now: new Date('2026-03-01T01:00:00Z'),
      limit: 100,
    });
    expect(missed).toMatchObject({
      count: 100,
      truncated: true,
      first: '2026-03-01T00:00:01.000Z',
    });
  });
});

describe('scheduleProblems', () => {
  it('accepts valid schedules and time zones', () => {
    expect(scheduleProblems('0 2 * * *', 'Europe/Paris')).toEqual([]);
    expect(scheduleProblems('*/5 * * * * *')).toEqual([]);
  });

  it('lists every problem', () => {
    const problems = scheduleProblems('99 2 * * *', 'Mars/Olympus');
    expect(problems.some((p) => p.startsWith('schedule:'))).toBe(true);
    expect(problems).toContain('timezone: "Mars/Olympus" is not an IANA time zone');
  });
});

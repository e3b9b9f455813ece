import { describe, expect, it } from 'vitest';
import { scheduleProblems } from '../../src/schedule/slot.js';
import { isTimeZone } from '../../src/time-zone.js';

describe('isTimeZone', () => {
  it('knows IANA names and UTC, and nothing else', () => {
    for (const tz of ['Europe/Berlin', 'America/Argentina/Buenos_Aires', 'UTC'])
      expect(isTimeZone(tz), tz).toBe(true);
    for (const tz of ['Mars/Olympus', 'Europe/Berlinn', '', 'CEST+1'])
      expect(isTimeZone(tz), tz).toBe(false);
  });

  it('is the check the scheduler applies, as job files do', () => {
    expect(scheduleProblems('0 2 * * *', 'Europe/Berlin')).toEqual([]);
    expect(scheduleProblems('0 2 * * *', 'Mars/Olympus')).toEqual([
      'timezone: "Mars/Olympus" is not an IANA time zone',
    ]);
  });
});

/**
 * `Retry-After` read one way for every caller (error factory, rate learner,
 * CRM page reader): seconds or an HTTP-date; anything without a wait to
 * honour (negative, a past date, unreadable) is no header at all.
 */
import { describe, expect, it } from 'vitest';
import { MAX_WAIT_MS, parseRetryAfter } from '../../src/platform/retry-after.js';

const now = Date.UTC(2026, 5, 1, 12, 0, 0);
const date = (ms: number): string => new Date(now + ms).toUTCString();

describe('parseRetryAfter', () => {
  it.each([
    ['0', 0],
    ['7', 7_000],
    ['120', 120_000],
    ['1.5', 1_500],
    [' 3 ', 3_000],
    [date(5_000), 5_000],
    [date(0), 0],
    // The obsolete RFC 850 form an HTTP-date may also take.
    ['Monday, 01-Jun-26 12:00:09 GMT', 9_000],
    [date(-5_000), undefined],
    ['-3', undefined],
    ['-0.5', undefined],
    ['1e3', undefined],
    ['soon', undefined],
    ['', undefined],
    ['   ', undefined],
    // An hour at most: a Unix time (54 years) or a date years ahead is a wrong header.
    ['3600', 3_600_000],
    ['3601', MAX_WAIT_MS],
    ['1718000000', MAX_WAIT_MS],
    [date(2 * 365 * 86_400_000), MAX_WAIT_MS],
  ])('%j → %s', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });

  it('takes the first of repeated headers, and none when absent', () => {
    expect(parseRetryAfter(['3', '9'], now)).toBe(3_000);
    expect(parseRetryAfter(['-3', '9'], now)).toBeUndefined();
    expect(parseRetryAfter([], now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});

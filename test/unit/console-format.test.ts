import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error the console's modules are plain ES modules without types (no DOM in this one)
import { when } from '../../src/ops/console/format.js';

const zone = process.env.TZ;
afterEach(() => {
  if (zone === undefined) delete process.env.TZ;
  else process.env.TZ = zone;
});

describe('console times', () => {
  it('carry their zone', () => {
    process.env.TZ = 'UTC';
    expect(when('2026-11-27T10:00:00.000Z')).toMatch(/10:00:00.* UTC$/);
    process.env.TZ = 'America/New_York';
    expect(when('2026-11-27T10:00:00.000Z')).toMatch(/5:00:00.* EST$/);
    expect(when(undefined)).toBe('—');
    expect(when('not a date')).toBe('not a date');
  });
});

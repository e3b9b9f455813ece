/**
 * The Salesforce contact preset on a REST query saved as JSON (`records`,
 * each with `attributes`, `null` for empty fields): Salesforce's sample
 * contacts and an integration's test contacts. Its own file: the sample
 * people share their addresses with the org of the Bulk API exports.
 */
import { describe, expect, it } from 'vitest';
import {
  expectOnPlatform,
  failureLines,
  jsonRecords,
  syncTwice,
  useRealEngine,
} from './real-exports-harness.js';

const engine = useRealEngine();

describe('real Salesforce contacts from a REST query', () => {
  it('every contact with a valid address once; null and "&" addresses invalid', async () => {
    const h = engine();
    const records = jsonRecords('salesforce/contacts-rest-query.json', 'records');
    const noAddress = records.filter((r) => r.Email === null);
    const badAddress = records.filter((r) => String(r.Email).includes('&'));
    const live = records.filter((r) => !noAddress.includes(r) && !badAddress.includes(r));
    expect([records.length, noAddress.length, badAddress.length]).toEqual([40, 2, 2]);
    const { first, failures } = await syncTwice(h, {
      job: 'sf-contacts-rest',
      preset: 'salesforce-contacts',
      entity: 'members',
      file: 'salesforce/contacts-rest-query.json',
    });
    expect(first.counts).toMatchObject({ read: 40, created: 36, invalid: 4, skipped: 0 });
    expect(failureLines(failures)).toEqual(
      [
        ...noAddress.map(
          (r) => `invalid x:salesforce:${String(r.Id)}: missing: no value in column Email`,
        ),
        ...badAddress.map(
          (r) => `invalid x:salesforce:${String(r.Id)}: not a valid e-mail address`,
        ),
      ].sort(),
    );
    await expectOnPlatform(
      h,
      'members',
      live.map((r) => ({
        external_id: `salesforce:${String(r.Id)}`,
        email: r.Email,
        last_name: r.LastName,
        ...(r.FirstName !== null && { first_name: r.FirstName }),
      })),
    );
  });
});

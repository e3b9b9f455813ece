/**
 * The Pipedrive presets on real API responses: organizations (integer ids,
 * `owner_id` an object, the account's `company_id` on every row) and users.
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

describe('real Pipedrive exports', () => {
  it('organizations: every active organization once, keyed on its id, not on company_id', async () => {
    const h = engine();
    const orgs = jsonRecords('pipedrive/organizations-api-v1.json', 'data');
    const live = orgs.filter((o) => o.active_flag !== false);
    expect(live).toHaveLength(8);
    // company_id is the Pipedrive account: the same on every row, so never an identity.
    expect(new Set(orgs.map((o) => o.company_id)).size).toBe(1);
    const { first, failures } = await syncTwice(h, {
      job: 'pipedrive-organizations',
      preset: 'pipedrive-organizations',
      entity: 'companies',
      file: 'pipedrive/organizations-api-v1.json',
    });
    expect(first.counts).toMatchObject({ read: 8, created: 8, invalid: 0, skipped: 0 });
    expect(failureLines(failures)).toEqual([]);
    await expectOnPlatform(
      h,
      'companies',
      live.map((o) => ({ external_id: `pipedrive:organization:${Number(o.id)}`, name: o.name })),
    );
    const dump = await h.dump();
    expect(
      dump.companies.filter((c) => c.crm_company_id !== undefined && c.crm_company_id !== null),
    ).toEqual([]);
  });

  it('users: the account team, the one-word name as first name', async () => {
    const h = engine();
    const users = jsonRecords('pipedrive/users-api-v1.json', 'data');
    const { first, failures } = await syncTwice(h, {
      job: 'pipedrive-users',
      preset: 'pipedrive-users',
      entity: 'members',
      file: 'pipedrive/users-api-v1.json',
    });
    expect(first.counts).toMatchObject({ read: 1, created: 1, invalid: 0, skipped: 0 });
    expect(failureLines(failures)).toEqual([]);
    await expectOnPlatform(
      h,
      'members',
      users.map((u) => ({
        external_id: `pipedrive:user:${Number(u.id)}`,
        email: u.email,
        first_name: u.name,
      })),
    );
  });
});

/**
 * The Pipedrive presets on real API responses: organizations (integer ids,
 * `owner_id` an object, the account's `company_id` on every row) and users.
 */
import { describe, expect, it } from 'vitest';
import { expectAllSynced, jsonRecords, useRealEngine } from './real-exports-harness.js';

const engine = useRealEngine();

describe('real Pipedrive exports', () => {
  it('organizations: every active organization once, keyed on its id, not on company_id', async () => {
    const h = engine();
    const orgs = jsonRecords('pipedrive/organizations-api-v1.json', 'data');
    const live = orgs.filter((o) => o.active_flag !== false);
    expect(live).toHaveLength(8);
    // company_id is the Pipedrive account: the same on every row, so never an identity.
    expect(new Set(orgs.map((o) => o.company_id)).size).toBe(1);
    await expectAllSynced(
      h,
      {
        job: 'pipedrive-organizations',
        preset: 'pipedrive-organizations',
        entity: 'companies',
        file: 'pipedrive/organizations-api-v1.json',
      },
      8,
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
    await expectAllSynced(
      h,
      {
        job: 'pipedrive-users',
        preset: 'pipedrive-users',
        entity: 'members',
        file: 'pipedrive/users-api-v1.json',
      },
      1,
      users.map((u) => ({
        external_id: `pipedrive:user:${Number(u.id)}`,
        email: u.email,
        first_name: u.name,
      })),
    );
  });
});

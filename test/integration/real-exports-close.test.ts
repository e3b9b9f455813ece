/**
 * The Close presets on real API responses: leads (Close's companies, ids
 * `lead_…`, `display_name` beside `name`) and users.
 */
import { describe, expect, it } from 'vitest';
import { expectAllSynced, jsonRecords, useRealEngine } from './real-exports-harness.js';

const engine = useRealEngine();

describe('real Close exports', () => {
  it('leads: every lead once, two leads with the same name kept apart by their ids', async () => {
    const h = engine();
    const leads = jsonRecords('close/leads-api-v1.json', 'data');
    expect(leads.filter((l) => l.name === 'Nango Test Lead')).toHaveLength(2);
    await expectAllSynced(
      h,
      {
        job: 'close-leads',
        preset: 'close-leads',
        entity: 'companies',
        file: 'close/leads-api-v1.json',
      },
      5,
      leads.map((l) => ({
        external_id: `close:lead:${String(l.id)}`,
        name: l.name,
        website: l.url,
      })),
    );
  });

  it('users: the organization team', async () => {
    const h = engine();
    const users = jsonRecords('close/users-api-v1.json', 'data');
    await expectAllSynced(
      h,
      {
        job: 'close-users',
        preset: 'close-users',
        entity: 'members',
        file: 'close/users-api-v1.json',
      },
      1,
      users.map((u) => ({
        external_id: `close:user:${String(u.id)}`,
        email: u.email,
        first_name: u.first_name,
        last_name: u.last_name,
      })),
    );
  });
});

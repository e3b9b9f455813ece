/**
 * The Attio presets on real API responses, where every attribute is a list
 * of value objects (`values.name[0].value`).
 */
import { describe, it } from 'vitest';
import { expectAllSynced, jsonRecords, useRealEngine } from './real-exports-harness.js';

const engine = useRealEngine();

type Values = Record<string, Record<string, unknown>[]>;

describe('real Attio exports', () => {
  it('companies: every company once, named by its first name value, with its domain', async () => {
    const h = engine();
    const companies = jsonRecords('attio/companies-api-v2.json', 'data');
    await expectAllSynced(
      h,
      {
        job: 'attio-companies',
        preset: 'attio-companies',
        entity: 'companies',
        file: 'attio/companies-api-v2.json',
      },
      11,
      companies.map((c) => {
        const values = c.values as Values;
        const id = c.id as Record<string, string>;
        return {
          external_id: `attio:company:${id.record_id}`,
          name: values.name![0]!.value,
          website: `https://${String(values.domains![0]!.domain)}`,
        };
      }),
    );
  });

  it('workspace members: the workspace team', async () => {
    const h = engine();
    const members = jsonRecords('attio/workspace-members-api-v2.json', 'data');
    await expectAllSynced(
      h,
      {
        job: 'attio-members',
        preset: 'attio-workspace-members',
        entity: 'members',
        file: 'attio/workspace-members-api-v2.json',
      },
      1,
      members.map((m) => ({
        external_id: `attio:workspace-member:${(m.id as Record<string, string>).workspace_member_id}`,
        email: m.email_address,
        first_name: m.first_name,
        last_name: m.last_name,
      })),
    );
  });
});

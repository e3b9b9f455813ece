/**
 * Faults beyond creates of companies: members (whose listing is a different
 * path) created through drops and 503s, and updates sent through them; each
 * record exactly once, every field right.
 */
import { describe, expect, it } from 'vitest';
import {
  companyRows,
  countWrites,
  expectedCompany,
  expectedMember,
  hubspotCells,
  hubspotJob,
  HUBSPOT_HEADER,
  memberRows,
  salesforceUserCells,
  SALESFORCE_USER_HEADER,
  statsSince,
  useEngines,
} from '../harness/engine.js';

const engine = useEngines();

describe('engine under faults: members and updates', () => {
  it('creates 300 members exactly once through drops and 503s', async () => {
    const h = await engine({
      sandbox: { faultRate: 0.2, dropAfterCommit: 0.2, seed: 7, pageSize: 50 },
    });
    const rows = memberRows(300);
    const path = h.writeCsv('users.csv', SALESFORCE_USER_HEADER, rows.map(salesforceUserCells));
    h.writeJob('users', { entity: 'members', source: { path }, mapping: 'salesforce-users' });
    const run = await h.runJob('users', { timeoutMs: 50_000 });
    expect(run.error).toBeUndefined();
    expect(run.counts).toMatchObject({ read: 300, created: 300, failed: 0 });
    const members = (await h.dump()).members;
    expect(members).toHaveLength(300);
    for (const r of rows) {
      expect(members.filter((m) => m.external_id === `salesforce:${r.id}`)).toEqual([
        expect.objectContaining(expectedMember(r)),
      ]);
    }
  });

  it('updates changed companies exactly once each through drops and 503s', async () => {
    const h = await engine({ sandbox: { seed: 11 } });
    const rows = companyRows(200);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    expect((await h.runJob('companies')).counts.created).toBe(200);

    const edited = rows.map((r) => ({ ...r, name: `${r.name} (new)` }));
    h.writeCsv('companies.csv', HUBSPOT_HEADER, edited.map(hubspotCells));
    h.sandbox.setFaults({ faultRate: 0.2, dropAfterCommit: 0.2 });
    const run = await h.runJob('companies', { force: true, timeoutMs: 50_000 });
    expect(run.error).toBeUndefined();
    expect(run.counts).toMatchObject({ read: 200, updated: 200, failed: 0 });
    const dump = await h.dump();
    expect(dump.companies).toHaveLength(200);
    for (const r of edited) {
      expect(dump.companies.filter((c) => c.crm_company_id === r.id)).toEqual([
        expect.objectContaining(expectedCompany(r)),
      ]);
    }
    h.sandbox.setFaults({ faultRate: undefined, dropAfterCommit: undefined });
    const before = await h.stats();
    expect((await h.runJob('companies')).counts).toMatchObject({ unchanged: 200 });
    expect(countWrites(statsSince(before, await h.stats()))).toBe(0);
  });
});

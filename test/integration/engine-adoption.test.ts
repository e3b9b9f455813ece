/**
 * Adoption: companies that already exist on the platform (same external_id,
 * or only the same CRM id) are matched by the first sync's listing, never
 * duplicated; those that differ get exactly one PUT, those equal get none.
 */
import { describe, expect, it } from 'vitest';
import type { CompanyRequest } from '../../src/platform/schemas.js';
import {
  companyRows,
  countRequests,
  countWrites,
  expectedCompany,
  hubspotCells,
  hubspotJob,
  HUBSPOT_HEADER,
  statsSince,
  useEngines,
} from '../harness/engine.js';

const engine = useEngines();

describe('engine: adoption of existing platform companies', () => {
  it('adopts equal ones without a write, PUTs the differing ones once, creates the rest', async () => {
    const h = await engine({ sandbox: { pageSize: 7 } });
    const rows = companyRows(30);
    const client = h.client();

    const equal = rows.slice(0, 5);
    const renamed = rows.slice(5, 8);
    const byCrmIdOnly = rows.slice(8, 10);
    for (const r of equal) await client.createCompany(expectedCompany(r) as CompanyRequest);
    for (const r of renamed)
      await client.createCompany({
        ...expectedCompany(r),
        name: `Old ${r.name}`,
      } as CompanyRequest);
    for (const r of byCrmIdOnly) {
      const { external_id: _x, ...body } = expectedCompany(r);
      await client.createCompany(body as CompanyRequest);
    }
    const unrelated = await client.createCompany({
      name: 'Not in the CRM',
      external_id: 'other:1',
    });
    const ids = new Map((await h.dump()).companies.map((c) => [c.crm_company_id, c.id]));
    const before = await h.stats();

    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    const run = await h.runJob('companies');
    expect(run.status).toBe('completed');
    expect(run.counts).toMatchObject({
      read: 30,
      adopted: 5,
      updated: 5,
      created: 20,
      unchanged: 0,
      failed: 0,
      rejected: 0,
    });

    const during = statsSince(before, await h.stats());
    expect(countRequests(during, 'POST', '/companies', 200)).toBe(20);
    expect(countRequests(during, 'PUT', '/companies/{id}', 200)).toBe(5);
    expect(countWrites(during)).toBe(25);
    // The first run lists every page of companies (11 records, 7 per page).
    expect(countRequests(during, 'GET', '/companies', 200)).toBe(2);

    const dump = await h.dump();
    expect(dump.companies).toHaveLength(31);
    for (const r of rows) {
      const matches = dump.companies.filter((c) => c.crm_company_id === r.id);
      expect(matches, `company ${r.id}`).toHaveLength(1);
      expect(matches[0]).toMatchObject(expectedCompany(r));
      // Pre-existing records kept their platform id: adopted or updated in place.
      if (ids.has(r.id)) expect(matches[0]!.id).toBe(ids.get(r.id));
    }
    expect(dump.companies.find((c) => c.id === unrelated.id)).toMatchObject({
      name: 'Not in the CRM',
      external_id: 'other:1',
    });

    // Adopted and updated records are in state: the next run writes nothing.
    const afterFirst = await h.stats();
    const second = await h.runJob('companies');
    expect(second.counts).toMatchObject({ read: 30, unchanged: 30, created: 0, updated: 0 });
    expect(countWrites(statsSince(afterFirst, await h.stats()))).toBe(0);
  });
});

/**
 * Rows the platform refuses (400): recorded as `rejected` with the platform's
 * own field message, the other rows sync, and the next run tries them again
 * because they were never marked synced.
 */
import { describe, expect, it } from 'vitest';
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

describe('engine: rows the platform rejects', () => {
  it('records 400s with the field message, syncs the rest, and tries them again next run', async () => {
    const h = await engine();
    const rows = companyRows(30);
    const bad = [4, 11, 25];
    const broken = rows.map((r, i) =>
      bad.includes(i) ? { ...r, name: `${'Long '.repeat(60)}${i}` } : r,
    );
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, broken.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));

    const first = await h.runJob('companies');
    expect(first.status).toBe('completed');
    expect(first.counts).toMatchObject({ read: 30, created: 27, rejected: 3, failed: 0 });
    const failures = await h.failures(first.id);
    expect(failures.map((f) => f.line).sort((a, b) => a - b)).toEqual(bad.map((i) => i + 2));
    for (const f of failures) {
      expect(f).toMatchObject({ kind: 'rejected', field: 'name' });
      expect(f.reason).toContain('Ensure this field has no more than 255 characters.');
      expect(f.identity).toMatch(/^x:hubspot:company:\d+$/);
    }
    let dump = await h.dump();
    expect(dump.companies).toHaveLength(27);

    // Same export: the rejected rows are planned again (and refused again); the rest unchanged.
    const before = await h.stats();
    const second = await h.runJob('companies');
    expect(second.counts).toMatchObject({ read: 30, unchanged: 27, created: 0, rejected: 3 });
    const during = statsSince(before, await h.stats());
    expect(countRequests(during, 'POST', '/companies', 400)).toBe(3);
    expect(countWrites(during)).toBe(3);

    // Fixed in the CRM: exactly those three are created.
    h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    const third = await h.runJob('companies');
    expect(third.counts).toMatchObject({ read: 30, unchanged: 27, created: 3, rejected: 0 });
    expect(await h.failures(third.id)).toEqual([]);
    dump = await h.dump();
    expect(dump.companies).toHaveLength(30);
    for (const i of bad) {
      expect(dump.companies.filter((c) => c.crm_company_id === rows[i]!.id)).toEqual([
        expect.objectContaining(expectedCompany(rows[i]!)),
      ]);
    }
  });
});

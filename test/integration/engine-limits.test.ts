/**
 * Where limits are the point: a platform that throttles below our configured
 * rate answers 429s; the write queue backs off as a whole and every record
 * still lands exactly once. And a second `run` of a job while its run is
 * going attaches to it instead of starting another.
 */
import { describe, expect, it } from 'vitest';
import {
  companyRows,
  countRequests,
  expectedCompany,
  hubspotCells,
  hubspotJob,
  HUBSPOT_HEADER,
  useEngines,
} from '../harness/engine.js';

const engine = useEngines();

describe('engine: platform rate limit', () => {
  it('rides out 429s from a platform slower than our rate, with no duplicate', async () => {
    const h = await engine({ sandbox: { rateLimit: 40 } });
    const rows = companyRows(150);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));

    const run = await h.runJob('companies', { timeoutMs: 50_000 });
    expect(run.error).toBeUndefined();
    expect(run.status).toBe('completed');
    expect(run.counts).toMatchObject({ read: 150, created: 150, failed: 0, rejected: 0 });
    const stats = await h.stats();
    expect(countRequests(stats, 'POST', '/companies', 429)).toBeGreaterThan(0);
    expect(countRequests(stats, 'POST', '/companies', 200)).toBe(150);
    const dump = await h.dump();
    expect(dump.companies).toHaveLength(150);
    for (const r of rows) {
      expect(dump.companies.filter((c) => c.crm_company_id === r.id)).toEqual([
        expect.objectContaining(expectedCompany(r)),
      ]);
    }
  });
});

describe('engine: one run per job', () => {
  it('attaches a second run of a job to the one going', async () => {
    const h = await engine({ sandbox: { latencyMs: 20 } });
    const rows = companyRows(60);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    const first = await h.enqueue('companies');
    const second = await h.enqueue('companies');
    expect(second).toBe(first);
    const run = await h.waitForRun(first);
    expect(run.counts).toMatchObject({ created: 60 });
    expect((await h.dump()).companies).toHaveLength(60);
    expect(await h.store.listRuns({ job: 'companies' })).toHaveLength(1);
  });
});

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
    const limited = countRequests(stats, 'POST', '/companies', 429);
    expect(limited).toBeGreaterThan(0);
    // The run counts the 429s its writes got (the console shows them beside its progress).
    expect(run.counts.rateLimited).toBe(limited);
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

describe('engine: Retry-After', () => {
  it('sends nothing before the Retry-After of a 429 has passed', async () => {
    // One request per 2 s: the write right after the listing gets a 429 with Retry-After: 2.
    const h = await engine({
      sandbox: { rateLimit: 0.5 },
      env: { WRITE_CONCURRENCY: '1' },
    });
    const rows = companyRows(2);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));

    const run = await h.runJob('companies', { timeoutMs: 30_000 });
    expect(run.status).toBe('completed');
    expect(run.counts).toMatchObject({ created: 2, failed: 0 });
    // The sandbox's own clock: when each request arrived, how it was answered.
    const log = (await h.requests()).filter((r) => r.route.startsWith('/companies'));
    const limited = log.flatMap((r, n) => (r.status === 429 ? [n] : []));
    // Longer than the engine's own wait without a Retry-After (1 s).
    expect(limited.some((n) => log[n]!.retryAfter === 2)).toBe(true);
    for (const n of limited) {
      const next = log[n + 1];
      expect(next, `a request after the 429 at ${n}`).toBeDefined();
      const wait = log[n]!.retryAfter! * 1_000;
      expect(next!.at - log[n]!.at, `gap after the 429 at ${n}`).toBeGreaterThanOrEqual(wait - 50);
    }
    expect(countRequests(await h.stats(), 'POST', '/companies', 200)).toBe(2);
  });
});

describe('engine: endless 429s', () => {
  it('fails a write throttled past the cap instead of waiting for it forever', async () => {
    const h = await engine({
      sandbox: { rateLimit: 3 },
      env: { RATE_LIMIT_MAX_RETRIES: '0', WRITE_CONCURRENCY: '8' },
    });
    const rows = companyRows(30);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));

    const run = await h.runJob('companies', { timeoutMs: 30_000 });
    expect(run.status).toBe('completed');
    const { created, failed } = run.counts;
    expect(failed).toBeGreaterThan(0);
    expect(created + failed).toBe(30);
    const failures = await h.failures(run.id);
    expect(failures).toHaveLength(failed);
    for (const f of failures) {
      expect(f.kind).toBe('failed');
      expect(f.reason).toMatch(/rate limited by the platform/);
    }
    const dump = await h.dump();
    expect(dump.companies).toHaveLength(created);
    expect(new Set(dump.companies.map((c) => c.crm_company_id)).size).toBe(created);

    // The throttled rows were never marked synced: the next run creates them.
    h.sandbox.setFaults({ rateLimit: undefined });
    const next = await h.runJob('companies', { force: true });
    expect(next.counts).toMatchObject({ created: failed, unchanged: created, failed: 0 });
    expect((await h.dump()).companies).toHaveLength(30);
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
    expect(await h.store.runs.list({ job: 'companies' })).toHaveLength(1);
  });
});

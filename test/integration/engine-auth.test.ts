/**
 * A key revoked mid-run: the worker authenticates with an API account's
 * token, which the test regenerates once some writes have landed. The run
 * fails at once naming the API key, the 401s are bounded by the write
 * concurrency (not rows × attempts), the remaining writes are dropped
 * without a request, and the worker process goes on serving runs.
 */
import { describe, expect, it } from 'vitest';
import {
  companyRows,
  countRequests,
  hubspotCells,
  hubspotJob,
  HUBSPOT_HEADER,
  statsSince,
  useEngines,
} from '../harness/engine.js';

const engine = useEngines();
const CONCURRENCY = 6;
const ROWS = 400;

describe('engine: a 401 mid-run', () => {
  it('fails the run at once with a clear message, no retry storm, the worker stays healthy', async () => {
    const h = await engine({
      deferWorkers: true,
      sandbox: { latencyMs: 5 },
      env: { WRITE_CONCURRENCY: String(CONCURRENCY) },
    });
    const owner = h.client();
    const account = await owner.createApiAccount({ first_name: 'crm-sync robot' });
    const token = account.token!;
    expect(token).toMatch(/^[0-9a-f]{40}$/);
    const service = await h.startWorkers(token);
    expect(service.concurrency).toBe(CONCURRENCY);

    const rows = companyRows(ROWS);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));

    let revoked = false;
    const run = await h.runJob('companies', {
      onPoll: async (r) => {
        if (!revoked && r.counts.writesSettled >= 40) {
          revoked = true;
          await owner.createApiAccount({ first_name: 'crm-sync robot', regenerate_token: true });
        }
      },
    });
    expect(revoked).toBe(true);
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/API key/);
    expect(run.error).toMatch(/401/);
    expect(run.error).not.toContain(token);
    expect(run.counts.created).toBeGreaterThanOrEqual(40);
    expect(run.counts.created).toBeLessThan(ROWS);

    // The writes still queued are dropped without a request.
    const deadline = Date.now() + 20_000;
    while ((await service.writeQueue.getJobCountByTypes('wait', 'active', 'delayed')) > 0) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 50));
    }
    const stats = await h.stats();
    const refused = countRequests(stats, 'POST', '/companies', 401);
    expect(refused).toBeGreaterThan(0);
    // In flight when the key went: at most one per worker slot, plus those that read the run just before it failed.
    expect(refused).toBeLessThanOrEqual(2 * CONCURRENCY);
    const created = countRequests(stats, 'POST', '/companies', 200);
    expect(created + refused).toBeLessThan(ROWS);
    const dump = await h.dump();
    expect(dump.companies).toHaveLength(created);

    // Nothing was recorded as synced that was not created: every row refused stays to do.
    const failures = await h.failures(run.id);
    expect(failures.filter((f) => f.kind === 'rejected')).toEqual([]);

    // The process is still healthy: the next run is taken, and fails the same clear way
    // (forced: most rows are still to create, which the change threshold would stop).
    expect(service.runWorker.isRunning()).toBe(true);
    expect(service.writeWorker.isRunning()).toBe(true);
    const next = await h.runJob('companies', { force: true });
    expect(next.status).toBe('failed');
    expect(next.error).toMatch(/API key/);
    const more = statsSince(stats, await h.stats());
    expect(countRequests(more, 'POST', '/companies', 200)).toBe(0);
    expect(more.reduce((n, e) => n + (e.status === 401 ? e.count : 0), 0)).toBeLessThanOrEqual(
      2 * CONCURRENCY,
    );
  });

  it('fails a run whose key is refused while listing the platform, naming the API key', async () => {
    const h = await engine({ apiKey: 'not-the-key' });
    const rows = companyRows(10);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    const run = await h.runJob('companies');
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/API key/);
    expect(run.error).not.toContain('not-the-key');
    const stats = await h.stats();
    // One listing request, refused; not retried.
    expect(countRequests(stats, 'GET', '/companies', 401)).toBe(1);
    expect(stats.filter((e) => e.method !== 'GET')).toEqual([]);
  });
});

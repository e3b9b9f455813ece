/**
 * Zero duplicates under faults: 1,000 companies synced through a sandbox that
 * cuts 20% of successful writes after committing them (the client sees a
 * reset: outcome unknown), or answers 20% of requests 503. Each run completes
 * with every record on the platform exactly once, every field right, and a
 * second run writes nothing.
 */
import { describe, expect, it } from 'vitest';
import type { SandboxFaults } from '@crm-sync/platform-sandbox';
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
const ROWS = 1_000;

async function syncUnderFaults(faults: SandboxFaults): Promise<void> {
  const h = await engine({ sandbox: { ...faults, seed: 42 } });
  const rows = companyRows(ROWS);
  const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
  h.writeJob('companies', hubspotJob(path));

  const run = await h.runJob('companies', { timeoutMs: 50_000 });
  expect(run.error).toBeUndefined();
  expect(run.status).toBe('completed');
  expect(run.counts).toMatchObject({
    read: ROWS,
    created: ROWS,
    failed: 0,
    rejected: 0,
  });

  const dump = await h.dump();
  const byId = new Map<number, Record<string, unknown>[]>();
  for (const c of dump.companies) {
    const list = byId.get(c.crm_company_id as number) ?? [];
    list.push(c);
    byId.set(c.crm_company_id as number, list);
  }
  const duplicated = [...byId.values()].filter((l) => l.length > 1).length;
  expect(duplicated, 'records created more than once').toBe(0);
  expect(dump.companies).toHaveLength(ROWS);
  for (const r of rows) expect(byId.get(r.id)?.[0]).toMatchObject(expectedCompany(r));

  // The faults did happen.
  const stats = await h.stats();
  const faulted =
    countRequests(stats, 'POST', '/companies', 0) + countRequests(stats, 'POST', '/companies', 503);
  expect(faulted).toBeGreaterThan(ROWS * 0.1);

  // Everything confirmed is in state: the next run makes no write.
  const second = await h.runJob('companies', { timeoutMs: 50_000 });
  expect(second.status).toBe('completed');
  expect(second.counts).toMatchObject({ read: ROWS, unchanged: ROWS, created: 0, updated: 0 });
  expect(countWrites(statsSince(stats, await h.stats()))).toBe(0);
}

describe('engine under faults: zero duplicates on 1,000 rows', () => {
  it('survives 20% of writes cut after commit (drop-after-commit)', async () => {
    await syncUnderFaults({ dropAfterCommit: 0.2 });
  });

  it('survives 20% of requests answered 503 (fault-rate)', async () => {
    await syncUnderFaults({ faultRate: 0.2 });
  });
});

/**
 * Creates left with an unknown outcome by a run that did not live to verify
 * them (a crash between the POST and its answer): the next run lists the
 * platform first, adopts those that landed and creates the others, so no
 * record is ever created twice.
 */
import { describe, expect, it } from 'vitest';
import type { CompanyRequest } from '../../src/platform/schemas.js';
import { identityKeys } from '../../src/sync/identity.js';
import {
  companyRows,
  countRequests,
  type CompanyRow,
  type EngineHarness,
  countWrites,
  expectedCompany,
  hubspotCells,
  hubspotJob,
  HUBSPOT_HEADER,
  statsSince,
  useEngines,
} from '../harness/engine.js';

const engine = useEngines();

/** A run of another job mid-write, its creates of `rows` claimed (marked pending) before sending. */
async function claimCreates(h: EngineHarness, runId: string, rows: CompanyRow[]): Promise<void> {
  await h.store.runs.create({
    id: runId,
    job: 'other-companies',
    entity: 'companies',
    mode: 'upsert',
    source: 'other.csv',
  });
  await h.store.runs.update(runId, { status: 'writing', phase: 'waiting' });
  const claims = await h.store.writes.claimAll(
    runId,
    'companies',
    rows.map((r, n) => ({
      line: n + 2,
      createKeys: identityKeys('companies', expectedCompany(r)),
    })),
  );
  expect(claims).toEqual(rows.map(() => 'go'));
}

/**
 * Rows 0-9 were being created by a run that crashed, and 0-4 reached the
 * platform; `synced` more rows were synced before (so the platform index
 * exists and is fresh) and stay in the export. The next run adopts the
 * landed ones, creates the rest and duplicates nothing.
 */
async function recoverCrashedCreates(h: EngineHarness, synced: number): Promise<void> {
  const rows = companyRows(20 + synced);
  const crashed = rows.slice(0, 10);
  const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.slice(20).map(hubspotCells));
  h.writeJob('companies', hubspotJob(path));
  if (synced > 0) {
    const earlier = await h.runJob('companies');
    expect(earlier.counts).toMatchObject({ created: synced });
    expect(await h.store.index.info('companies')).toBeDefined();
  }
  const client = h.client();
  for (const r of crashed.slice(0, 5))
    await client.createCompany(expectedCompany(r) as CompanyRequest);
  await claimCreates(h, 'run-crashed', crashed);
  await h.store.runs.update('run-crashed', { status: 'failed' });
  const before = await h.stats();

  h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
  const run = await h.runJob('companies');
  expect(run.status).toBe('completed');
  expect(run.counts).toMatchObject({
    read: 20 + synced,
    created: 15,
    adopted: 5,
    unchanged: synced,
    failed: 0,
    skipped: 0,
  });
  expect(await h.store.records.listPending('companies')).toEqual([]);

  const during = statsSince(before, await h.stats());
  expect(countRequests(during, 'POST', '/companies', 200)).toBe(15);
  const dump = await h.dump();
  expect(dump.companies).toHaveLength(20 + synced);
  for (const r of rows) {
    expect(dump.companies.filter((c) => c.crm_company_id === r.id)).toEqual([
      expect.objectContaining(expectedCompany(r)),
    ]);
  }
  // The landed ones equal the export: no PUT was needed for them.
  expect(countWrites(during)).toBe(15);

  const afterFirst = await h.stats();
  const second = await h.runJob('companies');
  expect(second.counts).toMatchObject({ unchanged: 20 + synced });
  expect(countWrites(statsSince(afterFirst, await h.stats()))).toBe(0);
}

describe('engine: pending creates of a run that died', () => {
  it('adopts the creates that landed, creates the rest, and never duplicates', async () => {
    await recoverCrashedCreates(await engine(), 0);
  });

  it('lists the platform for them even when the index is fresh', async () => {
    // Without that listing the index lacks the five that landed: they would be created again.
    await recoverCrashedCreates(await engine(), 20);
  });

  it('leaves the pending creates of a run still going to that run', async () => {
    const h = await engine();
    const rows = companyRows(20);
    // Another job on the same entity is mid-write: its create of rows 0-2 is in flight.
    const inFlight = rows.slice(0, 3);
    await claimCreates(h, 'run-live', inFlight);

    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    const run = await h.runJob('companies');
    expect(run.status).toBe('completed');
    // Creating them here could duplicate the other run's creates when they land: they wait.
    expect(run.counts).toMatchObject({ read: 20, created: 17, skipped: 3 });
    // Marked under each identity key (external_id and crm_company_id) of the three rows.
    const marks = await h.store.records.listPending('companies');
    expect(marks).toHaveLength(6);
    expect(new Set(marks.map((p) => p.runId))).toEqual(new Set(['run-live']));
    // The other run's creates land; nothing was created twice.
    for (const r of inFlight) await h.client().createCompany(expectedCompany(r) as CompanyRequest);
    const dump = await h.dump();
    expect(dump.companies).toHaveLength(20);
    expect(new Set(dump.companies.map((c) => c.crm_company_id)).size).toBe(20);
  });

  it('lists nothing for them when the index is fresh: a job started during another waits for no listing', async () => {
    const h = await engine();
    const rows = companyRows(30);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.slice(0, 10).map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    expect((await h.runJob('companies')).counts).toMatchObject({ created: 10 });
    // Another job on the same entity is mid-write: its creates of rows 10-12 are in flight.
    await claimCreates(h, 'run-live', rows.slice(10, 13));
    const before = await h.stats();

    h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    // Two thirds of the rows are new: past the change share, hence --force.
    const run = await h.runJob('companies', { force: true });
    expect(run.status).toBe('completed');
    expect(run.counts).toMatchObject({ read: 30, unchanged: 10, created: 17, skipped: 3 });
    const during = statsSince(before, await h.stats());
    expect(countRequests(during, 'GET', '/companies', 200)).toBe(0);
    expect(countRequests(during, 'POST', '/companies', 200)).toBe(17);
  });
});

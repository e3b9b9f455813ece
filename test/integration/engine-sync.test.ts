/**
 * The sync engine end to end on the happy path: a first sync creates every
 * record with its mapped fields, a re-sync of the same export writes nothing,
 * and k edited rows make exactly k PUTs.
 */
import { describe, expect, it } from 'vitest';
import { identityKeys } from '../../src/sync/identity.js';
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
  type CompanyRow,
  type Dump,
} from '../harness/engine.js';

const engine = useEngines();

/** The platform's companies by external_id, each exactly once (a duplicate fails the test). */
function byExternalId(dump: Dump): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const c of dump.companies) {
    const id = String(c.external_id);
    expect(out.has(id), `duplicate company ${id}`).toBe(false);
    out.set(id, c);
  }
  return out;
}

function expectCompanies(dump: Dump, rows: readonly CompanyRow[]): void {
  const found = byExternalId(dump);
  expect(found.size).toBe(rows.length);
  for (const r of rows) {
    const want = expectedCompany(r);
    expect(found.get(String(want.external_id))).toMatchObject(want);
  }
}

describe('engine: first sync, re-sync, changed rows', () => {
  it('creates every record once with its mapped fields; a re-sync writes nothing; k edits make k PUTs', async () => {
    const h = await engine({ settings: { batchSize: 25 } });
    const rows = companyRows(60);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));

    const first = await h.runJob('companies');
    expect(first.status).toBe('completed');
    expect(first.error).toBeUndefined();
    expect(first.counts).toMatchObject({
      read: 60,
      created: 60,
      updated: 0,
      unchanged: 0,
      adopted: 0,
      invalid: 0,
      conflict: 0,
      rejected: 0,
      failed: 0,
      skipped: 0,
      writesPlanned: 60,
      writesSettled: 60,
    });
    expectCompanies(await h.dump(), rows);
    const afterFirst = await h.stats();
    expect(countRequests(afterFirst, 'POST', '/companies', 200)).toBe(60);
    expect(countWrites(afterFirst)).toBe(60);
    expect(await h.failures(first.id)).toEqual([]);

    // Unchanged export: zero writes, every row unchanged, the index was fresh (no listing).
    const second = await h.runJob('companies');
    expect(second.status).toBe('completed');
    expect(second.counts).toMatchObject({
      read: 60,
      created: 0,
      updated: 0,
      unchanged: 60,
      writesPlanned: 0,
    });
    const during = statsSince(afterFirst, await h.stats());
    expect(countWrites(during)).toBe(0);
    expect(during).toEqual([]);

    // k edited rows: exactly k PUTs carrying the new values.
    const edited = rows.map((r) => ({ ...r }));
    const changed = [3, 17, 29, 44, 58];
    for (const i of changed) {
      edited[i]!.name = `Renamed ${i} AG`;
      edited[i]!.employees += 1000;
    }
    h.writeCsv('companies.csv', HUBSPOT_HEADER, edited.map(hubspotCells));
    const beforeThird = await h.stats();
    const third = await h.runJob('companies');
    expect(third.status).toBe('completed');
    expect(third.counts).toMatchObject({
      read: 60,
      created: 0,
      updated: changed.length,
      unchanged: 60 - changed.length,
      writesPlanned: changed.length,
    });
    const writes = statsSince(beforeThird, await h.stats());
    expect(countRequests(writes, 'PUT', '/companies/{id}', 200)).toBe(changed.length);
    expect(countWrites(writes)).toBe(changed.length);
    expectCompanies(await h.dump(), edited);

    // And once more: nothing left to do.
    const fourth = await h.runJob('companies');
    expect(fourth.counts).toMatchObject({ unchanged: 60, updated: 0, created: 0 });
  });

  it('--full corrects a record edited on the platform by hand; a plain run does not look', async () => {
    const h = await engine();
    const rows = companyRows(10);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    expect((await h.runJob('companies')).counts.created).toBe(10);

    // Someone renames one company in the platform's UI.
    const edited = (await h.dump()).companies.find(
      (c) => c.external_id === expectedCompany(rows[4]!).external_id,
    )!;
    await h.client().updateCompany(edited.id as number, { name: 'Renamed by hand' });

    const plain = await h.runJob('companies');
    expect(plain.counts).toMatchObject({ unchanged: 10, updated: 0 });

    const before = await h.stats();
    const full = await h.runJob('companies', { full: true });
    expect(full.counts).toMatchObject({ unchanged: 9, updated: 1 });
    expect(countRequests(statsSince(before, await h.stats()), 'PUT', '/companies/{id}', 200)).toBe(
      1,
    );
    expectCompanies(await h.dump(), rows);
  });

  it('creates through POST /customers when the job says so', async () => {
    const h = await engine();
    const rows = companyRows(12);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path, { createVia: 'customers' }));
    const run = await h.runJob('companies');
    expect(run.counts).toMatchObject({ read: 12, created: 12 });
    const stats = await h.stats();
    expect(countRequests(stats, 'POST', '/customers', 200)).toBe(12);
    expect(countWrites(stats)).toBe(12);
    expectCompanies(await h.dump(), rows);
  });

  it('honours create-only and update-only modes, and a --source override', async () => {
    const h = await engine();
    const rows = companyRows(20);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.slice(0, 10).map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    expect((await h.runJob('companies')).counts.created).toBe(10);

    // Rows 0-9 renamed, rows 10-19 new, in another file given as the run's source.
    const next = [
      ...rows.slice(0, 10).map((r) => ({ ...r, name: `${r.name} v2` })),
      ...rows.slice(10),
    ];
    const other = h.writeCsv('next.csv', HUBSPOT_HEADER, next.map(hubspotCells));

    const before = await h.stats();
    const updateOnly = await h.runJob('companies', {
      source: other,
      mode: 'update-only',
      force: true,
    });
    expect(updateOnly.mode).toBe('update-only');
    expect(updateOnly.source).toContain('next.csv');
    expect(updateOnly.counts).toMatchObject({ read: 20, updated: 10, created: 0, skipped: 10 });
    let during = statsSince(before, await h.stats());
    expect(countRequests(during, 'PUT', '/companies/{id}', 200)).toBe(10);
    expect(countWrites(during)).toBe(10);

    const more = next.map((r) => ({ ...r, name: `${r.name} v3` }));
    h.writeCsv('next.csv', HUBSPOT_HEADER, more.map(hubspotCells));
    const mid = await h.stats();
    const createOnly = await h.runJob('companies', {
      source: other,
      mode: 'create-only',
      force: true,
    });
    expect(createOnly.counts).toMatchObject({ read: 20, created: 10, updated: 0, skipped: 10 });
    during = statsSince(mid, await h.stats());
    expect(countRequests(during, 'POST', '/companies', 200)).toBe(10);
    expect(countWrites(during)).toBe(10);
    const dump = await h.dump();
    expect(dump.companies).toHaveLength(20);
    expectCompanies(dump, [...next.slice(0, 10), ...more.slice(10)]);
  });
});

describe('engine: a planning pass cut off', () => {
  it('starts over from nothing: what the pass left (a claim, a count) decides nothing', async () => {
    const h = await engine({ deferWorkers: true });
    const rows = companyRows(10);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    const runId = await h.enqueue('companies');
    // As a worker that died while planning leaves it: the run in `planning`, the first row's
    // record held (under the preset's `keep: newest`) by a newer line not in the export, and a
    // count.
    await h.store.runs.update(runId, { status: 'planning' });
    const [key] = identityKeys('companies', expectedCompany(rows[0]!));
    const stale = { line: 999, keys: [key!], sticky: true, rank: Date.now(), ref: key! };
    await h.store.survivors.contend(runId, 'newest', [stale]);
    await h.store.progress.setCounts(runId, { read: 999 });

    await h.startWorkers();
    const run = await h.waitForRun(runId);
    expect(run.status, run.error).toBe('completed');
    expect(run.counts).toMatchObject({ read: 10, created: 10, duplicates: 0, conflict: 0 });
    expectCompanies(await h.dump(), rows);
  });
});

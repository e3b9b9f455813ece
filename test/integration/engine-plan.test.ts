/**
 * What the planning pass decides before any write: a dry run that writes
 * nothing anywhere, safety thresholds that stop a broken export, duplicate
 * identities withheld whichever batches they fall in, and orphans reported
 * for full-snapshot sources.
 */
import { describe, expect, it } from 'vitest';
import { dryRun } from '../../src/engine/dry-run.js';
import { loadJob } from '../../src/jobs/definition.js';
import type { CompanyRequest } from '../../src/platform/schemas.js';
import type { Action, ConflictAction, UpdateAction } from '../../src/sync/action.js';
import type { FieldChange } from '../../src/sync/diff.js';
import {
  companyRows,
  countRequests,
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
  type EngineHarness,
} from '../harness/engine.js';

const engine = useEngines();

function planOf(h: EngineHarness, job: string, full = false) {
  return dryRun({
    def: loadJob(h.jobsDir, job, { mappingsDir: h.config.mappingsDir }),
    req: { full },
    store: h.store,
    client: h.client(),
    logger: h.logger,
    env: h.config.sourceEnv,
  });
}

function updatesByLine(actions: readonly Action[]): Map<number, FieldChange[] | undefined> {
  return new Map(
    actions.filter((a): a is UpdateAction => a.kind === 'update').map((u) => [u.line, u.changes]),
  );
}

function noNewKeys(before: readonly string[], after: readonly string[]): string[] {
  const had = new Set(before);
  return after.filter((k) => !had.has(k));
}

describe('engine: dry run', () => {
  it('reports creates and updates with field diffs, and writes nothing anywhere', async () => {
    const h = await engine();
    const rows = companyRows(30);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));

    // Before any sync: no index yet, so the dry run lists the platform into memory.
    await h.stopWorkers();
    let keys = await h.keys();
    let state = await h.stateSnapshot();
    let stats = await h.stats();
    const fresh = await planOf(h, 'companies');
    expect(fresh.indexSource).toBe('listed');
    expect(fresh.counts).toMatchObject({ read: 30, create: 30, update: 0 });
    expect(await h.stateSnapshot()).toEqual(state);
    expect(noNewKeys(keys, await h.keys())).toEqual([]);
    expect(countWrites(statsSince(stats, await h.stats()))).toBe(0);

    expect((await h.runJob('companies')).counts.created).toBe(30);
    const edited = rows.map((r) => ({ ...r }));
    edited[2]!.name = 'Renamed Two';
    edited[9]!.domain = 'nine.example';
    const added = companyRows(2, 7_000_001);
    h.writeCsv('companies.csv', HUBSPOT_HEADER, [...edited, ...added].map(hubspotCells));

    await h.stopWorkers();
    keys = await h.keys();
    state = await h.stateSnapshot();
    stats = await h.stats();
    const plan = await planOf(h, 'companies');
    expect(plan.indexSource).toBe('stored');
    expect(plan.counts).toMatchObject({ read: 32, create: 2, update: 2, unchanged: 28 });
    // The stored index was listed before our writes, so it cannot tell the platform's values.
    expect(updatesByLine(plan.actions)).toEqual(
      new Map([
        [4, undefined],
        [11, undefined],
      ]),
    );
    const creates = plan.actions.filter((a) => a.kind === 'create');
    expect(creates.map((c) => c.keys[0])).toEqual(added.map((r) => `x:hubspot:company:${r.id}`));
    // Nothing written: no new, changed or deleted key under the prefix, no platform write.
    expect(await h.stateSnapshot()).toEqual(state);
    expect(noNewKeys(keys, await h.keys())).toEqual([]);
    const during = statsSince(stats, await h.stats());
    expect(countWrites(during)).toBe(0);
    expect(during).toEqual([]);

    // --full lists again (GETs only): field diffs against the platform's values, still no write.
    const full = await planOf(h, 'companies', true);
    expect(full.indexSource).toBe('listed');
    expect(full.counts).toMatchObject({ create: 2, update: 2, unchanged: 28 });
    expect(updatesByLine(full.actions)).toEqual(
      new Map([
        [4, [{ field: 'name', from: 'Company 2 GmbH', to: 'Renamed Two' }]],
        [11, [{ field: 'website', from: 'https://company-9.example', to: 'https://nine.example' }]],
      ]),
    );
    expect(await h.stateSnapshot()).toEqual(state);
    expect(noNewKeys(keys, await h.keys())).toEqual([]);
    const listing = statsSince(stats, await h.stats());
    expect(countWrites(listing)).toBe(0);
    expect(listing.every((e) => e.method === 'GET')).toBe(true);
  });
});

describe('engine: dry run on a flaky platform', () => {
  it('retries a listing page that failed instead of giving up', async () => {
    const h = await engine({ sandbox: { pageSize: 20, seed: 3 } });
    const rows = companyRows(100);
    const client = h.client();
    for (const r of rows.slice(0, 60))
      await client.createCompany(expectedCompany(r) as CompanyRequest);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    h.sandbox.setFaults({ faultRate: 0.3 });
    const plan = await planOf(h, 'companies');
    expect(plan.counts).toMatchObject({ read: 100, adopt: 60, create: 40 });
    const stats = await h.stats();
    expect(countRequests(stats, 'GET', '/companies', 503)).toBeGreaterThan(0);
    expect(countRequests(stats, 'GET', '/companies', 200)).toBe(3);
    expect(countRequests(stats, 'POST', '/companies', 200)).toBe(60);
    expect(countWrites(stats)).toBe(60);
  });
});

describe('engine: safety thresholds', () => {
  it('refuses a ;-delimited export read as comma-separated before any write', async () => {
    const h = await engine();
    const rows = companyRows(30);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells), {
      delimiter: ';',
    });
    // Detected, the delimiter is right; forced to ",", the header is one column: the source
    // layer refuses the file, which no --force can fix, so the run fails (not stopped).
    h.writeJob('companies', hubspotJob(path, { source: { path, delimiter: ',' } }));
    const run = await h.runJob('companies', { force: true });
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/delimiter is probably ";"/);
    expect(run.counts).toMatchObject({ created: 0, writesPlanned: 0 });
    expect(countWrites(await h.stats())).toBe(0);
  });

  it('stops an export whose columns were renamed (every row invalid) before any write', async () => {
    const h = await engine();
    const rows = companyRows(30);
    const header = HUBSPOT_HEADER.map((c) => (c === 'Company name' ? 'Name' : c));
    const path = h.writeCsv('companies.csv', header, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    const run = await h.runJob('companies');
    expect(run.status).toBe('stopped');
    // The required name's column found nothing: the reason names it and the nearest column.
    expect(run.error).toMatch(
      /^required fields\.name: Company name found nothing in all 30 rows: no column "Company name" \(nearest: Name\).*--force/,
    );
    expect(run.counts).toMatchObject({ read: 30, invalid: 30, created: 0, writesPlanned: 0 });
    expect(countWrites(await h.stats())).toBe(0);
    const failures = await h.failures(run.id);
    expect(failures).toHaveLength(30);
    expect(failures[0]).toMatchObject({ line: 2, kind: 'invalid', field: 'name' });
  });

  it('stops a members export with 30% invalid e-mails; --force writes the valid rows', async () => {
    const h = await engine();
    const rows = memberRows(30);
    const bad = new Set([1, 4, 7, 10, 13, 16, 19, 22, 25]);
    const cells = rows.map((r, i) =>
      salesforceUserCells(bad.has(i) ? { ...r, email: `broken-${i}.example` } : r),
    );
    const path = h.writeCsv('users.csv', SALESFORCE_USER_HEADER, cells);
    h.writeJob('users', { entity: 'members', source: { path }, mapping: 'salesforce-users' });

    const stopped = await h.runJob('users');
    expect(stopped.status).toBe('stopped');
    expect(stopped.error).toMatch(/30% of rows are invalid \(9 of 30\)/);
    expect(countWrites(await h.stats())).toBe(0);

    const forced = await h.runJob('users', { force: true });
    expect(forced.status).toBe('completed');
    expect(forced.counts).toMatchObject({ read: 30, invalid: 9, created: 21, failed: 0 });
    const stats = await h.stats();
    expect(countRequests(stats, 'POST', '/members', 201)).toBe(21);
    expect(countWrites(stats)).toBe(21);
    const failures = await h.failures(forced.id);
    expect(failures.map((f) => f.line).sort((a, b) => a - b)).toEqual([...bad].map((i) => i + 2));
    for (const f of failures) expect(f).toMatchObject({ kind: 'invalid', field: 'email' });
    const members = (await h.dump()).members;
    expect(members).toHaveLength(21);
    for (const [i, r] of rows.entries()) {
      const found = members.filter((m) => m.external_id === `salesforce:${r.id}`);
      expect(found).toHaveLength(bad.has(i) ? 0 : 1);
      if (!bad.has(i)) expect(found[0]).toMatchObject(expectedMember(r));
    }
  });

  it('stops a run that would change most records; --force writes them', async () => {
    const h = await engine();
    const rows = companyRows(30);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    expect((await h.runJob('companies')).status).toBe('completed');

    const edited = rows.map((r, i) => (i < 20 ? { ...r, city: 'Nowhere' } : r));
    h.writeCsv('companies.csv', HUBSPOT_HEADER, edited.map(hubspotCells));
    const before = await h.stats();
    const stopped = await h.runJob('companies');
    expect(stopped.status).toBe('stopped');
    expect(stopped.error).toMatch(
      /67% of rows would change \(20 of 30: 0 to create, 20 to update\)/,
    );
    expect(countWrites(statsSince(before, await h.stats()))).toBe(0);

    const forced = await h.runJob('companies', { force: true });
    expect(forced.counts).toMatchObject({ updated: 20, unchanged: 10 });
    expect(countRequests(statsSince(before, await h.stats()), 'PUT', '/companies/{id}')).toBe(20);
  });
});

describe('engine: duplicate identities', () => {
  it('withholds every row of a shared identity, in one batch or across batches', async () => {
    const h = await engine({ settings: { batchSize: 5 } });
    const rows = companyRows(20);
    rows[3] = { ...rows[3]!, id: rows[1]!.id }; // same batch (lines 3 and 5)
    rows[16] = { ...rows[16]!, id: rows[2]!.id }; // batches 1 and 4 (lines 4 and 18)
    rows[10] = { ...rows[10]!, id: rows[5]!.id }; // batches 2, 3 and 4 (lines 7, 12, 19)
    rows[17] = { ...rows[17]!, id: rows[5]!.id };
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    // Without a survivor rule (the preset keeps the newest).
    h.writeJob('companies', { ...hubspotJob(path), duplicates: { keep: 'none' } });

    // Each withheld row names the other lines of its identity known when it was withheld.
    const group = new Map([
      [3, [5]],
      [5, [3]],
      [4, [18]],
      [18, [4]],
      [7, [12, 19]],
      [12, [7, 19]],
      [19, [7, 12]],
    ]);
    const expectNamed = (line: number, named: readonly number[]): void => {
      const others = group.get(line);
      expect(others, `line ${line} is not a duplicate`).toBeDefined();
      expect(named.length).toBeGreaterThan(0);
      for (const n of named) expect(others).toContain(n);
      if (others!.length === 1) expect(named).toEqual(others);
    };

    // The dry run finds the same conflicts in memory.
    const plan = await planOf(h, 'companies');
    expect(plan.counts).toMatchObject({ read: 20, conflict: 7, create: 13 });
    const planned = plan.actions.filter((a): a is ConflictAction => a.kind === 'conflict');
    expect(planned.map((c) => c.line).sort((a, b) => a - b)).toEqual([3, 4, 5, 7, 12, 18, 19]);
    for (const c of planned) expectNamed(c.line, c.otherLines);

    const run = await h.runJob('companies');
    expect(run.status).toBe('completed');
    expect(run.counts).toMatchObject({ read: 20, conflict: 7, created: 13, writesPlanned: 13 });
    const failures = await h.failures(run.id);
    expect(failures.map((f) => f.line).sort((a, b) => a - b)).toEqual([3, 4, 5, 7, 12, 18, 19]);
    for (const f of failures) {
      expect(f.kind).toBe('conflict');
      const m = /also on lines? ([\d, ]+);/.exec(f.reason);
      expect(m, f.reason).not.toBeNull();
      expectNamed(f.line, m![1]!.split(', ').map(Number));
    }
    expect(countRequests(await h.stats(), 'POST', '/companies', 200)).toBe(13);
    const dump = await h.dump();
    expect(dump.companies).toHaveLength(13);
    for (const id of [rows[1]!.id, rows[2]!.id, rows[5]!.id])
      expect(dump.companies.filter((c) => c.crm_company_id === id)).toEqual([]);
  });
});

describe('engine: orphans', () => {
  it('reports records in state but missing from a full snapshot', async () => {
    const h = await engine();
    const rows = companyRows(25);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    expect((await h.runJob('companies')).counts.orphans).toBe(0);

    h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.slice(4).map(hubspotCells));
    const second = await h.runJob('companies');
    expect(second.status).toBe('completed');
    expect(second.counts).toMatchObject({ read: 21, unchanged: 21, orphans: 4 });

    // Not a full snapshot: nothing is reported missing.
    h.writeJob('companies', hubspotJob(path, { fullSnapshot: false }));
    const third = await h.runJob('companies');
    expect(third.counts).toMatchObject({ read: 21, unchanged: 21, orphans: 0 });
  });
});

/**
 * `auditEntity` (the I/O side of `crm-sync audit`) against the sandbox and a
 * real Redis: a synced platform is clean; a second record of a synced
 * identity, a record of another source and members sharing an e-mail are
 * reported as the pure audit says; nothing is written to the state.
 */
import { describe, expect, it } from 'vitest';
import { auditEntity, type AuditDeps } from '../../src/engine/audit.js';
import type { CompanyRequest } from '../../src/platform/schemas.js';
import {
  companyRows,
  expectedCompany,
  HUBSPOT_HEADER,
  hubspotCells,
  hubspotJob,
  useEngines,
  type EngineHarness,
} from '../harness/engine.js';

const engine = useEngines();

function deps(h: EngineHarness): AuditDeps {
  return {
    store: h.store,
    client: h.client(),
    logger: h.logger,
    rateLimit: h.config.platform.rateLimit,
    retry: h.config.retry,
  };
}

describe('auditEntity', () => {
  it('finds a synced platform clean, then reports a second record of a synced identity', async () => {
    const h = await engine();
    const rows = companyRows(6);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('hubspot-companies', hubspotJob(path));
    expect((await h.runJob('hubspot-companies')).counts.created).toBe(6);

    const clean = await auditEntity(deps(h), 'companies');
    expect(clean).toMatchObject({ listed: 6, tracked: 6, shared: [], untracked: [], problems: 0 });

    const client = h.client();
    const original = (await h.dump()).companies.find(
      (c) => c.external_id === `hubspot:company:${rows[0]!.id}`,
    )!.id as number;
    const again = await client.createCompany(expectedCompany(rows[0]!) as CompanyRequest);
    const other = await client.createCompany({ name: 'Elsewhere', external_id: 'other:1' });
    const state = await h.stateSnapshot();

    const report = await auditEntity(deps(h), 'companies');
    expect(report.listed).toBe(8);
    expect(report.tracked).toBe(6);
    expect(report.shared).toEqual([
      {
        key: `c:${rows[0]!.id}`,
        field: 'crm_company_id',
        value: String(rows[0]!.id),
        platformIds: [original, again.id],
        stateId: original,
        problem: true,
      },
      {
        key: `x:hubspot:company:${rows[0]!.id}`,
        field: 'external_id',
        value: `hubspot:company:${rows[0]!.id}`,
        platformIds: [original, again.id],
        stateId: original,
        problem: true,
      },
    ]);
    expect(report.untracked).toEqual([
      expect.objectContaining({ platformId: again.id, kind: 'lost', stateId: original }),
      expect.objectContaining({ platformId: other.id, kind: 'untracked', key: 'x:other:1' }),
    ]);
    expect(report.problems).toBe(3);
    expect(await h.stateSnapshot()).toEqual(state);
  });

  it('audits members: an e-mail shared by records without external_id is a problem', async () => {
    const h = await engine();
    const client = h.client();
    const a = await client.createMember({ first_name: 'Ann', email: 'Ann@Example.com' });
    const b = await client.createMember({ first_name: 'Ann', email: 'ann@example.com' });
    await client.createMember({ first_name: 'Bo', email: 'bo@example.com', external_id: 'sf:1' });
    await client.createMember({ first_name: 'Bo', email: 'BO@example.com', external_id: 'sf:2' });

    const report = await auditEntity(deps(h), 'members');
    expect(report.listed).toBeGreaterThanOrEqual(4);
    const byKey = new Map(report.shared.map((s) => [s.key, s]));
    expect(byKey.get('e:ann@example.com')).toMatchObject({
      platformIds: [a.id, b.id],
      problem: true,
    });
    // Distinct external_ids: two sources' records sharing an e-mail, not a problem.
    expect(byKey.get('e:bo@example.com')).toMatchObject({ problem: false });
    expect(report.untracked.every((u) => u.kind === 'untracked')).toBe(true);
    expect(report.problems).toBe(report.shared.filter((s) => s.problem).length);
  });
});

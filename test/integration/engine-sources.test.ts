/**
 * Two CRMs feeding one platform: numeric ids overlap (Pipedrive organization 1
 * and Odoo partner 1 both map to crm_company_id 1), and neither job may take
 * the other's records. Rows that reach another source's record through a
 * weaker key than their external_id are conflicts; the record is untouched.
 */
import { describe, expect, it } from 'vitest';
import { countWrites, statsSince, useEngines, type EngineHarness } from '../harness/engine.js';

const engine = useEngines();

function pipedriveJob(path: string, externalId: boolean): Record<string, unknown> {
  return {
    entity: 'companies',
    source: { path },
    mapping: {
      name: 'pipedrive-orgs',
      version: 1,
      entity: 'companies',
      fields: {
        crm_company_id: { from: 'id', transforms: ['integer'], required: true },
        ...(externalId && { external_id: { template: 'pipedrive:organization:{id}' } }),
        name: { from: 'name', required: true },
      },
    },
  };
}

function odooJob(path: string): Record<string, unknown> {
  return {
    entity: 'companies',
    source: { path },
    mapping: {
      name: 'odoo-partners',
      version: 1,
      entity: 'companies',
      fields: {
        crm_company_id: { from: 'id', transforms: ['integer'], required: true },
        external_id: { template: 'odoo:res.partner:{id}', required: true },
        name: { from: 'name', required: true },
      },
    },
  };
}

/** Pipedrive organizations 1..4 and Odoo partners 1, 3, 7, 8: ids 1 and 3 overlap. */
function writeExports(h: EngineHarness, externalId: boolean): void {
  const pd = h.writeCsv(
    'pipedrive.csv',
    ['id', 'name'],
    [1, 2, 3, 4].map((id) => [id, `Pipedrive Org ${id}`]),
  );
  const odoo = h.writeCsv(
    'odoo.csv',
    ['id', 'name'],
    [1, 3, 7, 8].map((id) => [id, `Odoo Partner ${id}`]),
  );
  h.writeJob('pipedrive', pipedriveJob(pd, externalId));
  h.writeJob('odoo', odooJob(odoo));
}

/** Each company on the platform once, by name. */
async function companiesByName(h: EngineHarness): Promise<Map<string, Record<string, unknown>>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const c of (await h.dump()).companies) out.set(String(c.name), c);
  return out;
}

describe('engine: two CRMs with overlapping numeric ids', () => {
  for (const externalId of [true, false]) {
    it(`never lets one job overwrite the other's records (Pipedrive ${externalId ? 'with' : 'without'} external_id), run alternately twice`, async () => {
      const h = await engine();
      writeExports(h, externalId);

      const pd1 = await h.runJob('pipedrive');
      expect(pd1.counts).toMatchObject({ read: 4, created: 4, conflict: 0 });
      const before = await companiesByName(h);
      const pdRecord = (id: number): Record<string, unknown> => before.get(`Pipedrive Org ${id}`)!;

      const od1 = await h.runJob('odoo');
      expect(od1.status).toBe('completed');
      expect(od1.counts).toMatchObject({
        read: 4,
        created: 2,
        updated: 0,
        adopted: 0,
        conflict: 2,
      });
      const failures = await h.failures(od1.id);
      expect(failures.map((f) => [f.line, f.kind, f.identity])).toEqual([
        [2, 'conflict', 'c:1'],
        [3, 'conflict', 'c:3'],
      ]);
      const reason = failures[0]!.reason;
      expect(reason).toContain(`platform record ${pdRecord(1).id}`);
      expect(reason).toContain('job "pipedrive"');
      expect(reason).toContain('"odoo:res.partner:1"');

      // Run both again, in turn: nothing is written, the same rows conflict.
      let mark = await h.stats();
      const pd2 = await h.runJob('pipedrive');
      expect(pd2.counts).toMatchObject({ read: 4, unchanged: 4, conflict: 0 });
      const od2 = await h.runJob('odoo');
      expect(od2.counts).toMatchObject({ read: 4, unchanged: 2, conflict: 2, created: 0 });
      expect(countWrites(statsSince(mark, await h.stats()))).toBe(0);

      const after = await companiesByName(h);
      expect(after.size).toBe(6);
      for (const id of [1, 2, 3, 4]) expect(after.get(`Pipedrive Org ${id}`)).toEqual(pdRecord(id));
      for (const id of [7, 8]) {
        expect(after.get(`Odoo Partner ${id}`)).toMatchObject({
          crm_company_id: id,
          external_id: `odoo:res.partner:${id}`,
        });
      }

      // A full run lists the platform again and decides the same.
      mark = await h.stats();
      const od3 = await h.runJob('odoo', { full: true });
      expect(od3.counts).toMatchObject({ conflict: 2, created: 0, updated: 0 });
      expect(countWrites(statsSince(mark, await h.stats()))).toBe(0);
      // The fresh listing knows the record's own external_id: the reason names both.
      const [full] = await h.failures(od3.id);
      if (externalId)
        expect(full!.reason).toContain(
          'its external_id is "pipedrive:organization:1" and this row\'s "odoo:res.partner:1"',
        );
      else
        expect(full!.reason).toContain('not through this row\'s external_id "odoo:res.partner:1"');
    });
  }

  it('adopts a record made by hand with no external_id, and refuses one whose external_id differs', async () => {
    const h = await engine();
    const client = h.client();
    const blank = await client.createCompany({ name: 'Made by hand', crm_company_id: 1 });
    const other = await client.createCompany({
      name: 'Another tool',
      crm_company_id: 3,
      external_id: 'salesforce:001000000000001AAA',
    });
    writeExports(h, true);

    const run = await h.runJob('odoo');
    expect(run.counts).toMatchObject({ read: 4, created: 2, updated: 1, conflict: 1 });
    const [conflict] = await h.failures(run.id);
    expect(conflict).toMatchObject({ line: 3, kind: 'conflict', identity: 'c:3' });
    expect(conflict!.reason).toBe(
      `platform record ${other.id} has external_id "salesforce:001000000000001AAA" and this row ` +
        `"odoo:res.partner:3" (found through crm_company_id "3"); left untouched: they are different records`,
    );
    const dump = await h.dump();
    expect(dump.companies.find((c) => c.id === blank.id)).toMatchObject({
      name: 'Odoo Partner 1',
      external_id: 'odoo:res.partner:1',
    });
    expect(dump.companies.find((c) => c.id === other.id)).toMatchObject({
      name: 'Another tool',
      external_id: 'salesforce:001000000000001AAA',
    });

    // The Pipedrive job now finds the adopted record written by the Odoo job: a conflict too.
    const pd = await h.runJob('pipedrive');
    expect(pd.counts).toMatchObject({ read: 4, conflict: 2, created: 2 });
  });

  it('lets two jobs of one CRM share records through the same external_id', async () => {
    const h = await engine();
    writeExports(h, true);
    await h.runJob('odoo');
    // A second job over the same export (say, a weekly backfill beside the nightly run).
    h.writeJob('odoo-backfill', odooJob(`${h.dir}/odoo.csv`));
    const edited = h.writeCsv(
      'odoo.csv',
      ['id', 'name'],
      [1, 3, 7, 8].map((id) => [id, `Odoo Partner ${id} renamed`]),
    );
    expect(edited).toBe(`${h.dir}/odoo.csv`);
    const run = await h.runJob('odoo-backfill');
    expect(run.counts).toMatchObject({ read: 4, updated: 4, conflict: 0 });
  });
});

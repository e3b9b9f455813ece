/**
 * Paths into JSON exports, end to end: an Attio records query (every
 * attribute a list of value objects) and an Odoo `search_read` answer (an
 * empty field is JSON `false`) sync every record with the right values; a
 * required path that finds nothing in the first rows stops the run before
 * any write, naming the path and the nearest keys, without reading the rest.
 */
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dryRun } from '../../src/engine/dry-run.js';
import { unmatchedPaths } from '../../src/crm/path-coverage.js';
import { loadJob } from '../../src/jobs/definition.js';
import { countWrites, useEngines, type EngineHarness } from '../harness/engine.js';

const engine = useEngines();
const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'exports');

function fixture(h: EngineHarness, file: string): string {
  const path = join(h.dir, file);
  copyFileSync(join(FIXTURES, file), path);
  return path;
}

function attioJob(path: string, name = 'values.name[0].value') {
  return {
    entity: 'companies',
    source: { path, recordsPath: 'data' },
    mapping: {
      name: 'attio-companies-test',
      version: 1,
      entity: 'companies',
      fields: {
        external_id: { template: 'attio:company:{id.record_id}', required: true },
        name: { from: name, transforms: ['trim'], required: true },
        website: { from: 'values.domains[0].domain', transforms: ['website'] },
      },
      custom: {
        domains: 'values.domains[*].domain',
        category: 'values.categories[0].option.title',
      },
    },
  };
}

function customOf(record: Record<string, unknown>): unknown {
  const c = record.custom;
  return typeof c === 'string' ? JSON.parse(c) : c;
}

describe('engine: JSON exports read through paths', () => {
  it('syncs every Attio company with its name, website and domains', async () => {
    const h = await engine();
    h.writeJob('attio', attioJob(fixture(h, 'attio-companies.json')));
    const run = await h.runJob('attio');
    expect(run.status).toBe('completed');
    expect(run.counts).toMatchObject({ read: 4, created: 4, invalid: 0 });

    const byId = new Map((await h.dump()).companies.map((c) => [c.external_id, c]));
    const expected = [
      ['0b7c9a52-3f41-4e8d-9a6b-2c1d0e9f8a71', 'Stripe', ['stripe.com']],
      ['1c8d0b63-4052-4f9e-8b7c-3d2e1f0a9b82', 'Figma', ['figma.com', 'figma.io']],
      ['2d9e1c74-5163-4a0f-9c8d-4e3f2a1b0c93', 'Linear', []],
      ['3e0f2d85-6274-4b1a-8d9e-5f4a3b2c1da4', 'Notion Labs', ['notion.so']],
    ] as const;
    expect(byId.size).toBe(expected.length);
    for (const [id, name, domains] of expected) {
      const c = byId.get(`attio:company:${id}`);
      expect(c, id).toMatchObject({ name });
      if (domains.length > 0) {
        expect(c!.website).toMatch(new RegExp(`${domains[0]!.replace('.', '\\.')}$`));
        expect(customOf(c!)).toEqual({ domains, category: 'SAAS' });
      } else {
        expect(c!.website ?? null).toBeNull();
        expect(customOf(c!)).toEqual({ category: 'SAAS' });
      }
    }
  });

  it("syncs Odoo partners with false as empty (nullMarkers), reading a many2one's name", async () => {
    const h = await engine();
    const path = fixture(h, 'odoo-partners.json');
    h.writeJob('odoo', {
      entity: 'companies',
      source: { path, recordsPath: 'result' },
      mapping: {
        name: 'odoo-partners-test',
        version: 1,
        entity: 'companies',
        nullMarkers: ['', 'false'],
        fields: {
          external_id: { template: 'odoo:partner:{id}', required: true },
          name: { from: 'name', required: true },
          website: { from: 'website', transforms: ['website'] },
        },
        custom: { email: 'email', phone: 'phone', country: 'country_id[1]', vat: 'vat' },
      },
    });
    const run = await h.runJob('odoo');
    expect(run.status).toBe('completed');
    expect(run.counts).toMatchObject({ read: 5, created: 5, invalid: 0 });
    expect(await h.failures(run.id)).toEqual([]);

    const byId = new Map((await h.dump()).companies.map((c) => [c.external_id, c]));
    const azure = byId.get('odoo:partner:14')!;
    expect(azure).toMatchObject({ name: 'Azure Interior' });
    expect(azure.website).toMatch(/azure-interior\.com$/);
    expect(customOf(azure)).toEqual({
      email: 'azure.Interior24@example.com',
      phone: '(870)-931-0505',
      country: 'United States',
    });
    // Every false of the export is absent: no "false" text anywhere.
    const lumber = byId.get('odoo:partner:15')!;
    expect(lumber.name).toBe('Lumber Inc');
    expect(lumber.website ?? null).toBeNull();
    expect(customOf(lumber)).toEqual({ phone: '(828)-316-0593', country: 'United States' });
    expect(customOf(byId.get('odoo:partner:11')!)).toEqual({ vat: 'US12345677' });
    expect(customOf(byId.get('odoo:partner:12')!)).toEqual({
      email: 'ready.mat28@example.com',
      country: 'Belgium',
    });
    expect(byId.get('odoo:partner:10')).toMatchObject({ name: 'Deco Addict' });
    expect(JSON.stringify([...byId.values()])).not.toContain('"false"');
  });

  it('reports an Odoo false as false, not as text, where it is refused', async () => {
    const h = await engine();
    const path = fixture(h, 'odoo-partners.json');
    h.writeJob('odoo', {
      entity: 'companies',
      source: { path, recordsPath: 'result' },
      mapping: {
        name: 'odoo-ids-test',
        version: 1,
        entity: 'companies',
        fields: {
          external_id: { template: 'odoo:partner:{id}', required: true },
          name: { from: 'name', required: true },
          crm_company_id: { from: 'ref', transforms: ['integer'] },
        },
      },
    });
    const plan = await dryRun({
      def: loadJob(h.jobsDir, 'odoo', { mappingsDir: h.config.mappingsDir }),
      req: { full: false },
      store: h.store,
      client: h.client(),
      logger: h.logger,
      env: h.config.sourceEnv,
    });
    // ref is text on two partners and false on three (no null marker says
    // otherwise here): each is refused with the value as the export had it.
    const refused = plan.actions.filter((a) => a.kind === 'invalid');
    expect(refused.map((a) => (a.kind === 'invalid' ? [a.field, a.value] : []))).toEqual([
      ['crm_company_id', 'AZ-14'],
      ['crm_company_id', false],
      ['crm_company_id', 'GF-11'],
      ['crm_company_id', false],
      ['crm_company_id', false],
    ]);
    expect(plan.paths).toMatchObject({ rows: 5, partial: false });
  });

  it('stops before writing when a required path finds nothing in the first 1,000 rows', async () => {
    const h = await engine();
    // 1,200 Attio companies: the check comes after 1,000, before the rest is read.
    const records = Array.from({ length: 1200 }, (_, i) => ({
      id: { record_id: `rec-${i}` },
      values: { name: [{ value: `Company ${i}` }], domains: [{ domain: `c${i}.example` }] },
    }));
    const path = join(h.dir, 'attio-big.json');
    writeFileSync(path, JSON.stringify({ data: records }));
    h.writeJob('attio', attioJob(path, 'values.nmae[0].value'));

    const plan = await dryRun({
      def: loadJob(h.jobsDir, 'attio', { mappingsDir: h.config.mappingsDir }),
      req: { full: false },
      store: h.store,
      client: h.client(),
      logger: h.logger,
      env: h.config.sourceEnv,
    });
    expect(unmatchedPaths(plan.paths!)).toEqual([
      {
        field: 'fields.name',
        ref: 'values.nmae[0].value',
        required: true,
        hint: 'no key "nmae" in values (nearest: name)',
      },
      // Optional: a warning only.
      {
        field: 'custom.category',
        ref: 'values.categories[0].option.title',
        required: false,
        hint: 'no key "categories" in values (keys there: name, domains)',
      },
    ]);

    const run = await h.runJob('attio');
    expect(run.status).toBe('stopped');
    expect(run.error).toBe(
      'required fields.name: values.nmae[0].value found nothing in the first 1,000 rows: ' +
        'no key "nmae" in values (nearest: name): every row would lack it; ' +
        "fix the mapping's path, or run with --force to sync anyway",
    );
    expect(run.counts.read).toBeLessThan(1200);
    expect(run.counts).toMatchObject({ created: 0, writesPlanned: 0 });
    expect(countWrites(await h.stats())).toBe(0);
    expect((await h.dump()).companies).toEqual([]);
  });
});

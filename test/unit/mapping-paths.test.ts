/**
 * Paths and null markers through a compiled mapping: the JSON shapes of real
 * CRM APIs (Attio, Pipedrive, Zoho, Dataverse, HubSpot, Odoo), JSON-valued
 * CSV cells, `[*]` lists, JSON scalars as null markers, the values a failure
 * shows, and what the mapping says it reads (`paths`).
 */
import { describe, expect, it } from 'vitest';
import { compileMapping } from '../../src/crm/mapping.js';

const row = (record: Record<string, unknown>, line = 2) => ({ line, record });

describe('paths into JSON records', () => {
  it('maps an Attio record: every attribute a list of value objects', () => {
    const m = compileMapping({
      name: 'attio',
      version: 1,
      entity: 'companies',
      fields: {
        external_id: { template: 'attio:company:{id.record_id}', required: true },
        name: { from: 'values.name[0].value', required: true },
        website: { from: 'values.domains[0].domain' },
      },
      custom: { domains: 'values.domains[*].domain' },
    });
    const r = m.map(
      row({
        id: { workspace_id: 'w1', object_id: 'o1', record_id: 'bf071e1f' },
        values: {
          name: [{ active_from: '2024-01-01', value: 'Acme' }],
          domains: [{ domain: 'acme.com' }, { domain: 'acme.io' }],
        },
      }),
    );
    expect(r).toMatchObject({
      ok: true,
      body: {
        external_id: 'attio:company:bf071e1f',
        name: 'Acme',
        custom: '{"domains":["acme.com","acme.io"]}',
      },
    });
    if (r.ok) expect((r.body as { website?: string }).website).toBe('acme.com');
    // A record without the attribute lacks the field; a required one names its path.
    expect(m.map(row({ id: { record_id: 'x' }, values: { name: [] } }))).toMatchObject({
      ok: false,
      field: 'name',
      reason: 'missing: no value in column values.name[0].value',
    });
  });

  it('maps Pipedrive, Zoho, Dataverse and HubSpot shapes', () => {
    const m = compileMapping({
      name: 'many',
      version: 1,
      entity: 'companies',
      fields: { name: { from: ['owner_id.name', 'Owner.email', 'properties.domain'] } },
      custom: {
        etag: '["@odata.etag"]',
        owner: '["_ownerid_value@OData.Community.Display.V1.FormattedValue"]',
      },
    });
    const name = (rec: Record<string, unknown>) => {
      const r = m.map(row(rec));
      return r.ok ? (r.body as { name?: string }).name : r.reason;
    };
    expect(name({ owner_id: { id: 1, name: 'Sales', email: 's@x.example', value: 1 } })).toBe(
      'Sales',
    );
    expect(name({ Owner: { name: 'O', id: '4150868000000225013', email: 'o@zoho.example' } })).toBe(
      'o@zoho.example',
    );
    expect(name({ id: '512', properties: { domain: 'acme.com' } })).toBe('acme.com');
    expect(
      m.map(
        row({
          '@odata.etag': 'W/"4116452"',
          '_ownerid_value@OData.Community.Display.V1.FormattedValue': 'Sales Team',
        }),
      ),
    ).toMatchObject({
      ok: true,
      body: { custom: '{"etag":"W/\\"4116452\\"","owner":"Sales Team"}' },
    });
  });

  it('reads a CSV cell that holds JSON, and a column whose name has a dot', () => {
    const m = compileMapping({
      name: 'csv-json',
      version: 1,
      entity: 'companies',
      fields: {
        name: { from: 'properties.name', required: true },
        website: { from: 'Company.Website' },
      },
    });
    expect(
      m.map(row({ properties: '{"name":"Acme","domain":"acme.com"}', 'Company.Website': 'x.io' })),
    ).toMatchObject({ ok: true, body: { name: 'Acme' } });
    expect(m.map(row({ properties: 'not json' }))).toMatchObject({
      ok: false,
      reason: 'missing: no value in column properties.name',
    });
  });

  it('[*] feeds role_ids as a list; a text field refuses a list, even of one', () => {
    const m = compileMapping({
      name: 'members',
      version: 1,
      entity: 'members',
      fields: {
        external_id: { template: 'crm:{id}' },
        role_ids: { from: 'roles[*].id' },
        first_name: { from: 'names[*].first' },
      },
    });
    expect(m.map(row({ id: 1, roles: [{ id: 'r1' }, { id: null }, { id: 'r2' }] }))).toMatchObject({
      ok: true,
      body: { external_id: 'crm:1', role_ids: ['r1', 'r2'] },
    });
    expect(m.map(row({ id: 1, roles: [] }))).toEqual({
      ok: true,
      line: 2,
      body: { external_id: 'crm:1' },
    });
    const one = m.map(row({ id: 1, names: [{ first: 'Jane' }] }));
    const dropped = one.ok ? (one.warnings ?? []) : [one];
    expect(dropped).toEqual([
      expect.objectContaining({ field: 'first_name', reason: 'expected text, got a list' }),
    ]);
  });
});

describe('null markers on JSON scalars', () => {
  const odoo = (nullMarkers?: string[]) =>
    compileMapping({
      name: 'odoo',
      version: 1,
      entity: 'companies',
      ...(nullMarkers && { nullMarkers }),
      fields: {
        external_id: { template: 'odoo:partner:{id}', required: true },
        name: { from: 'name', required: true },
        uuid: { from: 'ref' },
      },
      custom: ['phone', 'employees'],
    });

  it('makes a JSON false absent when "false" is a marker, as the string "false"', () => {
    const m = odoo(['', 'false']);
    expect(m.map(row({ id: 7, name: 'Acme', ref: false, phone: 'false', employees: 3 }))).toEqual({
      ok: true,
      line: 2,
      body: { external_id: 'odoo:partner:7', name: 'Acme', custom: '{"employees":3}' },
    });
    expect(m.map(row({ id: 8, name: false }))).toMatchObject({
      ok: false,
      line: 2,
      field: 'name',
      reason: 'missing: no value in column name',
    });
  });

  it('matches numbers by their text, and JSON null always', () => {
    const m = odoo(['', '0']);
    expect(m.map(row({ id: 7, name: 'A', ref: null, phone: null, employees: 0 }))).toEqual({
      ok: true,
      line: 2,
      body: { external_id: 'odoo:partner:7', name: 'A' },
    });
    // A template placeholder that is a marker makes the template absent.
    expect(m.map(row({ id: 0, name: 'A' }))).toMatchObject({
      ok: false,
      field: 'external_id',
      reason: 'missing: no value in column id',
    });
  });

  it('leaves JSON false a value under the default markers', () => {
    const m = odoo();
    expect(m.map(row({ id: 7, name: 'A', ref: false, employees: false }))).toEqual({
      ok: true,
      line: 2,
      body: {
        external_id: 'odoo:partner:7',
        name: 'A',
        uuid: 'false',
        custom: '{"employees":false}',
      },
    });
  });
});

describe('values in failures', () => {
  it('keep their JSON type: a JSON false is false, not the text "false"', () => {
    const m = compileMapping({
      name: 'shown',
      version: 1,
      entity: 'members',
      fields: {
        external_id: { template: 'odoo:user:{id}' },
        email: { from: 'email', required: true },
        meeting_insights: { from: 'insights', required: true },
      },
    });
    expect(m.map(row({ id: 1, email: false }))).toMatchObject({
      ok: false,
      field: 'email',
      value: false,
    });
    expect(m.map(row({ id: 1, email: 'a@b.co', insights: 7 }))).toMatchObject({
      ok: false,
      field: 'meeting_insights',
      value: 7,
    });
    expect(m.map(row({ id: 1, email: 'false' }))).toMatchObject({ ok: false, value: 'false' });
    expect(m.map(row({ id: 1, email: { a: 1 } }))).toMatchObject({ ok: false, value: '{"a":1}' });
  });
});

describe('paths', () => {
  it('lists what each field reads: a from list, each placeholder, custom entries', () => {
    const m = compileMapping({
      name: 'p',
      version: 1,
      entity: 'companies',
      fields: {
        external_id: { template: 'x:{a.b}-{C}', required: true },
        name: { from: ['N1', 'N2'], required: true, default: 'none' },
        website: 'W',
        uuid: { constant: 'u' },
      },
      custom: { k: { from: 'K', required: true } },
    });
    expect(m.paths).toEqual([
      { field: 'fields.external_id', refs: ['a.b'], required: true },
      { field: 'fields.external_id', refs: ['C'], required: true },
      { field: 'fields.name', refs: ['N1', 'N2'], required: false },
      { field: 'fields.website', refs: ['W'], required: false },
      { field: 'custom.k', refs: ['K'], required: true },
    ]);
  });
});

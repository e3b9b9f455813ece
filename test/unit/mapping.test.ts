import { describe, expect, it } from 'vitest';
import type { SourceRow } from '../../src/crm/row.js';
import { MappingError, compileMapping } from '../../src/crm/mapping.js';

const base = { name: 'test', version: 2, entity: 'companies' } as const;

function problems(def: unknown): string[] {
  try {
    compileMapping(def);
  } catch (err) {
    expect(err).toBeInstanceOf(MappingError);
    expect((err as MappingError).code).toBe('mapping.invalid');
    return (err as MappingError).problems;
  }
  throw new Error('mapping compiled');
}

const row = (record: Record<string, unknown>, line = 2): SourceRow => ({ line, record });

describe('mapping schema', () => {
  it('reports every problem with its path', () => {
    const p = problems({
      name: 'Bad Name',
      version: 0,
      entity: 'companies',
      feilds: {},
      fields: {
        website: { from: 'Website', transforms: ['trim', 'domian'] },
        nmae: 'Company name',
        name: { transforms: ['trim'] },
        crm_company_id: { from: 'Id', constant: 5 },
        external_id: { template: 'hs:{Record ID' },
        crm_account_id: { from: 'Id', transforms: [{ 'max-length': -1 }] },
        custom: 'X',
      },
      custom: ['Industry'],
    });
    expect(p).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^name: /),
        expect.stringMatching(/^version: /),
        expect.stringContaining('feilds'),
        expect.stringMatching(/^fields\.website\.transforms\[1\]: unknown transform "domian"/),
        'fields.name: needs one of from, template or constant',
        'fields.crm_company_id: set only one of from, template or constant (got from, constant)',
        'fields.external_id.template: unclosed { at character 4',
        'fields.crm_account_id.transforms[0]: max-length: expected a positive whole number',
      ]),
    );
  });

  it('refuses fields the platform request does not have, and custom mapped twice', () => {
    const p = problems({
      ...base,
      fields: { nmae: 'Company name', id: 'Id', custom: 'X' },
      custom: ['Industry'],
    });
    expect(p).toEqual([
      expect.stringMatching(/^fields\.nmae: not a companies request field \(known: name, /),
      expect.stringMatching(/^fields\.id: not a companies request field/),
      'fields.custom: custom is built from the custom section; map it in one place only',
    ]);
  });

  it('reports custom entries and an empty mapping with their paths', () => {
    expect(
      problems({
        ...base,
        fields: {},
        custom: { employees: { from: 'E', transforms: ['intger'] } },
      }),
    ).toEqual([
      expect.stringMatching(/^custom\.employees\.transforms\[0\]: unknown transform "intger"/),
      'fields: map at least one field',
    ]);
  });

  it('checks member fields against the member request', () => {
    expect(problems({ ...base, entity: 'members', fields: { website: 'W' } })[0]).toMatch(
      /^fields\.website: not a members request field/,
    );
  });

  it('checks template placeholders and their transforms', () => {
    expect(problems({ ...base, fields: { external_id: { template: 'x:{Id|domian}' } } })).toEqual([
      expect.stringMatching(/^fields\.external_id\.template: \{Id\|domian\}: unknown transform/),
    ]);
    expect(problems({ ...base, fields: { external_id: { template: 'fixed' } } })[0]).toContain(
      'use constant',
    );
    expect(problems({ ...base, fields: { external_id: { template: 'a}b{X}' } } })[0]).toContain(
      'unmatched }',
    );
  });

  it('gives the fingerprint name@version', () => {
    const m = compileMapping({ ...base, fields: { name: 'Name' } });
    expect(m).toMatchObject({
      name: 'test',
      entity: 'companies',
      version: 2,
      fingerprint: 'test@2',
    });
  });
});

describe('mapping rows', () => {
  const m = compileMapping({
    ...base,
    fields: {
      crm_company_id: { from: 'Record ID', transforms: ['integer'], required: true },
      external_id: { template: 'hubspot:company:{Record ID|integer}' },
      name: { from: 'Company name', transforms: ['trim'], required: true },
      website: { from: ['Company Domain Name', 'Website URL'], transforms: ['website'] },
      crm_account_id: { from: 'Account', default: 'none' },
    },
    custom: { industry: 'Industry', employees: { from: 'Employees', transforms: ['integer'] } },
  });

  it('maps a row to a valid request body', () => {
    const r = m.map(
      row({
        'Record ID': '512.0',
        'Company name': '  Acme ',
        'Company Domain Name': 'N/A',
        'Website URL': 'https://www.acme.com/',
        Industry: '=SUM(A1)',
        Employees: '120',
      }),
    );
    expect(r).toEqual({
      ok: true,
      line: 2,
      body: {
        crm_company_id: 512,
        external_id: 'hubspot:company:512',
        name: 'Acme',
        website: 'https://acme.com',
        crm_account_id: 'none',
        custom: '{"industry":"=SUM(A1)","employees":120}',
      },
    });
  });

  it('matches columns case-insensitively after trimming', () => {
    const r = m.map(row({ ' RECORD ID ': '7', 'COMPANY NAME': 'X' }));
    expect(r).toMatchObject({ ok: true, body: { crm_company_id: 7, name: 'X' } });
    // The remembered key does not stick to a row that has the exact header.
    expect(m.map(row({ 'Record ID': '8', 'Company name': 'Y' }))).toMatchObject({
      body: { crm_company_id: 8, name: 'Y' },
    });
  });

  it('keeps 12-digit HubSpot ids exact', () => {
    const r = m.map(row({ 'Record ID': '987654321012', 'Company name': 'Big' }));
    expect(r).toMatchObject({
      ok: true,
      body: { crm_company_id: 987654321012, external_id: 'hubspot:company:987654321012' },
    });
  });

  it('treats null markers as absent, after trimming', () => {
    const r = m.map(
      row({ 'Record ID': '1', 'Company name': 'A', Industry: ' #N/A ', Employees: '' }),
    );
    expect(r).toEqual({
      ok: true,
      line: 2,
      body: {
        crm_company_id: 1,
        external_id: 'hubspot:company:1',
        name: 'A',
        crm_account_id: 'none',
      },
    });
  });

  it('reports the first failing field in field order', () => {
    const r = m.map(row({ 'Record ID': '12.5', 'Company name': '', Employees: 'x' }, 9));
    expect(r).toEqual({
      ok: false,
      line: 9,
      field: 'crm_company_id',
      reason: 'not a whole number',
      value: '12.5',
    });
  });

  it('names missing columns', () => {
    expect(m.map(row({ 'Record ID': '1' }))).toEqual({
      ok: false,
      line: 2,
      field: 'name',
      reason: 'missing: no value in column Company name',
    });
  });

  it('reports custom entries by key', () => {
    expect(m.map(row({ 'Record ID': '1', 'Company name': 'A', Employees: 'lots' }))).toMatchObject({
      ok: false,
      field: 'custom.employees',
      reason: 'not a number',
      value: 'lots',
    });
  });

  it('cuts the value to 80 characters', () => {
    const long = `${'x'.repeat(200)}@`;
    const r = m.map(row({ 'Record ID': '1', 'Company name': 'A', 'Website URL': long }));
    expect(r).toMatchObject({ ok: false, field: 'website' });
    if (!r.ok) expect(r.value).toBe('x'.repeat(80));
  });

  it('turns unreadable rows and non-objects into invalid results', () => {
    expect(m.map({ line: 4, problem: 'row has 3 fields, header has 4' })).toEqual({
      ok: false,
      line: 4,
      field: '(row)',
      reason: 'row has 3 fields, header has 4',
    });
    expect(m.map({ line: 5, record: [1, 2] as unknown as Record<string, unknown> })).toMatchObject({
      ok: false,
      field: '(row)',
    });
  });

  it('never reads inherited properties as columns', () => {
    const p = compileMapping({
      ...base,
      fields: { name: { from: 'constructor', required: true } },
    });
    expect(p.map(row({}))).toMatchObject({
      ok: false,
      reason: 'missing: no value in column constructor',
    });
  });
});

describe('JSON records', () => {
  const m = compileMapping({
    name: 'hs-api',
    version: 1,
    entity: 'companies',
    nullMarkers: ['', '-'],
    fields: {
      crm_company_id: { from: 'id' },
      name: { from: 'properties.name', required: true },
      website: { from: 'properties.domain', transforms: ['website'] },
      external_id: { template: 'hubspot:company:{properties.hs_object_id}' },
      uuid: { constant: 'fixed' },
    },
    custom: ['properties.tags'],
  });

  it('reads dotted paths and converts values to the platform type', () => {
    const r = m.map(
      row({
        id: '512',
        properties: { hs_object_id: '512', name: 'Acme', domain: 'acme.com', tags: ['a', 'b'] },
      }),
    );
    expect(r).toEqual({
      ok: true,
      line: 2,
      body: {
        crm_company_id: 512,
        name: 'Acme',
        website: 'https://acme.com',
        external_id: 'hubspot:company:512',
        uuid: 'fixed',
        custom: '{"properties.tags":["a","b"]}',
      },
    });
  });

  it('uses the mapping null markers and makes a template with a null placeholder null', () => {
    const r = m.map(row({ id: 1, properties: { name: 'A', domain: '-', hs_object_id: null } }));
    expect(r).toEqual({ ok: true, line: 2, body: { crm_company_id: 1, name: 'A', uuid: 'fixed' } });
  });

  it('refuses objects where text is expected', () => {
    expect(m.map(row({ id: 1, properties: { name: { first: 'A' } } }))).toMatchObject({
      ok: false,
      field: 'name',
      reason: 'expected text, got object',
      value: '{"first":"A"}',
    });
  });
});

describe('members', () => {
  const m = compileMapping({
    name: 'people',
    version: 1,
    entity: 'members',
    fields: {
      external_id: { template: 'crm:{Id}' },
      email: { from: 'Email' },
      first_name: { from: 'Name', transforms: [{ 'split-name': 'first' }] },
      last_name: { from: 'Name', transforms: [{ 'split-name': 'last' }] },
      meeting_insights: { from: 'Insights' },
      role_ids: { from: 'Roles', transforms: ['list'] },
    },
  });

  it('splits names, converts booleans and lists', () => {
    expect(
      m.map(row({ Id: '1', Email: 'a@b.co', Name: 'Roe, Jane', Insights: 'yes', Roles: 'r1;r2' })),
    ).toEqual({
      ok: true,
      line: 2,
      body: {
        external_id: 'crm:1',
        email: 'a@b.co',
        first_name: 'Jane',
        last_name: 'Roe',
        meeting_insights: true,
        role_ids: ['r1', 'r2'],
      },
    });
  });

  it('validates e-mail addresses even without the email transform', () => {
    expect(m.map(row({ Id: '1', Email: 'nope' }))).toMatchObject({
      ok: false,
      field: 'email',
      reason: 'not a valid e-mail address',
      value: 'nope',
    });
  });
});

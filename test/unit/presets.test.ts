import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { MappingError } from '../../src/crm/mapping.js';
import { builtinMappingsDir, listPresets, loadMapping } from '../../src/crm/presets.js';
import type { SourceRow } from '../../src/crm/row.js';

const dir = join(import.meta.dirname, '..', 'fixtures', 'exports');

/** The fixture as SourceRows, each with the line where its row starts (the sources' contract). */
function csvRows(file: string): SourceRow[] {
  const recs = parse(readFileSync(join(dir, file)), { bom: true, columns: true, info: true }) as {
    record: Record<string, string>;
    info: { lines: number };
  }[];
  let end = 1;
  return recs.map((r) => {
    const line = end + 1;
    end = r.info.lines;
    return { line, record: r.record };
  });
}

function ndjsonRows(file: string): SourceRow[] {
  return readFileSync(join(dir, file), 'utf8')
    .split('\n')
    .flatMap((l, i) =>
      l.trim() ? [{ line: i + 1, record: JSON.parse(l) as Record<string, unknown> }] : [],
    );
}

function mapAll(preset: string, rows: SourceRow[]) {
  const m = loadMapping(preset);
  return rows.map((r) => m.map(r));
}

const custom = (o: Record<string, unknown>) => JSON.stringify(o);

describe('presets', () => {
  it('ships the four presets, each compiling', () => {
    expect(listPresets()).toEqual(
      expect.arrayContaining([
        'hubspot-companies',
        'hubspot-owners',
        'salesforce-accounts',
        'salesforce-users',
      ]),
    );
    for (const name of listPresets())
      expect(loadMapping(name).fingerprint).toMatch(/^[a-z-]+@\d+$/);
  });

  it('hubspot-companies maps the UI export', () => {
    expect(mapAll('hubspot-companies', csvRows('hubspot-companies.csv'))).toEqual([
      {
        ok: true,
        line: 2,
        body: {
          crm_company_id: 512,
          external_id: 'hubspot:company:512',
          name: 'Acme Corp',
          website: 'https://acme.com',
          custom: custom({
            industry: 'COMPUTER_SOFTWARE',
            employees: 120,
            annual_revenue: '1000000',
            phone: '+1 555 0100',
            city: 'Springfield',
            region: 'IL',
            country: 'United States',
            owner: 'Jane Roe',
          }),
        },
      },
      {
        ok: true,
        line: 3,
        body: {
          crm_company_id: 513,
          external_id: 'hubspot:company:513',
          name: 'Globex',
          website: 'https://globex.com',
          custom: custom({ country: 'Germany' }),
        },
      },
      {
        ok: true,
        line: 4,
        body: {
          crm_company_id: 987654321012,
          external_id: 'hubspot:company:987654321012',
          name: 'Initech, Inc.',
          website: 'https://initech.example.org/about',
          custom: custom({
            industry: '=HYPERLINK("http://evil.example")',
            employees: 45,
            city: 'Austin',
            region: 'TX',
            country: 'United States',
            owner: 'Bill L',
          }),
        },
      },
      {
        ok: true,
        line: 5,
        body: { crm_company_id: 600, external_id: 'hubspot:company:600', name: 'Umbrella' },
      },
      { ok: false, line: 6, field: 'name', reason: 'missing: no value in column Company name' },
      {
        ok: false,
        line: 7,
        field: 'website',
        reason: 'an e-mail address, not a website',
        value: 'info@vandelay.com',
      },
      {
        ok: false,
        line: 8,
        field: 'custom.employees',
        reason: 'not a whole number',
        value: '12.5',
      },
    ]);
  });

  it('hubspot-owners maps owners API records', () => {
    expect(mapAll('hubspot-owners', ndjsonRows('hubspot-owners.ndjson'))).toEqual([
      {
        ok: true,
        line: 1,
        body: {
          external_id: 'hubspot:owner:41',
          email: 'jane.roe@example.com',
          first_name: 'Jane',
          last_name: 'Roe',
          custom: custom({ hubspot_user_id: 9001, archived: false }),
        },
      },
      {
        ok: true,
        line: 2,
        body: {
          external_id: 'hubspot:owner:42',
          email: 'bob@example.com',
          first_name: 'Bob',
          custom: custom({ hubspot_user_id: 9002, archived: true }),
        },
      },
      {
        ok: false,
        line: 3,
        field: 'email',
        reason: 'not a valid e-mail address',
        value: 'not-an-email',
      },
      { ok: false, line: 4, field: 'email', reason: 'missing: no value in column email' },
    ]);
  });

  it('salesforce-accounts maps a Data Loader export with capital headers', () => {
    expect(mapAll('salesforce-accounts', csvRows('salesforce-accounts.csv'))).toEqual([
      {
        ok: true,
        line: 2,
        body: {
          crm_account_id: '001M000000qfPySIAU',
          external_id: 'salesforce:001M000000qfPySIAU',
          name: 'Burlington Textiles',
          website: 'https://burlington.com',
          custom: custom({
            type: 'Customer - Direct',
            industry: 'Apparel',
            employees: 9000,
            phone: '(336) 222-7000',
            city: 'Burlington',
            country: 'USA',
            owner_id: '00558000001N0KeAAK',
          }),
        },
      },
      {
        ok: true,
        line: 3,
        body: {
          crm_account_id: '0015g00000AbCdEAAV',
          external_id: 'salesforce:0015g00000AbCdEAAV',
          name: 'Edge Communications',
          website: 'https://edgecomm.com',
          custom: custom({
            type: 'Customer - Channel',
            industry: 'Electronics',
            employees: 1000,
            city: 'Austin',
            country: 'USA',
            owner_id: '00558000001N0KeAAK',
          }),
        },
      },
      {
        ok: false,
        line: 4,
        field: 'crm_account_id',
        reason: 'not a Salesforce id: checksum AAA does not match AAV',
        value: '0015g00000XyZaBAAA',
      },
      {
        ok: false,
        line: 5,
        field: 'crm_account_id',
        reason: 'not a Salesforce id: 6 characters, expected 15 or 18',
        value: '001XYZ',
      },
      {
        ok: true,
        line: 6,
        body: {
          crm_account_id: '0015g00000QrStUAAV',
          external_id: 'salesforce:0015g00000QrStUAAV',
          name: 'Pyramid Construction',
          custom: custom({
            type: 'Customer - Direct',
            industry: 'Construction',
            city: 'Paris',
            country: 'France',
          }),
        },
      },
    ]);
  });

  it('salesforce-users maps users, IsActive into custom', () => {
    expect(mapAll('salesforce-users', csvRows('salesforce-users.csv'))).toEqual([
      {
        ok: true,
        line: 2,
        body: {
          external_id: 'salesforce:00558000001N0KeAAK',
          email: 'jane@acme.example',
          first_name: 'Jane',
          last_name: 'Roe',
          custom: custom({
            is_active: true,
            username: 'jane@acme.example.sandbox',
            title: 'VP Sales',
            department: 'Sales',
          }),
        },
      },
      {
        ok: true,
        line: 3,
        body: {
          external_id: 'salesforce:0055g00000AbCdEAAV',
          email: 'bob@acme.example',
          first_name: 'Bob',
          last_name: 'Stone',
          custom: custom({ is_active: false, username: 'bob@acme.example', department: 'Support' }),
        },
      },
      { ok: false, line: 4, field: 'email', reason: 'missing: no value in column Email' },
      {
        ok: false,
        line: 5,
        field: 'custom.is_active',
        reason: 'not a yes/no value (true/false, yes/no, 1/0)',
        value: 'maybe',
      },
    ]);
  });

  it('says which presets exist when one is missing', () => {
    try {
      loadMapping('hubspot-compnies');
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(MappingError);
      expect((err as MappingError).code).toBe('mapping.not-found');
      expect((err as MappingError).message).toContain(builtinMappingsDir);
      expect((err as MappingError).message).toContain('hubspot-companies');
    }
    expect(() => loadMapping('../etc/passwd')).toThrow(MappingError);
  });

  it('compiles an inline mapping object', () => {
    const m = loadMapping({ name: 'x', version: 1, entity: 'members', fields: { email: 'E' } });
    expect(m.map({ line: 2, record: { E: 'a@b.co' } })).toEqual({
      ok: true,
      line: 2,
      body: { email: 'a@b.co' },
    });
  });
});

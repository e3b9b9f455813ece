import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  compileMapping,
  MappingError,
  type MappingDefinitionInput,
} from '../../src/crm/mapping.js';
import {
  builtinMappingsDir,
  findPreset,
  listPresets,
  loadMapping,
  readYamlFile,
} from '../../src/crm/presets.js';
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

const PRESETS = [
  'attio-companies',
  'attio-workspace-members',
  'close-leads',
  'close-users',
  'copper-companies',
  'copper-people',
  'dynamics-accounts',
  'dynamics-systemusers',
  'freshsales-accounts',
  'freshsales-contacts',
  'hubspot-companies',
  'hubspot-contacts',
  'hubspot-owners',
  'pipedrive-organizations',
  'pipedrive-users',
  'salesforce-accounts',
  'salesforce-contacts',
  'salesforce-leads',
  'salesforce-users',
  'zendesk-sell-organizations',
  'zendesk-sell-people',
  'zoho-accounts',
  'zoho-users',
];

/** Maps one record with a preset, as line 2. */
function map1(preset: string, record: Record<string, unknown>) {
  return loadMapping(preset).map({ line: 2, record });
}

describe('presets', () => {
  it('ships every preset, each compiling', () => {
    expect(listPresets()).toEqual(PRESETS);
    for (const name of listPresets())
      expect(loadMapping(name).fingerprint).toMatch(/^[a-z-]+@\d+$/);
  });

  it('gives every preset its own external_id namespace', () => {
    const prefixes = PRESETS.map((name) => {
      const def = readYamlFile(findPreset(name)!).value as {
        fields: { external_id: { template: string } };
      };
      return def.fields.external_id.template.replace(/\{.*$/, '');
    });
    // Salesforce ids name their object themselves (001 Account, 003 Contact, 00Q Lead, 005 User):
    // one namespace for all four.
    const salesforce = PRESETS.filter((name) => name.startsWith('salesforce-'));
    expect(salesforce).toHaveLength(4);
    const distinct = new Set(prefixes.filter((p) => p !== 'salesforce:'));
    expect(distinct.size).toBe(PRESETS.length - salesforce.length);
    expect(prefixes.filter((p) => p === 'salesforce:')).toHaveLength(salesforce.length);
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
          website: 'https://GLOBEX.COM',
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
          website: 'http://www.initech.example.org/about/',
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
      {
        ok: false,
        line: 6,
        field: 'name',
        reason: 'missing: no value in columns Company name, properties.name',
        identity: 'x:hubspot:company:601',
      },
      {
        ok: true,
        line: 7,
        body: {
          crm_company_id: 602,
          external_id: 'hubspot:company:602',
          name: 'Vandelay Industries',
        },
        warnings: [
          {
            field: 'website',
            reason: 'an e-mail address, not a website',
            value: 'info@vandelay.com',
          },
        ],
      },
      {
        ok: true,
        line: 8,
        body: {
          crm_company_id: 603,
          external_id: 'hubspot:company:603',
          name: 'Stark\nIndustries',
          website: 'https://stark.com',
        },
        warnings: [{ field: 'custom.employees', reason: 'not a whole number', value: '12.5' }],
      },
    ]);
  });

  it('hubspot-companies maps an API v3 object to the same record as its UI row', () => {
    const api = map1('hubspot-companies', {
      id: '512',
      properties: {
        hs_object_id: '512',
        name: 'Acme Corp',
        domain: 'acme.com',
        website: 'https://www.acme.com/',
        industry: 'COMPUTER_SOFTWARE',
        numberofemployees: '120',
        city: 'Springfield',
        hubspot_owner_id: '41',
      },
      archived: false,
    });
    expect(api).toEqual({
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
          city: 'Springfield',
          owner_id: 41,
        }),
      },
    });
    // The UI export's first row is the same company: the same identity.
    const ui = mapAll('hubspot-companies', csvRows('hubspot-companies.csv'))[0]!;
    const ids = (r: typeof ui) =>
      r.ok ? [r.body.external_id, (r.body as { crm_company_id?: number }).crm_company_id] : r;
    expect(ids(ui)).toEqual(ids(api));
    expect(
      map1('hubspot-companies', { id: '513', properties: { name: 'Gone' }, archived: true }),
    ).toEqual({
      ok: false,
      skip: true,
      line: 2,
      field: 'skip.archived',
      rule: 'archived',
      reason: 'archived in HubSpot',
      value: true,
      identity: 'x:hubspot:company:513',
    });
  });

  it('hubspot-contacts maps the UI export and the API alike', () => {
    const ui = map1('hubspot-contacts', {
      'Record ID': '713492963559',
      'First Name': 'Updated',
      'Last Name': 'Contact',
      Email: 'test-contact-2026@example.com',
      'Phone Number': '+1234567890',
      'Associated Company': 'Test Company Inc',
      'Associated Company IDs (Primary)': '406260751575',
    });
    const api = map1('hubspot-contacts', {
      id: '713492963559',
      properties: {
        email: 'test-contact-2026@example.com',
        firstname: 'Updated',
        lastname: 'Contact',
        phone: '+1234567890',
        company: 'Test Company Inc',
        associatedcompanyid: '406260751575',
      },
      archived: false,
    });
    const body = {
      external_id: 'hubspot:contact:713492963559',
      email: 'test-contact-2026@example.com',
      first_name: 'Updated',
      last_name: 'Contact',
      custom: custom({
        phone: '+1234567890',
        company: 'Test Company Inc',
        company_id: 406260751575,
      }),
    };
    expect(ui).toEqual({ ok: true, line: 2, body });
    expect(api).toEqual({ ok: true, line: 2, body });
    expect(map1('hubspot-contacts', { id: '1', properties: {}, archived: false })).toMatchObject({
      ok: false,
      field: 'email',
      identity: 'x:hubspot:contact:1',
    });
  });

  it('hubspot-owners maps owners API records; archived owners and queues are skipped', () => {
    expect(mapAll('hubspot-owners', ndjsonRows('hubspot-owners.ndjson'))).toEqual([
      {
        ok: true,
        line: 1,
        body: {
          external_id: 'hubspot:owner:41',
          email: 'Jane.Roe@Example.com',
          first_name: 'Jane',
          last_name: 'Roe',
          custom: custom({ hubspot_user_id: 9001 }),
        },
      },
      {
        ok: false,
        skip: true,
        line: 2,
        field: 'skip.archived',
        rule: 'archived',
        reason: 'archived in HubSpot',
        value: true,
        identity: 'x:hubspot:owner:42',
      },
      {
        ok: false,
        line: 3,
        field: 'email',
        reason: 'not a valid e-mail address',
        value: 'not-an-email',
        identity: 'x:hubspot:owner:43',
      },
      {
        ok: false,
        line: 4,
        field: 'email',
        reason: 'missing: no value in column email',
        identity: 'x:hubspot:owner:44',
      },
    ]);
    expect(
      map1('hubspot-owners', { id: '77', email: 'q@example.com', type: 'QUEUE', archived: false }),
    ).toMatchObject({ skip: true, reason: 'not a person (HubSpot owner type QUEUE)' });
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
          website: 'https://www.burlington.com',
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
          website: 'http://edgecomm.com',
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

  it('salesforce-accounts skips deleted and merged accounts in every shape; an empty lookup is no merge', () => {
    const base = { Id: '001M000000qfPyS', Name: 'Burlington Textiles' };
    const skipped = (record: Record<string, unknown>) => {
      const r = map1('salesforce-accounts', record);
      return r.ok ? 'synced' : r.skip ? r.reason : `invalid: ${r.reason}`;
    };
    // Weekly Data Export: "0"/"1" and 000000000000000AAA.
    expect(skipped({ ...base, IsDeleted: '0', MasterRecordId: '000000000000000AAA' })).toBe(
      'synced',
    );
    expect(skipped({ ...base, IsDeleted: '1', MasterRecordId: '000000000000000AAA' })).toBe(
      'deleted in Salesforce (IsDeleted)',
    );
    // Data Loader before v61: upper-case headers.
    expect(skipped({ ID: base.Id, NAME: base.Name, ISDELETED: 'true' })).toBe(
      'deleted in Salesforce (IsDeleted)',
    );
    expect(skipped({ ID: base.Id, NAME: base.Name, ISDELETED: 'false', MASTERRECORDID: '' })).toBe(
      'synced',
    );
    // REST query JSON: booleans and null.
    expect(
      skipped({ attributes: { type: 'Account' }, ...base, IsDeleted: false, MasterRecordId: null }),
    ).toBe('synced');
    expect(skipped({ ...base, IsDeleted: false, MasterRecordId: '0015g00000AbCdEAAV' })).toBe(
      'merged into another record (MasterRecordId 0015g00000AbCdEAAV)',
    );
    // An empty lookup is absent wherever it appears, not an owner id.
    expect(map1('salesforce-accounts', { ...base, OwnerId: '000000000000000AAA' })).toEqual({
      ok: true,
      line: 2,
      body: {
        crm_account_id: '001M000000qfPySIAU',
        external_id: 'salesforce:001M000000qfPySIAU',
        name: 'Burlington Textiles',
      },
    });
  });

  it('salesforce-users maps users, IsActive into custom', () => {
    expect(mapAll('salesforce-users', csvRows('salesforce-users.csv'))).toEqual([
      {
        ok: true,
        line: 2,
        body: {
          external_id: 'salesforce:00558000001N0KeAAK',
          email: 'Jane@Acme.Example',
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
      {
        ok: false,
        line: 4,
        field: 'email',
        reason: 'missing: no value in column Email',
        identity: 'x:salesforce:0055g00000ZzYyXAAV',
      },
      {
        ok: true,
        line: 5,
        body: {
          external_id: 'salesforce:0055g00000MnOpQAAV',
          email: 'x@acme.example',
          first_name: 'Bad',
          last_name: 'Flag',
          custom: custom({ username: 'x@acme.example' }),
        },
        warnings: [
          {
            field: 'custom.is_active',
            reason: 'not a yes/no value (true/false, yes/no, 1/0)',
            value: 'maybe',
          },
        ],
      },
    ]);
  });

  it('salesforce-users skips users that are not people of the org, by UserType', () => {
    const user = { Id: '005jV000000yp9LQAQ', Email: 'noreply@00djv000002guncuao' };
    for (const type of [
      'AutomatedProcess',
      'CloudIntegrationUser',
      'CsnOnly',
      'Guest',
      'PowerPartner',
    ]) {
      expect(map1('salesforce-users', { ...user, UserType: type })).toMatchObject({
        skip: true,
        reason: `not a person of the org (UserType ${type})`,
      });
    }
    expect(
      map1('salesforce-users', { ...user, Email: 'jane@acme.example', UserType: 'Standard' }),
    ).toMatchObject({
      ok: true,
    });
    // Without UserType in the export, the address on the org's internal domain still tells.
    expect(map1('salesforce-users', user)).toMatchObject({
      skip: true,
      rule: 'internal-email',
      reason:
        "a Salesforce system user: Email noreply@00djv000002guncuao is on the org's internal domain",
    });
  });

  it("salesforce-users skips Salesforce's system addresses, by Username and by Email, each with its reason", () => {
    const person = {
      Id: '005jV000001PwZ0QAK',
      Username: 'person.two@example.com',
      Email: 'person.two@example.com',
      UserType: 'Standard',
    };
    expect(map1('salesforce-users', person)).toMatchObject({ ok: true });
    // Rows shaped as in test/fixtures/real/salesforce (Standard users Salesforce creates itself).
    const cases: [Record<string, string>, string, string][] = [
      [
        { Username: 'integration@00d5g000004abcdeam.com', Email: 'noreply@example.com' },
        'internal-username',
        "a Salesforce system user: Username integration@00d5g000004abcdeam.com is on the org's internal domain",
      ],
      [
        { Username: 'INSIGHTSSECURITY@00D5G000004ABCD.COM', Email: 'person.two@example.com' },
        'internal-username',
        "a Salesforce system user: Username INSIGHTSSECURITY@00D5G000004ABCD.COM is on the org's internal domain",
      ],
      [
        {
          Username: 'chatty.00d5g000004abcdeam.x1@chatter.salesforce.com',
          Email: 'noreply@example.com',
        },
        'chatter-username',
        'a Salesforce system user: Username chatty.00d5g000004abcdeam.x1@chatter.salesforce.com is a Chatter system address',
      ],
      [
        { Email: 'insightsintegration@00d5g000004abcdeam.ext' },
        'internal-email',
        "a Salesforce system user: Email insightsintegration@00d5g000004abcdeam.ext is on the org's internal domain",
      ],
      [
        { Email: 'NoReply@Salesforce.com' },
        'salesforce-noreply',
        "a Salesforce app or integration user: Email NoReply@Salesforce.com is Salesforce's no-reply address",
      ],
      [
        { Email: 'noreply@chatter.salesforce.com' },
        'salesforce-noreply',
        "a Salesforce app or integration user: Email noreply@chatter.salesforce.com is Salesforce's no-reply address",
      ],
      [
        { Email: 'insightssecurity@example.com' },
        'placeholder-email',
        'a Salesforce system user: Email insightssecurity@example.com is the placeholder Salesforce gives it',
      ],
    ];
    for (const [row, rule, reason] of cases) {
      expect(map1('salesforce-users', { ...person, Username: '', ...row })).toMatchObject({
        skip: true,
        rule,
        reason,
      });
    }
    // Addresses that only look alike stay people: a person at salesforce.com, an org id in a
    // local part, a no-reply address of another domain, a domain that only starts like an org id.
    for (const Email of [
      'jane@salesforce.com',
      'kh.huang+00dwt000006gypz@salesforce.com',
      'noreply@mail.example.com',
      'jane@00d5g000004abcdeam-partners.com',
    ]) {
      expect(map1('salesforce-users', { ...person, Username: Email, Email })).toMatchObject({
        ok: true,
      });
    }
  });

  it('salesforce-contacts and salesforce-leads map people by their own ids, in every shape', () => {
    const contact = {
      Id: '003jV000005OEtN',
      AccountId: '001jV0000050DOz',
      Email: 'rose@edge.com',
      FirstName: 'Rose',
      LastName: 'Gonzalez',
      Title: 'SVP, Procurement',
    };
    const body = {
      external_id: 'salesforce:003jV000005OEtNQAW',
      email: 'rose@edge.com',
      first_name: 'Rose',
      last_name: 'Gonzalez',
      custom: custom({ account_id: '001jV0000050DOzQAM', title: 'SVP, Procurement' }),
    };
    expect(map1('salesforce-contacts', contact)).toEqual({ ok: true, line: 2, body });
    // Data Loader before v61: upper-case headers; REST: attributes, booleans and null.
    const upper = Object.fromEntries(Object.entries(contact).map(([k, v]) => [k.toUpperCase(), v]));
    expect(map1('salesforce-contacts', { ...upper, ISDELETED: 'false' })).toEqual({
      ok: true,
      line: 2,
      body,
    });
    expect(
      map1('salesforce-contacts', {
        attributes: { type: 'Contact' },
        ...contact,
        IsDeleted: false,
        MasterRecordId: null,
        Department: null,
      }),
    ).toEqual({ ok: true, line: 2, body });
    const reason = (preset: string, record: Record<string, unknown>) => {
      const r = map1(preset, record);
      return r.ok ? 'synced' : r.skip ? r.reason : `invalid: ${r.reason}`;
    };
    // Weekly Data Export: "0"/"1" and 000000000000000AAA lookups.
    expect(reason('salesforce-contacts', { ...contact, IsDeleted: '1' })).toBe(
      'deleted in Salesforce (IsDeleted)',
    );
    expect(
      reason('salesforce-contacts', {
        ...contact,
        IsDeleted: '0',
        MasterRecordId: '000000000000000AAA',
      }),
    ).toBe('synced');
    expect(
      reason('salesforce-contacts', { ...contact, MasterRecordId: '003jV000005OEtOQAW' }),
    ).toBe('merged into another record (MasterRecordId 003jV000005OEtOQAW)');

    const lead = {
      Id: '00QjV000001Mo5p',
      Email: 'pat@pyramid.net',
      FirstName: 'Pat',
      LastName: 'Stumuller',
      Company: 'Pyramid Construction Inc.',
      Status: 'Closed - Converted',
      IsConverted: 'false',
    };
    expect(map1('salesforce-leads', lead)).toEqual({
      ok: true,
      line: 2,
      body: {
        external_id: 'salesforce:00QjV000001Mo5pUAC',
        email: 'pat@pyramid.net',
        first_name: 'Pat',
        last_name: 'Stumuller',
        custom: custom({ company: 'Pyramid Construction Inc.', status: 'Closed - Converted' }),
      },
    });
    // Only IsConverted says a lead became a contact, in each spelling of true.
    for (const converted of ['true', '1', true])
      expect(
        map1('salesforce-leads', {
          ...lead,
          IsConverted: converted,
          ConvertedContactId: '003jV000005OEtQQAW',
        }),
      ).toEqual({
        ok: false,
        skip: true,
        line: 2,
        field: 'skip.converted',
        rule: 'converted',
        reason: 'converted into a contact (IsConverted)',
        value: converted,
        identity: 'x:salesforce:00QjV000001Mo5pUAC',
      });
    expect(reason('salesforce-leads', { ...lead, IsConverted: '0', IsDeleted: '1' })).toBe(
      'deleted in Salesforce (IsDeleted)',
    );
    expect(reason('salesforce-leads', { ...lead, Email: null })).toBe(
      'invalid: missing: no value in column Email',
    );
  });

  it('freshsales presets: integer ids, deleted records skipped', () => {
    const account = { id: 17001321830, name: 'Widgetz.io (sample)', website: 'widgetz.io' };
    expect(map1('freshsales-accounts', { ...account, is_deleted: false, owner_id: null })).toEqual({
      ok: true,
      line: 2,
      body: {
        external_id: 'freshsales:account:17001321830',
        name: 'Widgetz.io (sample)',
        website: 'https://widgetz.io',
      },
    });
    expect(map1('freshsales-accounts', { ...account, is_deleted: true })).toMatchObject({
      skip: true,
      reason: 'deleted in Freshsales (is_deleted)',
      identity: 'x:freshsales:account:17001321830',
    });
    const contact = { id: 17008066468, email: 'jane@example.com', first_name: 'Jane' };
    expect(map1('freshsales-contacts', { ...contact, is_deleted: 'true' })).toMatchObject({
      skip: true,
      reason: 'deleted in Freshsales (is_deleted)',
    });
    expect(map1('freshsales-contacts', { ...contact, email: null })).toMatchObject({
      ok: false,
      field: 'email',
      identity: 'x:freshsales:contact:17008066468',
    });
  });

  it('copper presets read the first of a list (websites, emails); a person with none is invalid', () => {
    const company = {
      id: 35082308,
      name: 'Company Five',
      websites: [
        { url: 'https://five.example/', category: 'work' },
        { url: 'https://other.example/', category: 'other' },
      ],
      phone_numbers: [{ number: '123-555-9876', category: 'work' }],
      email_domain: 'five.example',
      assignee_id: 289533,
    };
    expect(map1('copper-companies', company)).toEqual({
      ok: true,
      line: 2,
      body: {
        external_id: 'copper:company:35082308',
        name: 'Company Five',
        website: 'https://five.example/',
        custom: custom({ email_domain: 'five.example', phone: '123-555-9876', owner_id: 289533 }),
      },
    });
    // No website: the field is left out, not cleared.
    expect(map1('copper-companies', { ...company, websites: [] })).toMatchObject({
      ok: true,
      body: { external_id: 'copper:company:35082308', name: 'Company Five' },
    });
    const person = { id: 78757050, first_name: 'Person', last_name: 'One' };
    expect(
      map1('copper-people', {
        ...person,
        emails: [
          { email: 'PersonOne@example.com', category: 'work' },
          { email: 'p1@example.org', category: 'personal' },
        ],
      }),
    ).toEqual({
      ok: true,
      line: 2,
      body: {
        external_id: 'copper:person:78757050',
        email: 'PersonOne@example.com',
        first_name: 'Person',
        last_name: 'One',
      },
    });
    expect(map1('copper-people', { ...person, emails: [] })).toEqual({
      ok: false,
      line: 2,
      field: 'email',
      reason: 'missing: no value in column emails[0].email',
      identity: 'x:copper:person:78757050',
    });
  });

  it('zendesk-sell presets split one contacts list by is_organization, enveloped or unwrapped', () => {
    // Zendesk's own sample contact (an organization), as a /v2/contacts item.
    const org = {
      id: 1,
      owner_id: 1,
      is_organization: true,
      contact_id: null,
      parent_organization_id: 2,
      name: 'Design Services Company',
      first_name: null,
      last_name: null,
      industry: 'Design Services',
      website: 'http://www.designservice.com',
      email: null,
      address: { line1: '2726 Smith Street', city: 'Hyannis', state: 'MA', country: 'US' },
    };
    const company = {
      ok: true,
      line: 2,
      body: {
        external_id: 'zendesk-sell:organization:1',
        name: 'Design Services Company',
        website: 'http://www.designservice.com',
        custom: custom({
          industry: 'Design Services',
          city: 'Hyannis',
          country: 'US',
          owner_id: 1,
          parent_organization_id: 2,
        }),
      },
    };
    expect(map1('zendesk-sell-organizations', { data: org, meta: { type: 'contact' } })).toEqual(
      company,
    );
    expect(map1('zendesk-sell-organizations', org)).toEqual(company);
    expect(map1('zendesk-sell-people', { data: org, meta: { type: 'contact' } })).toMatchObject({
      skip: true,
      reason: 'an organization, not a person (is_organization true)',
    });

    const person = {
      id: 7,
      is_organization: false,
      contact_id: 1,
      first_name: 'Mark',
      last_name: 'Johnson',
      email: 'mark@designservice.example',
      title: 'CEO',
      owner_id: 1,
    };
    const member = {
      ok: true,
      line: 2,
      body: {
        external_id: 'zendesk-sell:person:7',
        email: 'mark@designservice.example',
        first_name: 'Mark',
        last_name: 'Johnson',
        custom: custom({ title: 'CEO', organization_id: 1, owner_id: 1 }),
      },
    };
    expect(map1('zendesk-sell-people', { data: person, meta: { type: 'contact' } })).toEqual(
      member,
    );
    expect(map1('zendesk-sell-people', person)).toEqual(member);
    expect(
      map1('zendesk-sell-organizations', { data: person, meta: { type: 'contact' } }),
    ).toMatchObject({
      skip: true,
      reason: 'a person, not an organization (is_organization false)',
    });
    const { is_organization: _, ...unmarked } = person;
    expect(map1('zendesk-sell-organizations', { data: unmarked })).toMatchObject({
      skip: true,
      reason: 'not marked as an organization (no is_organization)',
    });
  });

  it('pipedrive presets: organizations by id (owner an object), deleted ones skipped; users split their name', () => {
    const org = {
      id: 2,
      name: 'Acme Corp',
      owner_id: { id: 25760681, name: 'Nango', email: 'api@example.com', value: 25760681 },
      company_id: 15043420,
      address: '123 Main St, San Francisco, CA 94105',
      website: 'acme.example',
      active_flag: true,
    };
    expect(map1('pipedrive-organizations', org)).toEqual({
      ok: true,
      line: 2,
      body: {
        external_id: 'pipedrive:organization:2',
        name: 'Acme Corp',
        website: 'https://acme.example',
        custom: custom({
          address: '123 Main St, San Francisco, CA 94105',
          owner_id: 25760681,
          owner: 'Nango',
        }),
      },
    });
    expect(map1('pipedrive-organizations', { ...org, active_flag: false })).toMatchObject({
      skip: true,
      reason: 'deleted in Pipedrive (active_flag false)',
    });
    // API v2 sends owner_id as a number.
    expect(map1('pipedrive-organizations', { ...org, owner_id: 7 })).toMatchObject({
      body: { custom: custom({ address: org.address, owner_id: 7 }) },
    });
    const user = {
      id: 25760681,
      name: 'Mary Ann Smith',
      email: 'm@example.com',
      active_flag: false,
      is_admin: 1,
      is_deleted: false,
    };
    expect(map1('pipedrive-users', user)).toEqual({
      ok: true,
      line: 2,
      body: {
        external_id: 'pipedrive:user:25760681',
        email: 'm@example.com',
        first_name: 'Mary Ann',
        last_name: 'Smith',
        custom: custom({ is_active: false, is_admin: true }),
      },
    });
    expect(map1('pipedrive-users', { ...user, is_deleted: true })).toMatchObject({ skip: true });
  });

  it('zoho presets keep 19-digit ids as text; deleted users are skipped', () => {
    expect(
      map1('zoho-accounts', {
        id: '7328395000000680055',
        Account_Name: 'King (Sample)',
        Website: 'http://kingmanufacturing.com',
        Employees: 445,
        Owner: { name: 'Nango Developer', id: '7328395000000605001', email: 'api@example.com' },
      }),
    ).toEqual({
      ok: true,
      line: 2,
      body: {
        external_id: 'zoho:account:7328395000000680055',
        name: 'King (Sample)',
        website: 'http://kingmanufacturing.com',
        custom: custom({
          employees: 445,
          owner: 'Nango Developer',
          owner_id: '7328395000000605001',
        }),
      },
    });
    const user = {
      id: '7328395000000605001',
      email: 'dev@example.com',
      first_name: 'Nango',
      last_name: 'Developer',
      status: 'active',
      role: { name: 'CEO' },
    };
    expect(map1('zoho-users', user)).toMatchObject({
      ok: true,
      body: {
        external_id: 'zoho:user:7328395000000605001',
        custom: custom({ status: 'active', role: 'CEO' }),
      },
    });
    expect(map1('zoho-users', { ...user, status: 'deleted' })).toMatchObject({
      skip: true,
      reason: 'deleted in Zoho (status deleted)',
    });
  });

  it('attio presets read the first value of each attribute; suspended members are skipped', () => {
    const value = (v: Record<string, unknown>) => [{ active_until: null, ...v }];
    expect(
      map1('attio-companies', {
        id: {
          workspace_id: 'w',
          object_id: 'o',
          record_id: '30cd786f-3618-4a0c-9710-318801ef86b2',
        },
        values: {
          name: value({ value: 'Attio' }),
          domains: [...value({ domain: 'attio.com' }), ...value({ domain: 'attio.io' })],
          description: [],
          categories: value({ option: { title: 'SAAS' } }),
        },
      }),
    ).toEqual({
      ok: true,
      line: 2,
      body: {
        external_id: 'attio:company:30cd786f-3618-4a0c-9710-318801ef86b2',
        name: 'Attio',
        website: 'https://attio.com',
        custom: custom({ domains: ['attio.com', 'attio.io'], categories: ['SAAS'] }),
      },
    });
    const member = {
      id: { workspace_member_id: 'm-1' },
      email_address: 'a@example.com',
      first_name: 'A',
      last_name: 'B',
      access_level: 'member',
    };
    expect(map1('attio-workspace-members', member)).toMatchObject({
      ok: true,
      body: { external_id: 'attio:workspace-member:m-1', email: 'a@example.com' },
    });
    expect(map1('attio-workspace-members', { ...member, access_level: 'suspended' })).toMatchObject(
      {
        skip: true,
      },
    );
  });

  it('close-leads falls back to display_name; close-users keys on the user id', () => {
    expect(
      map1('close-leads', {
        id: 'lead_1',
        name: '',
        display_name: 'Globex Industries',
        url: 'https://globex.com',
      }),
    ).toEqual({
      ok: true,
      line: 2,
      body: {
        external_id: 'close:lead:lead_1',
        name: 'Globex Industries',
        website: 'https://globex.com',
      },
    });
    expect(map1('close-users', { id: 'user_1', email: 'u@example.com', first_name: 'U' })).toEqual({
      ok: true,
      line: 2,
      body: { external_id: 'close:user:user_1', email: 'u@example.com', first_name: 'U' },
    });
  });

  it('dynamics presets: lower-case GUIDs, annotation keys, inactive accounts and non-people skipped', () => {
    const account = {
      '@odata.etag': 'W/"81359849"',
      name: 'Litware, Inc. (sample)',
      statecode: 0,
      '_ownerid_value@OData.Community.Display.V1.FormattedValue': 'FirstName LastName',
      _ownerid_value: '4026BE43-6B69-E111-8F65-78E7D1620F5E',
      accountid: '78914942-34CB-ED11-B596-0022481D68CD',
    };
    expect(map1('dynamics-accounts', account)).toEqual({
      ok: true,
      line: 2,
      body: {
        external_id: 'dynamics:account:78914942-34cb-ed11-b596-0022481d68cd',
        name: 'Litware, Inc. (sample)',
        custom: custom({
          owner: 'FirstName LastName',
          owner_id: '4026be43-6b69-e111-8f65-78e7d1620f5e',
        }),
      },
    });
    expect(map1('dynamics-accounts', { ...account, statecode: 1 })).toMatchObject({
      skip: true,
      reason: 'inactive in Dynamics (statecode 1)',
    });
    const user = {
      systemuserid: '31914B34-BE8D-E611-80D8-00155D892DDC',
      internalemailaddress: 'u@example.com',
      accessmode: 0,
      isdisabled: true,
    };
    expect(map1('dynamics-systemusers', user)).toEqual({
      ok: true,
      line: 2,
      body: {
        external_id: 'dynamics:systemuser:31914b34-be8d-e611-80d8-00155d892ddc',
        email: 'u@example.com',
        custom: custom({ disabled: true }),
      },
    });
    for (const mode of [3, 4, 5])
      expect(map1('dynamics-systemusers', { ...user, accessmode: mode })).toMatchObject({
        skip: true,
        reason: `not a person of the org (accessmode ${mode})`,
      });
  });

  it('dynamics-systemusers skips the built-in SYSTEM and INTEGRATION users and "# " application users by full name', () => {
    // Shaped as test/fixtures/real/dynamics/systemusers-web-api.json; the full names are
    // those Microsoft documents (System and application users).
    const person = {
      systemuserid: '4026be43-6b69-e111-8f65-78e7d1620f5e',
      fullname: 'FirstName LastName',
      internalemailaddress: 'firstname.lastname@example.com',
      accessmode: 0,
      isdisabled: false,
    };
    expect(map1('dynamics-systemusers', person)).toMatchObject({ ok: true });
    for (const fullname of ['SYSTEM', 'INTEGRATION']) {
      // No mailbox: without the rule the row would be invalid for its e-mail.
      const builtIn = { ...person, fullname, internalemailaddress: null, isdisabled: true };
      expect(map1('dynamics-systemusers', builtIn)).toMatchObject({
        skip: true,
        rule: 'built-in-user',
        reason: `a built-in Dynamics user (fullname ${fullname}): nobody signs in as it`,
      });
    }
    const app = {
      ...person,
      fullname: '# Dynamics 365 Sales',
      internalemailaddress: 'Dynamics365Sales@onmicrosoft.com',
    };
    expect(map1('dynamics-systemusers', app)).toMatchObject({
      skip: true,
      rule: 'application-user',
      reason: 'a Microsoft application user (fullname # Dynamics 365 Sales)',
    });
    // A name that only contains a # or the word system is a person's.
    for (const fullname of ['Anna #1 Fan', 'System Admin', 'Jo Integration'])
      expect(map1('dynamics-systemusers', { ...person, fullname })).toMatchObject({ ok: true });
    // Turned off by name, the application user comes back.
    const off = loadMapping('dynamics-systemusers').withSkipRules({ 'application-user': false });
    expect(off.map({ line: 2, record: app })).toMatchObject({
      ok: true,
      body: { email: 'Dynamics365Sales@onmicrosoft.com' },
    });
  });

  it('fills crm_company_id only in HubSpot presets and crm_account_id only in Salesforce ones', () => {
    for (const name of PRESETS) {
      const def = readYamlFile(findPreset(name)!).value as { fields: Record<string, unknown> };
      expect('crm_company_id' in def.fields, name).toBe(name === 'hubspot-companies');
      expect('crm_account_id' in def.fields, name).toBe(name === 'salesforce-accounts');
    }
  });

  it('the matches / notMatches example of docs/MAPPING.md gives the results its table says', () => {
    const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'MAPPING.md'), 'utf8');
    const section = doc.slice(doc.indexOf('A worked example (test/unit/presets.test.ts'));
    const block = /```yaml\n([\s\S]*?)```/.exec(section)![1]!;
    const m = compileMapping({
      name: 'doc-example',
      version: 1,
      entity: 'members',
      ...(parseYaml(block) as { skip: MappingDefinitionInput['skip'] }),
      fields: {
        external_id: { template: 'salesforce:{Id}', required: true },
        email: { from: 'Email', transforms: ['email'], required: true },
      },
    });
    const table = section.slice(
      section.indexOf('| Email | result |'),
      section.indexOf('\n\n', section.indexOf('| Email | result |')),
    );
    const rows = table.split('\n').slice(2);
    expect(rows).toHaveLength(5);
    for (const line of rows) {
      const [, cell, result] = line.split('|').map((c) => c.trim());
      const email = cell === '(empty)' ? '' : cell!.replace(/`/g, '');
      const out = m.map({ line: 2, record: { Id: '5', Email: email } });
      const rule = /^skipped by `([a-z-]+)`/.exec(result!)?.[1];
      if (rule !== undefined) expect(out, line).toMatchObject({ skip: true, rule });
      else if (result!.startsWith('kept by both'))
        expect(out, line).toMatchObject({ ok: false, field: 'email' });
      else expect(out, line).toMatchObject({ ok: true });
    }
  });

  it('the inline mapping of docs/MAPPING.md maps Odoo search_read partners', () => {
    const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'MAPPING.md'), 'utf8');
    const section = doc.slice(doc.indexOf('### An inline mapping for a CRM with no preset'));
    const block = /```yaml\n([\s\S]*?)```/.exec(section)![1]!;
    const job = parseYaml(block) as { mapping: MappingDefinitionInput };
    const m = loadMapping(job.mapping);
    // Records shaped as Odoo answers: false for every empty field.
    expect(
      m.map({
        line: 2,
        record: {
          id: 3,
          name: 'Victor Nango',
          email: 'api@example.com',
          phone: false,
          is_company: false,
        },
      }),
    ).toEqual({
      ok: false,
      skip: true,
      line: 2,
      field: 'skip.person',
      rule: 'person',
      reason: 'a person, not a company (is_company false)',
      identity: 'x:odoo:res.partner:3',
    });
    expect(
      m.map({
        line: 3,
        record: {
          id: 25,
          name: 'Deco Addict',
          email: false,
          phone: false,
          website: false,
          is_company: true,
        },
      }),
    ).toEqual({
      ok: true,
      line: 3,
      body: { external_id: 'odoo:res.partner:25', name: 'Deco Addict' },
    });
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

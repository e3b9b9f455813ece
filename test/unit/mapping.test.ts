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
        website: 'https://www.acme.com/',
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

  it('reports the first failing strict field in field order, with the identity that did map', () => {
    const r = m.map(row({ 'Record ID': '12.5', 'Company name': '', Employees: 'x' }, 9));
    expect(r).toEqual({
      ok: false,
      line: 9,
      field: 'crm_company_id',
      reason: 'not a whole number',
      value: '12.5',
      // crm_company_id and external_id failed; crm_account_id (its default) is left.
      identity: 'a:none',
    });
  });

  it('names missing columns, and says whose row it was', () => {
    expect(m.map(row({ 'Record ID': '1' }))).toEqual({
      ok: false,
      line: 2,
      field: 'name',
      reason: 'missing: no value in column Company name',
      identity: 'x:hubspot:company:1',
    });
  });

  it('drops a failing custom entry with a warning; the row still maps', () => {
    expect(
      m.map(row({ 'Record ID': '1', 'Company name': 'A', Employees: 'lots', Industry: 'IT' })),
    ).toEqual({
      ok: true,
      line: 2,
      body: {
        crm_company_id: 1,
        external_id: 'hubspot:company:1',
        name: 'A',
        crm_account_id: 'none',
        custom: '{"industry":"IT"}',
      },
      warnings: [{ field: 'custom.employees', reason: 'not a number', value: 'lots' }],
    });
  });

  it('drops a failing optional field with a warning, its value cut to 80 characters', () => {
    const long = `${'x'.repeat(200)}@`;
    const r = m.map(row({ 'Record ID': '1', 'Company name': 'A', 'Website URL': long }));
    expect(r).toEqual({
      ok: true,
      line: 2,
      body: {
        crm_company_id: 1,
        external_id: 'hubspot:company:1',
        name: 'A',
        crm_account_id: 'none',
      },
      warnings: [
        { field: 'website', reason: 'an e-mail address, not a website', value: 'x'.repeat(80) },
      ],
    });
  });

  it('leaves out a formula given as a website, with a warning; the row still maps', () => {
    const formula = '=HYPERLINK("http://evil.example","x")';
    const r = m.map(row({ 'Record ID': '3', 'Company name': 'C', 'Website URL': formula }));
    expect(r).toEqual({
      ok: true,
      line: 2,
      body: {
        crm_company_id: 3,
        external_id: 'hubspot:company:3',
        name: 'C',
        crm_account_id: 'none',
      },
      warnings: [
        { field: 'website', reason: 'not a website: "=" cannot be in a host name', value: formula },
      ],
    });
  });

  it("carries the reader's warning on a row first among its warnings", () => {
    const r = m.map({
      line: 7,
      record: { 'Record ID': '1', 'Company name': 'Peña', 'Website URL': 'x@example.com' },
      warning: 'decoded as windows-1252: not UTF-8 at byte 99 of the export',
    });
    expect(r).toMatchObject({
      ok: true,
      line: 7,
      body: { name: 'Peña' },
      warnings: [
        { field: '(row)', reason: 'decoded as windows-1252: not UTF-8 at byte 99 of the export' },
        { field: 'website', reason: 'an e-mail address, not a website' },
      ],
    });
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

describe('strict and optional fields', () => {
  const m = compileMapping({
    name: 'people',
    version: 1,
    entity: 'members',
    fields: {
      external_id: { template: 'crm:{Id}' },
      email: { from: 'Email', transforms: ['email'] },
      first_name: { from: 'First', transforms: [{ 'max-length': 5 }], required: true },
      last_name: { from: 'Last', transforms: [{ 'max-length': 5 }], onInvalid: 'reject-row' },
      role: { from: 'Role', transforms: [{ 'max-length': 5 }] },
      meeting_insights: { from: 'Insights' },
    },
    custom: {
      since: { from: 'Since', transforms: ['date'] },
      level: { from: 'Level', transforms: ['integer'], onInvalid: 'reject-row' },
    },
  });
  const good = { Id: '7', Email: 'Jane@Example.com', First: 'Jane', Last: 'Roe' };

  it('keeps every failing optional value out of the body, one warning each, in field order', () => {
    expect(
      m.map(row({ ...good, Role: 'Director', Insights: 'maybe', Since: '13/13/2024', Level: '3' })),
    ).toEqual({
      ok: true,
      line: 2,
      body: {
        external_id: 'crm:7',
        email: 'Jane@Example.com',
        first_name: 'Jane',
        last_name: 'Roe',
        custom: '{"level":3}',
      },
      warnings: [
        { field: 'role', reason: 'longer than 5 characters (8)', value: 'Director' },
        {
          field: 'meeting_insights',
          reason: 'not a yes/no value (true/false, yes/no, 1/0)',
          value: 'maybe',
        },
        {
          field: 'custom.since',
          reason:
            'not an ISO date (YYYY-MM-DD); list the accepted formats, e.g. { date: "M/D/YYYY" }',
          value: '13/13/2024',
        },
      ],
    });
  });

  it('has no warnings key when nothing failed', () => {
    expect(m.map(row(good))).not.toHaveProperty('warnings');
  });

  it.each([
    ['a required field', { First: 'Johannes' }, 'first_name', 'x:crm:7'],
    ['a field with onInvalid: reject-row', { Last: 'Schmidt' }, 'last_name', 'x:crm:7'],
    ['a custom entry with onInvalid: reject-row', { Level: 'high' }, 'custom.level', 'x:crm:7'],
    ['an identity field (email)', { Email: 'jane(at)example.com' }, 'email', 'x:crm:7'],
  ])('makes the row invalid on %s', (_, change, field, identity) => {
    expect(m.map(row({ ...good, ...change, Role: 'Director' }))).toMatchObject({
      ok: false,
      field,
      identity,
    });
  });

  it('gives the next identity key when the first identity field is the one that failed', () => {
    const ids = compileMapping({
      ...base,
      fields: {
        external_id: { template: 'hs:{Id|integer}' },
        crm_company_id: { from: 'Id2', transforms: ['integer'] },
        name: { from: 'Name', required: true },
      },
    });
    expect(ids.map(row({ Id: 'x1', Id2: '44', Name: 'A' }))).toEqual({
      ok: false,
      line: 2,
      field: 'external_id',
      reason: 'Id: not a number',
      value: 'x1',
      identity: 'c:44',
    });
    expect(ids.map(row({ Id: 'x1', Name: 'A' }))).not.toHaveProperty('identity');
  });

  it('refuses an unknown onInvalid', () => {
    expect(problems({ ...base, fields: { name: { from: 'N', onInvalid: 'ignore' } } })[0]).toMatch(
      /^fields\.name\.onInvalid: /,
    );
  });
});

describe('skip rules', () => {
  const users = {
    name: 'sf-users',
    version: 1,
    entity: 'members',
    skip: {
      deleted: {
        from: 'IsDeleted',
        transforms: ['boolean'],
        equals: true,
        reason: 'deleted in Salesforce (IsDeleted)',
      },
      merged: {
        from: 'MasterRecordId',
        present: true,
        reason: 'merged into another record (MasterRecordId)',
      },
      'not-a-person': {
        from: 'UserType',
        notIn: ['Standard'],
        reason: 'not a person of the org (UserType {value})',
      },
    },
    fields: {
      external_id: { template: 'salesforce:{Id}', required: true },
      email: { from: 'Email', required: true },
    },
  } as const;
  const m = compileMapping(users);
  const live = { Id: '5', Email: 'a@b.co', IsDeleted: 'false', UserType: 'Standard' };

  it('maps a live row', () => {
    expect(m.map(row(live))).toMatchObject({ ok: true, body: { external_id: 'salesforce:5' } });
    expect(m.skipRules).toEqual(['deleted', 'merged', 'not-a-person']);
  });

  it('skips a row a rule matches, with the reason, the value read and the identity', () => {
    expect(m.map(row({ ...live, IsDeleted: '1' }, 4))).toEqual({
      ok: false,
      skip: true,
      line: 4,
      rule: 'deleted',
      field: 'skip.deleted',
      reason: 'deleted in Salesforce (IsDeleted)',
      value: '1',
      identity: 'x:salesforce:5',
    });
  });

  it('checks the rules before the fields: an odd e-mail of a system user is no invalid row', () => {
    expect(
      m.map(row({ Id: '6', Email: 'noreply@00D5g000004', UserType: 'AutomatedProcess' })),
    ).toEqual({
      ok: false,
      skip: true,
      line: 2,
      rule: 'not-a-person',
      field: 'skip.not-a-person',
      reason: 'not a person of the org (UserType AutomatedProcess)',
      value: 'AutomatedProcess',
      identity: 'x:salesforce:6',
    });
  });

  it('takes the first rule that matches, in the order written', () => {
    expect(
      m.map(row({ ...live, IsDeleted: 'TRUE', MasterRecordId: '005x', UserType: 'Guest' })),
    ).toMatchObject({ rule: 'deleted' });
    expect(m.map(row({ ...live, MasterRecordId: '005x', UserType: 'Guest' }))).toMatchObject({
      rule: 'merged',
      value: '005x',
    });
  });

  it('compares in/notIn/equals as text without regard to case', () => {
    expect(m.map(row({ ...live, UserType: ' standard ' }))).toMatchObject({ ok: true });
    const archived = compileMapping({
      ...users,
      skip: {
        archived: { from: 'archived', equals: 'TRUE', reason: 'archived in HubSpot' },
        portal: { from: 'UserType', in: ['PowerPartner', 'CspLitePortal'], reason: 'portal' },
      },
    });
    expect(archived.map(row({ ...live, archived: true }))).toMatchObject({ rule: 'archived' });
    expect(archived.map(row({ ...live, archived: false }))).toMatchObject({ ok: true });
    expect(archived.map(row({ ...live, UserType: 'powerpartner' }))).toMatchObject({
      rule: 'portal',
    });
  });

  it('matches an absent value (null marker) only with present: false', () => {
    // UserType absent: notIn does not match; MasterRecordId "N/A": present: true does not match.
    expect(m.map(row({ Id: '5', Email: 'a@b.co', MasterRecordId: 'N/A' }))).toMatchObject({
      ok: true,
    });
    const noEmail = compileMapping({
      ...users,
      skip: { 'no-email': { from: ['Email', 'Username'], present: false, reason: 'no address' } },
    });
    expect(noEmail.map(row({ Id: '5', Email: '#N/A' }))).toMatchObject({ rule: 'no-email' });
    expect(noEmail.map(row({ Id: '5', Email: '', Username: 'u@b.co' }))).toMatchObject({
      ok: false,
      field: 'email',
    });
  });

  it('gives an absent value to present: false as absent, transforms or not', () => {
    const noEmail = compileMapping({
      ...users,
      skip: {
        'no-email': {
          from: 'Email',
          transforms: ['trim'],
          present: false,
          reason: 'no address ({value})',
        },
      },
    });
    // Strict: the skipped row has no `value` key at all, not one holding undefined.
    expect(noEmail.map(row({ Id: '5', Email: '' }))).toStrictEqual({
      ok: false,
      skip: true,
      line: 2,
      rule: 'no-email',
      field: 'skip.no-email',
      reason: 'no address ()',
      identity: 'x:salesforce:5',
    });
  });

  it('tests a JSON object or list as its JSON text', () => {
    const owners = compileMapping({
      ...users,
      skip: {
        archived: { from: 'meta', matches: '"state":"archived"', reason: 'archived' },
        bots: { from: 'teams', in: ['["bots"]'], reason: 'a bot' },
      },
      fields: { external_id: { template: 'hubspot:owner:{id}' }, email: 'email' },
    });
    const owner = { id: '1', email: 'a@b.co' };
    expect(owners.map(row({ ...owner, meta: { state: 'archived' } }))).toMatchObject({
      rule: 'archived',
    });
    expect(owners.map(row({ ...owner, meta: { state: 'active' } }))).toMatchObject({ ok: true });
    expect(owners.map(row({ ...owner, teams: ['Bots'] }))).toMatchObject({ rule: 'bots' });
    expect(owners.map(row({ ...owner, teams: ['bots', 'sales'] }))).toMatchObject({ ok: true });
  });

  it('does not match when the rule transform fails', () => {
    expect(m.map(row({ ...live, IsDeleted: 'perhaps' }))).toMatchObject({ ok: true });
  });

  it('reads JSON paths', () => {
    const owners = compileMapping({
      ...users,
      skip: { archived: { from: 'meta.archived', equals: true, reason: 'archived in HubSpot' } },
      fields: { external_id: { template: 'hubspot:owner:{id}' }, email: 'email' },
    });
    expect(owners.map(row({ id: '1', email: 'a@b.co', meta: { archived: true } }))).toMatchObject({
      rule: 'archived',
      // As the export had it: the JSON true, not the text "true".
      value: true,
      identity: 'x:hubspot:owner:1',
    });
  });

  it('lets a job turn rules off by name, and names the known rules for an unknown one', () => {
    const kept = m.withSkipRules({ merged: false, deleted: true });
    expect(kept.skipRules).toEqual(['deleted', 'not-a-person']);
    expect(kept.map(row({ ...live, MasterRecordId: '005x' }))).toMatchObject({ ok: true });
    expect(kept.map(row({ ...live, IsDeleted: 'yes' }))).toMatchObject({ rule: 'deleted' });
    expect(kept.fingerprint).toBe(m.fingerprint);
    // The original mapping is unchanged.
    expect(m.map(row({ ...live, MasterRecordId: '005x' }))).toMatchObject({ rule: 'merged' });
    expect(() => m.withSkipRules({ mergd: false })).toThrow(
      'skip.mergd: no skip rule "mergd" in the mapping (known: deleted, merged, not-a-person)',
    );
    expect(() => compileMapping({ ...users, skip: undefined }).withSkipRules({ x: false })).toThrow(
      'no skip rule "x": the mapping has no skip rules',
    );
  });

  it('matches and notMatches test a pattern without regard to case, on the trimmed text', () => {
    const robots = compileMapping({
      ...users,
      skip: {
        internal: {
          from: 'Username',
          matches: '@00d[0-9a-z]{12}(?:[0-9a-z]{3})?(?:\\.|$)',
          reason: 'org-internal username {value}',
        },
        'not-acme': { from: 'Email', notMatches: '@acme\\.example$', reason: 'outside {value}' },
      },
    });
    const person = { Id: '5', Email: 'a@acme.example', Username: 'a@acme.example' };
    expect(robots.map(row(person))).toMatchObject({ ok: true });
    // The pattern is lower case, the value upper case: it matches all the same.
    expect(
      robots.map(row({ ...person, Username: ' INTEGRATION@00D5G000004ABCDEAM.COM ' })),
    ).toMatchObject({
      rule: 'internal',
      reason: 'org-internal username  INTEGRATION@00D5G000004ABCDEAM.COM ',
    });
    expect(robots.map(row({ ...person, Username: 'autoproc@00d5g000004abcd' }))).toMatchObject({
      rule: 'internal',
    });
    // 16 characters after the @ are no org id.
    expect(robots.map(row({ ...person, Username: 'x@00d5g000004abcdx.com' }))).toMatchObject({
      ok: true,
    });
    // Trimmed, so `$` holds before the trailing space: not skipped (the field then refuses the space).
    expect(robots.map(row({ ...person, Email: 'A@ACME.EXAMPLE ' }))).toMatchObject({
      ok: false,
      field: 'email',
    });
    expect(robots.map(row({ ...person, Email: 'a@other.example' }))).toMatchObject({
      rule: 'not-acme',
      reason: 'outside a@other.example',
    });
    // JSON scalars are tested as their text.
    const numbers = compileMapping({
      ...users,
      skip: { test: { from: 'n', matches: '^9\\d+$', reason: 'test id {value}' } },
    });
    expect(numbers.map(row({ ...live, n: 9001 }))).toMatchObject({ rule: 'test', value: 9001 });
    expect(numbers.map(row({ ...live, n: 1001 }))).toMatchObject({ ok: true });
  });

  it('matches and notMatches never match an absent value', () => {
    const m2 = compileMapping({
      ...users,
      skip: {
        noreply: { from: 'Email', matches: '^noreply@', reason: 'no-reply' },
        outside: { from: 'Username', notMatches: '@acme\\.example$', reason: 'outside' },
      },
    });
    // Username absent (no column, or a null marker): notMatches does not match it.
    expect(m2.map(row({ Id: '5', Email: 'a@acme.example' }))).toMatchObject({ ok: true });
    expect(m2.map(row({ Id: '5', Email: 'a@acme.example', Username: 'N/A' }))).toMatchObject({
      ok: true,
    });
    // Email absent: matches does not match it either; the row is then invalid for its field.
    expect(m2.map(row({ Id: '5', Email: '', Username: 'a@acme.example' }))).toMatchObject({
      ok: false,
      field: 'email',
    });
  });

  it('gives the same answer on every row: no state carries from one row to the next', () => {
    const m2 = compileMapping({
      ...users,
      skip: { noreply: { from: 'Email', matches: 'noreply', reason: 'no-reply' } },
    });
    const r = row({ Id: '5', Email: 'noreply@salesforce.com' });
    expect([m2.map(r), m2.map(r), m2.map(r)].map((x) => x.ok)).toEqual([false, false, false]);
  });

  it('refuses an invalid or overlong pattern when the mapping is validated, naming rule and path', () => {
    const p = problems({
      ...users,
      skip: {
        broken: { from: 'Username', matches: '@00d(', reason: 'r' },
        'broken-not': { from: ['Email', 'Username'], notMatches: '[z-a]', reason: 'r' },
        long: { from: 'Email', matches: 'a'.repeat(501), reason: 'r' },
        both: { from: 'Email', matches: 'a', equals: 'a', reason: 'r' },
      },
    });
    expect(p).toEqual([
      expect.stringMatching(
        /^skip\.broken\.matches: not a valid regular expression \(JavaScript syntax\): Invalid regular expression: .*\(testing Username\)$/,
      ),
      expect.stringMatching(
        /^skip\.broken-not\.notMatches: not a valid regular expression .*\(testing Email, Username\)$/,
      ),
      'skip.long.matches: a pattern of at most 500 characters (got 501) (testing Email)',
      'skip.both: set only one of equals, in, notIn, matches, notMatches or present (got equals, matches)',
    ]);
  });

  it('takes a pattern of exactly 500 characters, the most allowed', () => {
    const pattern = `^${'a'.repeat(498)}$`;
    expect(pattern).toHaveLength(500);
    const long = compileMapping({
      ...users,
      skip: { long: { from: 'Username', matches: pattern, reason: 'long name' } },
    });
    expect(long.map(row({ ...live, Username: 'A'.repeat(498) }))).toMatchObject({
      rule: 'long',
    });
  });

  it('reports every problem of the skip section with its path', () => {
    expect(
      problems({
        ...users,
        skip: {
          Deleted: { from: 'IsDeleted', equals: true, reason: 'r' },
          both: { from: 'X', equals: 1, present: true, reason: 'r' },
          none: { from: 'X', reason: 'r' },
          noreason: { from: 'X', present: true },
          typo: { from: 'X', present: true, reason: 'r', transforms: ['domian'] },
          extra: { from: 'X', present: true, reason: 'r', when: 1 },
        },
      }),
    ).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^skip\.Deleted: a rule name uses lower-case/),
        'skip.both: set only one of equals, in, notIn, matches, notMatches or present (got equals, present)',
        'skip.none: needs one of equals, in, notIn, matches, notMatches or present',
        expect.stringMatching(/^skip\.noreason\.reason: /),
        expect.stringMatching(/^skip\.typo\.transforms\[0\]: unknown transform "domian"/),
        expect.stringMatching(/^skip\.extra: .*when/),
      ]),
    );
  });
});

/**
 * Mapped bodies skip the zod parse per row (see CompileOptions.verifyWithSchema):
 * this checks, on arbitrary rows, that every accepted body is one the platform
 * request schema accepts, and that verifying changes no result.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileMapping } from '../../src/crm/mapping.js';
import { findPreset, readYamlFile } from '../../src/crm/presets.js';
import { CompanyRequest, MemberRequest } from '../../src/platform/schemas.js';

const COLUMNS: Record<string, string[]> = {
  'hubspot-companies': [
    'Record ID',
    'Company name',
    'Company Domain Name',
    'Website URL',
    'Industry',
    'Number of Employees',
    'Phone Number',
  ],
  'hubspot-owners': ['id', 'email', 'firstName', 'lastName', 'userId', 'archived'],
  'salesforce-accounts': ['Id', 'Name', 'Website', 'NumberOfEmployees', 'OwnerId'],
  'salesforce-users': ['Id', 'Email', 'FirstName', 'LastName', 'IsActive'],
};

const cell = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom(
    '',
    'N/A',
    ' 512 ',
    '512.0',
    '12.5',
    '9007199254740993',
    'acme.com',
    'https://www.Acme.com/x/',
    'info@acme.com',
    'Jane.Roe@Example.com',
    'a@b',
    'true',
    'no',
    '001M000000qfPyS',
    '001M000000qfPySIAU',
    '001M000000qfPySAAA',
    '=SUM(A1)',
  ),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
);

describe.each(Object.keys(COLUMNS))('preset %s', (preset) => {
  const def = readYamlFile(findPreset(preset)!).value;
  const fast = compileMapping(def);
  const verified = compileMapping(def, { verifyWithSchema: true });
  const schema = fast.entity === 'companies' ? CompanyRequest : MemberRequest;
  const record = fc.record(Object.fromEntries(COLUMNS[preset]!.map((c) => [c, cell])));

  it('accepts only bodies the platform schema accepts, and verifying changes nothing', () => {
    fc.assert(
      fc.property(record, (rec) => {
        const row = { line: 2, record: rec };
        const r = fast.map(row);
        if (r.ok) expect(schema.safeParse(r.body).success).toBe(true);
        expect(verified.map(row)).toEqual(r);
      }),
      { numRuns: 1500 },
    );
  });
});

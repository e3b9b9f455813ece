/**
 * The export check of `crm-sync validate`: a local export is read whole, and
 * validate says how many rows it has, the encodings they were read in, and
 * what a run would warn of, leave out or find invalid, with the first lines.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { pathReport } from '../../src/cli/validate-paths.js';
import { salesforceChecksum } from '../../src/crm/salesforce-id.js';
import { loadJobs, type JobDefinition } from '../../src/jobs/definition.js';

const dir = mkdtempSync(join(tmpdir(), 'crm-sync-validate-export-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HEADER =
  '"Id","Username","FirstName","LastName","Email","IsActive","UserType","Title","Department","LastModifiedDate","SystemModstamp"';

/**
 * 300 Salesforce users, every cell quoted, CRLF. Every third row (i % 3 == 0)
 * has accented names; row 10 a bad e-mail, row 20 an automated user, row 31
 * a cell too many.
 */
function userCells(i: number): string[] {
  const id15 = `005D0000${String(i + 1).padStart(7, '0')}`;
  const accented = i % 3 === 0;
  const cells = [
    id15 + salesforceChecksum(id15),
    `u${i}@acme.example`,
    accented ? 'Françoise' : 'Anna',
    accented ? 'Müller' : 'Smith',
    i === 10 ? 'not-an-address' : `u${i}@acme.example`,
    '1',
    i === 20 ? 'AutomatedProcess' : 'Standard',
    'Engineer',
    'R&D',
    '2026-01-05T10:00:00.000Z',
    '2026-01-05T10:00:00.000Z',
  ];
  if (i === 31) cells.push('extra');
  return cells;
}
const lines = [HEADER, ...Array.from({ length: 300 }, (_, i) => userCells(i))].map(
  (cells) => `${typeof cells === 'string' ? cells : cells.map((c) => `"${c}"`).join(',')}\r\n`,
);
const text = lines.join('');
writeFileSync(join(dir, 'User.csv'), Buffer.from(text, 'latin1'));

function jobOf(name: string, source: Record<string, unknown>): JobDefinition {
  writeFileSync(
    join(dir, `${name}.yaml`),
    stringify({ entity: 'members', source, mapping: 'salesforce-users' }),
  );
  const { jobs, problems } = loadJobs(dir);
  expect(problems).toEqual([]);
  return jobs.find((j) => j.name === name)!;
}

// Row i is on line i + 2; its first byte outside ASCII is the ç of Françoise.
const firstAccent = lines[0]!.length + lines[1]!.indexOf('ç');
const path = join(dir, 'User.csv');

describe('validate: the whole export', () => {
  it('counts every row of a Latin-1 export, the encodings it met, and what a run would warn of', async () => {
    const job = jobOf('users', { path: 'User.csv' });
    expect(await pathReport(job, { fetch: false, env: {} })).toEqual({
      problems: [],
      lines: [
        `export users: ${path}: 300 rows (utf-8 199 rows, windows-1252 100 rows)`,
        `warning: ${job.file}: 100 rows would sync with a warning: (row): decoded as windows-1252: not UTF-8 at byte ${firstAccent} of the export (lines 2, 5, 8, 11, 14, …)`,
        `warning: ${job.file}: 1 row would be invalid: email: not a valid e-mail address (line 12)`,
        `note: ${job.file}: 1 row would be skipped: skip.not-a-person: not a person of the org (UserType AutomatedProcess) (line 22)`,
        `warning: ${job.file}: 1 row would be invalid: (row): row has 12 fields, header has 11 (line 33)`,
        `paths users: checked all 299 rows read from ${path}: every mapped path found a value`,
      ],
    });
  });

  it('with encoding utf-8, counts the rows that are not UTF-8 and says they would be invalid', async () => {
    const job = jobOf('strict', { path: 'User.csv', encoding: 'utf-8' });
    const report = (await pathReport(job, { fetch: false, env: {} })).lines;
    expect(report[0]).toBe(`export strict: ${path}: 300 rows (utf-8 199 rows, not utf-8 100 rows)`);
    expect(report[1]).toBe(
      `warning: ${job.file}: 100 rows would be invalid: (row): not UTF-8 at byte ${firstAccent} of the export; set source.encoding if the export is Windows-1252 (lines 2, 5, 8, 11, 14, …)`,
    );
    expect(report.at(-1)).toBe(
      `paths strict: checked all 199 rows read from ${path}: every mapped path found a value`,
    );
  });
});

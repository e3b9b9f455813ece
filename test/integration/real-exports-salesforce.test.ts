/**
 * The Salesforce presets on real exports of four shapes: a Data Loader
 * extract (upper-case headers in alphabetical order), a weekly Data Export
 * ("0" booleans, 000000000000000AAA lookups), a Bulk API 2.0 CSV (quoted
 * "false", newlines in addresses) and a REST query saved as JSON (records
 * with `attributes`); and User exports full of system users.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import {
  REAL,
  expectOnPlatform,
  failureLines,
  jsonRecords,
  syncTwice,
  useRealEngine,
} from './real-exports-harness.js';

const engine = useRealEngine();

type Row = Record<string, string>;

function csvRecords(file: string): Row[] {
  return parse(readFileSync(join(REAL, file)), { bom: true, columns: true }) as Row[];
}

/** A row's field by API name, whatever the header's case (Data Loader wrote NAME). */
function field(row: Record<string, unknown>, name: string): unknown {
  const key = Object.keys(row).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : row[key];
}

/** The account on the platform that an export row should give: ids are already 18 characters. */
function account(row: Record<string, unknown>): Record<string, unknown> & { external_id: string } {
  const id = String(field(row, 'Id'));
  expect(id).toHaveLength(18);
  return { external_id: `salesforce:${id}`, crm_account_id: id, name: field(row, 'Name') };
}

describe('real Salesforce account exports', () => {
  it('Data Loader extract with upper-case headers: every account once', async () => {
    const h = engine();
    const rows = csvRecords('salesforce/accounts-data-loader.csv');
    expect(Object.keys(rows[0]!)).toEqual(['ACCOUNTSOURCE', 'ID', 'NAME', 'NUMBEROFEMPLOYEES']);
    const { first, failures } = await syncTwice(h, {
      job: 'sf-accounts-data-loader',
      preset: 'salesforce-accounts',
      entity: 'companies',
      file: 'salesforce/accounts-data-loader.csv',
    });
    expect(first.counts).toMatchObject({ read: 58, created: 58, invalid: 0, skipped: 0 });
    expect(failureLines(failures)).toEqual([]);
    await expectOnPlatform(h, 'companies', rows.map(account));
  });

  it('weekly Data Export: "0" is not deleted, 000000000000000AAA is an empty lookup', async () => {
    const h = engine();
    const rows = csvRecords('salesforce/accounts-data-export.csv');
    expect(rows.map((r) => [r.IsDeleted, r.ParentId])).toEqual([['0', '000000000000000AAA']]);
    const { first, failures } = await syncTwice(h, {
      job: 'sf-accounts-data-export',
      preset: 'salesforce-accounts',
      entity: 'companies',
      file: 'salesforce/accounts-data-export.csv',
    });
    expect(first.counts).toMatchObject({ read: 1, created: 1, invalid: 0, skipped: 0 });
    expect(failureLines(failures)).toEqual([]);
    await expectOnPlatform(h, 'companies', rows.map(account));
  });

  it('Bulk API CSV: quoted booleans, addresses over several lines, www.expressl&t.net kept', async () => {
    const h = engine();
    const rows = csvRecords('salesforce/accounts-bulk-api.csv');
    const { first, failures } = await syncTwice(h, {
      job: 'sf-accounts-bulk',
      preset: 'salesforce-accounts',
      entity: 'companies',
      file: 'salesforce/accounts-bulk-api.csv',
    });
    expect(rows.every((r) => r.IsDeleted === 'false' && r.MasterRecordId === '')).toBe(true);
    expect(first.counts).toMatchObject({ read: 8, created: 8, invalid: 0, skipped: 0 });
    expect(failureLines(failures)).toEqual([]);
    await expectOnPlatform(h, 'companies', rows.map(account));
    await expectOnPlatform(h, 'companies', [
      { external_id: 'salesforce:001jV0000050DP5QAM', website: 'https://www.expressl&t.net' },
    ]);
  });

  it('REST query JSON: records with attributes, the first page of a longer result', async () => {
    const h = engine();
    const records = jsonRecords('salesforce/accounts-rest-query.json', 'records');
    const { first, failures } = await syncTwice(h, {
      job: 'sf-accounts-rest',
      preset: 'salesforce-accounts',
      entity: 'companies',
      file: 'salesforce/accounts-rest-query.json',
    });
    expect(first.counts).toMatchObject({ read: 40, created: 40, invalid: 0, skipped: 0 });
    expect(failureLines(failures)).toEqual([]);
    await expectOnPlatform(h, 'companies', records.map(account));
  });
});

describe('real Salesforce user exports', () => {
  it('Bulk API CSV with UserType: only Standard users; of two sharing an address, the first is kept', async () => {
    const h = engine();
    const rows = csvRecords('salesforce/users-bulk-api.csv');
    const standard = rows.filter((r) => r.UserType === 'Standard');
    const byEmail = new Map<string, Row[]>();
    for (const r of standard) byEmail.set(r.Email!, [...(byEmail.get(r.Email!) ?? []), r]);
    // The export has no modified time: of the rows sharing an address, the first (in the file) is kept.
    const live = standard.filter((r) => byEmail.get(r.Email!)![0] === r);
    const shared = standard.filter((r) => byEmail.get(r.Email!)![0] !== r);
    expect([live.length, shared.length]).toEqual([4, 1]);

    const { first, failures } = await syncTwice(h, {
      job: 'sf-users-bulk',
      preset: 'salesforce-users',
      entity: 'members',
      file: 'salesforce/users-bulk-api.csv',
    });
    expect(first.counts).toMatchObject({
      read: 15,
      created: 4,
      skipped: 10,
      conflict: 0,
      duplicates: 1,
    });
    expect(failures.filter((f) => f.kind === 'skipped').map((f) => [f.identity, f.reason])).toEqual(
      rows
        .filter((r) => r.UserType !== 'Standard')
        .map((r) => [`x:salesforce:${r.Id}`, `not a person of the org (UserType ${r.UserType})`]),
    );
    const duplicates = failures.filter((f) => f.kind === 'duplicate');
    expect(duplicates.map((f) => [f.identity, f.record, f.survivor?.record])).toEqual(
      shared.map((r) => [
        `e:${r.Email}`,
        `x:salesforce:${r.Id}`,
        `x:salesforce:${byEmail.get(r.Email!)![0]!.Id}`,
      ]),
    );
    expect(failures).toHaveLength(11);
    await expectOnPlatform(
      h,
      'members',
      live.map((r) => ({
        external_id: `salesforce:${r.Id}`,
        email: r.Email,
        first_name: r.FirstName,
        last_name: r.LastName,
      })),
    );
  });

  it('REST query JSON without UserType: system addresses are invalid or duplicates, and a person of another org with the same address is a conflict', async () => {
    const h = engine();
    const records = jsonRecords('salesforce/users-rest-query.json', 'records');
    const { first, failures } = await syncTwice(h, {
      job: 'sf-users-rest',
      preset: 'salesforce-users',
      entity: 'members',
      file: 'salesforce/users-rest-query.json',
    });
    // noreply@00d… has no dot in its domain: not an address the platform takes.
    const invalid = records.filter((r) => /^noreply@00d/i.test(String(r.Email)));
    const sharedAddress = records.filter((r) => r.Email === 'noreply@example.com');
    // OrgFarm EPIC's address is also on the user of the org synced above (another job's record),
    // and so is noreply@example.com: the one of the three kept (the first; their SystemModstamp
    // is the same) is a conflict, the other two its duplicates.
    const otherOrg = records.filter(
      (r) => r.Email === 'epic.orgfarm@salesforce.com' || r === sharedAddress[0],
    );
    const live = records.filter(
      (r) => !invalid.includes(r) && !sharedAddress.includes(r) && !otherOrg.includes(r),
    );
    expect([invalid.length, sharedAddress.length, otherOrg.length, live.length]).toEqual([
      3, 3, 2, 1,
    ]);
    expect(first.counts).toMatchObject({
      read: 8,
      created: 1,
      invalid: 3,
      conflict: 2,
      duplicates: 2,
    });
    expect(failures.filter((f) => f.kind === 'invalid').map((f) => [f.identity, f.field])).toEqual(
      invalid.map((r) => [`x:salesforce:${String(r.Id)}`, 'email']),
    );
    const conflicts = failures.filter((f) => f.kind === 'conflict');
    expect(conflicts.map((f) => f.record).sort()).toEqual(
      otherOrg.map((r) => `x:salesforce:${String(r.Id)}`).sort(),
    );
    expect(
      failures.filter((f) => f.kind === 'duplicate').map((f) => [f.record, f.survivor?.record]),
    ).toEqual(
      sharedAddress
        .slice(1)
        .map((r) => [
          `x:salesforce:${String(r.Id)}`,
          `x:salesforce:${String(sharedAddress[0]!.Id)}`,
        ]),
    );
    expect(conflicts.find((f) => f.identity === 'e:epic.orgfarm@salesforce.com')?.reason).toMatch(
      /sf-users-bulk/,
    );
    await expectOnPlatform(
      h,
      'members',
      live.map((r) => ({ external_id: `salesforce:${String(r.Id)}`, email: r.Email })),
    );
  });
});

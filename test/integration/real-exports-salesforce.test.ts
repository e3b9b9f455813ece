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
  it('Bulk API CSV with UserType: only Standard users, less the integration and security users', async () => {
    const h = engine();
    const rows = csvRecords('salesforce/users-bulk-api.csv');
    // Standard users that are Salesforce's own: integration@ and insightssecurity@ <org id>.com.
    const internal = rows.filter((r) => ['Integration User', 'Security User'].includes(r.Name!));
    expect(internal.map((r) => [r.UserType, r.Username])).toEqual([
      ['Standard', 'integration@00djv000002guncuao.com'],
      ['Standard', 'insightssecurity@00djv000002guncuao.com'],
    ]);
    const live = rows.filter((r) => r.UserType === 'Standard' && !internal.includes(r));
    expect(live.map((r) => r.Name)).toEqual(['OrgFarm EPIC', 'PERSON ONE', 'person two']);

    const { first, failures } = await syncTwice(h, {
      job: 'sf-users-bulk',
      preset: 'salesforce-users',
      entity: 'members',
      file: 'salesforce/users-bulk-api.csv',
    });
    expect(first.counts).toMatchObject({ read: 15, created: 3, skipped: 12, conflict: 0 });
    expect(
      failures.filter((f) => f.kind === 'skipped').map((f) => [f.identity, f.field, f.reason]),
    ).toEqual(
      rows
        .filter((r) => !live.includes(r))
        .map((r) =>
          r.UserType === 'Standard'
            ? [
                `x:salesforce:${r.Id}`,
                'skip.internal-username',
                `a Salesforce system user: Username ${r.Username} is on the org's internal domain`,
              ]
            : [
                `x:salesforce:${r.Id}`,
                'skip.not-a-person',
                `not a person of the org (UserType ${r.UserType})`,
              ],
        ),
    );
    expect(failures).toHaveLength(12);
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

  it('REST query JSON without UserType: system users are told apart by their usernames, and a person of another org with the same address is a conflict', async () => {
    const h = engine();
    const records = jsonRecords('salesforce/users-rest-query.json', 'records');
    const { first, failures } = await syncTwice(h, {
      job: 'sf-users-rest',
      preset: 'salesforce-users',
      entity: 'members',
      file: 'salesforce/users-rest-query.json',
    });
    // By hand from the fixture: the user names Salesforce gives its own users.
    const internal = ['autoproc', 'cloud', 'automatedclean', 'integration', 'insightssecurity'].map(
      (local) => `${local}@00ddm00000vfgtuuai`,
    );
    const robots = records.filter((r) => internal.some((u) => String(r.Username).startsWith(u)));
    const chatter = records.filter((r) => String(r.Username).startsWith('chatty.'));
    // OrgFarm EPIC's address is also on the user of the org synced above (another job's record).
    const otherOrg = records.filter((r) => r.Email === 'epic.orgfarm@salesforce.com');
    const live = records.filter(
      (r) => !robots.includes(r) && !chatter.includes(r) && !otherOrg.includes(r),
    );
    expect([robots.length, chatter.length, otherOrg.length, live.length]).toEqual([5, 1, 1, 1]);
    expect(first.counts).toMatchObject({
      read: 8,
      created: 1,
      skipped: 6,
      invalid: 0,
      conflict: 1,
    });
    expect(
      failures
        .filter((f) => f.kind === 'skipped')
        .map((f) => [f.identity, f.field])
        .sort(),
    ).toEqual(
      [
        ...robots.map((r) => [`x:salesforce:${String(r.Id)}`, 'skip.internal-username']),
        ...chatter.map((r) => [`x:salesforce:${String(r.Id)}`, 'skip.chatter-username']),
      ].sort(),
    );
    const conflicts = failures.filter((f) => f.kind === 'conflict');
    expect(conflicts.map((f) => f.identity)).toEqual(['e:epic.orgfarm@salesforce.com']);
    expect(conflicts[0]?.reason).toMatch(/sf-users-bulk/);
    await expectOnPlatform(
      h,
      'members',
      live.map((r) => ({ external_id: `salesforce:${String(r.Id)}`, email: r.Email })),
    );
  });

  it("a production org's users without UserType or Username: Salesforce's app, integration and system users are skipped by address, each with its reason", async () => {
    const h = engine();
    const rows = csvRecords('salesforce/users-org-export.csv');
    // By hand from the fixture: the users Salesforce itself created, and the rule for each.
    const robots: Record<string, string> = {
      '0055w00000A9RnmAAF': 'salesforce-noreply', // Chatter Expert
      '0055w00000ByXXEAA3': 'internal-email', // Automated Process
      '0055w00000ByXXFAA3': 'internal-email', // Salesforce Administrator
      '0055w00000ByXXIAA3': 'placeholder-email', // Security User
      '0055w00000ByXXJAA3': 'internal-email', // Platform Integration User
      '0055w00000CwNfdAAF': 'salesforce-noreply', // Salesforce Mobile Apps
      '0055w00000CwOJYAA3': 'internal-email', // Public User (.ext)
      '0055w00000FPlYJAA1': 'salesforce-noreply', // Salesforce Connected Apps
      '0055w00000FPlfhAAD': 'salesforce-noreply', // HubSpot Integration
      '005RO000002cb8fYAA': 'internal-email', // SalesforceIQ Integration (.ext)
      '005RO000002cb8gYAA': 'internal-email', // Insights Integration (.ext)
      '005RO000002cb8hYAA': 'salesforce-noreply', // B2BMA Integration
      '005RO000002cbAHYAY': 'salesforce-noreply', // b2bmaIntegration
      '005RO000002ccG1YAI': 'salesforce-noreply', // Sales Insights
      '005RO000002gHUjYAM': 'salesforce-noreply', // Pardot
    };
    const reasons: Record<string, (email: string) => string> = {
      'internal-email': (e) =>
        `a Salesforce system user: Email ${e} is on the org's internal domain`,
      'salesforce-noreply': (e) =>
        `a Salesforce app or integration user: Email ${e} is Salesforce's no-reply address`,
      'placeholder-email': (e) =>
        `a Salesforce system user: Email ${e} is the placeholder Salesforce gives it`,
    };
    // Users sharing an address (a "System" user with a person's, a person's old user, two
    // integration users with the marketing address): the platform keys members by it, so one
    // survives. The export has no modified time, so the preset's `newest` ties and the first
    // row in the file keeps the address.
    const rest = rows.filter((r) => robots[r.Id!] === undefined);
    const firstOf = new Map<string, Row>();
    for (const r of rest) if (!firstOf.has(r.Email!)) firstOf.set(r.Email!, r);
    const live = rest.filter((r) => firstOf.get(r.Email!) === r);
    const shared = rest.filter((r) => firstOf.get(r.Email!) !== r);
    expect([rows.length, Object.keys(robots).length, shared.length, live.length]).toEqual([
      51, 15, 3, 33,
    ]);

    const { first, failures } = await syncTwice(h, {
      job: 'sf-users-org',
      preset: 'salesforce-users',
      entity: 'members',
      file: 'salesforce/users-org-export.csv',
    });
    expect(first.counts).toMatchObject({
      read: 51,
      created: 33,
      skipped: 15,
      conflict: 0,
      duplicates: 3,
    });
    expect(
      failures.filter((f) => f.kind === 'skipped').map((f) => [f.identity, f.field, f.reason]),
    ).toEqual(
      rows
        .filter((r) => robots[r.Id!] !== undefined)
        .map((r) => [
          `x:salesforce:${r.Id}`,
          `skip.${robots[r.Id!]}`,
          reasons[robots[r.Id!]!]!(r.Email!),
        ]),
    );
    expect(
      failures
        .filter((f) => f.kind === 'duplicate')
        .map((f) => [f.identity, f.record, f.survivor?.record])
        .sort(),
    ).toEqual(
      shared
        .map((r) => [
          `e:${r.Email}`,
          `x:salesforce:${r.Id}`,
          `x:salesforce:${firstOf.get(r.Email!)!.Id}`,
        ])
        .sort(),
    );
    expect(failures).toHaveLength(18);
    await expectOnPlatform(
      h,
      'members',
      live.map((r) => ({ external_id: `salesforce:${r.Id}`, email: r.Email })),
    );
  });
});

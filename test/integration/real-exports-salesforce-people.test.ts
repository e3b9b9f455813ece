/**
 * The Salesforce contact and lead presets on real exports: Bulk API 2.0 CSVs
 * of one org's contacts and leads (the sample people of a new org, some of
 * whom are both a contact and a lead under one address), a weekly Data
 * Export of each with no e-mail addresses, and a REST query of another org's
 * contacts saved as JSON.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import {
  REAL,
  expectOnPlatform,
  failureLines,
  syncTwice,
  useRealEngine,
} from './real-exports-harness.js';

const engine = useRealEngine();

type Row = Record<string, string>;

function csvRecords(file: string): Row[] {
  return parse(readFileSync(join(REAL, file)), { bom: true, columns: true }) as Row[];
}

/** The member an export row should give: its ids are already 18 characters. */
function member(row: Record<string, unknown>): Record<string, unknown> & { external_id: string } {
  const id = String(row.Id);
  expect(id).toHaveLength(18);
  return {
    external_id: `salesforce:${id}`,
    email: row.Email,
    first_name: row.FirstName,
    last_name: row.LastName,
  };
}

// The platform's address pattern takes no "&" in a domain (Salesforce's sample
// Express Logistics and Transport people are b.levy@expressl&t.net).
const badAddress = (r: Record<string, unknown>) => String(r.Email ?? '').includes('&');
const noAddress = (r: Record<string, unknown>) => r.Email === '' || r.Email === null;

describe('real Salesforce contact and lead exports', () => {
  it('Bulk API contacts: each person once; no address and a "&" domain are invalid', async () => {
    const h = engine();
    const rows = csvRecords('salesforce/contacts-bulk-api.csv');
    const live = rows.filter((r) => !noAddress(r) && !badAddress(r));
    expect([rows.length, live.length]).toEqual([10, 7]);
    const { first, failures } = await syncTwice(h, {
      job: 'sf-contacts-bulk',
      preset: 'salesforce-contacts',
      entity: 'members',
      file: 'salesforce/contacts-bulk-api.csv',
    });
    expect(first.counts).toMatchObject({ read: 10, created: 7, invalid: 3, skipped: 0 });
    expect(failureLines(failures)).toEqual(
      [
        ...rows
          .filter(noAddress)
          .map((r) => `invalid x:salesforce:${r.Id}: missing: no value in column Email`),
        ...rows
          .filter(badAddress)
          .map((r) => `invalid x:salesforce:${r.Id}: not a valid e-mail address`),
      ].sort(),
    );
    await expectOnPlatform(h, 'members', live.map(member));
    // The account a contact belongs to is kept in custom, as its 18-character id.
    const rose = (await h.dump()).members.find((m) => m.email === 'rose@edge.com');
    expect(JSON.parse(String(rose?.custom))).toMatchObject({
      account_id: '001jV0000050DOzQAM',
      title: 'SVP, Procurement',
    });
  });

  it('Data Export contacts without addresses: every row invalid, each named by its id', async () => {
    const h = engine();
    const rows = csvRecords('salesforce/contacts-data-export.csv');
    expect(rows.map((r) => [r.IsDeleted, r.Email, r.IndividualId])).toEqual(
      rows.map(() => ['0', '', '000000000000000AAA']),
    );
    const { first, failures } = await syncTwice(h, {
      job: 'sf-contacts-data-export',
      preset: 'salesforce-contacts',
      entity: 'members',
      file: 'salesforce/contacts-data-export.csv',
    });
    expect(first.counts).toMatchObject({ read: 3, created: 0, invalid: 3, skipped: 0 });
    expect(failures.map((f) => [f.identity, f.field, f.line])).toEqual(
      rows.map((r, i) => [`x:salesforce:${r.Id}`, 'email', i + 2]),
    );
  });

  it('Bulk API leads: a lead whose address a contact already has is a conflict, not a second member', async () => {
    const h = engine();
    const rows = csvRecords('salesforce/leads-bulk-api.csv');
    const contacts = new Set(csvRecords('salesforce/contacts-bulk-api.csv').map((r) => r.Email));
    const both = rows.filter((r) => contacts.has(r.Email!));
    const live = rows.filter((r) => !contacts.has(r.Email!));
    // "Closed - Converted" is only a status text here: none is IsConverted.
    expect(rows.filter((r) => r.Status === 'Closed - Converted')).toHaveLength(3);
    expect(rows.every((r) => r.IsConverted === 'false')).toBe(true);
    expect(both.map((r) => r.Email)).toEqual(['pat@pyramid.net', 'a_young@dickenson.com']);
    const { first, failures } = await syncTwice(h, {
      job: 'sf-leads-bulk',
      preset: 'salesforce-leads',
      entity: 'members',
      file: 'salesforce/leads-bulk-api.csv',
    });
    expect(first.counts).toMatchObject({
      read: 8,
      created: 6,
      invalid: 0,
      skipped: 0,
      conflict: 2,
    });
    expect(failures.map((f) => [f.kind, f.identity])).toEqual(
      both.map((r) => ['conflict', `e:${r.Email}`]),
    );
    for (const f of failures) expect(f.reason).toMatch(/sf-contacts-bulk/);
    await expectOnPlatform(h, 'members', live.map(member));
    // The contact keeps the address; the lead did not replace it.
    await expectOnPlatform(h, 'members', [
      { external_id: 'salesforce:003jV000005OEtQQAW', email: 'pat@pyramid.net' },
    ]);
  });

  it('Data Export lead without an address: invalid, "0" read as not converted', async () => {
    const h = engine();
    const rows = csvRecords('salesforce/leads-data-export.csv');
    expect(rows.map((r) => [r.IsConverted, r.ConvertedContactId])).toEqual([
      ['0', '000000000000000AAA'],
    ]);
    const { first, failures } = await syncTwice(h, {
      job: 'sf-leads-data-export',
      preset: 'salesforce-leads',
      entity: 'members',
      file: 'salesforce/leads-data-export.csv',
    });
    expect(first.counts).toMatchObject({ read: 1, created: 0, invalid: 1, skipped: 0 });
    expect(failureLines(failures)).toEqual([
      `invalid x:salesforce:${rows[0]!.Id}: missing: no value in column Email`,
    ]);
  });
});

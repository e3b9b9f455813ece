/**
 * The HubSpot presets on real API v3 responses (companies, contacts, owners)
 * and on UI exports of the same records: the UI export and the API give the
 * same external_id and crm_company_id, so reading both makes no duplicate.
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

type Props = Record<string, string | null>;
const props = (r: Record<string, unknown>): Props => r.properties as Props;

function csvRecords(file: string): Record<string, string>[] {
  return parse(readFileSync(join(REAL, file)), { bom: true, columns: true }) as Record<
    string,
    string
  >[];
}

const companies = jsonRecords('hubspot/companies-api-v3.json', 'results');
const contacts = jsonRecords('hubspot/contacts-api-v3.json', 'results');

describe('real HubSpot exports', () => {
  it('companies API v3: every company once, with its 12-digit id as crm_company_id', async () => {
    const h = engine();
    const { first, failures } = await syncTwice(h, {
      job: 'hubspot-companies-api',
      preset: 'hubspot-companies',
      entity: 'companies',
      file: 'hubspot/companies-api-v3.json',
    });
    const live = companies.filter((r) => r.archived !== true);
    expect(live).toHaveLength(57);
    expect(first.counts).toMatchObject({ read: 57, created: 57, invalid: 0, skipped: 0 });
    expect(failureLines(failures)).toEqual([]);
    await expectOnPlatform(
      h,
      'companies',
      live.map((r) => ({
        external_id: `hubspot:company:${String(r.id)}`,
        crm_company_id: Number(r.id),
        name: props(r).name,
      })),
    );
    for (const r of live) expect(Number.isSafeInteger(Number(r.id))).toBe(true);
  });

  it('companies UI export of the same records: found by external_id, updated, no duplicate', async () => {
    const h = engine();
    const rows = csvRecords('hubspot/companies-ui-export.csv');
    const { first, failures } = await syncTwice(h, {
      job: 'hubspot-companies-ui',
      preset: 'hubspot-companies',
      entity: 'companies',
      file: 'hubspot/companies-ui-export.csv',
    });
    // The UI shows labels where the API has codes, and the owner's name: a new body, same record.
    expect(first.counts).toMatchObject({ read: 12, created: 0, updated: 12, conflict: 0 });
    expect(failureLines(failures)).toEqual([]);
    await expectOnPlatform(
      h,
      'companies',
      rows.map((r) => ({
        external_id: `hubspot:company:${r['Record ID']}`,
        crm_company_id: Number(r['Record ID']),
        name: r['Company name'],
      })),
    );
    const hubspot = (await h.dump()).companies.filter((c) =>
      String(c.external_id).startsWith('hubspot:company:'),
    );
    expect(hubspot).toHaveLength(companies.length);
  });

  it('contacts API v3: every contact with an e-mail once', async () => {
    const h = engine();
    const { first, failures } = await syncTwice(h, {
      job: 'hubspot-contacts-api',
      preset: 'hubspot-contacts',
      entity: 'members',
      file: 'hubspot/contacts-api-v3.json',
    });
    const live = contacts.filter((r) => r.archived !== true && props(r).email);
    expect(live).toHaveLength(26);
    expect(first.counts).toMatchObject({ read: 26, created: 26, invalid: 0, skipped: 0 });
    expect(failureLines(failures)).toEqual([]);
    await expectOnPlatform(
      h,
      'members',
      live.map((r) => ({
        external_id: `hubspot:contact:${String(r.id)}`,
        email: props(r).email,
        ...(props(r).firstname && { first_name: props(r).firstname }),
      })),
    );
  });

  it('contacts UI export of the same records: the same members, nothing created', async () => {
    const h = engine();
    const rows = csvRecords('hubspot/contacts-ui-export.csv');
    const { first, failures } = await syncTwice(h, {
      job: 'hubspot-contacts-ui',
      preset: 'hubspot-contacts',
      entity: 'members',
      file: 'hubspot/contacts-ui-export.csv',
    });
    expect(first.counts).toMatchObject({ read: 12, created: 0, unchanged: 12, conflict: 0 });
    expect(failureLines(failures)).toEqual([]);
    await expectOnPlatform(
      h,
      'members',
      rows.map((r) => ({ external_id: `hubspot:contact:${r['Record ID']}`, email: r.Email })),
    );
  });

  it('owners API v3: the team, keyed on the owner id', async () => {
    const h = engine();
    const owners = jsonRecords('hubspot/owners-api-v3.json', 'results');
    const { first, failures } = await syncTwice(h, {
      job: 'hubspot-owners-api',
      preset: 'hubspot-owners',
      entity: 'members',
      file: 'hubspot/owners-api-v3.json',
    });
    expect(first.counts).toMatchObject({ read: 2, created: 2, invalid: 0, skipped: 0 });
    expect(failureLines(failures)).toEqual([]);
    await expectOnPlatform(
      h,
      'members',
      owners.map((o) => ({
        external_id: `hubspot:owner:${String(o.id)}`,
        email: o.email,
        first_name: o.firstName,
        last_name: o.lastName,
      })),
    );
  });
});

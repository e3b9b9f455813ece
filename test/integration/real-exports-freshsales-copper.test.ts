/**
 * The Freshsales and Copper presets on real API records: Freshsales sales
 * accounts and contacts (integer ids past 2^32, a system contact with a
 * mailer-daemon address, `(sample)` records) and Copper search answers
 * (bare arrays; `email_domain` holding whole addresses, websites and e-mails
 * as lists of objects).
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  REAL,
  expectAllSynced,
  jsonRecords,
  syncTwice,
  useRealEngine,
} from './real-exports-harness.js';

const engine = useRealEngine();

type Rec = Record<string, unknown>;

/** A JSON fixture whose top level is the array of records (Copper's search answers). */
function arrayRecords(file: string): Rec[] {
  return JSON.parse(readFileSync(join(REAL, file), 'utf8')) as Rec[];
}

describe('real Freshsales API records', () => {
  it('sales accounts: every account once by its id, the website given a scheme', async () => {
    const h = engine();
    const accounts = jsonRecords('freshsales/sales-accounts-api.json', 'sales_accounts');
    expect(accounts.every((a) => typeof a.id === 'number' && a.is_deleted === false)).toBe(true);
    await expectAllSynced(
      h,
      {
        job: 'freshsales-accounts',
        preset: 'freshsales-accounts',
        entity: 'companies',
        file: 'freshsales/sales-accounts-api.json',
        recordsPath: 'sales_accounts',
      },
      6,
      accounts.map((a) => ({
        external_id: `freshsales:account:${String(a.id)}`,
        name: a.name,
        ...(a.website !== null && { website: `https://${String(a.website)}` }),
      })),
    );
  });

  it('contacts: the mailer-daemon system contact is a valid address, and synced like a person', async () => {
    const h = engine();
    const contacts = jsonRecords('freshsales/contacts-api.json', 'contacts');
    await expectAllSynced(
      h,
      {
        job: 'freshsales-contacts',
        preset: 'freshsales-contacts',
        entity: 'members',
        file: 'freshsales/contacts-api.json',
        recordsPath: 'contacts',
      },
      2,
      contacts.map((c) => ({
        external_id: `freshsales:contact:${String(c.id)}`,
        email: c.email,
        first_name: c.first_name,
        last_name: c.last_name,
      })),
    );
  });
});

describe('real Copper search answers', () => {
  it('companies: a bare array; the first website, email_domain kept in custom as written', async () => {
    const h = engine();
    const companies = arrayRecords('copper/companies-search-api.json');
    await expectAllSynced(
      h,
      {
        job: 'copper-companies',
        preset: 'copper-companies',
        entity: 'companies',
        file: 'copper/companies-search-api.json',
      },
      5,
      companies.map((c) => {
        const websites = c.websites as { url: string }[];
        return {
          external_id: `copper:company:${String(c.id)}`,
          name: c.name,
          ...(websites.length > 0 && { website: websites[0]!.url }),
        };
      }),
    );
    const one = (await h.dump()).companies.find((c) => c.external_id === 'copper:company:35015567');
    expect(JSON.parse(String(one?.custom))).toMatchObject({
      email_domain: 'companyone@fake.nope',
      city: 'CityA',
    });
  });

  it('people: the first of emails, as Copper spells it', async () => {
    const h = engine();
    const people = arrayRecords('copper/people-search-api.json');
    const { first } = await syncTwice(h, {
      job: 'copper-people',
      preset: 'copper-people',
      entity: 'members',
      file: 'copper/people-search-api.json',
    });
    expect(first.counts).toMatchObject({ read: 3, created: 3, invalid: 0, skipped: 0 });
    const members = (await h.dump()).members;
    for (const p of people) {
      const email = (p.emails as { email: string }[])[0]!.email;
      expect(members.filter((m) => m.external_id === `copper:person:${String(p.id)}`)).toEqual([
        expect.objectContaining({ email, first_name: p.first_name, last_name: p.last_name }),
      ]);
    }
  });
});

/**
 * An export that is not UTF-8, through the whole pipeline. Salesforce Data
 * Loader writes the machine's default encoding unless told otherwise, so a
 * Windows-1252 export is mostly ASCII with a few rows that are not UTF-8.
 * Without `source.encoding` those rows are reported invalid with their line
 * and the byte at fault, and the others sync; with it, every row syncs with
 * its characters as written. When most rows are not UTF-8 the invalid-rows
 * threshold stops the run and names the setting.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { salesforceChecksum } from '../../src/crm/salesforce-id.js';
import { countWrites, useEngines, type EngineHarness } from '../harness/engine.js';

const engine = useEngines();

const HEADER = [
  'ID',
  'ISDELETED',
  'NAME',
  'TYPE',
  'BILLINGCITY',
  'BILLINGCOUNTRY',
  'PHONE',
  'WEBSITE',
  'INDUSTRY',
  'NUMBEROFEMPLOYEES',
  'OWNERID',
  'CREATEDDATE',
];

/** The characters of these tests outside ASCII, as Windows-1252 writes them. */
const CP1252: Record<string, number> = {
  '€': 0x80,
  '–': 0x96,
  '“': 0x93,
  '”': 0x94,
  é: 0xe9,
  è: 0xe8,
  û: 0xfb,
  ü: 0xfc,
};

function cp1252(text: string): Buffer {
  return Buffer.from(
    Array.from(text, (c) => {
      const code = c.charCodeAt(0);
      if (code < 0x80) return code;
      const b = CP1252[c];
      if (b === undefined) throw new Error(`no Windows-1252 byte for ${c}`);
      return b;
    }),
  );
}

const id18 = (prefix: string, n: number): string => {
  const id15 = `${prefix}M00000${String(n).padStart(6, '0')}`;
  return id15 + salesforceChecksum(id15);
};
const OWNER = id18('005', 1);

interface Account {
  id: string;
  name: string;
  type: string;
  city: string;
}

function account(n: number): Account {
  return {
    id: id18('001', n),
    name: `Account ${n} Ltd`,
    type: 'Customer - Direct',
    city: 'Austin',
  };
}

/** A Data Loader export: capital headers, every cell quoted, CRLF, in Windows-1252. */
function dataLoaderCsv(accounts: readonly Account[]): Buffer {
  const row = (a: Account): string[] => [
    a.id,
    'false',
    a.name,
    a.type,
    a.city,
    'USA',
    '(512) 757-6000',
    `www.account-${a.id.slice(-9, -3)}.example`,
    'Retail',
    '120',
    OWNER,
    '2011-01-10T00:00:00.000Z',
  ];
  const lines = [HEADER, ...accounts.map(row)].map((cells) =>
    cells.map((c) => `"${c.replaceAll('"', '""')}"`).join(','),
  );
  return cp1252(`${lines.join('\r\n')}\r\n`);
}

function writeExport(h: EngineHarness, accounts: readonly Account[]): string {
  const path = join(h.dir, 'accounts.csv');
  writeFileSync(path, dataLoaderCsv(accounts));
  return path;
}

function job(path: string, encoding?: string): Record<string, unknown> {
  return {
    entity: 'companies',
    source: { path, ...(encoding !== undefined && { encoding }) },
    mapping: 'salesforce-accounts',
  };
}

async function companies(h: EngineHarness): Promise<Map<string, Record<string, unknown>>> {
  const dump = await h.dump();
  return new Map(dump.companies.map((c) => [String(c.external_id), c]));
}

describe('an export that is not UTF-8', () => {
  it('costs only its rows that are not UTF-8; with source.encoding every row syncs as written', async () => {
    const h = await engine({ settings: { batchSize: 50 } });
    const accounts = Array.from({ length: 200 }, (_, i) => account(i + 1));
    // Row 138 (line 139) is the one with characters outside ASCII.
    const special: Account = {
      ...account(138),
      name: 'Café “Crème” Brûlée €',
      type: 'Customer – Direct',
      city: 'Zürich',
    };
    accounts[137] = special;
    const path = writeExport(h, accounts);
    const badByte =
      dataLoaderCsv(accounts.slice(0, 137)).length + `"${special.id}","false","Caf`.length;

    h.writeJob('accounts', job(path));
    const first = await h.runJob('accounts');
    expect(first.status, first.error).toBe('completed');
    expect(first.counts).toMatchObject({ read: 200, created: 199, invalid: 1 });
    expect(await h.failures(first.id)).toEqual([
      {
        line: 139,
        kind: 'invalid',
        field: '(row)',
        reason: `not UTF-8 at byte ${badByte} of the export; set source.encoding if the export is Windows-1252`,
      },
    ]);
    const synced = await companies(h);
    expect(synced.size).toBe(199);
    expect(synced.has(`salesforce:${special.id}`)).toBe(false);

    h.writeJob('accounts', job(path, 'windows-1252'));
    const second = await h.runJob('accounts');
    expect(second.status, second.error).toBe('completed');
    // The ASCII rows read the same in either encoding: nothing to write for them.
    expect(second.counts).toMatchObject({ read: 200, created: 1, unchanged: 199, invalid: 0 });
    expect(await h.failures(second.id)).toEqual([]);
    const all = await companies(h);
    expect(all.size).toBe(200);
    const written = all.get(`salesforce:${special.id}`)!;
    expect(written).toMatchObject({ crm_account_id: special.id, name: 'Café “Crème” Brûlée €' });
    expect(JSON.parse(String(written.custom))).toMatchObject({
      type: 'Customer – Direct',
      city: 'Zürich',
    });
    for (const a of accounts.filter((x) => x !== special)) {
      expect(all.get(`salesforce:${a.id}`)).toMatchObject({ name: a.name });
    }
  });

  it('stops before writing when most rows are not UTF-8, naming source.encoding', async () => {
    const h = await engine();
    const accounts = Array.from({ length: 200 }, (_, i) =>
      i % 4 === 0 ? { ...account(i + 1), city: 'Genève' } : account(i + 1),
    );
    h.writeJob('accounts', job(writeExport(h, accounts)));
    const run = await h.runJob('accounts');
    expect(run.status).toBe('stopped');
    expect(run.error).toBe(
      "25% of rows are invalid (50 of 200), above the job's limit of 10%; most (50) are not UTF-8: set source.encoding (e.g. windows-1252), or run with --force to sync anyway",
    );
    expect(countWrites(await h.stats())).toBe(0);
  });
});

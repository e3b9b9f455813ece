/**
 * Exports that are not UTF-8, through the whole pipeline. Salesforce Data
 * Export writes ISO-8859-1 unless the org chose otherwise, and Data Loader
 * the machine's default encoding (Windows-1252 on Windows): mostly ASCII
 * with accented names. By default (`encoding: auto`) each row is read as
 * UTF-8 when it is and as Windows-1252 when it is not, with a warning on
 * the row: such an export syncs whole, and reads to the same values as the
 * same export saved as UTF-8. With `encoding: utf-8` a row that is not UTF-8
 * is reported invalid with its line and the byte at fault, and when most
 * rows are such the invalid-rows threshold stops the run and names the
 * setting.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { salesforceChecksum } from '../../src/crm/salesforce-id.js';
import { countWrites, statsSince, useEngines, type EngineHarness } from '../harness/engine.js';

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

describe('a Data Loader export in Windows-1252', () => {
  it('syncs whole by default, its one accented row with a warning naming the byte; read as windows-1252 it is the same', async () => {
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
    expect(first.counts).toMatchObject({ read: 200, created: 200, invalid: 0, warnings: 1 });
    expect(await h.failures(first.id)).toEqual([
      {
        line: 139,
        kind: 'warning',
        field: '(row)',
        reason: `decoded as windows-1252: not UTF-8 at byte ${badByte} of the export`,
        identity: `x:salesforce:${special.id}`,
      },
    ]);
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

    // Read whole as windows-1252, every row reads the same: nothing to write, no warning.
    h.writeJob('accounts', job(path, 'windows-1252'));
    const before = await h.stats();
    const second = await h.runJob('accounts');
    expect(second.status, second.error).toBe('completed');
    expect(second.counts).toMatchObject({ read: 200, unchanged: 200, warnings: 0 });
    expect(await h.failures(second.id)).toEqual([]);
    expect(countWrites(statsSince(before, await h.stats()))).toBe(0);
  });

  it('with encoding utf-8, costs the rows that are not UTF-8, and stops before writing when they are most', async () => {
    const h = await engine();
    const few = Array.from({ length: 200 }, (_, i) => account(i + 1));
    few[9] = { ...account(10), city: 'Genève' };
    h.writeJob('accounts', job(writeExport(h, few), 'utf-8'));
    const one = await h.runJob('accounts');
    expect(one.status, one.error).toBe('completed');
    expect(one.counts).toMatchObject({ read: 200, created: 199, invalid: 1 });
    expect((await h.failures(one.id)).map((f) => [f.line, f.kind, f.reason])).toEqual([
      [
        11,
        'invalid',
        `not UTF-8 at byte ${dataLoaderCsv(few.slice(0, 9)).length + `"${few[9]!.id}","false","Account 10 Ltd","Customer - Direct","Gen`.length} of the export; set source.encoding if the export is Windows-1252`,
      ],
    ]);

    const h2 = await engine();
    const accounts = Array.from({ length: 200 }, (_, i) =>
      i % 4 === 0 ? { ...account(i + 1), city: 'Genève' } : account(i + 1),
    );
    h2.writeJob('accounts', job(writeExport(h2, accounts), 'utf-8'));
    const run = await h2.runJob('accounts');
    expect(run.status).toBe('stopped');
    expect(run.error).toBe(
      "25% of rows are invalid (50 of 200), above the job's limit of 10%; most (50) are not UTF-8: set source.encoding (e.g. windows-1252), or run with --force to sync anyway",
    );
    expect(countWrites(await h2.stats())).toBe(0);
  });
});

/** The columns of Salesforce Data Export's User.csv that these tests fill (it has every field). */
const USER_HEADER = [
  'Id',
  'Username',
  'LastName',
  'FirstName',
  'CompanyName',
  'Department',
  'Title',
  'City',
  'Country',
  'Email',
  'IsActive',
  'UserType',
  'CreatedDate',
];

const FIRST = ['Françoise', 'José', 'Zoë', 'Søren', 'Anna', 'Ségolène', 'Mary', 'Jürgen', 'Iñaki'];
const LAST = ['Müller', 'Peña', 'Ødegård', 'Smith', 'Nuñez', 'Straße', "O'Brien", 'Lefèvre'];
const TITLE = [
  'Directeur général',
  'Jefa de Ventas',
  'Engineer',
  'Leiterin Forschung & Entwicklung',
];
const CITY = ['Zürich', 'São Paulo', 'Austin', 'Malmö', 'Reykjavík', 'Paris'];

/** A Data Export User.csv of `n` users (as text): every cell quoted, CRLF, `1`/`0` booleans. */
function userExport(n: number): string {
  const rows = Array.from({ length: n }, (_, i) => {
    const id15 = `005D0000${String(i + 1).padStart(7, '0')}`;
    // Every tenth user is in plain ASCII, as many are in any org.
    const ascii = i % 10 === 9;
    const first = ascii ? 'John' : FIRST[i % FIRST.length]!;
    const last = ascii ? 'Smith' : LAST[i % LAST.length]!;
    return [
      id15 + salesforceChecksum(id15),
      `user${i + 1}@acme.example.com`,
      last,
      first,
      i % 3 === 0 && !ascii ? 'Acme Société Anonyme' : 'Acme AG',
      i % 5 === 0 ? 'Ventas y Marketing - Iberia' : 'R&D',
      ascii ? 'Engineer' : TITLE[i % TITLE.length]!,
      ascii ? 'Austin' : CITY[i % CITY.length]!,
      'Schweiz',
      `${first.normalize('NFD').replace(/[^\x20-\x7e]/g, '')}.u${i + 1}@acme.example.com`,
      i % 7 === 0 ? '0' : '1',
      'Standard',
      '2024-03-04T09:15:00.000Z',
    ];
  });
  return [USER_HEADER, ...rows]
    .map((cells) => cells.map((c) => `"${c.replaceAll('"', '""')}"`).join(','))
    .map((line) => `${line}\r\n`)
    .join('');
}

/** What the salesforce-users preset writes for each row, from csv-parse of the UTF-8 text. */
function expectedUsers(text: string): Map<string, Record<string, unknown>> {
  const rows = parse(text, { columns: true }) as Record<string, string>[];
  return new Map(
    rows.map((r) => [
      `salesforce:${r.Id}`,
      {
        first_name: r.FirstName,
        last_name: r.LastName,
        email: r.Email,
        custom: {
          is_active: r.IsActive === '1',
          username: r.Username,
          title: r.Title,
          department: r.Department,
        },
      },
    ]),
  );
}

async function members(h: EngineHarness): Promise<Map<string, Record<string, unknown>>> {
  const dump = await h.dump();
  return new Map(
    dump.members.map((m) => [
      String(m.external_id),
      {
        first_name: m.first_name,
        last_name: m.last_name,
        email: m.email,
        custom: JSON.parse(String(m.custom)) as unknown,
      },
    ]),
  );
}

/** The lines (1-based, the header is 1) of the rows of `text` with a character outside ASCII. */
function accentedLines(text: string): number[] {
  return text.split('\r\n').flatMap((line, i) => (i > 0 && /[^\t-~]/.test(line) ? [i + 1] : []));
}

describe('a Salesforce Data Export of User in ISO-8859-1', () => {
  it('syncs whole by default, each accented row with a warning; a second run, and the same export in UTF-8, write nothing', async () => {
    const h = await engine({ settings: { batchSize: 64 } });
    const text = userExport(300);
    const path = join(h.dir, 'User.csv');
    writeFileSync(path, Buffer.from(text, 'latin1'));
    h.writeJob('users', { entity: 'members', source: { path }, mapping: 'salesforce-users' });

    // Rows in plain ASCII read the same in any encoding: no warning for them.
    const accented = accentedLines(text);
    expect(accented.length).toBeGreaterThan(200);
    expect(accented.length).toBeLessThan(300);
    const first = await h.runJob('users');
    expect(first.status, first.error).toBe('completed');
    expect(first.counts).toMatchObject({
      read: 300,
      created: 300,
      invalid: 0,
      warnings: accented.length,
    });
    const failures = await h.failures(first.id);
    expect(failures.map((f) => [f.line, f.kind, f.field])).toEqual(
      accented.map((line) => [line, 'warning', '(row)']),
    );
    // Each names the first byte of its row that is not UTF-8 (one byte a character in ISO-8859-1).
    const lineStarts = [0];
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) lineStarts.push(i + 1);
    for (const f of failures) {
      const start = lineStarts[f.line - 1]!;
      const at = start + text.slice(start).search(/[^\t-~]/);
      expect(f.reason).toBe(`decoded as windows-1252: not UTF-8 at byte ${at} of the export`);
    }
    expect(await members(h)).toEqual(expectedUsers(text));

    const before = await h.stats();
    const second = await h.runJob('users');
    expect(second.status, second.error).toBe('completed');
    expect(second.counts).toMatchObject({ read: 300, unchanged: 300, created: 0, updated: 0 });
    expect(countWrites(statsSince(before, await h.stats()))).toBe(0);

    // The same export saved as UTF-8 reads to the same values: nothing to write, no warning.
    writeFileSync(path, Buffer.from(text, 'utf8'));
    const utf8 = await h.runJob('users');
    expect(utf8.status, utf8.error).toBe('completed');
    expect(utf8.counts).toMatchObject({ read: 300, unchanged: 300, warnings: 0 });
    expect(await h.failures(utf8.id)).toEqual([]);

    // UTF-8 with a few rows in ISO-8859-1 (an export appended to another): the same again.
    const lines = text.split('\r\n');
    const mixed = Buffer.concat(
      lines.map((line, i) =>
        Buffer.from(
          i === lines.length - 1 ? line : `${line}\r\n`,
          i % 50 === 7 ? 'latin1' : 'utf8',
        ),
      ),
    );
    writeFileSync(path, mixed);
    const mix = await h.runJob('users');
    expect(mix.status, mix.error).toBe('completed');
    expect(mix.counts).toMatchObject({ read: 300, unchanged: 300, warnings: 6 });
    expect((await h.failures(mix.id)).map((f) => f.line)).toEqual([8, 58, 108, 158, 208, 258]);
    expect(countWrites(statsSince(before, await h.stats()))).toBe(0);
    expect(await members(h)).toEqual(expectedUsers(text));
  });
});

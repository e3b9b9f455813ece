/**
 * A real Salesforce weekly Data Export in ISO-8859-1 (SOURCES.md: the last
 * 300 rows of an org's Account.csv): most rows ASCII; accented names and
 * cities as single bytes (Nestlé, L'Oréal, Jesús María); and rows whose only
 * bytes above 0x7F happen to be UTF-8, because Salesforce holds text that was
 * already mis-decoded once (a street `JUÃ\u0081REZ`, written in Latin-1 as
 * C3 81). Under the default `encoding: auto` every row syncs: each row that
 * is not UTF-8 is read as Windows-1252 with a warning naming its first byte
 * at fault, and validate counts every row and the rows read each way.
 *
 * The oracle reads the fixture's bytes apart from the code under test: the
 * export has no line break inside a cell, so each line is a row, decoded
 * with the platform's TextDecoder (UTF-8, fatal, else windows-1252) and
 * split by csv-parse; and hand-picked rows are checked against literal text.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { pathReport } from '../../src/cli/validate-paths.js';
import { REAL, expectOnPlatform, syncTwice, useRealEngine } from './real-exports-harness.js';

const engine = useRealEngine();

const FILE = 'salesforce/accounts-data-export-latin1.csv';
const USERS = 'salesforce/users-data-export-latin1.csv';

/** Where the first byte of `bytes` that starts no valid UTF-8 sequence is, or -1. */
function firstNotUtf8(bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length;) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    const n =
      b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    // The second byte's range: narrower after E0, ED, F0 and F4 (overlong forms, surrogates, > U+10FFFF).
    const lo = b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80;
    const hi = b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf;
    let ok = n > 0 && i + n <= bytes.length;
    for (let j = 1; ok && j < n; j++) {
      const c = bytes[i + j]!;
      ok = j === 1 ? c >= lo && c <= hi : c >= 0x80 && c <= 0xbf;
    }
    if (!ok) return i;
    i += n;
  }
  return -1;
}

interface Line {
  /** 1-based line of the file (the header is line 1). */
  line: number;
  /** Byte offset of the line in the file. */
  start: number;
  /** How its bytes read: plain ASCII, UTF-8 with characters above 0x7F, or not UTF-8. */
  kind: 'ascii' | 'utf-8' | 'not utf-8';
  /** Offset in the file of its first byte that is not UTF-8 (kind `not utf-8`). */
  badAt: number;
  cells: Record<string, string>;
}

/** Every row of a fixture, read line by line from its bytes. */
function readFixture(file = FILE): Line[] {
  const bytes = readFileSync(join(REAL, file));
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const cp1252 = new TextDecoder('windows-1252');
  const texts: string[] = [];
  const lines: Omit<Line, 'cells'>[] = [];
  let start = 0;
  for (let end = bytes.indexOf(0x0a); end >= 0; end = bytes.indexOf(0x0a, start)) {
    const b = bytes.subarray(start, end);
    const bad = firstNotUtf8(b);
    texts.push(bad < 0 ? utf8.decode(b) : cp1252.decode(b));
    lines.push({
      line: lines.length + 1,
      start,
      kind: bad >= 0 ? 'not utf-8' : b.some((x) => x >= 0x80) ? 'utf-8' : 'ascii',
      badAt: bad < 0 ? -1 : start + bad,
    });
    start = end + 1;
  }
  expect(start, 'the file ends with a line break').toBe(bytes.length);
  const header = (parse(texts[0]!) as string[][])[0]!;
  return lines.slice(1).map((l, i) => {
    const rows = parse(texts[i + 1]!) as string[][];
    expect(rows, `line ${l.line} is one row`).toHaveLength(1);
    expect(rows[0]).toHaveLength(header.length);
    return { ...l, cells: Object.fromEntries(header.map((h, c) => [h, rows[0]![c]!])) };
  });
}

describe('a real Salesforce Data Export in ISO-8859-1', () => {
  it('syncs every row with encoding auto, a warning on each row that is not UTF-8, and a second run writes nothing', async () => {
    const h = engine();
    const rows = readFixture();
    const latin1 = rows.filter((r) => r.kind === 'not utf-8');
    const byChance = rows.filter((r) => r.kind === 'utf-8');
    // What the fixture holds, counted by hand once (SOURCES.md).
    expect([rows.length, latin1.length, byChance.length]).toEqual([300, 85, 10]);
    // Their only bytes above 0x7F are the UTF-8 of a text mis-decoded before the export.
    expect(byChance[0]!.cells.BillingStreet).toBe(
      'PALENCIA 206, PRADERAS DE SAN JUAN, C.P. 67267, JUÁREZ',
    );

    const { first, failures } = await syncTwice(h, {
      job: 'sf-accounts-latin1',
      preset: 'salesforce-accounts',
      entity: 'companies',
      file: FILE,
    });
    expect(first.counts).toMatchObject({
      read: 300,
      created: 300,
      invalid: 0,
      skipped: 0,
      conflict: 0,
      warnings: latin1.length,
    });
    expect(failures.map((f) => [f.line, f.kind, f.field, f.reason])).toEqual(
      latin1.map((r) => [
        r.line,
        'warning',
        '(row)',
        `decoded as windows-1252: not UTF-8 at byte ${r.badAt} of the export`,
      ]),
    );

    // Every account once, its name and city as the oracle read them.
    const companies = new Map(
      (await h.dump()).companies.map((c) => [String(c.external_id), c] as const),
    );
    for (const r of rows) {
      const c = companies.get(`salesforce:${r.cells.Id}`);
      expect(c, `line ${r.line}`).toBeDefined();
      expect(c!.name, `line ${r.line}`).toBe(r.cells.Name!.trim());
      const custom = JSON.parse(String(c!.custom)) as Record<string, unknown>;
      expect(custom.city, `line ${r.line}`).toBe(r.cells.BillingCity!.trim() || undefined);
    }
    // Hand-picked rows, as written in this file (UTF-8), not as any decoder reads them.
    const byName = (name: string) => {
      const found = [...companies.values()].filter((c) => c.name === name);
      expect(found, name).toHaveLength(1);
      return { ...found[0]!, custom: JSON.parse(String(found[0]!.custom)) as unknown };
    };
    expect(byName('Nestlé')).toMatchObject({
      external_id: 'salesforce:0018a0000250SioAAE',
      website: 'https://www.nestle.com/',
      custom: { city: 'MÉXICO', country: 'Mexico' },
    });
    expect(byName("L'Oréal")).toMatchObject({ custom: { city: 'Clichy' } });
    expect(byName('Cámara de Comercio de Bogotá')).toBeDefined();
    expect(byName('Banco de México')).toBeDefined();
    expect(
      byName('INSTITUTO DE EDUCACION SUPERIOR TECNOLÓGICO PRIVADO DANIEL ALCIDES CARRION'),
    ).toMatchObject({ custom: { city: 'Jesús María', country: 'Peru' } });
    expect(byName('UNIVERSIDAD PRIVADA DEL NORTE SAC')).toMatchObject({
      custom: { city: 'Breña' },
    });
  });

  it('validate counts every row and the rows read as windows-1252', async () => {
    const h = engine();
    const rows = readFixture();
    const latin1 = rows.filter((r) => r.kind === 'not utf-8');
    const job = h.writeJob('sf-accounts-latin1-validate', {
      entity: 'companies',
      source: { path: join(REAL, FILE) },
      mapping: 'salesforce-accounts',
    });
    const report = await pathReport(job, { fetch: false, env: {} });
    expect(report.problems).toEqual([]);
    expect(report.lines.slice(0, 2)).toEqual([
      `export ${job.name}: ${join(REAL, FILE)}: 300 rows (utf-8 215 rows, windows-1252 85 rows)`,
      `warning: ${job.file}: 85 rows would sync with a warning: (row): decoded as windows-1252: not UTF-8 at byte ${latin1[0]!.badAt} of the export (lines ${latin1
        .slice(0, 5)
        .map((r) => r.line)
        .join(', ')}, …)`,
    ]);
  });
});

describe('the users file of the same export', () => {
  it("syncs the org's people: Salesforce's users skipped, a shared address kept by the newest, the Integration User's Latin-1 name read and skipped", async () => {
    const h = engine();
    const rows = readFixture(USERS);
    expect(rows).toHaveLength(45);
    const byId = (id: string) => rows.find((r) => r.cells.Id === id)!;
    // By hand from the fixture: the Standard users that are Salesforce's own, on the org's domain.
    const integration = byId('0058a00000M08bhAAB');
    const internal = [
      byId('0058a00000LLuwkAAD'), // Insights Integration, …@00d8a000001qcrveag.ext
      integration, // Integración Usuario, integration@00d8a000001qcrveag.com
      byId('0058a00000M08biAAB'), // Seguridad Usuario, insightssecurity@00d8a000001qcrveag.com
      byId('0058a00000MHwaoAAD'), // SalesforceIQ Integration, …@00d8a000001qcrveag.ext
    ];
    // Two users share developers@example.com: the one modified last keeps the member.
    const shared = rows.filter((r) => r.cells.Email === 'developers@example.com');
    expect(shared.map((r) => [r.cells.LastName, r.cells.LastModifiedDate])).toEqual([
      ['place', '2023-08-01 15:10:47'],
      ['Thirteen', '2023-08-28 20:31:33'],
    ]);
    const [duplicate, survivor] = shared as [Line, Line];
    const robots = rows.filter((r) => r.cells.UserType !== 'Standard');
    const live = rows.filter(
      (r) => r.cells.UserType === 'Standard' && !internal.includes(r) && r !== duplicate,
    );
    expect([robots.length, live.length]).toEqual([27, 13]);
    // The Integration User's Spanish name is the file's one row that is not UTF-8.
    expect(rows.filter((r) => r.kind !== 'ascii')).toEqual([integration]);
    expect(integration.cells.FirstName).toBe('Integración');

    const { first, failures } = await syncTwice(h, {
      job: 'sf-users-latin1',
      preset: 'salesforce-users',
      entity: 'members',
      file: USERS,
    });
    // A skipped row is reported for its skip, not for how its bytes were read.
    expect(first.counts).toMatchObject({
      read: 45,
      created: 13,
      skipped: 31,
      duplicates: 1,
      invalid: 0,
      conflict: 0,
      warnings: 0,
    });
    const id = (r: Line) => `x:salesforce:${r.cells.Id}`;
    // Duplicates are reported once the export is planned, after the rows skipped on the way.
    const byLine = [...failures].sort((a, b) => a.line - b.line);
    expect(byLine.map((f) => [f.line, f.kind, f.field, f.identity])).toEqual(
      [
        ...robots.map((r) => [r.line, 'skipped', 'skip.not-a-person', id(r)]),
        ...internal.map((r) => [r.line, 'skipped', 'skip.internal-username', id(r)]),
        [duplicate.line, 'duplicate', undefined, 'e:developers@example.com'],
      ].sort((a, b) => Number(a[0]) - Number(b[0])),
    );
    expect(failures.find((f) => f.line === integration.line)?.reason).toBe(
      "a Salesforce system user: Username integration@00d8a000001qcrveag.com is on the org's internal domain",
    );
    expect(failures.find((f) => f.kind === 'duplicate')).toMatchObject({
      record: id(duplicate),
      survivor: { line: survivor.line, record: id(survivor) },
      reason: `duplicate of line ${survivor.line} (salesforce:${survivor.cells.Id}), which keeps the record: both have email "developers@example.com" (keep: newest by LastModifiedDate, SystemModstamp)`,
    });
    await expectOnPlatform(
      h,
      'members',
      live.map((r) => ({
        external_id: `salesforce:${r.cells.Id}`,
        email: r.cells.Email,
        first_name: r.cells.FirstName,
        last_name: r.cells.LastName,
      })),
    );

    const job = h.writeJob('sf-users-latin1-validate', {
      entity: 'members',
      source: { path: join(REAL, USERS) },
      mapping: 'salesforce-users',
    });
    const report = await pathReport(job, { fetch: false, env: {} });
    expect(report.lines[0]).toBe(
      `export ${job.name}: ${join(REAL, USERS)}: 45 rows (utf-8 44 rows, windows-1252 1 row)`,
    );
  });
});

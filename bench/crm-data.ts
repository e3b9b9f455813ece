/**
 * Generated CRM exports for the parse and RSS benchmarks: HubSpot-style
 * company rows (15 columns, a few quoted commas and quoted newlines), written
 * as CSV, NDJSON or JSON into bench/.out/ (git-ignored). A file is reused when
 * it already exists, since generating a million rows takes a while.
 */
import { createWriteStream, existsSync, mkdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const OUT_DIR = join(dirname(fileURLToPath(import.meta.url)), '.out');

export const COLUMNS = [
  'Record ID',
  'Company name',
  'Company Domain Name',
  'Website URL',
  'Company owner',
  'Create Date',
  'Last Activity Date',
  'Phone Number',
  'City',
  'State/Region',
  'Country/Region',
  'Industry',
  'Number of Employees',
  'Annual Revenue',
  'Description',
] as const;

const CITIES = ['Springfield', 'Austin', 'Zürich', 'Paris', 'Cypress Creek', 'München', 'Tokyo'];
const INDUSTRIES = ['COMPUTER_SOFTWARE', 'RETAIL', 'BIOTECHNOLOGY', 'CONSTRUCTION', ''];

/** Row i as cell strings, deterministic. */
export function companyRow(i: number): string[] {
  const id = String(5_120_000_000 + i);
  const name = i % 17 === 0 ? `Company ${i}, Inc.` : `Company ${i}`;
  const domain = `company${i}.example`;
  const description =
    i % 50 === 0
      ? `Line one of ${i}\nLine two`
      : i % 7 === 0
        ? `Says "hello" ${i}`
        : `Account ${i} notes`;
  return [
    id,
    name,
    domain,
    i % 3 === 0 ? `https://www.${domain}/` : '',
    `Owner ${i % 40}`,
    `2024-0${(i % 9) + 1}-1${i % 10} 09:30`,
    i % 4 === 0 ? '' : `1/${(i % 28) + 1}/2026 21:52`,
    `+1 555 ${String(i % 10_000).padStart(4, '0')}`,
    CITIES[i % CITIES.length] ?? '',
    'CA',
    'United States',
    INDUSTRIES[i % INDUSTRIES.length] ?? '',
    String((i % 5000) + 1),
    String((i % 1000) * 1000),
    description,
  ];
}

/** A CSV cell, quoted where RFC 4180 needs it (or always, with `quoteAll`). */
export function csvCell(v: string, quoteAll = false): string {
  if (quoteAll || /[",\n\r]/.test(v)) return `"${v.replace(/"/g, '""')}"`;
  return v;
}

export type DataFormat = 'csv' | 'csv-quoted' | 'ndjson' | 'json';

/** Writes (once) `rows` generated rows in a format and returns the file's path. */
export async function ensureData(format: DataFormat, rows: number): Promise<string> {
  mkdirSync(OUT_DIR, { recursive: true });
  const ext = format === 'csv-quoted' ? 'quoted.csv' : format;
  const path = join(OUT_DIR, `companies-${rows}.${ext}`);
  if (existsSync(path)) return path;
  const tmp = `${path}.tmp`;
  const out = createWriteStream(tmp);
  const write = (s: string): Promise<void> | undefined =>
    out.write(s) ? undefined : new Promise<void>((resolve) => out.once('drain', () => resolve()));
  const record = (cells: string[]): Record<string, string> =>
    Object.fromEntries(COLUMNS.map((c, k) => [c, cells[k] ?? '']));
  if (format === 'csv' || format === 'csv-quoted') {
    await write(`${COLUMNS.map((c) => csvCell(c, format === 'csv-quoted')).join(',')}\n`);
  }
  if (format === 'json') await write('{"results": [\n');
  for (let i = 0; i < rows; i++) {
    const cells = companyRow(i);
    let line: string;
    if (format === 'ndjson') line = `${JSON.stringify(record(cells))}\n`;
    else if (format === 'json')
      line = `${i > 0 ? ',\n' : ''}  ${JSON.stringify({ id: cells[0], properties: record(cells) })}`;
    else line = `${cells.map((v) => csvCell(v, format === 'csv-quoted')).join(',')}\n`;
    await write(line);
  }
  if (format === 'json') await write('\n], "paging": {}}\n');
  await new Promise<void>((resolve, reject) =>
    out.end((err?: Error | null) => (err ? reject(err) : resolve())),
  );
  renameSync(tmp, path);
  return path;
}

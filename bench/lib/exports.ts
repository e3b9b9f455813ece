/**
 * The exports the sync benchmarks feed the engine: the generated 15-column
 * HubSpot companies CSV of bench/crm-data.ts, and a "nightly" copy of it in
 * which 1% of the rows changed (their Company name), written into
 * bench/.out/ once and reused.
 */
import { createWriteStream, existsSync, mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { COLUMNS, OUT_DIR, companyRow, csvCell } from '../crm-data.js';

/** Rows of the nightly export that differ from the first one: every 100th, from row 37. */
export function changedInNightly(i: number): boolean {
  return i % 100 === 37;
}

/** The cells of row i of an export; in the nightly one, 1% of the names changed. */
export function exportRow(i: number, nightly: boolean): string[] {
  const cells = companyRow(i);
  if (nightly && changedInNightly(i)) cells[1] = `${cells[1]} (renamed)`;
  return cells;
}

/**
 * Writes (once) the first or nightly export of `rows` companies; returns its
 * path. `from` numbers its rows from there (other companies than row 0's on).
 */
export async function ensureSyncExport(rows: number, nightly: boolean, from = 0): Promise<string> {
  mkdirSync(OUT_DIR, { recursive: true });
  const name = `sync-${rows}${from > 0 ? `-from-${from}` : ''}${nightly ? '-nightly' : ''}`;
  const path = join(OUT_DIR, `${name}.csv`);
  if (existsSync(path)) return path;
  const tmp = `${path}.tmp`;
  const out = createWriteStream(tmp);
  const write = async (s: string): Promise<void> => {
    if (!out.write(s)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  };
  await write(`${COLUMNS.map((c) => csvCell(c)).join(',')}\n`);
  for (let i = 0; i < rows; i++)
    await write(
      `${exportRow(from + i, nightly)
        .map((v) => csvCell(v))
        .join(',')}\n`,
    );
  await new Promise<void>((resolve, reject) =>
    out.end((err?: Error | null) => (err ? reject(err) : resolve())),
  );
  renameSync(tmp, path);
  return path;
}

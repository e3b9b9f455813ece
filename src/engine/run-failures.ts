/**
 * The rows of a run that were not synced, skipped, or synced with a warning,
 * read a page at a time from Redis, where they are kept complete and in row
 * order: a run with 100,000 bad rows never sits in memory whole. Used by
 * `crm-sync failures`; outside the CLI, so any other caller pages them the
 * same way.
 */
import { csvRow } from '../csv.js';
import type { FailureKind } from '../state/failure-kinds.js';
import type { FailureRow } from '../state/runs.js';
import type { StateStore } from '../state/store.js';

const PAGE = 1_000;

/** Which rows to keep: of one kind, about one field (both when both are given). */
export interface FailureFilter {
  kind?: FailureKind;
  field?: string;
}

/**
 * The failure rows from `offset`, at most `limit`, a page at a time; with
 * a filter (a kind, or a kind and a field), only the rows it keeps (`offset`
 * and `limit` count those rows).
 */
export async function* failurePages(
  store: StateStore,
  runId: string,
  offset: number,
  limit = Infinity,
  filter?: FailureKind | FailureFilter,
): AsyncGenerator<FailureRow[]> {
  const { kind, field } = typeof filter === 'string' ? { kind: filter } : (filter ?? {});
  if (kind === undefined && field === undefined) {
    let at = offset;
    let left = limit;
    while (left > 0) {
      const page = await store.runs.listFailures(runId, {
        offset: at,
        limit: Math.min(PAGE, left),
      });
      if (page.length === 0) return;
      yield page;
      at += page.length;
      left -= page.length;
    }
    return;
  }
  // The list is one, in row order: rows of other kinds are read and passed over.
  let at = 0;
  let skip = offset;
  let left = limit;
  while (left > 0) {
    const page = await store.runs.listFailures(runId, { offset: at, limit: PAGE });
    if (page.length === 0) return;
    at += page.length;
    let rows = page.filter(
      (r) => (kind === undefined || r.kind === kind) && (field === undefined || r.field === field),
    );
    if (skip > 0) {
      const dropped = Math.min(skip, rows.length);
      rows = rows.slice(dropped);
      skip -= dropped;
    }
    if (rows.length > left) rows = rows.slice(0, left);
    left -= rows.length;
    if (rows.length > 0) yield rows;
  }
}

/** The columns of a failures CSV (`failures --csv`, the API's text/csv), in order. */
export const CSV_HEADER = [
  'line',
  'kind',
  'field',
  'reason',
  'value',
  'identity',
  'record',
  'survivor_line',
  'survivor_record',
] as const;

/**
 * The row's CRM record (its strongest identity key): a conflict's or
 * duplicate's `identity` is the key it shares, any other row's is its first.
 */
export function recordOf(r: FailureRow): string | undefined {
  if (r.record !== undefined) return r.record;
  return r.kind === 'conflict' || r.kind === 'duplicate' ? undefined : r.identity;
}

/** Writes pages of failure rows as CSV, header first, waiting on `out` for each page. */
export async function printCsv(
  rows: AsyncIterable<FailureRow[]>,
  out: (text: string) => Promise<void>,
): Promise<void> {
  await out(csvRow(CSV_HEADER));
  for await (const page of rows) {
    await out(
      page
        .map((r) =>
          csvRow([
            r.line,
            r.kind,
            r.field,
            r.reason,
            r.value,
            r.identity,
            recordOf(r),
            r.survivor?.line,
            r.survivor?.record,
          ]),
        )
        .join(''),
    );
  }
}

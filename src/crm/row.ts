/**
 * What every source yields, whatever the format: one row of the export with
 * the physical line where it starts, or the reason it could not be read. A
 * row that cannot be read is reported and skipped; the rest of the file goes on.
 */
export type SourceRow =
  | {
      /** Physical 1-based line where the row starts (CSV: the header is line 1). */
      line: number;
      /** CSV: header name to cell string. JSON/NDJSON: the value as parsed. */
      record: Record<string, unknown>;
      /**
       * Something the reader did to the row that a person should know, e.g.
       * that it was not UTF-8 and was decoded as windows-1252 (windows-1252-rows.ts).
       * Absent on most rows.
       */
      warning?: string;
    }
  | {
      line: number;
      /** Why the row could not be read, e.g. "row has 14 fields, header has 15". */
      problem: string;
    };

export function isReadable(row: SourceRow): row is Extract<SourceRow, { record: unknown }> {
  return 'record' in row;
}

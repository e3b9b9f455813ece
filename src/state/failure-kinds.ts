/**
 * The kinds of row a run reports as not synced, or synced with a warning:
 * a module of its own, with no import, so the CLI can offer them as choices
 * without loading the state layer. The console, browser code, keeps its own
 * copy (`KINDS`, src/ops/console/views/failures.js); a unit test holds the
 * two equal.
 *
 * `skipped`: a skip rule of the mapping said the row is no live record.
 * `duplicate`: another row claiming the same record keeps it (the job's `duplicates` rule).
 * `warning`: an optional field left out of a row that was still planned, or
 * (field `(row)`) a row that was read as windows-1252 (source.encoding auto).
 */
export const FAILURE_KINDS = [
  'invalid',
  'rejected',
  'conflict',
  'duplicate',
  'unsupported',
  'failed',
  'skipped',
  'warning',
] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

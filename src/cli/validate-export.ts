/**
 * The export check of `crm-sync validate`: reads the whole of a job's local
 * export once, streamed, maps every row with the job's mapping and says
 * what a run would meet: how many rows there are, the encodings they were
 * read in and how many rows each, and the rows a run would warn of (a row
 * read as windows-1252, an optional field left out), leave out (a skip rule)
 * or report invalid, grouped by field and reason with their first lines.
 * The mapped paths are checked against the first COVERAGE_ROWS rows on the
 * way, as a run checks them (validate-paths.ts).
 */
import { COVERAGE_ROWS, PathCoverage, type CoverageSummary } from '../crm/path-coverage.js';
import type { DecodeInfo } from '../crm/decode.js';
import type { EnvelopeTally } from '../crm/envelope.js';
import { readRows } from '../crm/read.js';
import type { SourceRow } from '../crm/row.js';
import { NO_ENV, type SourceEnv } from '../crm/source.js';
import type { SourceSpec } from '../crm/source-spec.js';
import type { CompiledMapping, MapResult } from '../crm/mapped.js';
import { isNotUtf8Problem } from '../crm/utf8.js';
import { isWindows1252Warning } from '../crm/windows-1252-rows.js';

/** What a run would say of some rows: one kind, field and reason (numbers aside). */
export interface FindingGroup {
  kind: 'warning' | 'invalid' | 'skipped';
  field: string;
  /** The reason of the first row. */
  reason: string;
  rows: number;
  /** The lines of the first rows (up to SHOWN_LINES, each once). */
  lines: number[];
}

export interface ExportSurvey {
  /** Every row of the export, read or not. */
  rows: number;
  /** Rows per encoding they were read in; rows that were not UTF-8 under `utf-8` as `not utf-8`. */
  encodings: Map<string, number>;
  /** In the order first met. */
  findings: FindingGroup[];
  coverage: CoverageSummary;
}

export const SHOWN_LINES = 5;

/** What the rows of an export come to, row by row; `summary` when they are all in. */
export class ExportTally {
  private rows = 0;
  private readonly encodings = new Map<string, number>();
  private readonly groups = new Map<string, FindingGroup>();

  /** `info`: the encoding the reader chose (filled once the head of the export is read). */
  constructor(private readonly info: DecodeInfo) {}

  observe(row: SourceRow, mapped: MapResult): void {
    this.rows++;
    const encoding =
      'record' in row
        ? row.warning !== undefined && isWindows1252Warning(row.warning)
          ? (this.info.fallback ?? 'windows-1252')
          : (this.info.encoding ?? 'utf-8')
        : isNotUtf8Problem(row.problem)
          ? 'not utf-8'
          : undefined;
    if (encoding !== undefined)
      this.encodings.set(encoding, (this.encodings.get(encoding) ?? 0) + 1);
    if (mapped.ok) {
      for (const w of mapped.warnings ?? []) this.add('warning', w.field, w.reason, mapped.line);
    } else {
      this.add(mapped.skip ? 'skipped' : 'invalid', mapped.field, mapped.reason, mapped.line);
    }
  }

  private add(kind: FindingGroup['kind'], field: string, reason: string, line: number): void {
    // Reasons that differ only by a number (a byte offset, a count) are one finding.
    const key = `${kind}\0${field}\0${reason.replace(/\d+/g, 'N')}`;
    const group = this.groups.get(key);
    if (group === undefined) {
      this.groups.set(key, { kind, field, reason, rows: 1, lines: [line] });
      return;
    }
    group.rows++;
    // JSON records may share a line: each line is shown once.
    if (group.lines.length < SHOWN_LINES && group.lines[group.lines.length - 1] !== line) {
      group.lines.push(line);
    }
  }

  summary(coverage: CoverageSummary): ExportSurvey {
    return {
      rows: this.rows,
      encodings: this.encodings,
      findings: [...this.groups.values()],
      coverage,
    };
  }
}

/** Reads the whole of `source` and maps every row with `mapping`. */
export async function surveyExport(
  source: SourceSpec,
  mapping: CompiledMapping,
  env: SourceEnv = NO_ENV,
  envelopes?: EnvelopeTally,
): Promise<ExportSurvey> {
  const decoding: DecodeInfo = {};
  const tally = new ExportTally(decoding);
  const coverage = new PathCoverage(mapping.paths, COVERAGE_ROWS);
  const read = readRows(source, { env, decoding, ...(envelopes && { tally: envelopes }) });
  for await (const rows of read) {
    for (const row of rows) {
      if ('record' in row) coverage.observe(row.record, mapping.skips(row.record));
      tally.observe(row, mapping.map(row));
    }
  }
  return tally.summary(coverage.summary());
}

const count = (n: number, what: string): string =>
  `${n.toLocaleString('en-US')} ${what}${n === 1 ? '' : 's'}`;

/** The lines validate prints for a survey: `head` first, then one per finding (`file` is the job file). */
export function surveyLines(survey: ExportSurvey, head: string, file: string): string[] {
  const encodings = [...survey.encodings]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .map(([name, n]) => `${name} ${count(n, 'row')}`);
  const lines = [
    `${head}: ${count(survey.rows, 'row')}${encodings.length > 0 ? ` (${encodings.join(', ')})` : ''}`,
  ];
  for (const f of survey.findings) {
    const rows = count(f.rows, 'row');
    const more = f.rows > f.lines.length ? ', …' : '';
    const at = `line${f.lines.length === 1 ? '' : 's'} ${f.lines.join(', ')}${more}`;
    const what =
      f.kind === 'warning'
        ? `${rows} would sync with a warning`
        : f.kind === 'skipped'
          ? `${rows} would be skipped`
          : `${rows} would be invalid`;
    const prefix = f.kind === 'skipped' ? 'note' : 'warning';
    lines.push(`${prefix}: ${file}: ${what}: ${f.field}: ${f.reason} (${at})`);
  }
  return lines;
}

/**
 * The export and path checks of `crm-sync validate`: a local export is read
 * whole (validate-export.ts: its rows, their encodings, what a run would warn
 * of); a URL source only when asked, and then only its first rows:
 * validate must not depend on a CRM being reachable, nor download a whole
 * CRM. Each mapped column or path that found a value in none of the first
 * rows (COVERAGE_ROWS, as a run checks before writing) is reported, with the
 * nearest keys where it stopped. A `recordPath` or `stream` that finds no
 * record in a line read is a problem (validate fails), as is a `stream` with
 * no record there at all.
 */
import { existsSync } from 'node:fs';
import {
  COVERAGE_ROWS,
  coverageWarnings,
  PathCoverage,
  rowsLooked,
  type CoverageSummary,
} from '../crm/path-coverage.js';
import { EnvelopeTally } from '../crm/envelope.js';
import { readRows, streamsSeen } from '../crm/read.js';
import { SourceError } from '../crm/source-error.js';
import { NO_ENV, type SourceEnv } from '../crm/source.js';
import { sourceName, type SourceSpec } from '../crm/source-spec.js';
import { sourceOf } from '../engine/run-source.js';
import type { JobDefinition } from '../jobs/definition.js';
import { surveyExport, surveyLines } from './validate-export.js';

/** The coverage of the first `limit` rows of `source` by `paths`; stops reading there. */
export async function sampleCoverage(
  source: SourceSpec,
  mapping: Pick<JobDefinition['mapping'], 'paths' | 'skips'>,
  limit = COVERAGE_ROWS,
  env: SourceEnv = NO_ENV,
  tally?: EnvelopeTally,
): Promise<CoverageSummary> {
  const coverage = new PathCoverage(mapping.paths, limit);
  // Leaving the loop closes the reader and its file or connection.
  for await (const rows of readRows(source, { batchSize: Math.min(limit, 500), env, tally })) {
    for (const row of rows)
      if ('record' in row) coverage.observe(row.record, mapping.skips(row.record));
    if (coverage.full) break;
  }
  return coverage.summary();
}

/** What validate reports of one job's export: lines for stderr, and problems (validate fails). */
export interface PathReport {
  lines: string[];
  problems: string[];
}

/**
 * What validate reports of one job's export: lines for stderr, and problems
 * (validate fails). `env` is where a URL source's credentials are read
 * (config's `sourceEnv`).
 */
export async function pathReport(
  job: JobDefinition,
  opts: { fetch: boolean; env: SourceEnv },
): Promise<PathReport> {
  const source = sourceOf(job, {});
  const name = sourceName(source);
  if (source.url !== undefined && !opts.fetch) {
    const lines = [
      `note: ${job.file}: mapped paths not checked: the source is a URL (validate --fetch reads its first ${COVERAGE_ROWS.toLocaleString('en-US')} rows)`,
    ];
    return { lines, problems: [] };
  }
  if (source.path !== undefined && !existsSync(source.path)) return { lines: [], problems: [] };
  let summary: CoverageSummary;
  const tally = new EnvelopeTally();
  const lines: string[] = [];
  try {
    if (source.url !== undefined) {
      summary = await sampleCoverage(source, job.mapping, COVERAGE_ROWS, opts.env, tally);
    } else {
      const survey = await surveyExport(source, job.mapping, opts.env, tally);
      lines.push(...surveyLines(survey, `export ${job.name}: ${name}`, job.file));
      summary = survey.coverage;
    }
  } catch (err) {
    if (err instanceof SourceError && err.code === 'source.config') {
      return { lines: [], problems: [`${job.file}: source: ${err.message}`] };
    }
    const lines = [
      `warning: ${job.file}: mapped paths not checked: ${name} could not be read: ${(err as Error).message}`,
    ];
    return { lines, problems: [] };
  }
  const problems = envelopeProblems(source, tally).map((p) => `${job.file}: ${p}`);
  return { lines: [...lines, ...pathLines(job, name, summary)], problems };
}

/** The lines of the path check: how many rows it looked at, and each path that found nothing. */
function pathLines(job: JobDefinition, name: string, summary: CoverageSummary): string[] {
  const warnings = coverageWarnings(summary);
  const head = `paths ${job.name}: checked ${rowsLooked(summary)} read from ${name}`;
  if (summary.rows === 0) return [`${head}: no rows to check the mapped paths against`];
  if (warnings.length === 0) return [`${head}: every mapped path found a value`];
  return [
    `${head}: ${warnings.length} mapped path(s) found nothing`,
    ...warnings.map((w) => `warning: ${job.file}: ${w}`),
  ];
}

/** Where `stream` or `recordPath` found no record in the values read. */
function envelopeProblems(source: SourceSpec, tally: EnvelopeTally): string[] {
  const out: string[] = [];
  const read = tally.values.toLocaleString('en-US');
  const key = source.stream !== undefined ? 'source.stream' : 'source.recordPath';
  if (tally.problems > 0) {
    const first = tally.firstProblems.map((p) => `line ${p.line}: ${p.problem}`).join('; ');
    out.push(
      `${key}: no record in ${tally.problems.toLocaleString('en-US')} of the ${read} values read (${first})`,
    );
  }
  if (source.stream !== undefined && tally.values > 0 && !tally.streams.has(source.stream)) {
    out.push(
      `source.stream: no RECORD of stream ${JSON.stringify(source.stream)} in the ${read} values read: ${streamsSeen(tally.streams)}`,
    );
  }
  return out;
}

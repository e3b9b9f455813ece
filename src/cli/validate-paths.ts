/**
 * The export and path checks of `crm-sync validate`: a local export is read
 * whole (validate-export.ts: its rows, their encodings, what a run would warn
 * of); a URL source only when asked, and then only its first rows:
 * validate must not depend on a CRM being reachable, nor download a whole
 * CRM. Each mapped column or path that found a value in none of the first
 * rows (COVERAGE_ROWS, as a run checks before writing) is reported, with the
 * nearest keys where it stopped.
 */
import { existsSync } from 'node:fs';
import {
  COVERAGE_ROWS,
  coverageWarnings,
  PathCoverage,
  rowsLooked,
  type CoverageSummary,
} from '../crm/path-coverage.js';
import { readRows } from '../crm/read.js';
import { NO_ENV, sourceName, type SourceEnv } from '../crm/source.js';
import type { SourceSpec } from '../crm/source-spec.js';
import { sourceOf } from '../engine/run-source.js';
import type { JobDefinition } from '../jobs/definition.js';
import { surveyExport, surveyLines } from './validate-export.js';

/** The coverage of the first `limit` rows of `source` by `paths`; stops reading there. */
export async function sampleCoverage(
  source: SourceSpec,
  paths: JobDefinition['mapping']['paths'],
  limit = COVERAGE_ROWS,
  env: SourceEnv = NO_ENV,
): Promise<CoverageSummary> {
  const coverage = new PathCoverage(paths, limit);
  // Leaving the loop closes the reader and its file or connection.
  for await (const rows of readRows(source, { batchSize: Math.min(limit, 500), env })) {
    for (const row of rows) if ('record' in row) coverage.observe(row.record);
    if (coverage.full) break;
  }
  return coverage.summary();
}

/**
 * What validate prints for one job's export: lines for stderr, each one
 * finding. `env` is where a URL source's credentials are read (config's `sourceEnv`).
 */
export async function pathReport(
  job: JobDefinition,
  opts: { fetch: boolean; env: SourceEnv },
): Promise<string[]> {
  const source = sourceOf(job, {});
  const name = sourceName(source);
  if (source.url !== undefined && !opts.fetch) {
    return [
      `note: ${job.file}: mapped paths not checked: the source is a URL (validate --fetch reads its first ${COVERAGE_ROWS.toLocaleString('en-US')} rows)`,
    ];
  }
  if (source.path !== undefined && !existsSync(source.path)) return [];
  let summary: CoverageSummary;
  const lines: string[] = [];
  try {
    if (source.url !== undefined) {
      summary = await sampleCoverage(source, job.mapping.paths, COVERAGE_ROWS, opts.env);
    } else {
      const survey = await surveyExport(source, job.mapping, opts.env);
      lines.push(...surveyLines(survey, `export ${job.name}: ${name}`, job.file));
      summary = survey.coverage;
    }
  } catch (err) {
    return [
      `warning: ${job.file}: mapped paths not checked: ${name} could not be read: ${(err as Error).message}`,
    ];
  }
  return [...lines, ...pathLines(job, name, summary)];
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

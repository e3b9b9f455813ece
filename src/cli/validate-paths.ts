/**
 * The path check of `crm-sync validate`: reads the first rows of a job's
 * export (COVERAGE_ROWS, as a run does before writing) and reports each
 * mapped column or path that found a value in none of them, with the
 * nearest keys where it stopped. Only local files are read unless asked:
 * validate must not depend on a CRM being reachable.
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

/** The coverage of the first `limit` rows of `source` by `paths`; stops reading there. */
export async function sampleCoverage(
  source: SourceSpec,
  mapping: Pick<JobDefinition['mapping'], 'paths' | 'skips'>,
  limit = COVERAGE_ROWS,
  env: SourceEnv = NO_ENV,
): Promise<CoverageSummary> {
  const coverage = new PathCoverage(mapping.paths, limit);
  // Leaving the loop closes the reader and its file or connection.
  for await (const rows of readRows(source, { batchSize: Math.min(limit, 500), env })) {
    for (const row of rows)
      if ('record' in row) coverage.observe(row.record, mapping.skips(row.record));
    if (coverage.full) break;
  }
  return coverage.summary();
}

/**
 * What validate prints for one job: lines for stderr, each one finding.
 * `env` is where a URL source's credentials are read (config's `sourceEnv`).
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
  try {
    summary = await sampleCoverage(source, job.mapping, COVERAGE_ROWS, opts.env);
  } catch (err) {
    return [
      `warning: ${job.file}: mapped paths not checked: ${name} could not be read: ${(err as Error).message}`,
    ];
  }
  const warnings = coverageWarnings(summary);
  const head = `paths ${job.name}: read ${rowsLooked(summary)} of ${name}`;
  if (summary.rows === 0) return [`${head}: no rows to check the mapped paths against`];
  if (warnings.length === 0) return [`${head}: every mapped path found a value`];
  return [
    `${head}: ${warnings.length} mapped path(s) found nothing`,
    ...warnings.map((w) => `warning: ${job.file}: ${w}`),
  ];
}

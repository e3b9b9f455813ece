/**
 * The presets and example jobs through the real reader (`readRows`), end to
 * end in memory: fixture files → SourceRows → mapped bodies.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import type { CompiledMapping, MapResult } from '../../src/crm/mapped.js';
import { loadMapping } from '../../src/crm/presets.js';
import { readRows } from '../../src/crm/read.js';
import type { SourceRow } from '../../src/crm/row.js';
import { SourceSpecSchema, type SourceSpec } from '../../src/crm/source-spec.js';
import { loadJobs } from '../../src/jobs/definition.js';

const fixtures = join(import.meta.dirname, '..', 'fixtures', 'exports');

async function mapSource(spec: SourceSpec, mapping: CompiledMapping): Promise<MapResult[]> {
  const out: MapResult[] = [];
  for await (const batch of readRows(spec)) for (const row of batch) out.push(mapping.map(row));
  return out;
}

/** The same file through csv-parse, with the line where each row starts. */
function csvParseRows(file: string): SourceRow[] {
  const recs = parse(readFileSync(file), { bom: true, columns: true, info: true }) as {
    record: Record<string, string>;
    info: { lines: number };
  }[];
  let end = 1;
  return recs.map((r) => {
    const line = end + 1;
    end = r.info.lines;
    return { line, record: r.record };
  });
}

function ndjsonRows(file: string): SourceRow[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((l, i) =>
      l.trim() ? [{ line: i + 1, record: JSON.parse(l) as Record<string, unknown> }] : [],
    );
}

describe.each([
  ['hubspot-companies', 'hubspot-companies.csv'],
  ['hubspot-owners', 'hubspot-owners.ndjson'],
  ['salesforce-accounts', 'salesforce-accounts.csv'],
  ['salesforce-users', 'salesforce-users.csv'],
])('preset %s read by readRows', (preset, file) => {
  it('maps exactly as the preset test expects (same lines, bodies and reasons)', async () => {
    const path = join(fixtures, file);
    const mapping = loadMapping(preset);
    const expected = (file.endsWith('.csv') ? csvParseRows(path) : ndjsonRows(path)).map((r) =>
      mapping.map(r),
    );
    const got = await mapSource({ path }, mapping);
    expect(got).toEqual(expected);
    expect(got.some((r) => r.ok)).toBe(true);
    expect(got.some((r) => !r.ok)).toBe(true);
  });
});

describe('example jobs', () => {
  it('have sources the reader accepts, and map the sample exports with few invalid rows', async () => {
    const { jobs, problems } = loadJobs(join(import.meta.dirname, '..', '..', 'jobs'));
    expect(problems).toEqual([]);
    expect(jobs.length).toBeGreaterThanOrEqual(3);
    for (const job of jobs) {
      const spec = SourceSpecSchema.parse(job.source);
      const results = await mapSource(spec, job.mapping);
      const invalid = results.filter((r) => !r.ok);
      expect(results.length, job.name).toBeGreaterThanOrEqual(45);
      expect(invalid.length / results.length, job.name).toBeLessThan(
        job.thresholds.maxInvalidShare,
      );
    }
  });
});

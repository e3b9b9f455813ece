/**
 * The path check of `crm-sync validate`: the first rows of a local export
 * (read whole: validate-export.test.ts) against each mapped path, a warning for each that found nothing, URL
 * sources left alone unless asked.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { pathReport, sampleCoverage } from '../../src/cli/validate-paths.js';
import { sourceOf } from '../../src/engine/run-source.js';
import { loadJobs, type JobDefinition } from '../../src/jobs/definition.js';

const dir = mkdtempSync(join(tmpdir(), 'crm-sync-validate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const mapping = (name: string) => ({
  name: 'attio-test',
  version: 1,
  entity: 'companies',
  fields: {
    external_id: { template: 'attio:company:{id.record_id}', required: true },
    name: { from: name, required: true },
    website: { from: 'values.domain[0].domain' },
  },
});

function jobsOf(files: Record<string, Record<string, unknown>>): Map<string, JobDefinition> {
  for (const [name, job] of Object.entries(files))
    writeFileSync(join(dir, `${name}.yaml`), stringify(job));
  const { jobs, problems } = loadJobs(dir);
  expect(problems).toEqual([]);
  return new Map(jobs.map((j) => [j.name, j]));
}

/** A report of these lines and no problem. */
const lines = (l: string[]) => ({ lines: l, problems: [] });

const records = Array.from({ length: 1500 }, (_, i) => ({
  id: { record_id: `r${i}` },
  values: { name: [{ value: `Company ${i}` }], domains: [{ domain: `c${i}.example` }] },
}));
writeFileSync(join(dir, 'attio.json'), JSON.stringify({ data: records }));

describe('validate: mapped paths against the first rows', () => {
  const jobs = jobsOf({
    typo: {
      entity: 'companies',
      source: { path: 'attio.json', recordsPath: 'data' },
      mapping: mapping('values.nme[0].value'),
    },
    remote: {
      entity: 'companies',
      source: { url: 'https://crm.example/export.json', recordsPath: 'data' },
      mapping: mapping('values.name[0].value'),
    },
    later: {
      entity: 'companies',
      source: { path: 'not-yet.json' },
      mapping: mapping('values.name[0].value'),
    },
  });

  it('warns of each path that found nothing, with the nearest keys, and says how many rows it read', async () => {
    const job = jobs.get('typo')!;
    expect(await pathReport(job, { fetch: false, env: {} })).toEqual(
      lines([
        `export typo: ${join(dir, 'attio.json')}: 1,500 rows (utf-8 1,500 rows)`,
        `warning: ${job.file}: 1,500 rows would be invalid: name: missing: no value in column values.nme[0].value (line 1, …)`,
        `paths typo: checked the first 1,000 rows read from ${join(dir, 'attio.json')}: 2 mapped path(s) found nothing`,
        `warning: ${job.file}: fields.name: values.nme[0].value found nothing in the first 1,000 rows: ` +
          'no key "nme" in values (nearest: name) (a required field: a run stops before writing)',
        `warning: ${job.file}: fields.website: values.domain[0].domain found nothing in the first 1,000 rows: ` +
          'no key "domain" in values (nearest: domains)',
      ]),
    );
  });

  it('reads no further than the limit', async () => {
    const job = jobs.get('typo')!;
    const s = await sampleCoverage(sourceOf(job, {}), job.mapping, 10);
    expect(s).toMatchObject({ rows: 10, partial: true });
  });

  it('leaves a URL source alone unless asked, and a file that is not there yet', async () => {
    expect(await pathReport(jobs.get('remote')!, { fetch: false, env: {} })).toEqual(
      lines([
        `note: ${jobs.get('remote')!.file}: mapped paths not checked: the source is a URL (validate --fetch reads its first 1,000 rows)`,
      ]),
    );
    expect(await pathReport(jobs.get('later')!, { fetch: false, env: {} })).toEqual(lines([]));
  });

  it('says so when every path found a value', async () => {
    const ok = jobsOf({
      good: {
        entity: 'companies',
        source: { path: 'attio.json', recordsPath: 'data' },
        mapping: {
          ...mapping('values.name[0].value'),
          fields: {
            external_id: { template: 'attio:company:{id.record_id}', required: true },
            name: { from: 'values.name[0].value', required: true },
          },
        },
      },
    });
    expect(await pathReport(ok.get('good')!, { fetch: false, env: {} })).toEqual(
      lines([
        `export good: ${join(dir, 'attio.json')}: 1,500 rows (utf-8 1,500 rows)`,
        `paths good: checked the first 1,000 rows read from ${join(dir, 'attio.json')}: every mapped path found a value`,
      ]),
    );
  });
});

describe('validate: records in envelopes', () => {
  // An Airbyte bare-record stream: lines 1 and 3 hold companies, line 2 a record of
  // another stream, line 4 a company without `data` (a broken line).
  const company = (i: number) => ({
    id: { record_id: `r${i}` },
    values: { name: [{ value: `Company ${i}` }] },
  });
  writeFileSync(
    join(dir, 'airbyte.ndjson'),
    [
      { stream: 'companies', data: company(1), emitted_at: 1 },
      { stream: 'people', data: { id: 'p1' }, emitted_at: 2 },
      { stream: 'companies', data: company(3), emitted_at: 3 },
      { stream: 'companies', emitted_at: 4 },
    ]
      .map((l) => JSON.stringify(l))
      .join('\n'),
  );
  const named = mapping('values.name[0].value');
  const jobs = jobsOf({
    'by-stream': {
      entity: 'companies',
      source: { path: 'airbyte.ndjson', stream: 'companies' },
      mapping: named,
    },
    'by-path': {
      entity: 'companies',
      source: { path: 'airbyte.ndjson', recordPath: 'data' },
      mapping: named,
    },
    misspelt: {
      entity: 'companies',
      source: { path: 'airbyte.ndjson', stream: 'companys' },
      mapping: named,
    },
    'records-path': {
      entity: 'companies',
      source: { path: 'airbyte.ndjson', recordsPath: 'data' },
      mapping: named,
    },
  });

  it('a stream: its records checked, a line that is no message is a problem', async () => {
    const job = jobs.get('by-stream')!;
    const report = await pathReport(job, { fetch: false, env: {} });
    // Line 4 has no "type" and no "data": not a message of either kind.
    expect(report.problems).toEqual([
      `${job.file}: source.stream: no record in 1 of the 4 values read (line 4: ` +
        'not an Airbyte or Singer message: no "type", nor "stream" and "data" (keys: stream, emitted_at))',
    ]);
    // The two records of the stream, and nothing else, were checked against the paths.
    expect(report.lines[0]).toMatch(/^export by-stream: .*: 3 rows \(utf-8 2 rows\)$/);
    expect(report.lines).toContainEqual(
      expect.stringMatching(/^paths by-stream: checked all 2 rows read from /),
    );
  });

  it('a recordPath that finds nothing in a line is a problem naming the line', async () => {
    const job = jobs.get('by-path')!;
    const report = await pathReport(job, { fetch: false, env: {} });
    expect(report.problems).toEqual([
      `${job.file}: source.recordPath: no record in 1 of the 4 values read (line 4: ` +
        'recordPath "data" found nothing: no data in the record (keys: stream, emitted_at))',
    ]);
  });

  it('a stream with no record in the file is a problem listing the streams there', async () => {
    const job = jobs.get('misspelt')!;
    const report = await pathReport(job, { fetch: false, env: {} });
    expect(report.problems).toContain(
      `${job.file}: source.stream: no RECORD of stream "companys" in the 4 values read: ` +
        'its streams are companies (2), people (1)',
    );
  });

  it('recordsPath on NDJSON is a problem, not ignored', async () => {
    const job = jobs.get('records-path')!;
    const report = await pathReport(job, { fetch: false, env: {} });
    expect(report.problems).toEqual([
      `${job.file}: source: ${join(dir, 'airbyte.ndjson')}: invalid source: ` +
        'recordsPath selects the records array of a JSON document; in NDJSON each line is a record: ' +
        'write recordPath to take the record from a key of each line (e.g. recordPath: data)',
    ]);
  });
});

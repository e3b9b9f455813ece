/**
 * The one schema of a source, shared by the reader (`SourceSpecSchema`) and
 * job files (`JobSourceSchema`, the same schema with the job-file checks):
 * the same field gives the same problem in both, and every problem of a
 * source is reported at once, each with its path.
 */
import { describe, expect, it } from 'vitest';
import { JobSourceSchema, SourceSpecSchema } from '../../src/crm/source-spec.js';

function problems(schema: typeof SourceSpecSchema, source: unknown): string[] {
  const r = schema.safeParse(source);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('the source schema', () => {
  it('reads the same settings for the reader and for job files', () => {
    const source = { path: 'export.tsv', delimiter: 'tab', encoding: 'windows-1252' };
    for (const schema of [SourceSpecSchema, JobSourceSchema]) {
      expect(schema.parse(source)).toEqual({ ...source, delimiter: '\t' });
      // A parsed source parses again to itself: readRows checks what the job loader gave it.
      expect(schema.parse(schema.parse(source))).toEqual({ ...source, delimiter: '\t' });
    }
    const url = { url: 'https://${CRM_HOST}/v3/companies?token=${HUB_TOKEN}', paginate: 'hubspot' };
    expect(SourceSpecSchema.parse(url)).toEqual(url);
    expect(JobSourceSchema.parse(url)).toEqual(url);
  });

  it('gives the same problems for the same fields, all at once', () => {
    const bad = { path: 'a.csv', url: 'ftp://x.example/a', delimiter: ':', format: 'csv' };
    const expected = [
      expect.stringMatching(/^delimiter: /),
      ': give exactly one of path or url',
      'url: must be an http(s) URL',
    ];
    expect(problems(SourceSpecSchema, bad)).toEqual(expected);
    expect(problems(JobSourceSchema, bad)).toEqual(expected);
    expect(problems(SourceSpecSchema, { url: 'not a url' })).toEqual(['url: not a valid URL']);
    expect(problems(SourceSpecSchema, { url: 'https://u:p@x.example/a' })).toEqual([
      'url: must not carry credentials: use headers with ${VAR} references or CRM_SOURCE_AUTHORIZATION',
    ]);
  });

  it('holds a job file to more: credentials referenced, never written, and headers with a url', () => {
    const written = {
      url: 'https://x.example/a.csv?api_key=abc',
      headers: { Authorization: 'Bearer abc' },
    };
    expect(problems(SourceSpecSchema, written)).toEqual([]);
    expect(problems(JobSourceSchema, written)).toEqual([
      'headers.Authorization: a credential must not be written in a job file: reference an environment variable, e.g. "Bearer ${HUBSPOT_EXPORT_TOKEN}"',
      'url: query parameter api_key looks like a credential: reference an environment variable',
    ]);
    expect(problems(JobSourceSchema, { path: 'a.csv', headers: { Accept: 'text/csv' } })).toEqual([
      'headers: headers need a url source',
    ]);
  });

  it('reports a source that is not an object as one problem', () => {
    for (const source of [null, 5, 'a.csv']) {
      expect(problems(JobSourceSchema, source)).toEqual([
        expect.stringMatching(/^: Invalid input: expected object/),
      ]);
    }
  });

  it('takes recordPath and stream, and refuses what the format cannot use, all at once', () => {
    const ok = { path: 'out.jsonl', stream: 'companies', recordPath: 'properties' };
    expect(JobSourceSchema.parse(ok)).toEqual(ok);
    expect(
      problems(JobSourceSchema, {
        path: 'out.jsonl',
        format: 'ndjson',
        recordsPath: 'data',
        recordPath: 'items[*].data',
      }),
    ).toEqual([
      'recordPath: [*] finds a list; a recordPath finds one record',
      'recordsPath: recordsPath selects the records array of a JSON document; in NDJSON each line is a record: write recordPath to take the record from a key of each line (e.g. recordPath: data)',
    ]);
    expect(
      problems(SourceSpecSchema, { path: 'a.csv', format: 'csv', recordPath: 'a[', stream: '' }),
    ).toEqual([
      'recordPath: unclosed [ at character 2',
      'stream: Too small: expected string to have >=1 characters',
      'recordPath: recordPath reads JSON records: not with format csv',
      'stream: stream reads JSON records: not with format csv',
    ]);
    expect(
      problems(SourceSpecSchema, {
        url: 'https://crm.example/v3',
        paginate: 'hubspot',
        stream: 'x',
      }),
    ).toEqual([
      "stream: stream reads Airbyte or Singer output from a file or URL, not an API's pages",
    ]);
  });
});

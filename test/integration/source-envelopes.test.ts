/**
 * Records in envelopes: Airbyte and Singer output read by `stream`, a record
 * under a key of each line or element read by `recordPath`, and the settings
 * a format cannot use, which are errors instead of being ignored. The
 * expected rows are worked out here from the lines written (JSON.parse), the
 * line numbers counted as the file is put together.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Envelope, EnvelopeTally } from '../../src/crm/envelope.js';
import { NdjsonParser } from '../../src/crm/ndjson.js';
import type { SourceRow } from '../../src/crm/row.js';
import { captureLogger } from '../harness/log-capture.js';
import { readAll, readError } from './source-helpers.js';

const REAL = join(import.meta.dirname, '..', 'fixtures', 'real');
const dir = mkdtempSync(join(tmpdir(), 'crm-sync-envelopes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Rec = Record<string, unknown>;
const companies = (
  JSON.parse(readFileSync(join(REAL, 'hubspot', 'companies-api-v3.json'), 'utf8')) as {
    results: Rec[];
  }
).results.slice(0, 5);

/** Writes the lines (a string as it is, anything else as JSON) and returns the path. */
function file(name: string, lines: unknown[], eol = '\n'): string {
  const path = join(dir, name);
  writeFileSync(path, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join(eol));
  return path;
}

/** The 1-based numbers of the lines that `keep` picks. */
function linesOf(lines: unknown[], keep: (l: unknown) => boolean): number[] {
  return lines.flatMap((l, i) => (keep(l) ? [i + 1] : []));
}

// Messages between the records, as connectors write them.
const airbyteOther = [
  { type: 'LOG', log: { level: 'INFO', message: 'Starting syncing SourceHubspot' } },
  { type: 'TRACE', trace: { type: 'STREAM_STATUS', emitted_at: 1.7e12 } },
  {
    type: 'STATE',
    state: { type: 'STREAM', stream: { stream_descriptor: { name: 'companies' } } },
  },
];

describe('stream: Airbyte and Singer output', () => {
  it('real Airbyte output (source-hubspot): the records of one stream, at their own lines', async () => {
    const path = join(REAL, 'airbyte', 'hubspot-expected-records.jsonl');
    const lines = readFileSync(path, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Rec);
    const expected = lines.flatMap((l, i) =>
      l.stream === 'companies' ? [{ line: i + 1, record: l.data }] : [],
    );
    expect(expected).toHaveLength(3);
    expect(await readAll({ path, stream: 'companies' })).toEqual(expected);
  });

  it('Airbyte protocol messages: RECORDs of the stream kept, every other message passed over', async () => {
    const lines: unknown[] = [airbyteOther[0]];
    companies.forEach((c, i) => {
      lines.push({ type: 'RECORD', record: { stream: 'companies', data: c, emitted_at: i } });
      lines.push(airbyteOther[i % 3]);
      lines.push({ type: 'RECORD', record: { stream: 'contacts', data: { id: `c${i}` } } });
      if (i === 2) lines.push('');
    });
    const path = file('airbyte.jsonl', lines, '\r\n');
    const at = linesOf(
      lines,
      (l) => (l as Rec).type === 'RECORD' && JSON.stringify(l).includes('"stream":"companies"'),
    );
    const tally = new EnvelopeTally();
    const rows = await readAll({ path, stream: 'companies' }, { tally });
    expect(rows).toEqual(companies.map((c, i) => ({ line: at[i], record: c })));
    expect(Object.fromEntries(tally.streams)).toEqual({ companies: 5, contacts: 5 });
    expect(tally.problems).toBe(0);
  });

  it('Singer messages: SCHEMA, STATE and ACTIVATE_VERSION passed over', async () => {
    const lines: unknown[] = [
      { type: 'SCHEMA', stream: 'companies', schema: { type: 'object' }, key_properties: ['id'] },
      { type: 'ACTIVATE_VERSION', stream: 'companies', version: 1 },
    ];
    companies.forEach((c, i) => {
      lines.push({
        type: 'RECORD',
        stream: 'companies',
        record: c,
        time_extracted: '2026-01-01T00:00:00Z',
      });
      if (i % 2 === 0) lines.push({ type: 'STATE', value: { bookmarks: { companies: { i } } } });
      lines.push({ type: 'RECORD', stream: 'owners', record: { id: `o${i}` } });
    });
    const path = file('singer.ndjson', lines);
    const at = linesOf(
      lines,
      (l) => (l as Rec).type === 'RECORD' && (l as Rec).stream === 'companies',
    );
    expect(await readAll({ path, stream: 'companies' })).toEqual(
      companies.map((c, i) => ({ line: at[i], record: c })),
    );
  });

  it('the same messages as the elements of a JSON array', async () => {
    const path = join(dir, 'airbyte-array.json');
    writeFileSync(
      path,
      `[\n${companies.map((c) => JSON.stringify({ stream: 'companies', data: c })).join(',\n')}\n]`,
    );
    expect(await readAll({ path, stream: 'companies' })).toEqual(
      companies.map((c, i) => ({ line: i + 2, record: c })),
    );
  });

  it('a line that is no message, a RECORD without a record: problem rows naming the line', async () => {
    const lines: unknown[] = [
      { stream: 'companies', data: companies[0] },
      { id: '1', name: 'not wrapped' },
      { type: 'RECORD', stream: 'companies', record: null },
      { type: 'RECORD', record: 'text' },
      { type: 'RECORD', record: { data: {} } },
      { stream: 'companies', data: companies[1] },
    ];
    const path = file('broken.ndjson', lines);
    expect(await readAll({ path, stream: 'companies' })).toEqual([
      { line: 1, record: companies[0] },
      {
        line: 2,
        problem:
          'not an Airbyte or Singer message: no "type", nor "stream" and "data" (keys: id, name)',
      },
      { line: 3, problem: "the RECORD's record is null, not a JSON object" },
      { line: 4, problem: 'a RECORD message whose record is a string' },
      { line: 5, problem: 'a RECORD message whose record.stream is nothing' },
      { line: 6, record: companies[1] },
    ]);
  });

  it('a stream with no RECORD in the whole export: a warning listing the streams read', async () => {
    const { logger, lines } = captureLogger('info');
    const path = file('other-streams.ndjson', [
      { type: 'RECORD', stream: 'deals', record: { id: 1 } },
      { type: 'STATE', value: {} },
      { type: 'RECORD', stream: 'deals', record: { id: 2 } },
      { type: 'RECORD', stream: 'owners', record: { id: 3 } },
    ]);
    expect(await readAll({ path, stream: 'companies' }, { logger })).toEqual([]);
    const warned = lines.filter((l) => l.level === 'warn');
    expect(warned.map((l) => l.msg)).toEqual([
      'no RECORD of stream "companies": its streams are deals (2), owners (1)',
    ]);
    expect(warned[0]).toMatchObject({ values: 4, problems: 0, streams: { deals: 2, owners: 1 } });
    lines.length = 0;
    await readAll({ path, stream: 'deals' }, { logger });
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
  });

  it('holds across every cut of the text into two chunks', () => {
    const text = [
      JSON.stringify({ type: 'LOG', log: { message: 'x' } }),
      JSON.stringify({ type: 'RECORD', stream: 's', record: { a: 1 } }),
      '',
      JSON.stringify({ type: 'RECORD', record: { stream: 's', data: { a: 2 } } }),
    ].join('\n');
    const expected: SourceRow[] = [
      { line: 2, record: { a: 1 } },
      { line: 4, record: { a: 2 } },
    ];
    for (let cut = 0; cut <= text.length; cut++) {
      const p = new NdjsonParser({ maxRecordBytes: 1024, envelope: new Envelope({ stream: 's' }) });
      const out: SourceRow[] = [];
      p.push(text.slice(0, cut), out);
      p.push(text.slice(cut), out);
      p.end(out);
      expect(out, `cut at ${cut}`).toEqual(expected);
    }
  });
});

describe('recordPath: the record under a key of each line or element', () => {
  const sell = {
    items: companies.map((c) => ({ data: c, meta: { type: 'company' } })),
    meta: { type: 'collection', count: companies.length },
  };

  it('a JSON document of wrapped items (Zendesk Sell items[].data), with and without recordsPath', async () => {
    const path = join(dir, 'sell.json');
    writeFileSync(path, JSON.stringify(sell, null, 2));
    const text = readFileSync(path, 'utf8').split('\n');
    // Each item starts on the line after the one that opens it: `{` then `"data": {`.
    const at = text.flatMap((l, i) => (l === '    {' ? [i + 1] : []));
    const expected = companies.map((c, i) => ({ line: at[i], record: c }));
    expect(await readAll({ path, recordsPath: 'items', recordPath: 'data' })).toEqual(expected);
    expect(await readAll({ path, recordPath: 'data' })).toEqual(expected);
  });

  it('each NDJSON line, down a nested path; a line where it finds nothing is a problem row', async () => {
    const lines: unknown[] = companies.map((c) => ({
      type: 'RECORD',
      record: { stream: 'x', data: c },
    }));
    lines.splice(2, 0, { type: 'STATE', state: { data: {} } });
    lines.splice(4, 0, { type: 'RECORD', record: { stream: 'x', data: [1, 2] } });
    const path = file('nested.ndjson', lines);
    const rows = await readAll({ path, recordPath: 'record.data' });
    expect(rows).toEqual([
      { line: 1, record: companies[0] },
      { line: 2, record: companies[1] },
      {
        line: 3,
        problem:
          'recordPath "record.data" found nothing: no record in the record (keys: type, state)',
      },
      { line: 4, record: companies[2] },
      { line: 5, problem: 'recordPath "record.data" is a list, not a JSON object' },
      { line: 6, record: companies[3] },
      { line: 7, record: companies[4] },
    ]);
  });

  it('a list item by index, and a key with a dot in quotes', async () => {
    const path = file('indexed.ndjson', [{ 'rows.v2': [{ id: 'a' }] }, { 'rows.v2': [] }]);
    expect(await readAll({ path, recordPath: '["rows.v2"][0]' })).toEqual([
      { line: 1, record: { id: 'a' } },
      {
        line: 2,
        problem: 'recordPath "["rows.v2"][0]" found nothing: no [0] in ["rows.v2"] (a list)',
      },
    ]);
  });
});

describe('settings the format cannot use are errors, never ignored', () => {
  const lines = companies.map((c) => ({ stream: 'companies', data: c }));

  it('recordsPath on NDJSON: sniffed, by extension and by format', async () => {
    const sniffed = file('wrapped.out', lines);
    const byName = file('wrapped.ndjson', lines);
    for (const spec of [
      { path: sniffed, recordsPath: 'data' },
      { path: byName, recordsPath: 'data' },
      { path: sniffed, recordsPath: 'data', format: 'ndjson' as const },
    ]) {
      const err = await readError(spec);
      expect(err.code, JSON.stringify(spec)).toBe('source.config');
      expect(err.message).toContain('recordsPath selects the records array of a JSON document');
      expect(err.message).toContain('recordPath');
    }
  });

  it('recordPath or stream on CSV, stream on API pages, [*] in a recordPath', async () => {
    const csv = join(dir, 'plain.csv');
    writeFileSync(csv, 'id,name\n1,Acme\n');
    for (const [spec, says] of [
      [
        { path: csv, recordPath: 'data' },
        'recordPath and stream read JSON records, and this export is CSV',
      ],
      [
        { path: csv, stream: 'x' },
        'recordPath and stream read JSON records, and this export is CSV',
      ],
      [
        { path: csv, format: 'csv' as const, stream: 'x' },
        'stream: stream reads JSON records: not with format csv',
      ],
      [
        { url: 'https://crm.example/v1/x', paginate: 'hubspot' as const, stream: 'x' },
        "stream: stream reads Airbyte or Singer output from a file or URL, not an API's pages",
      ],
      [
        { path: csv, recordPath: 'items[*].data' },
        'recordPath: [*] finds a list; a recordPath finds one record',
      ],
    ] as const) {
      const err = await readError(spec);
      expect(err.code, JSON.stringify(spec)).toBe('source.config');
      expect(err.message).toContain(says);
    }
  });
});

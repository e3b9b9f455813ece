import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonArrayParser, type JsonOptions } from '../../src/crm/json.js';
import type { SourceRow } from '../../src/crm/row.js';
import { SourceError } from '../../src/crm/source-error.js';

function parse(chunks: string | string[], opts: Partial<JsonOptions> = {}): SourceRow[] {
  const p = new JsonArrayParser({ source: 'x.json', maxRecordBytes: 1024 * 1024, ...opts });
  const out: SourceRow[] = [];
  for (const c of typeof chunks === 'string' ? [chunks] : chunks) p.push(c, out);
  p.end(out);
  return out;
}

function failure(fn: () => unknown): SourceError {
  try {
    fn();
  } catch (err) {
    if (err instanceof SourceError) return err;
    throw err;
  }
  throw new Error('expected a SourceError');
}

const hubspot = `{
  "paging": {"next": {"after": "2", "link": "x"}},
  "results": [
    {"id": "512", "properties": {"name": "Acme [\\"quoted\\"] {x}", "domain": "acme.com"}},
    {
      "id": "513",
      "properties": {"name": "Globex\\\\", "tags": ["a", "b"]}
    }
  ],
  "total": 2
}`;

describe('JsonArrayParser', () => {
  it('reads a top-level array with the line where each element starts', () => {
    expect(parse('[\n  {"a": 1},\n  {"a": [2, {"b": "]"}]}\n]\n')).toEqual([
      { line: 2, record: { a: 1 } },
      { line: 3, record: { a: [2, { b: ']' }] } },
    ]);
  });

  it('finds the results array in a HubSpot answer, after other keys', () => {
    expect(parse(hubspot)).toEqual([
      {
        line: 4,
        record: { id: '512', properties: { name: 'Acme ["quoted"] {x}', domain: 'acme.com' } },
      },
      { line: 5, record: { id: '513', properties: { name: 'Globex\\', tags: ['a', 'b'] } } },
    ]);
  });

  it('gives the same rows however the text is cut into chunks', () => {
    const whole = parse(hubspot);
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: hubspot.length - 1 }), { maxLength: 10 }),
        (cuts) => {
          const at = [0, ...cuts.sort((a, b) => a - b), hubspot.length];
          expect(parse(at.slice(1).map((end, k) => hubspot.slice(at[k], end)))).toEqual(whole);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('follows recordsPath through nested objects, ignoring arrays elsewhere', () => {
    const text = '{"items": [1], "data": {"meta": [], "rows": [{"id": 1}]}}';
    expect(parse(text, { recordsPath: 'data.rows' })).toEqual([{ line: 1, record: { id: 1 } }]);
    expect(parse(text)).toEqual([{ line: 1, problem: 'not a JSON object (a number)' }]);
  });

  it('does not take an array nested inside a value as the records', () => {
    const err = failure(() => parse('{"paging": {"results": [{"a": 1}]}}'));
    expect(err.code).toBe('source.json');
    expect(err.message).toContain('no array under results, records, data, items');
  });

  it('reports elements that are not objects or not valid JSON as problem rows', () => {
    expect(parse('[{"a":1}, 2, "s", null, [1], {"b": tru}, {"c":3}]')).toEqual([
      { line: 1, record: { a: 1 } },
      { line: 1, problem: 'not a JSON object (a number)' },
      { line: 1, problem: 'not a JSON object (a string)' },
      { line: 1, problem: 'not a JSON object (null)' },
      { line: 1, problem: 'not a JSON object (an array)' },
      { line: 1, problem: expect.stringMatching(/^invalid JSON: /) as unknown as string },
      { line: 1, record: { c: 3 } },
    ]);
  });

  it('an empty array is zero rows; whitespace only is an empty export', () => {
    expect(parse(' [ ] ')).toEqual([]);
    expect(parse('{"results": []}')).toEqual([]);
    expect(failure(() => parse('  \n ')).code).toBe('source.empty');
  });

  it('refuses JSON that is not an array of records', () => {
    expect(failure(() => parse('42')).message).toBe(
      'x.json line 1: not an array of records: the export is a number',
    );
    expect(failure(() => parse('{"a": {"b": 1}}')).message).toContain('not an array of records');
    expect(failure(() => parse('[1]', { recordsPath: 'results' })).code).toBe('source.json');
    expect(failure(() => parse('{"results": {}}', { recordsPath: 'results' })).message).toContain(
      'nothing at recordsPath "results" is an array',
    );
  });

  it('throws on truncated JSON, naming the line of the record cut short', () => {
    const err = failure(() => parse('[\n{"a": 1},\n{"a": "cut'));
    expect(err.code).toBe('source.json');
    expect(err.line).toBe(3);
    expect(err.message).toContain('cut short');
    expect(failure(() => parse('{"results": [{"a": 1}]')).message).toContain('not closed');
  });

  it('throws on broken structure: mismatched brackets, stray commas, trailing text', () => {
    expect(failure(() => parse('[{"a": 1}}')).message).toContain("unexpected '}'");
    expect(failure(() => parse('[{"a":1},]')).message).toContain('trailing comma');
    expect(failure(() => parse('[,{"a":1}]')).message).toContain("unexpected ','");
    expect(failure(() => parse('[]\n[]')).line).toBe(2);
  });

  it('drops an element over maxRecordBytes as it streams and reports it', () => {
    const big = `{"a": "${'x'.repeat(5000)}"}`;
    const text = `[${big},\n{"b": 1}]`;
    const chunks: string[] = [];
    for (let i = 0; i < text.length; i += 512) chunks.push(text.slice(i, i + 512));
    expect(parse(chunks, { maxRecordBytes: 1000 })).toEqual([
      { line: 1, problem: 'record is larger than maxRecordBytes (1000 bytes)' },
      { line: 2, record: { b: 1 } },
    ]);
  });
});

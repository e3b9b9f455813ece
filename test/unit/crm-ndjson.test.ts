import { describe, expect, it } from 'vitest';
import { NdjsonParser } from '../../src/crm/ndjson.js';
import type { SourceRow } from '../../src/crm/row.js';

function parse(chunks: string[], maxRecordBytes = 1024 * 1024): SourceRow[] {
  const p = new NdjsonParser({ maxRecordBytes });
  const out: SourceRow[] = [];
  for (const c of chunks) p.push(c, out);
  p.end(out);
  return out;
}

describe('NdjsonParser', () => {
  it('reads one object per line, skipping blank lines, across chunk cuts', () => {
    const text = '{"id":"1","email":"a@x.io"}\r\n\n  \n{"id":"2"}\n{"id":"3"}';
    const expected = [
      { line: 1, record: { id: '1', email: 'a@x.io' } },
      { line: 4, record: { id: '2' } },
      { line: 5, record: { id: '3' } },
    ];
    expect(parse([text])).toEqual(expected);
    for (let cut = 1; cut < text.length; cut++) {
      expect(parse([text.slice(0, cut), text.slice(cut)])).toEqual(expected);
    }
  });

  it('reports bad lines and non-objects as problem rows and goes on', () => {
    const rows = parse(['{"a":1}\n{"a":\n[1,2]\n"str"\nnull\n{"a":2}\n']);
    expect(rows[0]).toEqual({ line: 1, record: { a: 1 } });
    expect(rows[1]).toMatchObject({
      line: 2,
      problem: expect.stringMatching(/^invalid JSON: /) as unknown,
    });
    expect(rows.slice(2)).toEqual([
      { line: 3, problem: 'not a JSON object (an array)' },
      { line: 4, problem: 'not a JSON object (a string)' },
      { line: 5, problem: 'not a JSON object (null)' },
      { line: 6, record: { a: 2 } },
    ]);
  });

  it('drops a line over maxRecordBytes as it streams and reports it', () => {
    const big = `{"a":"${'x'.repeat(3000)}"}`;
    const chunks = [big.slice(0, 1000), big.slice(1000, 2000), big.slice(2000), '\n{"b":1}\n'];
    expect(parse(chunks, 1000)).toEqual([
      { line: 1, problem: 'line is larger than maxRecordBytes (1000 bytes)' },
      { line: 2, record: { b: 1 } },
    ]);
  });
});

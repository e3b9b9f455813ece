import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { detectDelimiter } from '../../src/crm/csv-delimiter.js';
import { CsvParser, type CsvOptions } from '../../src/crm/csv.js';
import type { SourceRow } from '../../src/crm/row.js';
import { SourceError } from '../../src/crm/source-error.js';

function parse(chunks: string | string[], opts: Partial<CsvOptions> = {}): SourceRow[] {
  const p = new CsvParser({ source: 'x.csv', maxFieldBytes: 1024 * 1024, ...opts });
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

describe('CsvParser', () => {
  it('reads quoted fields with delimiters, doubled quotes and newlines, with physical start lines', () => {
    const text =
      'id,name,notes\r\n1,"Acme, Inc","two\r\nlines"\r\n2,"say ""hi""",x\n\n3,Globex,"a\nb\nc"\n4,Last,end';
    expect(parse(text)).toEqual([
      { line: 2, record: { id: '1', name: 'Acme, Inc', notes: 'two\r\nlines' } },
      { line: 4, record: { id: '2', name: 'say "hi"', notes: 'x' } },
      { line: 6, record: { id: '3', name: 'Globex', notes: 'a\nb\nc' } },
      { line: 9, record: { id: '4', name: 'Last', notes: 'end' } },
    ]);
  });

  it('keeps cells as read: spaces, a quote inside an unquoted cell, empty cells', () => {
    expect(parse('a,b,c\n  x ,5" screen,\n')).toEqual([
      { line: 2, record: { a: '  x ', b: '5" screen', c: '' } },
    ]);
  });

  it('gives the same rows however the text is cut into chunks', () => {
    const text =
      'Record ID;Name;Notes\r\n1;"A;B";"x\r\n""y"""\r\n\r\n2;plain;\n3;"";"z"\r\n4;"q""";"long ' +
      'é'.repeat(50) +
      '"\n';
    const whole = parse(text);
    expect(whole).toHaveLength(4);
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: text.length - 1 }), { maxLength: 8 }),
        (cuts) => {
          const at = [0, ...cuts.sort((a, b) => a - b), text.length];
          const chunks = at.slice(1).map((end, k) => text.slice(at[k], end));
          expect(parse(chunks)).toEqual(whole);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('reads back any table written by the RFC 4180 rules, with each row at its physical line', () => {
    const cell = fc.stringMatching(/^[a-z ,;"\r\n\u00e9]{0,12}$/);
    const quote = (v: string): string =>
      /[",\r\n]/.test(v) || v === '' ? `"${v.replace(/"/g, '""')}"` : v;
    fc.assert(
      fc.property(
        fc
          .integer({ min: 1, max: 5 })
          .chain((width) =>
            fc.tuple(
              fc.constant(width),
              fc.array(fc.array(cell, { minLength: width, maxLength: width }), { maxLength: 8 }),
              fc.constantFrom('\n', '\r\n'),
            ),
          ),
        ([width, body, eol]) => {
          const header = Array.from({ length: width }, (_, k) => `c${k}`);
          const text = [header, ...body].map((r) => r.map(quote).join(',')).join(eol) + eol;
          let line = 2;
          const expected = body.map((r) => {
            const row = { line, record: Object.fromEntries(header.map((h, k) => [h, r[k]])) };
            line += 1 + r.join('').split('\n').length - 1;
            return row;
          });
          expect(parse(text, { delimiter: ',' })).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('reads classic Mac line ends (a bare CR), however the text is cut', () => {
    const text = 'a,b\r1,"x\ry"\r\r2,z\r';
    const expected = [
      { line: 2, record: { a: '1', b: 'x\ny' } },
      { line: 5, record: { a: '2', b: 'z' } },
    ];
    expect(parse(text)).toEqual(expected);
    for (let cut = 1; cut < text.length; cut++)
      expect(parse([text.slice(0, cut), text.slice(cut)])).toEqual(expected);
    expect(parse('a,b\r\n1,2\r\n')).toEqual([{ line: 2, record: { a: '1', b: '2' } }]);
  });

  it('reports ragged rows as problems and goes on', () => {
    expect(parse('a,b,c\n1,2\n1,2,3,4\n5,6,7\n')).toEqual([
      { line: 2, problem: 'row has 2 fields, header has 3' },
      { line: 3, problem: 'row has 4 fields, header has 3' },
      { line: 4, record: { a: '5', b: '6', c: '7' } },
    ]);
  });

  it('reports text after a closing quote as a problem row', () => {
    const rows = parse('a,b\n"x"y,1\n2,3\n');
    expect(rows[0]).toEqual({
      line: 2,
      problem: 'unexpected text after the closing quote of field 1',
    });
    expect(rows[1]).toEqual({ line: 3, record: { a: '2', b: '3' } });
  });

  it('throws on an unterminated quote, at the line where it opened', () => {
    const err = failure(() => parse('a,b\n1,2\n3,"open\nmore\nand more\n'));
    expect(err.code).toBe('source.csv');
    expect(err.line).toBe(3);
    expect(err.message).toBe(
      'x.csv line 3: unterminated quoted field (the closing quote is missing)',
    );
  });

  it('normalises the header: trims, drops blank names and their cells, numbers duplicates', () => {
    let seen: string[] = [];
    const rows = parse(
      ' Name ,,Associated Company IDs,Associated Company IDs,\n"Acme",skip,1,2,\n',
      {
        onHeader: (names) => (seen = names),
      },
    );
    expect(seen).toEqual(['Name', 'Associated Company IDs', 'Associated Company IDs (2)']);
    expect(rows).toEqual([
      {
        line: 2,
        record: { Name: 'Acme', 'Associated Company IDs': '1', 'Associated Company IDs (2)': '2' },
      },
    ]);
  });

  it('does not let a header named __proto__ reach the prototype', () => {
    const rows = parse('__proto__,b\n{},1\n');
    const rec = (rows[0] as { record: Record<string, unknown> }).record;
    expect(Object.getPrototypeOf(rec)).toBe(Object.prototype);
    expect(Object.keys(rec)).toEqual(['__proto__', 'b']);
    expect(rec.b).toBe('1');
  });

  it('detects the delimiter from the header line, outside quotes', () => {
    expect(detectDelimiter('a;b;"c,d,e"\n', false)).toBe(';');
    expect(detectDelimiter('a\tb\tc\r\n', false)).toBe('\t');
    expect(detectDelimiter('a|b|c\n', false)).toBe('|');
    expect(detectDelimiter('\n\na,b\n', false)).toBe(',');
    expect(detectDelimiter('a;b', false)).toBeUndefined();
    expect(detectDelimiter('single', true)).toBe(',');
    expect(parse('x|y\n1|2\n')).toEqual([{ line: 2, record: { x: '1', y: '2' } }]);
  });

  it('refuses a forced delimiter that leaves one column holding another delimiter', () => {
    const err = failure(() => parse('a;b;c\n1;2;3\n', { delimiter: ',' }));
    expect(err.code).toBe('source.delimiter');
    expect(err.line).toBe(1);
    expect(err.message).toContain('probably ";"');
  });

  it('a header-only file is zero rows; only blank lines is an empty export', () => {
    expect(parse('a,b,c\r\n')).toEqual([]);
    expect(parse('a,b,c')).toEqual([]);
    expect(failure(() => parse('\n\r\n\n')).code).toBe('source.empty');
  });

  it('skips blank lines but keeps a row of empty cells and a quoted empty cell', () => {
    expect(parse('a\n\n""\n\nx\n')).toEqual([
      { line: 3, record: { a: '' } },
      { line: 5, record: { a: 'x' } },
    ]);
    expect(parse('a,b\n,\n')).toEqual([{ line: 2, record: { a: '', b: '' } }]);
  });

  it('drops a cell over maxFieldBytes as it streams and reports its row', () => {
    const big = 'x'.repeat(5000);
    const text = `a,b\n1,"${big}"\n2,${big}\n3,ok\n`;
    const chunks: string[] = [];
    for (let i = 0; i < text.length; i += 700) chunks.push(text.slice(i, i + 700));
    expect(parse(chunks, { maxFieldBytes: 1000 })).toEqual([
      { line: 2, problem: 'field 2 is larger than maxFieldBytes (1000 bytes)' },
      { line: 3, problem: 'field 2 is larger than maxFieldBytes (1000 bytes)' },
      { line: 4, record: { a: '3', b: 'ok' } },
    ]);
  });

  it('counts maxFieldBytes in UTF-8 bytes', () => {
    const rows = parse(`a\n${'é'.repeat(600)}\n${'e'.repeat(600)}\n`, { maxFieldBytes: 1000 });
    expect(rows[0]).toEqual({
      line: 2,
      problem: 'field 1 is larger than maxFieldBytes (1000 bytes)',
    });
    expect(rows[1]).toEqual({ line: 3, record: { a: 'e'.repeat(600) } });
  });

  it('throws when the header itself is broken', () => {
    const err = failure(() => parse('"a"x,b\n1,2\n'));
    expect(err.code).toBe('source.csv');
    expect(err.line).toBe(1);
  });
});

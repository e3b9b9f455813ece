import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { csvCell, csvRow } from '../../src/csv.js';
import { formatDuration, formatTable, printable } from '../../src/cli/table.js';

describe('csvCell', () => {
  it('prefixes cells a spreadsheet would read as formulas with a quote, and quotes them', () => {
    expect(csvCell('=HYPERLINK("http://x","y")')).toBe(`"'=HYPERLINK(""http://x"",""y"")"`);
    expect(csvCell('+1')).toBe(`"'+1"`);
    expect(csvCell('-2+3')).toBe(`"'-2+3"`);
    expect(csvCell('@SUM(A1)')).toBe(`"'@SUM(A1)"`);
    expect(csvCell('\tx')).toBe(`"'\tx"`);
    expect(csvCell('\rx')).toBe(`"'\rx"`);
    expect(csvCell('a=b')).toBe('a=b');
    fc.assert(
      fc.property(fc.constantFrom('=', '+', '-', '@', '\t', '\r'), fc.string(), (lead, rest) => {
        const cell = csvCell(`${lead}${rest}`);
        expect(cell.startsWith(`"'${lead}`)).toBe(true);
        expect(cell.endsWith('"')).toBe(true);
      }),
    );
  });

  it('quotes commas, quotes and line breaks, and doubles quotes', () => {
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('two\nlines')).toBe('"two\nlines"');
    expect(csvCell('plain')).toBe('plain');
  });

  it('writes numbers, empties and objects', () => {
    expect(csvCell(12)).toBe('12');
    expect(csvCell(-5)).toBe(`"'-5"`);
    expect(csvCell(undefined)).toBe('');
    expect(csvCell(null)).toBe('');
    expect(csvCell({ a: 1 })).toBe('"{""a"":1}"');
  });

  it('round-trips through an RFC 4180 parser, formula cells read back with their quote', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.string(), { minLength: 1, maxLength: 5 }), {
          minLength: 1,
          maxLength: 5,
        }),
        (rows) => {
          const width = rows[0]!.length;
          const table = rows.map((r) => Array.from({ length: width }, (_, i) => r[i] ?? ''));
          const text = table.map((r) => csvRow(r)).join('');
          const back = parse(text, { relax_column_count: false }) as string[][];
          const expected = table.map((r) => r.map((c) => (/^[=+\-@\t\r]/.test(c) ? `'${c}` : c)));
          expect(back).toEqual(expected);
        },
      ),
    );
  });
});

describe('table', () => {
  it('aligns columns and right-aligns numbers', () => {
    const t = formatTable(
      [{ header: 'NAME' }, { header: 'N', align: 'right' }],
      [
        ['a', '5'],
        ['longer', '123'],
      ],
    );
    expect(t.split('\n')).toEqual(['NAME      N', 'a         5', 'longer  123']);
  });

  it('escapes control characters and cuts long cells', () => {
    expect(printable('a\u001b[31mb\n')).toBe('a\\u001b[31mb\\n');
    expect(printable('abcdef', 4)).toBe('abc…');
  });

  it('formats durations for people', () => {
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(12_340)).toBe('12.3 s');
    expect(formatDuration(245_000)).toBe('4 min 05 s');
    expect(formatDuration(7_380_000)).toBe('2 h 03 min');
  });
});

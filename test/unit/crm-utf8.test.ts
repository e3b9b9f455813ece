import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  NotUtf8Marks,
  Utf8Decoder,
  findNotUtf8,
  isNotUtf8Problem,
  notUtf8Problem,
  unfinishedStart,
  type NotUtf8,
} from '../../src/crm/utf8.js';
import { asWindows1252 } from '../../src/crm/windows-1252-rows.js';

/** Decodes `bytes` cut at `cuts` (offsets) with Utf8Decoder; the bad sequences in whole-text indexes. */
function decodeCut(
  bytes: Uint8Array,
  cuts: number[],
  keep = false,
): { text: string; notUtf8: NotUtf8[] } {
  const decoder = new Utf8Decoder({ keep });
  let text = '';
  const notUtf8: NotUtf8[] = [];
  const points = [...new Set(cuts)].filter((c) => c > 0 && c < bytes.length).sort((a, b) => a - b);
  let from = 0;
  const take = (chunk: Uint8Array, final: boolean): void => {
    // The decoder must not keep a reference to a chunk: the producer reuses it.
    const copy = Buffer.from(chunk);
    const d = decoder.decode(copy, final);
    copy.fill(0x41);
    for (const m of d.notUtf8 ?? []) notUtf8.push({ ...m, index: text.length + m.index });
    text += d.text;
  };
  for (const p of [...points, bytes.length]) {
    take(bytes.subarray(from, p), false);
    from = p;
  }
  take(new Uint8Array(0), true);
  return { text, notUtf8 };
}

/** Byte sequences rich in UTF-8 edge cases: valid characters of every width, stray and cut bytes. */
const pieces = fc.oneof(
  fc.constantFrom(
    [0x41],
    [0x0a],
    [0xc3, 0xa9], // é
    [0xe2, 0x82, 0xac], // €
    [0xf0, 0x9f, 0x98, 0x80], // 😀
    [0xef, 0xbb, 0xbf], // BOM (U+FEFF)
    [0xe9], // é in Windows-1252
    [0x80], // € in Windows-1252, a stray continuation
    [0x93],
    [0xe2, 0x82], // € cut short
    [0xf0, 0x9f, 0x98],
    [0xed, 0xa0, 0x80], // a surrogate
    [0xe0, 0x80, 0x80], // overlong
    [0xc0, 0xaf],
    [0xf4, 0x90, 0x80, 0x80], // above U+10FFFF
    [0xff],
  ),
  fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 4 }),
);
const inputs = fc
  .tuple(fc.array(pieces, { maxLength: 24 }), fc.array(fc.nat(), { maxLength: 6 }))
  .map(([ps, cuts]) => {
    const bytes = Uint8Array.from(ps.flat());
    return { bytes, cuts: cuts.map((c) => c % (bytes.length + 1)) };
  })
  // A genuine U+FFFD in the input would be indistinguishable from a replaced one below.
  .filter(({ bytes }) => !Buffer.from(bytes).includes(Buffer.from([0xef, 0xbf, 0xbd])));

describe('Utf8Decoder', () => {
  it('gives the text TextDecoder gives, with one mark per U+FFFD at its byte offset, however the bytes are cut', () => {
    fc.assert(
      fc.property(inputs, ({ bytes, cuts }) => {
        const expected = new TextDecoder('utf-8').decode(bytes);
        const { text, notUtf8 } = decodeCut(bytes, cuts);
        expect(text).toBe(expected);
        const replaced = [...expected.matchAll(/\uFFFD/g)].map((m) => m.index);
        expect(notUtf8.map((m) => m.index)).toEqual(replaced);
        for (const m of notUtf8) {
          // The text of the bytes before the bad sequence ends just before its U+FFFD.
          expect(new TextDecoder('utf-8').decode(bytes.subarray(0, m.offset)).length).toBe(m.index);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps the clean path: no marks on valid text cut inside characters', () => {
    const bytes = Buffer.from('\uFEFFname\nZürich €\n😀\n');
    const { text, notUtf8 } = decodeCut(bytes, [...bytes.keys()]);
    expect(text).toBe('name\nZürich €\n😀\n');
    expect(notUtf8).toEqual([]);
  });

  it('marks a Windows-1252 byte, a cut character at the end, and a BOM only at the start', () => {
    const bytes = Buffer.concat([
      Buffer.from('Caf'),
      Buffer.from([0xe9, 0x0a]),
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from('x'),
      Buffer.from([0xe2, 0x82]),
    ]);
    expect(decodeCut(bytes, [4])).toEqual({
      text: 'Caf\uFFFD\n\uFEFFx\uFFFD',
      notUtf8: [
        { index: 3, offset: 3 },
        { index: 7, offset: 9 },
      ],
    });
  });
});

/** Windows-1252 as WHATWG defines it, from the table of its 32 characters that differ from Latin-1. */
function windows1252(bytes: Uint8Array): string {
  const c1 = '€\u0081‚ƒ„…†‡ˆ‰Š‹Œ\u008DŽ\u008F\u0090‘’“”•–—˜™š›œ\u009DžŸ';
  return Array.from(bytes, (b) =>
    b >= 0x80 && b < 0xa0 ? c1[b - 0x80]! : String.fromCharCode(b),
  ).join('');
}

describe('Utf8Decoder with keep (encoding auto), then asWindows1252', () => {
  it('keeps every byte that is not UTF-8 in the text, so that the text reads again exactly as Windows-1252', () => {
    fc.assert(
      fc.property(inputs, ({ bytes, cuts }) => {
        const { text, notUtf8 } = decodeCut(bytes, cuts, true);
        const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
        if (notUtf8.length === 0) {
          // Valid UTF-8 is read as UTF-8, untouched.
          expect(text).toBe(new TextDecoder('utf-8').decode(bytes));
        } else {
          expect(asWindows1252(text)).toBe(windows1252(bytes.subarray(bom)));
          for (const m of notUtf8) {
            expect(m.kept).toBe(true);
            expect(text.charCodeAt(m.index)).toBe(0xdc00 | bytes[m.offset]!);
          }
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('leaves ASCII as it is and reads each kept byte as its Windows-1252 character', () => {
    const { text } = decodeCut(Uint8Array.of(0x41, 0x80, 0xe9, 0x93, 0x0a), [2], true);
    expect(text).toBe('A\uDC80\uDCE9\uDC93\n');
    expect(asWindows1252(text)).toBe('A€é“\n');
    expect(asWindows1252('plain')).toBe('plain');
  });
});

describe('findNotUtf8 and unfinishedStart', () => {
  it('finds the first bad sequence and its length as the WHATWG decoder replaces it', () => {
    expect(findNotUtf8(Buffer.from('ab€c'), 0, true)).toBeUndefined();
    expect(findNotUtf8(Uint8Array.of(0x41, 0xe9, 0x20), 0, true)).toEqual({ at: 1, length: 1 });
    expect(findNotUtf8(Uint8Array.of(0xe2, 0x82, 0x41), 0, true)).toEqual({ at: 0, length: 2 });
    expect(findNotUtf8(Uint8Array.of(0xed, 0xa0, 0x80), 0, true)).toEqual({ at: 0, length: 1 });
    // A character cut by the end of the chunk is bad only at the end of the file.
    expect(findNotUtf8(Uint8Array.of(0x41, 0xe2, 0x82), 0, false)).toBeUndefined();
    expect(findNotUtf8(Uint8Array.of(0x41, 0xe2, 0x82), 0, true)).toEqual({ at: 1, length: 2 });
  });

  it('finds where an unfinished character starts at the end', () => {
    expect(unfinishedStart(Uint8Array.of(0x41, 0xe2, 0x82))).toBe(1);
    expect(unfinishedStart(Uint8Array.of(0xf0, 0x9f, 0x98))).toBe(0);
    expect(unfinishedStart(Uint8Array.of(0xe2, 0x82, 0xac))).toBe(3);
    expect(unfinishedStart(Uint8Array.of(0x41, 0xe0, 0x80))).toBe(3); // already bad, not held
    expect(unfinishedStart(Uint8Array.of(0x41, 0xe9))).toBe(1);
    expect(unfinishedStart(new Uint8Array(0))).toBe(0);
  });
});

describe('NotUtf8Marks', () => {
  it('gives each mark to the first row that reaches its line, and clean rows nothing', () => {
    const marks = new NotUtf8Marks();
    // Lines 3 (twice) and 5 of a text starting at line 2.
    marks.addLines('a\nb\uFFFD\uFFFD\nc\nd\uFFFD\n', 2, [
      { index: 3, offset: 10 },
      { index: 4, offset: 11 },
      { index: 9, offset: 20 },
    ]);
    expect(marks.next).toBe(3);
    expect(marks.take(2)).toBeUndefined();
    expect(marks.take(3)).toBe(10);
    expect(marks.take(4)).toBeUndefined();
    expect(marks.take(6)).toBe(20);
    expect(marks.next).toBe(Infinity);
  });

  it('names the byte and the setting in the problem', () => {
    expect(notUtf8Problem(1234)).toBe(
      'not UTF-8 at byte 1234 of the export; set source.encoding if the export is Windows-1252',
    );
    expect(isNotUtf8Problem(notUtf8Problem(0))).toBe(true);
    expect(isNotUtf8Problem('row has 2 fields, header has 3')).toBe(false);
  });
});
